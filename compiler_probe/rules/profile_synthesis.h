// Profile synthesis (`opprobe profile record`): turns a real backend's verdicts on probe units into a `rules`
// profile (docs/profiles.md) that reproduces them, so a CI machine without the compiler can still gate. It reads
// each unit's ROOT through the same facts the rules matcher sees (rules_backend.h: FactsOf), so a recorded rule
// matches exactly the units it was derived from.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"
#include "hlo/instruction.h"

namespace opprobe::compiler_probe::rules {

// One probed unit and the verdict the recorded backend gave it.
struct RecordedUnit {
  const hlo::Module* unit = nullptr;
  Verdict verdict;
  std::string signature;  // the instruction's one-line signature, quoted in a rule's `source`
};

// Where the verdicts came from, for the profile's `source` line.
struct RecordingSource {
  std::vector<std::string> backend_ids;
  std::vector<std::string> backend_versions;
  std::vector<std::string> models;
};

// Rules are as general as the verdicts allow: one rule per opcode (a custom call: per target) whose units all
// agree across at least two result types; per (opcode, result types) when they agree across at least two
// operand-type combinations; otherwise per exact (opcode, result types, operand types), supported combinations
// first. `error` verdicts (crash, time-out) count as unsupported. Units whose verdicts still differ within one
// key take the majority verdict. The profile is checked against the units with the rules backend itself; its
// description says how many recorded verdicts it reproduces. Units are taken in the order given (callers give
// them unique and in a deterministic order).
nlohmann::json SynthesizeProfile(const std::vector<RecordedUnit>& units, const RecordingSource& source,
                                 const std::string& name);

}  // namespace opprobe::compiler_probe::rules
