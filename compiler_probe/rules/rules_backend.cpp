#include "compiler_probe/rules/rules_backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include "hlo/probe_unit.h"
#include "hlo/types.h"
#include "support/file_io.h"
#include "support/quote.h"

namespace opprobe::compiler_probe::rules {
namespace {

struct EmbeddedProfile {
  const char* name;
  const char* json;
};
// A profile file larger than this is not a rules profile.
constexpr uint64_t kMaxProfileBytes = 64 << 20;

constexpr EmbeddedProfile kBuiltin[] = {
#include "builtin_profiles.inc"
};

using json = nlohmann::json;

Expected<std::vector<std::string>> StringList(const json& j, const std::string& path) {
  if (!j.is_array()) return InvalidInput(path + ": expected a list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) return InvalidInput(fmt::format("{}[{}]: expected a string", path, i));
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

Status CheckTypes(const std::vector<std::string>& types, const std::string& path) {
  for (size_t i = 0; i < types.size(); ++i)
    if (!hlo::PrimitiveTypeFromName(types[i]))
      return InvalidInput(fmt::format("{}[{}]: unknown element type '{}'", path, i, types[i]));
  return Status::Ok();
}

Status CheckOpcodes(const std::vector<std::string>& ops, const std::string& path, bool allow_unknown) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (!allow_unknown && !hlo::OpcodeFromName(ops[i]))
      return InvalidInput(fmt::format("{}[{}]: unknown opcode '{}'", path, i, ops[i]));
  return Status::Ok();
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool MatchesTarget(const std::vector<std::string>& patterns, const std::string& target) {
  for (const auto& p : patterns) {
    if (p == "*" || p == target) return true;
    if (!p.empty() && p.back() == '*' && target.rfind(p.substr(0, p.size() - 1), 0) == 0) return true;
  }
  return false;
}

void CollectTypes(const hlo::Shape& s, std::set<std::string>& out) {
  if (s.IsTuple()) {
    for (const auto& t : s.tuple_shapes()) CollectTypes(t, out);
  } else {
    out.emplace(hlo::PrimitiveTypeName(s.element_type()));
  }
}

bool AnyType(const std::vector<std::string>& types, const std::vector<std::string>& wanted) {
  for (const auto& t : types)
    if (Contains(wanted, t)) return true;
  return false;
}

bool Matches(const Rule& r, const hlo::Instruction& in, const InstructionFacts& f) {
  if (!r.opcodes.empty() && !Contains(r.opcodes, f.opcode)) return false;
  if (r.unknown_opcode != -1 && (r.unknown_opcode == 1) != f.unknown_opcode) return false;
  if (!r.result_types.empty() && !AnyType(f.result_types, r.result_types)) return false;
  if (!r.operand_types.empty() && !AnyType(f.operand_types, r.operand_types)) return false;
  if (!r.element_types.empty() && !AnyType(f.result_types, r.element_types) &&
      !AnyType(f.operand_types, r.element_types))
    return false;
  if (!r.custom_call_targets.empty() && (in.opcode != hlo::Opcode::kCustomCall || f.unknown_opcode ||
                                         !MatchesTarget(r.custom_call_targets, f.custom_call_target)))
    return false;
  if (!r.comparison_directions.empty() &&
      (in.opcode != hlo::Opcode::kCompare ||
       !Contains(r.comparison_directions, hlo::ComparisonDirectionName(in.comparison_direction))))
    return false;
  if (!r.fft_types.empty() && (in.opcode != hlo::Opcode::kFft || !Contains(r.fft_types, hlo::FftTypeName(in.fft_type))))
    return false;
  if (!r.to_apply_root.empty()) {
    const hlo::Computation* c = in.to_apply();
    if (!c || !c->root() || !Contains(r.to_apply_root, hlo::OpcodeName(c->root()->opcode))) return false;
  }
  if (r.dynamic_shapes != -1) {
    bool dyn = in.shape.is_dynamic();
    for (const auto* op : in.operands) dyn |= op->shape.is_dynamic();
    if ((r.dynamic_shapes == 1) != dyn) return false;
  }
  return true;
}

}  // namespace

InstructionFacts FactsOf(const hlo::Instruction& in) {
  InstructionFacts f;
  f.unknown_opcode = !in.unknown_opcode.empty();
  f.opcode = f.unknown_opcode ? in.unknown_opcode : std::string(hlo::OpcodeName(in.opcode));
  if (in.opcode == hlo::Opcode::kCustomCall && !f.unknown_opcode) f.custom_call_target = in.custom_call_target;
  std::set<std::string> results, operands;
  CollectTypes(in.shape, results);
  for (const auto* op : in.operands) CollectTypes(op->shape, operands);
  f.result_types.assign(results.begin(), results.end());
  f.operand_types.assign(operands.begin(), operands.end());
  return f;
}

static Expected<Profile> ParseProfileUnguarded(const std::string& text, const std::string& source_name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidInput(fmt::format("{}: not valid JSON at byte {}", source_name, e.byte));
  } catch (const json::exception& e) {  // out_of_range (a number like 1e999): never escape
    return InvalidInput(fmt::format("{}: unreadable JSON: {}", source_name, support::OneLine(e.what())));
  }
  auto fail = [&](const Status& s) { return s.WithContext(source_name); };
  if (!j.is_object()) return fail(InvalidInput("expected a JSON object"));
  Profile p;
  p.text = text;
  if (!j.contains("name") || !j["name"].is_string()) return fail(InvalidInput("name: required string"));
  p.name = j["name"];
  p.description = j.value("description", "");
  p.source = j.value("source", "");
  if (j.contains("default")) {
    const json& d = j["default"];
    if (!d.is_object() || !d.contains("verdict") || !d["verdict"].is_string())
      return fail(InvalidInput("default: expected {\"verdict\": \"supported\"|\"unsupported\"}"));
    std::string v = d["verdict"];
    if (v != "supported" && v != "unsupported")
      return fail(InvalidInput("default.verdict: expected supported or unsupported"));
    p.default_supported = v == "supported";
    p.default_reason = d.value("reason", "");
  }
  if (j.contains("device_memory")) {
    const json& d = j["device_memory"];
    if (!d.is_object() || !d.contains("bytes") || !d["bytes"].is_number_integer() || d["bytes"].get<int64_t>() <= 0)
      return fail(InvalidInput("device_memory.bytes: required positive integer"));
    if (!d.contains("per") || !d["per"].is_string() || !d.contains("source") || !d["source"].is_string())
      return fail(
          InvalidInput("device_memory: `per` (what one device is) and `source` (where the figure comes from) "
                       "are required strings"));
    p.device_memory_bytes = d["bytes"].get<int64_t>();
    p.device_memory_per = d["per"];
    p.device_memory_source = d["source"];
  }
  if (!j.contains("rules") || !j["rules"].is_array()) return fail(InvalidInput("rules: required list"));
  for (size_t i = 0; i < j["rules"].size(); ++i) {
    const json& rj = j["rules"][i];
    std::string path = fmt::format("rules[{}]", i);
    if (!rj.is_object()) return fail(InvalidInput(path + ": expected an object"));
    Rule r;
    r.id = rj.value("id", fmt::format("rule{}", i));
    if (!rj.contains("verdict") || !rj["verdict"].is_string())
      return fail(InvalidInput(path + ".verdict: required, supported or unsupported"));
    std::string v = rj["verdict"];
    if (v != "supported" && v != "unsupported")
      return fail(InvalidInput(path + ".verdict: expected supported or unsupported"));
    r.supported = v == "supported";
    r.reason = rj.value("reason", "");
    r.source = rj.value("source", "");
    if (!r.supported && r.reason.empty()) return fail(InvalidInput(path + ".reason: an unsupported rule must say why"));
    if (!rj.contains("match") || !rj["match"].is_object()) return fail(InvalidInput(path + ".match: required object"));
    const json& m = rj["match"];
    for (auto it = m.begin(); it != m.end(); ++it) {
      std::string mp = path + ".match." + it.key();
      const std::string& k = it.key();
      if (k == "dynamic_shapes" || k == "unknown_opcode") {
        if (!it->is_boolean()) return fail(InvalidInput(mp + ": expected true or false"));
        (k == "dynamic_shapes" ? r.dynamic_shapes : r.unknown_opcode) = it->get<bool>() ? 1 : 0;
        continue;
      }
      auto list = StringList(*it, mp);
      if (!list.ok()) return fail(list.status());
      if (k == "opcodes") {
        OPPROBE_RETURN_IF_ERROR(
            fail(CheckOpcodes(*list, mp, r.unknown_opcode == 1 || rj["match"].value("unknown_opcode", false))));
        r.opcodes = *list;
      } else if (k == "element_types" || k == "result_types" || k == "operand_types") {
        OPPROBE_RETURN_IF_ERROR(fail(CheckTypes(*list, mp)));
        (k == "element_types" ? r.element_types : k == "result_types" ? r.result_types : r.operand_types) = *list;
      } else if (k == "custom_call_targets") {
        r.custom_call_targets = *list;
      } else if (k == "comparison_directions") {
        for (size_t q = 0; q < list->size(); ++q)
          if (!hlo::ComparisonDirectionFromName((*list)[q]))
            return fail(InvalidInput(fmt::format("{}[{}]: unknown direction '{}'", mp, q, (*list)[q])));
        r.comparison_directions = *list;
      } else if (k == "fft_types") {
        for (size_t q = 0; q < list->size(); ++q)
          if (!hlo::FftTypeFromName((*list)[q]))
            return fail(InvalidInput(fmt::format("{}[{}]: unknown fft type '{}'", mp, q, (*list)[q])));
        r.fft_types = *list;
      } else if (k == "to_apply_root") {
        OPPROBE_RETURN_IF_ERROR(fail(CheckOpcodes(*list, mp, false)));
        r.to_apply_root = *list;
      } else {
        return fail(InvalidInput(fmt::format(
            "{}: unknown match field (known: opcodes, element_types, result_types, operand_types, custom_call_targets, "
            "comparison_directions, fft_types, to_apply_root, dynamic_shapes, unknown_opcode)",
            mp)));
      }
    }
    p.rules.push_back(std::move(r));
  }
  return p;
}

// No nlohmann exception (a number-valued "description" is a type_error) escapes, and keys echoed from the
// file stay on one line.
Expected<Profile> ParseProfile(const std::string& text, const std::string& source_name) {
  try {
    auto p = ParseProfileUnguarded(text, source_name);
    if (!p.ok()) return Status(p.status().code(), support::OneLine(p.status().message(), 1000));
    return p;
  } catch (const json::exception& e) {
    return InvalidInput(fmt::format("{}: malformed profile: {}", source_name, support::OneLine(e.what())));
  }
}

std::vector<std::string> BuiltinProfileNames() {
  std::vector<std::string> names;
  for (const auto& e : kBuiltin) names.emplace_back(e.name);
  return names;
}

std::string BuiltinProfileText(const std::string& name) {
  for (const auto& e : kBuiltin)
    if (name == e.name) return e.json;
  return "";
}

RulesBackend::RulesBackend(Profile profile) : profile_(std::move(profile)) {}

std::string RulesBackend::version() const { return "profile-" + hlo::Fnv1a64Hex(profile_.text); }

ProgramCompile RulesBackend::compile_program(const hlo::Module& program, const ProgramOptions& options) {
  ProgramCompile c = Backend::compile_program(program, options);
  c.message = fmt::format("rules:{} is a profile and compiles nothing", profile_.name);
  c.devices = std::max<int64_t>(1, options.partitions);
  c.device_memory_bytes = profile_.device_memory_bytes;
  if (c.device_memory_bytes > 0)
    c.device_memory_source = fmt::format("per {}, from {}", profile_.device_memory_per, profile_.device_memory_source);
  return c;
}

Verdict RulesBackend::probe(const hlo::Module& unit) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<const hlo::Instruction*, InstructionFacts>> instrs;
  if (unit.entry() && unit.entry()->root()) instrs.emplace_back(unit.entry()->root(), FactsOf(*unit.entry()->root()));
  for (const auto& c : unit.computations()) {
    if (c.get() == unit.entry()) continue;
    for (const auto& i : c->instructions())
      if (i->opcode != hlo::Opcode::kParameter) instrs.emplace_back(i.get(), FactsOf(*i));
  }
  Verdict v = profile_.default_supported ? Verdict::Supported() : Verdict::Unsupported(profile_.default_reason);
  bool decided = false;
  for (const Rule& r : profile_.rules) {
    for (const auto& [in, facts] : instrs) {
      if (!Matches(r, *in, facts)) continue;
      v = r.supported ? Verdict::Supported() : Verdict::Unsupported(r.reason);
      if (!r.supported && !r.source.empty()) v.output_tail = fmt::format("rule {} ({})", r.id, r.source);
      decided = true;
      break;
    }
    if (decided) break;
  }
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return v;
}

void Register(Registry& registry) {
  registry.Register(
      {"rules", "rules:NAME|FILE",
       fmt::format("decide from a declarative profile (built-in: {}; or a profile JSON file, see docs/profiles.md)",
                   fmt::join(BuiltinProfileNames(), ", ")),
       [](const std::string& arg, const BackendOptions&) -> Expected<std::unique_ptr<Backend>> {
         if (arg.empty())
           return InvalidInput(fmt::format("rules: name a profile, e.g. rules:neuron-trn1 (built-in: {})",
                                           fmt::join(BuiltinProfileNames(), ", ")));
         std::string text = BuiltinProfileText(arg);
         std::string source = "built-in profile " + arg;
         if (text.empty()) {
           auto read = io::ReadFile(arg, kMaxProfileBytes);
           if (!read.ok())
             return InvalidInput(fmt::format("rules: '{}' is neither a built-in profile ({}) nor a readable file ({})",
                                             arg, fmt::join(BuiltinProfileNames(), ", "), read.status().message()));
           text = std::move(read).value();
           source = arg;
         }
         auto profile = ParseProfile(text, source);
         if (!profile.ok()) return profile.status();
         return std::unique_ptr<Backend>(std::make_unique<RulesBackend>(std::move(*profile)));
       }});
}

}  // namespace opprobe::compiler_probe::rules
