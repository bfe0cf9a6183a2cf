// `opprobe profile record --backend SPEC -o profile.json MODEL...`: analyze MODELs with a real backend and
// write a `rules` profile that reproduces its verdicts (docs/profiles.md).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "cli/analyze_run.h"
#include "cli/commands.h"
#include "cli/profile_record.h"
#include "compiler_probe/rules/rules_backend.h"
#include "hlo/opcode.h"
#include "hlo/parser.h"

namespace opprobe::cli {

namespace {

using nlohmann::json;

struct Unit {
  const analyzer::ProbeRecord* record;
  std::string opcode;
  std::string target;                // custom-call target, when there is one
  std::vector<std::string> results;  // element types of the result (sorted, unique)
  std::vector<std::string> operands; // element types of the operands (sorted, unique)
  bool supported;
  std::string reason;
};

std::vector<std::string> TypesIn(const std::string& text) {
  static const std::regex kType(R"(\b([a-z][a-z0-9]*)\[)");
  std::set<std::string> types;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kType); it != std::sregex_iterator(); ++it)
    types.insert((*it)[1]);
  return {types.begin(), types.end()};
}

// `f32[4]{0} add(f32[4]{0}, f32[4]{0})` -> result and operand element types.
void SplitSignature(const std::string& signature, const std::string& opcode, Unit& u) {
  size_t at = signature.find(" " + opcode + "(");
  if (at == std::string::npos) {
    u.results = TypesIn(signature);
    return;
  }
  u.results = TypesIn(signature.substr(0, at));
  size_t open = at + opcode.size() + 1;
  int depth = 0;
  size_t close = open;
  for (; close < signature.size(); ++close) {
    if (signature[close] == '(') ++depth;
    if (signature[close] == ')' && --depth == 0) break;
  }
  u.operands = TypesIn(signature.substr(open, close - open));
  static const std::regex kTarget(R"(custom_call_target=\"([^\"]*)\")");
  std::smatch m;
  if (std::regex_search(signature, m, kTarget)) u.target = m[1];
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string MostCommonReason(const std::vector<const Unit*>& units) {
  std::map<std::string, int> count;
  for (const Unit* u : units)
    if (!u->supported) ++count[u->reason];
  std::string best;
  int best_n = 0;
  for (const auto& [reason, n] : count)
    if (n > best_n) best = reason, best_n = n;
  return best.empty() ? "unsupported by the recorded backend" : best;
}

json MakeRule(const std::string& id, const std::vector<const Unit*>& units, const Unit& key, int level) {
  json match = json::object();
  match["opcodes"] = json::array({key.opcode});
  if (!key.target.empty()) match["custom_call_targets"] = json::array({key.target});
  if (level >= 1 && !key.results.empty()) match["result_types"] = key.results;
  if (level >= 2 && !key.operands.empty()) match["operand_types"] = key.operands;
  int unsupported = 0;
  for (const Unit* u : units) unsupported += u->supported ? 0 : 1;
  bool verdict_supported = unsupported * 2 < static_cast<int>(units.size());
  json rule = {{"id", id}, {"verdict", verdict_supported ? "supported" : "unsupported"}, {"match", match}};
  if (!verdict_supported) rule["reason"] = MostCommonReason(units);
  std::string example = units.front()->record->signature;
  for (const Unit* u : units)
    if (u->supported == verdict_supported) {
      example = u->record->signature;
      break;
    }
  std::string source = fmt::format("recorded: {} of {} units {}; e.g. {}", verdict_supported ? units.size() - unsupported : unsupported,
                                   units.size(), verdict_supported ? "supported" : "unsupported", example);
  if (source.size() > 300) source = source.substr(0, 297) + "...";
  rule["source"] = source;
  return rule;
}

bool AllSame(const std::vector<const Unit*>& units) {
  for (const Unit* u : units)
    if (u->supported != units.front()->supported) return false;
  return true;
}

}  // namespace

