// The `rules` backend: decides from a declarative profile (docs/profiles.md) instead of a compiler.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"

namespace opprobe::compiler_probe::rules {

// One rule: all the match fields it has must hold for some instruction of the unit (the ROOT or an
// instruction of a computation it calls); the first matching rule gives the verdict.
struct Rule {
  std::string id;
  bool supported = false;
  std::vector<std::string> opcodes;        // opcode names (also unknown opcode names); empty = any
  std::vector<std::string> element_types;  // result or operand types (tuples looked through)
  std::vector<std::string> result_types;
  std::vector<std::string> operand_types;
  std::vector<std::string> custom_call_targets;  // a trailing `*` matches a prefix
  std::vector<std::string> comparison_directions;
  std::vector<std::string> fft_types;
  std::vector<std::string> to_apply_root;  // opcode of the ROOT of the first called computation
  int dynamic_shapes = -1;                 // 1: some shape has a dynamic dim; 0: none; -1: either
  int unknown_opcode = -1;                 // 1: the opcode is not one this IR knows
  std::string reason;
  std::string source;
};

struct Profile {
  std::string name;
  std::string description;
  std::string source;  // where the profile's facts come from
  bool default_supported = true;
  std::string default_reason;
  std::vector<Rule> rules;
  std::string text;  // the JSON it was read from (hashed for version())
  // What one device of the target holds (`device_memory`: bytes, the unit it is per, where the figure comes from);
  // 0: the profile does not say. `--fit` holds opprobe's estimate of a step against it.
  int64_t device_memory_bytes = 0;
  std::string device_memory_per;
  std::string device_memory_source;
};

// Parses a profile; errors name the JSON path (`rules[3].match.opcodes[0]: unknown opcode 'ad'`).
Expected<Profile> ParseProfile(const std::string& json_text, const std::string& source_name);

// Built-in profiles, embedded from compiler_probe/rules/profiles/*.json.
std::vector<std::string> BuiltinProfileNames();
// The JSON text of a built-in profile, or empty.
std::string BuiltinProfileText(const std::string& name);

class RulesBackend : public Backend {
 public:
  explicit RulesBackend(Profile profile);
  std::string id() const override { return "rules:" + profile_.name; }
  std::string version() const override;
  Verdict probe(const hlo::Module& unit) override;
  // A profile compiles nothing: kUnsupported, with the profile's device memory, so that `--fit` holds opprobe's own
  // estimate against it.
  ProgramCompile compile_program(const hlo::Module& program, const ProgramOptions& options) override;
  const Profile& profile() const { return profile_; }

 private:
  Profile profile_;
};

// `rules:NAME` (a built-in profile) or `rules:FILE` (a path to a profile JSON).
void Register(Registry& registry);

// What the match fields `opcodes`, `custom_call_targets`, `result_types` and `operand_types` see of one
// instruction (tuples looked through; types sorted, each once). The matcher and profile synthesis share it.
struct InstructionFacts {
  std::string opcode;  // the opcode's name, or the unknown opcode's own name
  bool unknown_opcode = false;
  std::string custom_call_target;  // custom-call only
  std::vector<std::string> result_types;
  std::vector<std::string> operand_types;
};
InstructionFacts FactsOf(const hlo::Instruction& instruction);

}  // namespace opprobe::compiler_probe::rules
