// One self-contained HTML page (no external resources): the summary on top, the unsupported ops, an inline
// SVG chart of where the unsupported instructions sit in the model, and tables by module path and by aten
// op whose rows expand to their HLO instructions and verdicts (drill-down module -> aten op -> HLO). This file
// writes the report's data as HTML; the page around it (CSS, JavaScript, skeleton) is reports/html_template.html.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string_view>
#include <tuple>

#include "opprobe_version.h"
#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;
using analyzer::OpRecord;

namespace {

std::string E(const std::string& s) { return XmlEscape(s); }

const char* VerdictClass(compiler_probe::Verdict::Kind k) {
  switch (k) {
    case compiler_probe::Verdict::Kind::kSupported: return "ok";
    case compiler_probe::Verdict::Kind::kUnsupported: return "bad";
    default: return "err";
  }
}

// A percentage bar for table cells.
std::string Meter(const Tally& t) {
  double pct = RoundPercent(t.Percentage());
  return fmt::format("<span class=\"meter\" title=\"{}\"><span style=\"width:{:.2f}%\"></span></span> {}",
                     FormatPercent(pct), pct, FormatPercent(pct));
}

// The page around the report: reports/html_template.html (CSS, JavaScript, skeleton), embedded at build time
// (reports/CMakeLists.txt) as one {name, text} entry. Its {{title}} and {{body}} slots take the report.
struct EmbeddedFile {
  const char* name;
  const char* text;
};
constexpr EmbeddedFile kTemplate[] = {
#include "html_template.inc"
};

// The template with each {{slot}} replaced by its text. Only the template is scanned for slots, so text
// from the report is never read as one.
std::string FillTemplate(std::string_view page, const std::map<std::string_view, std::string>& slots) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = page.find("{{", pos);
    size_t close = open == std::string_view::npos ? open : page.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    auto it = slots.find(page.substr(open + 2, close - open - 2));
    if (it == slots.end()) {  // not a slot: kept as written
      out.append(page.substr(pos, open + 2 - pos));
      pos = open + 2;
      continue;
    }
    out.append(page.substr(pos, open - pos));
    out += it->second;
    pos = close + 2;
  }
  out.append(page.substr(pos));
  return out;
}

// The instructions of one op (in lowering order) with their verdicts.
std::string InstructionTable(const AnalysisResult& result, const OpRecord& op) {
  if (op.lowering != OpRecord::Lowering::kOk)
    return fmt::format("<p class=\"bad\">no HLO lowering: {}</p>", E(op.lowering_error));
  if (op.probes.empty()) return "<p class=\"none\">lowers to no instruction (metadata only)</p>";
  std::string out =
      "<table><thead><tr><th>name</th><th>HLO instruction</th><th>verdict</th><th>reason</th>"
      "<th>fingerprint</th></tr></thead><tbody>";
  for (size_t i = 0; i < op.probes.size(); ++i) {
    size_t p = op.probes[i];
    if (p >= result.probes.size()) continue;
    const auto& probe = result.probes[p];
    out += fmt::format(
        "<tr><td class=\"mono\">{}</td><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}{}</td>"
        "<td class=\"mono\">{}</td></tr>",
        E(i < op.instruction_names.size() ? op.instruction_names[i] : ""), E(probe.signature),
        VerdictClass(probe.verdict.kind), compiler_probe::VerdictKindName(probe.verdict.kind), E(probe.verdict.reason),
        probe.repro_path.empty() ? "" : " <span class=\"mono\">repro: " + E(probe.repro_path) + "</span>",
        E(probe.fingerprint));
  }
  return out + "</tbody></table>";
}

std::string ModuleName(const std::string& m) { return m.empty() ? "(no module)" : m; }

// Module path cut to its first `depth` components.
std::string Prefix(const std::string& path, size_t depth) {
  size_t pos = 0;
  for (size_t d = 0; d < depth; ++d) {
    pos = path.find('.', pos);
    if (pos == std::string::npos) return path;
    if (d + 1 < depth) ++pos;
  }
  return path.substr(0, pos);
}

