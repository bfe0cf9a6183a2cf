#include "cli/report_options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "cli/commands.h"
#include "hlo/file_io.h"
#include "reports/diff.h"
#include "reports/gates.h"
#include "reports/report.h"

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
      return InvalidInput(fmt::format("--format {}: unknown report format '{}' (known: {})", spec, name, FormatNames()));
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
                  "Exit 1 when the support percentage (HLO instructions) is below PCT")
      ->check(CLI::Range(0.0, 100.0))
      ->type_name("PCT");
  cmd->add_option("--baseline", options.baseline,
                  "Exit 1 when an aten op or HLO instruction signature unsupported now was not unsupported in "
                  "this earlier JSON report, or the support percentage dropped")
      ->type_name("OLD.json");
  cmd->add_option("--allow", options.allow,
                  "Accept a known gap: this aten op never fails a gate (repeatable; counted as supported by "
                  "--fail-under and the baseline's percentage check)")
      ->type_name("aten::op");
  cmd->add_flag("-q,--quiet", options.quiet, "Print only errors: no summary, progress or warnings (gate failures still go to stderr)");
}

Status CheckReportOptions(const ReportOptions& options) {
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

  reports::GateOptions go;
  go.fail_under = options.fail_under;
  go.baseline = baseline ? &*baseline : nullptr;
  go.baseline_name = options.baseline;
  go.allow = options.allow;
  reports::GateResult gates = reports::EvaluateGates(result, go);

  if (!options.quiet) {
    std::string text = reports::RenderSummary(result, ColorFor(summary));
    bool any_file = false;
    for (const auto& t : targets) {
      if (t.file.empty()) continue;
      text += fmt::format("  {} report: {}\n", t.format->name, t.file);
      any_file = true;
    }
    if (!any_file && !stdout_report)
      text += "  write the full report with -o result.json (other formats: --format FMT[=FILE], see --help)\n";
    for (const auto& n : gates.notes) text += "  " + n + "\n";
    if (options.fail_under >= 0 || baseline)
      text += gates.failed ? "  gates: FAILED\n" : "  gates: passed\n";
    std::fputs(text.c_str(), summary);
    std::fflush(summary);
  }
  for (const auto& m : gates.messages) std::fprintf(stderr, "opprobe: gate failed: %s\n", m.c_str());
  return gates.failed ? kExitGateFailed : kExitOk;
}

}  // namespace opprobe::cli
