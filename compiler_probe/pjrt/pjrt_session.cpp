#include "compiler_probe/pjrt/pjrt_session.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "compiler_probe/pjrt/pjrt_abi.h"

namespace opprobe::compiler_probe::pjrt {

namespace abi = ::opprobe::pjrt_abi;
using worker::CompileStats;
using worker::HostArray;
using worker::PluginOption;
using worker::RunResult;
using worker::SessionInfo;

// The protocol's arrays go to the plugin as they come: their element types are PJRT_Buffer_Type's numbers.
constexpr bool ArrayTypesArePjrtBufferTypes() {
  constexpr int kPairs[][2] = {
      {worker::kArrayPred, abi::kPred}, {worker::kArrayS8, abi::kS8},   {worker::kArrayS16, abi::kS16},
      {worker::kArrayS32, abi::kS32},   {worker::kArrayS64, abi::kS64}, {worker::kArrayU8, abi::kU8},
      {worker::kArrayU16, abi::kU16},   {worker::kArrayU32, abi::kU32}, {worker::kArrayU64, abi::kU64},
      {worker::kArrayF16, abi::kF16},   {worker::kArrayF32, abi::kF32}, {worker::kArrayF64, abi::kF64},
      {worker::kArrayBF16, abi::kBF16}, {worker::kArrayC64, abi::kC64}, {worker::kArrayC128, abi::kC128}};
  for (const auto& p : kPairs)
    if (p[0] != p[1]) return false;
  return true;
}
static_assert(ArrayTypesArePjrtBufferTypes());

namespace {

struct CallStatus {
  bool ok = true;
  int code = 0;
  std::string message;
};

// replicas = 1, partitions = 1 (xla.CompileOptionsProto, research/pjrt.md 2.6).
constexpr char kCompileOptions[] = {0x1A, 0x04, 0x20, 0x01, 0x28, 0x01};

}  // namespace

struct PjrtSession::Impl {
  void* handle = nullptr;
  const abi::ApiHeader* api = nullptr;
  abi::StructSizes sizes{};
  abi::Client* client = nullptr;
  abi::TopologyDescription* topology = nullptr;
  std::vector<abi::Device*> devices;

  size_t num_slots() const { return (api->struct_size - abi::kFirstSlotOffset) / sizeof(void*); }
  void* slot(int k) const {
    if (static_cast<size_t>(k) >= num_slots()) return nullptr;
    return reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api) + abi::kFirstSlotOffset)[k];
  }

  CallStatus FromError(abi::Error* err) {
    CallStatus s;
    if (!err) return s;
    s.ok = false;
    s.code = abi::kUnknown;
    if (auto* fn = reinterpret_cast<abi::ErrorFn>(slot(abi::kError_GetCode))) {
      abi::Error_GetCode_Args a{};
      a.struct_size = sizes.error_getcode;
      a.error = err;
      abi::Error* e2 = fn(&a);
      if (!e2) s.code = a.code;
      else DestroyError(e2);
    }
    if (auto* fn = reinterpret_cast<abi::VoidFn>(slot(abi::kError_Message))) {
      abi::Error_Message_Args a{};
      a.struct_size = sizes.error_message;
      a.error = err;
      fn(&a);
      if (a.message) s.message.assign(a.message, a.message_size);
    }
    DestroyError(err);
    return s;
  }

  void DestroyError(abi::Error* err) {
    if (auto* fn = reinterpret_cast<abi::VoidFn>(slot(abi::kError_Destroy))) {
      abi::Error_Destroy_Args a{};
      a.struct_size = sizes.error_destroy;
      a.error = err;
      fn(&a);
    }
  }

  CallStatus Call(int k, void* args, const char* name) {
    auto* fn = reinterpret_cast<abi::ErrorFn>(slot(k));
    if (!fn) return {false, abi::kUnimplemented, fmt::format("the plugin does not implement {}", name)};
    CallStatus s = FromError(fn(args));
    if (!s.ok) s.message = fmt::format("{}: {}", name, s.message);
    return s;
  }

  // Awaits and destroys an event; a null event is already complete.
  CallStatus Await(abi::Event* ev) {
    if (!ev) return {};
    abi::Event_Args a{};
    a.struct_size = sizes.event;
    a.event = ev;
    CallStatus s = Call(abi::kEvent_Await, &a, "PJRT_Event_Await");
    abi::Event_Args d{};
    d.struct_size = sizes.event;
    d.event = ev;
    Call(abi::kEvent_Destroy, &d, "PJRT_Event_Destroy");
    return s;
  }

  void DestroyBuffer(abi::Buffer* b) {
    if (!b) return;
    abi::Buffer_Destroy_Args a{};
    a.struct_size = sizes.buffer_destroy;
    a.buffer = b;
    Call(abi::kBuffer_Destroy, &a, "PJRT_Buffer_Destroy");
  }

  // A program of format "hlo" (a serialized HloModuleProto) over `code`, which must outlive it.
  abi::Program HloProgram(std::string& code) const {
    abi::Program program{};
    program.struct_size = sizes.program;
    program.code = code.data();
    program.code_size = code.size();
    program.format = "hlo";
    program.format_size = 3;
    return program;
  }

  std::string ClientString(int k, const char* name) {
    abi::Client_String_Args a{};
    a.struct_size = sizes.client_string;
    a.client = client;
    CallStatus s = Call(k, &a, name);
    if (!s.ok || !a.value) return "";
    return std::string(a.value, a.value_size);
  }
};