// Horizontal stacked bars: supported and unsupported instruction instances per module (model order).
std::string Chart(const AnalysisResult& result) {
  constexpr size_t kMaxBars = 40;
  std::vector<std::string> paths;
  paths.reserve(result.ops.size());
  for (const auto& op : result.ops) paths.push_back(op.module_path);
  // Coarsen the module paths until at most kMaxBars groups remain.
  size_t max_depth = 1;
  for (const auto& p : paths)
    max_depth = std::max(max_depth, static_cast<size_t>(std::count(p.begin(), p.end(), '.')) + 1);
  size_t depth = max_depth;
  auto count_groups = [&](size_t d) {
    std::set<std::string> s;
    for (const auto& p : paths) s.insert(Prefix(p, d));
    return s.size();
  };
  while (depth > 1 && count_groups(depth) > kMaxBars) --depth;

  std::vector<std::string> order;
  std::map<std::string, Tally> tallies;
  const std::vector<bool> derived_unsupported = UnsupportedDerived(result);
  for (size_t i = 0; i < result.ops.size(); ++i) {
    const auto& op = result.ops[i];
    std::string key = Prefix(op.module_path, depth);
    if (!tallies.count(key)) order.push_back(key);
    tallies[key].Add(result, op, derived_unsupported[i]);
  }
  if (order.size() > kMaxBars) {  // still too many top-level modules: keep the ones with most failures
    std::vector<std::string> by_bad = order;
    std::stable_sort(by_bad.begin(), by_bad.end(), [&](const std::string& a, const std::string& b) {
      const Tally &ta = tallies[a], &tb = tallies[b];
      return ta.instructions - ta.supported_instructions > tb.instructions - tb.supported_instructions;
    });
    std::set<std::string> keep(by_bad.begin(), by_bad.begin() + kMaxBars);
    std::vector<std::string> kept;
    for (const auto& k : order)
      if (keep.count(k)) kept.push_back(k);
    order = std::move(kept);
  }
  if (order.empty()) return "<p class=\"none\">No ops.</p>";

  int64_t max_total = 1;
  for (const auto& k : order) max_total = std::max(max_total, tallies[k].instructions);
  const int label_w = 230, bar_w = 520, row_h = 22, top = 28;
  int height = top + static_cast<int>(order.size()) * row_h + 8;
  std::string svg = fmt::format(
      "<svg id=\"module-chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"100%\" "
      "style=\"max-width:880px\" "
      "role=\"img\" aria-labelledby=\"chart-title\"><title id=\"chart-title\">HLO instruction instances per module "
      "path, unsupported in red</title>",
      label_w + bar_w + 110, height);
  svg += fmt::format(
      "<rect x=\"{}\" y=\"6\" width=\"12\" height=\"12\" fill=\"var(--ok)\"/><text x=\"{}\" y=\"16\">supported</text>"
      "<rect x=\"{}\" y=\"6\" width=\"12\" height=\"12\" fill=\"var(--bad)\"/><text x=\"{}\" "
      "y=\"16\">unsupported</text>",
      label_w, label_w + 16, label_w + 100, label_w + 116);
  for (size_t i = 0; i < order.size(); ++i) {
    const Tally& t = tallies[order[i]];
    int64_t bad = t.instructions - t.supported_instructions;
    int y = top + static_cast<int>(i) * row_h;
    double scale = static_cast<double>(bar_w) / static_cast<double>(max_total);
    double ok_w = static_cast<double>(t.supported_instructions) * scale, bad_w = static_cast<double>(bad) * scale;
    std::string name = ModuleName(order[i]);
    std::string label = name.size() > 34 ? "\xE2\x80\xA6" + name.substr(name.size() - 33) : name;
    svg += fmt::format("<g class=\"bar{}\"><title>{}: {} of {} instruction instances unsupported</title>",
                       bad > 0 ? " has-bad" : "", E(name), bad, t.instructions);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 8, y + 14, E(label));
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"14\" fill=\"var(--ok)\"/>", label_w, y + 3,
                       ok_w);
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"14\" fill=\"var(--bad)\"/>",
                       label_w + ok_w, y + 3, bad_w);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text></g>", label_w + ok_w + bad_w + 6, y + 14,
                       bad > 0 ? fmt::format("{} unsupported", bad) : std::string("all supported"));
  }
  svg += "</svg>";
  std::string note =
      depth < max_depth ? fmt::format("<p class=\"meta\">Module paths grouped to depth {}.</p>", depth) : "";
  return svg + note;
}

}  // namespace