nlohmann::json RecordProfile(const std::vector<const analyzer::AnalysisResult*>& results, const std::string& name) {
  // Unique units across all results (by fingerprint), in a deterministic order.
  std::map<std::string, Unit> by_fp;
  std::set<std::string> backend_ids, backend_versions, models;
  for (const auto* r : results) {
    backend_ids.insert(r->backend_id);
    backend_versions.insert(r->backend_version);
    models.insert(r->model);
    for (const auto& p : r->probes) {
      if (by_fp.count(p.fingerprint)) continue;
      Unit u{&p, p.opcode, "", {}, {}, p.verdict.supported(), p.verdict.reason};
      if (p.verdict.kind == compiler_probe::Verdict::Kind::kError) u.reason = "compiler error: " + p.verdict.reason;
      SplitSignature(p.signature, p.opcode, u);
      by_fp.emplace(p.fingerprint, std::move(u));
    }
  }
  // Group by opcode (+ custom-call target), then result types, then operand types.
  using Key1 = std::pair<std::string, std::string>;
  std::map<Key1, std::map<std::vector<std::string>, std::map<std::vector<std::string>, std::vector<const Unit*>>>> tree;
  for (const auto& [fp, u] : by_fp) tree[{u.opcode, u.target}][u.results][u.operands].push_back(&u);

  json rules = json::array();
  std::set<std::string> ids;
  auto unique_id = [&](std::string id) {
    for (char& c : id)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
    std::string base = id;
    for (int n = 2; ids.count(id); ++n) id = fmt::format("{}-{}", base, n);
    ids.insert(id);
    return id;
  };
  for (const auto& [key1, by_result] : tree) {
    std::vector<const Unit*> all;
    for (const auto& [r, by_op] : by_result)
      for (const auto& [o, units] : by_op) all.insert(all.end(), units.begin(), units.end());
    std::string base = key1.first + (key1.second.empty() ? "" : "-" + key1.second);
    // A rule generalizes only as far as its evidence: an opcode-wide rule needs verdicts for at least two result
    // types, a result-type rule verdicts for at least two operand-type combinations. One rejected `c64` convert
    // rejects that convert, not every convert.
    if (AllSame(all) && (all.front()->supported || by_result.size() >= 2)) {
      if (!all.front()->supported) rules.push_back(MakeRule(unique_id(base), all, *all.front(), 0));
      continue;
    }
    for (const auto& [result_types, by_op] : by_result) {
      std::vector<const Unit*> group;
      for (const auto& [o, units] : by_op) group.insert(group.end(), units.begin(), units.end());
      std::string id1 = base + "-" + Join(result_types, "-");
      if (AllSame(group) && (group.front()->supported || by_op.size() >= 2)) {
        if (!group.front()->supported) rules.push_back(MakeRule(unique_id(id1), group, *group.front(), 1));
        continue;
      }
      // Operand types decide: supported combinations first, so that a broader unsupported rule
      // below them does not capture them.
      for (int pass = 0; pass < 2; ++pass)
        for (const auto& [operand_types, units] : by_op) {
          int unsupported = 0;
          for (const Unit* u : units) unsupported += u->supported ? 0 : 1;
          bool majority_supported = unsupported * 2 < static_cast<int>(units.size());
          if (majority_supported != (pass == 0)) continue;
          rules.push_back(MakeRule(unique_id(id1 + "-from-" + Join(operand_types, "-")), units, *units.front(), 2));
        }
    }
  }

  std::string backend = Join({backend_ids.begin(), backend_ids.end()}, ", ");
  json profile = {
      {"name", name},
      {"description", ""},
      {"source", fmt::format("opprobe profile record --backend {} (backend version {}) on {}", backend,
                             Join({backend_versions.begin(), backend_versions.end()}, ", "),
                             Join({models.begin(), models.end()}, ", "))},
      {"default", {{"verdict", "supported"}}},
      {"rules", rules},
  };

  // Check the profile against what was recorded, with the rules backend itself.
  int64_t checked = 0, agree = 0;
  auto parsed = compiler_probe::rules::ParseProfile(profile.dump(), "recorded profile");
  if (parsed.ok()) {
    compiler_probe::rules::RulesBackend rules_backend(*parsed);
    for (const auto& [fp, u] : by_fp) {
      auto module = hlo::ParseModule(u.record->module_text, fp);
      if (!module.ok()) continue;
      ++checked;
      if (rules_backend.probe(**module).supported() == u.supported) ++agree;
    }
  }
  int64_t unsupported = 0;
  for (const auto& [fp, u] : by_fp) unsupported += u.supported ? 0 : 1;
  profile["description"] = fmt::format(
      "recorded from {}: {} unique units, {} unsupported; the rules reproduce {} of {} checked verdicts", backend,
      by_fp.size(), unsupported, agree, checked);
  return profile;
}

nlohmann::json RecordProfile(const analyzer::AnalysisResult& result, const std::string& name) {
  return RecordProfile(std::vector<const analyzer::AnalysisResult*>{&result}, name);
}

namespace {

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return UsageError(fmt::format("cannot write '{}'", path));
    f << text;
    if (!f) return UsageError(fmt::format("cannot write '{}'", path));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return UsageError(fmt::format("cannot write '{}': {}", path, ec.message()));
  }
  return Status::Ok();
}

struct RecordArgs {
  std::string backend;
  std::string output;
  std::string name;
  std::vector<std::string> inputs;
  AnalyzeRunOptions run;
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
      "A rule generalizes only as far as its evidence: opcode-wide when every recorded unit of the opcode agrees across\n"
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
    args->run.backend_spec = args->backend;
    args->run.use_cache = !args->no_cache;
    auto backend = CreateBackend(args->run);
    if (!backend.ok()) {
      exit_code = ReportError(backend.status());
      return;
    }
    auto result = AnalyzeInputs(args->inputs, **backend, args->run);
    if (!result.ok()) {
      exit_code = ReportError(result.status());
      return;
    }
    std::string name = args->name.empty() ? std::filesystem::path(args->output).stem().string() : args->name;
    json profile = RecordProfile(*result, name);
    Status st = WriteFileAtomically(args->output, profile.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    if (!st.ok()) {
      exit_code = ReportError(st);
      return;
    }
    std::fprintf(stderr, "opprobe: wrote %s: %zu rules; %s\n", args->output.c_str(), profile["rules"].size(),
                 profile["description"].get<std::string>().c_str());
    exit_code = 0;
  });
}

}  // namespace opprobe::cli
