#include "support/exit_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "support/numbers.h"

namespace opprobe::exit_cleanup {

namespace {

// The registered children: the pid to kill() (negative: the whole process group), 0 for a free slot. A table of
// atomics, so that a signal handler reads it without a lock.
constexpr size_t kMaxChildren = 4096;
std::array<std::atomic<pid_t>, kMaxChildren> g_children{};

// The registered folders: a slot is claimed (kWriting), filled, then published (kReady).
constexpr int kFree = 0, kWriting = 1, kReady = 2;
constexpr size_t kMaxFolders = 128, kMaxPath = 1024;
struct FolderSlot {
  std::atomic<int> state{kFree};
  char path[kMaxPath];
};
std::array<FolderSlot, kMaxFolders> g_folders{};

// The guard: StartGuards held now, and whether the process is ending (a cleanup has begun). A holder counts itself
// in, then looks at g_ending; a cleanup sets g_ending, then waits for the count to fall to 0. Both sequentially
// consistent: either the holder sees the end (and waits for it, uncounted) or the cleanup sees the holder (and waits
// until its child or folder is registered). Atomics only, so that a signal handler can take part.
std::atomic<int> g_holders{0};
std::atomic<bool> g_ending{false};

pid_t g_owner = 0;               // the process that installed the handlers (not a fork of it)
int g_wake[2] = {-1, -1};        // the handler's byte to the cleanup thread
std::atomic<int> g_stopping{0};  // the signal being handled, 0 before any

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT};

bool IsDotOrDotDot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// Removes `name` (relative to `dirfd`) and, when it is a folder, everything in it, with async-signal-safe calls
// only (no opendir: it allocates). A few passes over each folder, since entries removed while it is read may make
// the read skip others.
void RemoveTreeAt(int dirfd, const char* name, int depth) {
  if (::unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return;
  if ((errno != EISDIR && errno != EPERM) || depth > 32) return;
  int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[2048];
    for (int pass = 0; pass < 4; ++pass) {
      bool any = false;
      if (::lseek(fd, 0, SEEK_SET) != 0) break;
      for (;;) {
        long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
          auto* d = reinterpret_cast<LinuxDirent64*>(buf + off);
          off += d->d_reclen;
          if (IsDotOrDotDot(d->d_name)) continue;
          any = true;
          RemoveTreeAt(fd, d->d_name, depth + 1);
        }
      }
      if (!any) break;
    }
    ::close(fd);
  }
  ::unlinkat(dirfd, name, AT_REMOVEDIR);
}

// Marks the process as ending and waits (up to `max_ms`: a crash may come from a thread that holds a guard itself)
// for the guards held to be released, with async-signal-safe calls only.
void EndStarts(int max_ms) noexcept {
  g_ending.store(true);
  for (int waited = 0; g_holders.load() > 0 && waited < max_ms; ++waited) {
    timespec ms{0, 1000 * 1000};
    ::nanosleep(&ms, nullptr);
  }
}

void KillChildren() noexcept {
  for (const auto& slot : g_children) {
    const pid_t target = slot.load(std::memory_order_acquire);
    if (target == 0) continue;
    ::kill(target, SIGKILL);
    if (target < 0) ::kill(-target, SIGKILL);  // the leader, should it have left its group
  }
}

// /proc/PID/stat's state and process group; false when the process is gone.
bool ReadStat(const char* pid, char& state, pid_t& pgrp) {
  char path[64] = "/proc/";
  size_t n = std::strlen(path);
  for (const char* p = pid; *p && n + 6 < sizeof path; ++p) path[n++] = *p;
  std::memcpy(path + n, "/stat", 6);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got <= 0) return false;
  buf[got] = '\0';
  // `pid (comm) S ppid pgrp ...`: comm may hold spaces and parentheses, the last ')' ends it.
  const char* close_paren = std::strrchr(buf, ')');
  if (!close_paren || close_paren[1] != ' ') return false;
  state = close_paren[2];
  // Then " ppid pgrp ...", one space apart.
  std::string_view rest(close_paren + 3);
  size_t first = rest.find(' ', 1), second = rest.find(' ', first + 1);
  if (rest.empty() || rest[0] != ' ' || first == std::string_view::npos || second == std::string_view::npos)
    return false;
  auto group = support::ParseInteger<pid_t>(rest.substr(first + 1, second - first - 1));
  if (!group) return false;
  pgrp = *group;
  return true;
}

// Whether a process that `targets` (AddChild's pids: negative for a group) names is still running (not a zombie).
bool AnyRunning(const std::vector<pid_t>& targets) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return false;
  bool running = false;
  while (dirent* e = ::readdir(proc)) {
    const std::optional<pid_t> pid = support::ParseInteger<pid_t>(e->d_name);
    if (!pid) continue;  // not a process's folder
    char state = 0;
    pid_t pgrp = 0;
    if (!ReadStat(e->d_name, state, pgrp) || state == 'Z' || state == 'X') continue;
    for (pid_t t : targets)
      if (t == *pid || t == -pgrp || -t == *pid) running = true;
    if (running) break;
  }
  ::closedir(proc);
  return running;
}

void WriteStderr(const char* text) {
  ssize_t ignored = ::write(2, text, std::strlen(text));
  (void)ignored;
}

