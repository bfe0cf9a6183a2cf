// The terminal report: aligned tables, ANSI colour only when asked (the CLI asks on a terminal without NO_COLOR).
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "opprobe_version.h"
#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;

namespace {

// Display width of UTF-8 text (code points; no wide characters are expected in reports).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Control characters (from compiler output or file names) would corrupt a terminal: show them escaped.
std::string Clean(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\t') out += ' ';
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right = {})
      : header_(std::move(header)), right_(std::move(right)) {
    right_.resize(header_.size(), false);
  }
  // `colors`: optional ANSI code per cell (empty: none).
  void Add(std::vector<std::string> cells, std::vector<std::string> colors = {}) {
    for (auto& c : cells) c = Clean(c);
    colors.resize(cells.size());
    rows_.push_back(std::move(cells));
    colors_.push_back(std::move(colors));
    notes_.emplace_back();
  }
  // A line under the last row, starting at `column`, that does not widen the table.
  void AddNote(size_t column, const std::string& text) {
    if (!notes_.empty()) notes_.back().push_back({column, Clean(text)});
  }
  std::string Render(bool color, const std::string& indent = "  ") const {
    std::vector<size_t> w(header_.size(), 0);
    for (size_t i = 0; i < header_.size(); ++i) w[i] = Width(header_[i]);
    for (const auto& r : rows_)
      for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], Width(r[i]));
    auto line = [&](const std::vector<std::string>& cells, const std::vector<std::string>& colors, const char* all) {
      std::string out = indent;
      for (size_t i = 0; i < cells.size() && i < w.size(); ++i) {
        bool last = i + 1 == cells.size();
        size_t pad = w[i] - Width(cells[i]);
        std::string cell = cells[i];
        const std::string& code = all != nullptr ? std::string(all) : colors[i];
        if (color && !code.empty()) cell = fmt::format("\033[{}m{}\033[0m", code, cell);
        if (right_[i]) out += std::string(pad, ' ') + cell;
        else out += cell + (last ? "" : std::string(pad, ' '));
        if (!last) out += "  ";
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      return out + "\n";
    };
    std::string out = line(header_, {}, "1");
    for (size_t r = 0; r < rows_.size(); ++r) {
      out += line(rows_[r], colors_[r], nullptr);
      for (const auto& [column, text] : notes_[r]) {
        size_t offset = 0;
        for (size_t i = 0; i < column && i < w.size(); ++i) offset += w[i] + 2;
        out += fmt::format("{}{:{}}{}\n", indent, "", offset, text);
      }
    }
    return out;
  }

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::vector<std::string>> colors_;
  std::vector<std::vector<std::pair<size_t, std::string>>> notes_;
};

}  // namespace

