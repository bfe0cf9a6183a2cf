// The JSON report: Neuron's result.json shape plus opprobe's fields (DESIGN.md "Report",
// schemas/report.schema.json).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include "opprobe_version.h"
#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;
using analyzer::OpRecord;

namespace {

// Times are rounded to microseconds so that the printed form stays short.
double RoundSeconds(double s) { return std::round(s * 1e6) / 1e6; }

Json UnsupportedAtenJson(const UnsupportedOp& u, bool several_programs) {
  Json e;
  e["kind"] = u.kind;
  e["failureAt"] = u.failure_at;
  e["call"] = u.call;
  e["reason"] = u.reason;
  e["signature"] = u.signature;
  if (!u.module_path.empty()) e["module_path"] = u.module_path;
  if (several_programs && !u.program.empty()) e["program"] = u.program;
  if (!u.phase.empty()) e["phase"] = u.phase;
  e["count"] = u.count;
  if (!u.part_of.empty()) e["part_of"] = u.part_of;
  if (!u.lib_place.empty()) e["library_place"] = u.lib_place;
  if (!u.forward_op.empty()) e["forward_call"] = ForwardCallJson(u);
  if (u.dynamic_shape) e["dynamic_shape"] = true;
  if (u.error) e["error"] = true;
  if (!u.suggestions.empty()) {
    Json list = Json::array();
    for (const auto& sg : u.suggestions) {
      Json j;
      j["rewrite"] = sg.rewrite;
      j["title"] = sg.title;
      j["python"] = sg.python;
      j["changes"] = sg.changes;
      j["exact"] = sg.exact;
      j["verified"] = sg.verified;
      j["backend"] = sg.backend;
      j["supported_fraction"] = std::round(sg.supported_fraction * 1e4) / 1e4;
      j["instructions"] = sg.instructions;
      if (!sg.refusal.empty()) j["refusal"] = sg.refusal;
      list.push_back(std::move(j));
    }
    e["suggestions"] = std::move(list);
  }
  return e;
}

Json StepsJson(const analyzer::StepGraphs& s) {
  Json j;
  j["model"] = s.model;
  j["steps"] = s.steps;
  j["executed_graphs"] = s.executed_graphs;
  j["distinct_graphs"] = s.distinct_graphs;
  Json recs = Json::array();
  for (const auto& r : s.recompilations) {
    Json e;
    e["step"] = r.step;
    e["graph"] = r.graph;
    e["trigger"] = {{"kind", r.trigger_kind}, {"op", r.trigger_op}, {"call", r.trigger_loc.ToString()}};
    if (!r.op.empty()) {
      Json c;
      c["op"] = r.op;
      c["call"] = r.loc.ToString();
      if (!r.before.empty()) c["before"] = r.before;
      c["after"] = r.after;
      e["first_difference"] = std::move(c);
    }
    e["cause"] = r.cause;
    recs.push_back(std::move(e));
  }
  j["recompilations"] = std::move(recs);
  Json cuts = Json::array();
  for (const auto& c : s.cuts)
    cuts.push_back({{"kind", c.kind},
                    {"op", c.op},
                    {"call", c.loc.ToString()},
                    {"count", c.count},
                    {"extra_graphs", c.extra_graphs}});
  j["cuts"] = std::move(cuts);
  return j;
}

// Per-device memory, as the report's `memory` and `estimate` write it (code_bytes added where a compiler gave it).
Json MemoryJson(const compiler_probe::DeviceMemory& m) {
  return {{"argument_bytes", m.argument_bytes},
          {"output_bytes", m.output_bytes},
          {"alias_bytes", m.alias_bytes},
          {"temp_bytes", m.temp_bytes},
          {"total_bytes", m.total_bytes()}};
}

Json ProgramJson(const analyzer::ProgramFit& p) {
  const auto& c = p.compile;
  Json j;
  j["what"] = p.what;
  j["outcome"] = ProgramOutcome(p);
  j["headline"] = ProgramHeadline(p);
  if (!p.built) j["not_built"] = p.not_built;
  const auto& s = p.step;
  if (s.calls > 0) {
    Json step;
    step["scope"] = s.scope;
    if (!s.begin.empty()) step["begin"] = s.begin.ToString();
    if (!s.end.empty()) step["end"] = s.end.ToString();
    step["end_kind"] = s.end_kind;
    step["calls"] = s.calls;
    if (s.untracked_writes) step["untracked_writes"] = s.untracked_writes;
    step["inputs"] = static_cast<int64_t>(s.inputs.size());
    step["outputs"] = static_cast<int64_t>(s.outputs.size());
    Json gaps = Json::array();
    for (const auto& g : s.gaps)
      gaps.push_back({{"op", g.op}, {"call", g.loc.ToString()}, {"reason", g.reason}, {"calls", g.calls}});
    step["gaps"] = std::move(gaps);
    j["step"] = std::move(step);
  }
  if (p.built) {
    j["instructions"] = p.instructions;
    j["compiler"] = c.compiler;
    j["devices"] = c.devices;
    if (c.outcome == compiler_probe::ProgramCompile::Outcome::kRefused ||
        c.outcome == compiler_probe::ProgramCompile::Outcome::kError)
      j["message"] = c.message;
    if (c.outcome == compiler_probe::ProgramCompile::Outcome::kCompiled) j["compile_seconds"] = c.seconds;
  }
  if (c.has_memory) {
    j["memory"] = MemoryJson(c.memory);
    j["memory"]["code_bytes"] = c.memory.generated_code_bytes;
  }
  if (s.calls > 0 && p.built) { j["estimate"] = MemoryJson(s.estimate); }
  j["source"] = p.estimated ? "estimate" : "compiler";
  j["device_memory_bytes"] = p.device_memory_bytes;
  if (!c.device_memory_source.empty()) j["device_memory_source"] = c.device_memory_source;
  j["required_bytes"] = p.required_bytes;
  if (!c.required_what.empty()) j["required_what"] = c.required_what;
  j["fits"] = p.fits ? Json(*p.fits) : Json(nullptr);
  if (p.fits && !*p.fits) j["short_by_bytes"] = p.required_bytes - p.device_memory_bytes;
  Json contributors = Json::array();
  for (const auto& x : ProgramContributors(p)) {
    Json e = {{"what", x.what}, {"bytes", x.bytes}};
    if (!x.where.empty()) e["call"] = x.where;
    contributors.push_back(std::move(e));
  }
  j["contributors"] = std::move(contributors);
  return j;
}

Json SummaryJson(const analyzer::Summary& s) {
  Json j;
  j["aten_calls"] = s.aten_calls;
  j["aten_nodes"] = s.aten_nodes;
  j["custom_op_calls"] = s.custom_op_calls;
  j["lowering_gap_calls"] = s.lowering_gap_calls;
  if (s.internal_error_calls > 0) j["internal_error_calls"] = s.internal_error_calls;
  j["ignored_calls"] = s.ignored_calls;
  j["distinct_signatures"] = s.distinct_signatures;
  j["lowering_failures"] = s.lowering_failures;
  j["hlo_instructions"] = s.hlo_instructions;
  j["supported_instructions"] = s.supported_instructions;
  j["unique_probes"] = s.unique_probes;
  j["cache_hits"] = s.cache_hits;
  j["probes_run"] = s.probes_run;
  j["dynamic_shape_ops"] = s.dynamic_shape_ops;
  j["probe_seconds"] = RoundSeconds(s.probe_seconds);
  j["wall_seconds"] = RoundSeconds(s.wall_seconds);
  j["jobs"] = s.jobs;
  if (s.cpu_fallback_calls > 0) j["cpu_fallback_calls"] = s.cpu_fallback_calls;
  if (s.suggest)
    j["suggest"] = {{"what_if_instructions", s.what_if_instructions},
                    {"what_if_supported", s.what_if_supported},
                    {"seconds", RoundSeconds(s.suggest_seconds)}};
  if (s.batched_units > 0)
    j["batching"] = {
        {"units", s.batched_units}, {"compiles", s.batch_compiles}, {"batches", s.batches}, {"splits", s.batch_splits}};
  if (s.shard_count > 0)
    j["shard"] = {{"index", s.shard_index}, {"count", s.shard_count}, {"skipped", s.shard_skipped}, {"partial", true}};
  if (s.interp_agree + s.interp_differ + s.interp_not_compared > 0) {
    j["interp_agree"] = s.interp_agree;
    j["interp_differ"] = s.interp_differ;
    j["interp_not_compared"] = s.interp_not_compared;
  }
  return j;
}

std::string ProgramKey(const OpRecord& op) { return op.program; }

}  // namespace

