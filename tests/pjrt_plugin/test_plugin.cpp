// A PJRT plugin for tests: the PJRT C ABI (compiler_probe/pjrt/pjrt_abi.h, research/pjrt.md) over
// opprobe's own HLO proto reader and evaluator. It exports only GetPjrtApi. Behaviour is configured by
// environment variables read when the plugin is loaded:
//
//   OPPROBE_TEST_PJRT_API_VERSION=0.54       the PJRT API version it reports (default 0.94)
//   OPPROBE_TEST_PJRT_STRUCT_CHECK=exact|ge  args struct sizes must equal (default) or be at least the
//                                            sizes of that version, as old/Neuron and new XLA plugins do
//   OPPROBE_TEST_PJRT_FAIL_COMPILE_OPCODE=Y  PJRT_Client_Compile fails (UNIMPLEMENTED) when the ROOT opcode is Y
//   OPPROBE_TEST_PJRT_CRASH_OPCODE=X         the process dies of SIGSEGV compiling a ROOT opcode X
//   OPPROBE_TEST_PJRT_HANG_OPCODE=H          compiling a ROOT opcode H never returns
//   OPPROBE_TEST_PJRT_WRONG_NUMERICS_OPCODE=Z  executing a ROOT opcode Z returns a wrong first element
//   OPPROBE_TEST_PJRT_FAIL_EXECUTE_OPCODE=E  PJRT_LoadedExecutable_Execute's event fails for ROOT opcode E
//
// Create options: `label` (string) and `device_count` (int64) are accepted; any other name is an
// INVALID_ARGUMENT error, as XLA's plugins do.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compiler_probe/pjrt/pjrt_abi.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/instruction.h"
#include "hlo/proto_io.h"

namespace abi = opprobe::pjrt_abi;
namespace hlo = opprobe::hlo;

namespace opprobe::pjrt_abi {
struct Error {
  int code;
  std::string message;
};
struct Event {
  int code = 0;  // 0 = success
  std::string message;
};
struct Device {
  int id = 0;
};
struct Client {
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<Device*> device_ptrs;
  std::string label;
};
struct Executable {
  size_t num_outputs = 1;
  std::string optimized;  // a client-less compile's "optimized program"
  int64_t argument_bytes = 0, output_bytes = 0;
};
// A client-less compile's topology (PJRT_TopologyDescription_Create): as many devices as its layout names.
struct TopologyDescription {
  std::string name;
  size_t devices = 1;
  std::vector<DeviceDescription*> descriptions;
};
struct LoadedExecutable {
  std::unique_ptr<hlo::Module> module;
  std::string root_opcode;
  size_t num_outputs = 1;
  Client* client = nullptr;
};
struct Buffer {
  int type = 0;
  std::vector<int64_t> dims;
  std::string data;
};
}  // namespace opprobe::pjrt_abi