namespace {

// The typed create options, pointing into `options` (which must outlive the result).
std::vector<abi::NamedValue> NamedValues(const std::vector<PluginOption>& options, size_t struct_size) {
  std::vector<abi::NamedValue> values(options.size());
  for (size_t i = 0; i < options.size(); ++i) {
    const PluginOption& o = options[i];
    abi::NamedValue& v = values[i];
    std::memset(&v, 0, sizeof v);
    v.struct_size = struct_size;
    v.name = o.name.c_str();
    v.name_size = o.name.size();
    v.value_size = 1;
    switch (o.type) {
      case PluginOption::Type::kString:
        v.type = abi::kString;
        v.string_value = o.string_value.c_str();
        v.value_size = o.string_value.size();
        break;
      case PluginOption::Type::kInt64: v.type = abi::kInt64, v.int64_value = o.int_value; break;
      case PluginOption::Type::kFloat: v.type = abi::kFloat, v.float_value = o.float_value; break;
      case PluginOption::Type::kBool: v.type = abi::kBool, v.bool_value = o.bool_value; break;
    }
  }
  return values;
}

}  // namespace

Expected<std::unique_ptr<PjrtSession>> PjrtSession::Open(const std::string& plugin_path, const int* required,
                                                         size_t num_required) {
  struct stat st;
  if (::stat(plugin_path.c_str(), &st) != 0) return Unavailable(fmt::format("PJRT plugin '{}' not found", plugin_path));
  if (!S_ISREG(st.st_mode)) return Unavailable(fmt::format("PJRT plugin '{}' is not a file", plugin_path));
  // Local binding: XLA plugins carry their own LLVM, absl and protobuf.
  void* handle = ::dlopen(plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = ::dlerror();
    return Unavailable(fmt::format("'{}' is not a loadable PJRT plugin: {}", plugin_path, err ? err : "dlopen failed"));
  }
  using GetApiFn = const abi::ApiHeader* (*)();
  auto get_api = reinterpret_cast<GetApiFn>(::dlsym(handle, "GetPjrtApi"));
  if (!get_api) return Unavailable(fmt::format("'{}' is not a PJRT plugin: it has no GetPjrtApi symbol", plugin_path));
  const abi::ApiHeader* api = get_api();
  if (!api) return Unavailable(fmt::format("PJRT plugin '{}': GetPjrtApi returned null", plugin_path));

  std::unique_ptr<PjrtSession> session(new PjrtSession());
  session->impl_ = std::make_unique<Impl>();
  Impl& im = *session->impl_;
  im.handle = handle;
  im.api = api;
  SessionInfo& info = session->info_;
  info.plugin_path = plugin_path;
  info.api_major = api->pjrt_api_version.major_version;
  info.api_minor = api->pjrt_api_version.minor_version;
  info.api_struct_size = api->struct_size;
  if (info.api_major != abi::kOurMajor || info.api_minor < abi::kMinMinor)
    return Unavailable(fmt::format(
        "PJRT plugin '{}' has unsupported PJRT API version {}.{} (opprobe supports {}.{} and later {}.x versions)",
        plugin_path, info.api_major, info.api_minor, abi::kOurMajor, abi::kMinMinor, abi::kOurMajor));
  int highest = 0;
  for (size_t i = 0; i < num_required; ++i) highest = std::max(highest, required[i]);
  if (api->struct_size < abi::kFirstSlotOffset + sizeof(void*) * static_cast<size_t>(highest + 1))
    return Unavailable(fmt::format("PJRT plugin '{}': PJRT_Api table of {} bytes is too small for API {}.{}",
                                   plugin_path, api->struct_size, info.api_major, info.api_minor));
  for (size_t i = 0; i < num_required; ++i)
    if (!im.slot(required[i]))
      return Unavailable(fmt::format("PJRT plugin '{}' lacks required function slot {}", plugin_path, required[i]));
  // Our header's sizes, as they were at the plugin's minor (older plugins may want exact sizes).
  im.sizes = abi::StructSizesForMinor(std::min(info.api_minor, abi::kOurMinor));

  if (im.slot(abi::kPlugin_Initialize)) {
    abi::Plugin_Initialize_Args a{};
    a.struct_size = im.sizes.plugin_initialize;
    CallStatus s = im.Call(abi::kPlugin_Initialize, &a, "PJRT_Plugin_Initialize");
    if (!s.ok) return Unavailable(fmt::format("PJRT plugin '{}': {}", plugin_path, s.message));
  }
  return session;
}

