// analyzer::AnalysisResult: everything a report writer needs, as plain values.
#pragma once

#include <fmt/format.h>

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/graph/graph.h"
#include "analyzer/program/program.h"
#include "compiler_probe/backend.h"
#include "hlo/instruction.h"

namespace opprobe::analyzer {

// Gives again the units a driver knows only from its lowering memo (a warm run builds no lowering): unit `index`
// (the driver's numbering) as its module and the unit's instruction in it, lowered anew; null when that lowering no
// longer has the unit.
class UnitSource {
 public:
  virtual ~UnitSource() = default;
  virtual std::pair<std::shared_ptr<const hlo::Module>, const hlo::Instruction*> Relower(size_t index) const = 0;
};

// One unique probe unit (a single-instruction module) and the backend's verdict on it.
struct ProbeRecord {
  std::string fingerprint;  // hlo::Fingerprint of the unit
  std::string opcode;       // `multiply`
  std::string signature;    // hlo::InstructionSignature: `c64[4]{0} multiply(c64[4]{0}, c64[4]{0})`
  std::string module_text;  // the unit as HLO text (short style), when given; else ModuleText prints the unit
  // The probe unit (the driver's results; a report read back has none): `unit`, or, until it is needed (probed,
  // written as a repro, printed), the instruction it is made from, in a module `source` keeps alive for as long as
  // the result lives (its peak is the parse's; freeing it while probing only moved the cost of freeing it).
  std::shared_ptr<const hlo::Module> unit;
  std::shared_ptr<const hlo::Module> source;
  const hlo::Instruction* source_instruction = nullptr;
  // A unit the driver knows only from its lowering memo (a warm run builds no lowering): `relower` lowers its call
  // again (unit `relower_index` of it) when the unit itself is needed.
  std::shared_ptr<const UnitSource> relower;
  size_t relower_index = 0;
  compiler_probe::Verdict verdict;
  bool cache_hit = false;
  std::string repro_path;  // `--dump-dir` file for unsupported units, when written

  // The unit as HLO text (short style): module_text, or the unit printed (on each call: only the reports that show
  // it ask, so a run whose report does not show it prints no unit).
  std::string ModuleText() const;
  // `unit`, made from source_instruction (or `relower`) first when there is none yet; null when there is neither.
  const hlo::Module* Unit();
};

// A string held once for all the records that show it (an op's name, a signature, a module path): copies share it,
// so that the records of many call sites neither allocate nor copy it again. Reads as a const std::string
// (`op.op.str()`, or wherever a const std::string& is taken); assigned and compared like one.
class SharedString {
 public:
  SharedString() = default;
  SharedString(std::string s)  // NOLINT(implicit): assigned where a std::string was before
      : p_(s.empty() ? nullptr : std::make_shared<const std::string>(std::move(s))) {}
  SharedString(const char* s) : SharedString(std::string(s)) {}  // NOLINT(implicit)

  const std::string& str() const { return p_ ? *p_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT(implicit)
  bool empty() const { return p_ == nullptr; }
  size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  const char* data() const { return str().data(); }
  // The shared storage (nullptr for ""): two SharedStrings with the same one hold the same text.
  const void* storage() const { return p_.get(); }
  std::string::const_iterator begin() const { return str().begin(); }
  std::string::const_iterator end() const { return str().end(); }
  bool starts_with(std::string_view prefix) const { return str().starts_with(prefix); }
  size_t find(std::string_view text, size_t pos = 0) const { return str().find(text, pos); }
  std::string substr(size_t pos, size_t n = std::string::npos) const { return str().substr(pos, n); }

  friend bool operator==(const SharedString& a, const SharedString& b) { return a.p_ == b.p_ || a.str() == b.str(); }
  friend bool operator==(const SharedString& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SharedString& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const SharedString& a, const char* b) { return a.str() == b; }
  friend std::strong_ordering operator<=>(const SharedString& a, const SharedString& b) { return a.str() <=> b.str(); }
  friend std::strong_ordering operator<=>(const SharedString& a, const std::string& b) { return a.str() <=> b; }
  friend std::string operator+(const SharedString& a, const SharedString& b) { return a.str() + b.str(); }
  friend std::string operator+(const SharedString& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const SharedString& b) { return a + b.str(); }
  friend std::string operator+(const SharedString& a, const char* b) { return a.str() + b; }
  friend std::string operator+(const char* a, const SharedString& b) { return a + b.str(); }
  friend std::string operator+(const SharedString& a, char b) { return a.str() + b; }
  friend std::ostream& operator<<(std::ostream& os, const SharedString& s) { return os << s.str(); }

 private:
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }
  std::shared_ptr<const std::string> p_;  // null for ""
};

// A backward call's forward call, held once for all the records of the calls it made. Reads as a const ForwardCall
// (`op.forward->op`, `op.forward.empty()`); assigned a ForwardCall like one.
class SharedForwardCall {
 public:
  SharedForwardCall() = default;
  SharedForwardCall(std::shared_ptr<const ForwardCall> p) : p_(std::move(p)) {}  // NOLINT(implicit)
  SharedForwardCall& operator=(ForwardCall f) {
    p_ = f.empty() ? nullptr : std::make_shared<const ForwardCall>(std::move(f));
    return *this;
  }
  const ForwardCall& get() const { return p_ ? *p_ : Empty(); }
  operator const ForwardCall&() const { return get(); }  // NOLINT(implicit)
  const ForwardCall* operator->() const { return &get(); }
  bool empty() const { return get().empty(); }
  friend bool operator==(const SharedForwardCall& a, const SharedForwardCall& b) { return a.get() == b.get(); }

