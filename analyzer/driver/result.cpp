#include "analyzer/driver/result.h"

#include <fmt/format.h>

#include <tuple>

#include "hlo/printer.h"
#include "hlo/probe_unit.h"

namespace opprobe::analyzer {

namespace {
std::unique_ptr<hlo::Module> MakeUnit(const hlo::Instruction& instr) {
  return hlo::MakeProbeModule(instr, std::string(hlo::OpcodeName(instr.opcode)));
}
}  // namespace

std::string ProbeRecord::ModuleText() const {
  if (!module_text.empty()) return module_text;
  if (unit) return hlo::ToString(*unit, hlo::PrintOptions::Short());
  std::shared_ptr<const hlo::Module> relowered;  // keeps `instr` alive while it is printed
  const hlo::Instruction* instr = source_instruction;
  if (!instr && relower) std::tie(relowered, instr) = relower->Relower(relower_index);
  return instr ? hlo::ToString(*MakeUnit(*instr), hlo::PrintOptions::Short()) : module_text;
}

const hlo::Module* ProbeRecord::Unit() {
  if (!unit && !source_instruction && relower) {
    std::tie(source, source_instruction) = relower->Relower(relower_index);
    relower.reset();
  }
  if (!unit && source_instruction) {
    unit = MakeUnit(*source_instruction);
    source_instruction = nullptr;  // `source` stays: the module goes with the result (the CLI leaves it to the exit)
  }
  return unit.get();
}

AnalysisResult AnalysisResult::ForTarget(size_t k) const {
  AnalysisResult r;
  r.model = model;
  r.input_kind = input_kind;
  r.torch_version = torch_version;
  r.programs = programs;
  r.ops = ops;
  r.probes = probes;
  r.summary = summary;
  r.warnings = warnings;
  r.capture = capture;
  r.steps = steps;
  r.program = program;
  r.ignored = ignored;
  r.source_dir = source_dir;
  r.input_modules = input_modules;
  r.lowering_library = lowering_library;
  r.backend_id = backend_id;
  r.backend_version = backend_version;
  if (k == 0 || k > other_targets.size()) return r;
  const TargetResult& t = other_targets[k - 1];
  r.backend_id = t.backend_id;
  r.backend_version = t.backend_version;
  for (size_t i = 0; i < r.probes.size() && i < t.verdicts.size(); ++i) {
    r.probes[i].verdict = t.verdicts[i];
    r.probes[i].cache_hit = i < t.cache_hits.size() && t.cache_hits[i];
    r.probes[i].repro_path = i < t.repro_paths.size() ? t.repro_paths[i] : std::string();
  }
  r.summary = t.summary;
  r.program = t.program;
  for (size_t i = 0; i < r.ops.size(); ++i)
    r.ops[i].suggestions = i < t.suggestions.size() ? t.suggestions[i] : SharedVector<Suggestion>();
  return r;
}

bool AnalysisResult::OpSupported(const OpRecord& op) const {
  if (op.lowering != OpRecord::Lowering::kOk) return false;
  for (size_t p : op.probes)
    if (!probes[p].verdict.supported()) return false;
  return true;
}

// An analysis of nothing supports nothing: 0%, never a reassuring 100% (the report also says it is incomplete).
double AnalysisResult::SupportPercentage() const {
  int64_t total = 0, ok = 0;
  for (const auto& op : ops) {
    if (op.lowering != OpRecord::Lowering::kOk) {
      total += op.count;
      continue;
    }
    for (size_t p : op.probes) {
      total += op.count;
      if (probes[p].verdict.supported()) ok += op.count;
    }
  }
  return total == 0 ? 0.0 : 100.0 * static_cast<double>(ok) / static_cast<double>(total);
}

double AnalysisResult::WhatIfPercentage() const {
  const int64_t total = summary.what_if_instructions;
  return total == 0 ? 0.0 : 100.0 * static_cast<double>(summary.what_if_supported) / static_cast<double>(total);
}

double AnalysisResult::AtenSupportPercentage() const {
  std::vector<bool> supported(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) supported[i] = OpSupported(ops[i]);
  for (const auto& op : ops)
    if (op.part_of >= 0 && !OpSupported(op)) supported[static_cast<size_t>(op.part_of)] = false;
  int64_t total = 0, ok = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].part_of >= 0) continue;
    total += ops[i].count;
    if (supported[i]) ok += ops[i].count;
  }
  return total == 0 ? 0.0 : 100.0 * static_cast<double>(ok) / static_cast<double>(total);
}

