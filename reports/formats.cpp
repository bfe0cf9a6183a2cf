#include "reports/report.h"

namespace opprobe::reports {

const std::vector<Format>& Formats() {
  static const std::vector<Format> kFormats = {
      {"json", ".json", "the JSON report (Neuron's result.json superset; schemas/report.schema.json)", RenderJson},
      {"text", ".txt", "a terminal table (colour on a terminal unless NO_COLOR is set)", RenderText},
      {"markdown", ".md", "Markdown for a pull-request comment", RenderMarkdown},
      {"junit", ".xml", "JUnit XML: one test case per aten op and dtype signature", RenderJunit},
      {"sarif", ".sarif", "SARIF 2.1.0 results at the user's source lines (code scanning)", RenderSarif,
       /*uses_cwd=*/true},
      {"github", ".txt", "GitHub Actions annotations (::error file=...,line=...::)", RenderGithub, /*uses_cwd=*/true},
      {"html", ".html", "one self-contained HTML page with drill-down and a chart", RenderHtml, /*uses_cwd=*/true},
  };
  return kFormats;
}

const Format* FindFormat(std::string_view name) {
  for (const auto& f : Formats())
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace opprobe::reports
