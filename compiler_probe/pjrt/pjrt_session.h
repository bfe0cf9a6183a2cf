// PjrtSession: one loaded PJRT plugin and one client, driven through the C ABI (pjrt_abi.h). It runs
// inside the pjrt backend's worker process (worker.h), never in opprobe's own process, because
// plugins may abort. It knows nothing of hlo::Module: it takes serialized HloModuleProto bytes and
// dense host arrays in PJRT_Buffer_Type numbering.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler_probe/backend.h"
#include "support/status.h"
#include "hlo/types.h"

namespace opprobe::pjrt_abi {
struct Executable;
}  // namespace opprobe::pjrt_abi

namespace opprobe::compiler_probe::pjrt {

// A `key=value` create option of `pjrt:PLUGIN.so,key=value`: `true`/`false` are bools, integers are
// int64, numbers with a '.' or exponent are floats, anything else a string.
struct PluginOption {
  enum class Type { kString, kInt64, kFloat, kBool };
  std::string name;
  Type type = Type::kString;
  std::string string_value;
  int64_t int_value = 0;
  float float_value = 0;
  bool bool_value = false;
  static PluginOption Parse(const std::string& name, const std::string& value);
};

struct HostArray {
  int type = 0;  // PJRT_Buffer_Type
  std::vector<int64_t> dims;
  std::string data;  // dense, row-major
};

struct SessionInfo {
  std::string plugin_path;
  int api_major = 0;
  int api_minor = 0;
  size_t api_struct_size = 0;
  std::string platform_name;
  std::string platform_version;
  int64_t num_devices = 0;
  std::string topology;  // the topology compiled for (LoadTopology); empty for a client
};

// What a compile for a topology says of the program (PJRT_Executable_GetCompiledMemoryStats, per device, and the
// optimized program's vendor library calls).
struct CompileStats {
  bool present = false;     // the program compiled for a topology
  bool has_memory = false;  // the plugin gave memory statistics
  DeviceMemory memory;      // code + arguments + outputs - aliased + temporaries: what one device holds
  int64_t peak_bytes = 0;  // 0 where the plugin does not say
  std::vector<std::string> library_calls;  // `__cudnn$convForward`, ... in the optimized program, sorted
  // Each such call with the op_name of its metadata (XLA carries an instruction's metadata to the call it becomes):
  // which unit of a batch (hlo::MakeBatchModule marks them) a call comes from.
  struct LibraryCall {
    std::string target;
    std::string op_name;
  };
  std::vector<LibraryCall> library_call_sites;
};

struct RunResult {
  enum class Stage { kOk, kCompile, kExecute, kTransfer };
  Stage stage = Stage::kOk;
  int code = 0;  // absl status code from the plugin
  std::string message;
  std::vector<HostArray> outputs;
  CompileStats stats;  // CompileProgram's, when it compiled
};

// The vendor-library custom-call targets a serialized optimized program names (`__cudnn$...`, `__cublas$...`).
std::vector<std::string> LibraryCallTargets(std::string_view program);
// Each vendor-library custom call of a serialized optimized HloModuleProto with its metadata's op_name, read from the
// protobuf wire format (the worker links no protobuf); empty when the bytes hold no HloModuleProto.
std::vector<CompileStats::LibraryCall> LibraryCallSites(std::string_view program);

// PJRT_Buffer_Type <-> hlo::PrimitiveType (they differ for bf16, c64, c128); nullopt when the type has
// no host transfer here (tuples, tokens, f8, sub-byte types).
std::optional<int> PjrtBufferType(hlo::PrimitiveType t);
std::optional<hlo::PrimitiveType> PrimitiveTypeFromPjrt(int pjrt_type);
int PjrtTypeByteSize(int pjrt_type);  // 0 for unknown
// `UNIMPLEMENTED`, `INVALID_ARGUMENT`, ...
std::string ErrorCodeName(int code);

class PjrtSession {
 public:
  // dlopen + GetPjrtApi + version gate + Plugin_Initialize + Client_Create + device query. Failures
  // (not found, not a PJRT plugin, unsupported API version, client creation failed) are
  // kUnavailable with a one-line reason.
  static Expected<std::unique_ptr<PjrtSession>> Load(const std::string& plugin_path,
                                                     const std::vector<PluginOption>& options);
  ~PjrtSession();

  // dlopen + GetPjrtApi + version gate + Plugin_Initialize + PJRT_TopologyDescription_Create: a session that
  // compiles for `topology_name` (`v5e:2x2`; empty for GPU, whose options describe the device) with no device and
  // no client (research/deviceless-compilers.md). `options` are the topology's create options.
  static Expected<std::unique_ptr<PjrtSession>> LoadTopology(const std::string& plugin_path,
                                                             const std::string& topology_name,
                                                             const std::vector<PluginOption>& options);

  const SessionInfo& info() const { return info_; }
  bool has_topology() const;

  // Compiles `hlo_module_proto` with serialized CompileOptionsProto bytes, without running it: PJRT_Compile for the
  // session's topology, or PJRT_Client_Compile for a client's devices. A refusal is stage kCompile with the
  // compiler's status code and message; a compile gives `stats`.
  RunResult CompileProgram(const std::string& hlo_module_proto, const std::string& compile_options);

  // Compiles `hlo_module_proto` (format "hlo"); when `execute`, runs it once on `inputs` (on the
  // executable's first addressable device) and reads every output back.
  RunResult Run(const std::string& hlo_module_proto, const std::vector<HostArray>& inputs, bool execute);

 private:
  PjrtSession() = default;
  // The common part of Load and LoadTopology: the plugin opened, its API checked for `required` slots, initialized.
  static Expected<std::unique_ptr<PjrtSession>> Open(const std::string& plugin_path, const int* required,
                                                     size_t num_required);
  struct Impl;
  // What a compiled executable says of itself: per-device memory (PJRT_Executable_GetCompiledMemoryStats), the size
  // of its code, and the vendor-library calls of its optimized program.
  static void ReadCompileStats(Impl& im, pjrt_abi::Executable* exe, CompileStats& st);
  std::unique_ptr<Impl> impl_;
  SessionInfo info_;
};

}  // namespace opprobe::compiler_probe::pjrt