 private:
  static const ForwardCall& Empty() {
    static const ForwardCall empty;
    return empty;
  }
  std::shared_ptr<const ForwardCall> p_;
};

// A record's place: a SourceLoc whose file is held once for all the records at that file (copies share it). Reads
// as a SourceLoc (`loc.file`, `loc.line`, `loc.ToString()`, or wherever a const SourceLoc& is taken).
struct SharedSourceLoc {
  SharedString file;
  int line = 0;

  SharedSourceLoc() = default;
  SharedSourceLoc(SharedString f, int l) : file(std::move(f)), line(l) {}
  SharedSourceLoc(const SourceLoc& l) : file(l.file), line(l.line) {}  // NOLINT(implicit): assigned from SourceLocs
  operator SourceLoc() const { return SourceLoc{file.str(), line}; }   // NOLINT(implicit)
  bool empty() const { return file.empty() && line == 0; }
  std::string ToString() const { return SourceLoc(*this).ToString(); }
  friend bool operator==(const SharedSourceLoc& a, const SharedSourceLoc& b) {
    return a.line == b.line && a.file == b.file;
  }
  friend bool operator==(const SharedSourceLoc& a, const SourceLoc& b) { return a.line == b.line && a.file == b.file; }
};

// `--suggest` (analyzer/suggest): a rewrite of an unsupported call, lowered and probed on the analysis's own backend.
struct Suggestion {
  std::string rewrite;  // the rewrite's id in the table (`complex-as-real-pairs`)
  std::string title;
  std::string python;     // what the user writes instead
  std::string changes;    // what changes (speed, precision; how it differs from PyTorch)
  bool exact = false;     // PyTorch-exact
  bool verified = false;  // the backend accepts every instruction of the rewritten computation
  std::string backend;    // the backend that judged it
  // Of the rewritten computation's instructions, the share the backend accepts (1 when verified).
  double supported_fraction = 0;
  int64_t instructions = 0;  // probe units of the rewritten computation, per call
  std::string refusal;       // not verified: the first refusal (`aten::select.int: c64 ... (NCC_EVRF004)`)
  // The Python for a call made inside a library (analyzer/suggest's RewritePlan::override_python), which Suggest puts
  // into `python` for the records whose call a library made; not a field of the reports.
  std::string library_python;
  bool operator==(const Suggestion&) const = default;
};

// One distinct aten call site: an op with one argument signature at one place (merged `count` times).
// For HLO input, the instructions attributed to one (op_type, source line, module).
// Its strings are SharedStrings: the records of the call sites of one signature, file or module share them.
struct OpRecord {
  SharedString op;         // `aten::mul`, or `unattributed` for HLO without metadata
  SharedString overload;   // `Tensor`
  SharedString signature;  // tensor signature `f32[4], c64[4]`
  SharedSourceLoc loc;
  SharedSourceLoc lib_loc;    // traces: the library frame inside `loc` (`torchvision/models/resnet.py` 154), if any
  SharedForwardCall forward;  // traces: a backward call's forward call, if known
  SharedString module_path;
  SharedString program;
  SharedString phase;
  int64_t count = 1;
  // For instructions a lowering attributes to another aten op (add's `other * alpha` is aten::mul in
  // PyTorch/XLA's IR): the index of the call's own record in AnalysisResult::ops; -1 for a real call.
  int64_t part_of = -1;

