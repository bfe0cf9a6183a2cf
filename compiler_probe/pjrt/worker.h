// The pjrt backend's worker: a child process that loads the plugin once (PjrtSession) and
// serves compile-and-run requests over a socket, so that a plugin that aborts, crashes or hangs costs
// one verdict, not the analysis. The worker's stdout and stderr (the plugin's logs) go to a pipe whose
// tail becomes part of crash reasons.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler_probe/pjrt/pjrt_session.h"
#include "compiler_probe/subprocess.h"
#include "support/status.h"
#include "support/temp_folder.h"

namespace opprobe::compiler_probe::pjrt {

// The worker is a separate program (opprobe-pjrt-worker, built beside opprobe), so that the plugin is
// the only code in its process that registers protobuf descriptors and no forked copy of a threaded
// process is involved.
inline constexpr const char* kWorkerProgram = "opprobe-pjrt-worker";

// $OPPROBE_PJRT_WORKER, else opprobe-pjrt-worker where the running program's layout puts it (PREFIX/libexec/opprobe
// beside an installed opprobe, the build folder for a program of the build tree: support/runtime_files.h), else on PATH;
// kUnavailable when there is none.
Expected<std::string> FindWorkerProgram();

// The worker program's main(): `opprobe-pjrt-worker --parent=PID [--topology=NAME] PLUGIN [name=value ...]`,
// requests on fd 3 (a topology named `-` is the empty name).
int WorkerMainEntry(int argc, char** argv);

// How a worker is started: the plugin (or, for a launcher, the target it is asked to load), its create options,
// for a compile-only worker the topology it compiles for, and what its environment adds.
struct WorkerLaunch {
  std::string plugin_path;
  std::vector<PluginOption> options;             // the client's create options, or the topology's
  std::optional<std::string> topology;           // set: PjrtSession::LoadTopology with this name (may be empty)
  std::vector<std::string> env;                  // NAME=VALUE entries added to (or replacing in) the environment
  std::vector<std::string> launcher;             // see Start below
};

class WorkerProcess {
 public:
  // Forks the worker and waits up to `load_timeout_seconds` for it to load the plugin and create a
  // client. A plugin that cannot be used (or a worker that dies while loading it) is kUnavailable.
  // `launcher`, when not empty, replaces the worker program: it is the start of the command line (e.g. a
  // Python and a worker script speaking the same protocol, as the xla backend's does), followed by
  // `--parent=PID PLUGIN [name=value ...]`.
  static Expected<std::unique_ptr<WorkerProcess>> Start(const std::string& plugin_path,
                                                        const std::vector<PluginOption>& options,
                                                        double load_timeout_seconds,
                                                        const std::vector<std::string>& launcher = {});
  static Expected<std::unique_ptr<WorkerProcess>> Start(const WorkerLaunch& launch, double load_timeout_seconds);
  ~WorkerProcess();  // kills the worker's process group

  const SessionInfo& info() const { return info_; }
  pid_t pid() const { return pid_; }

  struct Outcome {
    enum class Kind { kDone, kCrashed, kTimedOut, kProtocolError };
    Kind kind = Kind::kDone;
    RunResult result;       // when kDone
    std::string what;       // when not kDone: `killed by signal 11 (SIGSEGV)`, `timed out after 2.0 s`, ...
    std::string log_tail;   // what the worker printed during this request
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

}  // namespace opprobe::compiler_probe::pjrt
