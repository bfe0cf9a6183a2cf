// Helpers for the report tests: the golden folder (OPPROBE_UPDATE_GOLDEN=1 rewrites it), temp folders, and
// running a program with its output captured (tests/testing/run_binary.h).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "opprobe_version.h"
#include "support/temp_folder.h"
#include "testing/run_binary.h"

namespace opprobe::reports::testing {

inline std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::filesystem::path SourceDir() { return OPPROBE_SOURCE_DIR; }
inline std::filesystem::path GoldenDir() { return SourceDir() / "tests" / "golden" / "reports"; }

inline bool UpdateGolden() {
  const char* v = std::getenv("OPPROBE_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// A fresh folder in $TMPDIR (else /tmp), removed with the object (io::TempFolder).
class TempDir {
 public:
  TempDir() {
    if (auto folder = io::TempFolder::Create("opprobe-reports-"); folder.ok()) {
      path_ = folder->path();
      folder_.emplace(std::move(folder).value());
    }
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::optional<io::TempFolder> folder_;
  std::filesystem::path path_;
};

// Running programs: tests/testing/run_binary.h.
using ::opprobe::testing::FindProgram;
using ::opprobe::testing::RunProgram;

}  // namespace opprobe::reports::testing
