#include "reports/gates.h"

#include <fmt/format.h>

#include <algorithm>

#include "reports/diff.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;
using analyzer::OpRecord;

double GatedPercentage(const AnalysisResult& result, const std::vector<std::string>& allow) {
  if (allow.empty()) return result.SupportPercentage();
  Tally t;
  const std::vector<bool> derived_unsupported = UnsupportedDerived(result);
  for (size_t i = 0; i < result.ops.size(); ++i) {
    const OpRecord& op = result.ops[i];
    Tally one;
    one.Add(result, op, derived_unsupported[i]);
    t.instructions += one.instructions;
    t.supported_instructions += IsAllowed(op.op, allow) ? one.instructions : one.supported_instructions;
  }
  return t.Percentage();
}

// Why no gate may pass on this result: a partial (failed script), empty or incomplete analysis. Lowering gaps of
// --allow'ed ops are accepted like their other gaps; an internal error (opprobe's own bug) never is.
std::vector<std::string> GateBlockers(const AnalysisResult& result, const std::vector<std::string>& allow) {
  using Kind = AnalysisResult::Incompleteness::Kind;
  std::vector<std::string> out;
  for (auto& r : result.Incomplete()) {
    if (r.kind == Kind::kLoweringGaps) continue;  // re-derived below without the allowed ops
    if (r.kind == Kind::kInternalError && !allow.empty())
      r.text += " (--allow excuses opprobe's lowering gaps, never its internal errors)";
    out.push_back(std::move(r.text));
  }
  int64_t gaps = 0;
  for (const OpRecord& op : result.ops)
    if (op.part_of < 0 && op.lowering == OpRecord::Lowering::kFailed && !IsAllowed(op.op, allow)) gaps += op.count;
  if (gaps > 0)
    out.push_back(fmt::format("incomplete: opprobe cannot analyze {} aten call{} yet (missing lowerings)", gaps,
                              gaps == 1 ? "" : "s"));
  return out;
}

GateResult EvaluateGates(const AnalysisResult& result, const GateOptions& options) {
  GateResult g;
  double gated = RoundPercent(GatedPercentage(result, options.allow));
  if (!options.allow.empty()) {
    for (const auto& u : UnsupportedOps(result))
      if (IsAllowed(u.kind, options.allow))
        g.notes.push_back(
            fmt::format("allowed gap: {} ({}) at {}", u.kind, u.signature, u.call.empty() ? "?" : u.call));
    if (gated != RoundPercent(result.SupportPercentage()))
      g.notes.push_back(fmt::format("gates use {} (allowed ops counted as supported)", FormatPercent(gated)));
  }
  if (result.summary.shard_count > 0 && (options.fail_under >= 0 || options.baseline != nullptr)) {
    g.failed = true;
    g.messages.push_back(
        fmt::format("a --shard {}/{} result is partial; gates need the full report (`opprobe analyze` "
                    "with the same cache, without --shard)",
                    result.summary.shard_index, result.summary.shard_count));
  }
  if (options.fail_under >= 0 || options.baseline != nullptr || options.require_fit) {
    for (const auto& b : GateBlockers(result, options.allow)) {
      g.failed = true;
      g.messages.push_back("no gate passes on this analysis: " + b);
    }
  }
  if (options.fail_under >= 0 && gated + 1e-9 < options.fail_under) {
    g.failed = true;
    g.messages.push_back(
        fmt::format("support {} is below --fail-under {}", FormatPercent(gated), FormatPercent(options.fail_under)));
  }
  if (options.max_graphs >= 0) {
    if (!result.steps) {
      g.failed = true;
      g.messages.push_back(fmt::format(
          "--max-graphs {}: this input says nothing of the graphs its steps compile (a trace of a script that moves "
          "its model to the XLA device does)",
          options.max_graphs));
    } else if (result.steps->distinct_graphs > options.max_graphs) {
      g.failed = true;
      std::string first;
      if (!result.steps->recompilations.empty()) {
        const auto& r = result.steps->recompilations.front();
        first = fmt::format("; the first new one in step {}: {}", r.step, r.cause);
      }
      g.messages.push_back(fmt::format("the steps need {} distinct graphs, more than --max-graphs {}{}",
                                       result.steps->distinct_graphs, options.max_graphs, first));
    }
  }
  if (options.require_fit) {
    const auto& p = result.program;
    if (!p) {
      g.failed = true;
      g.messages.push_back("--require-fit: no program was compiled (analyze with --fit)");
    } else if (p->fits && !*p->fits) {
      g.failed = true;
      g.messages.push_back(fmt::format("{} does not fit: one device needs {}, more than its {} (short by {})", p->what,
                                       FormatBytes(p->required_bytes), FormatBytes(p->device_memory_bytes),
                                       FormatBytes(p->required_bytes - p->device_memory_bytes)));
    } else if (!p->fits || p->estimated) {
      g.failed = true;
      g.messages.push_back("--require-fit never passes on a program its compiler did not judge: " +
                           ProgramHeadline(*p));
    } else {
      g.notes.push_back(fmt::format("{} fits: {} of {} per device", p->what, FormatBytes(p->required_bytes),
                                    FormatBytes(p->device_memory_bytes)));
    }
  }
  if (options.baseline != nullptr) {
    DiffOptions d;
    d.allow = options.allow;
    d.new_percentage = gated;
    ReportDiff diff = DiffReports(*options.baseline, ToJson(result, 1), d);
    for (const auto& r : diff.RegressionReasons()) {
      g.failed = true;
      g.messages.push_back(fmt::format("regression against baseline {}: {}", options.baseline_name, r));
    }
    for (const auto& c : diff.newly_unsupported)
      if (c.allowed) g.notes.push_back(fmt::format("newly unsupported but allowed: {} ({})", c.kind, c.signature));
  }
  return g;
}

