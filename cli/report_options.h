// Report and gate options shared by `analyze` (and any command that produces an AnalysisResult):
// formats and output files, verbosity, --fail-under, --baseline, --allow. Owned with reports/.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "analyzer/driver/result.h"
#include "support/status.h"

namespace opprobe::cli {

struct ReportOptions {
  int verbosity = 2;                 // 2 aten level, 1 adds xla lists, 0 per-instruction detail
  std::string output;                // -o FILE: the JSON report (or the only --format's file)
  std::vector<std::string> formats;  // --format FMT[=FILE], repeatable
  // --fail-under PCT (every target) or TARGET=PCT (one target of a run with several backends), repeatable.
  std::vector<std::string> fail_under;
  int64_t max_graphs = -1;         // --max-graphs N (steps' distinct graphs); < 0: off
  bool require_fit = false;        // --require-fit (with analyze: implies --fit)
  std::string baseline;            // --baseline OLD.json
  std::vector<std::string> allow;  // --allow aten::op
  bool quiet = false;              // no summary on stdout
};

// Adds the options above to `cmd`.
void AddReportOptions(CLI::App* cmd, ReportOptions& options);

// Checks the options before an analysis starts: known formats, no two reports to one file, a readable
// baseline that is an opprobe report with the fields a comparison reads. Call it first so that bad usage fails
// fast (exit 2 via ExitCodeFor); FinishReports checks again.
Status CheckReportOptions(const ReportOptions& options);

// The --fail-under threshold for the target `backend_id` (< 0: none): its own TARGET=PCT, else a plain PCT. A
// malformed entry, or (with `target_ids`) one naming no target of the run, is a usage error.
Expected<double> FailUnderFor(const ReportOptions& options, const std::string& backend_id,
                              const std::vector<std::string>& target_ids = {});

// Writes every requested report (atomically), prints the short summary on stdout, evaluates the
// gates, and returns the exit code: 0 done and gates passed, 1 a gate failed, 2 bad input (an
// unreadable baseline, an unknown format).
int FinishReports(const analyzer::AnalysisResult& result, const ReportOptions& options);

}  // namespace opprobe::cli