// The report's page content and its title (RenderHtml puts them into the template).
static std::string HtmlBody(const AnalysisResult& result, const RenderOptions& options, std::string& title_out) {
  double pct = result.SupportPercentage();
  bool all = RoundPercent(pct) >= 100 && !result.incomplete();
  const Tally total = TallyAll(result);
  auto [unsupported, gaps] = SplitLoweringGaps(UnsupportedOps(result));
  const std::vector<UnsupportedOp> internal = TakeInternalErrors(unsupported);
  const auto& s = result.summary;

  std::string title =
      fmt::format("opprobe: {} on {}: {}", E(result.model), E(result.backend_id), E(PercentLabel(result, pct)));
  std::string out;
  out += fmt::format(
      "<header><h1>opprobe report: <code>{}</code></h1>\n<p class=\"meta\">{} input on backend "
      "<code>{}</code>{} &middot; opprobe {}</p></header>\n",
      E(result.model), E(result.input_kind), E(result.backend_id),
      result.backend_version.empty() ? "" : " (" + E(result.backend_version) + ")", OPPROBE_VERSION);

  // What was left out comes before any percentage.
  for (const auto& b : result.IncompleteReasons())
    out += fmt::format("<p class=\"banner bad\" role=\"alert\"><strong>{}</strong></p>\n", E(b));

  // Summary.
  out += "<section id=\"summary\"><div class=\"cards\">\n";
  out += fmt::format(
      "<div class=\"card big\"><div class=\"n {}\" id=\"support-percentage\">{}</div><div class=\"l\">of "
      "HLO instructions supported ({} of {})</div></div>\n",
      all ? "ok" : "bad", E(PercentLabel(result, pct)), total.supported_instructions, total.instructions);
  out += fmt::format(
      "<div class=\"card\"><div class=\"n\">{}</div><div class=\"l\">of aten calls supported ({} of "
      "{})</div></div>\n",
      PercentLabel(result, result.AtenSupportPercentage()), total.supported_calls, total.calls);
  out += fmt::format(
      "<div class=\"card\"><div class=\"n {}\">{}</div><div class=\"l\">of aten calls analyzed by "
      "opprobe</div></div>\n",
      result.AnalyzedPercentage() < 100 ? "bad" : "ok", PercentLabel(result, result.AnalyzedPercentage()));
  out += fmt::format(
      "<div class=\"card\"><div class=\"n {}\">{}</div><div class=\"l\">unsupported entries ({} aten "
      "calls at {} call sites)</div></div>\n",
      unsupported.empty() ? "ok" : "bad", unsupported.size(), s.aten_calls, s.aten_nodes);
  out += fmt::format(
      "<div class=\"card\"><div class=\"n\">{}</div><div class=\"l\">unique probes ({} cached, {} "
      "run)</div></div>\n",
      s.unique_probes, s.cache_hits, s.probes_run);
  out += fmt::format(
      "<div class=\"card\"><div class=\"n\">{}</div><div class=\"l\">lowering gaps (opprobe cannot "
      "analyze these yet)</div></div>\n",
      gaps.size());
  out += fmt::format(
      "<div class=\"card\"><div class=\"n\">{:.2f} s</div><div class=\"l\">probe time ({:.2f} s wall, {} "
      "job{})</div></div>\n",
      s.probe_seconds, s.wall_seconds, s.jobs, s.jobs == 1 ? "" : "s");
  if (std::string what_if = WhatIfLine(result); !what_if.empty())
    out += fmt::format(
        "<div class=\"card\"><div class=\"n\" id=\"what-if-percentage\">{}</div><div class=\"l\">{}</div>"
        "</div>\n",
        E(PercentLabel(result, result.WhatIfPercentage())), E(what_if));
  out += "</div></section>\n";

  // Unsupported ops, grouped by source line and reason (most instances first); opprobe's gaps apart.
  auto table = [&](const std::vector<UnsupportedOp>& entries, const char* id) {
    std::string t = fmt::format(
        "<table id=\"{}\"><thead><tr><th>call</th><th class=\"num\">count</th><th>aten op</th>"
        "<th>signature</th><th>module</th><th>failed at</th><th>reason</th></tr></thead><tbody>\n",
        id);
    for (const auto& g : GroupUnsupported(entries)) {
      bool first = true;
      for (const auto& u : g.entries) {
        t += fmt::format(
            "<tr class=\"unsupported-op{}\"><td title=\"{}\">{}</td><td class=\"num\">{}</td>"
            "<td class=\"bad\"><code>{}</code>{}{}</td><td><code>{}</code></td><td><code>{}</code></td>"
            "<td><code>{}</code></td><td>{}{}</td></tr>\n",
            first ? " group-start" : "", E(RelativeToCwd(u.file, options.cwd)), first ? E(u.place) : "", u.count,
            E(u.kind),
            u.part_of.empty() ? "" : " <span class=\"derived\">(part of <code>" + E(u.part_of) + "</code>)</span>",
            // where the call came from (a library frame, a backward op's forward call), styled as `derived`
            CallOrigin(u).empty() ? "" : " <span class=\"derived\">(" + E(CallOrigin(u)) + ")</span>", E(u.signature),
            E(u.module_path), E(u.failure_at), u.error ? "<span class=\"err\">error:</span> " : "", E(u.reason));
        first = false;
      }
    }
    return t + "</tbody></table>\n";
  };
  size_t groups = GroupUnsupported(unsupported).size();
  out += fmt::format(
      "<section id=\"unsupported\"><h2>Unsupported aten ops ({} entr{} in {} group{} by source line and "
      "reason)</h2>\n",
      unsupported.size(), unsupported.size() == 1 ? "y" : "ies", groups, groups == 1 ? "" : "s");
  if (unsupported.empty()) {
    out += gaps.empty() ? "<p class=\"ok\">Every aten op is supported.</p>\n"
                        : "<p>The backend rejected none of the calls opprobe could analyze.</p>\n";
  } else {
    out += table(unsupported, "unsupported-ops");
  }
  out += "</section>\n";
  if (s.suggest && !unsupported.empty()) {
    out += fmt::format(
        "<section id=\"suggestions\"><h2>Suggested rewrites (each lowered and probed on <code>{}</code>)"
        "</h2>\n",
        E(result.backend_id));
    for (const auto& g : GroupUnsupported(unsupported)) {
      out += fmt::format("<h3><code>{}</code> {}</h3>\n<ul>\n", E(g.place.empty() ? "-" : g.place), E(g.reason));
      const auto list = GroupSuggestions(g);
      if (list.empty()) out += "<li>no rewrite in the table applies</li>\n";
      for (const auto& sg : list) {
        out += fmt::format(
            "<li class=\"suggestion {}\"><strong class=\"{}\">{}</strong> {}: {} of its {} instructions "
            "pass on <code>{}</code>; the group's then {}. {}: {}{}{}</li>\n",
            sg.verified ? "verified" : "tried", sg.verified ? "ok" : "bad", sg.verified ? "verified" : "tried",
            E(sg.title), FractionLabel(sg.supported_fraction), sg.instructions, E(sg.backend),
            FractionLabel(GroupShareWith(g, sg)), sg.exact ? "Exact" : "Differs", E(sg.changes),
            sg.refusal.empty() || sg.verified ? "" : "<br>Refused: " + E(sg.refusal),
            sg.verified ? "<pre><code>" + E(sg.python) + "</code></pre>" : "");
      }
      out += "</ul>\n";
    }
    out += "</section>\n";
  }
  if (!internal.empty()) {
    out += fmt::format(
        "<section id=\"internal-errors\"><h2>{} ({} entr{})</h2>\n<p>opprobe's lowering of these calls "
        "threw or built invalid HLO: a bug in opprobe, neither a gap nor the backend's verdict; no gate "
        "passes on it. Please report it.</p>\n",
        kInternalErrorTitle, internal.size(), internal.size() == 1 ? "y" : "ies");
    out += table(internal, "internal-error-ops");
    out += "</section>\n";
  }
  if (!gaps.empty()) {
    out += fmt::format(
        "<section id=\"lowering-gaps\"><h2>{} ({} entr{})</h2>\n<p>opprobe has no lowering for these "
        "calls yet: they are not the backend's verdict, and the analysis is incomplete.</p>\n",
        kLoweringGapTitle, gaps.size(), gaps.size() == 1 ? "y" : "ies");
    out += table(gaps, "lowering-gap-ops");
    out += "</section>\n";
  }
  if (!result.ignored.empty()) {
    out += fmt::format(
        "<section id=\"ignored\"><h2>Ignored ops (--ignore-op) ({})</h2>\n<table><thead><tr><th>op</th>"
        "<th>pattern</th><th class=\"num\">calls</th></tr></thead><tbody>\n",
        result.ignored.size());
    for (const auto& ig : result.ignored)
      out += fmt::format("<tr><td><code>{}</code></td><td><code>{}</code></td><td class=\"num\">{}</td></tr>\n",
                         E(ig.op), E(ig.pattern), ig.count);
    out += "</tbody></table></section>\n";
  }

  if (result.steps) {
    const auto& st = *result.steps;
    out += fmt::format("<section id=\"steps\"><h2>Steps</h2>\n<p>{}.</p>\n", E(StepsHeadline(st)));
    if (!st.recompilations.empty()) {
      out +=
          "<table><thead><tr><th class=\"num\">step</th><th class=\"num\">graph</th><th>run by</th><th>first call "
          "that differs</th><th>before</th><th>after</th><th>cause</th></tr></thead><tbody>\n";
      for (const auto& r : st.recompilations)
        out += fmt::format(
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td><code>{}"
            "</code></td><td><code>{}</code></td><td>{}</td></tr>\n",
            r.step, r.graph, E(StepsTrigger(r)),
            r.op.empty() ? "-" : "<code>" + E(r.op) + "</code> at " + E(r.loc.ToString()),
            E(r.before.empty() ? "-" : r.before), E(r.after.empty() ? "-" : r.after), E(r.cause));
      out += "</tbody></table>\n";
    }
    if (!st.cuts.empty()) {
      out +=
          "<table><thead><tr><th>cut at</th><th>op</th><th>kind</th><th class=\"num\">times</th>"
          "<th class=\"num\">extra graphs</th></tr></thead><tbody>\n";
      for (const auto& c : st.cuts)
        out += fmt::format(
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td>"
            "<td class=\"num\">{}</td></tr>\n",
            E(c.loc.ToString()), E(c.op), CutKind(c), c.count, c.extra_graphs);
      out += "</tbody></table>\n";
    }
    out += "</section>\n";
  }

  if (result.program) {
    const auto& p = *result.program;
    out += fmt::format("<section id=\"program\"><h2>Will it fit</h2>\n<p>{}.</p>\n", E(ProgramHeadline(p)));
    if (auto rows = ProgramMemoryRows(p); !rows.empty()) {
      out +=
          "<table><thead><tr><th>per device</th><th class=\"num\">bytes</th><th class=\"num\"></th></tr></thead>"
          "<tbody>\n";
      for (const auto& r : rows)
        out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n", E(r.what),
                           r.bytes, E(FormatBytes(r.bytes)));
      out += "</tbody></table>\n";
    }
    if (auto cs = ProgramContributors(p); !cs.empty()) {
      out +=
          "<table><thead><tr><th>where the bytes go (whole program)</th><th>call</th><th class=\"num\">size</th>"
          "</tr></thead><tbody>\n";
      for (const auto& x : cs)
        out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n", E(x.what),
                           E(x.where.empty() ? "-" : x.where), E(FormatBytes(x.bytes)));
      out += "</tbody></table>\n";
    }
    if (!p.step.gaps.empty()) {
      out +=
          "<table><thead><tr><th>call the program cannot hold</th><th>at</th><th class=\"num\">calls</th>"
          "<th>why</th></tr></thead><tbody>\n";
      for (const auto& g : p.step.gaps)
        out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                           E(g.op), E(g.loc.ToString()), g.calls, E(g.reason));
      out += "</tbody></table>\n";
    }
    out += "</section>\n";
  }

  // Chart.
  out +=
      "<section id=\"chart\"><h2>Where the unsupported instructions sit</h2>\n"
      "<p class=\"meta\">HLO instruction instances per module path, in model order.</p>\n";
  out += Chart(result) + "\n</section>\n";

  // By module path.
  auto modules = GroupBy(result, [](const OpRecord& op) { return op.module_path.str(); });
  out += fmt::format("<section id=\"modules\"><h2>By module path ({})</h2>\n", modules.size());
  out +=
      "<div class=\"tools\"><button type=\"button\" data-expand=\"all\" data-table=\"by-module\">Expand all</button> "
      "<button type=\"button\" data-expand=\"none\" data-table=\"by-module\">Collapse all</button></div>\n";
  out +=
      "<table id=\"by-module\"><thead><tr><th>module path</th><th class=\"num\">aten calls</th><th class=\"num\">"
      "instructions</th><th class=\"num\">unsupported</th><th>support</th></tr></thead><tbody>\n";
  for (size_t g = 0; g < modules.size(); ++g) {
    const Group& group = modules[g];
    const Tally& t = group.tally;
    std::string id = fmt::format("m{}", g);
    out += fmt::format(
        "<tr><td><button type=\"button\" class=\"tog\" aria-expanded=\"false\" aria-controls=\"{}\" "
        "aria-label=\"show instructions\"></button><code>{}</code></td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num {}\">{}</td><td>{}</td></tr>\n",
        id, E(ModuleName(group.key)), t.calls, t.instructions, t.instructions > t.supported_instructions ? "bad" : "",
        t.instructions - t.supported_instructions, Meter(t));
    out += fmt::format("<tr class=\"detail\" id=\"{}\" hidden><td colspan=\"5\">", id);
    for (size_t i : group.ops) {
      const OpRecord& op = result.ops[i];
      bool ok = result.OpSupported(op);
      out += fmt::format(
          "<p><code class=\"{}\">{}</code> <code>({})</code> at <span title=\"{}\">{}</span>, {} call{}{}</p>",
          ok ? "ok" : "bad", E(op.op) + (op.part_of >= 0 ? " <span class=\"derived\">(" + E(op.note) + ")</span>" : ""),
          E(op.signature), E(RelativeToCwd(op.loc.file, options.cwd)),
          E(op.loc.empty() ? "unknown place" : op.loc.ToString()), op.count, op.count == 1 ? "" : "s",
          op.phase.empty() ? "" : " (" + E(op.phase) + ")");
      out += InstructionTable(result, op);
    }
    out += "</td></tr>\n";
  }
  out += "</tbody></table></section>\n";

  // By aten op.
  // Derived records (instructions a lowering attributes to another op) are their own, marked rows.
  auto ops = GroupBy(result, [](const OpRecord& op) { return op.part_of >= 0 ? op.op + " (derived)" : op.op.str(); });
  std::stable_sort(ops.begin(), ops.end(), [](const Group& a, const Group& b) { return a.key < b.key; });
  out += fmt::format("<section id=\"ops\"><h2>By aten op ({})</h2>\n", ops.size());
  out +=
      "<div class=\"tools\"><button type=\"button\" data-expand=\"all\" data-table=\"by-op\">Expand all</button> "
      "<button type=\"button\" data-expand=\"none\" data-table=\"by-op\">Collapse all</button></div>\n";
  out +=
      "<table id=\"by-op\"><thead><tr><th>aten op</th><th class=\"num\">calls</th><th class=\"num\">call sites</th>"
      "<th class=\"num\">unsupported calls</th><th>support</th></tr></thead><tbody>\n";
  for (size_t g = 0; g < ops.size(); ++g) {
    const Group& group = ops[g];
    const Tally& t = group.tally;
    std::string id = fmt::format("o{}", g);
    out += fmt::format(
        "<tr><td><button type=\"button\" class=\"tog\" aria-expanded=\"false\" aria-controls=\"{}\" "
        "aria-label=\"show instructions\"></button><code class=\"{}\">{}</code></td><td class=\"num\">{}"
        "</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
        id, t.calls > t.supported_calls ? "bad" : "ok", E(group.key), t.calls, group.ops.size(),
        t.calls - t.supported_calls, Meter(t));
    // Unique instructions of this op with their verdicts, and where it is called.
    std::map<std::tuple<std::string, std::string>, std::pair<size_t, int64_t>> instrs;  // (signature, fp) -> probe, n
    std::set<std::string> lowering_errors;
    std::set<std::string> sites;
    for (size_t i : group.ops) {
      const OpRecord& op = result.ops[i];
      sites.insert(fmt::format("{} ({})", op.loc.empty() ? "unknown place" : op.loc.ToString(), op.signature));
      if (op.lowering != OpRecord::Lowering::kOk) lowering_errors.insert(op.lowering_error);
      else
        for (size_t p : op.probes)
          if (p < result.probes.size()) {
            auto& e = instrs[{result.probes[p].signature, result.probes[p].fingerprint}];
            e.first = p;
            e.second += op.count;
          }
    }
    out += fmt::format("<tr class=\"detail\" id=\"{}\" hidden><td colspan=\"5\"><p>Called at:", id);
    for (const auto& site : sites) out += " <code>" + E(site) + "</code>";
    out += "</p>";
    for (const auto& err : lowering_errors) out += "<p class=\"bad\">no HLO lowering: " + E(err) + "</p>";
    if (!instrs.empty()) {
      out +=
          "<table><thead><tr><th>HLO instruction</th><th class=\"num\">instances</th><th>verdict</th><th>reason</th>"
          "<th class=\"num\">seconds</th><th>cached</th><th>fingerprint</th></tr></thead><tbody>";
      for (const auto& [key, e] : instrs) {
        const auto& probe = result.probes[e.first];
        out += fmt::format(
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"{}\">{}</td><td>{}</td>"
            "<td class=\"num\">{:.3f}</td><td>{}</td><td class=\"mono\">{}</td></tr>",
            E(probe.signature), e.second, VerdictClass(probe.verdict.kind),
            compiler_probe::VerdictKindName(probe.verdict.kind), E(probe.verdict.reason), probe.verdict.seconds,
            probe.cache_hit ? "yes" : "no", E(probe.fingerprint));
      }
      out += "</tbody></table>";
    }
    out += "</td></tr>\n";
  }
  out += "</tbody></table></section>\n";

  // Per-instruction detail (verbosity 0): compiler output and the probe module.
  if (options.verbosity <= 0 && !result.probes.empty()) {
    auto uses = ProbeUses(result);
    out += fmt::format("<section id=\"instructions\"><h2>Probed instructions ({})</h2>\n", result.probes.size());
    for (size_t i : SortedProbeOrder(result)) {
      const auto& p = result.probes[i];
      std::string ops_list;
      for (const auto& op : uses[i].aten_ops) ops_list += (ops_list.empty() ? "" : ", ") + op;
      out += fmt::format(
          "<details><summary><span class=\"{}\">{}</span> <code>{}</code> &middot; {} &middot; {:.3f} s{}"
          "</summary>\n<p class=\"mono\">fingerprint {}</p>",
          VerdictClass(p.verdict.kind), compiler_probe::VerdictKindName(p.verdict.kind), E(p.signature), E(ops_list),
          p.verdict.seconds, p.cache_hit ? " (cached)" : "", E(p.fingerprint));
      if (!p.verdict.reason.empty()) out += "<p>" + E(p.verdict.reason) + "</p>";
      if (!p.repro_path.empty()) out += "<p class=\"mono\">repro: " + E(p.repro_path) + "</p>";
      std::string tail = TailLines(p.verdict.output_tail, 40);
      if (!tail.empty()) out += "<pre>" + E(tail) + "</pre>";
      out += "<pre>" + E(p.ModuleText()) + "</pre></details>\n";
    }
    out += "</section>\n";
  }

  out += fmt::format(
      "<footer>Generated by opprobe {} (report schema {}). Support percentage = supported HLO "
      "instruction instances / all instances.</footer>",
      OPPROBE_VERSION, kSchemaVersion);
  title_out = std::move(title);
  return out;
}

