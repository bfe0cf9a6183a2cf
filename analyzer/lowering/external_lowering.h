// Another library's lowering of each call of a trace, as a lowering table (`analyze --lowering torchax`): the
// StableHLO module that library made for each call (capture/opprobe_capture/torchax_lower.py writes them), converted
// by opprobe's StableHLO reader (hlo/stablehlo) and probed like opprobe's own lowerings; a call the library could not
// lower is a lowering failure with the library's reason, reported with `failureAt` naming the library.
#pragma once

#include <string>
#include <vector>

#include "analyzer/graph/graph.h"
#include "analyzer/lowering/lowering.h"
#include "support/status.h"

namespace opprobe::analyzer {

struct ExternalLowerings {
  std::string library;  // `torchax`: the reports' failureAt for a call it could not lower
  std::string version;  // `0.0.13`
  struct Call {
    std::string op;        // `aten::addmm`
    std::string overload;  // `default`
    std::string mlir;      // the StableHLO module (MLIR text); empty when `error` says why there is none
    std::string error;     // `torchax 0.0.13 has no lowering for aten::foo (OperatorNotFound)`
  };
  std::vector<Call> calls;  // one per call of the trace, in its order
};

// Reads the file capture/opprobe_capture/torchax_lower.py writes:
// {"torchax": VERSION, "calls": [{op, overload, mlir|error}]}.
// Errors: kInvalidInput naming the file and what is wrong.
Expected<ExternalLowerings> ReadTorchaxLowerings(const std::string& path);

// The table that lowers each call of `trace` (its nodes, in the trace's order, as LoadGraph reads them) as
// `lowerings` says: entry k of `lowerings.calls` is the call of node k (calls the loader leaves out, bookkeeping ops,
// are skipped by op name; a node without an entry lowers to an error saying so). A node is looked up by its
// signature (Node::SignatureKey), so the driver's merged calls find theirs. The entry's lowering declares the module's
// parameters as the call's tensor arguments, in order, and copies its instructions (called computations adopted as they
// are); its outputs are the module's results. A call the library could not lower returns its reason (kUnimplemented).
// Errors: kInvalidInput when no entry of `lowerings` matches a call of the trace.
Expected<LoweringTable> ExternalLoweringTable(const Graph& trace, const ExternalLowerings& lowerings);

}  // namespace opprobe::analyzer
