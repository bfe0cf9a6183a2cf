// `opprobe profile record --backend SPEC -o profile.json MODEL...`: analyze MODELs with a real backend and
// write a `rules` profile that reproduces its verdicts (docs/profiles.md).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "analyzer/pipeline/pipeline.h"
#include "cli/commands.h"
#include "cli/profile_record.h"
#include "compiler_probe/rules/profile_synthesis.h"
#include "hlo/parser.h"
#include "support/file_io.h"

namespace opprobe::cli {

using nlohmann::json;

nlohmann::json RecordProfile(const std::vector<const analyzer::AnalysisResult*>& results, const std::string& name) {
  // Unique units across all results (by fingerprint, the order of the profile's rules), parsed back into the IR
  // the rules backend reads.
  std::map<std::string, std::pair<const analyzer::ProbeRecord*, std::unique_ptr<hlo::Module>>> by_fp;
  compiler_probe::rules::RecordingSource source;
  for (const auto* r : results) {
    source.backend_ids.push_back(r->backend_id);
    source.backend_versions.push_back(r->backend_version);
    source.models.push_back(r->model);
    for (const auto& p : r->probes) {
      if (by_fp.count(p.fingerprint)) continue;
      auto module = hlo::ParseModule(p.ModuleText(), p.fingerprint);
      if (!module.ok()) continue;  // the driver printed it; a unit it cannot read back is no evidence
      by_fp.emplace(p.fingerprint, std::make_pair(&p, std::move(module).value()));
    }
  }
  std::vector<compiler_probe::rules::RecordedUnit> units;
  units.reserve(by_fp.size());
  for (const auto& [fp, entry] : by_fp)
    units.push_back({entry.second.get(), entry.first->verdict, entry.first->signature});
  return compiler_probe::rules::SynthesizeProfile(units, source, name);
}

nlohmann::json RecordProfile(const analyzer::AnalysisResult& result, const std::string& name) {
  return RecordProfile(std::vector<const analyzer::AnalysisResult*>{&result}, name);
}

namespace {

struct RecordArgs {
  std::string backend;
  std::string output;
  std::string name;
  std::vector<std::string> inputs;
  analyzer::AnalysisOptions run;
  bool no_cache = false;
};

}  // namespace

void RegisterProfile(CLI::App& app, int& exit_code) {
  auto* profile = app.add_subcommand("profile", "Offline backend profiles: record a rules profile from a real backend");
  profile->require_subcommand(1);
  auto args = std::make_shared<RecordArgs>();
  auto* record = profile->add_subcommand(
      "record",
      "Analyze MODELs with a real backend (cmd:..., pjrt:...) and write its verdicts as a rules profile.\n"
      "A rule generalizes only as far as its evidence: opcode-wide when every recorded unit of the opcode agrees "
      "across\n"
      "at least two result types, by result type when it agrees across two operand-type combinations, otherwise for\n"
      "the exact types seen (one rejected c64 convert rejects that convert, not every convert).");
  record->add_option("--backend", args->backend, "The backend whose verdicts to record")->required();
  record->add_option("-o,--output", args->output, "The profile JSON to write")->required();
  record->add_option("--name", args->name, "The profile's name (default: the output file's stem)");
  record->add_option("--jobs", args->run.jobs, "Probe threads (default: the number of cores)");
  record->add_option("--cache", args->run.cache_dir, "Probe cache directory (default: $XDG_CACHE_HOME/opprobe)");
  record->add_flag("--no-cache", args->no_cache, "Do not read or write the probe cache");
  record->add_option("--probe-timeout", args->run.probe_timeout_seconds, "Seconds one probe may take");
  record->add_option("MODEL", args->inputs, "Trace JSON, .pt2 or HLO inputs")->required();
  record->callback([args, &exit_code] {
    args->run.use_cache = !args->no_cache;
    args->run.on_warning = PrintWarning;
    auto backend = analyzer::CreateBackend(args->backend, args->run.probe_timeout_seconds);
    if (!backend.ok()) {
      exit_code = ReportError(backend.status());
      return;
    }
    auto result = analyzer::AnalyzeInputs(args->inputs, **backend, args->run);
    if (!result.ok()) {
      exit_code = ReportError(result.status());
      return;
    }
    std::string name = args->name.empty() ? std::filesystem::path(args->output).stem().string() : args->name;
    json profile = RecordProfile(*result, name);
    Status st =
        io::WriteFileAtomically(args->output, profile.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    if (!st.ok()) {
      exit_code = ReportError(st);
      return;
    }
    std::fprintf(stderr, "opprobe: wrote %s: %zu rules; %s\n", args->output.c_str(), profile["rules"].size(),
                 profile["description"].get<std::string>().c_str());
    exit_code = kExitOk;
  });
}

}  // namespace opprobe::cli
