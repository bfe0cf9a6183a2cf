// `xla:cpu[,python=PATH]`: compiles each probe unit with XLA's own CPU compiler and runs it with XLA's
// runtime, both from jaxlib (PyPI, requirements/xla.txt), and compares the results with the built-in
// evaluator (`interp`) exactly as `pjrt:` does. The work happens in a Python worker process
// (xla_worker.py, speaking the pjrt worker's protocol), so a crash of XLA is an `error` verdict.
//
// The Python: `python=PATH`, else $OPPROBE_XLA_PYTHON, else $OPPROBE_VENV_ROOT/xla/bin/python, else the
// environment the scripts create in the source tree (.venv/xla/bin/python). The worker script:
// $OPPROBE_XLA_WORKER, else opprobe-xla-worker.py next to (or one folder above) the running program
// (the build puts it there), else compiler_probe/xla/xla_worker.py in the source tree.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"
#include "hlo/status.h"

namespace opprobe::compiler_probe::xla {

inline constexpr const char* kWorkerScript = "opprobe-xla-worker.py";

struct XlaSpec {
  std::string platform = "cpu";
  std::string python;  // from `python=PATH`; empty: the default lookup
};
// Parses what follows `xla:` (`cpu[,python=PATH]`); anything else is a usage error.
Expected<XlaSpec> ParseXlaSpec(const std::string& arg);

// The Python the backend runs (see above) and the worker script; kUnavailable when absent.
Expected<std::string> FindPython(const XlaSpec& spec);
Expected<std::string> FindWorkerScript();

// Starts the worker; a missing Python or jaxlib is kUnavailable (exit 3) with the command that
// installs it. id() is `xla:cpu`; version() names jaxlib's version and XLA's CPU platform version.
Expected<std::unique_ptr<Backend>> CreateXlaBackend(const std::string& arg, const BackendOptions& options);

// jaxlib's version in the default Python (`jaxlib 0.10.2`), or why there is none: for `opprobe backends`.
std::string DescribeInstallation();

// Registers `xla` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

}  // namespace opprobe::compiler_probe::xla