Expected<std::unique_ptr<PjrtSession>> PjrtSession::Load(const std::string& plugin_path,
                                                         const std::vector<PluginOption>& options) {
  constexpr int kRequired[] = {abi::kError_Destroy,
                               abi::kError_Message,
                               abi::kError_GetCode,
                               abi::kEvent_Destroy,
                               abi::kEvent_Await,
                               abi::kClient_Create,
                               abi::kClient_Destroy,
                               abi::kClient_Compile,
                               abi::kClient_BufferFromHostBuffer,
                               abi::kLoadedExecutable_Destroy,
                               abi::kLoadedExecutable_Execute,
                               abi::kBuffer_Destroy,
                               abi::kBuffer_ToHostBuffer};
  OPPROBE_ASSIGN_OR_RETURN(std::unique_ptr<PjrtSession> session,
                           Open(plugin_path, kRequired, sizeof kRequired / sizeof kRequired[0]));
  Impl& im = *session->impl_;
  SessionInfo& info = session->info_;
  std::vector<abi::NamedValue> values = NamedValues(options, im.sizes.named_value);
  abi::Client_Create_Args ca{};
  ca.struct_size = im.sizes.client_create;
  ca.create_options = values.empty() ? nullptr : values.data();
  ca.num_options = values.size();
  CallStatus s = im.Call(abi::kClient_Create, &ca, "PJRT_Client_Create");
  if (!s.ok || !ca.client)
    return Unavailable(fmt::format("PJRT plugin '{}' (API {}.{}): cannot create a client: {}", plugin_path,
                                   info.api_major, info.api_minor, s.ok ? "no client returned" : s.message));
  im.client = ca.client;
  info.platform_name = im.ClientString(abi::kClient_PlatformName, "PJRT_Client_PlatformName");
  info.platform_version = im.ClientString(abi::kClient_PlatformVersion, "PJRT_Client_PlatformVersion");
  abi::Client_AddressableDevices_Args da{};
  da.struct_size = im.sizes.client_addressable_devices;
  da.client = im.client;
  if (im.Call(abi::kClient_AddressableDevices, &da, "PJRT_Client_AddressableDevices").ok && da.addressable_devices)
    im.devices.assign(da.addressable_devices, da.addressable_devices + da.num_addressable_devices);
  info.num_devices = static_cast<int64_t>(im.devices.size());
  if (im.devices.empty())
    return Unavailable(fmt::format("PJRT plugin '{}' ({}) has no addressable device", plugin_path, info.platform_name));
  return session;
}

bool PjrtSession::has_topology() const { return impl_ && impl_->topology; }

