// The driver: merge identical calls, lower each distinct signature once, fingerprint and dedup the
// probe units, probe them (in parallel, through the cache), and fan verdicts back out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/driver/result.h"
#include "analyzer/graph/graph.h"
#include "analyzer/lowering/lowering.h"
#include "compiler_probe/backend.h"
#include "compiler_probe/cache.h"
#include "compiler_probe/lowering_memo_store.h"
#include "hlo/instruction.h"

namespace opprobe::analyzer {

struct DriverOptions {
  int jobs = 1;  // probe threads (a backend that is not thread_safe gets 1)
  // `--probe-batch N`: the most units one compile holds, for a backend that can batch (compiler_probe/batch.h);
  // -1: the backend's own batch_limit(); 0 or 1: one unit per compile. Verdicts are the same either way.
  int probe_batch = -1;
  compiler_probe::ProbeCache* cache = nullptr;  // optional
  // Optional: each distinct call's lowering outcome kept across runs (lowering_memo.h), so that a warm run lowers
  // nothing; used with the built-in lowering table only.
  compiler_probe::LoweringMemoStore* memos = nullptr;
  std::string dump_dir;  // write unsupported units as <opcode>_<fingerprint>.hlo/.hlo.pb
  // Called after each probe finishes with (done, total); from probe threads, serialized.
  std::function<void(int64_t, int64_t)> on_progress;
  // `--ignore-op PATTERN`: calls whose op (`torchvision::nms`, or `aten::add.Tensor` with its overload) matches a
  // pattern (`*` any text, `?` one character) are left out and listed in AnalysisResult::ignored.
  std::vector<std::string> ignore_ops;
  // Calls torch_xla ran on the host (`--lowering torch_xla`): added as records of their own (HostFallback).
  std::vector<HostFallback> host_fallbacks;
  // `--suggest`: keep the aten call each unsupported record was lowered from (AnalysisResult::calls).
  bool keep_calls = false;
};

// Whether `op` (`torchvision::nms`) or its overload-qualified name matches a --ignore-op pattern; the pattern or "".
std::string MatchIgnorePattern(const std::string& op, const std::string& overload,
                               const std::vector<std::string>& patterns);

// The reason shown for a call outside aten that has no lowering: `torchvision::nms has no XLA lowering: ...`.
std::string CustomOpReason(const std::string& op);

// Analyzes an aten graph: lowering through `table`, probing through `backend`. The same as a GraphAnalysis given
// every node of `graph`.
AnalysisResult Analyze(const Graph& graph, compiler_probe::Backend& backend, const LoweringTable& table,
                       const DriverOptions& options);

// The analysis of an aten graph given node by node, so that a loader can stream a large trace into it: identical
// calls at the same place merge as they arrive, and calls with the same signature keep one node between them, so
// memory grows with the distinct call sites, not with the nodes. Finish lowers each distinct signature once, probes
// the unique units and fans the verdicts out.
class GraphAnalysis final : public NodeSink {
 public:
  explicit GraphAnalysis(const DriverOptions& options);
  ~GraphAnalysis() override;
  GraphAnalysis(const GraphAnalysis&) = delete;
  GraphAnalysis& operator=(const GraphAnalysis&) = delete;

  void Add(Node&& node) override;
  // Whether a node added so far is an aten:: or prims:: call (a graph without one has nothing to analyze).
  bool any_aten_call() const;
  // The probe cache and the lowering memos Finish asks (replacing DriverOptions::cache and memos): opened once the
  // inputs have loaded, so that a bad input is reported before anything touches the cache.
  void set_caches(compiler_probe::ProbeCache* cache, compiler_probe::LoweringMemoStore* memos);
  // The analysis of the nodes added, with `graph`'s other fields (model, input kind, programs, capture; its nodes are
  // not read). Call once.
  AnalysisResult Finish(const Graph& graph, compiler_probe::Backend& backend, const LoweringTable& table);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Analyzes HLO modules directly: every non-parameter instruction of every computation reachable as an
// entry instruction is a probe unit, attributed to an aten op through metadata.op_type
// (`aten__mul` -> `aten::mul`), else `unattributed`.
struct NamedModule {
  std::string name;  // shown in the report (module name, or file#index)
  const hlo::Module* module;
  // When given (it owns `module`), the result's units refer into the module and are built only when needed (probed,
  // written, printed), as for a lowering; without it every unique unit is copied out of the module at once.
  std::shared_ptr<const hlo::Module> owner = nullptr;
};
AnalysisResult AnalyzeHlo(const std::string& model, const std::vector<NamedModule>& modules,
                          compiler_probe::Backend& backend, const DriverOptions& options);

// `aten__mul` -> `aten::mul`; empty when op_type is not an aten/prim op name.
std::string AtenOpFromOpType(const std::string& op_type);

}  // namespace opprobe::analyzer
