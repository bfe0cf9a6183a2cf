// Comparing two JSON reports: what became unsupported, what was fixed, how the percentage moved.
// Used by `opprobe diff OLD.json NEW.json` and by the `--baseline OLD.json` gate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/report.h"
#include "support/status.h"

namespace opprobe::reports {

// Reads and checks an opprobe JSON report. Errors (InvalidInput) are one line naming the file and,
// for a malformed or missing field, its JSON path: not JSON, not an opprobe report. A report of another
// schema_version is read by its fields: it fails only when it lacks one the comparison reads (the message says its
// version).
Expected<Json> LoadReport(const std::string& path);
// The checks of LoadReport on a parsed document; `name` prefixes the message.
Status CheckReport(const Json& report, const std::string& name);

// `--allow aten::mul` (or `mul`) matches the aten op `aten::mul`.
bool IsAllowed(const std::string& aten_op, const std::vector<std::string>& allow);

struct DiffOptions {
  std::vector<std::string> allow;        // accepted gaps: their changes never count as a regression
  std::optional<double> new_percentage;  // overrides NEW's support_percentage (the gate passes one that counts
                                         // allowed ops as supported)
};

struct ReportDiff {
  struct OpChange {
    std::string kind;
    std::string signature;
    std::vector<std::string> calls;  // sorted, unique
    std::string reason;
    bool was_supported = false;  // the op (any signature) had supported calls in OLD
    bool allowed = false;
  };
  struct InstructionChange {
    std::string signature;
    std::vector<std::string> aten_ops;  // sorted, unique
    std::string reason;
    bool was_supported = false;  // listed in OLD's supported xla signatures
    bool allowed = false;
  };

  // The backends and their versions: a compiler upgrade is the same backend at another version.
  std::string old_backend, new_backend, old_backend_version, new_backend_version;
  std::string old_percentage, new_percentage;  // as printed, e.g. "60.00%"
  std::string old_aten_percentage, new_aten_percentage;
  double old_pct = 0, new_pct = 0;  // compared values (new_pct may be the override)
  bool percentage_dropped = false;

  std::vector<OpChange> newly_unsupported;  // (op, signature) unsupported in NEW, not in OLD
  std::vector<OpChange> fixed;              // unsupported in OLD, supported in NEW
  std::vector<OpChange> gone;               // unsupported in OLD, op not used in NEW
  bool instructions_compared = false;       // both reports carry the `xla` lists (verbosity <= 1)
  std::vector<InstructionChange> newly_unsupported_instructions;
  std::vector<InstructionChange> fixed_instructions;
  std::vector<std::string> ops_added, ops_removed;  // aten ops used in only one of the reports

  // Newly unsupported ops or instructions that are not allowed, or a lower support percentage.
  bool Regression() const;
  // One line per reason the diff is a regression (empty when none).
  std::vector<std::string> RegressionReasons() const;
};

ReportDiff DiffReports(const Json& old_report, const Json& new_report, const DiffOptions& options);

// Human-readable account of the changes (what `opprobe diff` prints).
std::string FormatDiff(const ReportDiff& diff, const std::string& old_name, const std::string& new_name);

}  // namespace opprobe::reports