  // kFailed: opprobe's own gap (no lowering for the op or these arguments; "opprobe cannot analyze these yet").
  // kInternalError: a bug of opprobe's: the lowering threw, or built HLO that is invalid or not what PyTorch returned
  // (a kInternal error of analyzer::Lower). Neither a gap nor a device verdict: failureAt `internal_error`, and no
  // gate passes on it (--allow does not cover it).
  // kCustomOp: a call outside aten/prims (`torchvision::nms`, `mylib::my_op`): XLA has no lowering for it.
  // kCpuFallback: a call torch_xla ran on the host CPU instead of the device (HostFallback).
  enum class Lowering { kOk, kFailed, kInternalError, kCustomOp, kCpuFallback };
  Lowering lowering = Lowering::kOk;
  SharedString lowering_error;
  bool dynamic_shape = false;
  SharedString note;

  // One entry per probe-unit instruction of this op's lowering, in order (indices into
  // AnalysisResult::probes; repeats allowed), with the instruction's name in the lowered module. The records of the
  // call sites of one signature share them (SharedVector: copy on write).
  SharedVector<size_t> probes;
  SharedVector<std::string> instruction_names;
  // `--suggest`, unsupported records: the rewrites tried, verified ones first (a derived record has its call's).
  SharedVector<Suggestion> suggestions;
};

struct Summary {
  int64_t aten_calls = 0;       // sum of counts of real calls (records with part_of == -1), other namespaces included
  int64_t aten_nodes = 0;       // OpRecords of real calls (call sites)
  int64_t custom_op_calls = 0;  // of aten_calls: calls outside aten/prims (`torchvision::nms`)
  int64_t cpu_fallback_calls = 0;    // of aten_calls: calls torch_xla ran on the host CPU (HostFallback)
  int64_t lowering_gap_calls = 0;    // of aten_calls: calls opprobe could not lower (not analyzed)
  int64_t internal_error_calls = 0;  // of aten_calls: calls whose lowering failed by a bug of opprobe's (not analyzed)
  int64_t ignored_calls = 0;         // calls left out by --ignore-op (not in aten_calls)
  int64_t distinct_signatures = 0;   // lowerings performed
  int64_t lowering_failures = 0;     // OpRecords whose lowering failed
  int64_t hlo_instructions = 0;      // instruction instances (count-weighted), lowering failures as 1 each
  int64_t supported_instructions = 0;
  int64_t unique_probes = 0;
  int64_t cache_hits = 0;
  int64_t probes_run = 0;
  int64_t dynamic_shape_ops = 0;
  double probe_seconds = 0;  // sum of verdict times of probes run
  double wall_seconds = 0;
  int jobs = 1;
  // `--shard K/N`: this run probed only the units of shard K of N, so the result is partial (0: a full run).
  int shard_index = 0;
  int shard_count = 0;
  int64_t shard_skipped = 0;  // units left to other shards (their verdicts are Verdict::NotProbed)
  // Backends that compare their results with interp (pjrt, xla, iree; Verdict::interp): unique probes
  // whose outputs agree, differ (unsupported `numerics: ...`), or were not compared.
  int64_t interp_agree = 0;
  int64_t interp_differ = 0;
  int64_t interp_not_compared = 0;
  // Probes run in batches (compiler_probe/batch.h): programs compiled for the batched units (batches and units
  // judged alone after a split), of them batches of two or more units, and batches split; all 0 when none was.
  int64_t batched_units = 0;
  int64_t batch_compiles = 0;
  int64_t batches = 0;
  int64_t batch_splits = 0;
  // `--suggest`: whether it ran, and the instruction instances of the what-if analysis in which every unsupported call
  // with a verified suggestion is replaced by its rewrite (all of whose instructions pass).
  bool suggest = false;
  int64_t what_if_instructions = 0;
  int64_t what_if_supported = 0;
  double suggest_seconds = 0;  // time the suggestion step took (lowering and probing the rewrites)
};

// Calls left out of the analysis by `--ignore-op PATTERN`, one entry per op.
struct IgnoredOp {
  std::string op;       // `torchvision::nms`
  std::string pattern;  // the first pattern that matched
  int64_t count = 0;    // call instances
};

// A further target of a run with several backends (`--backend` given more than once): its verdict on every probe
// unit of the result (in AnalysisResult::probes' order) and its own summary. The first backend's verdicts are the
// result's own, so a report of several targets keeps Neuron's top-level shape for the first.
// A call the real torch_xla ran on the host CPU instead of the device, at one place (`--lowering torch_xla`: the
// op's `aten::` fallback counter in torch_xla's metrics rose during the call): an unsupported entry with failureAt
// `cpu_fallback`, never a device verdict and never opprobe's own gap.
struct HostFallback {
  std::string op;        // `aten::nonzero`
  std::string overload;  // `default`
  std::string file;      // as the script's frame named it
  int line = 0;
  int64_t count = 0;  // calls that fell back
  std::string reason;
};

struct TargetResult {
  std::string backend_id;
  std::string backend_version;
  std::vector<compiler_probe::Verdict> verdicts;
  std::vector<char> cache_hits;
  std::vector<std::string> repro_paths;  // `--dump-dir` files of this target's unsupported units
  Summary summary;
  std::optional<ProgramFit> program;                  // `--fit`: the program compiled for this target
  std::vector<SharedVector<Suggestion>> suggestions;  // `--suggest`: this target's, per record of AnalysisResult::ops
};

struct AnalysisResult {
  std::string model;
  std::string input_kind;
  std::string torch_version;
  std::string backend_id;
  std::string backend_version;
  std::vector<std::string> programs;
  std::vector<OpRecord> ops;
  std::vector<ProbeRecord> probes;
  Summary summary;
  // Problems that did not stop the analysis (e.g. a repro file that could not be written).
  std::vector<std::string> warnings;
  // How the captured script ended (trace inputs that record it); a failed script gives a partial analysis.
  std::optional<CaptureStatus> capture;
  std::optional<StepGraphs> steps;    // the graphs torch_xla would run, where the input says (Graph::steps)
  std::optional<ProgramFit> program;  // `--fit`: the whole program compiled for the target (analyzer/program)
  std::vector<IgnoredOp> ignored;     // sorted by op
  // The folder of the analyzed script (or input file) when known: call sites are shown relative to it.
  std::string source_dir;
  // HLO input: the loaded modules its probe units refer into (ProbeRecord::source), held for as long as the result,
  // so that they are freed with it (or, by the CLI, left to the process's exit) rather than one by one mid-run.
  std::vector<std::shared_ptr<const hlo::Module>> input_modules;
  // Whose lowering the calls went through: empty for opprobe's own; `torchax` for `--lowering torchax`, whose gaps
  // are reported with failureAt `torchax` (FailureAt) rather than `lowering`.
  std::string lowering_library;