std::string RenderSummary(const AnalysisResult& result, bool color, size_t max_ops) {
  auto paint = [&](const std::string& s, const char* code) {
    return color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
  };
  std::string out;
  for (const auto& b : result.IncompleteReasons()) out += "opprobe: " + paint(b, "1;33") + "\n";
  double pct = result.SupportPercentage();
  bool all = RoundPercent(pct) >= 100.0 && !result.incomplete();
  const auto& s = result.summary;
  out += fmt::format("opprobe: {} of HLO instructions supported on {} ({} of aten calls)\n",
                     paint(PercentLabel(result, pct), all ? "1;32" : "1;31"), result.backend_id,
                     PercentLabel(result, result.AtenSupportPercentage()));
  out += fmt::format(
      "  {} ({}): {} aten calls at {} call sites, {} HLO instructions, {} unique probes ({} cached, {} run)\n",
      result.model.empty() ? "model" : result.model, result.input_kind.empty() ? "?" : result.input_kind, s.aten_calls,
      s.aten_nodes, s.hlo_instructions, s.unique_probes, s.cache_hits, s.probes_run);
  if (s.interp_agree + s.interp_differ + s.interp_not_compared > 0)
    out +=
        fmt::format("  numerics against interp: {} unique probes agree, {} differ, {} not compared (random numbers)\n",
                    s.interp_agree, s.interp_differ, s.interp_not_compared);
  if (s.shard_count > 0)
    out += fmt::format(
        "  {}: shard {}/{} only, {} units left to other shards; their verdicts are in the cache for a "
        "final `opprobe analyze` without --shard\n",
        paint("PARTIAL", "1;33"), s.shard_index, s.shard_count, s.shard_skipped);
  if (s.custom_op_calls > 0)
    out += fmt::format("  {} of the calls are outside aten (custom ops without an XLA lowering)\n", s.custom_op_calls);
  if (s.cpu_fallback_calls > 0)
    out += fmt::format("  {} of the calls ran on the host CPU under torch_xla (failureAt cpu_fallback)\n",
                       s.cpu_fallback_calls);
  if (!result.ignored.empty()) {
    std::string list;
    for (const auto& ig : result.ignored) list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", ig.op, ig.count);
    out += fmt::format("  ignored (--ignore-op): {} call{} of {}\n", s.ignored_calls, s.ignored_calls == 1 ? "" : "s",
                       list);
  }
  if (std::string what_if = WhatIfLine(result); !what_if.empty()) out += "  " + what_if + "\n";
  auto [unsupported, gaps] = SplitLoweringGaps(UnsupportedOps(result));
  auto render_groups = [&](const std::vector<UnsupportedOp>& entries) {
    auto groups = GroupUnsupported(entries);
    for (size_t i = 0; i < groups.size() && i < max_ops; ++i) {
      const auto& g = groups[i];
      std::string ops;
      for (size_t k = 0; k < g.entries.size() && k < 3; ++k) {
        std::string details = g.entries[k].signature;
        if (std::string origin = CallOrigin(g.entries[k]); !origin.empty())
          details += (details.empty() ? "" : ", ") + origin;
        ops += (k ? ", " : "") + paint(DisplayKind(g.entries[k]), "31") + (details.empty() ? "" : " (" + details + ")");
      }
      if (g.entries.size() > 3) ops += fmt::format(", +{} more", g.entries.size() - 3);
      out +=
          fmt::format("    {}x at {}: {}\n      {}\n", g.count, g.place.empty() ? "(no call site recorded)" : g.place,
                      ops, g.reason.empty() ? g.failure_at : g.reason);
      if (result.summary.suggest) {
        const auto list = GroupSuggestions(g);
        if (!list.empty() && list.front().verified)
          out += fmt::format("      {} {}\n", paint("suggest (verified):", "32"), list.front().title);
        else if (!list.empty())
          out += fmt::format("      suggest: {} rewrite{} tried, none accepted\n", list.size(),
                             list.size() == 1 ? "" : "s");
      }
    }
    if (groups.size() > max_ops) out += fmt::format("    ... and {} more groups\n", groups.size() - max_ops);
  };
  if (unsupported.empty()) {
    out += "  no unsupported aten ops\n";
  } else {
    auto groups = GroupUnsupported(unsupported);
    out += fmt::format("  {} unsupported entr{} in {} group{} (by source line and reason); top ones:\n",
                       unsupported.size(), unsupported.size() == 1 ? "y" : "ies", groups.size(),
                       groups.size() == 1 ? "" : "s");
    render_groups(unsupported);
  }
  if (!gaps.empty()) {
    out += fmt::format("  {} ({} entr{}, not a device verdict):\n", kLoweringGapTitle, gaps.size(),
                       gaps.size() == 1 ? "y" : "ies");
    render_groups(gaps);
  }
  return out;
}

}  // namespace opprobe::reports
