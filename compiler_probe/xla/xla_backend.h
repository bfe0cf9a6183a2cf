// `xla:cpu[,python=PATH]`: compiles each probe unit with XLA's own CPU compiler and runs it with XLA's
// runtime, both from jaxlib (PyPI, requirements/xla.txt), and compares the results with the built-in
// evaluator (`interp`) exactly as `pjrt:` does. The work happens in a Python worker process
// (compiler_probe/worker/python_worker.py, speaking the workers' protocol), so a crash of XLA is an `error` verdict.
// How the Python and the worker are found: compiler_probe/worker/python.h (the variable is $OPPROBE_XLA_PYTHON, the
// environment `xla`).
#pragma once

#include <memory>
#include <string>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/worker/python.h"
#include "support/status.h"

namespace opprobe::compiler_probe::xla {

// The xla backend's environment (requirements/xla.txt).
extern const worker::PythonEnvironment kXlaEnvironment;

using XlaSpec = worker::PythonWorkerSpec;
// Parses what follows `xla:` (`cpu[,python=PATH]`); anything else is a usage error.
Expected<XlaSpec> ParseXlaSpec(const std::string& arg);

// Starts the worker; a missing Python or jaxlib is kUnavailable (exit 3) with the command that
// installs it. id() is `xla:cpu`; version() names jaxlib's version and XLA's CPU platform version.
Expected<std::unique_ptr<Backend>> CreateXlaBackend(const std::string& arg, const BackendOptions& options);

// jaxlib's version in the default Python (`jaxlib 0.10.2 (PATH)`), or why there is none: for `opprobe backends`.
std::string DescribeInstallation();

// Registers `xla` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

}  // namespace opprobe::compiler_probe::xla
