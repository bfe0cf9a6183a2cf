// Report writers: every format is a pure function of an AnalysisResult (DESIGN.md "Report").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/driver/result.h"
#include "hlo/status.h"

namespace opprobe::reports {

inline constexpr int kSchemaVersion = 1;

// Neuron's result.json superset. verbosity 2: aten lists; 1: adds `xla` lists; 0: adds per-instruction
// detail. Keys and list order are deterministic.
nlohmann::json ToJson(const analyzer::AnalysisResult& result, int verbosity);

// "60.00%"
std::string FormatPercent(double pct);

// Writes `content` to `path` atomically (temporary file in the same folder, then rename).
Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace opprobe::reports
