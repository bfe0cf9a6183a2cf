#include "cli/report_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "reports/diff.h"
#include "reports/gates.h"
#include "reports/report.h"
#include "support/file_io.h"

namespace opprobe::cli {

namespace {

struct Target {
  const reports::Format* format = nullptr;
  std::string file;            // empty: stdout
  bool explicit_file = false;  // FMT=FILE (or FMT=-) was given
};

std::string FormatNames() {
  std::string out;
  for (const auto& f : reports::Formats()) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

Expected<std::vector<Target>> ResolveTargets(const ReportOptions& options) {
  std::vector<Target> targets;
  for (const auto& spec : options.formats) {
    auto eq = spec.find('=');
    std::string name = spec.substr(0, eq);
    const reports::Format* f = reports::FindFormat(name);
    if (f == nullptr)
      return InvalidInput(
          fmt::format("--format {}: unknown report format '{}' (known: {})", spec, name, FormatNames()));
    Target t{f, "", eq != std::string::npos};
    if (t.explicit_file) {
      t.file = spec.substr(eq + 1);
      if (t.file.empty()) return InvalidInput(fmt::format("--format {}: missing file name after '='", spec));
      if (t.file == "-") t.file.clear();
    }
    targets.push_back(std::move(t));
  }
  if (!options.output.empty()) {
    std::string out = options.output == "-" ? "" : options.output;
    std::vector<Target*> open;
    for (auto& t : targets)
      if (!t.explicit_file) open.push_back(&t);
    // `-o` is the file of a lone `--format FMT`; otherwise it is the JSON report's.
    Target* chosen = targets.size() == 1 && open.size() == 1 ? open.front() : nullptr;
    for (Target* t : open)
      if (chosen == nullptr && t->format->name == "json") chosen = t;
    if (chosen != nullptr) {
      chosen->file = out;
      chosen->explicit_file = true;
    } else {
      targets.push_back(Target{reports::FindFormat("json"), out, true});
    }
  }
  std::set<std::string> files;
  for (const auto& t : targets) {
    if (t.file.empty()) continue;
    if (!files.insert(std::filesystem::path(t.file).lexically_normal().string()).second)
      return InvalidInput(fmt::format("two reports would be written to '{}'", t.file));
  }
  return targets;
}

bool ColorFor(FILE* stream) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string(term) == "dumb") return false;
  return ::isatty(::fileno(stream)) == 1;
}

std::string CurrentDir() {
  std::error_code ec;
  auto p = std::filesystem::current_path(ec);
  return ec ? std::string() : p.string();
}

}  // namespace

namespace {
Expected<std::pair<std::string, double>> ParseFailUnder(const std::string& spec);
}  // namespace

