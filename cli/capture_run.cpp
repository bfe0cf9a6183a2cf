#include "cli/capture_run.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "compiler_probe/subprocess.h"
#include "opprobe_version.h"
#include "support/exit_cleanup.h"
#include "support/runtime_files.h"

extern char** environ;

namespace opprobe::cli {

namespace {

namespace fs = std::filesystem;

bool IsRegularFile(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Identity of the trace file before the run, to tell a freshly written trace from a stale one.
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  struct timespec mtime = {};
};

FileId StatFile(const std::string& p) {
  FileId id;
  struct stat st;
  if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.mtime = st.st_mtim;
  }
  return id;
}

bool SameFile(const FileId& a, const FileId& b) {
  return a.exists == b.exists && a.dev == b.dev && a.ino == b.ino && a.mtime.tv_sec == b.mtime.tv_sec &&
         a.mtime.tv_nsec == b.mtime.tv_nsec;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

volatile sig_atomic_t g_capture_child = 0;

void ForwardSignal(int sig, siginfo_t* info, void*) {
  pid_t child = g_capture_child;
  if (child > 0 && info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) kill(child, sig);
}

constexpr const char* kCommandForm = "expected `-- <python> script.py [args...]`, e.g. `-- /usr/bin/python3 train.py`";

}  // namespace

Expected<std::string> FindCaptureShim() {
  if (const char* env = std::getenv("OPPROBE_CAPTURE_SHIM"); env && *env) {
    if (!IsRegularFile((fs::path(env) / kCaptureEntry).string()))
      return InvalidInput(fmt::format("OPPROBE_CAPTURE_SHIM={}: no capture package there (no {})", env,
                                      (fs::path(env) / kCaptureEntry).string()));
    return std::string(env);
  }
  const std::string entry = (fs::path(kCapturePackage) / kCaptureEntry).string();
  const auto places = io::DataPlaces("capture", "capture");
  if (std::string found = io::FirstFile(places, entry); !found.empty()) return fs::path(found).parent_path().string();
  return InvalidInput(
      fmt::format("cannot find the capture package {} (looked for {}); "
                  "set OPPROBE_CAPTURE_SHIM to its folder",
                  kCapturePackage, io::DescribePlaces(places, entry)));
}

CaptureProgress CaptureProgressFor(ProgressMode mode, bool stderr_is_tty) {
  switch (mode) {
    case ProgressMode::kOff: return CaptureProgress::kOff;
    case ProgressMode::kOn: return stderr_is_tty ? CaptureProgress::kTerminal : CaptureProgress::kLines;
    case ProgressMode::kAuto: break;
  }
  return stderr_is_tty ? CaptureProgress::kTerminal : CaptureProgress::kOff;
}

Expected<int> RunCapture(const std::vector<std::string>& command, const std::string& trace_path, bool quiet,
                         CaptureProgress progress, CaptureFlags flags) {
  if (command.empty()) return InvalidInput(fmt::format("no script to capture: {}", kCommandForm));
  if (trace_path.empty()) return InvalidInput("no trace file given");
  const std::string& interpreter_name = command[0];
  if (EndsWith(interpreter_name, ".py"))
    return InvalidInput(fmt::format("'{}' is a script, not a Python interpreter: {}", interpreter_name, kCommandForm));
  auto interpreter = compiler_probe::FindProgram(interpreter_name);
  if (!interpreter)
    return InvalidInput(fmt::format("Python interpreter '{}' not found; {}", interpreter_name, kCommandForm));

  // Interpreter options stay before the shim (`python -X dev script.py`); the first non-option is the script.
  std::vector<std::string> argv{*interpreter};
  size_t i = 1;
  for (; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-m" || a == "-c" || (a.size() > 2 && (a.starts_with("-m") || a.starts_with("-c")) && a[1] != '-'))
      return InvalidInput(fmt::format("capture runs a script file; `{}` (python {}) is not supported: {}", a,
                                      a.substr(0, 2), kCommandForm));
    if (a == "-" || !a.starts_with("-")) break;
    argv.push_back(a);
    if ((a == "-X" || a == "-W") && i + 1 < command.size()) argv.push_back(command[++i]);
  }
  if (i >= command.size())
    return InvalidInput(fmt::format("no script given after the interpreter '{}'; {}", interpreter_name, kCommandForm));
  const std::string& script = command[i];
  if (script != "-" && !IsRegularFile(script)) return InvalidInput(fmt::format("script not found: {}", script));
  OPPROBE_ASSIGN_OR_RETURN(std::string shim, FindCaptureShim());
  argv.push_back(shim);
  argv.push_back("--output");
  argv.push_back(trace_path);
  if (quiet) argv.push_back("--quiet");
  if (flags.fake) argv.push_back("--fake");
  if (flags.program) argv.push_back("--program");
  if (flags.torchax_standin) argv.push_back("--torchax-standin");
  if (progress != CaptureProgress::kOff) {
    argv.push_back("--progress");
    argv.push_back(progress == CaptureProgress::kTerminal ? "tty" : "lines");
  }
  argv.push_back("--");
  for (; i < command.size(); ++i) argv.push_back(command[i]);

  std::vector<char*> cargv;
  cargv.reserve(argv.size());
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  const FileId before = StatFile(trace_path);

  // A close-on-exec pipe tells the parent why exec failed (its errno), if it did.
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return Internal(fmt::format("pipe: {}", std::strerror(errno)));

  // While the script runs, SIGINT/SIGQUIT/SIGTERM are handled here by passing them on to the script (which
  // still writes the trace recorded so far). A Ctrl-C from the terminal already reached the script (same
  // process group), so only signals sent by a process (kill, timeout: SI_USER/SI_QUEUE) are passed on.
  struct sigaction forward = {}, old_int = {}, old_quit = {}, old_term = {};
  forward.sa_sigaction = ForwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  g_capture_child = 0;
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGQUIT, &forward, &old_quit);
  sigaction(SIGTERM, &forward, &old_term);
  auto restore_signals = [&] {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    g_capture_child = 0;
  };
  std::fflush(nullptr);

