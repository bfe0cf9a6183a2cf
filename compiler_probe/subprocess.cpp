#include "compiler_probe/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "support/exit_cleanup.h"

extern char** environ;

namespace opprobe::compiler_probe {

namespace {

using Clock = std::chrono::steady_clock;

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// What the cloned child reads (prepared before the clone: the child shares this process's memory and must not
// allocate) and the errno it leaves when it cannot run the program.
struct ChildArgs {
  const char* program;
  char* const* argv;
  char* const* envp;
  const std::pair<int, int>* fds;
  size_t fd_count;
  const char* cwd;  // null: inherit
  bool own_process_group;
  pid_t parent;
  volatile int error;
};

// The child between the clone and the program, with async-signal-safe calls only (it runs on its own stack in this
// process's memory, with this thread suspended until it execs or exits, as posix_spawn's child does).
int ChildMain(void* p) {
  auto* a = static_cast<ChildArgs*>(p);
  auto fail = [a](int err) {
    a->error = err;
    ::_exit(127);
  };
  // A handler must not run here (it would run on this process's data): every handled signal back to its default
  // while all are still blocked (the parent blocked them for the clone). SIGPIPE, SIGINT and SIGTERM to their
  // defaults even where this process ignores them: a compiler must be able to die of them.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa {};
    if (::sigaction(sig, nullptr, &sa) != 0) continue;
    const bool forced = sig == SIGPIPE || sig == SIGINT || sig == SIGTERM;
    if (sa.sa_handler == SIG_DFL || (sa.sa_handler == SIG_IGN && !forced)) continue;
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    ::sigaction(sig, &sa, nullptr);
  }
  if (a->own_process_group && ::setpgid(0, 0) != 0) fail(errno);
  // Dies with the thread that started it. Should that thread (or opprobe) have gone already, the signal was missed.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
  if (::getppid() != a->parent) fail(ESRCH);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) fail(errno);
  if (::dup2(null_fd, 0) < 0) fail(errno);
  for (size_t i = 0; i < a->fd_count; ++i) {
    const auto [from, to] = a->fds[i];
    if (from == to) {
      if (::fcntl(to, F_SETFD, 0) != 0) fail(errno);
    } else if (::dup2(from, to) < 0) {
      fail(errno);
    }
  }
  if (a->cwd && ::chdir(a->cwd) != 0) fail(errno);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(a->program, a->argv, a->envp);
  fail(errno);
  return 127;
}

}  // namespace

int SpawnChild(const SpawnSpec& spec, pid_t& pid) {
  pid = -1;
  std::vector<std::string> argv_s = spec.argv, env_s = spec.env;
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  ChildArgs args{spec.program.c_str(),   argv.data(),     envp.data(),
                 spec.fds.data(),        spec.fds.size(), spec.cwd.empty() ? nullptr : spec.cwd.c_str(),
                 spec.own_process_group, ::getpid(),      0};
  constexpr size_t kStackBytes = 64 * 1024;
  std::unique_ptr<char[]> stack(new char[kStackBytes]);
  // clone() wants the stack's top aligned to 16 bytes: an address rounded down, made a pointer again.
  void* stack_top =  // NOLINTNEXTLINE(performance-no-int-to-ptr)
      reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(stack.get() + kStackBytes) & ~uintptr_t{15});

  // Registered under the guard, so that an exit cleanup that has begun does not miss it (and one that begins waits).
  exit_cleanup::StartGuard guard;
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = 0;
  pid_t child = ::clone(ChildMain, stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  if (child < 0) {
    rc = errno;
  } else if (args.error != 0) {  // it could not run the program: reap it
    rc = args.error;
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {}
  } else {
    exit_cleanup::AddChild(child, spec.own_process_group);
    pid = child;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc;
}

void TailBuffer::Append(const char* data, size_t n) {
  total_ += static_cast<int64_t>(n);
  if (limit_ == 0) return;
  if (n >= limit_) {
    buf_.assign(data + (n - limit_), limit_);
    return;
  }
  buf_.append(data, n);
  // Trim lazily, when the buffer holds twice the limit, so appends stay amortised O(n).
  if (buf_.size() > 2 * limit_) buf_.erase(0, buf_.size() - limit_);
}

std::string TailBuffer::str() const {
  if (buf_.size() <= limit_) return buf_;
  return buf_.substr(buf_.size() - limit_);
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return fmt::format("signal {}", sig);
  }
}

