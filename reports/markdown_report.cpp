// Markdown for a pull-request comment (GitHub-flavoured tables, long lists folded in <details>).
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "opprobe_version.h"
#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;

namespace {

// Free text in a table cell: nothing in it may end the cell, the row, or start markup.
std::string Cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '|': out += "\\|"; break;
      case '\n': out += "<br>"; break;
      case '\r': break;
      case '\\':
      case '*':
      case '_':
      case '`':
      case '[':
      case ']':
      case '#':
      case '~':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

// A code span in a table cell. GFM splits cells on `|` even inside code spans unless escaped, and a
// backtick would end the span: both are replaced by look-alikes that cannot break the table.
std::string Code(const std::string& s) {
  if (s.empty()) return "";
  std::string out = "`";
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '`') out += '\'';
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out + "`";
}

}  // namespace

std::string RenderMarkdown(const AnalysisResult& result, const RenderOptions& options) {
  if (result.target_count() > 1) return RenderMarkdownTargets(result, options);
  double pct = result.SupportPercentage();
  bool all = RoundPercent(pct) >= 100 && !result.incomplete();
  auto all_unsupported = UnsupportedOps(result);
  auto [unsupported, gaps] = SplitLoweringGaps(all_unsupported);
  const std::vector<UnsupportedOp> internal = TakeInternalErrors(unsupported);
  const Tally tally = TallyAll(result);
  int64_t sites = 0;
  for (const auto& op : result.ops) sites += op.part_of < 0;

  std::string out;
  for (const auto& b : result.IncompleteReasons()) out += "> :warning: **" + Cell(b) + "**\n>\n";
  if (!out.empty()) out += "\n";
  out += fmt::format("## {} opprobe: {} of HLO instructions supported on {}\n\n",
                     all ? ":white_check_mark:" : ":x:", PercentLabel(result, pct), Code(result.backend_id));
  out += fmt::format("Model {} ({}), backend {}{}. aten calls supported: **{}**; analyzed by opprobe: **{}**.\n\n",
                     Code(result.model), Cell(result.input_kind), Code(result.backend_id),
                     result.backend_version.empty() ? "" : " " + Code(result.backend_version),
                     PercentLabel(result, result.AtenSupportPercentage()),
                     PercentLabel(result, result.AnalyzedPercentage()));
  if (std::string what_if = WhatIfLine(result); !what_if.empty()) out += "*" + Cell(what_if) + "*\n\n";
  out +=
      "| HLO instructions | supported | aten calls | supported | call sites | unsupported entries | lowering gaps | "
      "unique probes | cached |\n";
  out += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n\n", tally.instructions,
                     tally.supported_instructions, tally.calls, tally.supported_calls, sites, unsupported.size(),
                     gaps.size(), result.summary.unique_probes, result.summary.cache_hits);

  auto table = [&](const std::vector<UnsupportedOp>& entries) {
    std::string t = "| call | count | aten op | signature | module | failed at | reason |\n";
    t += "|---|---:|---|---|---|---|---|\n";
    for (const auto& g : GroupUnsupported(entries)) {
      bool first = true;
      for (const auto& u : g.entries) {
        std::string origin = CallOrigin(u);
        t += fmt::format("| {} | {} | {}{}{} | {} | {} | {} | {} |\n", first ? Code(u.place) : "", u.count,
                         Code(u.kind), u.part_of.empty() ? "" : " (part of " + Code(u.part_of) + ")",
                         origin.empty() ? "" : " (" + Cell(origin) + ")", Code(u.signature), Code(u.module_path),
                         first ? Code(u.failure_at) : "",
                         first ? (u.error ? "**error:** " : "") + Cell(u.reason) : "\"");
        first = false;
      }
    }
    return t + "\n";
  };
  if (unsupported.empty()) {
    out += "No unsupported aten ops.\n\n";
  } else {
    size_t groups = GroupUnsupported(unsupported).size();
    out += fmt::format("### Unsupported aten ops ({} entr{} in {} group{} by source line and reason)\n\n",
                       unsupported.size(), unsupported.size() == 1 ? "y" : "ies", groups, groups == 1 ? "" : "s");
    out += table(unsupported);
  }
  if (result.summary.suggest && !unsupported.empty()) {
    out += fmt::format("### Suggested rewrites (each lowered and probed on {})\n\n", Code(result.backend_id));
    for (const auto& g : GroupUnsupported(unsupported)) {
      out += fmt::format("**{}** {}\n\n", Code(g.place.empty() ? "-" : g.place), Cell(g.reason));
      const auto list = GroupSuggestions(g);
      if (list.empty()) out += "- no rewrite in the table applies\n";
      for (const auto& sg : list) {
        out += fmt::format("- {} **{}**: {} of its {} instructions pass on {}; the group's then {}. {}: {}\n",
                           sg.verified ? ":white_check_mark: verified" : ":x: tried", Cell(sg.title),
                           FractionLabel(sg.supported_fraction), sg.instructions, Code(sg.backend),
                           FractionLabel(GroupShareWith(g, sg)), sg.exact ? "Exact" : "Differs", Cell(sg.changes));
        if (!sg.verified && !sg.refusal.empty()) out += "  Refused: " + Cell(sg.refusal) + "\n";
        if (sg.verified)
          out += "\n  ```python\n  " + [&] {
            std::string py = sg.python, indented;
            for (char c : py) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
            return indented;
          }() + "\n  ```\n";
      }
      out += "\n";
    }
  }
  if (!internal.empty()) {
    out += fmt::format(
        "### {} ({} entr{})\n\nopprobe's lowering of these calls threw or built invalid HLO: a bug in "
        "opprobe, neither a gap nor the backend's verdict; no gate passes on it. Please report it.\n\n",
        kInternalErrorTitle, internal.size(), internal.size() == 1 ? "y" : "ies");
    out += table(internal);
  }
  if (!gaps.empty()) {
    out += fmt::format(
        "### {} ({} entr{})\n\nopprobe has no lowering for these calls yet: they are not the backend's "
        "verdict, and the analysis is incomplete until they are lowered.\n\n",
        kLoweringGapTitle, gaps.size(), gaps.size() == 1 ? "y" : "ies");
    out += table(gaps);
  }
  if (!result.ignored.empty()) {
    out += fmt::format("### Ignored ops (`--ignore-op`) ({})\n\n| op | pattern | calls |\n|---|---|---:|\n",
                       result.ignored.size());
    for (const auto& ig : result.ignored)
      out += fmt::format("| {} | {} | {} |\n", Code(ig.op), Code(ig.pattern), ig.count);
    out += "\n";
  }

  std::vector<const analyzer::OpRecord*> dynamic;
  for (const auto& op : result.ops)
    if (op.dynamic_shape) dynamic.push_back(&op);
  if (!dynamic.empty()) {
    std::stable_sort(dynamic.begin(), dynamic.end(), [](auto* a, auto* b) {
      return std::tie(a->op, a->loc.file, a->loc.line) < std::tie(b->op, b->loc.file, b->loc.line);
    });
    out += fmt::format(
        "### Dynamic-shape ops ({})\n\n| aten op | signature | call | supported | note |\n|---|---|---|---|---|\n",
        dynamic.size());
    for (auto* op : dynamic)
      out += fmt::format("| {} | {} | {} | {} | {} |\n", Code(op->op), Code(op->signature), Code(op->loc.ToString()),
                         result.OpSupported(*op) ? "yes" : "no", Cell(op->note));
    out += "\n";
  }

  if (result.steps) {
    const auto& st = *result.steps;
    out += "### Steps\n\n" + Cell(StepsHeadline(st)) + ".\n\n";
    if (!st.recompilations.empty()) {
      out +=
          "| step | graph | run by | first call that differs | before | after | cause "
          "|\n|---:|---:|---|---|---|---|---|\n";
      for (const auto& r : st.recompilations)
        out +=
            fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", r.step, r.graph, Cell(StepsTrigger(r)),
                        r.op.empty() ? "-" : Code(r.op) + " at " + Code(r.loc.ToString()),
                        r.before.empty() ? "-" : Code(r.before), r.after.empty() ? "-" : Code(r.after), Cell(r.cause));
      out += "\n";
    }
    if (!st.cuts.empty()) {
      out += "| cut at | op | kind | times | extra graphs |\n|---|---|---|---:|---:|\n";
      for (const auto& c : st.cuts)
        out += fmt::format("| {} | {} | {} | {} | {} |\n", Code(c.loc.ToString()), Code(c.op), CutKind(c), c.count,
                           c.extra_graphs);
      out += "\n";
    }
  }

  if (result.program) {
    const auto& p = *result.program;
    out += "### Will it fit\n\n" + Cell(ProgramHeadline(p)) + ".\n\n";
    if (auto rows = ProgramMemoryRows(p); !rows.empty()) {
      out += "| per device | bytes | |\n|---|---:|---:|\n";
      for (const auto& r : rows) out += fmt::format("| {} | {} | {} |\n", r.what, r.bytes, FormatBytes(r.bytes));
      out += "\n";
    }
    if (auto cs = ProgramContributors(p); !cs.empty()) {
      out += "| where the bytes go (whole program) | call | size |\n|---|---|---:|\n";
      for (const auto& x : cs)
        out += fmt::format("| {} | {} | {} |\n", Cell(x.what), x.where.empty() ? "-" : Code(x.where),
                           FormatBytes(x.bytes));
      out += "\n";
    }
    if (!p.step.gaps.empty()) {
      out += "| call the program cannot hold | at | calls | why |\n|---|---|---:|---|\n";
      for (const auto& g : p.step.gaps)
        out += fmt::format("| {} | {} | {} | {} |\n", Code(g.op), Code(g.loc.ToString()), g.calls, Cell(g.reason));
      out += "\n";
    }
  }

  if (result.programs.size() > 1) {
    auto groups = GroupBy(result, [](const analyzer::OpRecord& op) { return op.program.str(); });
    out +=
        "### Programs\n\n| program | support | aten support | aten calls | HLO instructions "
        "|\n|---|---:|---:|---:|---:|\n";
    for (const auto& name : result.programs) {
      Tally t;
      for (const auto& g : groups)
        if (g.key == name) t = g.tally;
      out += fmt::format("| {} | {} | {} | {} | {} |\n", Code(name), FormatPercent(t.Percentage()),
                         FormatPercent(t.AtenPercentage()), t.calls, t.instructions);
    }
    out += "\n";
  }

  if (options.verbosity <= 1) {
    auto instrs = UnsupportedInstructions(result);
    if (!instrs.empty()) {
      out += fmt::format("<details><summary>Unsupported HLO instructions ({})</summary>\n\n", instrs.size());
      out += "| HLO instruction | aten op | call | reason |\n|---|---|---|---|\n";
      for (const auto& u : instrs)
        out += fmt::format("| {} | {}{} | {} | {}{}{} |\n", Code(u.signature), Code(u.aten_op),
                           u.part_of.empty() ? "" : " (part of " + Code(u.part_of) + ")", Code(u.call),
                           u.error ? "**error:** " : "", Cell(u.reason),
                           u.repro.empty() ? "" : " (repro: " + Code(u.repro) + ")");
      out += "\n</details>\n\n";
    }
  }

  auto supported = SupportedAtenCounts(result);
  if (!supported.empty()) {
    out += fmt::format("<details><summary>Supported aten ops ({})</summary>\n\n| aten op | calls |\n|---|---:|\n",
                       supported.size());
    for (const auto& [op, count] : supported) out += fmt::format("| {} | {} |\n", Code(op), count);
    out += "\n</details>\n\n";
  }

  if (options.verbosity <= 0 && !result.probes.empty()) {
    auto uses = ProbeUses(result);
    out += fmt::format("<details><summary>Probed instructions ({})</summary>\n\n", result.probes.size());
    out += "| verdict | HLO instruction | aten ops | instances | seconds | cached | fingerprint | reason |\n";
    out += "|---|---|---|---:|---:|---|---|---|\n";
    for (size_t i : SortedProbeOrder(result)) {
      const auto& p = result.probes[i];
      std::string ops;
      for (const auto& op : uses[i].aten_ops) ops += (ops.empty() ? "" : ", ") + op;
      out +=
          fmt::format("| {} | {} | {} | {} | {:.3f} | {} | {} | {} |\n",
                      compiler_probe::VerdictKindName(p.verdict.kind), Code(p.signature), Cell(ops), uses[i].instances,
                      p.verdict.seconds, p.cache_hit ? "yes" : "no", Code(p.fingerprint), Cell(p.verdict.reason));
    }
    out += "\n</details>\n\n";
  }

  out += fmt::format("<sub>opprobe {} · report schema {}</sub>\n", OPPROBE_VERSION, kSchemaVersion);
  return out;
}

}  // namespace opprobe::reports
