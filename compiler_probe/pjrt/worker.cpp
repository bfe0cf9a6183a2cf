#include "compiler_probe/pjrt/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

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

namespace opprobe::compiler_probe::pjrt {

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

// A minimal binary codec for the worker protocol (both ends are the same binary).
// One message: its length, then its body. The length's place is kept at the front and filled in by Framed(), so a
// message of hundreds of megabytes (a batch's inputs) is not copied behind its length; `reserve` is the body's
// expected size, for one allocation.
class Writer {
 public:
  explicit Writer(size_t reserve = 0) {
    out_.reserve(sizeof(uint64_t) + reserve);
    out_.append(sizeof(uint64_t), '\0');
  }
  template <typename T>
  void Pod(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Str(const std::string& s) {
    Pod<uint64_t>(s.size());
    out_.append(s);
  }
  void Array(const HostArray& a) {
    Pod<int32_t>(a.type);
    Pod<uint32_t>(static_cast<uint32_t>(a.dims.size()));
    for (int64_t d : a.dims) Pod<int64_t>(d);
    Str(a.data);
  }
  static size_t ArraySize(const HostArray& a) { return 4 + 4 + 8 * a.dims.size() + 8 + a.data.size(); }
  // The message, ready to send; the writer is left empty.
  std::string Framed() {
    const uint64_t n = out_.size() - sizeof n;
    std::memcpy(out_.data(), &n, sizeof n);
    return std::move(out_);
  }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  bool Pod(T& v) {
    if (pos_ + sizeof v > in_.size()) return false;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool Str(std::string& s) {
    uint64_t n = 0;
    if (!Pod(n) || n > in_.size() - pos_) return false;
    s.assign(in_, pos_, n);
    pos_ += n;
    return true;
  }
  bool Array(HostArray& a) {
    int32_t type = 0;
    uint32_t rank = 0;
    if (!Pod(type) || !Pod(rank) || rank > 64) return false;
    a.type = type;
    a.dims.resize(rank);
    for (auto& d : a.dims)
      if (!Pod(d)) return false;
    return Str(a.data);
  }
  bool at_end() const { return pos_ >= in_.size(); }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

// Blocking I/O for the worker side.
bool WriteAllBlocking(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool ReadExactBlocking(int fd, char* buf, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = ::read(fd, buf + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool ReadMessageBlocking(int fd, std::string& out) {
  uint64_t n = 0;
  if (!ReadExactBlocking(fd, reinterpret_cast<char*>(&n), sizeof n)) return false;
  if (n > (uint64_t{1} << 36)) return false;
  out.assign(n, '\0');
  return ReadExactBlocking(fd, out.data(), n);
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
  return Unavailable(fmt::format(
      "pjrt backend: the helper program {} was found neither at {} nor on PATH (set OPPROBE_PJRT_WORKER)",
      kWorkerProgram, io::DescribePlaces(places)));
}

// Request flags (the first byte of a request): execute the compiled program, or compile it (for the session's
// topology, or with its client) with the compile options that follow the inputs and reply with its statistics.
constexpr uint8_t kRequestExecute = 1;
constexpr uint8_t kRequestCompileProgram = 2;

void WriteStats(Writer& w, const CompileStats& st) {
  w.Pod<uint8_t>(1);
  w.Pod<uint8_t>(st.has_memory ? 1 : 0);
  for (int64_t v : {st.memory.generated_code_bytes, st.memory.argument_bytes, st.memory.output_bytes, st.memory.alias_bytes,
                    st.memory.temp_bytes,
                    st.peak_bytes})
    w.Pod<int64_t>(v);
  w.Pod<uint32_t>(static_cast<uint32_t>(st.library_calls.size()));
  for (const auto& l : st.library_calls) w.Str(l);
  w.Pod<uint32_t>(static_cast<uint32_t>(st.library_call_sites.size()));
  for (const auto& c : st.library_call_sites) {
    w.Str(c.target);
    w.Str(c.op_name);
  }
}

bool ReadStats(Reader& r, CompileStats& st) {
  uint8_t present = 0, has_memory = 0;
  if (!r.Pod(present) || !r.Pod(has_memory)) return false;
  st.present = present != 0;
  st.has_memory = has_memory != 0;
  for (int64_t* v : {&st.memory.generated_code_bytes, &st.memory.argument_bytes, &st.memory.output_bytes,
                     &st.memory.alias_bytes, &st.memory.temp_bytes,
                     &st.peak_bytes})
    if (!r.Pod(*v)) return false;
  uint32_t n = 0;
  if (!r.Pod(n) || n > 4096) return false;
  st.library_calls.resize(n);
  for (auto& l : st.library_calls)
    if (!r.Str(l)) return false;
  if (!r.Pod(n) || n > (1u << 20)) return false;
  st.library_call_sites.resize(n);
  for (auto& c : st.library_call_sites)
    if (!r.Str(c.target) || !r.Str(c.op_name)) return false;
  return true;
}

int ServeWorker(int sock, const std::string& plugin_path, const std::string& topology,
                const std::vector<PluginOption>& options) {
  auto session = topology.empty() ? PjrtSession::Load(plugin_path, options)
                                  : PjrtSession::LoadTopology(plugin_path, topology == "-" ? "" : topology, options);
  Writer hello;
  hello.Pod<uint8_t>(session.ok() ? 1 : 0);
  if (!session.ok()) {
    hello.Str(session.status().message());
    WriteAllBlocking(sock, hello.Framed());
    return 0;
  }
  const SessionInfo& info = (*session)->info();
  hello.Pod<int32_t>(info.api_major);
  hello.Pod<int32_t>(info.api_minor);
  hello.Pod<uint64_t>(info.api_struct_size);
  hello.Str(info.platform_name);
  hello.Str(info.platform_version);
  hello.Pod<int64_t>(info.num_devices);
  if (!WriteAllBlocking(sock, hello.Framed())) return 0;
  std::string request;
  while (ReadMessageBlocking(sock, request)) {
    Reader r(request);
    uint8_t flags = 0;
    std::string proto, compile_options;
    uint32_t n = 0;
    std::vector<HostArray> inputs;
    bool ok = r.Pod(flags) && r.Str(proto) && r.Pod(n);
    for (uint32_t i = 0; ok && i < n; ++i) {
      inputs.emplace_back();
      ok = r.Array(inputs.back());
    }
    if (ok && (flags & kRequestCompileProgram)) ok = r.Str(compile_options);
    RunResult res;
    if (!ok) {
      res.stage = RunResult::Stage::kCompile;
      res.code = 13;
      res.message = "opprobe worker: malformed request";
    } else if (flags & kRequestCompileProgram) {
      res = (*session)->CompileProgram(proto, compile_options);
    } else {
      res = (*session)->Run(proto, inputs, (flags & kRequestExecute) != 0);
    }
    Writer w;
    w.Pod<int32_t>(static_cast<int32_t>(res.stage));
    w.Pod<int32_t>(res.code);
    w.Str(res.message);
    w.Pod<uint32_t>(static_cast<uint32_t>(res.outputs.size()));
    for (const auto& o : res.outputs) w.Array(o);
    if (res.stats.present) WriteStats(w, res.stats);
    if (!WriteAllBlocking(sock, w.Framed())) break;
    std::fflush(stdout);
    std::fflush(stderr);
  }
  return 0;
}


int WorkerMainEntry(int argc, char** argv) {
  // argv: --parent=PID [--topology=NAME] PLUGIN [name=value ...]; the request socket is fd 3.
  if (argc < 3 || std::strncmp(argv[1], "--parent=", 9) != 0) {
    std::fprintf(stderr,
                 "usage: opprobe-pjrt-worker --parent=PID [--topology=NAME] PLUGIN [name=value ...] (started by opprobe)\n");
    return 64;
  }
  std::string topology;
  int first = 2;
  if (std::strncmp(argv[2], "--topology=", 11) == 0) {
    topology = argv[2] + 11;
    first = 3;
    if (argc < 4) return 64;
  }
  pid_t parent = static_cast<pid_t>(std::atol(argv[1] + 9));
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 0;
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGINT, SIG_IGN);  // the parent decides when the worker ends
  std::vector<PluginOption> options;
  for (int i = first + 1; i < argc; ++i) {
    std::string kv = argv[i];
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    options.push_back(PluginOption::Parse(kv.substr(0, eq), kv.substr(eq + 1)));
  }
  return ServeWorker(3, argv[first], topology, options);
}

Expected<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(const std::string& plugin_path,
                                                              const std::vector<PluginOption>& options,
                                                              double load_timeout_seconds,
                                                              const std::vector<std::string>& launcher) {
  WorkerLaunch launch;
  launch.plugin_path = plugin_path;
  launch.options = options;
  launch.launcher = launcher;
  return Start(launch, load_timeout_seconds);
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
  spec.env.erase(std::remove_if(spec.env.begin(), spec.env.end(),
                                [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; }),
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
  Reader r(hello);
  uint8_t ok = 0;
  if (!r.Pod(ok)) return Unavailable(fmt::format("PJRT plugin '{}': malformed worker greeting", plugin_path));
  if (!ok) {
    std::string msg;
    r.Str(msg);
    return Unavailable(msg);
  }
  SessionInfo& info = w->info_;
  info.plugin_path = plugin_path;
  int32_t major = 0, minor = 0;
  uint64_t struct_size = 0;
  if (!(r.Pod(major) && r.Pod(minor) && r.Pod(struct_size) && r.Str(info.platform_name) &&
        r.Str(info.platform_version) && r.Pod(info.num_devices)))
    return Unavailable(fmt::format("PJRT plugin '{}': malformed worker greeting", plugin_path));
  info.api_major = major;
  info.api_minor = minor;
  info.api_struct_size = struct_size;
  return w;
}

WorkerProcess::~WorkerProcess() { Kill(); }

void WorkerProcess::Kill() {
  if (sock_ >= 0) ::close(sock_), sock_ = -1;
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    exit_cleanup::ForgetChild(pid_);  // before the reap, after which the pid may be another process's
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
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
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
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
      if (need > (uint64_t{1} << 36)) {
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
      ssize_t n = have_len ? ::read(sock_, out.data() + have, need - have) : ::read(sock_, head + have, sizeof head - have);
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
  size_t size = 1 + 8 + hlo_module_proto.size() + 4 + (compile_options ? 8 + compile_options->size() : 0);
  for (const auto& in : inputs) size += Writer::ArraySize(in);
  Writer w(size);
  w.Pod<uint8_t>(flags);
  w.Str(hlo_module_proto);
  w.Pod<uint32_t>(static_cast<uint32_t>(inputs.size()));
  for (const auto& in : inputs) w.Array(in);
  if (compile_options) w.Str(*compile_options);
  std::string frame = w.Framed();
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
      ::poll(&p, 1, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1);
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
  Reader r(reply);
  int32_t stage = 0, code = 0;
  uint32_t n = 0;
  bool ok = r.Pod(stage) && r.Pod(code) && r.Str(o.result.message) && r.Pod(n);
  for (uint32_t i = 0; ok && i < n; ++i) {
    o.result.outputs.emplace_back();
    ok = r.Array(o.result.outputs.back());
  }
  // A whole program's statistics follow the outputs (CompileProgram: the Python worker sends them too).
  if (ok && !r.at_end()) ok = ReadStats(r, o.result.stats);
  if (!ok || stage < 0 || stage > static_cast<int>(RunResult::Stage::kTransfer)) {
    Kill();
    return finish(Outcome::Kind::kProtocolError, "sent a malformed reply");
  }
  o.result.stage = static_cast<RunResult::Stage>(stage);
  o.result.code = code;
  return finish(Outcome::Kind::kDone, "");
}

}  // namespace opprobe::compiler_probe::pjrt
