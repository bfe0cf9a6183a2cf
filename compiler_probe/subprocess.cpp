#include "compiler_probe/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

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

}  // namespace

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
    std::string candidate = dir + "/" + program;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

Expected<SubprocessResult> RunSubprocess(const SubprocessOptions& options) {
  if (options.argv.empty()) return Internal("RunSubprocess: empty argv");
  auto program = FindProgram(options.argv[0]);
  if (!program) return Unavailable(fmt::format("program '{}' not found or not executable", options.argv[0]));

  // Everything the child needs is prepared before spawning (posix_spawn is safe in threaded programs).
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    bool replaced = false;
    for (const auto& [k, v] : options.env)
      if (entry.compare(0, k.size() + 1, k + "=") == 0) replaced = true;
    if (!replaced) env_storage.push_back(std::move(entry));
  }
  for (const auto& [k, v] : options.env) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  // O_CLOEXEC so that children spawned concurrently by other threads do not inherit our pipe ends.
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Internal(fmt::format("pipe: {}", std::strerror(errno)));
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Internal(fmt::format("pipe: {}", std::strerror(errno)));
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  sigaddset(&default_signals, SIGINT);
  sigaddset(&default_signals, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  auto start = Clock::now();
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, program->c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
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

  auto try_reap = [&]() {
    if (exited) return;
    pid_t r = ::waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) {
      exited = true;
      // Kill whatever the child left behind in its group; they would otherwise hold our pipes open.
      ::kill(-pid, SIGKILL);
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
      ::waitpid(pid, &wstatus, 0);
      exited = true;
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
    ::waitpid(pid, &wstatus, 0);
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
