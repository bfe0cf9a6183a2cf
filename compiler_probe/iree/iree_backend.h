// `iree:llvm-cpu[,python=PATH]`: IREE as a second compiler independent of XLA. Each probe unit is converted from
// HloModuleProto to StableHLO by jaxlib's converter, compiled by `iree-compile` for IREE's llvm-cpu backend (code for
// the host CPU) and run by IREE's runtime, both from PyPI (requirements/iree.txt, an environment layered on
// requirements/xla.txt's jaxlib), and its results are compared with the built-in evaluator (`interp`) exactly as
// `xla:cpu`'s are. The work happens in the Python worker (compiler_probe/worker/python_worker.py), so a
// crash of the compiler is an `error` verdict. How the Python and the worker are found: compiler_probe/worker/python.h
// (the variable is $OPPROBE_IREE_PYTHON, the environment `iree`).
#pragma once

#include <memory>
#include <string>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/worker/python.h"
#include "support/status.h"

namespace opprobe::compiler_probe::iree {

// The iree backend's environment (requirements/xla.txt and requirements/iree.txt).
extern const worker::PythonEnvironment kIreeEnvironment;

// Starts the worker; a missing Python or IREE is kUnavailable (exit 3) with the command that installs it.
// id() is `iree:llvm-cpu`; version() names IREE's version and revision and jaxlib's.
Expected<std::unique_ptr<Backend>> CreateIreeBackend(const std::string& arg, const BackendOptions& options);

// IREE's compiler and runtime versions in the default Python, or why there are none: for `opprobe backends`.
std::string DescribeInstallation();

// Registers `iree` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

}  // namespace opprobe::compiler_probe::iree