std::string SubprocessResult::Describe() const {
  if (timed_out) return fmt::format("timed out after {:.1f} s", wall_seconds);
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, SignalName(signal));
  return fmt::format("exit status {}", exit_code);
}

std::optional<std::string> FindProgram(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    if (IsExecutableFile(program)) return program;
    return std::nullopt;
  }
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = fmt::format("{}/{}", dir, program);
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

Expected<SubprocessResult> RunSubprocess(const SubprocessOptions& options) {
  if (options.argv.empty()) return Internal("RunSubprocess: empty argv");
  auto program = FindProgram(options.argv[0]);
  if (!program) return Unavailable(fmt::format("program '{}' not found or not executable", options.argv[0]));

  SpawnSpec spec;
  spec.program = *program;
  spec.argv = options.argv;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    bool replaced = false;
    for (const auto& [k, v] : options.env)
      if (entry.compare(0, k.size() + 1, k + "=") == 0) replaced = true;
    if (!replaced) spec.env.push_back(std::move(entry));
  }
  for (const auto& [k, v] : options.env) spec.env.push_back(fmt::format("{}={}", k, v));
  spec.cwd = options.cwd;

  // O_CLOEXEC so that children spawned concurrently by other threads do not inherit our pipe ends.
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Internal(fmt::format("pipe: {}", std::strerror(errno)));
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Internal(fmt::format("pipe: {}", std::strerror(errno)));
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);
  spec.fds = {{out_w.fd, 1}, {err_w.fd, 2}};

  auto start = Clock::now();
  pid_t pid = -1;
  int rc = SpawnChild(spec, pid);
  if (rc != 0) {
    if (rc == ENOENT && !options.cwd.empty())
      return Unavailable(fmt::format("cannot start '{}' in '{}': {}", *program, options.cwd, std::strerror(rc)));
    return Unavailable(fmt::format("cannot start '{}': {}", *program, std::strerror(rc)));
  }
  out_w.reset();
  err_w.reset();
  // A pidfd lets poll() wake up when the child exits (glibc 2.36's <sys/pidfd.h> lacks extern "C").
#ifdef SYS_pidfd_open
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#else
  Fd pidfd;
