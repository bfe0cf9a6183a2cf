// `pjrt:PLUGIN.so[,key=value...]`: compiles each probe unit with a real PJRT plugin (format "hlo",
// a serialized HloModuleProto), runs it on deterministic random inputs seeded from the fingerprint,
// and compares the results with the built-in evaluator (`interp`): compiler_probe/worker/run_backend.h, with the
// native worker program (worker_main.cpp, PjrtSession) loading the plugin. A compile or execute failure is
// `unsupported`; results beyond the element type's tolerance are `unsupported: numerics ...`; a plugin
// that crashes or hangs is an `error` for that unit (the plugin runs in a worker process, restarted
// after a crash). The key=value pairs are passed to PJRT_Client_Create as typed create options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/worker/protocol.h"
#include "support/status.h"

namespace opprobe::compiler_probe::pjrt {

struct PjrtSpec {
  std::string plugin_path;
  std::vector<worker::PluginOption> options;
};
// Parses `PLUGIN.so[,key=value...]` (the part after `pjrt:`); a bad option is a usage error.
Expected<PjrtSpec> ParsePjrtSpec(const std::string& arg);

// Starts the worker (which loads the plugin and creates a client). Not a file, not a PJRT plugin, an
// unsupported API version or a failing client: kUnavailable (exit 3). id() is `pjrt:` + arg;
// version() names the platform, the plugin's PJRT API version and the plugin file's size and mtime.
Expected<std::unique_ptr<Backend>> CreatePjrtBackend(const std::string& arg, const BackendOptions& options);

// Registers `pjrt` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

}  // namespace opprobe::compiler_probe::pjrt