PjrtSession::~PjrtSession() {
  if (impl_ && impl_->client) {
    abi::Client_Destroy_Args a{};
    a.struct_size = impl_->sizes.client_destroy;
    a.client = impl_->client;
    impl_->Call(abi::kClient_Destroy, &a, "PJRT_Client_Destroy");
  }
  if (impl_ && impl_->topology) {
    abi::TopologyDescription_Destroy_Args a{};
    a.struct_size = OPPROBE_PJRT_STRUCT_SIZE(abi::TopologyDescription_Destroy_Args, topology);
    a.topology = impl_->topology;
    impl_->Call(abi::kTopologyDescription_Destroy, &a, "PJRT_TopologyDescription_Destroy");
  }
  // No dlclose: plugins keep threads and static state (research/pjrt.md 2.12).
}

RunResult PjrtSession::Run(const std::string& hlo_module_proto, const std::vector<HostArray>& inputs, bool execute) {
  Impl& im = *impl_;
  RunResult result;
  auto fail = [&](RunResult::Stage stage, const CallStatus& s) {
    result.stage = stage;
    result.code = s.code;
    result.message = s.message;
    return result;
  };

  std::string code = hlo_module_proto;
  abi::Program program = im.HloProgram(code);
  abi::Client_Compile_Args ca{};
  ca.struct_size = im.sizes.client_compile;
  ca.client = im.client;
  ca.program = &program;
  ca.compile_options = kCompileOptions;
  ca.compile_options_size = sizeof kCompileOptions;
  CallStatus s = im.Call(abi::kClient_Compile, &ca, "PJRT_Client_Compile");
  if (!s.ok) return fail(RunResult::Stage::kCompile, s);
  if (!ca.executable)
    return fail(RunResult::Stage::kCompile, {false, abi::kInternal, "PJRT_Client_Compile returned no executable"});
  abi::LoadedExecutable* exe = ca.executable;
  std::vector<abi::Buffer*> in_bufs, out_bufs;
  auto cleanup = [&] {
    for (auto* b : in_bufs) im.DestroyBuffer(b);
    for (auto* b : out_bufs) im.DestroyBuffer(b);
    abi::LoadedExecutable_Destroy_Args d{};
    d.struct_size = im.sizes.loaded_executable_destroy;
    d.executable = exe;
    im.Call(abi::kLoadedExecutable_Destroy, &d, "PJRT_LoadedExecutable_Destroy");
  };
  if (!execute) {
    cleanup();
    return result;
  }

  // The device the executable was compiled for.
  abi::Device* device = im.devices.front();
  {
    abi::LoadedExecutable_AddressableDevices_Args a{};
    a.struct_size = im.sizes.loaded_addressable_devices;
    a.executable = exe;
    if (im.Call(abi::kLoadedExecutable_AddressableDevices, &a, "PJRT_LoadedExecutable_AddressableDevices").ok &&
        a.addressable_devices && a.num_addressable_devices > 0)
      device = a.addressable_devices[0];
  }
  size_t num_outputs = 1;
  {
    abi::LoadedExecutable_GetExecutable_Args g{};
    g.struct_size = im.sizes.get_executable;
    g.loaded_executable = exe;
    CallStatus gs = im.Call(abi::kLoadedExecutable_GetExecutable, &g, "PJRT_LoadedExecutable_GetExecutable");
    if (gs.ok && g.executable) {
      abi::Executable_NumOutputs_Args n{};
      n.struct_size = im.sizes.num_outputs;
      n.executable = g.executable;
      CallStatus ns = im.Call(abi::kExecutable_NumOutputs, &n, "PJRT_Executable_NumOutputs");
      abi::Executable_Destroy_Args d{};
      d.struct_size = im.sizes.executable_destroy;
      d.executable = g.executable;
      im.Call(abi::kExecutable_Destroy, &d, "PJRT_Executable_Destroy");
      if (!ns.ok) {
        cleanup();
        return fail(RunResult::Stage::kExecute, ns);
      }
      num_outputs = n.num_outputs;
    }
  }

  for (const HostArray& in : inputs) {
    abi::Client_BufferFromHostBuffer_Args b{};
    b.struct_size = im.sizes.buffer_from_host;
    b.client = im.client;
    b.data = in.data.data();
    b.type = in.type;
    b.dims = in.dims.data();
    b.num_dims = in.dims.size();
    b.host_buffer_semantics = 0;  // ImmutableOnlyDuringCall
    b.device = device;
    CallStatus bs = im.Call(abi::kClient_BufferFromHostBuffer, &b, "PJRT_Client_BufferFromHostBuffer");
    if (bs.ok) bs = im.Await(b.done_with_host_buffer);
    if (b.buffer) in_bufs.push_back(b.buffer);
    if (!bs.ok) {
      cleanup();
      return fail(RunResult::Stage::kTransfer, bs);
    }
  }

  abi::ExecuteOptions opts;
  std::memset(&opts, 0, sizeof opts);
  opts.struct_size = im.sizes.execute_options;
  std::vector<int64_t> non_donatable(inputs.size());
  for (size_t i = 0; i < non_donatable.size(); ++i) non_donatable[i] = static_cast<int64_t>(i);
  if (im.sizes.execute_options >= offsetof(abi::ExecuteOptions, num_non_donatable_input_indices) + sizeof(size_t)) {
    opts.non_donatable_input_indices = non_donatable.data();
    opts.num_non_donatable_input_indices = non_donatable.size();
  }
  out_bufs.assign(num_outputs, nullptr);
  abi::Buffer* const* arg_list = in_bufs.data();
  abi::Buffer** out_list = out_bufs.data();
  abi::Event* complete = nullptr;
  abi::LoadedExecutable_Execute_Args e{};
  e.struct_size = im.sizes.execute;
  e.executable = exe;
  e.options = &opts;
  e.argument_lists = &arg_list;
  e.num_devices = 1;
  e.num_args = in_bufs.size();
  e.output_lists = &out_list;
  e.device_complete_events = &complete;
  CallStatus es = im.Call(abi::kLoadedExecutable_Execute, &e, "PJRT_LoadedExecutable_Execute");
  if (es.ok) es = im.Await(complete);
  if (!es.ok) {
    cleanup();
    return fail(RunResult::Stage::kExecute, es);
  }

  for (abi::Buffer* out : out_bufs) {
    HostArray h;
    if (!out) {
      cleanup();
      return fail(RunResult::Stage::kExecute,
                  {false, abi::kInternal, "PJRT_LoadedExecutable_Execute left an output unset"});
    }
    abi::Buffer_ElementType_Args t{};
    t.struct_size = im.sizes.buffer_element_type;
    t.buffer = out;
    CallStatus ts = im.Call(abi::kBuffer_ElementType, &t, "PJRT_Buffer_ElementType");
    abi::Buffer_Dimensions_Args d{};
    d.struct_size = im.sizes.buffer_dimensions;
    d.buffer = out;
    if (ts.ok) ts = im.Call(abi::kBuffer_Dimensions, &d, "PJRT_Buffer_Dimensions");
    if (!ts.ok) {
      cleanup();
      return fail(RunResult::Stage::kTransfer, ts);
    }
    h.type = t.type;
    if (d.dims) h.dims.assign(d.dims, d.dims + d.num_dims);
    abi::Buffer_ToHostBuffer_Args q{};
    q.struct_size = im.sizes.to_host_buffer;
    q.src = out;
    CallStatus qs = im.Call(abi::kBuffer_ToHostBuffer, &q, "PJRT_Buffer_ToHostBuffer");
    if (qs.ok) {
      h.data.assign(q.dst_size, '\0');
      abi::Buffer_ToHostBuffer_Args c{};
      c.struct_size = im.sizes.to_host_buffer;
      c.src = out;
      c.dst = h.data.data();
      c.dst_size = h.data.size();
      qs = im.Call(abi::kBuffer_ToHostBuffer, &c, "PJRT_Buffer_ToHostBuffer");
      if (qs.ok) qs = im.Await(c.event);
    }
    if (!qs.ok) {
      cleanup();
      return fail(RunResult::Stage::kTransfer, qs);
    }
    result.outputs.push_back(std::move(h));
  }
  cleanup();
  return result;
}