#endif

  SubprocessResult result;
  TailBuffer out_tail(options.max_output_bytes), err_tail(options.max_output_bytes);
  const bool has_deadline = options.timeout_seconds > 0;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(has_deadline ? options.timeout_seconds : 0));
  bool exited = false;
  int wstatus = 0;
  std::chrono::steady_clock::time_point drain_deadline{};
  char buf[65536];

  // The child is reaped only after its group was killed and it was taken off the exit cleanup's list: until then its
  // pid (the group's id) cannot be given to another process.
  auto reap = [&]() {
    exit_cleanup::ForgetChild(pid);
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {}
    exited = true;
  };
  auto try_reap = [&]() {
    if (exited) return;
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      // Kill whatever the child left behind in its group; they would otherwise hold our pipes open.
      ::kill(-pid, SIGKILL);
      reap();
      drain_deadline = Clock::now() + std::chrono::milliseconds(500);
    }
  };

  while (true) {
    try_reap();
    if (exited && out_r.fd < 0 && err_r.fd < 0) break;
    auto now = Clock::now();
    if (exited && now >= drain_deadline) break;
    if (!exited && has_deadline && now >= deadline) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      reap();
      drain_deadline = Clock::now() + std::chrono::milliseconds(200);
      continue;
    }
    pollfd fds[3];
    int n = 0;
    int out_idx = -1, err_idx = -1;
    if (out_r.fd >= 0) out_idx = n, fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) err_idx = n, fds[n++] = {err_r.fd, POLLIN, 0};
    if (!exited && pidfd.fd >= 0) fds[n++] = {pidfd.fd, POLLIN, 0};
    auto limit = exited ? drain_deadline : (has_deadline ? deadline : now + std::chrono::seconds(3600));
    // Without a pidfd, wake up regularly to reap the child.
    if (pidfd.fd < 0 && !exited) limit = std::min(limit, now + std::chrono::milliseconds(10));
    if (n == 0) {
      std::this_thread::sleep_until(std::min(limit, now + std::chrono::milliseconds(5)));
      continue;
    }
    int timeout_ms = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(limit - now).count() + 1));
    int pr = ::poll(fds, static_cast<nfds_t>(n), timeout_ms);
    if (pr < 0 && errno != EINTR) break;
    auto drain = [&](int idx, Fd& fd, TailBuffer& tail) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t got = ::read(fd.fd, buf, sizeof buf);
      if (got > 0) {
        tail.Append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fd.reset();
      }
    };
    if (pr > 0) {
      drain(out_idx, out_r, out_tail);
      drain(err_idx, err_r, err_tail);
    }
  }
  if (!exited) {  // poll failed: make sure the child does not outlive us
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    reap();
  }
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.signal = WTERMSIG(wstatus);
  result.stdout_tail = out_tail.str();
  result.stderr_tail = err_tail.str();
  result.stdout_bytes = out_tail.total();
  result.stderr_bytes = err_tail.total();
  return result;
}

}  // namespace opprobe::compiler_probe

namespace opprobe::compiler_probe {

std::string SanitizeOutput(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  while (i < text.size()) {
    unsigned char c = s[i];
    if (c < 0x80) {
      out.push_back((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? ' ' : static_cast<char>(c));
      ++i;
      continue;
    }
    int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = len > 0 && i + static_cast<size_t>(len) <= text.size();
    for (int k = 1; ok && k < len; ++k) ok = (s[i + static_cast<size_t>(k)] & 0xC0) == 0x80;
    if (ok) {
      uint32_t cp = c & (0x7F >> len);
      for (int k = 1; k < len; ++k) cp = (cp << 6) | (s[i + static_cast<size_t>(k)] & 0x3F);
      // Reject overlong forms, surrogates and values beyond U+10FFFF.
      static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(text.substr(i, static_cast<size_t>(len)));
      i += static_cast<size_t>(len);
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

std::string FirstLine(std::string_view text, size_t max_chars) {
  std::string clean = SanitizeOutput(text);
  size_t start = clean.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  size_t end = clean.find('\n', start);
  std::string line = clean.substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.pop_back();
  if (line.size() > max_chars) line = line.substr(0, max_chars) + "...";
  return line;
}

std::string LastLines(std::string_view text, int max_lines, size_t max_chars) {
  std::string clean = SanitizeOutput(text);
  std::vector<std::string> lines;
  size_t end = clean.size();
  while (end > 0 && static_cast<int>(lines.size()) < max_lines) {
    size_t nl = clean.rfind('\n', end - 1);
    size_t begin = nl == std::string::npos ? 0 : nl + 1;
    std::string line = clean.substr(begin, end - begin);
    size_t a = line.find_first_not_of(" \t\r");
    size_t b = line.find_last_not_of(" \t\r");
    if (a != std::string::npos) lines.insert(lines.begin(), line.substr(a, b - a + 1));
    if (nl == std::string::npos) break;
    end = nl;
  }
  std::string joined;
  for (const auto& l : lines) joined += (joined.empty() ? "" : " | ") + l;
  for (char& c : joined)
    if (c == '\t') c = ' ';
  if (joined.size() > max_chars) {
    size_t cut = joined.size() - max_chars;
    while (cut < joined.size() && (static_cast<unsigned char>(joined[cut]) & 0xC0) == 0x80) ++cut;  // UTF-8 boundary
    joined = "..." + joined.substr(cut);
  }
  return joined;
}

}  // namespace opprobe::compiler_probe