void AddReportOptions(CLI::App* cmd, ReportOptions& options) {
  cmd->add_option("-o,--output", options.output,
                  "Write the JSON report to FILE (with a single --format FMT, that format); '-' for stdout")
      ->type_name("FILE");
  cmd->add_option("-v,--verbosity", options.verbosity,
                  "Report detail: 2 aten ops (default), 1 adds HLO instruction lists, 0 adds per-instruction "
                  "verdicts, compiler output, probe times and fingerprints")
      ->check(CLI::Range(0, 2))
      ->type_name("{0,1,2}");
  cmd->add_option("--format", options.formats,
                  "Report format, repeatable, each with its own file (stdout when no file): " + FormatNames())
      ->type_name("FMT[=FILE]")
      ->check(
          [](const std::string& spec) -> std::string {
            std::string name = spec.substr(0, spec.find('='));
            if (reports::FindFormat(name) == nullptr)
              return fmt::format("unknown report format '{}' (known: {})", name, FormatNames());
            return "";
          },
          "", "FORMAT");
  cmd->add_option("--fail-under", options.fail_under,
                  "Exit 1 when the support percentage (HLO instructions) is below PCT; with several --backend, "
                  "TARGET=PCT gates one target (e.g. tpu:v5e=95) and a plain PCT every target (repeatable)")
      ->allow_extra_args(false)  // one value an occurrence: `--backend A --backend B MODEL`
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(
          [](const std::string& spec) -> std::string {
            auto parsed = ParseFailUnder(spec);
            return parsed.ok() ? "" : parsed.status().message();
          },
          "", "FAIL_UNDER")
      ->type_name("[TARGET=]PCT");
  cmd->add_option("--max-graphs", options.max_graphs,
                  "Exit 1 when the script's steps need more than N distinct graphs (each a compile on the XLA "
                  "device: a recompilation; see the report's steps section)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("N");
  cmd->add_flag("--require-fit", options.require_fit,
                "Exit 1 unless the whole program, compiled for the target (--fit), fits one device's memory; never "
                "passes on a program that was not compiled (an estimate, a refusal for another reason)");
  cmd->add_option("--baseline", options.baseline,
                  "Exit 1 when an aten op or HLO instruction signature unsupported now was not unsupported in "
                  "this earlier JSON report, or the support percentage dropped")
      ->type_name("OLD.json");
  cmd->add_option("--allow", options.allow,
                  "Accept a known gap: this aten op never fails a gate (repeatable; counted as supported by "
                  "--fail-under and the baseline's percentage check; never excuses an internal error of opprobe's)")
      ->type_name("aten::op");
  cmd->add_flag("-q,--quiet", options.quiet,
                "Print only errors: no summary, progress or warnings (gate failures still go to stderr)");
}

namespace {

// `95` or `tpu:v5e=95` (the last '=' splits: a backend spec may hold '=' itself).
Expected<std::pair<std::string, double>> ParseFailUnder(const std::string& spec) {
  size_t eq = spec.rfind('=');
  std::string target = eq == std::string::npos ? "" : spec.substr(0, eq);
  std::string number = eq == std::string::npos ? spec : spec.substr(eq + 1);
  char* end = nullptr;
  double pct = std::strtod(number.c_str(), &end);
  if (number.empty() || !end || *end != '\0' || !(pct >= 0 && pct <= 100) ||
      (eq != std::string::npos && target.empty()))
    return InvalidInput(fmt::format("--fail-under '{}': expected PCT or TARGET=PCT with PCT from 0 to 100", spec));
  return std::make_pair(target, pct);
}

}  // namespace

Expected<double> FailUnderFor(const ReportOptions& options, const std::string& backend_id,
                              const std::vector<std::string>& target_ids) {
  double any = -1, own = -1;
  for (const auto& spec : options.fail_under) {
    OPPROBE_ASSIGN_OR_RETURN(auto parsed, ParseFailUnder(spec));
    if (parsed.first.empty()) {
      any = parsed.second;
      continue;
    }
    if (!target_ids.empty() && std::find(target_ids.begin(), target_ids.end(), parsed.first) == target_ids.end())
      return InvalidInput(fmt::format("--fail-under '{}': {} is not a target of this run (its targets: {})", spec,
                                      parsed.first, fmt::join(target_ids, ", ")));
    if (parsed.first == backend_id) own = parsed.second;
  }
  return own >= 0 ? own : any;
}

Status CheckReportOptions(const ReportOptions& options) {
  for (const auto& spec : options.fail_under)
    if (auto parsed = ParseFailUnder(spec); !parsed.ok()) return parsed.status();
  if (options.verbosity < 0 || options.verbosity > 2)
    return InvalidInput(fmt::format("--verbosity {}: expected 0, 1 or 2", options.verbosity));
  auto targets = ResolveTargets(options);
  if (!targets.ok()) return targets.status();
  if (!options.baseline.empty()) {
    auto baseline = reports::LoadReport(options.baseline);
    if (!baseline.ok()) return baseline.status().WithContext("--baseline");
  }
  return Status::Ok();
}

int FinishReports(const analyzer::AnalysisResult& result, const ReportOptions& options) {
  if (Status st = CheckReportOptions(options); !st.ok()) return ReportError(st);
  auto targets = *ResolveTargets(options);
  std::optional<reports::Json> baseline;
  if (!options.baseline.empty()) {
    auto loaded = reports::LoadReport(options.baseline);
    if (!loaded.ok()) return ReportError(loaded.status().WithContext("--baseline"));
    baseline = std::move(loaded).value();
  }

  bool stdout_report = false;
  for (const auto& t : targets) stdout_report = stdout_report || t.file.empty();
  // Reports on stdout stay machine-readable: the summary then goes to stderr.
  FILE* summary = stdout_report ? stderr : stdout;
  bool any_cwd = false;  // (the working directory is looked up only for the formats that show paths relative to it)
  for (const auto& t : targets) any_cwd = any_cwd || t.format->uses_cwd;
  const std::string cwd = any_cwd ? CurrentDir() : std::string();

  // Render everything first, then replace the files all together or none of them.
  std::vector<std::string> contents;
  for (const auto& t : targets) {
    reports::RenderOptions ro;
    ro.verbosity = options.verbosity;
    ro.color = t.file.empty() && ColorFor(stdout);
    ro.cwd = cwd;
    contents.push_back(t.format->render(result, ro));
  }
  io::FileSet files;
  for (size_t i = 0; i < targets.size(); ++i)
    if (!targets[i].file.empty())
      if (Status st = files.Stage(targets[i].file, contents[i]); !st.ok()) return ReportError(st);
  if (Status st = files.Commit(); !st.ok()) return ReportError(st);
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i].file.empty()) std::fwrite(contents[i].data(), 1, contents[i].size(), stdout);
  std::fflush(stdout);

  // The gates judge each target on its own; the baseline is the first target's (the report's top level).
  std::vector<std::string> target_ids;
  target_ids.reserve(result.target_count());
  for (size_t k = 0; k < result.target_count(); ++k)
    target_ids.push_back(k == 0 ? result.backend_id : result.other_targets[k - 1].backend_id);
  reports::GateResult gates;
  bool any_fail_under = false;
  std::string summary_text;
  for (size_t k = 0; k < result.target_count(); ++k) {
    const analyzer::AnalysisResult one = result.target_count() > 1 ? result.ForTarget(k) : analyzer::AnalysisResult();
    const analyzer::AnalysisResult& t = result.target_count() > 1 ? one : result;
    auto fail_under = FailUnderFor(options, t.backend_id, target_ids);
    if (!fail_under.ok()) return ReportError(fail_under.status());
    any_fail_under = any_fail_under || *fail_under >= 0;
    reports::GateOptions go;
    go.fail_under = *fail_under;
    go.baseline = baseline && k == 0 ? &*baseline : nullptr;
    go.baseline_name = options.baseline;
    go.allow = options.allow;
    go.max_graphs = options.max_graphs;
    go.require_fit = options.require_fit;
    reports::GateResult g = reports::EvaluateGates(t, go);
    const std::string prefix = result.target_count() > 1 ? t.backend_id + ": " : "";
    gates.failed = gates.failed || g.failed;
    for (auto& m : g.messages) gates.messages.push_back(prefix + m);
    for (auto& n : g.notes) gates.notes.push_back(prefix + n);
    if (!options.quiet) summary_text += reports::RenderSummary(t, ColorFor(summary));
  }

  if (!options.quiet) {
    std::string text = summary_text;
    bool any_file = false;
    for (const auto& t : targets) {
      if (t.file.empty()) continue;
      text += fmt::format("  {} report: {}\n", t.format->name, t.file);
      any_file = true;
    }
    if (!any_file && !stdout_report)
      text += "  write the full report with -o result.json (other formats: --format FMT[=FILE], see --help)\n";
    for (const auto& n : gates.notes) text += "  " + n + "\n";
    if (any_fail_under || baseline || options.max_graphs >= 0 || options.require_fit)
      text += gates.failed ? "  gates: FAILED\n" : "  gates: passed\n";
    std::fputs(text.c_str(), summary);
    std::fflush(summary);
  }
  for (const auto& m : gates.messages) std::fprintf(stderr, "opprobe: gate failed: %s\n", m.c_str());
  return gates.failed ? kExitGateFailed : kExitOk;
}

}  // namespace opprobe::cli