Expected<std::unique_ptr<PjrtSession>> PjrtSession::LoadTopology(const std::string& plugin_path,
                                                                 const std::string& topology_name,
                                                                 const std::vector<PluginOption>& options) {
  constexpr int kRequired[] = {abi::kError_Destroy,
                               abi::kError_Message,
                               abi::kError_GetCode,
                               abi::kExecutable_Destroy,
                               abi::kTopologyDescription_Create,
                               abi::kTopologyDescription_Destroy,
                               abi::kCompile};
  OPPROBE_ASSIGN_OR_RETURN(std::unique_ptr<PjrtSession> session,
                           Open(plugin_path, kRequired, sizeof kRequired / sizeof kRequired[0]));
  Impl& im = *session->impl_;
  SessionInfo& info = session->info_;
  std::vector<abi::NamedValue> values = NamedValues(options, im.sizes.named_value);
  abi::TopologyDescription_Create_Args ta{};
  ta.struct_size = OPPROBE_PJRT_STRUCT_SIZE(abi::TopologyDescription_Create_Args, topology);
  ta.topology_name = topology_name.c_str();
  ta.topology_name_size = topology_name.size();
  ta.create_options = values.empty() ? nullptr : values.data();
  ta.num_options = values.size();
  CallStatus s = im.Call(abi::kTopologyDescription_Create, &ta, "PJRT_TopologyDescription_Create");
  if (!s.ok || !ta.topology)
    return Unavailable(fmt::format("PJRT plugin '{}' (API {}.{}): cannot describe the topology '{}': {}", plugin_path,
                                   info.api_major, info.api_minor, topology_name,
                                   s.ok ? "no topology returned" : s.message));
  im.topology = ta.topology;
  auto topology_string = [&](int k, const char* name) {
    abi::TopologyDescription_String_Args a{};
    a.struct_size = OPPROBE_PJRT_STRUCT_SIZE(abi::TopologyDescription_String_Args, value_size);
    a.topology = im.topology;
    if (!im.slot(k) || !im.Call(k, &a, name).ok || !a.value) return std::string();
    return std::string(a.value, a.value_size);
  };
  info.platform_name = topology_string(abi::kTopologyDescription_PlatformName, "PJRT_TopologyDescription_PlatformName");
  info.platform_version =
      topology_string(abi::kTopologyDescription_PlatformVersion, "PJRT_TopologyDescription_PlatformVersion");
  if (im.slot(abi::kTopologyDescription_GetDeviceDescriptions)) {
    abi::TopologyDescription_GetDeviceDescriptions_Args a{};
    a.struct_size = OPPROBE_PJRT_STRUCT_SIZE(abi::TopologyDescription_GetDeviceDescriptions_Args, num_descriptions);
    a.topology = im.topology;
    if (im.Call(abi::kTopologyDescription_GetDeviceDescriptions, &a, "PJRT_TopologyDescription_GetDeviceDescriptions")
            .ok)
      info.num_devices = static_cast<int64_t>(a.num_descriptions);
  }
  info.topology = topology_name;
  return session;
}