std::string AnalysisResult::FailureReason(const OpRecord& op) const {
  if (op.lowering != OpRecord::Lowering::kOk) return op.lowering_error;
  for (size_t p : op.probes)
    if (!probes[p].verdict.supported()) return probes[p].verdict.reason;
  return "";
}

std::string AnalysisResult::FailureAt(const OpRecord& op) const {
  switch (op.lowering) {
    case OpRecord::Lowering::kFailed: return lowering_library.empty() ? "lowering" : lowering_library;
    case OpRecord::Lowering::kInternalError: return "internal_error";
    case OpRecord::Lowering::kCustomOp: return "custom_op";
    case OpRecord::Lowering::kCpuFallback: return "cpu_fallback";
    case OpRecord::Lowering::kOk: break;
  }
  return backend_id;
}

double AnalysisResult::AnalyzedPercentage() const {
  int64_t total = 0, ok = 0;
  for (const auto& op : ops) {
    if (op.part_of >= 0 || op.lowering == OpRecord::Lowering::kCustomOp ||
        op.lowering == OpRecord::Lowering::kCpuFallback)
      continue;
    total += op.count;
    if (op.lowering == OpRecord::Lowering::kOk) ok += op.count;
  }
  return total == 0 ? 0.0 : 100.0 * static_cast<double>(ok) / static_cast<double>(total);
}

bool AnalysisResult::incomplete() const { return !Incomplete().empty(); }

std::vector<AnalysisResult::Incompleteness> AnalysisResult::Incomplete() const {
  using Kind = Incompleteness::Kind;
  std::vector<Incompleteness> out;
  if (partial()) {
    out.push_back(
        {Kind::kPartial,
         fmt::format("partial analysis: the script {}; only the calls before that were analyzed", capture->Failure())});
  }
  int64_t calls = 0, gap_calls = 0, gap_sites = 0, internal_calls = 0, internal_sites = 0;
  for (const auto& op : ops) {
    if (op.part_of >= 0) continue;
    calls += op.count;
    if (op.lowering == OpRecord::Lowering::kFailed) {
      gap_calls += op.count;
      ++gap_sites;
    }
    if (op.lowering == OpRecord::Lowering::kInternalError) {
      internal_calls += op.count;
      ++internal_sites;
    }
  }
  if (calls == 0) out.push_back({Kind::kNothing, "nothing analyzed: no aten calls were recorded"});
  if (internal_calls > 0)
    out.push_back({Kind::kInternalError,
                   fmt::format("internal error: opprobe failed on {} of {} aten calls ({} call site{}, failureAt "
                               "internal_error): a bug in opprobe, not a gap and not the backend's verdict; please "
                               "report it",
                               internal_calls, calls, internal_sites, internal_sites == 1 ? "" : "s")});
  if (gap_calls > 0 && !lowering_library.empty())
    out.push_back(
        {Kind::kLoweringGaps,
         fmt::format("incomplete: {} cannot lower {} of {} aten calls ({} call site{}, failureAt {}); they "
                     "count as unsupported",
                     lowering_library, gap_calls, calls, gap_sites, gap_sites == 1 ? "" : "s", lowering_library)});
  else if (gap_calls > 0)
    out.push_back({Kind::kLoweringGaps,
                   fmt::format("incomplete: opprobe cannot analyze {} of {} aten calls yet ({} call site{} without a "
                               "lowering); they count as unsupported",
                               gap_calls, calls, gap_sites, gap_sites == 1 ? "" : "s")});
  return out;
}

std::vector<std::string> AnalysisResult::IncompleteReasons() const {
  std::vector<std::string> out;
  for (Incompleteness& i : Incomplete()) out.push_back(std::move(i.text));
  return out;
}

}  // namespace opprobe::analyzer