Json ForwardCallJson(const UnsupportedOp& u) {
  Json f;
  f["op"] = u.forward_op;
  f["place"] = u.forward_place;
  if (!u.forward_lib_place.empty()) f["library_place"] = u.forward_lib_place;
  if (!u.forward_module_path.empty()) f["module_path"] = u.forward_module_path;
  return f;
}

std::string FormatPercent(double pct) {
  if (!std::isfinite(pct)) pct = 0;
  return fmt::format("{:.2f}%", RoundPercent(pct));
}

double RoundPercent(double pct) {
  if (!std::isfinite(pct)) return 0;
  // Round half away from zero at the second decimal; `+ 1e-9` keeps 66.665 (stored as 66.66499..) stable.
  return std::round(pct * 100.0 + 1e-9) / 100.0;
}

Json ToJson(const AnalysisResult& result, int verbosity) {
  if (result.target_count() > 1) {
    // Several targets: the first keeps Neuron's top-level shape; `targets` holds every target's verdicts.
    Json j = ToJson(result.ForTarget(0), verbosity);
    Json targets = Json::array();
    for (size_t k = 0; k < result.target_count(); ++k) {
      Json one = ToJson(result.ForTarget(k), verbosity);
      Json t;
      for (const char* key :
           {"backend", "backend_version", "support_percentage", "aten_support_percentage", "what_if_support_percentage",
            "what_if", "unsupported_operators", "summary", "instructions"})
        if (one.contains(key)) t[key] = std::move(one[key]);
      targets.push_back(std::move(t));
    }
    j["targets"] = std::move(targets);
    return j;
  }
  const bool xla = verbosity <= 1;
  const bool several_programs = result.programs.size() > 1;
  Json j;
  j["opprobe_version"] = OPPROBE_VERSION;
  j["schema_version"] = kSchemaVersion;
  j["backend"] = result.backend_id;
  j["backend_version"] = result.backend_version;
  j["model"] = result.model;
  j["input_kind"] = result.input_kind;
  if (!result.torch_version.empty()) j["torch_version"] = result.torch_version;
  j["verbosity"] = verbosity;
  if (result.capture) {
    const auto& c = *result.capture;
    Json cj;
    cj["status"] = c.failed() ? "error" : "ok";
    cj["exit_status"] = c.exit_code;
    if (!c.exception_type.empty()) cj["exception_type"] = c.exception_type;
    if (!c.exception_message.empty()) cj["exception_message"] = c.exception_message;
    if (!c.location.empty()) {
      cj["file"] = c.location.file;
      cj["line"] = c.location.line;
    }
    j["capture"] = std::move(cj);
  }
  if (result.steps) j["steps"] = StepsJson(*result.steps);
  if (result.program) j["program"] = ProgramJson(*result.program);
  j["complete"] = !result.incomplete();
  j["incomplete_reasons"] = result.IncompleteReasons();
  j["support_percentage"] = FormatPercent(result.SupportPercentage());
  j["aten_support_percentage"] = FormatPercent(result.AtenSupportPercentage());
  j["analyzed_percentage"] = FormatPercent(result.AnalyzedPercentage());
  if (result.summary.suggest) {
    j["what_if_support_percentage"] = FormatPercent(result.WhatIfPercentage());
    if (std::string line = WhatIfLine(result); !line.empty()) j["what_if"] = line;
  }

  Json supported;
  const SupportedAtenTally tally = TallySupportedAten(result);
  Json aten_counts = Json::object();
  for (const auto& [op, count] : tally.calls) aten_counts[op] = count;
  supported["aten"] = std::move(aten_counts);
  // Which of those counts are derived instructions rather than calls of the program.
  Json derived = Json::object();
  for (const auto& [key, count] : tally.marked) {
    auto pos = key.find(" (part of ");
    if (pos == std::string::npos) continue;
    derived[key] = count;
  }
  if (!derived.empty()) supported["derived"] = std::move(derived);
  if (xla) supported["xla"] = SupportedSignatures(result);
  j["supported_operators"] = std::move(supported);

  Json unsupported;
  Json aten_list = Json::array();
  for (const auto& u : UnsupportedOps(result)) aten_list.push_back(UnsupportedAtenJson(u, several_programs));
  unsupported["aten"] = std::move(aten_list);
  if (xla) {
    Json xla_list = Json::array();
    for (const auto& u : UnsupportedInstructions(result)) {
      Json e;
      e["hlo_instruction"] = u.signature;
      e["aten_op"] = u.aten_op;
      if (!u.part_of.empty()) e["part_of"] = u.part_of;
      e["reason"] = u.reason;
      e["call"] = u.call;
      if (!u.repro.empty()) e["repro"] = u.repro;
      if (u.error) e["error"] = true;
      xla_list.push_back(std::move(e));
    }
    unsupported["xla"] = std::move(xla_list);
  }
  j["unsupported_operators"] = std::move(unsupported);

  if (!result.ignored.empty()) {
    Json list = Json::array();
    for (const auto& ig : result.ignored) {
      Json e;
      e["kind"] = ig.op;
      e["pattern"] = ig.pattern;
      e["count"] = ig.count;
      list.push_back(std::move(e));
    }
    j["ignored_operators"] = std::move(list);
  }

  // Ops whose output shape depends on data, whether or not the backend accepted their bounded form.
  std::vector<const OpRecord*> dynamic;
  for (const auto& op : result.ops)
    if (op.dynamic_shape) dynamic.push_back(&op);
  if (!dynamic.empty()) {
    std::stable_sort(dynamic.begin(), dynamic.end(), [](const OpRecord* a, const OpRecord* b) {
      return std::tie(a->op, a->loc.file, a->loc.line, a->signature) <
             std::tie(b->op, b->loc.file, b->loc.line, b->signature);
    });
    Json list = Json::array();
    for (const OpRecord* op : dynamic) {
      Json e;
      e["kind"] = op->op;
      e["call"] = op->loc.ToString();
      e["signature"] = op->signature;
      if (!op->module_path.empty()) e["module_path"] = op->module_path;
      e["note"] = op->note;
      e["supported"] = result.OpSupported(*op);
      e["count"] = op->count;
      list.push_back(std::move(e));
    }
    j["dynamic_shape_operators"] = std::move(list);
  }

  if (several_programs) {
    auto groups = GroupBy(result, ProgramKey);
    Json list = Json::array();
    for (const auto& name : result.programs) {
      Tally t;
      for (const auto& g : groups)
        if (g.key == name) t = g.tally;
      Json e;
      e["name"] = name;
      e["support_percentage"] = FormatPercent(t.Percentage());
      e["aten_support_percentage"] = FormatPercent(t.AtenPercentage());
      e["aten_calls"] = t.calls;
      e["hlo_instructions"] = t.instructions;
      e["supported_instructions"] = t.supported_instructions;
      list.push_back(std::move(e));
    }
    j["programs"] = std::move(list);
  }

  j["summary"] = SummaryJson(result.summary);

  if (verbosity <= 0) {
    auto uses = ProbeUses(result);
    Json list = Json::array();
    for (size_t i : SortedProbeOrder(result)) {
      const auto& p = result.probes[i];
      Json e;
      e["fingerprint"] = p.fingerprint;
      e["signature"] = p.signature;
      e["opcode"] = p.opcode;
      e["verdict"] = std::string(compiler_probe::VerdictKindName(p.verdict.kind));
      e["reason"] = p.verdict.reason;
      e["output_tail"] = p.verdict.output_tail;
      e["seconds"] = RoundSeconds(p.verdict.seconds);
      e["cache_hit"] = p.cache_hit;
      if (!p.repro_path.empty()) e["repro"] = p.repro_path;
      e["instances"] = uses[i].instances;
      e["aten_ops"] = uses[i].aten_ops;
      e["hlo_module"] = p.ModuleText();
      list.push_back(std::move(e));
    }
    j["instructions"] = std::move(list);
  }
  return j;
}

std::string RenderJson(const AnalysisResult& result, const RenderOptions& options) {
  // Invalid UTF-8 in recorded strings (file names, compiler output) is replaced, never a throw.
  return ToJson(result, options.verbosity).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace opprobe::reports