void PjrtSession::ReadCompileStats(Impl& im, abi::Executable* exe, CompileStats& st) {
  st.present = true;
  if (im.slot(abi::kExecutable_GetCompiledMemoryStats)) {
    abi::Executable_GetCompiledMemoryStats_Args m{};
    // The whole struct of the newest layout we know; a plugin reads what its own version has.
    m.struct_size =
        OPPROBE_PJRT_STRUCT_SIZE(abi::Executable_GetCompiledMemoryStats_Args, peak_unpadded_heap_size_in_bytes);
    m.executable = exe;
    if (im.Call(abi::kExecutable_GetCompiledMemoryStats, &m, "PJRT_Executable_GetCompiledMemoryStats").ok) {
      st.has_memory = true;
      st.memory.generated_code_bytes = m.generated_code_size_in_bytes;
      st.memory.argument_bytes = m.argument_size_in_bytes;
      st.memory.output_bytes = m.output_size_in_bytes;
      st.memory.alias_bytes = m.alias_size_in_bytes;
      st.memory.temp_bytes = m.temp_size_in_bytes;
      st.peak_bytes = m.peak_memory_in_bytes;
    }
  }
  if (im.slot(abi::kExecutable_SizeOfGeneratedCodeInBytes)) {
    abi::Executable_SizeOfGeneratedCodeInBytes_Args g{};
    g.struct_size = OPPROBE_PJRT_STRUCT_SIZE(abi::Executable_SizeOfGeneratedCodeInBytes_Args, size_in_bytes);
    g.executable = exe;
    if (im.Call(abi::kExecutable_SizeOfGeneratedCodeInBytes, &g, "PJRT_Executable_SizeOfGeneratedCodeInBytes").ok &&
        g.size_in_bytes > st.memory.generated_code_bytes)
      st.memory.generated_code_bytes = g.size_in_bytes;
  }
  if (im.slot(abi::kExecutable_OptimizedProgram)) {
    // Two calls: the first with no buffer asks for the size.
    abi::Program out{};
    out.struct_size = im.sizes.program;
    abi::Executable_OptimizedProgram_Args o{};
    o.struct_size = OPPROBE_PJRT_STRUCT_SIZE(abi::Executable_OptimizedProgram_Args, program);
    o.executable = exe;
    o.program = &out;
    if (im.Call(abi::kExecutable_OptimizedProgram, &o, "PJRT_Executable_OptimizedProgram").ok && out.code_size > 0 &&
        out.code_size < (size_t{1} << 31)) {
      std::string bytes(out.code_size, '\0');
      out.code = bytes.data();
      if (im.Call(abi::kExecutable_OptimizedProgram, &o, "PJRT_Executable_OptimizedProgram").ok) {
        st.library_calls = LibraryCallTargets(bytes);
        if (!st.library_calls.empty()) st.library_call_sites = LibraryCallSites(bytes);
      }
    }
  }
}

