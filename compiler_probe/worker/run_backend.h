// A backend that compiles each probe unit in a worker (process.h), runs it on deterministic random inputs seeded
// from its fingerprint, and compares the results with the built-in evaluator (`interp`, compare.h): `pjrt:`, `xla:cpu`
// and `iree:llvm-cpu` are this backend with their own worker. A compile or execute failure is `unsupported`; results
// beyond the element type's tolerance are `unsupported: numerics ...`; a compiler that crashes or hangs is an `error`
// for that unit (the worker is started again after a crash). Units are batched (compiler_probe/batch.h): each unit of
// a batch runs on its own inputs and is compared with interp's as alone.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "compiler_probe/backend.h"
#include "compiler_probe/worker/process.h"
#include "support/status.h"

namespace opprobe::compiler_probe::worker {

struct RunBackendSpec {
  std::string id;       // `pjrt:PLUGIN.so,...`, `xla:cpu`
  std::string what;     // names the compiler in reasons: `XLA` -> `XLA crashed: ...`
  WorkerLaunch launch;  // how the worker is started, and started again after a crash
  // What version() says before the evaluator's and the inputs' revisions, from the worker's greeting.
  std::function<std::string(const SessionInfo&)> version;
  // How a whole program's compile names the compiler (ProgramCompile::compiler), from the worker's greeting.
  std::function<std::string(const SessionInfo&)> compiler;
};

// Starts the worker (a compiler that cannot be loaded is kUnavailable, exit 3) and returns the backend.
Expected<std::unique_ptr<Backend>> CreateRunBackend(RunBackendSpec spec, const BackendOptions& options);

}  // namespace opprobe::compiler_probe::worker
