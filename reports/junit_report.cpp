// JUnit XML: one test case per aten op and dtype signature; a failure carries the reason, the call sites
// and the rejected instructions. Validated against schemas/third_party/junit-10.xsd in the tests.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "opprobe_version.h"
#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;
using analyzer::OpRecord;

namespace {

struct Case {
  std::string op, signature;
  std::string part_of;  // derived instructions: the aten op whose lowering made them
  int64_t calls = 0;
  std::set<std::string> call_sites;
  std::set<size_t> probes;         // unique probes used
  std::set<size_t> failed_probes;  // rejected or errored
  std::string lowering_error;      // first one, when a lowering failed
  bool unsupported = false;        // a rejection or a lowering failure
  bool error = false;              // a backend error
  bool gap = false;                // opprobe has no lowering (not a device verdict)
  bool custom = false;             // an op outside aten without an XLA lowering
  bool internal = false;           // opprobe's own bug (a lowering threw or built wrong HLO)
};

std::string Time(double s) { return fmt::format("{:.3f}", s); }

}  // namespace

std::string RenderJunit(const AnalysisResult& result, const RenderOptions& options) {
  if (result.target_count() > 1) return RenderJunitTargets(result, options);
  std::map<std::tuple<std::string, std::string, std::string>, Case> cases;
  for (const OpRecord& op : result.ops) {
    const std::string part_of = PartOfName(result, op);
    Case& c = cases[{op.op, op.signature, part_of}];
    c.op = op.op;
    c.signature = op.signature;
    c.part_of = part_of;
    c.calls += op.count;
    if (!op.loc.empty()) {
      std::string origin = CallOrigin(op, result.source_dir);
      c.call_sites.insert(origin.empty() ? op.loc.ToString() : op.loc.ToString() + " (" + origin + ")");
    }
    if (op.lowering != OpRecord::Lowering::kOk) {
      c.gap = c.gap || op.lowering == OpRecord::Lowering::kFailed;
      c.custom = c.custom || op.lowering == OpRecord::Lowering::kCustomOp;
      c.internal = c.internal || op.lowering == OpRecord::Lowering::kInternalError;
      c.unsupported = !c.internal;
      if (c.internal) c.error = true;
      if (c.lowering_error.empty())
        c.lowering_error = op.lowering_error.empty() ? "lowering failed" : op.lowering_error;
      continue;
    }
    for (size_t p : op.probes) {
      if (p >= result.probes.size()) continue;
      c.probes.insert(p);
      const auto& v = result.probes[p].verdict;
      if (v.supported()) continue;
      c.failed_probes.insert(p);
      (v.judged() ? c.unsupported : c.error) = true;
    }
  }

  // Two suites: the backend's verdicts (and custom ops), then opprobe's own lowering gaps as errors ("could not
  // run"), so that a gap never reads as the device's rejection.
  int64_t failures = 0, errors = 0, gap_cases = 0;
  double total_time = 0;
  for (const auto& [key, c] : cases) {
    if (c.gap) {
      ++gap_cases;
      continue;
    }
    failures += c.unsupported && !c.internal;
    errors += (!c.unsupported || c.internal) && c.error;
  }
  for (const auto& p : result.probes) total_time += p.verdict.seconds;
  // A script that failed while it was captured is a failing test case of its own, so that a CI's test view is red
  // for a partial analysis even when every recorded call is supported.
  const bool partial = result.partial();
  failures += partial;
  const int64_t main_cases = static_cast<int64_t>(cases.size()) - gap_cases + partial;

  std::string suite_name = fmt::format("opprobe: {} on {}", result.model, result.backend_id);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"opprobe\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n",
                     cases.size() + partial, failures, errors + gap_cases, Time(total_time));
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\">\n",
                     XmlEscape(suite_name), main_cases, failures, errors, Time(total_time));
  out += "    <properties>\n";
  auto prop = [&](const std::string& name, const std::string& value) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", XmlEscape(name), XmlEscape(value));
  };
  prop("opprobe_version", OPPROBE_VERSION);
  prop("backend", result.backend_id);
  prop("backend_version", result.backend_version);
  prop("model", result.model);
  prop("input_kind", result.input_kind);
  auto reasons = result.IncompleteReasons();
  for (size_t i = 0; i < reasons.size(); ++i) prop(fmt::format("incomplete_{}", i + 1), reasons[i]);
  prop("complete", reasons.empty() ? "true" : "false");
  prop("support_percentage", PercentLabel(result, result.SupportPercentage()));
  prop("aten_support_percentage", PercentLabel(result, result.AtenSupportPercentage()));
  prop("analyzed_percentage", PercentLabel(result, result.AnalyzedPercentage()));
  out += "    </properties>\n";

  auto write_case = [&](const Case& c) {
    double time = 0;
    for (size_t p : c.probes) time += result.probes[p].verdict.seconds;
    std::string name = c.part_of.empty() ? fmt::format("{}({})", c.op, c.signature)
                                         : fmt::format("{}({}) part of {}", c.op, c.signature, c.part_of);
    std::string head = fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"", XmlEscape(c.op),
                                   XmlEscape(name), Time(time));
    if (!c.unsupported && !c.error) {
      out += head + "/>\n";
      return;
    }
    out += head + ">\n";
    // The reason: the lowering error, else the first failing instruction's verdict.
    std::string reason = c.gap ? std::string(kLoweringGapTitle) + ": " + c.lowering_error : c.lowering_error;
    std::string detail =
        c.internal ? fmt::format("{} ({}): opprobe failed on it, a bug in opprobe; not a verdict of {}\n", c.op,
                                 c.signature, result.backend_id)
        : c.gap
            ? fmt::format("{} ({}): {}; not a verdict of {}\n", c.op, c.signature, kLoweringGapTitle, result.backend_id)
        : c.custom ? fmt::format("{} ({}) has no XLA lowering\n", c.op, c.signature)
                   : fmt::format("{} ({}) is not supported by {}\n", c.op, c.signature, result.backend_id);
    detail += fmt::format("calls: {}", c.calls);
    if (!c.call_sites.empty()) {
      detail += " at";
      for (const auto& site : c.call_sites) detail += " " + site + ";";
      detail.pop_back();
    }
    detail += "\n";
    if (!c.lowering_error.empty()) detail += "lowering: " + c.lowering_error + "\n";
    // Failing instructions in signature order.
    std::vector<size_t> failed(c.failed_probes.begin(), c.failed_probes.end());
    std::sort(failed.begin(), failed.end(), [&](size_t a, size_t b) {
      return std::tie(result.probes[a].signature, result.probes[a].fingerprint) <
             std::tie(result.probes[b].signature, result.probes[b].fingerprint);
    });
    for (size_t p : failed) {
      const auto& probe = result.probes[p];
      if (reason.empty()) reason = probe.verdict.reason;
      detail += fmt::format("{}: {}: {}\n", compiler_probe::VerdictKindName(probe.verdict.kind), probe.signature,
                            probe.verdict.reason);
      if (!probe.repro_path.empty()) detail += "  repro: " + probe.repro_path + "\n";
      if (options.verbosity <= 0) {
        std::string tail = TailLines(probe.verdict.output_tail, 10);
        if (!tail.empty()) detail += "  compiler output (tail):\n" + tail + "\n";
      }
    }
    const char* element = c.gap || c.internal ? "error" : c.unsupported ? "failure" : "error";
    const char* type = c.internal      ? "internal-error"
                       : c.gap         ? "lowering"
                       : c.custom      ? "custom-op"
                       : c.unsupported ? "unsupported"
                                       : "backend-error";
    out += fmt::format("      <{} message=\"{}\" type=\"{}\">{}</{}>\n", element, XmlEscape(reason), type,
                       XmlEscape(detail), element);
    out += "    </testcase>\n";
  };
  if (partial) {
    const std::string banner = result.IncompleteReasons().front();
    out += fmt::format("    <testcase classname=\"opprobe\" name=\"capture of {}\" time=\"0.000\">\n",
                       XmlEscape(result.model));
    out += fmt::format("      <failure message=\"{}\" type=\"partial-analysis\">{}</failure>\n    </testcase>\n",
                       XmlEscape(banner), XmlEscape(banner + "\n"));
  }
  for (const auto& [key, c] : cases)
    if (!c.gap) write_case(c);
  out += "  </testsuite>\n";
  if (gap_cases > 0) {
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"0\" errors=\"{}\" skipped=\"0\" time=\"0.000\">\n",
        XmlEscape(fmt::format("opprobe: {} ({})", kLoweringGapTitle, result.model)), gap_cases, gap_cases);
    for (const auto& [key, c] : cases)
      if (c.gap) write_case(c);
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace opprobe::reports