  // The script dies with opprobe (PR_SET_PDEATHSIG; this thread waits for it) and with opprobe's exit cleanup.
  const pid_t parent = getpid();
  std::optional<exit_cleanup::StartGuard> guard(std::in_place);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    guard.reset();
    restore_signals();
    close(err_pipe[0]);
    close(err_pipe[1]);
    return Internal(fmt::format("fork: {}", std::strerror(e)));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    close(err_pipe[0]);
    execve(cargv[0], cargv.data(), environ);
    int e = errno;
    ssize_t ignored = write(err_pipe[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  exit_cleanup::AddChild(pid, /*group=*/false);  // it shares opprobe's process group: the script alone
  guard.reset();
  g_capture_child = pid;
  close(err_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  do { n = read(err_pipe[0], &exec_errno, sizeof exec_errno); } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);

  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {}
  exit_cleanup::ForgetChild(pid);  // before the reap, after which the pid may be another process's
  int wstatus = 0;
  pid_t w;
  do { w = waitpid(pid, &wstatus, 0); } while (w < 0 && errno == EINTR);
  restore_signals();

  if (n == static_cast<ssize_t>(sizeof exec_errno))
    return InvalidInput(fmt::format("cannot run Python interpreter '{}': {}", *interpreter, std::strerror(exec_errno)));
  if (w < 0) return Internal(fmt::format("waitpid: {}", std::strerror(errno)));

  int status = 0;
  std::string how;
  if (WIFEXITED(wstatus)) {
    status = WEXITSTATUS(wstatus);
    how = fmt::format("exited with status {}", status);
  } else if (WIFSIGNALED(wstatus)) {
    status = 128 + WTERMSIG(wstatus);
    how = fmt::format("was killed by signal {} ({})", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
  } else {
    status = 128;
    how = "stopped abnormally";
  }

  const FileId after = StatFile(trace_path);
  if (!after.exists || SameFile(before, after)) {
    return InvalidInput(
        fmt::format("no trace was written: the capture of {} {} (see the messages above)", script, how));
  }
  return status;
}

}  // namespace opprobe::cli