RunResult PjrtSession::CompileProgram(const std::string& hlo_module_proto, const std::string& compile_options) {
  Impl& im = *impl_;
  RunResult result;
  std::string code = hlo_module_proto;
  abi::Program program = im.HloProgram(code);
  // The compiler's own words, without the name of the C API function they came through.
  auto refused = [&](const CallStatus& s, const std::string& function) {
    result.stage = RunResult::Stage::kCompile;
    result.code = s.ok ? abi::kInternal : s.code;
    const std::string prefix = function + ": ";
    result.message = s.ok ? function + " returned no executable"
                          : (s.message.rfind(prefix, 0) == 0 ? s.message.substr(prefix.size()) : s.message);
    return result;
  };
  if (!im.topology) {
    // A client's devices: PJRT_Client_Compile, then the executable behind the loaded one.
    abi::Client_Compile_Args ca{};
    ca.struct_size = im.sizes.client_compile;
    ca.client = im.client;
    ca.program = &program;
    ca.compile_options = compile_options.data();
    ca.compile_options_size = compile_options.size();
    CallStatus s = im.Call(abi::kClient_Compile, &ca, "PJRT_Client_Compile");
    if (!s.ok || !ca.executable) return refused(s, "PJRT_Client_Compile");
    abi::LoadedExecutable_GetExecutable_Args g{};
    g.struct_size = im.sizes.get_executable;
    g.loaded_executable = ca.executable;
    if (im.Call(abi::kLoadedExecutable_GetExecutable, &g, "PJRT_LoadedExecutable_GetExecutable").ok && g.executable) {
      ReadCompileStats(im, g.executable, result.stats);
      abi::Executable_Destroy_Args d{};
      d.struct_size = im.sizes.executable_destroy;
      d.executable = g.executable;
      im.Call(abi::kExecutable_Destroy, &d, "PJRT_Executable_Destroy");
    } else {
      result.stats.present = true;  // compiled; the plugin says nothing of it
    }
    abi::LoadedExecutable_Destroy_Args d{};
    d.struct_size = im.sizes.loaded_executable_destroy;
    d.executable = ca.executable;
    im.Call(abi::kLoadedExecutable_Destroy, &d, "PJRT_LoadedExecutable_Destroy");
    return result;
  }
  abi::Compile_Args ca{};
  ca.struct_size = OPPROBE_PJRT_STRUCT_SIZE(abi::Compile_Args, executable);
  ca.topology = im.topology;
  ca.program = &program;
  ca.compile_options = compile_options.data();
  ca.compile_options_size = compile_options.size();
  ca.client = nullptr;
  CallStatus s = im.Call(abi::kCompile, &ca, "PJRT_Compile");
  if (!s.ok || !ca.executable) return refused(s, "PJRT_Compile");
  ReadCompileStats(im, ca.executable, result.stats);
  abi::Executable_Destroy_Args d{};
  d.struct_size = im.sizes.executable_destroy;
  d.executable = ca.executable;
  im.Call(abi::kExecutable_Destroy, &d, "PJRT_Executable_Destroy");
  return result;
}

