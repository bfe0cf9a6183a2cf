// The native worker program, opprobe-pjrt-worker (built by compiler_probe/CMakeLists.txt with
// OPPROBE_PJRT_WORKER_MAIN; in the opprobe_compiler_probe library this file compiles to nothing): it loads one PJRT
// plugin (PjrtSession) and serves the requests of compiler_probe/worker's protocol on fd 3, until opprobe closes the
// socket or dies (PR_SET_PDEATHSIG). compiler_probe/worker/process.h starts it.
//
//   opprobe-pjrt-worker --parent=PID [--topology=NAME] PLUGIN [name=value ...]
//
// A topology named `-` is the empty name (the GPU plugin's, whose options describe the device).
#ifdef OPPROBE_PJRT_WORKER_MAIN
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler_probe/pjrt/pjrt_session.h"
#include "compiler_probe/worker/protocol.h"
#include "support/numbers.h"

namespace opprobe::compiler_probe::pjrt {
namespace {

using worker::PluginOption;
using worker::RunResult;

int ServeWorker(int sock, const std::string& plugin_path, const std::string& topology,
                const std::vector<PluginOption>& options) {
  auto session = topology.empty() ? PjrtSession::Load(plugin_path, options)
                                  : PjrtSession::LoadTopology(plugin_path, topology == "-" ? "" : topology, options);
  if (!session.ok()) {
    worker::WriteMessageBlocking(sock, worker::EncodeRefusal(session.status().message()));
    return 0;
  }
  if (!worker::WriteMessageBlocking(sock, worker::EncodeGreeting((*session)->info()))) return 0;
  std::string body;
  while (worker::ReadMessageBlocking(sock, body)) {
    RunResult res;
    auto request = worker::DecodeRequest(body);
    if (!request) {
      res.stage = RunResult::Stage::kCompile;
      res.code = 13;
      res.message = "opprobe worker: malformed request";
    } else if (request->flags & worker::kRequestCompileProgram) {
      res = (*session)->CompileProgram(request->hlo_module_proto, request->compile_options);
    } else {
      res =
          (*session)->Run(request->hlo_module_proto, request->inputs, (request->flags & worker::kRequestExecute) != 0);
    }
    if (!worker::WriteMessageBlocking(sock, worker::EncodeReply(res))) break;
    std::fflush(stdout);
    std::fflush(stderr);
  }
  return 0;
}

int WorkerMain(int argc, char** argv) {
  // argv: --parent=PID [--topology=NAME] PLUGIN [name=value ...]; the request socket is fd 3.
  if (argc < 3 || std::strncmp(argv[1], "--parent=", 9) != 0) {
    std::fprintf(
        stderr,
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
  const std::optional<pid_t> parent = opprobe::support::ParseInteger<pid_t>(argv[1] + 9);
  if (!parent) return 64;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != *parent) return 0;
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

}  // namespace
}  // namespace opprobe::compiler_probe::pjrt

int main(int argc, char** argv) { return opprobe::compiler_probe::pjrt::WorkerMain(argc, argv); }
#endif
