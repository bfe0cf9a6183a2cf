#include "compiler_probe/worker/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "support/exit_cleanup.h"
#include "support/runtime_files.h"

extern char** environ;

namespace opprobe::compiler_probe::worker {

namespace {

using Clock = std::chrono::steady_clock;

// A worker dies with opprobe by PR_SET_PDEATHSIG, which Linux sends when the *thread* that started the worker ends,
// not the process: a worker (re)started from a probe thread was killed as soon as that thread ended, while other
// threads, or the next analysis, still used it. Every worker is therefore started from one thread that lives as long
// as the process (never joined, never destroyed).
void RunOnSpawnerThread(const std::function<void()>& job) {
  struct Spawner {
    std::mutex one_at_a_time, mu;
    std::condition_variable cv;
    const std::function<void()>* job = nullptr;
    bool done = false;
    pid_t pid = ::getpid();  // a forked child (a Python user's multiprocessing) has no copy of the thread
  };
  static Spawner* const spawner = [] {
    auto* s = new Spawner;
    std::thread([s] {
      std::unique_lock<std::mutex> lock(s->mu);
      for (;;) {
        s->cv.wait(lock, [s] { return s->job != nullptr; });
        (*s->job)();
        s->job = nullptr;
        s->done = true;
        s->cv.notify_all();
      }
    }).detach();
    return s;
  }();
  if (spawner->pid != ::getpid()) {  // in a fork of the process that made the thread: from here, as before
    job();
    return;
  }
  std::lock_guard<std::mutex> one(spawner->one_at_a_time);
  std::unique_lock<std::mutex> lock(spawner->mu);
  spawner->job = &job;
  spawner->done = false;
  spawner->cv.notify_all();
  spawner->cv.wait(lock, [] { return spawner->done; });
}

}  // namespace

Expected<std::string> FindWorkerProgram() {
  const char* env = std::getenv("OPPROBE_PJRT_WORKER");
  if (env && *env) {
    if (auto p = FindProgram(env)) return *p;
    return Unavailable(fmt::format("pjrt backend: OPPROBE_PJRT_WORKER='{}' is not an executable program", env));
  }
  const auto places = io::HelperPlaces(kWorkerProgram);
  for (const auto& place : places)
    if (auto p = FindProgram(place.string())) return *p;
  if (auto p = FindProgram(kWorkerProgram)) return *p;
  return Unavailable(
      fmt::format("pjrt backend: the helper program {} was found neither at {} nor on PATH (set OPPROBE_PJRT_WORKER)",
                  kWorkerProgram, io::DescribePlaces(places)));
}

Expected<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(const WorkerLaunch& launch, double load_timeout_seconds) {
  const std::string& plugin_path = launch.plugin_path;
  const std::vector<PluginOption>& options = launch.options;
  const std::vector<std::string>& launcher = launch.launcher;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Internal(fmt::format("socketpair: {}", std::strerror(errno)));
  int log_pipe[2];
  if (::pipe2(log_pipe, O_CLOEXEC) != 0) {
    ::close(sv[0]), ::close(sv[1]);
    return Internal(fmt::format("pipe: {}", std::strerror(errno)));
  }
  auto worker_path = launcher.empty() ? FindWorkerProgram() : Expected<std::string>(launcher[0]);
  if (!worker_path.ok()) {
    ::close(sv[0]), ::close(sv[1]), ::close(log_pipe[0]), ::close(log_pipe[1]);
    return worker_path.status();
  }
  std::vector<std::string> args = launcher.empty() ? std::vector<std::string>{*worker_path} : launcher;
  args.push_back(fmt::format("--parent={}", ::getpid()));
  // An empty topology name (the GPU plugin's, whose options describe the device) travels as `-`.
  if (launch.topology) args.push_back("--topology=" + (launch.topology->empty() ? std::string("-") : *launch.topology));
  args.push_back(plugin_path);
  for (const auto& o : options) {
    switch (o.type) {
      case PluginOption::Type::kString: args.push_back(o.name + "=" + o.string_value); break;
      case PluginOption::Type::kInt64: args.push_back(fmt::format("{}={}", o.name, o.int_value)); break;
      case PluginOption::Type::kFloat: args.push_back(fmt::format("{}={}", o.name, o.float_value)); break;
      case PluginOption::Type::kBool: args.push_back(o.name + (o.bool_value ? "=true" : "=false")); break;
    }
  }
  SpawnSpec spec;
  spec.program = *worker_path;
  spec.argv = std::move(args);
  spec.fds = {{log_pipe[1], 1}, {log_pipe[1], 2}, {sv[1], 3}};
  // The worker's environment: ours, with launch.env's NAME=VALUE entries in place of any of the same name.
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& x : launch.env)
      if (std::string_view(x).substr(0, x.find('=')) == name) replaced = true;
    if (!replaced) spec.env.emplace_back(entry);
  }
  for (const auto& x : launch.env) spec.env.push_back(x);
  // The worker's own temporary folder, removed with it (and by opprobe's signal cleanup): whatever the compiler
  // writes to $TMPDIR (XLA's GPU compiler hands ptxas its PTX in a `tempfile-*` file) goes with it, even when the
  // worker is killed mid-compile.
  auto tmp = io::TempFolder::Create("opprobe-worker-");
  if (!tmp.ok()) {
    ::close(sv[0]), ::close(sv[1]), ::close(log_pipe[0]), ::close(log_pipe[1]);
    return tmp.status();
  }
  spec.env.erase(
      std::remove_if(spec.env.begin(), spec.env.end(), [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; }),
      spec.env.end());
  spec.env.push_back("TMPDIR=" + tmp->path());
  pid_t pid = -1;
  int rc = 0;
  RunOnSpawnerThread([&] { rc = SpawnChild(spec, pid); });
  if (rc != 0) {
    ::close(sv[0]), ::close(sv[1]), ::close(log_pipe[0]), ::close(log_pipe[1]);
    return Unavailable(fmt::format("pjrt backend: cannot start '{}': {}", *worker_path, std::strerror(rc)));
  }
  ::close(sv[1]);
  ::close(log_pipe[1]);
  std::unique_ptr<WorkerProcess> w(new WorkerProcess());
  w->tmp_ = std::move(*tmp);
  w->pid_ = pid;
  w->sock_ = sv[0];
  w->log_fd_ = log_pipe[0];
  ::fcntl(w->sock_, F_SETFL, ::fcntl(w->sock_, F_GETFL) | O_NONBLOCK);
  ::fcntl(w->log_fd_, F_SETFL, ::fcntl(w->log_fd_, F_GETFL) | O_NONBLOCK);

  std::string hello, what;
  bool timed_out = false;
  if (!w->ReadMessage(hello, load_timeout_seconds, what, timed_out)) {
    std::string log = LastLines(w->log_.str(), 3);
    return Unavailable(fmt::format("PJRT plugin '{}': the worker {} while loading it{}", plugin_path, what,
                                   log.empty() ? "" : ": " + log));
  }
  auto greeting = DecodeGreeting(hello);
  if (!greeting) return Unavailable(fmt::format("PJRT plugin '{}': malformed worker greeting", plugin_path));
  if (!greeting->loaded) return Unavailable(greeting->refusal);
  w->info_ = std::move(greeting->info);
  w->info_.plugin_path = plugin_path;
  return w;
}

