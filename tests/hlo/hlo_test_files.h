// File helpers for the HLO interchange tests: reading files, golden comparison (OPPROBE_UPDATE_GOLDEN=1
// rewrites the golden file instead of comparing), and the corpus location.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "opprobe_version.h"

namespace opprobe::hlo::testing {

inline std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteTestFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

inline std::string GoldenPath(const std::string& name) {
  return std::string(OPPROBE_SOURCE_DIR) + "/tests/golden/hlo/" + name;
}

inline bool UpdatingGolden() {
  const char* v = std::getenv("OPPROBE_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

// Compares `actual` with tests/golden/hlo/<name>, or rewrites the file under OPPROBE_UPDATE_GOLDEN=1.
inline void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = GoldenPath(name);
  if (UpdatingGolden()) {
    WriteTestFile(path, actual);
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing; run with OPPROBE_UPDATE_GOLDEN=1";
  EXPECT_EQ(ReadTestFile(path), actual) << "golden " << path << " differs (OPPROBE_UPDATE_GOLDEN=1 rewrites it)";
}

inline std::string CorpusDir() { return std::string(OPPROBE_SOURCE_DIR) + "/../shared/corpus/hlo"; }

// Text with trailing blank lines removed (the corpus files were trimmed at their ends).
inline std::string TrimTrailingNewlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace opprobe::hlo::testing
