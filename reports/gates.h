// CI gates over an AnalysisResult (DESIGN.md "Exit codes"): `--fail-under PCT`, `--baseline OLD.json`
// (a newly unsupported op or instruction, or a lower percentage), with `--allow aten::op` for accepted gaps.
#pragma once

#include <string>
#include <vector>

#include "analyzer/driver/result.h"
#include "reports/report.h"

namespace opprobe::reports {

struct GateOptions {
  double fail_under = -1;          // < 0: off
  const Json* baseline = nullptr;  // a checked report (LoadReport), or nullptr
  std::string baseline_name;       // shown in messages
  std::vector<std::string> allow;  // aten ops whose gaps are accepted
  int64_t max_graphs = -1;         // `--max-graphs N`: fail when the steps need more distinct graphs; < 0: off
  bool require_fit = false;        // `--require-fit`: fail unless the compiled program fits one device
};

struct GateResult {
  bool failed = false;
  std::vector<std::string> messages;  // one line per failed gate or regression
  std::vector<std::string> notes;     // accepted gaps and passed gates worth mentioning
};

// The support percentage with the instructions of allowed ops counted as supported.
double GatedPercentage(const analyzer::AnalysisResult& result, const std::vector<std::string>& allow);

// Why no gate can pass on `result` (a failed script, nothing captured, lowering gaps of ops not allowed); empty when
// the gates may judge it.
std::vector<std::string> GateBlockers(const analyzer::AnalysisResult& result, const std::vector<std::string>& allow);

GateResult EvaluateGates(const analyzer::AnalysisResult& result, const GateOptions& options);

// The short summary `analyze` prints: support percentages, counts, the top unsupported ops with their
// call sites. `color`: ANSI colours.
std::string RenderSummary(const analyzer::AnalysisResult& result, bool color, size_t max_ops = 5);

}  // namespace opprobe::reports
