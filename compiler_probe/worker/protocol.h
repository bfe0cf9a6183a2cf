// The protocol between opprobe and a worker (process.h): the values a request and a reply carry, and their encoding.
// Both ends of the native worker (opprobe-pjrt-worker, compiler_probe/pjrt) use this code; the Python worker
// (python_worker.py) writes the same bytes, and its docstring spells the format out. Every message is a little-endian
// u64 length followed by its body:
//
//   greeting  u8 ok; ok=0: str message; ok=1: i32 api major, i32 api minor, u64 api struct size, str platform,
//             str platform version, i64 devices
//   request   u8 flags (kRequestExecute, kRequestCompileProgram), str HloModuleProto bytes, u32 n, n arrays, and
//             with kRequestCompileProgram: str CompileOptionsProto bytes (compile_options.h)
//   reply     i32 stage, i32 absl status code, str message, u32 n, n arrays, and when a whole program compiled: stats
//   array     i32 element type (ArrayType), u32 rank, rank x i64 dims, str dense row-major bytes
//   str       u64 length, bytes
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler_probe/backend.h"
#include "hlo/types.h"

namespace opprobe::compiler_probe::worker {

// A `key=value` option a worker is started with (a PJRT plugin's create options, `pjrt:PLUGIN.so,key=value`):
// `true`/`false` are bools, integers are int64, numbers with a '.' or exponent are floats, anything else a string.
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

// The element types of the arrays on the wire: PJRT_Buffer_Type's numbering (the PJRT C API's, which the native
// worker hands its plugin unchanged and the Python worker maps to numpy's; compiler_probe/pjrt/pjrt_session.cpp checks
// that the two agree). It differs from xla::PrimitiveType for bf16, c64 and c128.
enum ArrayType : int {
  kArrayInvalid = 0,
  kArrayPred = 1,
  kArrayS8 = 2,
  kArrayS16 = 3,
  kArrayS32 = 4,
  kArrayS64 = 5,
  kArrayU8 = 6,
  kArrayU16 = 7,
  kArrayU32 = 8,
  kArrayU64 = 9,
  kArrayF16 = 10,
  kArrayF32 = 11,
  kArrayF64 = 12,
  kArrayBF16 = 13,
  kArrayC64 = 14,
  kArrayC128 = 15,
};

struct HostArray {
  int type = 0;  // ArrayType
  std::vector<int64_t> dims;
  std::string data;  // dense, row-major
};

// ArrayType <-> hlo::PrimitiveType; nullopt when the type has no host transfer (tuples, tokens, f8, sub-byte types).
std::optional<int> PjrtBufferType(hlo::PrimitiveType t);
std::optional<hlo::PrimitiveType> PrimitiveTypeFromPjrt(int pjrt_type);
int PjrtTypeByteSize(int pjrt_type);  // 0 for unknown
// An absl status code's name: `UNIMPLEMENTED`, `INVALID_ARGUMENT`, ...
std::string ErrorCodeName(int code);

// What the worker greets with once it has loaded its compiler.
struct SessionInfo {
  std::string plugin_path;
  int api_major = 0;
  int api_minor = 0;
  size_t api_struct_size = 0;
  std::string platform_name;
  std::string platform_version;
  int64_t num_devices = 0;
  std::string topology;  // the topology compiled for (a compile-only worker); empty for a client
};

// What a whole program's compile says of it (PJRT_Executable_GetCompiledMemoryStats, per device, and the optimized
// program's vendor library calls).
struct CompileStats {
  bool present = false;                    // the program compiled for a topology
  bool has_memory = false;                 // the plugin gave memory statistics
  DeviceMemory memory;                     // code + arguments + outputs - aliased + temporaries: what one device holds
  int64_t peak_bytes = 0;                  // 0 where the plugin does not say
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
  int code = 0;  // absl status code from the compiler
  std::string message;
  std::vector<HostArray> outputs;
  CompileStats stats;  // a whole program's, when it compiled
};

// Request flags (the first byte of a request): execute the compiled program, or compile a whole program (for the
// worker's topology, or with its client) with the compile options that follow the inputs and reply with its
// statistics.
inline constexpr uint8_t kRequestExecute = 1;
inline constexpr uint8_t kRequestCompileProgram = 2;

struct Request {
  uint8_t flags = 0;
  std::string hlo_module_proto;
  std::vector<HostArray> inputs;
  std::string compile_options;  // with kRequestCompileProgram
};

// The largest message either end accepts (a batch's inputs can be hundreds of megabytes).
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 36;

// Encoders return a whole message, its length in front; decoders take a message's body (without the length) and
// say nullopt when it is malformed.
std::string EncodeGreeting(const SessionInfo& info);
std::string EncodeRefusal(const std::string& message);  // a greeting saying the compiler could not be loaded
struct Greeting {
  bool loaded = false;
  std::string refusal;  // when not loaded
  SessionInfo info;     // when loaded (plugin_path and topology are not sent)
};
std::optional<Greeting> DecodeGreeting(const std::string& body);

std::string EncodeRequest(uint8_t flags, const std::string& hlo_module_proto, const std::vector<HostArray>& inputs,
                          const std::string* compile_options);
std::optional<Request> DecodeRequest(const std::string& body);

std::string EncodeReply(const RunResult& result);
std::optional<RunResult> DecodeReply(const std::string& body);

// Blocking I/O for the worker's side of the socket: one whole message out, one message's body in; false when the
// other end is gone or the length is beyond kMaxMessageBytes.
bool WriteMessageBlocking(int fd, const std::string& message);
bool ReadMessageBlocking(int fd, std::string& body);

}  // namespace opprobe::compiler_probe::worker
