// PjrtSession: one loaded PJRT plugin and one client, driven through the C ABI (pjrt_abi.h). It runs
// inside the native worker program (opprobe-pjrt-worker: worker_main.cpp, started by compiler_probe/worker/process.h),
// never in opprobe's own process, because plugins may abort. It knows nothing of hlo::Module: it takes serialized
// HloModuleProto bytes and dense host arrays in PJRT_Buffer_Type numbering.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler_probe/worker/protocol.h"
#include "hlo/types.h"
#include "support/status.h"

namespace opprobe::pjrt_abi {
struct Executable;
}  // namespace opprobe::pjrt_abi

namespace opprobe::compiler_probe::pjrt {

// The vendor-library custom-call targets a serialized optimized program names (`__cudnn$...`, `__cublas$...`).
std::vector<std::string> LibraryCallTargets(std::string_view program);
// Each vendor-library custom call of a serialized optimized HloModuleProto with its metadata's op_name, read from the
// protobuf wire format (the worker links no protobuf); empty when the bytes hold no HloModuleProto.
std::vector<worker::CompileStats::LibraryCall> LibraryCallSites(std::string_view program);

class PjrtSession {
 public:
  // dlopen + GetPjrtApi + version gate + Plugin_Initialize + Client_Create + device query. Failures
  // (not found, not a PJRT plugin, unsupported API version, client creation failed) are
  // kUnavailable with a one-line reason.
  static Expected<std::unique_ptr<PjrtSession>> Load(const std::string& plugin_path,
                                                     const std::vector<worker::PluginOption>& options);
  ~PjrtSession();

  // dlopen + GetPjrtApi + version gate + Plugin_Initialize + PJRT_TopologyDescription_Create: a session that
  // compiles for `topology_name` (`v5e:2x2`; empty for GPU, whose options describe the device) with no device and
  // no client (research/deviceless-compilers.md). `options` are the topology's create options.
  static Expected<std::unique_ptr<PjrtSession>> LoadTopology(const std::string& plugin_path,
                                                             const std::string& topology_name,
                                                             const std::vector<worker::PluginOption>& options);

  const worker::SessionInfo& info() const { return info_; }
  bool has_topology() const;

  // Compiles `hlo_module_proto` with serialized CompileOptionsProto bytes, without running it: PJRT_Compile for the
  // session's topology, or PJRT_Client_Compile for a client's devices. A refusal is stage kCompile with the
  // compiler's status code and message; a compile gives `stats`.
  worker::RunResult CompileProgram(const std::string& hlo_module_proto, const std::string& compile_options);

  // Compiles `hlo_module_proto` (format "hlo"); when `execute`, runs it once on `inputs` (on the
  // executable's first addressable device) and reads every output back.
  worker::RunResult Run(const std::string& hlo_module_proto, const std::vector<worker::HostArray>& inputs,
                        bool execute);

 private:
  PjrtSession() = default;
  // The common part of Load and LoadTopology: the plugin opened, its API checked for `required` slots, initialized.
  static Expected<std::unique_ptr<PjrtSession>> Open(const std::string& plugin_path, const int* required,
                                                     size_t num_required);
  struct Impl;
  // What a compiled executable says of itself: per-device memory (PJRT_Executable_GetCompiledMemoryStats), the size
  // of its code, and the vendor-library calls of its optimized program.
  static void ReadCompileStats(Impl& im, pjrt_abi::Executable* exe, worker::CompileStats& st);
  std::unique_ptr<Impl> impl_;
  worker::SessionInfo info_;
};

}  // namespace opprobe::compiler_probe::pjrt
