// Our own transcription of the few parts of the PJRT C API (xla/pjrt/c/pjrt_c_api.h) that opprobe
// uses, for LP64, from research/pjrt.md (header 0.94). Shared by the pjrt backend (the caller) and the
// test plugin in tests/pjrt_plugin (the callee). Every args struct starts with struct_size and
// extension_start; STRUCT_SIZE values are offsetof(last field) + sizeof(last field), not sizeof.
#pragma once

#include <cstddef>
#include <cstdint>

namespace opprobe::pjrt_abi {

// The header version this transcription follows, and the oldest plugin minor we accept.
constexpr int kOurMajor = 0;
constexpr int kOurMinor = 94;
constexpr int kMinMinor = 29;

struct Error;
struct Event;
struct Client;
struct Device;
struct Memory;
struct LoadedExecutable;
struct Executable;
struct Buffer;
struct TopologyDescription;
struct DeviceDescription;

struct ApiVersion {
  size_t struct_size;
  void* extension_start;
  int major_version;
  int minor_version;
};

// PJRT_Api: a header followed by function pointers at 40 + 8 * slot.
struct ApiHeader {
  size_t struct_size;
  void* extension_start;
  ApiVersion pjrt_api_version;
};
constexpr size_t kFirstSlotOffset = 40;
static_assert(sizeof(ApiHeader) == kFirstSlotOffset);

// Function slots (identical from about 0.29 to 0.94).
enum Slot : int {
  kError_Destroy = 0,
  kError_Message = 1,
  kError_GetCode = 2,
  kPlugin_Initialize = 3,
  kPlugin_Attributes = 4,
  kEvent_Destroy = 5,
  kEvent_IsReady = 6,
  kEvent_Error = 7,
  kEvent_Await = 8,
  kClient_Create = 10,
  kClient_Destroy = 11,
  kClient_PlatformName = 12,
  kClient_PlatformVersion = 14,
  kClient_Devices = 15,
  kClient_AddressableDevices = 16,
  kClient_Compile = 20,
  kClient_BufferFromHostBuffer = 22,
  kExecutable_Destroy = 40,
  kExecutable_NumOutputs = 44,
  kLoadedExecutable_Destroy = 50,
  kLoadedExecutable_GetExecutable = 51,
  kLoadedExecutable_AddressableDevices = 52,
  kLoadedExecutable_Execute = 55,
  kBuffer_Destroy = 58,
  kBuffer_ElementType = 59,
  kBuffer_Dimensions = 60,
  kBuffer_ToHostBuffer = 70,
  // The client-less compile for a topology (research/deviceless-compilers.md; the slots of API 0.112 and 0.117).
  kExecutable_SizeOfGeneratedCodeInBytes = 45,
  kExecutable_OptimizedProgram = 48,
  kTopologyDescription_Create = 82,
  kTopologyDescription_Destroy = 83,
  kTopologyDescription_PlatformName = 84,
  kTopologyDescription_PlatformVersion = 85,
  kTopologyDescription_GetDeviceDescriptions = 86,
  kCompile = 89,
  kExecutable_GetCompiledMemoryStats = 96,
};
// Number of slots in PJRT_Api at 0.94 (a plugin at an older minor may have fewer).
constexpr int kSlotsAt94 = 129;

using ErrorFn = Error* (*)(void* args);  // every function but the three below
using VoidFn = void (*)(void* args);     // Error_Destroy, Error_Message

// absl status codes carried by PJRT_Error_GetCode.
enum ErrorCode : int {
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kNotFound = 5,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kUnimplemented = 12,
  kInternal = 13,
};

// PJRT_Buffer_Type (differs from xla::PrimitiveType for BF16, C64, C128, ...).
enum BufferType : int {
  kInvalid = 0,
  kPred = 1,
  kS8 = 2,
  kS16 = 3,
  kS32 = 4,
  kS64 = 5,
  kU8 = 6,
  kU16 = 7,
  kU32 = 8,
  kU64 = 9,
  kF16 = 10,
  kF32 = 11,
  kF64 = 12,
  kBF16 = 13,
  kC64 = 14,
  kC128 = 15,
};

enum NamedValueType : int { kString = 0, kInt64 = 1, kInt64List = 2, kFloat = 3, kBool = 4 };

struct NamedValue {
  size_t struct_size;
  void* extension_start;
  const char* name;
  size_t name_size;
  int type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;
};

struct Error_Destroy_Args {
  size_t struct_size;
  void* extension_start;
  Error* error;
};
struct Error_Message_Args {
  size_t struct_size;
  void* extension_start;
  const Error* error;
  const char* message;
  size_t message_size;
};
struct Error_GetCode_Args {
  size_t struct_size;
  void* extension_start;
  const Error* error;
  int code;
};
struct Plugin_Initialize_Args {
  size_t struct_size;
  void* extension_start;
};
struct Event_Args {  // Event_Destroy and Event_Await
  size_t struct_size;
  void* extension_start;
  Event* event;
};
struct Client_Create_Args {
  size_t struct_size;
  void* extension_start;
  const NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  Client* client;
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
};
struct Client_Destroy_Args {
  size_t struct_size;
  void* extension_start;
  Client* client;
};
struct Client_String_Args {  // Client_PlatformName and Client_PlatformVersion
  size_t struct_size;
  void* extension_start;
  Client* client;
  const char* value;
  size_t value_size;
};
struct Client_AddressableDevices_Args {
  size_t struct_size;
  void* extension_start;
  Client* client;
  Device* const* addressable_devices;
  size_t num_addressable_devices;
};
struct Program {
  size_t struct_size;
  void* extension_start;
  char* code;
  size_t code_size;
  const char* format;
  size_t format_size;
};
struct Client_Compile_Args {
  size_t struct_size;
  void* extension_start;
  Client* client;
  const Program* program;
  const char* compile_options;
  size_t compile_options_size;
  LoadedExecutable* executable;
};
struct Client_BufferFromHostBuffer_Args {
  size_t struct_size;
  void* extension_start;
  Client* client;
  const void* data;
  int type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;
  size_t num_byte_strides;
  int host_buffer_semantics;
  Device* device;
  Memory* memory;
  void* device_layout;
  Event* done_with_host_buffer;
  Buffer* buffer;
};
struct LoadedExecutable_GetExecutable_Args {
  size_t struct_size;
  void* extension_start;
  LoadedExecutable* loaded_executable;
  Executable* executable;
};
struct Executable_NumOutputs_Args {
  size_t struct_size;
  void* extension_start;
  Executable* executable;
  size_t num_outputs;
};
struct Executable_Destroy_Args {
  size_t struct_size;
  void* extension_start;
  Executable* executable;
};
struct LoadedExecutable_Destroy_Args {
  size_t struct_size;
  void* extension_start;
  LoadedExecutable* executable;
};
struct LoadedExecutable_AddressableDevices_Args {
  size_t struct_size;
  void* extension_start;
  LoadedExecutable* executable;
  Device* const* addressable_devices;
  size_t num_addressable_devices;
};
struct ExecuteOptions {
  size_t struct_size;
  void* extension_start;
  void* send_callbacks;
  void* recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void* context;
  void* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
};
struct LoadedExecutable_Execute_Args {
  size_t struct_size;
  void* extension_start;
  LoadedExecutable* executable;
  ExecuteOptions* options;
  Buffer* const* const* argument_lists;
  size_t num_devices;
  size_t num_args;
  Buffer** const* output_lists;
  Event** device_complete_events;
  Device* execute_device;
};
struct Buffer_Destroy_Args {
  size_t struct_size;
  void* extension_start;
  Buffer* buffer;
};
struct Buffer_ElementType_Args {
  size_t struct_size;
  void* extension_start;
  Buffer* buffer;
  int type;
};
struct Buffer_Dimensions_Args {
  size_t struct_size;
  void* extension_start;
  Buffer* buffer;
  const int64_t* dims;
  size_t num_dims;
};
struct Buffer_ToHostBuffer_Args {
  size_t struct_size;
  void* extension_start;
  Buffer* src;
  void* host_layout;
  void* dst;
  size_t dst_size;
  Event* event;
};

struct TopologyDescription_Create_Args {
  size_t struct_size;
  void* extension_start;
  const char* topology_name;
  size_t topology_name_size;
  const NamedValue* create_options;
  size_t num_options;
  TopologyDescription* topology;
};
struct TopologyDescription_Destroy_Args {
  size_t struct_size;
  void* extension_start;
  TopologyDescription* topology;
};
struct TopologyDescription_String_Args {  // TopologyDescription_PlatformName and _PlatformVersion
  size_t struct_size;
  void* extension_start;
  TopologyDescription* topology;
  const char* value;
  size_t value_size;
};
struct TopologyDescription_GetDeviceDescriptions_Args {
  size_t struct_size;
  void* extension_start;
  TopologyDescription* topology;
  DeviceDescription* const* descriptions;
  size_t num_descriptions;
};
struct Compile_Args {
  size_t struct_size;
  void* extension_start;
  const TopologyDescription* topology;
  const Program* program;
  const char* compile_options;
  size_t compile_options_size;
  Client* client;
  Executable* executable;
};
struct Executable_SizeOfGeneratedCodeInBytes_Args {
  size_t struct_size;
  void* extension_start;
  Executable* executable;
  int64_t size_in_bytes;
};
struct Executable_OptimizedProgram_Args {
  size_t struct_size;
  void* extension_start;
  Executable* executable;
  Program* program;
};
// PJRT_Executable_GetCompiledMemoryStats_Args (host fields from 0.37, peak from 0.72, total from 0.90, the last
// three from 0.104): the plugins check struct_size against their own version's (libtpu 0.0.42.1 wants >= 112).
struct Executable_GetCompiledMemoryStats_Args {
  size_t struct_size;
  void* extension_start;
  Executable* executable;
  int64_t generated_code_size_in_bytes;
  int64_t argument_size_in_bytes;
  int64_t output_size_in_bytes;
  int64_t alias_size_in_bytes;
  int64_t temp_size_in_bytes;
  int64_t host_generated_code_size_in_bytes;
  int64_t host_argument_size_in_bytes;
  int64_t host_output_size_in_bytes;
  int64_t host_alias_size_in_bytes;
  int64_t host_temp_size_in_bytes;
  int64_t peak_memory_in_bytes;
  int64_t total_size_in_bytes;
  int64_t total_allocation_size_in_bytes;
  int64_t indefinite_allocations_in_bytes;
  int64_t peak_unpadded_heap_size_in_bytes;
};

#define OPPROBE_PJRT_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(type::last))

// STRUCT_SIZE of each args struct at a plugin's minor version (Appendix B of research/pjrt.md). The
// caller sends exactly this, which satisfies both exact-match plugins and ">=" plugins.
struct StructSizes {
  size_t error_destroy, error_message, error_getcode, plugin_initialize, event, client_create, client_destroy,
      client_string, client_addressable_devices, program, client_compile, buffer_from_host, get_executable, num_outputs,
      executable_destroy, loaded_executable_destroy, loaded_addressable_devices, execute_options, execute,
      buffer_destroy, buffer_element_type, buffer_dimensions, to_host_buffer, named_value;
};

inline StructSizes StructSizesForMinor(int minor) {
  StructSizes s{};
  s.error_destroy = OPPROBE_PJRT_STRUCT_SIZE(Error_Destroy_Args, error);                             // 24
  s.error_message = OPPROBE_PJRT_STRUCT_SIZE(Error_Message_Args, message_size);                      // 40
  s.error_getcode = OPPROBE_PJRT_STRUCT_SIZE(Error_GetCode_Args, code);                              // 28
  s.plugin_initialize = OPPROBE_PJRT_STRUCT_SIZE(Plugin_Initialize_Args, extension_start);           // 16
  s.event = OPPROBE_PJRT_STRUCT_SIZE(Event_Args, event);                                             // 24
  s.client_create = minor >= 61 ? OPPROBE_PJRT_STRUCT_SIZE(Client_Create_Args, kv_try_get_user_arg)  // 88
                                : OPPROBE_PJRT_STRUCT_SIZE(Client_Create_Args, client);              // 72
  s.client_destroy = OPPROBE_PJRT_STRUCT_SIZE(Client_Destroy_Args, client);                          // 24
  s.client_string = OPPROBE_PJRT_STRUCT_SIZE(Client_String_Args, value_size);                        // 40
  s.client_addressable_devices = OPPROBE_PJRT_STRUCT_SIZE(Client_AddressableDevices_Args, num_addressable_devices);
  s.program = OPPROBE_PJRT_STRUCT_SIZE(Program, format_size);                                    // 48
  s.client_compile = OPPROBE_PJRT_STRUCT_SIZE(Client_Compile_Args, executable);                  // 56
  s.buffer_from_host = OPPROBE_PJRT_STRUCT_SIZE(Client_BufferFromHostBuffer_Args, buffer);       // 120
  s.get_executable = OPPROBE_PJRT_STRUCT_SIZE(LoadedExecutable_GetExecutable_Args, executable);  // 32
  s.num_outputs = OPPROBE_PJRT_STRUCT_SIZE(Executable_NumOutputs_Args, num_outputs);             // 32
  s.executable_destroy = OPPROBE_PJRT_STRUCT_SIZE(Executable_Destroy_Args, executable);          // 24
  s.loaded_executable_destroy = OPPROBE_PJRT_STRUCT_SIZE(LoadedExecutable_Destroy_Args, executable);
  s.loaded_addressable_devices =
      OPPROBE_PJRT_STRUCT_SIZE(LoadedExecutable_AddressableDevices_Args, num_addressable_devices);    // 40
  if (minor >= 78) s.execute_options = OPPROBE_PJRT_STRUCT_SIZE(ExecuteOptions, incarnation_ids);     // 112
  else if (minor >= 76) s.execute_options = OPPROBE_PJRT_STRUCT_SIZE(ExecuteOptions, call_location);  // 88
  else if (minor >= 64) s.execute_options = OPPROBE_PJRT_STRUCT_SIZE(ExecuteOptions, context);        // 80
  else if (minor >= 39)
    s.execute_options = OPPROBE_PJRT_STRUCT_SIZE(ExecuteOptions, num_non_donatable_input_indices);  // 72
  else s.execute_options = OPPROBE_PJRT_STRUCT_SIZE(ExecuteOptions, launch_id);                     // 52
  s.execute = OPPROBE_PJRT_STRUCT_SIZE(LoadedExecutable_Execute_Args, execute_device);              // 80
  s.buffer_destroy = OPPROBE_PJRT_STRUCT_SIZE(Buffer_Destroy_Args, buffer);                         // 24
  s.buffer_element_type = OPPROBE_PJRT_STRUCT_SIZE(Buffer_ElementType_Args, type);                  // 28
  s.buffer_dimensions = OPPROBE_PJRT_STRUCT_SIZE(Buffer_Dimensions_Args, num_dims);                 // 40
  s.to_host_buffer = OPPROBE_PJRT_STRUCT_SIZE(Buffer_ToHostBuffer_Args, event);                     // 56
  s.named_value = OPPROBE_PJRT_STRUCT_SIZE(NamedValue, value_size);                                 // 56
  return s;
}

static_assert(OPPROBE_PJRT_STRUCT_SIZE(Error_GetCode_Args, code) == 28);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(TopologyDescription_Create_Args, topology) == 56);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(Compile_Args, executable) == 64);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(Executable_GetCompiledMemoryStats_Args, peak_unpadded_heap_size_in_bytes) ==
              144);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(Client_Create_Args, kv_try_get_user_arg) == 88);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(Client_BufferFromHostBuffer_Args, buffer) == 120);
static_assert(offsetof(Client_BufferFromHostBuffer_Args, host_buffer_semantics) == 72);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(ExecuteOptions, incarnation_ids) == 112);
static_assert(offsetof(ExecuteOptions, non_donatable_input_indices) == 56);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(LoadedExecutable_Execute_Args, execute_device) == 80);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(Buffer_ToHostBuffer_Args, event) == 56);
static_assert(OPPROBE_PJRT_STRUCT_SIZE(NamedValue, value_size) == 56);
static_assert(offsetof(NamedValue, value_size) == 48);

}  // namespace opprobe::pjrt_abi
