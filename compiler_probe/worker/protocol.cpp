#include "compiler_probe/worker/protocol.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace opprobe::compiler_probe::worker {

PluginOption PluginOption::Parse(const std::string& name, const std::string& value) {
  PluginOption o;
  o.name = name;
  if (value == "true" || value == "false") {
    o.type = Type::kBool;
    o.bool_value = value == "true";
    return o;
  }
  if (!value.empty()) {
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(value.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0') {
      o.type = Type::kInt64;
      o.int_value = i;
      return o;
    }
    errno = 0;
    float f = std::strtof(value.c_str(), &end);
    if (errno == 0 && end && *end == '\0' && value.find_first_of(".eE") != std::string::npos) {
      o.type = Type::kFloat;
      o.float_value = f;
      return o;
    }
  }
  o.type = Type::kString;
  o.string_value = value;
  return o;
}

std::optional<int> PjrtBufferType(hlo::PrimitiveType t) {
  using P = hlo::PrimitiveType;
  switch (t) {
    case P::PRED: return kArrayPred;
    case P::S8: return kArrayS8;
    case P::S16: return kArrayS16;
    case P::S32: return kArrayS32;
    case P::S64: return kArrayS64;
    case P::U8: return kArrayU8;
    case P::U16: return kArrayU16;
    case P::U32: return kArrayU32;
    case P::U64: return kArrayU64;
    case P::F16: return kArrayF16;
    case P::F32: return kArrayF32;
    case P::F64: return kArrayF64;
    case P::BF16: return kArrayBF16;
    case P::C64: return kArrayC64;
    case P::C128: return kArrayC128;
    default: return std::nullopt;
  }
}

std::optional<hlo::PrimitiveType> PrimitiveTypeFromPjrt(int pjrt_type) {
  using P = hlo::PrimitiveType;
  switch (pjrt_type) {
    case kArrayPred: return P::PRED;
    case kArrayS8: return P::S8;
    case kArrayS16: return P::S16;
    case kArrayS32: return P::S32;
    case kArrayS64: return P::S64;
    case kArrayU8: return P::U8;
    case kArrayU16: return P::U16;
    case kArrayU32: return P::U32;
    case kArrayU64: return P::U64;
    case kArrayF16: return P::F16;
    case kArrayF32: return P::F32;
    case kArrayF64: return P::F64;
    case kArrayBF16: return P::BF16;
    case kArrayC64: return P::C64;
    case kArrayC128: return P::C128;
    default: return std::nullopt;
  }
}

int PjrtTypeByteSize(int pjrt_type) {
  auto t = PrimitiveTypeFromPjrt(pjrt_type);
  return t ? hlo::ByteWidth(*t) : 0;
}

std::string ErrorCodeName(int code) {
  static const char* kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  if (code >= 0 && code <= 16) return kNames[code];
  return fmt::format("code {}", code);
}

