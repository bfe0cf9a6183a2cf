// Runs a child process without a shell, in its own process group, with a timeout, keeping only the
// tail of its stdout and stderr (bounded memory however much it writes), and starts child processes that die with
// opprobe (SpawnChild). Used by the `cmd` backend to run compilers and by the `pjrt` backend's worker management.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/status.h"

namespace opprobe::compiler_probe {

struct SubprocessOptions {
  std::vector<std::string> argv;        // argv[0] is a path or a name looked up on PATH
  std::string cwd;                      // empty: inherit
  double timeout_seconds = 60.0;        // <= 0: no timeout
  size_t max_output_bytes = 64 * 1024;  // tail kept of each of stdout and stderr
  // Extra environment entries (`NAME`, `value`) added to (or replacing those of) the parent's environment.
  std::vector<std::pair<std::string, std::string>> env;
};

struct SubprocessResult {
  int exit_code = -1;      // the exit status when the child exited normally, else -1
  int signal = 0;          // the signal that killed it (SIGKILL after a timeout), else 0
  bool timed_out = false;  // the timeout expired and the whole process group was killed
  double wall_seconds = 0.0;
  std::string stdout_tail;  // the last max_output_bytes bytes of stdout
  std::string stderr_tail;
  int64_t stdout_bytes = 0;  // total bytes written, including the part that was dropped
  int64_t stderr_bytes = 0;

  bool exited_ok() const { return !timed_out && signal == 0 && exit_code == 0; }
  // `exit status 1`, `killed by signal 11 (SIGSEGV)`, `timed out after 2.0 s`.
  std::string Describe() const;
};

// Starts argv in a new process group with stdin from /dev/null (SpawnChild), waits for it (killing the whole
// group when the timeout expires) and returns what happened. After the child exits, any process it left
// behind in its group is killed too. An error only when the child could not be started (program not
// found, not executable): kUnavailable.
Expected<SubprocessResult> RunSubprocess(const SubprocessOptions& options);

// A child process as SpawnChild starts it.
struct SpawnSpec {
  std::string program;  // a path, run as it is (no PATH lookup)
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the whole environment, NAME=VALUE
  std::vector<std::pair<int, int>>
      fds;                        // (descriptor here, descriptor in the child), in order; 0 is /dev/null unless mapped
  std::string cwd;                // empty: this process's
  bool own_process_group = true;  // the child leads a new process group, which the exit cleanup kills whole
};

// Starts `spec` as posix_spawn does (a vfork-like clone: nothing of this process is copied) and, in the child
// before it runs the program: its own process group, every signal handler back to the default (SIGPIPE, SIGINT and
// SIGTERM too where ignored), an empty signal mask, and PR_SET_PDEATHSIG SIGKILL, so that it dies with the thread
// that started it, and so with opprobe, however opprobe ends (even by SIGKILL). The child is registered with the
// exit cleanup (support/exit_cleanup.h): call exit_cleanup::ForgetChild(pid) before reaping it. Returns 0 with `pid`
// set, or the errno that kept the program from starting (as posix_spawn does). A thread that starts a long-lived
// child must outlive it (see compiler_probe/worker/process.cpp's spawner thread).
int SpawnChild(const SpawnSpec& spec, pid_t& pid);

// The full path of `program` (a name looked up on $PATH, or a path containing '/' checked for
// existence and execute permission); nullopt when there is none.
std::optional<std::string> FindProgram(const std::string& program);

// `SIGSEGV`, `SIGKILL`, ... ; `signal N` for others.
std::string SignalName(int sig);

// Makes process output safe to put in a report: invalid UTF-8 bytes become U+FFFD and control
// characters other than newline and tab become spaces.
std::string SanitizeOutput(std::string_view text);

// The last `max_lines` non-empty lines of `text` (sanitized), joined with " | ", at most `max_chars`
// characters (the end is kept): a one-line reason from a compiler's stderr.
std::string LastLines(std::string_view text, int max_lines = 3, size_t max_chars = 400);
// The first non-empty line of `text` (sanitized), trailing blanks cut, at most `max_chars` characters and "...":
// the line a compiler's error message carries its verdict on (the rest is usually a stack or a dump).
std::string FirstLine(std::string_view text, size_t max_chars = 400);

// Keeps the last `limit` bytes appended to it (a ring, trimmed lazily); used for output tails.
class TailBuffer {
 public:
  explicit TailBuffer(size_t limit) : limit_(limit) {}
  void Append(const char* data, size_t n);
  std::string str() const;
  int64_t total() const { return total_; }

 private:
  size_t limit_;
  std::string buf_;
  int64_t total_ = 0;
};

}  // namespace opprobe::compiler_probe
