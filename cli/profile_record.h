// `opprobe profile record`: turns the verdicts of a real backend into a `rules` profile
// (docs/profiles.md), so that a CI machine without the compiler can still gate.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analyzer/driver/result.h"

namespace opprobe::cli {

// Synthesizes a profile from the unique probe units of one or more analyses (all made with the same
// backend). Rules are as general as the verdicts allow: one rule per opcode whose units are all
// unsupported; per (opcode, result types) or (opcode, result types, operand types) where verdicts
// differ; a custom-call is keyed by its target. `error` verdicts (crash, timeout) count as
// unsupported. Units whose verdicts still differ within one key take the majority verdict; the
// profile's description says how many recorded verdicts the rules reproduce.
nlohmann::json RecordProfile(const std::vector<const analyzer::AnalysisResult*>& results, const std::string& name);
nlohmann::json RecordProfile(const analyzer::AnalysisResult& result, const std::string& name);

}  // namespace opprobe::cli