namespace {

// A minimal binary codec. The length's place is kept at the front of a message and filled in by Framed(), so a
// message of hundreds of megabytes (a batch's inputs) is not copied behind its length; `reserve` is the body's
// expected size, for one allocation.
class Writer {
 public:
  explicit Writer(size_t reserve = 0) {
    out_.reserve(sizeof(uint64_t) + reserve);
    out_.append(sizeof(uint64_t), '\0');
  }
  template <typename T>
  void Pod(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Str(const std::string& s) {
    Pod<uint64_t>(s.size());
    out_.append(s);
  }
  void Array(const HostArray& a) {
    Pod<int32_t>(a.type);
    Pod<uint32_t>(static_cast<uint32_t>(a.dims.size()));
    for (int64_t d : a.dims) Pod<int64_t>(d);
    Str(a.data);
  }
  static size_t ArraySize(const HostArray& a) { return 4 + 4 + 8 * a.dims.size() + 8 + a.data.size(); }
  // The message, ready to send; the writer is left empty.
  std::string Framed() {
    const uint64_t n = out_.size() - sizeof n;
    std::memcpy(out_.data(), &n, sizeof n);
    return std::move(out_);
  }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  bool Pod(T& v) {
    if (pos_ + sizeof v > in_.size()) return false;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool Str(std::string& s) {
    uint64_t n = 0;
    if (!Pod(n) || n > in_.size() - pos_) return false;
    s.assign(in_, pos_, n);
    pos_ += n;
    return true;
  }
  bool Array(HostArray& a) {
    int32_t type = 0;
    uint32_t rank = 0;
    if (!Pod(type) || !Pod(rank) || rank > 64) return false;
    a.type = type;
    a.dims.resize(rank);
    for (auto& d : a.dims)
      if (!Pod(d)) return false;
    return Str(a.data);
  }
  bool at_end() const { return pos_ >= in_.size(); }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

void WriteStats(Writer& w, const CompileStats& st) {
  w.Pod<uint8_t>(1);
  w.Pod<uint8_t>(st.has_memory ? 1 : 0);
  for (int64_t v : {st.memory.generated_code_bytes, st.memory.argument_bytes, st.memory.output_bytes,
                    st.memory.alias_bytes, st.memory.temp_bytes, st.peak_bytes})
    w.Pod<int64_t>(v);
  w.Pod<uint32_t>(static_cast<uint32_t>(st.library_calls.size()));
  for (const auto& l : st.library_calls) w.Str(l);
  w.Pod<uint32_t>(static_cast<uint32_t>(st.library_call_sites.size()));
  for (const auto& c : st.library_call_sites) {
    w.Str(c.target);
    w.Str(c.op_name);
  }
}

bool ReadStats(Reader& r, CompileStats& st) {
  uint8_t present = 0, has_memory = 0;
  if (!r.Pod(present) || !r.Pod(has_memory)) return false;
  st.present = present != 0;
  st.has_memory = has_memory != 0;
  for (int64_t* v : {&st.memory.generated_code_bytes, &st.memory.argument_bytes, &st.memory.output_bytes,
                     &st.memory.alias_bytes, &st.memory.temp_bytes, &st.peak_bytes})
    if (!r.Pod(*v)) return false;
  uint32_t n = 0;
  if (!r.Pod(n) || n > 4096) return false;
  st.library_calls.resize(n);
  for (auto& l : st.library_calls)
    if (!r.Str(l)) return false;
  if (!r.Pod(n) || n > (1u << 20)) return false;
  st.library_call_sites.resize(n);
  for (auto& c : st.library_call_sites)
    if (!r.Str(c.target) || !r.Str(c.op_name)) return false;
  return true;
}

bool ReadExactBlocking(int fd, char* buf, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = ::read(fd, buf + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string EncodeGreeting(const SessionInfo& info) {
  Writer hello;
  hello.Pod<uint8_t>(1);
  hello.Pod<int32_t>(info.api_major);
  hello.Pod<int32_t>(info.api_minor);
  hello.Pod<uint64_t>(info.api_struct_size);
  hello.Str(info.platform_name);
  hello.Str(info.platform_version);
  hello.Pod<int64_t>(info.num_devices);
  return hello.Framed();
}

std::string EncodeRefusal(const std::string& message) {
  Writer hello;
  hello.Pod<uint8_t>(0);
  hello.Str(message);
  return hello.Framed();
}

std::optional<Greeting> DecodeGreeting(const std::string& body) {
  Reader r(body);
  Greeting g;
  uint8_t ok = 0;
  if (!r.Pod(ok)) return std::nullopt;
  if (!ok) {
    r.Str(g.refusal);
    return g;
  }
  g.loaded = true;
  SessionInfo& info = g.info;
  int32_t major = 0, minor = 0;
  uint64_t struct_size = 0;
  if (!(r.Pod(major) && r.Pod(minor) && r.Pod(struct_size) && r.Str(info.platform_name) &&
        r.Str(info.platform_version) && r.Pod(info.num_devices)))
    return std::nullopt;
  info.api_major = major;
  info.api_minor = minor;
  info.api_struct_size = struct_size;
  return g;
}

std::string EncodeRequest(uint8_t flags, const std::string& hlo_module_proto, const std::vector<HostArray>& inputs,
                          const std::string* compile_options) {
  size_t size = 1 + 8 + hlo_module_proto.size() + 4 + (compile_options ? 8 + compile_options->size() : 0);
  for (const auto& in : inputs) size += Writer::ArraySize(in);
  Writer w(size);
  w.Pod<uint8_t>(flags);
  w.Str(hlo_module_proto);
  w.Pod<uint32_t>(static_cast<uint32_t>(inputs.size()));
  for (const auto& in : inputs) w.Array(in);
  if (compile_options) w.Str(*compile_options);
  return w.Framed();
}

std::optional<Request> DecodeRequest(const std::string& body) {
  Reader r(body);
  Request q;
  uint32_t n = 0;
  bool ok = r.Pod(q.flags) && r.Str(q.hlo_module_proto) && r.Pod(n);
  for (uint32_t i = 0; ok && i < n; ++i) {
    q.inputs.emplace_back();
    ok = r.Array(q.inputs.back());
  }
  if (ok && (q.flags & kRequestCompileProgram)) ok = r.Str(q.compile_options);
  if (!ok) return std::nullopt;
  return q;
}

std::string EncodeReply(const RunResult& res) {
  Writer w;
  w.Pod<int32_t>(static_cast<int32_t>(res.stage));
  w.Pod<int32_t>(res.code);
  w.Str(res.message);
  w.Pod<uint32_t>(static_cast<uint32_t>(res.outputs.size()));
  for (const auto& o : res.outputs) w.Array(o);
  if (res.stats.present) WriteStats(w, res.stats);
  return w.Framed();
}

std::optional<RunResult> DecodeReply(const std::string& body) {
  Reader r(body);
  RunResult res;
  int32_t stage = 0, code = 0;
  uint32_t n = 0;
  bool ok = r.Pod(stage) && r.Pod(code) && r.Str(res.message) && r.Pod(n);
  for (uint32_t i = 0; ok && i < n; ++i) {
    res.outputs.emplace_back();
    ok = r.Array(res.outputs.back());
  }
  // A whole program's statistics follow the outputs (kRequestCompileProgram: the Python worker sends them too).
  if (ok && !r.at_end()) ok = ReadStats(r, res.stats);
  if (!ok || stage < 0 || stage > static_cast<int>(RunResult::Stage::kTransfer)) return std::nullopt;
  res.stage = static_cast<RunResult::Stage>(stage);
  res.code = code;
  return res;
}

bool WriteMessageBlocking(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool ReadMessageBlocking(int fd, std::string& out) {
  uint64_t n = 0;
  if (!ReadExactBlocking(fd, reinterpret_cast<char*>(&n), sizeof n)) return false;
  if (n > kMaxMessageBytes) return false;
  out.assign(n, '\0');
  return ReadExactBlocking(fd, out.data(), n);
}

}  // namespace opprobe::compiler_probe::worker
