// `pjrt:PLUGIN.so[,key=value...]`: compiles each probe unit with a real PJRT plugin (format "hlo",
// a serialized HloModuleProto), runs it on deterministic random inputs seeded from the fingerprint,
// and compares the results with the built-in evaluator (`interp`). A compile or execute failure is
// `unsupported`; results beyond the element type's tolerance are `unsupported: numerics ...`; a plugin
// that crashes or hangs is an `error` for that unit (the plugin runs in a worker process, restarted
// after a crash). The key=value pairs are passed to PJRT_Client_Create as typed create options.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"
#include "compiler_probe/pjrt/pjrt_session.h"
#include "compiler_probe/pjrt/worker.h"
#include "compiler_probe/registry.h"
#include "hlo/literal.h"
#include "support/status.h"

namespace opprobe::compiler_probe::pjrt {

struct PjrtSpec {
  std::string plugin_path;
  std::vector<PluginOption> options;
};
// Parses `PLUGIN.so[,key=value...]` (the part after `pjrt:`); a bad option is a usage error.
Expected<PjrtSpec> ParsePjrtSpec(const std::string& arg);

// Starts the worker (which loads the plugin and creates a client). Not a file, not a PJRT plugin, an
// unsupported API version or a failing client: kUnavailable (exit 3). id() is `pjrt:` + arg;
// version() names the platform, the plugin's PJRT API version and the plugin file's size and mtime.
Expected<std::unique_ptr<Backend>> CreatePjrtBackend(const std::string& arg, const BackendOptions& options);

// A backend whose worker is another program speaking the pjrt worker's protocol (worker.h), such as the
// xla backend's Python worker: the same inputs, comparison with interp, crash and timeout handling as
// `pjrt:`. version() is the platform version the worker greets with, plus the evaluator revision.
struct WorkerBackendSpec {
  std::string id;                     // `xla:cpu`
  std::string what;                   // names the compiler in reasons: `XLA` -> `XLA crashed: ...`
  std::vector<std::string> launcher;  // the start of the worker's command line (WorkerProcess::Start)
  std::string target;                 // what the worker is asked to load, in place of a plugin path (`cpu`)
  std::vector<PluginOption> options;  // `name=value` words after the target (the Python worker's compile_timeout)
};
Expected<std::unique_ptr<Backend>> CreateWorkerBackend(WorkerBackendSpec spec, const BackendOptions& options);

// The verdict of one worker request (worker.h), as every backend with a worker gives it: a crash (with the worker's
// last log lines), a timeout or a broken protocol is an `error` naming `what` (the compiler); a request that came back
// is judged by `judge`. A verdict that is not supported and has no tail of its own gets the worker's log tail.
Verdict OutcomeVerdict(const WorkerProcess::Outcome& o, const std::string& what, double timeout_seconds,
                       const std::function<Verdict(const RunResult&)>& judge);

// Registers `pjrt` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

// Relative and absolute tolerance for comparing a plugin's results with the evaluator's.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance ToleranceFor(hlo::PrimitiveType type);

// Compares one output read back from the plugin with the evaluator's value; nullopt when they agree,
// else a one-line description of the first difference (`output 0 element [1,2]: got 1.5, expected 0.5 ...`).
// `accumulated` (dot, convolution, reductions): floating-point elements are compared with an absolute
// tolerance of at least rtol times the output's largest magnitude, since summation order is free.
std::optional<std::string> CompareOutput(const hlo::Literal& expected, const HostArray& got, size_t output_index,
                                         bool accumulated = false);

}  // namespace opprobe::compiler_probe::pjrt
