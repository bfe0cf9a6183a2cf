// Reports of a run with several targets (`--backend` given more than once): every format shows each target's
// verdicts side by side. Text, Markdown and HTML open with a support matrix (each target's percentages, then each
// aten op unsupported on at least one target with its verdict on every target) followed by each target's own
// report; JSON keeps the first target's Neuron shape at the top level and adds `targets` (json_report.cpp); JUnit
// gets one suite per target, SARIF one run per target, each GitHub annotation names its target. Each target's own part
// is the single-target writer run on AnalysisResult::ForTarget.
#include <fmt/format.h>

#include <regex>

#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;

namespace {

std::string Cell(bool supported) { return supported ? "yes" : "NO"; }

}  // namespace

std::string RenderTextTargets(const AnalysisResult& result, const RenderOptions& options) {
  const SupportMatrix m = BuildSupportMatrix(result);
  std::string out = fmt::format("opprobe: {} on {} targets\n\nSupport matrix\n", result.model, m.targets.size());
  size_t width = 8;
  for (const auto& t : m.targets) width = std::max(width, t.id.size());
  for (const auto& r : m.rows) width = std::max(width, r.op.size());
  out += fmt::format("  {:<{}}  {:>12}  {:>12}\n", "target", width, "HLO instr.", "aten calls");
  for (const auto& t : m.targets)
    out += fmt::format("  {:<{}}  {:>12}  {:>12}\n", t.id, width, t.percentage, t.aten_percentage);
  out += "\n";
  if (m.rows.empty()) {
    out += fmt::format("  every aten op ({}) is supported on every target\n", m.ops_supported_everywhere);
  } else {
    std::string head = fmt::format("  {:<{}}  {:>6}", "aten op", width, "calls");
    for (const auto& t : m.targets) head += fmt::format("  {:>{}}", t.id, std::max<size_t>(t.id.size(), 3));
    out += head + "\n";
    for (const auto& r : m.rows) {
      std::string line = fmt::format("  {:<{}}  {:>6}", r.op, width, r.calls);
      for (size_t k = 0; k < m.targets.size(); ++k)
        line += fmt::format("  {:>{}}", Cell(r.supported[k]), std::max<size_t>(m.targets[k].id.size(), 3));
      out += line + "\n";
    }
    out += fmt::format("  ({} more aten op{} supported on every target)\n", m.ops_supported_everywhere,
                       m.ops_supported_everywhere == 1 ? "" : "s");
  }
  for (size_t k = 0; k < result.target_count(); ++k) {
    const AnalysisResult t = result.ForTarget(k);
    out += fmt::format("\n=== target {} of {}: {} ===\n", k + 1, result.target_count(), t.backend_id);
    out += RenderText(t, options);
  }
  return out;
}

std::string RenderMarkdownTargets(const AnalysisResult& result, const RenderOptions& options) {
  const SupportMatrix m = BuildSupportMatrix(result);
  auto md = [](const std::string& s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  std::string out =
      fmt::format("## opprobe: `{}` on {} targets\n\n| target | HLO instructions | aten calls |\n| --- | --- | --- |\n",
                  md(result.model), m.targets.size());
  for (const auto& t : m.targets) out += fmt::format("| `{}` | {} | {} |\n", md(t.id), t.percentage, t.aten_percentage);
  out += "\n";
  if (m.rows.empty()) {
    out += fmt::format("Every aten op ({}) is supported on every target.\n", m.ops_supported_everywhere);
  } else {
    out += "| aten op | calls |";
    for (const auto& t : m.targets) out += fmt::format(" `{}` |", md(t.id));
    out += "\n| --- | --- |";
    for (size_t k = 0; k < m.targets.size(); ++k) out += " --- |";
    out += "\n";
    for (const auto& r : m.rows) {
      out += fmt::format("| `{}` | {} |", md(r.op), r.calls);
      for (size_t k = 0; k < m.targets.size(); ++k)
        out += r.supported[k] ? std::string(" yes |") : fmt::format(" **no**: {} |", md(r.reason[k].substr(0, 120)));
      out += "\n";
    }
    out += fmt::format("\n{} more aten op{} supported on every target.\n", m.ops_supported_everywhere,
                       m.ops_supported_everywhere == 1 ? "" : "s");
  }
  for (size_t k = 0; k < result.target_count(); ++k) {
    out += fmt::format("\n---\n\n### Target {} of {}\n\n", k + 1, result.target_count());
    out += RenderMarkdown(result.ForTarget(k), options);
  }
  return out;
}

std::string RenderJunitTargets(const AnalysisResult& result, const RenderOptions& options) {
  // Each target's own document, its suites kept; the lowering-gap suite (the same for every target: opprobe's own
  // gaps) only once, from the first.
  static const std::regex kHead(
      "<testsuites name=\"opprobe\" tests=\"([0-9]+)\" failures=\"([0-9]+)\" errors=\"([0-9]+)\" "
      "time=\"([0-9.]+)\">\n");
  int64_t tests = 0, failures = 0, errors = 0;
  double time = 0;
  std::string suites;
  for (size_t k = 0; k < result.target_count(); ++k) {
    const std::string doc = RenderJunit(result.ForTarget(k), options);
    std::smatch m;
    if (!std::regex_search(doc, m, kHead)) continue;
    size_t begin = static_cast<size_t>(m.position(0) + m.length(0));
    size_t end = doc.rfind("</testsuites>");
    std::string body = doc.substr(begin, end - begin);
    if (k > 0) {
      // Only the target's own suite: the first one.
      size_t first_end = body.find("  </testsuite>\n");
      if (first_end != std::string::npos) body = body.substr(0, first_end + std::string("  </testsuite>\n").size());
    }
    static const std::regex kSuite(
        "<testsuite name=\"[^\"]*\" tests=\"([0-9]+)\" failures=\"([0-9]+)\" errors=\"([0-9]+)\" skipped=\"0\" "
        "time=\"([0-9.]+)\">");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), kSuite); it != std::sregex_iterator(); ++it) {
      tests += std::stoll((*it)[1]);
      failures += std::stoll((*it)[2]);
      errors += std::stoll((*it)[3]);
      time += std::stod((*it)[4]);
    }
    suites += body;
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"opprobe\" tests=\"{}\" failures=\"{}\" "
      "errors=\"{}\" time=\"{:.3f}\">\n{}</testsuites>\n",
      tests, failures, errors, time, suites);
}

std::string RenderSarifTargets(const AnalysisResult& result, const RenderOptions& options) {
  Json log;
  Json runs = Json::array();
  for (size_t k = 0; k < result.target_count(); ++k) {
    Json one = Json::parse(RenderSarif(result.ForTarget(k), options));
    if (k == 0) log = one;
    for (auto& run : one["runs"]) runs.push_back(std::move(run));
  }
  log["runs"] = std::move(runs);
  return log.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string RenderGithubTargets(const AnalysisResult& result, const RenderOptions& options) {
  // Each annotation's title already names its backend (`aten::mul unsupported on tpu:v5e`).
  std::string out;
  for (size_t k = 0; k < result.target_count(); ++k) out += RenderGithub(result.ForTarget(k), options);
  return out;
}

}  // namespace opprobe::reports
