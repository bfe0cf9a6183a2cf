// The Python environments opprobe's backends use, and the backends whose worker is the Python worker
// (python_worker.py: `xla:cpu`, `iree:llvm-cpu`): each names a Python environment from PyPI (requirements/*.txt), and
// they share how a spec is parsed, how the Python and the worker script are found, how their absence is reported
// (kUnavailable, exit 3, with the install command) and how `opprobe backends` describes what is installed. The chips'
// compiler plugins (compiler_probe/chip) are found in the same environments (VenvFolder).
//
// An environment: $OPPROBE_VENV_ROOT/<venv>, else the one the scripts create in the source tree (.venv/<venv>).
// The Python: `python=PATH`, else $<env_var>, else the environment's bin/python. The worker script:
// $OPPROBE_XLA_WORKER, else opprobe-xla-worker.py (a copy of compiler_probe/worker/python_worker.py) where the running
// program's layout puts it: PREFIX/libexec/opprobe beside an installed opprobe, the build folder for a program of the
// build tree (support/runtime_files.h).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "compiler_probe/backend.h"
#include "support/status.h"

namespace opprobe::compiler_probe::worker {

inline constexpr const char* kWorkerScript = "opprobe-xla-worker.py";

// The folder of the environment named `venv` ($OPPROBE_VENV_ROOT/<venv>, else the source tree's .venv/<venv>) and
// which rule chose it, for messages (`OPPROBE_VENV_ROOT`, `the scripts' default environment`).
std::pair<std::string, std::string> VenvFolder(const std::string& venv);

// One backend's environment.
struct PythonEnvironment {
  const char* backend;       // the spec's prefix: `xla`
  const char* platform;      // the one platform it serves: `cpu`
  const char* what;          // names the compiler in verdicts and messages: `XLA`
  const char* packages;      // what the environment must have: `jaxlib`
  const char* env_var;       // the Python's variable: `OPPROBE_XLA_PYTHON`
  const char* venv;          // the environment's name under $OPPROBE_VENV_ROOT: `xla`
  const char* requirements;  // what `pip install -r` takes: `requirements/xla.txt`
  const char* version_code;  // Python that prints the installed version on one line
};

struct PythonWorkerSpec {
  std::string platform;
  std::string python;  // from `python=PATH`; empty: the default lookup
};
// Parses what follows `BACKEND:` (`PLATFORM[,python=PATH]`); anything else is a usage error.
Expected<PythonWorkerSpec> ParsePythonWorkerSpec(const PythonEnvironment& env, const std::string& arg);

// The Python the backend runs (see above) and the worker script; kUnavailable when absent.
Expected<std::string> FindPython(const PythonEnvironment& env, const PythonWorkerSpec& spec);
Expected<std::string> FindWorkerScript();

// Starts the worker for `BACKEND:arg` (its target is `BACKEND:PLATFORM`); a missing Python or package is kUnavailable
// (exit 3) with the command that installs it. id() is `BACKEND:PLATFORM`; version() is what the worker greets with.
Expected<std::unique_ptr<Backend>> CreatePythonWorkerBackend(const PythonEnvironment& env, const std::string& arg,
                                                             const BackendOptions& options);

// The installed version in the default Python (`jaxlib 0.10.2 (PATH)`: version_code's line and the Python), or why
// there is none: for `opprobe backends`.
std::string DescribePythonInstallation(const PythonEnvironment& env);

}  // namespace opprobe::compiler_probe::worker
