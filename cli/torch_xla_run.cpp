#include "cli/torch_xla_run.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/capture_run.h"
#include "compiler_probe/subprocess.h"
#include "support/exit_cleanup.h"

extern char** environ;

namespace opprobe::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kInstall =
    "install it into that Python environment: pip install torch==2.9.0 torch_xla==2.9.0 (requirements/torch_xla.txt; "
    "scripts use the CPU PJRT device, PJRT_DEVICE=CPU), or analyze with opprobe's own lowering (drop --lowering)";

// Runs argv with `env` (a full environment); stdio inherited unless `silent` (then /dev/null).
// Returns the exit status (128+N for signal N), or -1 when exec failed.
int RunChild(const std::vector<std::string>& argv_s, const std::vector<std::string>& env_s, bool silent) {
  std::vector<char*> argv, envp;
  for (const auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env_s) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t parent = getpid();
  pid_t pid = -1;
  {
    // The script dies with opprobe (PR_SET_PDEATHSIG; this thread waits for it) and with opprobe's exit cleanup.
    exit_cleanup::StartGuard guard;
    pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      if (silent) {
        int null_fd = open("/dev/null", O_RDWR);
        dup2(null_fd, 0), dup2(null_fd, 1), dup2(null_fd, 2);
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (pid < 0) return -1;
    exit_cleanup::AddChild(pid, /*group=*/false);  // it shares opprobe's process group: the script alone
  }
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {}
  exit_cleanup::ForgetChild(pid);  // before the reap, after which the pid may be another process's
  int ws = 0;
  pid_t w;
  do { w = waitpid(pid, &ws, 0); } while (w < 0 && errno == EINTR);
  if (w < 0) return -1;
  if (WIFEXITED(ws)) return WEXITSTATUS(ws);
  if (WIFSIGNALED(ws)) return 128 + WTERMSIG(ws);
  return 128;
}

std::vector<std::string> Environment(const std::map<std::string, std::string>& set,
                                     const std::map<std::string, std::string>& defaults) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : defaults) env.emplace(k, v);
  for (const auto& [k, v] : set) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(std::string(k).append("=").append(v));
  return out;
}

// The watcher's file (capture/opprobe_capture/torch_xla_watch.py): torch_xla's version and its host fallbacks by op
// and place.
// Absent when the script died before it could be written (killed): no fallback is known then.
Status ReadFallbacks(const std::string& path, TorchXlaRun& run) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::Ok();
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const char* bad = "--lowering torch_xla: the watcher's file of host fallbacks is malformed";
  if (!doc.is_object() || !doc.contains("fallbacks") || !doc["fallbacks"].is_array()) return Internal(bad);
  run.torch_xla_version = doc.value("torch_xla", "");
  for (const auto& f : doc["fallbacks"]) {
    if (!f.is_object() || !f.contains("op") || !f["op"].is_string() || !f.contains("count") ||
        !f["count"].is_number_integer())
      return Internal(bad);
    analyzer::HostFallback h;
    h.op = f["op"].get<std::string>();
    h.overload = f.value("overload", "");
    h.file = f.value("file", "");
    h.line = f.value("line", 0);
    h.count = f["count"].get<int64_t>();
    const std::string who = run.torch_xla_version.empty() ? "torch_xla" : "torch_xla " + run.torch_xla_version;
    h.reason = h.op == "aten::_local_scalar_dense"
                   ? fmt::format(
                         "{} read a value on the host here (.item(), printing a tensor, a Python branch on "
                         "one): the graph so far is compiled and run to give it",
                         who)
                   : fmt::format(
                         "{} has no device lowering for {} and ran it on the host CPU (its {} fallback "
                         "counter): the graph is cut here and the inputs copied to the host and back",
                         who, h.op, h.op);
    if (h.count > 0) run.fallbacks.push_back(std::move(h));
  }
  return Status::Ok();
}

}  // namespace

