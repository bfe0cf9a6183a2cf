// analyzer::AnalysisResult: everything a report writer needs, as plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/graph/graph.h"
#include "compiler_probe/backend.h"
#include "hlo/instruction.h"

namespace opprobe::analyzer {

// One unique probe unit (a single-instruction module) and the backend's verdict on it.
struct ProbeRecord {
  std::string fingerprint;   // hlo::Fingerprint of the unit
  std::string opcode;        // `multiply`
  std::string signature;     // hlo::InstructionSignature: `c64[4]{0} multiply(c64[4]{0}, c64[4]{0})`
  std::string module_text;   // the unit as HLO text (short style), when given; else ModuleText prints the unit
  // The probe unit (the driver's results; a report read back has none): `unit`, or, until it is needed (probed,
  // written as a repro, printed), the instruction it is made from, in a module `source` keeps alive.
  std::shared_ptr<const hlo::Module> unit;
  std::shared_ptr<const hlo::Module> source;
  const hlo::Instruction* source_instruction = nullptr;
  // A unit the driver knows only from its lowering memo (a warm run builds no lowering): lowers its call again when
  // the unit itself is needed, giving the module and the unit's instruction in it (null when that lowering no longer
  // has the unit).
  std::function<std::pair<std::shared_ptr<const hlo::Module>, const hlo::Instruction*>()> relower;
  compiler_probe::Verdict verdict;
  bool cache_hit = false;
  std::string repro_path;    // `--dump-dir` file for unsupported units, when written

  // The unit as HLO text (short style): module_text, or the unit printed (on each call: only the reports that show
  // it ask, so a run whose report does not show it prints no unit).
  std::string ModuleText() const;
  // `unit`, made from source_instruction (or `relower`) first when there is none yet; null when there is neither.
  const hlo::Module* Unit();
};

// One distinct aten call site: an op with one argument signature at one place (merged `count` times).
// For HLO input, the instructions attributed to one (op_type, source line, module).
struct OpRecord {
  std::string op;            // `aten::mul`, or `unattributed` for HLO without metadata
  std::string overload;      // `Tensor`
  std::string signature;     // tensor signature `f32[4], c64[4]`
  SourceLoc loc;
  SourceLoc lib_loc;         // traces: the library frame inside `loc` (`torchvision/models/resnet.py` 154), if any
  ForwardCall forward;       // traces: a backward call's forward call, if known
  std::string module_path;
  std::string program;
  std::string phase;
  int64_t count = 1;
  // For instructions a lowering attributes to another aten op (add's `other * alpha` is aten::mul in
  // PyTorch/XLA's IR): the index of the call's own record in AnalysisResult::ops; -1 for a real call.
  int64_t part_of = -1;

  // kFailed: opprobe's own gap (no or a broken lowering; "opprobe cannot analyze these yet").
  // kCustomOp: a call outside aten/prims (`torchvision::nms`, `mylib::my_op`): XLA has no lowering for it.
  enum class Lowering { kOk, kFailed, kCustomOp };
  Lowering lowering = Lowering::kOk;
  std::string lowering_error;
  bool dynamic_shape = false;
  std::string note;

  // One entry per probe-unit instruction of this op's lowering, in order (indices into
  // AnalysisResult::probes; repeats allowed), with the instruction's name in the lowered module.
  std::vector<size_t> probes;
  std::vector<std::string> instruction_names;
};

struct Summary {
  int64_t aten_calls = 0;            // sum of counts of real calls (records with part_of == -1), other namespaces included
  int64_t aten_nodes = 0;            // OpRecords of real calls (call sites)
  int64_t custom_op_calls = 0;       // of aten_calls: calls outside aten/prims (`torchvision::nms`)
  int64_t lowering_gap_calls = 0;    // of aten_calls: calls opprobe could not lower (not analyzed)
  int64_t ignored_calls = 0;         // calls left out by --ignore-op (not in aten_calls)
  int64_t distinct_signatures = 0;   // lowerings performed
  int64_t lowering_failures = 0;     // OpRecords whose lowering failed
  int64_t hlo_instructions = 0;      // instruction instances (count-weighted), lowering failures as 1 each
  int64_t supported_instructions = 0;
  int64_t unique_probes = 0;
  int64_t cache_hits = 0;
  int64_t probes_run = 0;
  int64_t dynamic_shape_ops = 0;
  double probe_seconds = 0;          // sum of verdict times of probes run
  double wall_seconds = 0;
  int jobs = 1;
  // `--shard K/N`: this run probed only the units of shard K of N, so the result is partial (0: a full run).
  int shard_index = 0;
  int shard_count = 0;
  int64_t shard_skipped = 0;         // units left to other shards (their verdicts read "not probed")
  // Backends that compare their results with interp (pjrt, xla; backend.h's prefixes): unique probes
  // whose outputs agree, differ (unsupported `numerics: ...`), or were not compared.
  int64_t interp_agree = 0;
  int64_t interp_differ = 0;
  int64_t interp_not_compared = 0;
};

// Calls left out of the analysis by `--ignore-op PATTERN`, one entry per op.
struct IgnoredOp {
  std::string op;       // `torchvision::nms`
  std::string pattern;  // the first pattern that matched
  int64_t count = 0;    // call instances
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
  std::vector<IgnoredOp> ignored;  // sorted by op
  // The folder of the analyzed script (or input file) when known: call sites are shown relative to it.
  std::string source_dir;

  bool OpSupported(const OpRecord& op) const;
  // Supported instruction instances / all instances, in percent (Neuron's definition). A failed
  // lowering counts as one unsupported instance so that an unlowerable model never reads 100%.
  double SupportPercentage() const;
  // Supported aten call instances / all aten call instances, in percent. A call is supported when its
  // own instructions and those attributed to other ops from its lowering all are.
  double AtenSupportPercentage() const;
  // The first reason an op is unsupported (lowering error or first failing probe's reason).
  std::string FailureReason(const OpRecord& op) const;
  // `lowering`, `custom_op`, or the backend id.
  std::string FailureAt(const OpRecord& op) const;
  // aten calls (count-weighted, custom ops left out) whose lowering opprobe could build, in percent. All three
  // percentages are 0 when there is nothing to count.
  double AnalyzedPercentage() const;
  bool partial() const { return capture && capture->failed(); }
  // Anything left out: calls opprobe could not lower, a script that failed midway, or nothing at all.
  bool incomplete() const;
  // One line per reason the analysis is incomplete (empty when complete), e.g.
  // `partial analysis: the script failed at model.py:12 (RuntimeError: boom)`.
  std::vector<std::string> IncompleteReasons() const;
};

}  // namespace opprobe::analyzer
