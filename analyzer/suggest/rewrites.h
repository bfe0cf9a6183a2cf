// The rewrite table (`--suggest`, issue #31): known ways around a call a backend refuses, each declared once with the
// calls it applies to, the condition it needs, the aten-level computation it becomes (a small list of aten calls that
// opprobe's own lowering table turns into HLO, so the same lowerings serve the analysis and the suggestion), the
// Python the user writes instead, and what changes (speed, precision; PyTorch-exact or how it differs).
//
// analyzer/suggest/suggest.h lowers and probes each applicable rewrite on the analysis's own backend; a rewrite is
// never shown as verified without that.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "analyzer/graph/graph.h"
#include "support/status.h"

namespace opprobe::analyzer::suggest {

// What a rewrite makes of one call.
struct RewritePlan {
  // The computation that runs on the device instead, as aten calls with their recorded shapes: each is lowered by the
  // lowering table and its instructions probed. Empty: nothing of the call stays on the device (a CPU fallback).
  std::vector<Node> calls;
  std::string python;   // what the user writes instead (several lines; names the call's tensors x, y, ...)
  std::string changes;  // what changes for this call (speed, precision, transfers), in words
  bool exact = false;   // PyTorch-exact (else `changes` says how it differs)
  // For a call made inside a library the user cannot edit (transformers, torchvision): the torch.library
  // registration that puts the rewrite in the call's place for the device; empty where the rewrite changes the types
  // the call takes or returns (complex as pairs, a static shape), which no registration in its place can do.
  std::string override_python;
};

struct Rewrite {
  std::string id;          // `complex-as-real-pairs`
  std::string title;       // `complex arithmetic as real arithmetic on view_as_real pairs`
  std::string applies_to;  // the calls, in words: `aten::mul, aten::add, aten::sub, aten::div`
  std::string condition;   // in words: `a complex operand or result`
  // Whether the rewrite applies to `call` (its op, dtypes, shapes and attributes).
  bool (*applies)(const Node& call) = nullptr;
  // The plan for `call` (only asked where `applies`); an error where this call's arguments are beyond it.
  Expected<RewritePlan> (*plan)(const Node& call) = nullptr;
};

// Every built-in rewrite, in the order suggestions list them when several are verified.
std::span<const Rewrite> BuiltinRewrites();

// The dtype a c64/c128 pair holds (f32/f64); `t` itself when it is not complex.
hlo::PrimitiveType PairElementType(hlo::PrimitiveType t);

}  // namespace opprobe::analyzer::suggest
