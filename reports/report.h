// Report writers: every format is a pure function of an AnalysisResult (DESIGN.md "Report").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/driver/result.h"
#include "support/status.h"

namespace opprobe::reports {

// The report format's version: bumped when the schema's required keys change (schemas/report.schema.json; the
// test tests/reports/schema_version_test.cpp pins the required keys of each version). Readers (diff, --baseline)
// go by a report's fields, not by this number.
inline constexpr int kSchemaVersion = 1;

// Reports keep their keys in a fixed (insertion) order so that they diff cleanly.
using Json = nlohmann::ordered_json;

// Neuron's result.json superset. verbosity 2: aten lists; 1: adds `xla` lists; 0: adds per-instruction
// detail. Keys and list order are deterministic. The shape is documented by schemas/report.schema.json.
Json ToJson(const analyzer::AnalysisResult& result, int verbosity);

struct UnsupportedOp;  // view.h
// A backward op's forward call as the JSON report and SARIF's properties write it: {"op", "place", "library_place"
// (when it has one), "module_path" (when not empty)} (json_report.cpp).
Json ForwardCallJson(const UnsupportedOp& u);

// "60.00%"
std::string FormatPercent(double pct);
// `pct` rounded to the two decimals FormatPercent prints (gates compare what the report shows).
double RoundPercent(double pct);

// What a renderer may vary on besides the result. Renderers never read the environment themselves.
struct RenderOptions {
  int verbosity = 2;   // json (and the detail of text/markdown): 2 aten, 1 +xla, 0 +per-instruction
  bool color = false;  // ANSI colours (text)
  std::string cwd;     // absolute; source paths under it are shown relative to it (sarif, github, html)
};

using RenderFn = std::string (*)(const analyzer::AnalysisResult& result, const RenderOptions& options);

struct Format {
  std::string_view name;       // `--format NAME`
  std::string_view extension;  // default file extension, e.g. `.sarif`
  std::string_view description;
  RenderFn render;
  bool uses_cwd = false;  // reads RenderOptions::cwd (the CLI asks the system for it only then)
};

// Every format, in a fixed order: json, text, markdown, junit, sarif, github, html.
const std::vector<Format>& Formats();
// nullptr for an unknown name.
const Format* FindFormat(std::string_view name);

std::string RenderJson(const analyzer::AnalysisResult& result, const RenderOptions& options);  // json_report.cpp
std::string RenderText(const analyzer::AnalysisResult& result, const RenderOptions& options);  // text_report.cpp
std::string RenderMarkdown(const analyzer::AnalysisResult& result,
                           const RenderOptions& options);                                        // markdown_report.cpp
std::string RenderJunit(const analyzer::AnalysisResult& result, const RenderOptions& options);   // junit_report.cpp
std::string RenderSarif(const analyzer::AnalysisResult& result, const RenderOptions& options);   // sarif_report.cpp
std::string RenderGithub(const analyzer::AnalysisResult& result, const RenderOptions& options);  // github_report.cpp
std::string RenderHtml(const analyzer::AnalysisResult& result, const RenderOptions& options);    // html_report.cpp

// The same formats for a result of several targets (AnalysisResult::other_targets): each writer above hands such a
// result to its form here (targets_report.cpp; HTML's in html_report.cpp, JSON's in json_report.cpp).
std::string RenderTextTargets(const analyzer::AnalysisResult& result, const RenderOptions& options);
std::string RenderMarkdownTargets(const analyzer::AnalysisResult& result, const RenderOptions& options);
std::string RenderJunitTargets(const analyzer::AnalysisResult& result, const RenderOptions& options);
std::string RenderSarifTargets(const analyzer::AnalysisResult& result, const RenderOptions& options);
std::string RenderGithubTargets(const analyzer::AnalysisResult& result, const RenderOptions& options);
std::string RenderHtmlTargets(const analyzer::AnalysisResult& result, const RenderOptions& options);

}  // namespace opprobe::reports