WorkerProcess::~WorkerProcess() { Kill(); }

void WorkerProcess::Kill() {
  if (sock_ >= 0) ::close(sock_), sock_ = -1;
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    exit_cleanup::ForgetChild(pid_);  // before the reap, after which the pid may be another process's
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    pid_ = -1;
  }
  if (log_fd_ >= 0) ::close(log_fd_), log_fd_ = -1;
}

void WorkerProcess::DrainLog(bool keep) {
  if (log_fd_ < 0) return;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(log_fd_, buf, sizeof buf);
    if (n > 0) {
      if (keep) log_.Append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) ::close(log_fd_), log_fd_ = -1;
    break;
  }
}

std::string WorkerProcess::ReapDescription() {
  if (pid_ <= 0) return "exited";
  int status = 0;
  // The worker closed its socket; give it a moment to finish dying (seen without reaping it), then make sure it is
  // gone, with anything it left in its group, before it is reaped (its pid, the group's id, is ours until then).
  bool dead = false;
  for (int i = 0; i < 200 && !dead; ++i) {
    siginfo_t info{};
    dead = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
    if (!dead) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid_, SIGKILL);
  if (!dead) ::kill(pid_, SIGKILL);
  exit_cleanup::ForgetChild(pid_);
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
  pid_ = -1;
  DrainLog(true);
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), SignalName(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "died";
}