std::vector<std::string> LibraryCallTargets(std::string_view program) {
  // Custom-call targets of vendor libraries, as XLA's GPU compiler names them: `__cudnn$convForward`,
  // `__cublas$gemm`, `__cublas$lt$matmul`, `__cusolver$...`. A serialized HloModuleProto holds each target as
  // a plain string, so they are found without parsing the program.
  static constexpr std::string_view kPrefixes[] = {"__cudnn$", "__cublas$", "__cusolver$", "__cufft$"};
  std::vector<std::string> found;
  for (std::string_view prefix : kPrefixes) {
    size_t at = 0;
    while ((at = program.find(prefix, at)) != std::string_view::npos) {
      size_t end = at + prefix.size();
      while (end < program.size() &&
             (std::isalnum(static_cast<unsigned char>(program[end])) || program[end] == '$' || program[end] == '_'))
        ++end;
      std::string target(program.substr(at, end - at));
      if (std::find(found.begin(), found.end(), target) == found.end()) found.push_back(std::move(target));
      at = end;
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

// A protobuf wire-format field: its number, and for a length-delimited one (wire type 2) its bytes.
struct WireField {
  uint32_t number = 0;
  uint32_t type = 0;
  std::string_view bytes;
};

bool ReadVarint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Calls `f` with each field of a message; false on bytes that are not one.
template <typename F>
bool ForEachField(std::string_view in, F&& f) {
  while (!in.empty()) {
    uint64_t key = 0, v = 0;
    if (!ReadVarint(in, key)) return false;
    WireField field;
    field.number = static_cast<uint32_t>(key >> 3);
    field.type = static_cast<uint32_t>(key & 7);
    switch (field.type) {
      case 0:
        if (!ReadVarint(in, v)) return false;
        break;
      case 1:
        if (in.size() < 8) return false;
        in.remove_prefix(8);
        break;
      case 5:
        if (in.size() < 4) return false;
        in.remove_prefix(4);
        break;
      case 2:
        if (!ReadVarint(in, v) || v > in.size()) return false;
        field.bytes = in.substr(0, v);
        in.remove_prefix(v);
        break;
      default: return false;
    }
    f(field);
  }
  return true;
}

}  // namespace

std::vector<CompileStats::LibraryCall> LibraryCallSites(std::string_view program) {
  // HloModuleProto.computations = 3, HloComputationProto.instructions = 2, HloInstructionProto.metadata = 7 and
  // custom_call_target = 28, OpMetadata.op_name = 2 (xla/service/hlo.proto, xla/xla_data.proto).
  // XLA's plugins hand the module inside a wrapper whose field 1 it is (HloProto.hlo_module,
  // HloModuleProtoWithConfig.hlo_module): the module is the first field 1 that holds computations.
  std::vector<CompileStats::LibraryCall> calls;
  const std::vector<std::string> targets = LibraryCallTargets(program);
  auto has_computations = [](std::string_view m) {
    bool found = false;
    ForEachField(m, [&](const WireField& f) { found = found || (f.number == 3 && f.type == 2); });
    return found;
  };
  if (!has_computations(program))
    ForEachField(program, [&](const WireField& f) {
      if (f.number == 1 && f.type == 2 && has_computations(f.bytes)) program = f.bytes;
    });
  ForEachField(program, [&](const WireField& comp) {
    if (comp.number != 3 || comp.type != 2) return;
    ForEachField(comp.bytes, [&](const WireField& instr) {
      if (instr.number != 2 || instr.type != 2) return;
      CompileStats::LibraryCall call;
      ForEachField(instr.bytes, [&](const WireField& f) {
        if (f.number == 28 && f.type == 2) call.target = std::string(f.bytes);
        if (f.number == 7 && f.type == 2)
          ForEachField(f.bytes, [&](const WireField& m) {
            if (m.number == 2 && m.type == 2) call.op_name = std::string(m.bytes);
          });
      });
      if (std::find(targets.begin(), targets.end(), call.target) != targets.end()) calls.push_back(std::move(call));
    });
  });
  return calls;
}

}  // namespace opprobe::compiler_probe::pjrt