Expected<TorchXlaRun> RunWithTorchXla(const std::vector<std::string>& command, const std::string& dump_dir) {
  const char* form = "give `-- <python> script.py args...`";
  if (command.empty()) return InvalidInput(fmt::format("--lowering torch_xla needs a script to run: {}", form));
  if (command[0].ends_with(".py"))
    return InvalidInput(fmt::format("'{}' is a script, not a Python interpreter: {}", command[0], form));
  auto python = compiler_probe::FindProgram(command[0]);
  if (!python) return InvalidInput(fmt::format("Python interpreter '{}' not found; {}", command[0], form));
  size_t i = 1;
  while (i < command.size() && command[i].starts_with("-") && command[i] != "-") ++i;
  if (i >= command.size()) return InvalidInput(fmt::format("no script given after '{}'; {}", command[0], form));
  std::error_code ec;
  if (!fs::is_regular_file(command[i], ec)) return InvalidInput(fmt::format("script not found: {}", command[i]));

  // Is the real torch_xla importable by this python?
  int probe = RunChild({*python, "-c", "import torch_xla"}, Environment({}, {{"PJRT_DEVICE", "CPU"}}), true);
  if (probe != 0)
    return Unavailable(
        fmt::format("--lowering torch_xla: the Python interpreter {} cannot import torch_xla; {}", *python, kInstall));

  auto shim = FindCaptureShim();
  if (!shim.ok()) return shim.status();
  const std::string dump = (fs::path(dump_dir) / "torch_xla.hlo").string();
  const std::string fallbacks = (fs::path(dump_dir) / "fallbacks.json").string();
  // python [its options] CAPTURE_PACKAGE torch-xla-watch OUT.json script.py args... (torch_xla_watch.py)
  std::vector<std::string> argv{*python};
  argv.insert(argv.end(), command.begin() + 1, command.begin() + static_cast<std::ptrdiff_t>(i));
  argv.push_back(*shim);
  argv.push_back("torch-xla-watch");
  argv.push_back(fallbacks);
  argv.insert(argv.end(), command.begin() + static_cast<std::ptrdiff_t>(i), command.end());
  int status = RunChild(argv,
                        Environment({{"XLA_SAVE_TENSORS_FILE", dump},
                                     {"XLA_SAVE_TENSORS_FMT", "hlo"},
                                     {"XLA_HLO_DEBUG", "1"},
                                     {"XLA_IR_DEBUG", "1"}},
                                    {{"PJRT_DEVICE", "CPU"}}),
                        false);
  if (status < 0) return InvalidInput(fmt::format("cannot run the Python interpreter {}", *python));
  TorchXlaRun run;
  run.script_status = status;
  // torch_xla appends the process ordinal (torch_xla.hlo.0, .1, ...): named <name>.<ordinal>.hlo for the loader.
  std::vector<fs::path> dumped;
  for (const auto& e : fs::directory_iterator(dump_dir, ec))
    if (e.path().filename().string().starts_with("torch_xla.hlo.") && e.file_size(ec) > 0) dumped.push_back(e.path());
  for (const auto& p : dumped) {
    fs::path renamed = p.parent_path() / ("torch_xla." + p.filename().string().substr(14) + ".hlo");
    fs::rename(p, renamed, ec);
    if (!ec) run.hlo_files.push_back(renamed.string());
  }
  std::sort(run.hlo_files.begin(), run.hlo_files.end());
  if (auto read = ReadFallbacks(fallbacks, run); !read.ok()) return read;
  if (run.hlo_files.empty())
    return InvalidInput(fmt::format(
        "--lowering torch_xla: {} emitted no HLO (exit status {}): nothing ran on the XLA device; the script must "
        "move its model and data to torch_xla.device() (xm.xla_device()) and call torch_xla.sync()/xm.mark_step()",
        command[i], status));
  return run;
}

}  // namespace opprobe::cli
