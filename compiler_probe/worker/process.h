// A worker: a child process that loads a compiler once and serves compile-and-run requests over a socket
// (protocol.h), so that a compiler that aborts, crashes or hangs costs one verdict, not the analysis. The worker's
// stdout and stderr (the compiler's logs) go to a pipe whose tail becomes part of crash reasons. Every backend with a
// worker starts it here: `pjrt:` and the chips' (`tpu:`, `gpu:`) the native worker program, opprobe-pjrt-worker
// (compiler_probe/pjrt), `xla:` and `iree:` the Python worker (python.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"
#include "compiler_probe/subprocess.h"
#include "compiler_probe/worker/protocol.h"
#include "support/status.h"
#include "support/temp_folder.h"

namespace opprobe::compiler_probe::worker {

// The native worker is a separate program (opprobe-pjrt-worker, built beside opprobe from compiler_probe/pjrt), so
// that the plugin is the only code in its process that registers protobuf descriptors and no forked copy of a
// threaded process is involved.
inline constexpr const char* kWorkerProgram = "opprobe-pjrt-worker";

// $OPPROBE_PJRT_WORKER, else opprobe-pjrt-worker where the running program's layout puts it (PREFIX/libexec/opprobe
// beside an installed opprobe, the build folder for a program of the build tree: support/runtime_files.h), else on
// PATH; kUnavailable when there is none.
Expected<std::string> FindWorkerProgram();

// How a worker is started: the plugin (or, for a launcher, the target it is asked to load), its create options,
// for a compile-only worker the topology it compiles for, and what its environment adds.
struct WorkerLaunch {
  std::string plugin_path;
  std::vector<PluginOption> options;    // the client's create options, or the topology's
  std::optional<std::string> topology;  // set: PjrtSession::LoadTopology with this name (may be empty)
  std::vector<std::string> env;         // NAME=VALUE entries added to (or replacing in) the environment
  // When not empty, replaces the native worker program: the start of the command line (a Python and the worker
  // script speaking the same protocol, python.h), followed by `--parent=PID PLUGIN [name=value ...]`.
  std::vector<std::string> launcher;
};

class WorkerProcess {
 public:
  // Starts the worker (from one long-lived thread: PR_SET_PDEATHSIG follows the thread that forks), in a process
  // group of its own with its own $TMPDIR, and waits up to `load_timeout_seconds` for it to load the plugin and
  // create a client. A plugin that cannot be used (or a worker that dies while loading it) is kUnavailable.
  static Expected<std::unique_ptr<WorkerProcess>> Start(const WorkerLaunch& launch, double load_timeout_seconds);
  ~WorkerProcess();  // kills the worker's process group

  const SessionInfo& info() const { return info_; }
  pid_t pid() const { return pid_; }

  struct Outcome {
    enum class Kind { kDone, kCrashed, kTimedOut, kProtocolError };
    Kind kind = Kind::kDone;
    RunResult result;      // when kDone
    std::string what;      // when not kDone: `killed by signal 11 (SIGSEGV)`, `timed out after 2.0 s`, ...
    std::string log_tail;  // what the worker printed during this request
    double seconds = 0;
  };
  // Sends one request and waits for the answer; on a timeout the worker is killed. After anything but
  // kDone the worker is gone (alive() is false) and a new one must be started.
  Outcome Run(const std::string& hlo_module_proto, const std::vector<HostArray>& inputs, bool execute,
              double timeout_seconds);
  // Compiles the module with serialized CompileOptionsProto bytes without running it: for the worker's topology, or
  // with its client's devices (result.stats set when it compiled; the Python worker sends them too).
  Outcome CompileProgram(const std::string& hlo_module_proto, const std::string& compile_options,
                         double timeout_seconds);
  bool alive() const { return pid_ > 0; }

 private:
  WorkerProcess() = default;
  Outcome Request(const std::string& hlo_module_proto, const std::vector<HostArray>& inputs, uint8_t flags,
                  const std::string* compile_options, double timeout_seconds);
  void Kill();
  void DrainLog(bool keep);
  // Reads one framed message; false (with `what` set) on EOF, timeout or a broken frame.
  bool ReadMessage(std::string& out, double timeout_seconds, std::string& what, bool& timed_out);
  std::string ReapDescription();

  std::optional<io::TempFolder> tmp_;  // the worker's $TMPDIR; declared first, so removed after the worker is gone
  pid_t pid_ = -1;
  int sock_ = -1;
  int log_fd_ = -1;
  SessionInfo info_;
  TailBuffer log_{16 * 1024};
};

// The verdict of one worker request, as every backend with a worker gives it: a crash (with the worker's last log
// lines), a timeout or a broken protocol is an `error` naming `what` (the compiler); a request that came back is
// judged by `judge`. A verdict that is not supported and has no tail of its own gets the worker's log tail.
Verdict OutcomeVerdict(const WorkerProcess::Outcome& o, const std::string& what, double timeout_seconds,
                       const std::function<Verdict(const RunResult&)>& judge);

}  // namespace opprobe::compiler_probe::worker
