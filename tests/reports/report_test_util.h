// Helpers for the report tests: the golden folder (OPPROBE_UPDATE_GOLDEN=1 rewrites it), temp folders,
// running a program and capturing its output.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "opprobe_version.h"

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

struct Captured {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv (no shell) with stdout and stderr captured.
inline Captured RunProgram(const std::vector<std::string>& args) {
  Captured c;
  char out_path[] = "/tmp/opprobe-reports-out-XXXXXX";
  char err_path[] = "/tmp/opprobe-reports-err-XXXXXX";
  int out_fd = ::mkstemp(out_path);
  int err_fd = ::mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) return c;
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(out_fd);
  ::close(err_fd);
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.out = ReadText(out_path);
  c.err = ReadText(err_path);
  ::unlink(out_path);
  ::unlink(err_path);
  return c;
}

// Finds an executable on PATH; empty when absent.
inline std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    auto p = std::filesystem::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

}  // namespace opprobe::reports::testing