  // DriverOptions::keep_calls (`--suggest`): per record of `ops`, the aten call an unsupported call site was lowered
  // from (records of the same signature share it); null for supported records, derived ones and HLO input.
  std::vector<std::shared_ptr<const Node>> calls;

  // The second and later backends' verdicts (empty for a run with one backend).
  std::vector<TargetResult> other_targets;
  size_t target_count() const { return 1 + other_targets.size(); }
  // The result as target `k` alone gives it (0: the first backend), without other targets: what each report
  // writer and gate is given for one target.
  AnalysisResult ForTarget(size_t k) const;

  bool OpSupported(const OpRecord& op) const;
  // Supported instruction instances / all instances, in percent (Neuron's definition). A failed
  // lowering counts as one unsupported instance so that an unlowerable model never reads 100%.
  double SupportPercentage() const;
  // Supported aten call instances / all aten call instances, in percent. A call is supported when its
  // own instructions and those attributed to other ops from its lowering all are.
  double AtenSupportPercentage() const;
  // `--suggest`: SupportPercentage with every verified suggestion applied (a what-if, never the analysis's verdict).
  double WhatIfPercentage() const;
  // The first reason an op is unsupported (lowering error or first failing probe's reason).
  std::string FailureReason(const OpRecord& op) const;
  // `lowering` (or the lowering_library that lowered the calls), `custom_op`, `cpu_fallback`, or the backend id.
  std::string FailureAt(const OpRecord& op) const;
  // aten calls (count-weighted, custom ops left out) whose lowering opprobe could build, in percent. All three
  // percentages are 0 when there is nothing to count.
  double AnalyzedPercentage() const;
  bool partial() const { return capture && capture->failed(); }
  // Anything left out: calls opprobe could not lower, calls it failed on, a script that failed midway, or nothing.
  bool incomplete() const;
  // Why the analysis is incomplete, by kind (what a gate may excuse depends on it: --allow covers lowering gaps of
  // the allowed ops, never an internal error), with its line for the reports.
  struct Incompleteness {
    enum class Kind {
      kPartial,        // the captured script failed: `partial analysis: the script failed at model.py:12 (...)`
      kNothing,        // no aten calls at all
      kLoweringGaps,   // calls opprobe (or the lowering library) cannot lower yet (OpRecord::Lowering::kFailed)
      kInternalError,  // calls opprobe failed on by a bug of its own (OpRecord::Lowering::kInternalError)
    };
    Kind kind;
    std::string text;
  };
  std::vector<Incompleteness> Incomplete() const;
  // The lines of Incomplete() (empty when complete).
  std::vector<std::string> IncompleteReasons() const;
};

}  // namespace opprobe::analyzer

template <>
struct fmt::formatter<opprobe::analyzer::SharedString> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(const opprobe::analyzer::SharedString& s, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