bool WorkerProcess::ReadMessage(std::string& out, double timeout_seconds, std::string& what, bool& timed_out) {
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  // The length first, then the body read straight into `out` (no chunks appended and copied again).
  char head[8];
  size_t have = 0;  // bytes of the length read, then of the body
  bool have_len = false;
  uint64_t need = 0;
  while (true) {
    if (!have_len && have == sizeof head) {
      std::memcpy(&need, head, sizeof need);
      if (need > kMaxMessageBytes) {
        what = fmt::format("sent a message of {} bytes", need);
        Kill();
        return false;
      }
      have_len = true;
      have = 0;
      out.assign(need, '\0');
    }
    if (have_len && have == need) return true;
    auto now = Clock::now();
    if (now >= deadline) {
      timed_out = true;
      what = fmt::format("timed out after {:.1f} s", std::chrono::duration<double>(now - start).count());
      DrainLog(true);
      Kill();
      return false;
    }
    pollfd fds[2] = {{sock_, POLLIN, 0}, {log_fd_, POLLIN, 0}};
    int nfds = log_fd_ >= 0 ? 2 : 1;
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    int pr = ::poll(fds, static_cast<nfds_t>(nfds), ms);
    if (pr < 0 && errno != EINTR) {
      what = fmt::format("could not be polled: {}", std::strerror(errno));
      Kill();
      return false;
    }
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP))) DrainLog(true);
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n =
          have_len ? ::read(sock_, out.data() + have, need - have) : ::read(sock_, head + have, sizeof head - have);
      if (n > 0) {
        have += static_cast<size_t>(n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        what = ReapDescription();
        Kill();
        return false;
      }
    }
  }
}

WorkerProcess::Outcome WorkerProcess::Run(const std::string& hlo_module_proto, const std::vector<HostArray>& inputs,
                                          bool execute, double timeout_seconds) {
  return Request(hlo_module_proto, inputs, execute ? kRequestExecute : 0, nullptr, timeout_seconds);
}

WorkerProcess::Outcome WorkerProcess::CompileProgram(const std::string& hlo_module_proto,
                                                     const std::string& compile_options, double timeout_seconds) {
  return Request(hlo_module_proto, {}, kRequestCompileProgram, &compile_options, timeout_seconds);
}

WorkerProcess::Outcome WorkerProcess::Request(const std::string& hlo_module_proto, const std::vector<HostArray>& inputs,
                                              uint8_t flags, const std::string* compile_options,
                                              double timeout_seconds) {
  Outcome o;
  auto start = Clock::now();
  DrainLog(false);
  log_ = TailBuffer(16 * 1024);
  auto finish = [&](Outcome::Kind kind, std::string what) {
    o.kind = kind;
    o.what = std::move(what);
    o.log_tail = log_.str();
    o.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return o;
  };
  if (!alive()) return finish(Outcome::Kind::kCrashed, "is not running");
  std::string frame = EncodeRequest(flags, hlo_module_proto, inputs, compile_options);
  // Non-blocking send with the same deadline, so a hung worker cannot block us.
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(sock_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      auto now = Clock::now();
      if (now >= deadline) {
        DrainLog(true);
        Kill();
        return finish(Outcome::Kind::kTimedOut, fmt::format("timed out after {:.1f} s", timeout_seconds));
      }
      pollfd p{sock_, POLLOUT, 0};
      ::poll(&p, 1,
             static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1);
      DrainLog(true);
      continue;
    }
    std::string what = ReapDescription();
    Kill();
    return finish(Outcome::Kind::kCrashed, what);
  }
  std::string reply, what;
  bool timed_out = false;
  double left = std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
  if (!ReadMessage(reply, left, what, timed_out))
    return finish(timed_out ? Outcome::Kind::kTimedOut : Outcome::Kind::kCrashed, what);
  DrainLog(true);
  auto result = DecodeReply(reply);
  if (!result) {
    Kill();
    return finish(Outcome::Kind::kProtocolError, "sent a malformed reply");
  }
  o.result = std::move(*result);
  return finish(Outcome::Kind::kDone, "");
}

Verdict OutcomeVerdict(const WorkerProcess::Outcome& o, const std::string& what, double timeout_seconds,
                       const std::function<Verdict(const RunResult&)>& judge) {
  Verdict v;
  switch (o.kind) {
    case WorkerProcess::Outcome::Kind::kCrashed: {
      std::string last = LastLines(o.log_tail, 2);
      v = Verdict::Error(fmt::format("{} crashed: the worker {}{}", what, o.what, last.empty() ? "" : ": " + last));
      break;
    }
    case WorkerProcess::Outcome::Kind::kTimedOut:
      v = Verdict::Error(fmt::format("{} {} (probe timeout {:g} s)", what, o.what, timeout_seconds));
      break;
    case WorkerProcess::Outcome::Kind::kProtocolError:
      v = Verdict::Error(fmt::format("{} worker {}", what, o.what));
      break;
    case WorkerProcess::Outcome::Kind::kDone: v = judge(o.result); break;
  }
  v.seconds = o.seconds;
  if (!v.supported() && v.output_tail.empty() && !o.log_tail.empty()) {
    constexpr size_t kTail = 4096;
    v.output_tail =
        SanitizeOutput(o.log_tail.size() > kTail ? o.log_tail.substr(o.log_tail.size() - kTail) : o.log_tail);
  }
  return v;
}

}  // namespace opprobe::compiler_probe::worker
