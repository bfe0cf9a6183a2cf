#include "reports/gates.h"

#include <algorithm>

#include <fmt/format.h>

#include "reports/diff.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;
using analyzer::OpRecord;

double GatedPercentage(const AnalysisResult& result, const std::vector<std::string>& allow) {
  if (allow.empty()) return result.SupportPercentage();
  Tally t;
  for (const OpRecord& op : result.ops) {
    Tally one;
    one.Add(result, op);
    t.instructions += one.instructions;
    t.supported_instructions += IsAllowed(op.op, allow) ? one.instructions : one.supported_instructions;
  }
  return t.Percentage();
}

GateResult EvaluateGates(const AnalysisResult& result, const GateOptions& options) {
  GateResult g;
  double gated = RoundPercent(GatedPercentage(result, options.allow));
  if (!options.allow.empty()) {
    for (const auto& u : UnsupportedOps(result))
      if (IsAllowed(u.kind, options.allow))
        g.notes.push_back(fmt::format("allowed gap: {} ({}) at {}", u.kind, u.signature, u.call.empty() ? "?" : u.call));
    if (gated != RoundPercent(result.SupportPercentage()))
      g.notes.push_back(fmt::format("gates use {} (allowed ops counted as supported)", FormatPercent(gated)));
  }
  if (result.summary.shard_count > 0 && (options.fail_under >= 0 || options.baseline != nullptr)) {
    g.failed = true;
    g.messages.push_back(fmt::format("a --shard {}/{} result is partial; gates need the full report (`opprobe analyze` "
                                     "with the same cache, without --shard)",
                                     result.summary.shard_index, result.summary.shard_count));
  }
  if (options.fail_under >= 0 && gated + 1e-9 < options.fail_under) {
    g.failed = true;
    g.messages.push_back(fmt::format("support {} is below --fail-under {}", FormatPercent(gated),
                                     FormatPercent(options.fail_under)));
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
      if (c.allowed)
        g.notes.push_back(fmt::format("newly unsupported but allowed: {} ({})", c.kind, c.signature));
  }
  return g;
}

std::string RenderSummary(const AnalysisResult& result, bool color, size_t max_ops) {
  auto paint = [&](const std::string& s, const char* code) {
    return color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
  };
  double pct = result.SupportPercentage();
  bool all = RoundPercent(pct) >= 100.0;
  const auto& s = result.summary;
  std::string out = fmt::format("opprobe: {} of HLO instructions supported on {} ({} of aten calls)\n",
                                paint(FormatPercent(pct), all ? "1;32" : "1;31"), result.backend_id,
                                FormatPercent(result.AtenSupportPercentage()));
  out += fmt::format("  {} ({}): {} aten calls at {} call sites, {} HLO instructions, {} unique probes ({} cached, {} run)\n",
                     result.model.empty() ? "model" : result.model, result.input_kind.empty() ? "?" : result.input_kind,
                     s.aten_calls, s.aten_nodes, s.hlo_instructions, s.unique_probes, s.cache_hits, s.probes_run);
  if (s.shard_count > 0)
    out += fmt::format("  {}: shard {}/{} only, {} units left to other shards; their verdicts are in the cache for a "
                       "final `opprobe analyze` without --shard\n",
                       paint("PARTIAL", "1;33"), s.shard_index, s.shard_count, s.shard_skipped);
  auto unsupported = UnsupportedOps(result);
  if (unsupported.empty()) {
    out += "  no unsupported aten ops\n";
    return out;
  }
  int64_t lowering = 0;
  for (const auto& u : unsupported) lowering += u.failure_at == "lowering";
  out += fmt::format("  {} unsupported aten call site{}{}; top ones:\n", unsupported.size(),
                     unsupported.size() == 1 ? "" : "s",
                     lowering ? fmt::format(" ({} without a lowering)", lowering) : std::string());
  std::stable_sort(unsupported.begin(), unsupported.end(), [](const UnsupportedOp& a, const UnsupportedOp& b) {
    return a.failed_instructions > b.failed_instructions;
  });
  for (size_t i = 0; i < unsupported.size() && i < max_ops; ++i) {
    const auto& u = unsupported[i];
    out += fmt::format("    {} ({}) at {}: {}\n", paint(u.kind, "31"), u.signature, u.call.empty() ? "?" : u.call,
                       u.reason.empty() ? u.failure_at : u.reason);
  }
  if (unsupported.size() > max_ops) out += fmt::format("    ... and {} more\n", unsupported.size() - max_ops);
  return out;
}

}  // namespace opprobe::reports
