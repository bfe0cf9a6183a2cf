// Runs programs as child processes for tests: any program (RunProgram, no shell, stdin from /dev/null, stdout
// and stderr captured), the real `opprobe` binary (RunOpprobe, OPPROBE_BIN) for end-to-end tests, and finds a
// program on PATH (FindProgram).
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace opprobe::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `args` (args[0] found on PATH unless it holds a `/`) in the current working directory; stdout and stderr
// are captured through temporary files. Exit code 127: the program could not be started; 128+N: killed by N.
inline RunResult RunProgram(const std::vector<std::string>& args) {
  RunResult r;
  char out_path[] = "/tmp/opprobe-test-out-XXXXXX";
  char err_path[] = "/tmp/opprobe-test-err-XXXXXX";
  int out_fd = mkstemp(out_path);
  int err_fd = mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) return r;
  std::vector<std::string> argv_s = args;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(out_fd);
  close(err_fd);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadWholeFile(out_path);
  r.err = ReadWholeFile(err_path);
  unlink(out_path);
  unlink(err_path);
  return r;
}

// Runs `OPPROBE_BIN args...`; the tests run from the repository root (ctest's working directory).
inline RunResult RunOpprobe(const std::vector<std::string>& args) {
  std::vector<std::string> argv{OPPROBE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv);
}

// The path of an executable `name` on PATH; empty when there is none.
inline std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    auto p = std::filesystem::path(dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

}  // namespace opprobe::testing