// Ends the process by `sig`'s default action (its status says the signal), or 128+sig should that not end it.
[[noreturn]] void EndBy(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

// The cleanup thread: sleeps on the pipe until a stop signal's handler writes to it.
void CleanupThread() {
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the handlers run on the other threads
  char byte = 0;
  while (::read(g_wake[0], &byte, 1) != 1)
    if (errno != EINTR) return;
  const int sig = g_stopping.load();
  char line[128];
  std::snprintf(line, sizeof line,
                "opprobe: SIG%s: stopping its compilers and workers, removing its temporary folders\n",
                sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
  WriteStderr(line);
  EndStarts(10 * 1000);  // whatever starts after this waits for the end
  std::vector<pid_t> targets;
  for (const auto& slot : g_children)
    if (pid_t t = slot.load(std::memory_order_acquire); t != 0) targets.push_back(t);
  KillChildren();
  // SIGKILL is not instant: a child tearing down a large address space, or one in an uninterruptible wait, takes a
  // moment. Its folders are removed after it is gone, so that it cannot write into them again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (AnyRunning(targets) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (auto& slot : g_folders) {
    if (slot.state.load(std::memory_order_acquire) != kReady) continue;
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::error_code ec;
      std::filesystem::remove_all(slot.path, ec);
      if (!std::filesystem::exists(slot.path, ec)) break;
    }
  }
  EndBy(sig);
}

void OnStopSignal(int sig) {
  const int saved_errno = errno;
  if (::getpid() != g_owner) {  // a fork of opprobe about to run another program: as if not handled
    signal(sig, SIG_DFL);
    ::raise(sig);
    errno = saved_errno;
    return;
  }
  int none = 0;
  if (g_stopping.compare_exchange_strong(none, sig)) {
    const char byte = static_cast<char>(sig);
    ssize_t ignored = ::write(g_wake[1], &byte, 1);
    (void)ignored;
    errno = saved_errno;
    return;
  }
  // A second signal while the first one's cleanup runs (it waits for children to die): end now.
  CleanUpNow();
  EndBy(sig);
}

void OnCrashSignal(int sig) {
  CleanUpNow();
  // The signal's own action from here: raised now (it is blocked in its handler, so it arrives on return), and a
  // fault's instruction runs again on return and faults again.
  signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

StartGuard::StartGuard() {
  g_holders.fetch_add(1);
  if (!g_ending.load()) return;
  // The process is ending: nothing starts any more, and this thread waits for the end.
  g_holders.fetch_sub(1);
  for (;;) ::pause();
}

StartGuard::~StartGuard() { g_holders.fetch_sub(1); }

bool AddChild(pid_t pid, bool group) {
  if (pid <= 0) return false;
  const pid_t target = group ? -pid : pid;
  for (auto& slot : g_children) {
    pid_t free_slot = 0;
    if (slot.compare_exchange_strong(free_slot, target, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void ForgetChild(pid_t pid) {
  if (pid <= 0) return;
  StartGuard guard;  // not while the cleanup runs: the pid must not be reaped (and reused) under its kill
  for (auto& slot : g_children) {
    pid_t v = slot.load(std::memory_order_relaxed);
    if (v == pid || v == -pid) {
      slot.store(0, std::memory_order_release);
      return;
    }
  }
}

bool AddFolder(const std::string& path) {
  if (path.empty() || path.size() >= kMaxPath) return false;
  for (auto& slot : g_folders) {
    int free_slot = kFree;
    if (!slot.state.compare_exchange_strong(free_slot, kWriting, std::memory_order_acq_rel)) continue;
    std::memcpy(slot.path, path.c_str(), path.size() + 1);
    slot.state.store(kReady, std::memory_order_release);
    return true;
  }
  return false;
}

void ForgetFolder(const std::string& path) {
  StartGuard guard;
  for (auto& slot : g_folders)
    if (slot.state.load(std::memory_order_acquire) == kReady && path == slot.path) {
      slot.state.store(kFree, std::memory_order_release);
      return;
    }
}

void CleanUpNow() noexcept {
  if (g_owner != 0 && ::getpid() != g_owner) return;
  const int saved_errno = errno;
  EndStarts(1000);  // a compiler started after the kill below would otherwise outlive opprobe with what it starts
  KillChildren();
  for (auto& slot : g_folders)
    if (slot.state.load(std::memory_order_acquire) == kReady) RemoveTreeAt(AT_FDCWD, slot.path, 0);
  errno = saved_errno;
}

void InstallSignalHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_owner = ::getpid();
    if (::pipe2(g_wake, O_CLOEXEC) != 0) return;
    std::thread(CleanupThread).detach();
    auto install = [](int sig, void (*handler)(int)) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) return;  // ignored stays ignored
      struct sigaction action {};
      action.sa_handler = handler;
      action.sa_flags = SA_RESTART;
      sigemptyset(&action.sa_mask);
      for (int s : kStopSignals) sigaddset(&action.sa_mask, s);
      ::sigaction(sig, &action, nullptr);
    };
    for (int sig : kStopSignals) install(sig, OnStopSignal);
    for (int sig : kCrashSignals) install(sig, OnCrashSignal);
  });
}

}  // namespace opprobe::exit_cleanup