namespace {

struct Config {
  int major = 0;
  int minor = 94;
  bool exact = true;
  std::string fail_compile, crash, hang, wrong, fail_execute, internal;
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

const Config& Cfg() {
  static const Config cfg = [] {
    Config c;
    std::string v = Env("OPPROBE_TEST_PJRT_API_VERSION");
    if (!v.empty()) std::sscanf(v.c_str(), "%d.%d", &c.major, &c.minor);
    c.exact = Env("OPPROBE_TEST_PJRT_STRUCT_CHECK") != "ge";
    c.fail_compile = Env("OPPROBE_TEST_PJRT_FAIL_COMPILE_OPCODE");
    c.crash = Env("OPPROBE_TEST_PJRT_CRASH_OPCODE");
    c.hang = Env("OPPROBE_TEST_PJRT_HANG_OPCODE");
    c.wrong = Env("OPPROBE_TEST_PJRT_WRONG_NUMERICS_OPCODE");
    c.fail_execute = Env("OPPROBE_TEST_PJRT_FAIL_EXECUTE_OPCODE");
    c.internal = Env("OPPROBE_TEST_PJRT_INTERNAL_OPCODE");
    return c;
  }();
  return cfg;
}

abi::Error* MakeError(int code, std::string message) { return new abi::Error{code, std::move(message)}; }

// Sizes written out here independently of the caller's table (research/pjrt.md Appendix B).
size_t ExecuteOptionsSize(int minor) {
  if (minor >= 78) return 112;
  if (minor >= 76) return 88;
  if (minor >= 64) return 80;
  if (minor >= 39) return 72;
  return 52;
}

abi::Error* CheckSize(const char* name, size_t got, size_t want) {
  bool bad = Cfg().exact ? got != want : got < want;
  if (!bad) return nullptr;
  return MakeError(abi::kInvalidArgument,
                   std::string("Unexpected ") + name + " size: expected " + std::to_string(want) + ", got " +
                       std::to_string(got) +
                       ". The plugin is likely built with a different version than the framework.");
}

// For the void functions a bad size is fatal, as a CHECK failure in a real plugin would be.
void CheckSizeOrDie(const char* name, size_t got, size_t want) {
  if (abi::Error* e = CheckSize(name, got, want)) {
    std::fprintf(stderr, "F test_plugin: Check failed: %s\n", e->message.c_str());
    std::fflush(stderr);
    std::abort();
  }
}

#define CHECK_ARGS(type, want)            \
  auto* a = static_cast<abi::type*>(raw); \
  if (abi::Error* size_error = CheckSize("PJRT_" #type, a->struct_size, (want))) return size_error

void ErrorDestroy(void* raw) {
  auto* a = static_cast<abi::Error_Destroy_Args*>(raw);
  CheckSizeOrDie("PJRT_Error_Destroy_Args", a->struct_size, 24);
  delete a->error;
}

void ErrorMessage(void* raw) {
  auto* a = static_cast<abi::Error_Message_Args*>(raw);
  CheckSizeOrDie("PJRT_Error_Message_Args", a->struct_size, 40);
  a->message = a->error->message.data();
  a->message_size = a->error->message.size();
}

abi::Error* ErrorGetCode(void* raw) {
  CHECK_ARGS(Error_GetCode_Args, 28);
  a->code = a->error->code;
  return nullptr;
}

abi::Error* PluginInitialize(void* raw) {
  CHECK_ARGS(Plugin_Initialize_Args, 16);
  return nullptr;
}

abi::Error* EventDestroy(void* raw) {
  CHECK_ARGS(Event_Args, 24);
  delete a->event;
  return nullptr;
}

abi::Error* EventAwait(void* raw) {
  CHECK_ARGS(Event_Args, 24);
  if (a->event->code != 0) return MakeError(a->event->code, a->event->message);
  return nullptr;
}

abi::Error* ClientCreate(void* raw) {
  CHECK_ARGS(Client_Create_Args, Cfg().minor >= 61 ? 88 : 72);
  auto client = std::make_unique<abi::Client>();
  int64_t device_count = 1;
  for (size_t i = 0; i < a->num_options; ++i) {
    const abi::NamedValue& v = a->create_options[i];
    if (abi::Error* e = CheckSize("PJRT_NamedValue", v.struct_size, 56)) return e;
    std::string name(v.name, v.name_size);
    if (name == "label" && v.type == abi::kString) {
      client->label.assign(v.string_value, v.value_size);
    } else if (name == "device_count" && v.type == abi::kInt64) {
      device_count = v.int64_value;
    } else if (name == "label" || name == "device_count") {
      return MakeError(abi::kInvalidArgument, "Option passed to PJRT_Client_Create with name " + name +
                                                  " has type index " + std::to_string(v.type) +
                                                  " but expected another type");
    } else {
      return MakeError(abi::kInvalidArgument, "Unexpected option name passed to PJRT_Client_Create: " + name);
    }
  }
  if (device_count < 1 || device_count > 8) return MakeError(abi::kInvalidArgument, "device_count must be in 1..8");
  for (int64_t d = 0; d < device_count; ++d) {
    client->devices.push_back(std::make_unique<abi::Device>(abi::Device{static_cast<int>(d)}));
    client->device_ptrs.push_back(client->devices.back().get());
  }
  a->client = client.release();
  return nullptr;
}

abi::Error* ClientDestroy(void* raw) {
  CHECK_ARGS(Client_Destroy_Args, 24);
  delete a->client;
  return nullptr;
}

abi::Error* ClientPlatformName(void* raw) {
  CHECK_ARGS(Client_String_Args, 40);
  static const char kName[] = "opprobe-test";
  a->value = kName;
  a->value_size = sizeof kName - 1;
  return nullptr;
}

abi::Error* ClientPlatformVersion(void* raw) {
  CHECK_ARGS(Client_String_Args, 40);
  static const std::string version = std::string("evaluator ") + std::string(hlo::kEvaluatorRevision);
  a->value = version.data();
  a->value_size = version.size();
  return nullptr;
}

abi::Error* ClientAddressableDevices(void* raw) {
  CHECK_ARGS(Client_AddressableDevices_Args, 40);
  a->addressable_devices = a->client->device_ptrs.data();
  a->num_addressable_devices = a->client->device_ptrs.size();
  return nullptr;
}

// What both compiles share: the program read, and the configured failures, crash and hang of its root opcode.
abi::Error* CompileProgram(const abi::Program* program, size_t compile_options_size,
                           std::unique_ptr<hlo::Module>& module_out, std::string& opcode_out) {
  if (abi::Error* e = CheckSize("PJRT_Program", program->struct_size, 48)) return e;
  std::string format(program->format, program->format_size);
  if (format != "hlo") return MakeError(abi::kInvalidArgument, "Unknown program format '" + format + "'.");
  if (compile_options_size == 0)
    return MakeError(abi::kInvalidArgument, "empty CompileOptionsProto: 0 replicas and 0 partitions");
  auto module = hlo::ModuleFromProtoBytes(std::string_view(program->code, program->code_size), "PJRT program");
  if (!module.ok())
    return MakeError(abi::kInvalidArgument,
                     "PJRT_Client_Compile: failed to deserialize HloModuleProto: " + module.status().message());
  const hlo::Computation* entry = (*module)->entry();
  if (!entry || !entry->root()) return MakeError(abi::kInvalidArgument, "HloModuleProto has no entry computation");
  std::string opcode(hlo::OpcodeName(entry->root()->opcode));
  const Config& c = Cfg();
  if (opcode == c.hang) {
    std::fprintf(stderr, "test_plugin: compiling %s forever\n", opcode.c_str());
    std::fflush(stderr);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (opcode == c.crash) {
    std::fprintf(stderr, "test_plugin: segmentation fault while compiling %s\n", opcode.c_str());
    std::fflush(stderr);
    std::signal(SIGSEGV, SIG_DFL);
    std::raise(SIGSEGV);
  }
  if (opcode == c.fail_compile)
    return MakeError(abi::kUnimplemented,
                     "test plugin: opcode " + opcode + " is not supported\n(more detail on a second line)");
  if (opcode == c.internal)
    return MakeError(abi::kInternal, "RET_CHECK failure (test_plugin.cc:1) opcode " + opcode + " misconfigured");
  module_out = std::move(module).value();
  opcode_out = opcode;
  return nullptr;
}

abi::Error* ClientCompile(void* raw) {
  CHECK_ARGS(Client_Compile_Args, 56);
  std::unique_ptr<hlo::Module> module;
  std::string opcode;
  if (abi::Error* e = CompileProgram(a->program, a->compile_options_size, module, opcode)) return e;
  auto exe = std::make_unique<abi::LoadedExecutable>();
  const hlo::Shape& root_shape = module->entry()->root()->shape;
  exe->num_outputs = root_shape.IsTuple() ? root_shape.tuple_shapes().size() : 1;
  exe->root_opcode = opcode;
  exe->client = a->client;
  exe->module = std::move(module);
  a->executable = exe.release();
  return nullptr;
}

size_t LayoutDevices(const std::string& layout) {
  size_t n = 1;
  for (size_t start = 0; start < layout.size();) {
    size_t x = layout.find('x', start);
    n *=
        std::strtoul(layout.substr(start, x == std::string::npos ? std::string::npos : x - start).c_str(), nullptr, 10);
    start = x == std::string::npos ? layout.size() : x + 1;
  }
  return n;
}

abi::Error* TopologyCreate(void* raw) {
  CHECK_ARGS(TopologyDescription_Create_Args, 56);
  auto t = std::make_unique<abi::TopologyDescription>();
  t->name.assign(a->topology_name, a->topology_name_size);
  std::string layout = t->name.substr(t->name.find(':') + 1);
  for (size_t i = 0; i < a->num_options; ++i)
    if (std::string(a->create_options[i].name, a->create_options[i].name_size) == "topology" &&
        a->create_options[i].type == abi::kString)
      layout.assign(a->create_options[i].string_value, a->create_options[i].value_size);
  if (t->name == "bad:1x1") return MakeError(abi::kInvalidArgument, "Unknown topology bad:1x1");
  t->devices = layout.empty() ? 1 : LayoutDevices(layout);
  t->descriptions.assign(t->devices, nullptr);
  a->topology = t.release();
  return nullptr;
}

abi::Error* TopologyDestroy(void* raw) {
  CHECK_ARGS(TopologyDescription_Destroy_Args, 24);
  delete a->topology;
  return nullptr;
}

abi::Error* TopologyPlatformName(void* raw) {
  CHECK_ARGS(TopologyDescription_String_Args, 40);
  static const char kName[] = "test";
  a->value = kName;
  a->value_size = sizeof kName - 1;
  return nullptr;
}

abi::Error* TopologyPlatformVersion(void* raw) {
  CHECK_ARGS(TopologyDescription_String_Args, 40);
  static const char kVersion[] = "test-compiler 1.0";
  a->value = kVersion;
  a->value_size = sizeof kVersion - 1;
  return nullptr;
}

abi::Error* TopologyGetDeviceDescriptions(void* raw) {
  CHECK_ARGS(TopologyDescription_GetDeviceDescriptions_Args, 40);
  a->descriptions = a->topology->descriptions.data();
  a->num_descriptions = a->topology->descriptions.size();
  return nullptr;
}

int64_t ArrayBytes(const hlo::Shape& s) {
  if (!s.IsArray()) return 0;
  int64_t n = hlo::ByteWidth(s.element_type());
  for (int64_t d : s.dimensions()) n *= d;
  return n;
}

// The client-less compile: the same checks as the client's; a convolution "compiles to" a cuDNN call, whose target
// the optimized program names as XLA's GPU compiler's does.
abi::Error* Compile(void* raw) {
  CHECK_ARGS(Compile_Args, 64);
  if (!a->topology) return MakeError(abi::kInvalidArgument, "PJRT_Compile: no topology");
  std::unique_ptr<hlo::Module> module;
  std::string opcode;
  if (abi::Error* e = CompileProgram(a->program, a->compile_options_size, module, opcode)) return e;
  auto exe = std::make_unique<abi::Executable>();
  const hlo::Instruction* root = module->entry()->root();
  exe->num_outputs = root->shape.IsTuple() ? root->shape.tuple_shapes().size() : 1;
  exe->optimized = std::string(a->program->code, a->program->code_size);
  if (root->opcode == hlo::Opcode::kConvolution) exe->optimized += std::string("\x0a\x13__cudnn$convForward");
  for (const auto& in : module->entry()->instructions())
    if (in->opcode == hlo::Opcode::kParameter) exe->argument_bytes += ArrayBytes(in->shape);
  exe->output_bytes = ArrayBytes(root->shape);
  a->executable = exe.release();
  return nullptr;
}

abi::Error* ExecutableOptimizedProgram(void* raw) {
  CHECK_ARGS(Executable_OptimizedProgram_Args, 32);
  a->program->code_size = a->executable->optimized.size();
  if (a->program->code) std::memcpy(a->program->code, a->executable->optimized.data(), a->executable->optimized.size());
  static const char kFormat[] = "hlo";
  a->program->format = kFormat;
  a->program->format_size = 3;
  return nullptr;
}

abi::Error* ExecutableGetCompiledMemoryStats(void* raw) {
  auto* a = static_cast<abi::Executable_GetCompiledMemoryStats_Args*>(raw);
  if (a->struct_size < 112) return CheckSize("PJRT_Executable_GetCompiledMemoryStats_Args", a->struct_size, 112);
  a->generated_code_size_in_bytes = 4096;
  a->argument_size_in_bytes = a->executable->argument_bytes;
  a->output_size_in_bytes = a->executable->output_bytes;
  a->alias_size_in_bytes = 0;
  a->temp_size_in_bytes = 0;
  return nullptr;
}

abi::Error* BufferFromHostBuffer(void* raw) {
  CHECK_ARGS(Client_BufferFromHostBuffer_Args, 120);
  if (!a->device && !a->memory) return MakeError(abi::kInvalidArgument, "no device given");
  if (a->byte_strides) return MakeError(abi::kUnimplemented, "byte strides are not supported");
  int64_t n = 1;
  for (size_t i = 0; i < a->num_dims; ++i) n *= a->dims[i];
  int bytes = 0;
  switch (a->type) {
    case abi::kPred:
    case abi::kS8:
    case abi::kU8: bytes = 1; break;
    case abi::kS16:
    case abi::kU16:
    case abi::kF16:
    case abi::kBF16: bytes = 2; break;
    case abi::kS32:
    case abi::kU32:
    case abi::kF32: bytes = 4; break;
    case abi::kS64:
    case abi::kU64:
    case abi::kF64:
    case abi::kC64: bytes = 8; break;
    case abi::kC128: bytes = 16; break;
    default: return MakeError(abi::kUnimplemented, "buffer type " + std::to_string(a->type) + " is not supported");
  }
  auto b = std::make_unique<abi::Buffer>();
  b->type = a->type;
  b->dims.assign(a->dims, a->dims + a->num_dims);
  b->data.assign(static_cast<const char*>(a->data), static_cast<size_t>(n * bytes));
  a->buffer = b.release();
  a->done_with_host_buffer = new abi::Event();
  return nullptr;
}

abi::Error* LoadedExecutableGetExecutable(void* raw) {
  CHECK_ARGS(LoadedExecutable_GetExecutable_Args, 32);
  a->executable = new abi::Executable();
  a->executable->num_outputs = a->loaded_executable->num_outputs;
  return nullptr;
}

abi::Error* ExecutableNumOutputs(void* raw) {
  CHECK_ARGS(Executable_NumOutputs_Args, 32);
  a->num_outputs = a->executable->num_outputs;
  return nullptr;
}

abi::Error* ExecutableDestroy(void* raw) {
  CHECK_ARGS(Executable_Destroy_Args, 24);
  delete a->executable;
  return nullptr;
}

abi::Error* LoadedExecutableDestroy(void* raw) {
  CHECK_ARGS(LoadedExecutable_Destroy_Args, 24);
  delete a->executable;
  return nullptr;
}

abi::Error* LoadedExecutableAddressableDevices(void* raw) {
  CHECK_ARGS(LoadedExecutable_AddressableDevices_Args, 40);
  a->addressable_devices = a->executable->client->device_ptrs.data();
  a->num_addressable_devices = 1;
  return nullptr;
}

hlo::PrimitiveType ToPrimitive(int t) {
  using P = hlo::PrimitiveType;
  switch (t) {
    case abi::kPred: return P::PRED;
    case abi::kS8: return P::S8;
    case abi::kS16: return P::S16;
    case abi::kS32: return P::S32;
    case abi::kS64: return P::S64;
    case abi::kU8: return P::U8;
    case abi::kU16: return P::U16;
    case abi::kU32: return P::U32;
    case abi::kU64: return P::U64;
    case abi::kF16: return P::F16;
    case abi::kF32: return P::F32;
    case abi::kF64: return P::F64;
    case abi::kBF16: return P::BF16;
    case abi::kC64: return P::C64;
    case abi::kC128: return P::C128;
    default: return P::PRIMITIVE_TYPE_INVALID;
  }
}

int ToPjrt(hlo::PrimitiveType t) {
  for (int k = abi::kPred; k <= abi::kC128; ++k)
    if (ToPrimitive(k) == t) return k;
  return abi::kInvalid;
}

void Flatten(hlo::Literal& l, std::vector<hlo::Literal*>& out) {
  if (l.shape().IsTuple()) {
    for (auto& e : l.mutable_tuple_elements()) Flatten(e, out);
  } else {
    out.push_back(&l);
  }
}

abi::Error* LoadedExecutableExecute(void* raw) {
  CHECK_ARGS(LoadedExecutable_Execute_Args, 80);
  if (!a->options) return MakeError(abi::kInvalidArgument, "PJRT_ExecuteOptions is null");
  if (abi::Error* e = CheckSize("PJRT_ExecuteOptions", a->options->struct_size, ExecuteOptionsSize(Cfg().minor)))
    return e;
  if (a->num_devices != 1) return MakeError(abi::kInvalidArgument, "expected 1 device");
  abi::LoadedExecutable* exe = a->executable;
  std::vector<hlo::Literal> args;
  for (size_t i = 0; i < a->num_args; ++i) {
    const abi::Buffer* b = a->argument_lists[0][i];
    hlo::Literal l(hlo::Shape::Array(ToPrimitive(b->type), b->dims));
    if (l.data().size() != b->data.size()) return MakeError(abi::kInvalidArgument, "argument size mismatch");
    std::memcpy(l.data().data(), b->data.data(), b->data.size());
    args.push_back(std::move(l));
  }
  auto* event = new abi::Event();
  if (a->device_complete_events) a->device_complete_events[0] = event;
  auto result = hlo::Evaluate(*exe->module, args);
  if (!result.ok()) {
    // Asynchronous failure: reported through the completion event, as real plugins do.
    event->code = abi::kInternal;
    event->message = "test plugin: evaluation failed: " + result.status().message();
  } else if (exe->root_opcode == Cfg().fail_execute) {
    event->code = abi::kInternal;
    event->message = "test plugin: execution of " + exe->root_opcode + " failed";
  }
  if (event->code != 0) {
    if (!a->device_complete_events) {
      abi::Error* e = MakeError(event->code, event->message);
      delete event;
      return e;
    }
    for (size_t i = 0; i < exe->num_outputs; ++i) a->output_lists[0][i] = new abi::Buffer();
    return nullptr;
  }
  std::vector<hlo::Literal*> outs;
  Flatten(*result, outs);
  if (exe->root_opcode == Cfg().wrong && !outs.empty() && outs[0]->element_count() > 0) {
    hlo::Literal& o = *outs[0];
    hlo::PrimitiveType t = o.shape().element_type();
    if (t == hlo::PrimitiveType::PRED) o.data()[0] = o.data()[0] ? 0 : 1;
    else if (hlo::IsComplex(t)) o.SetFromComplex(0, o.GetAsComplex(0) + std::complex<double>(1.0, 0.0));
    else if (hlo::IsFloatingPoint(t)) o.SetFromDouble(0, o.GetAsDouble(0) + 1.0);
    else o.SetFromInt64(0, o.GetAsInt64(0) + 1);
  }
  for (size_t i = 0; i < outs.size() && i < exe->num_outputs; ++i) {
    auto* b = new abi::Buffer();
    b->type = ToPjrt(outs[i]->shape().element_type());
    b->dims = outs[i]->shape().dimensions();
    b->data.assign(reinterpret_cast<const char*>(outs[i]->data().data()), outs[i]->data().size());
    a->output_lists[0][i] = b;
  }
  if (!a->device_complete_events) delete event;
  return nullptr;
}

abi::Error* BufferDestroy(void* raw) {
  CHECK_ARGS(Buffer_Destroy_Args, 24);
  delete a->buffer;
  return nullptr;
}

abi::Error* BufferElementType(void* raw) {
  CHECK_ARGS(Buffer_ElementType_Args, 28);
  a->type = a->buffer->type;
  return nullptr;
}

abi::Error* BufferDimensions(void* raw) {
  CHECK_ARGS(Buffer_Dimensions_Args, 40);
  a->dims = a->buffer->dims.data();
  a->num_dims = a->buffer->dims.size();
  return nullptr;
}

abi::Error* BufferToHostBuffer(void* raw) {
  CHECK_ARGS(Buffer_ToHostBuffer_Args, 56);
  if (a->host_layout) return MakeError(abi::kUnimplemented, "host layouts are not supported");
  if (!a->dst) {
    a->dst_size = a->src->data.size();
    return nullptr;
  }
  if (a->dst_size < a->src->data.size()) return MakeError(abi::kInvalidArgument, "destination too small");
  std::memcpy(a->dst, a->src->data.data(), a->src->data.size());
  a->event = new abi::Event();
  return nullptr;
}

struct ApiTable {
  abi::ApiHeader header;
  void* slots[abi::kSlotsAt94];
};

ApiTable* BuildApi() {
  static ApiTable table;
  const Config& c = Cfg();
  std::memset(&table, 0, sizeof table);
  // Older versions have fewer slots (0.60 had about 92); every slot used here is below 71.
  size_t slots = c.minor >= 94 ? abi::kSlotsAt94 : 92;
  table.header.struct_size = abi::kFirstSlotOffset + sizeof(void*) * slots;
  table.header.pjrt_api_version.struct_size = 24;
  table.header.pjrt_api_version.major_version = c.major;
  table.header.pjrt_api_version.minor_version = c.minor;
  auto set = [&](int k, auto fn) { table.slots[k] = reinterpret_cast<void*>(fn); };
  set(abi::kError_Destroy, &ErrorDestroy);
  set(abi::kError_Message, &ErrorMessage);
  set(abi::kError_GetCode, &ErrorGetCode);
  set(abi::kPlugin_Initialize, &PluginInitialize);
  set(abi::kEvent_Destroy, &EventDestroy);
  set(abi::kEvent_Await, &EventAwait);
  set(abi::kClient_Create, &ClientCreate);
  set(abi::kClient_Destroy, &ClientDestroy);
  set(abi::kClient_PlatformName, &ClientPlatformName);
  set(abi::kClient_PlatformVersion, &ClientPlatformVersion);
  set(abi::kClient_AddressableDevices, &ClientAddressableDevices);
  set(abi::kClient_Compile, &ClientCompile);
  set(abi::kClient_BufferFromHostBuffer, &BufferFromHostBuffer);
  set(abi::kExecutable_Destroy, &ExecutableDestroy);
  set(abi::kExecutable_NumOutputs, &ExecutableNumOutputs);
  set(abi::kLoadedExecutable_Destroy, &LoadedExecutableDestroy);
  set(abi::kLoadedExecutable_GetExecutable, &LoadedExecutableGetExecutable);
  set(abi::kLoadedExecutable_AddressableDevices, &LoadedExecutableAddressableDevices);
  set(abi::kLoadedExecutable_Execute, &LoadedExecutableExecute);
  set(abi::kBuffer_Destroy, &BufferDestroy);
  set(abi::kBuffer_ElementType, &BufferElementType);
  set(abi::kBuffer_Dimensions, &BufferDimensions);
  set(abi::kBuffer_ToHostBuffer, &BufferToHostBuffer);
  if (c.minor >= 94) {  // the client-less compile for a topology
    set(abi::kExecutable_OptimizedProgram, &ExecutableOptimizedProgram);
    set(abi::kTopologyDescription_Create, &TopologyCreate);
    set(abi::kTopologyDescription_Destroy, &TopologyDestroy);
    set(abi::kTopologyDescription_PlatformName, &TopologyPlatformName);
    set(abi::kTopologyDescription_PlatformVersion, &TopologyPlatformVersion);
    set(abi::kTopologyDescription_GetDeviceDescriptions, &TopologyGetDeviceDescriptions);
    set(abi::kCompile, &Compile);
    set(abi::kExecutable_GetCompiledMemoryStats, &ExecutableGetCompiledMemoryStats);
  }
  return &table;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const abi::ApiHeader* GetPjrtApi() {
  static ApiTable* api = BuildApi();
  return &api->header;
}
