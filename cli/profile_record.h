// `opprobe profile record`: turns the verdicts of a real backend into a `rules` profile
// (docs/profiles.md), so that a CI machine without the compiler can still gate.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/driver/result.h"

namespace opprobe::cli {

// The unique probe units of one or more analyses (all made with the same backend, taken once per fingerprint, in
// fingerprint order) turned into a profile by compiler_probe::rules::SynthesizeProfile, which says how general
// its rules are.
nlohmann::json RecordProfile(const std::vector<const analyzer::AnalysisResult*>& results, const std::string& name);
nlohmann::json RecordProfile(const analyzer::AnalysisResult& result, const std::string& name);

}  // namespace opprobe::cli
