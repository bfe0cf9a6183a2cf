// Aggregated, sorted views of an AnalysisResult shared by the report writers, so that every format
// lists the same entries in the same order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/driver/result.h"

namespace opprobe::reports {

// One entry of `unsupported_operators.aten`: unsupported OpRecords that print identically, merged.
struct UnsupportedOp {
  std::string kind;        // `aten::mul`
  std::string failure_at;  // `lowering` or the backend id
  std::string call;        // `unsupported.py 24` (may be empty)
  std::string file;        // as recorded
  int line = 0;
  std::string reason;
  std::string signature;  // `f32[4], c64[4]`
  std::string module_path;
  std::string program;
  std::string phase;
  int64_t count = 0;                // merged call instances
  int64_t failed_instructions = 0;  // unsupported instruction instances (count-weighted; lowering failure: 1 each)
  int64_t instructions = 0;  // all its instruction instances (count-weighted; lowering failure or custom op: 1 each)
  bool dynamic_shape = false;
  bool error = false;  // the first failing verdict is no judgement (a backend error, or not probed), not a rejection
  std::vector<size_t> failing_probes;  // unique indices into result.probes, ascending
  std::string part_of;  // derived: `aten::add.Tensor` whose lowering made this instruction; empty for a real call
  std::string place;    // `models/det.py:24`: the call site relative to the script's folder; empty when unknown
  // Traces: `torchvision/models/resnet.py:154`, the library frame inside `place` when the call was made in a library.
  std::string lib_place;
  // Traces: a backward op's forward call (the op whose autograd node made it) with its place and library frame.
  std::string forward_op;
  std::string forward_place;
  std::string forward_lib_place;
  std::string forward_module_path;
  // `--suggest`: the rewrites tried for the merged records, verified ones first, each rewrite once.
  std::vector<analyzer::Suggestion> suggestions;
  // opprobe's own lowering failed by a bug of opprobe's (OpRecord::Lowering::kInternalError, failureAt
  // `internal_error`): neither a gap nor a device verdict.
  bool internal_error = false;
  bool lowering_gap() const { return failure_at == "lowering"; }
};

// Sorted by (kind, file, line, signature, module_path, program, phase, reason).
std::vector<UnsupportedOp> UnsupportedOps(const analyzer::AnalysisResult& result);

// Unsupported entries that share the user's source line, reason and failure place: one root cause.
struct UnsupportedGroup {
  std::string place;  // `models/det.py:24`, empty when unknown
  std::string reason;
  std::string failure_at;
  int64_t count = 0;  // call instances of all entries
  std::vector<UnsupportedOp> entries;
};

// The share of the group's instruction instances that pass once suggestion `s` is applied to the entries it was made
// for (their instructions replaced by its rewrite's, of which its supported_fraction pass); the others as they are.
double GroupShareWith(const UnsupportedGroup& g, const analyzer::Suggestion& s);

// The first verified suggestion of an entry in words, for the formats that give one message per entry (GitHub,
// SARIF): `suggested rewrite, verified on rules:neuron-trn1: TITLE (exact|differs: CHANGES)` and its Python; empty
// when none is verified.
std::string VerifiedSuggestionText(const UnsupportedOp& u);

// `supported_fraction` as reports print it: `100%`, `40%`.
std::string FractionLabel(double fraction);

// The what-if line every format shows beside the real percentage, or empty without --suggest:
// `what-if: 100.00% with the 2 verified suggestions applied (not this analysis's verdict)`.
std::string WhatIfLine(const analyzer::AnalysisResult& result);

// Groups `ops` (from UnsupportedOps) by (place, reason, failure_at); most call instances first, then by place.
std::vector<UnsupportedGroup> GroupUnsupported(const std::vector<UnsupportedOp>& ops);

// The suggestions of a group's entries (`--suggest`), each rewrite once, verified ones first.
std::vector<analyzer::Suggestion> GroupSuggestions(const UnsupportedGroup& g);

// `ops` split into the backend's rejections and custom ops (first) and opprobe's lowering gaps (second).
std::pair<std::vector<UnsupportedOp>, std::vector<UnsupportedOp>> SplitLoweringGaps(std::vector<UnsupportedOp> ops);
// Takes the internal errors (UnsupportedOp::internal_error) out of `ops` and returns them, in order: the formats with
// sections list them in a section of their own (kInternalErrorTitle).
std::vector<UnsupportedOp> TakeInternalErrors(std::vector<UnsupportedOp>& ops);

// The qualified name (analyzer::QualifiedOpName) of the call whose lowering `op` was derived from (OpRecord::part_of);
// empty for a call of its own.
std::string PartOfName(const analyzer::AnalysisResult& result, const analyzer::OpRecord& op);

// `aten::mul` or `aten::mul (part of aten::add.Tensor)`.
std::string DisplayKind(const UnsupportedOp& u);

// `file:line` with `file` relative to `dir` (the script's folder) when it lies under it; empty when unknown.
std::string SourcePlace(const analyzer::SourceLoc& loc, const std::string& dir);

// Where an entry's call came from, beyond its place, in words every format shows beside the op:
// `via torchvision/models/resnet.py:154` (the library frame) and `backward of aten::convolution at model.py:27 via
// torchvision/models/resnet.py:154 in layer4.2.conv3` (a backward op's forward call), joined by `; `. Empty when
// the trace recorded neither.
std::string CallOrigin(const UnsupportedOp& u);
// The same for one op record; `source_dir` as AnalysisResult::source_dir.
std::string CallOrigin(const analyzer::OpRecord& op, const std::string& source_dir);

// The steps section's first line, the same in every format: `6 steps ran 12 graphs, 2 distinct (each compiled once;
// torch_xla lazy tensor model of the captured calls)`.
std::string StepsHeadline(const analyzer::StepGraphs& s);

// `15.75 GiB`, `312.0 MiB`, `12 B`: powers of 1024, as XLA prints memory.
std::string FormatBytes(int64_t bytes);
// The words of a --fit program's outcome, as every format says it.
std::string ProgramOutcome(
    const analyzer::ProgramFit& p);  // `compiled`, `refused`, `error`, `not compiled`, `not built`
// One sentence: what was compiled by what, what one device needs of what it has, and whether it fits.
std::string ProgramHeadline(const analyzer::ProgramFit& p);
// Where the bytes go, largest first: the program's inputs and outputs by kind (parameters, gradients, optimizer state,
// buffers, the batch, other outputs; an output that updates an input in place counted once) and the values the
// forward keeps for the backward by the line that made them (the top `max_lines`). Whole-program figures, not per
// device.
struct ProgramContributor {
  std::string what;   // `parameters`, `activations kept for backward`
  std::string where;  // the line, for activations; empty otherwise
  int64_t bytes = 0;
};
// The per-device memory rows of a --fit program (the compiler's figures, else opprobe's estimate), `total` last.
struct ProgramMemoryRow {
  std::string what;  // `arguments`, `outputs`, `aliased with arguments`, `temporaries`, `generated code`, `total`
  int64_t bytes = 0;
};
std::vector<ProgramMemoryRow> ProgramMemoryRows(const analyzer::ProgramFit& p);
std::vector<ProgramContributor> ProgramContributors(const analyzer::ProgramFit& p, size_t max_lines = 5);
// A recompilation's trigger in words: `xm.mark_step at train.py 41`, `value read (aten::_local_scalar_dense) at ...`.
std::string StepsTrigger(const analyzer::StepGraphs::Recompilation& r);

// A cut's kind in words: `value read on the host`, `CPU fallback`.
std::string CutKind(const analyzer::StepGraphs::Cut& c);

// A percentage as reports print it: `60.00%`, or `60.00% (incomplete)` when the analysis left something out.
std::string PercentLabel(const analyzer::AnalysisResult& result, double pct);

// The heading of the lowering-gap section in every format.
inline constexpr const char* kLoweringGapTitle = "opprobe cannot analyze these yet";
// The section of the calls opprobe failed on by a bug of its own (failureAt `internal_error`).
inline constexpr const char* kInternalErrorTitle = "opprobe failed on these (internal errors)";

// op -> supported call instances (count-weighted), sorted by op. With `mark_derived`, a derived record is keyed
// `aten::mul (part of aten::add.Tensor)`; without (the JSON's Neuron-compatible map), it counts under its op.
std::map<std::string, int64_t> SupportedAtenCounts(const analyzer::AnalysisResult& result, bool mark_derived = true);
// Both forms of SupportedAtenCounts from one pass over the records.
struct SupportedAtenTally {
  std::map<std::string, int64_t> calls;   // mark_derived = false
  std::map<std::string, int64_t> marked;  // mark_derived = true
};
SupportedAtenTally TallySupportedAten(const analyzer::AnalysisResult& result);

// Unique signatures of supported instructions that some op uses, sorted.
std::vector<std::string> SupportedSignatures(const analyzer::AnalysisResult& result);

// One entry of `unsupported_operators.xla`: an unsupported instruction used by one aten op at one call site.
struct UnsupportedInstruction {
  std::string signature;
  std::string aten_op;
  std::string part_of;  // derived instruction: the aten op whose lowering made it (`aten::add.Tensor`)
  std::string reason;
  std::string call;
  std::string repro;
  size_t probe = 0;
  bool error = false;
  int64_t count = 0;  // instances
};

// Sorted by (signature, aten_op, call).
std::vector<UnsupportedInstruction> UnsupportedInstructions(const analyzer::AnalysisResult& result);

// Per unique probe: the aten ops using it (sorted) and its instance count.
struct ProbeUse {
  std::vector<std::string> aten_ops;
  int64_t instances = 0;
};
std::vector<ProbeUse> ProbeUses(const analyzer::AnalysisResult& result);

// Probe indices sorted by (signature, fingerprint).
std::vector<size_t> SortedProbeOrder(const analyzer::AnalysisResult& result);

// Instruction-instance and call counts over a subset of ops.
struct Tally {
  int64_t calls = 0;  // the program's calls (derived records, part_of >= 0, are not calls)
  int64_t supported_calls = 0;
  int64_t instructions = 0;  // lowering failure: 1 each
  int64_t supported_instructions = 0;
  // `derived_unsupported`: whether a record derived from `op` is unsupported (UnsupportedDerived, one pass for all).
  void Add(const analyzer::AnalysisResult& result, const analyzer::OpRecord& op, bool derived_unsupported);
  double Percentage() const;      // instructions; 100 when empty
  double AtenPercentage() const;  // calls; 100 when empty
};

// Every record of the result tallied (in one pass over its derived records).
Tally TallyAll(const analyzer::AnalysisResult& result);

// Per record of result.ops: whether a record derived from it (part_of) is unsupported.
std::vector<bool> UnsupportedDerived(const analyzer::AnalysisResult& result);

// One group of ops that share a key (a module path, an aten op, a program), in first-appearance order.
struct Group {
  std::string key;
  Tally tally;
  std::vector<size_t> ops;  // indices into result.ops
};
std::vector<Group> GroupBy(const analyzer::AnalysisResult& result, std::string (*key)(const analyzer::OpRecord& op));

// `file` relative to `cwd` when it lies under it (both as given; no file-system access), else unchanged.
std::string RelativeToCwd(const std::string& file, const std::string& cwd);

// `text` with invalid UTF-8 sequences replaced by U+FFFD.
std::string ValidUtf8(const std::string& text);

// Escapes text for XML/HTML content and attribute values (& < > " '); invalid UTF-8 is replaced and
// characters XML 1.0 forbids (controls other than tab, newline, carriage return) become U+FFFD.
std::string XmlEscape(const std::string& text);

// The last `max_lines` lines of a text (no trailing newline). of a text into at most `max_lines` final lines.
std::string TailLines(const std::string& text, size_t max_lines);

// Several targets side by side (a run with several backends): each target's percentages, and each aten op that is
// unsupported on at least one target with its verdict on every target. Ops supported everywhere are only counted.
struct SupportMatrix {
  struct Target {
    std::string id, version;
    std::string percentage, aten_percentage;  // as PercentLabel shows them
  };
  struct Row {
    std::string op;                   // `aten::mul`
    int64_t calls = 0;                // call instances (count-weighted)
    std::vector<bool> supported;      // per target, in `targets`' order
    std::vector<std::string> reason;  // per target: the first reason it is unsupported ("" when supported)
  };
  std::vector<Target> targets;
  std::vector<Row> rows;  // sorted by op
  int64_t ops_supported_everywhere = 0;
};
SupportMatrix BuildSupportMatrix(const analyzer::AnalysisResult& result);

}  // namespace opprobe::reports
