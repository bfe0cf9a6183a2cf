// Helpers for the report tests: the golden folder (OPPROBE_UPDATE_GOLDEN=1 rewrites it), temp folders, and
// running a program with its output captured (tests/testing/run_binary.h).
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "opprobe_version.h"
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

// A fresh folder under /tmp, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "opprobe-reports-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Running programs: tests/testing/run_binary.h.
using ::opprobe::testing::FindProgram;
using ::opprobe::testing::RunProgram;

}  // namespace opprobe::reports::testing