std::string RenderText(const AnalysisResult& result, const RenderOptions& options) {
  if (result.target_count() > 1) return RenderTextTargets(result, options);
  const bool color = options.color;
  auto paint = [&](const std::string& s, const char* code) {
    return color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
  };
  const auto& s = result.summary;
  std::string out =
      fmt::format("opprobe {} report: {} ({}) on {}{}\n\n", OPPROBE_VERSION, Clean(result.model), result.input_kind,
                  result.backend_id, result.backend_version.empty() ? "" : " (" + result.backend_version + ")");
  for (const auto& b : result.IncompleteReasons()) out += paint("! " + Clean(b), "1;33") + "\n";
  double pct = result.SupportPercentage();
  const Tally all = TallyAll(result);
  out +=
      fmt::format("Support: {} of HLO instructions ({} of {}), {} of aten calls ({} of {})\n",
                  paint(PercentLabel(result, pct), RoundPercent(pct) >= 100 && !result.incomplete() ? "1;32" : "1;31"),
                  all.supported_instructions, all.instructions, PercentLabel(result, result.AtenSupportPercentage()),
                  all.supported_calls, all.calls);
  out += fmt::format(
      "Analyzed: {} of aten calls lowered by opprobe ({} calls without a lowering, {} calls of custom "
      "ops outside aten)\n",
      PercentLabel(result, result.AnalyzedPercentage()), s.lowering_gap_calls, s.custom_op_calls);
  if (std::string what_if = WhatIfLine(result); !what_if.empty()) out += paint(what_if, "36") + "\n";

  auto [unsupported, gaps] = SplitLoweringGaps(UnsupportedOps(result));
  const std::vector<UnsupportedOp> internal = TakeInternalErrors(unsupported);
  auto table = [&](const std::vector<UnsupportedOp>& entries) {
    Table t({"CALL", "COUNT", "OP", "SIGNATURE", "MODULE", "FAILED AT", "REASON"},
            {false, true, false, false, false, false, false});
    for (const auto& g : GroupUnsupported(entries)) {
      bool first = true;
      for (const auto& u : g.entries) {
        t.Add({first ? (u.place.empty() ? "-" : u.place) : "", std::to_string(u.count), DisplayKind(u), u.signature,
               u.module_path.empty() ? "-" : u.module_path, first ? u.failure_at : "",
               first ? (u.error ? "error: " : "") + u.reason : "\"\""},
              {"", "", "31", "", "", "", ""});
        if (std::string origin = CallOrigin(u); !origin.empty()) t.AddNote(2, origin);
        first = false;
      }
    }
    return t.Render(color);
  };
  size_t groups = GroupUnsupported(unsupported).size();
  out += "\n" +
         paint(fmt::format("Unsupported aten ops ({} entr{} in {} group{} by source line and reason)",
                           unsupported.size(), unsupported.size() == 1 ? "y" : "ies", groups, groups == 1 ? "" : "s"),
               "1") +
         "\n";
  out += unsupported.empty() ? "  none\n" : table(unsupported);
  if (s.suggest && !unsupported.empty()) {
    out += "\n" +
           paint(fmt::format("Suggested rewrites (--suggest: each lowered and probed on {})", result.backend_id), "1") +
           "\n";
    for (const auto& g : GroupUnsupported(unsupported)) {
      out += fmt::format("  {}  {}\n", g.place.empty() ? "-" : g.place, Clean(g.reason));
      const auto list = GroupSuggestions(g);
      if (list.empty()) out += "    no rewrite in the table applies\n";
      for (const auto& sg : list) {
        out += "    " + (sg.verified ? paint("verified", "1;32") : paint("tried", "33")) +
               fmt::format(" {}: {} of its {} instruction{} pass on {}; the group's then {}\n", sg.title,
                           FractionLabel(sg.supported_fraction), sg.instructions, sg.instructions == 1 ? "" : "s",
                           sg.backend, FractionLabel(GroupShareWith(g, sg)));
        if (!sg.verified && !sg.refusal.empty()) out += "      refused: " + Clean(sg.refusal) + "\n";
        out += fmt::format("      {}: {}\n", sg.exact ? "exact" : "differs", Clean(sg.changes));
        if (sg.verified) {
          size_t start = 0;
          while (start < sg.python.size()) {
            size_t nl = sg.python.find('\n', start);
            out +=
                "      | " + sg.python.substr(start, nl == std::string::npos ? std::string::npos : nl - start) + "\n";
            if (nl == std::string::npos) break;
            start = nl + 1;
          }
        }
      }
    }
  }
  if (!internal.empty()) {
    out += "\n" +
           paint(fmt::format("{} ({} entr{}: a bug in opprobe; neither a gap nor a device verdict)",
                             kInternalErrorTitle, internal.size(), internal.size() == 1 ? "y" : "ies"),
                 "1") +
           "\n";
    out += table(internal);
  }
  if (!gaps.empty()) {
    out += "\n" +
           paint(fmt::format("{} ({} entr{}: opprobe has no lowering; not a device verdict)", kLoweringGapTitle,
                             gaps.size(), gaps.size() == 1 ? "y" : "ies"),
                 "1") +
           "\n";
    out += table(gaps);
  }
  if (!result.ignored.empty()) {
    out += "\n" + paint(fmt::format("Ignored ops (--ignore-op) ({})", result.ignored.size()), "1") + "\n";
    Table t({"OP", "PATTERN", "CALLS"}, {false, false, true});
    for (const auto& ig : result.ignored) t.Add({ig.op, ig.pattern, std::to_string(ig.count)});
    out += t.Render(color);
  }

  auto supported = SupportedAtenCounts(result);
  out += "\n" + paint(fmt::format("Supported aten ops ({})", supported.size()), "1") + "\n";
  if (supported.empty()) {
    out += "  none\n";
  } else {
    Table t({"OP", "CALLS"}, {false, true});
    for (const auto& [op, count] : supported) t.Add({op, std::to_string(count)}, {"32", ""});
    out += t.Render(color);
  }

  std::vector<const analyzer::OpRecord*> dynamic;
  for (const auto& op : result.ops)
    if (op.dynamic_shape) dynamic.push_back(&op);
  if (!dynamic.empty()) {
    std::stable_sort(dynamic.begin(), dynamic.end(), [](auto* a, auto* b) {
      return std::tie(a->op, a->loc.file, a->loc.line) < std::tie(b->op, b->loc.file, b->loc.line);
    });
    out += "\n" + paint(fmt::format("Dynamic-shape ops ({})", dynamic.size()), "1") + "\n";
    Table t({"OP", "SIGNATURE", "CALL", "SUPPORTED", "NOTE"});
    for (auto* op : dynamic)
      t.Add({op->op, op->signature, op->loc.empty() ? "-" : op->loc.ToString(), result.OpSupported(*op) ? "yes" : "no",
             op->note});
    out += t.Render(color);
  }

  if (result.steps) {
    const auto& st = *result.steps;
    out += "\n" + paint("Steps", "1") + ": " + StepsHeadline(st) + "\n";
    if (!st.recompilations.empty()) {
      Table t({"STEP", "GRAPH", "RUN BY", "FIRST CALL THAT DIFFERS", "BEFORE", "AFTER", "CAUSE"});
      for (const auto& r : st.recompilations)
        t.Add({std::to_string(r.step), std::to_string(r.graph), StepsTrigger(r),
               r.op.empty() ? "-" : r.op + " at " + r.loc.ToString(), r.before.empty() ? "-" : r.before,
               r.after.empty() ? "-" : r.after, r.cause});
      out += t.Render(color);
    }
    if (!st.cuts.empty()) {
      Table t({"CUT AT", "OP", "KIND", "TIMES", "EXTRA GRAPHS"}, {false, false, false, true, true});
      for (const auto& c : st.cuts)
        t.Add({c.loc.ToString(), c.op, CutKind(c), std::to_string(c.count), std::to_string(c.extra_graphs)});
      out += t.Render(color);
    }
  }

  if (result.program) {
    const auto& p = *result.program;
    out += "\n" + paint("Will it fit", "1") + ": " + ProgramHeadline(p) + "\n";
    if (auto rows = ProgramMemoryRows(p); !rows.empty()) {
      Table t({"PER DEVICE", "BYTES", ""}, {false, true, true});
      for (const auto& r : rows) t.Add({r.what, std::to_string(r.bytes), FormatBytes(r.bytes)});
      out += t.Render(color);
    }
    if (auto cs = ProgramContributors(p); !cs.empty()) {
      Table t({"WHERE THE BYTES GO (WHOLE PROGRAM)", "CALL", "SIZE"}, {false, false, true});
      for (const auto& x : cs) t.Add({x.what, x.where.empty() ? "-" : x.where, FormatBytes(x.bytes)});
      out += t.Render(color);
    }
    if (!p.step.gaps.empty()) {
      Table t({"CALL THE PROGRAM CANNOT HOLD", "AT", "CALLS", "WHY"}, {false, false, true, false});
      for (const auto& g : p.step.gaps) t.Add({g.op, g.loc.ToString(), std::to_string(g.calls), g.reason});
      out += t.Render(color);
    }
  }

  if (result.programs.size() > 1) {
    auto groups = GroupBy(result, [](const analyzer::OpRecord& op) { return op.program.str(); });
    out += "\n" + paint("Programs", "1") + "\n";
    Table t({"PROGRAM", "SUPPORT", "ATEN SUPPORT", "ATEN CALLS", "INSTRUCTIONS"}, {false, true, true, true, true});
    for (const auto& name : result.programs) {
      Tally tally;
      for (const auto& g : groups)
        if (g.key == name) tally = g.tally;
      t.Add({name, FormatPercent(tally.Percentage()), FormatPercent(tally.AtenPercentage()),
             std::to_string(tally.calls), std::to_string(tally.instructions)});
    }
    out += t.Render(color);
  }

  if (options.verbosity <= 1) {
    auto instrs = UnsupportedInstructions(result);
    out += "\n" + paint(fmt::format("Unsupported HLO instructions ({})", instrs.size()), "1") + "\n";
    if (instrs.empty()) {
      out += "  none\n";
    } else {
      Table t({"INSTRUCTION", "ATEN OP", "CALL", "REASON"});
      for (const auto& u : instrs)
        t.Add({u.signature, u.part_of.empty() ? u.aten_op : u.aten_op + " (part of " + u.part_of + ")",
               u.call.empty() ? "-" : u.call,
               (u.error ? "error: " : "") + u.reason + (u.repro.empty() ? "" : " (repro: " + u.repro + ")")},
              {"31", "", "", ""});
      out += t.Render(color);
    }
  }

  if (options.verbosity <= 0) {
    auto uses = ProbeUses(result);
    out += "\n" + paint(fmt::format("Probed instructions ({})", result.probes.size()), "1") + "\n";
    Table t({"VERDICT", "SECONDS", "CACHED", "FINGERPRINT", "INSTANCES", "INSTRUCTION", "ATEN OPS"},
            {false, true, false, false, true, false, false});
    std::vector<size_t> order = SortedProbeOrder(result);
    for (size_t i : order) {
      const auto& p = result.probes[i];
      std::string ops;
      for (const auto& op : uses[i].aten_ops) ops += (ops.empty() ? "" : ", ") + op;
      const char* code = p.verdict.supported() ? "32" : "31";
      t.Add({std::string(compiler_probe::VerdictKindName(p.verdict.kind)), fmt::format("{:.3f}", p.verdict.seconds),
             p.cache_hit ? "yes" : "no", p.fingerprint, std::to_string(uses[i].instances), p.signature, ops},
            {code, "", "", "", "", "", ""});
    }
    out += t.Render(color);
    for (size_t i : order) {
      const auto& p = result.probes[i];
      if (p.verdict.supported()) continue;
      out += fmt::format("\n  {} {}\n    {}: {}\n", p.fingerprint, Clean(p.signature),
                         compiler_probe::VerdictKindName(p.verdict.kind), Clean(p.verdict.reason));
      if (!p.repro_path.empty()) out += "    repro: " + Clean(p.repro_path) + "\n";
      std::string tail = TailLines(p.verdict.output_tail, 10);
      if (!tail.empty()) {
        out += "    compiler output (tail):\n";
        size_t pos = 0;
        while (pos <= tail.size()) {
          size_t nl = tail.find('\n', pos);
          if (nl == std::string::npos) nl = tail.size();
          out += "      | " + Clean(tail.substr(pos, nl - pos)) + "\n";
          pos = nl + 1;
        }
      }
    }
  }

  out += fmt::format(
      "\nSummary: {} aten calls at {} call sites ({} distinct signatures, {} without a lowering), {} HLO instructions, "
      "{} unique probes ({} cached, {} run), probe time {:.2f} s, wall {:.2f} s, {} job{}\n",
      s.aten_calls, s.aten_nodes, s.distinct_signatures, s.lowering_failures, s.hlo_instructions, s.unique_probes,
      s.cache_hits, s.probes_run, s.probe_seconds, s.wall_seconds, s.jobs, s.jobs == 1 ? "" : "s");
  if (s.batched_units > 0)
    out += fmt::format(
        "Batched: {} units judged in {} compiles ({} programs of several units, {} split to find a "
        "refusal; --probe-batch)\n",
        s.batched_units, s.batch_compiles, s.batches, s.batch_splits);
  if (s.shard_count > 0)
    out += fmt::format("PARTIAL: --shard {}/{} probed only its own units; {} were left to other shards\n",
                       s.shard_index, s.shard_count, s.shard_skipped);
  if (s.interp_agree + s.interp_differ + s.interp_not_compared > 0)
    out += fmt::format("Numerics vs interp: {} unique probes agree, {} differ, {} not compared\n", s.interp_agree,
                       s.interp_differ, s.interp_not_compared);
  return out;
}

}  // namespace opprobe::reports