std::string RenderHtml(const AnalysisResult& result, const RenderOptions& options) {
  if (result.target_count() > 1) return RenderHtmlTargets(result, options);
  std::string title;
  std::string body = HtmlBody(result, options, title);
  return FillTemplate(kTemplate[0].text, {{"title", std::move(title)}, {"body", std::move(body)}});
}

std::string RenderHtmlTargets(const AnalysisResult& result, const RenderOptions& options) {
  const SupportMatrix m = BuildSupportMatrix(result);
  std::string out = fmt::format(
      "<header><h1>opprobe report: <code>{}</code> on {} targets</h1></header>\n"
      "<section id=\"matrix\"><h2>Support matrix</h2>\n<table><thead><tr><th>target</th>"
      "<th class=\"num\">HLO instructions</th><th class=\"num\">aten calls</th></tr></thead><tbody>\n",
      E(result.model), m.targets.size());
  for (size_t k = 0; k < m.targets.size(); ++k)
    out += fmt::format(
        "<tr><td><a href=\"#t{}-target\"><code>{}</code></a></td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td></tr>\n",
        k, E(m.targets[k].id), E(m.targets[k].percentage), E(m.targets[k].aten_percentage));
  out += "</tbody></table>\n";
  if (m.rows.empty()) {
    out += fmt::format("<p>Every aten op ({}) is supported on every target.</p>\n", m.ops_supported_everywhere);
  } else {
    out += "<table id=\"matrix-ops\"><thead><tr><th>aten op</th><th class=\"num\">calls</th>";
    for (const auto& t : m.targets) out += fmt::format("<th><code>{}</code></th>", E(t.id));
    out += "</tr></thead><tbody>\n";
    for (const auto& r : m.rows) {
      out += fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{}</td>", E(r.op), r.calls);
      for (size_t k = 0; k < m.targets.size(); ++k)
        out += r.supported[k] ? std::string("<td class=\"ok\">yes</td>")
                              : fmt::format("<td class=\"bad\" title=\"{}\">no</td>", E(r.reason[k]));
      out += "</tr>\n";
    }
    out += fmt::format("</tbody></table>\n<p>{} more aten op{} supported on every target.</p>\n",
                       m.ops_supported_everywhere, m.ops_supported_everywhere == 1 ? "" : "s");
  }
  out += "</section>\n";
  // Each target's own report, its element ids (and what refers to them) prefixed so that they stay unique.
  static const std::regex kIdRef("(id|aria-controls|aria-labelledby|for)=\"");
  static const std::regex kHashRef("href=\"#");
  for (size_t k = 0; k < result.target_count(); ++k) {
    const AnalysisResult t = result.ForTarget(k);
    std::string title;
    std::string body = HtmlBody(t, options, title);
    const std::string prefix = fmt::format("t{}-", k);
    body = std::regex_replace(body, kIdRef, fmt::format("$1=\"{}", prefix));
    body = std::regex_replace(body, kHashRef, fmt::format("href=\"#{}", prefix));
    out += fmt::format(
        "<section class=\"target\" id=\"{}target\"><h2>Target {} of {}: <code>{}</code></h2>\n{}</section>\n", prefix,
        k + 1, result.target_count(), E(t.backend_id), body);
  }
  std::string title = fmt::format("opprobe: {} on {} targets", E(result.model), m.targets.size());
  return FillTemplate(kTemplate[0].text, {{"title", std::move(title)}, {"body", std::move(out)}});
}

}  // namespace opprobe::reports
