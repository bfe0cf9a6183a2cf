// `opprobe diff OLD.json NEW.json`: what changed between two JSON reports; exit 1 on a regression
// (an aten op or instruction signature newly unsupported, or a lower support percentage), 2 when a file
// is not an opprobe report or lacks a field the comparison reads (whatever its schema_version).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "reports/diff.h"

namespace opprobe::cli {

namespace {

struct DiffArgs {
  std::string old_path, new_path;
  std::vector<std::string> allow;
  bool quiet = false;
};

int RunDiff(const DiffArgs& args) {
  auto old_report = reports::LoadReport(args.old_path);
  if (!old_report.ok()) return ReportError(old_report.status());
  auto new_report = reports::LoadReport(args.new_path);
  if (!new_report.ok()) return ReportError(new_report.status());
  reports::DiffOptions options;
  options.allow = args.allow;
  reports::ReportDiff diff = reports::DiffReports(*old_report, *new_report, options);
  if (!args.quiet) {
    std::string text = reports::FormatDiff(diff, args.old_path, args.new_path);
    std::fputs(text.c_str(), stdout);
  }
  return diff.Regression() ? kExitGateFailed : kExitOk;
}

}  // namespace

void RegisterDiff(CLI::App& app, int& exit_code) {
  static DiffArgs args;
  auto* cmd =
      app.add_subcommand("diff",
                         "Compare two JSON reports (e.g. a baseline and a new run): prints newly unsupported and "
                         "fixed aten ops and HLO instructions and the change in support percentage; exit 1 on "
                         "a regression, 2 when a file is not an opprobe report");
  cmd->add_option("OLD", args.old_path, "The earlier report (baseline)")->required()->type_name("OLD.json");
  cmd->add_option("NEW", args.new_path, "The later report")->required()->type_name("NEW.json");
  cmd->add_option("--allow", args.allow, "Accept a known gap: changes of this aten op are no regression (repeatable)")
      ->type_name("aten::op");
  cmd->add_flag("-q,--quiet", args.quiet, "Print nothing; only the exit code tells");
  cmd->callback([&exit_code] { exit_code = RunDiff(args); });
}

}  // namespace opprobe::cli
