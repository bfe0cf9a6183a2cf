#include "compiler_probe/rules/profile_synthesis.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>

#include "compiler_probe/rules/rules_backend.h"

namespace opprobe::compiler_probe::rules {

namespace {

using nlohmann::json;

struct Unit {
  const RecordedUnit* recorded;
  InstructionFacts facts;
  bool supported;
  std::string reason;
};

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

int CountUnsupported(const std::vector<const Unit*>& units) {
  int n = 0;
  for (const Unit* u : units) n += u->supported ? 0 : 1;
  return n;
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

// level 0: opcode (and custom-call target); 1: + result types; 2: + operand types.
json MakeRule(const std::string& id, const std::vector<const Unit*>& units, const InstructionFacts& key, int level) {
  json match = json::object();
  match["opcodes"] = json::array({key.opcode});
  if (key.unknown_opcode) match["unknown_opcode"] = true;
  if (!key.custom_call_target.empty()) match["custom_call_targets"] = json::array({key.custom_call_target});
  if (level >= 1 && !key.result_types.empty()) match["result_types"] = key.result_types;
  if (level >= 2 && !key.operand_types.empty()) match["operand_types"] = key.operand_types;
  const int unsupported = CountUnsupported(units);
  const bool verdict_supported = unsupported * 2 < static_cast<int>(units.size());
  json rule = {{"id", id}, {"verdict", verdict_supported ? "supported" : "unsupported"}, {"match", match}};
  if (!verdict_supported) rule["reason"] = MostCommonReason(units);
  std::string example = units.front()->recorded->signature;
  for (const Unit* u : units)
    if (u->supported == verdict_supported) {
      example = u->recorded->signature;
      break;
    }
  std::string source =
      fmt::format("recorded: {} of {} units {}; e.g. {}", verdict_supported ? units.size() - unsupported : unsupported,
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

std::vector<std::string> Sorted(const std::vector<std::string>& v) {
  std::set<std::string> s(v.begin(), v.end());
  return {s.begin(), s.end()};
}

}  // namespace

nlohmann::json SynthesizeProfile(const std::vector<RecordedUnit>& recorded, const RecordingSource& source,
                                 const std::string& name) {
  std::vector<Unit> units;
  units.reserve(recorded.size());
  for (const auto& r : recorded) {
    if (!r.unit || !r.unit->entry() || !r.unit->entry()->root()) continue;
    if (r.verdict.kind == Verdict::Kind::kNotProbed) continue;  // no verdict: no evidence either way
    Unit u{&r, FactsOf(*r.unit->entry()->root()), r.verdict.supported(), r.verdict.reason};
    if (r.verdict.kind == Verdict::Kind::kError) u.reason = "compiler error: " + r.verdict.reason;
    units.push_back(std::move(u));
  }
  // Group by opcode (+ custom-call target), then result types, then operand types.
  using Key1 = std::pair<std::string, std::string>;
  std::map<Key1, std::map<std::vector<std::string>, std::map<std::vector<std::string>, std::vector<const Unit*>>>> tree;
  for (const auto& u : units)
    tree[{u.facts.opcode, u.facts.custom_call_target}][u.facts.result_types][u.facts.operand_types].push_back(&u);

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
      for (const auto& [o, group] : by_op) all.insert(all.end(), group.begin(), group.end());
    std::string base = key1.first + (key1.second.empty() ? "" : "-" + key1.second);
    // A rule generalizes only as far as its evidence: an opcode-wide rule needs verdicts for at least two result
    // types, a result-type rule verdicts for at least two operand-type combinations. One rejected `c64` convert
    // rejects that convert, not every convert.
    if (AllSame(all) && (all.front()->supported || by_result.size() >= 2)) {
      if (!all.front()->supported) rules.push_back(MakeRule(unique_id(base), all, all.front()->facts, 0));
      continue;
    }
    for (const auto& [result_types, by_op] : by_result) {
      std::vector<const Unit*> group;
      for (const auto& [o, g] : by_op) group.insert(group.end(), g.begin(), g.end());
      std::string id1 = base + "-" + Join(result_types, "-");
      if (AllSame(group) && (group.front()->supported || by_op.size() >= 2)) {
        if (!group.front()->supported) rules.push_back(MakeRule(unique_id(id1), group, group.front()->facts, 1));
        continue;
      }
      // Operand types decide: supported combinations first, so that a broader unsupported rule below them does
      // not capture them.
      for (int pass = 0; pass < 2; ++pass)
        for (const auto& [operand_types, g] : by_op) {
          bool majority_supported = CountUnsupported(g) * 2 < static_cast<int>(g.size());
          if (majority_supported != (pass == 0)) continue;
          rules.push_back(MakeRule(unique_id(id1 + "-from-" + Join(operand_types, "-")), g, g.front()->facts, 2));
        }
    }
  }

  json profile = {
      {"name", name},
      {"description", ""},
      {"source", fmt::format("opprobe profile record --backend {} (backend version {}) on {}",
                             Join(Sorted(source.backend_ids), ", "), Join(Sorted(source.backend_versions), ", "),
                             Join(Sorted(source.models), ", "))},
      {"default", {{"verdict", "supported"}}},
      {"rules", rules},
  };

  // Check the profile against what was recorded, with the rules backend itself.
  int64_t agree = 0;
  auto parsed = ParseProfile(profile.dump(), "recorded profile");
  if (parsed.ok()) {
    RulesBackend rules_backend(*parsed);
    for (const auto& u : units)
      if (rules_backend.probe(*u.recorded->unit).supported() == u.supported) ++agree;
  }
  std::vector<const Unit*> all;
  all.reserve(units.size());
  for (const auto& u : units) all.push_back(&u);
  profile["description"] =
      fmt::format("recorded from {}: {} unique units, {} unsupported; the rules reproduce {} of {} checked verdicts",
                  Join(Sorted(source.backend_ids), ", "), units.size(), CountUnsupported(all), agree, units.size());
  return profile;
}

}  // namespace opprobe::compiler_probe::rules
