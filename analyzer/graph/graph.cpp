#include "analyzer/graph/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstring>

#include "hlo/literal.h"

namespace opprobe::analyzer {

bool TensorMeta::is_dynamic() const {
  for (bool d : dynamic)
    if (d) return true;
  return false;
}

int64_t TensorMeta::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

namespace {
void AppendInt(std::string& out, int64_t v) {
  if (v >= 0 && v < 10) {  // most sizes and ints of a signature: one character, no conversion
    out += static_cast<char>('0' + v);
    return;
  }
  char num[24];
  out.append(num, std::to_chars(num, num + sizeof num, v).ptr);
}
}  // namespace

void TensorMeta::AppendTo(std::string& out) const {
  const std::string_view type = torch_dtype.empty() ? hlo::PrimitiveTypeName(dtype) : std::string_view(torch_dtype);
  // Written into a buffer and added to `out` at once (a signature key formats every tensor of a call): a size takes
  // at most 24 characters (',', "<=", 20 digits and a sign).
  char buf[256];
  if (type.size() + 2 + 24 * sizes.size() <= sizeof buf) {
    char* p = buf;
    std::memcpy(p, type.data(), type.size());
    p += type.size();
    *p++ = '[';
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (i) *p++ = ',';
      if (i < dynamic.size() && dynamic[i]) {
        *p++ = '<';
        *p++ = '=';
      }
      p = std::to_chars(p, p + 21, sizes[i]).ptr;
    }
    *p++ = ']';
    out.append(buf, static_cast<size_t>(p - buf));
    return;
  }
  out += type;
  out += '[';
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ',';
    if (i < dynamic.size() && dynamic[i]) out += "<=";
    AppendInt(out, sizes[i]);
  }
  out += ']';
}

std::string TensorMeta::ToString() const {
  std::string out;
  AppendTo(out);
  return out;
}

Value Value::Tensor(TensorMeta m) {
  Value v;
  v.kind = Kind::kTensor;
  v.tensor = std::move(m);
  return v;
}
Value Value::Int(int64_t x) {
  Value v;
  v.kind = Kind::kInt;
  v.i = x;
  return v;
}
Value Value::Float(double x) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = x;
  return v;
}
Value Value::Bool(bool x) {
  Value v;
  v.kind = Kind::kBool;
  v.b = x;
  return v;
}
Value Value::IntList(std::vector<int64_t> x) {
  Value v;
  v.kind = Kind::kIntList;
  v.ints = std::move(x);
  return v;
}
Value Value::Dtype(hlo::PrimitiveType t) {
  Value v;
  v.kind = Kind::kDtype;
  v.dtype = t;
  return v;
}
Value Value::String(std::string x) {
  Value v;
  v.kind = Kind::kString;
  v.s = std::move(x);
  return v;
}

double Value::AsDouble() const {
  switch (kind) {
    case Kind::kBool: return b ? 1.0 : 0.0;
    case Kind::kInt: return static_cast<double>(i);
    case Kind::kFloat: return f;
    case Kind::kComplex: return c.real();
    default: return 0.0;
  }
}

std::string Value::ToString() const {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kTensor: return tensor.ToString();
    case Kind::kTensorList: {
      std::vector<std::string> parts;
      parts.reserve(tensors.size());
      for (const auto& t : tensors) parts.push_back(t ? t->ToString() : "None");
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case Kind::kBool: return b ? "True" : "False";
    case Kind::kInt: return std::to_string(i);
    case Kind::kFloat: return hlo::RoundTripDouble(f, false);
    case Kind::kComplex:
      return fmt::format("({}+{}j)", hlo::RoundTripDouble(c.real(), false), hlo::RoundTripDouble(c.imag(), false));
    case Kind::kString: return fmt::format("'{}'", s);
    case Kind::kIntList: return fmt::format("[{}]", fmt::join(ints, ","));
    case Kind::kFloatList: {
      std::vector<std::string> parts;
      parts.reserve(floats.size());
      for (double x : floats) parts.push_back(hlo::RoundTripDouble(x, false));
      return fmt::format("[{}]", fmt::join(parts, ","));
    }
    case Kind::kBoolList: {
      std::vector<std::string> parts;
      parts.reserve(bools.size());
      for (bool x : bools) parts.push_back(x ? "True" : "False");
      return fmt::format("[{}]", fmt::join(parts, ","));
    }
    case Kind::kDtype: return s.empty() ? std::string(hlo::PrimitiveTypeName(dtype)) : s;
    case Kind::kDevice:
    case Kind::kLayout:
    case Kind::kMemoryFormat: return s;
  }
  return "?";
}

void Value::AppendTo(std::string& out) const {
  switch (kind) {
    case Kind::kNone: out += "None"; return;
    case Kind::kTensor: tensor.AppendTo(out); return;
    case Kind::kBool: out += b ? "True" : "False"; return;
    case Kind::kInt: AppendInt(out, i); return;
    case Kind::kIntList:
      out += '[';
      for (size_t k = 0; k < ints.size(); ++k) {
        if (k) out += ',';
        AppendInt(out, ints[k]);
      }
      out += ']';
      return;
    default: out += ToString(); return;
  }
}

std::string CaptureStatus::Failure() const {
  std::string where = location.empty() ? fmt::format("with exit status {}", exit_code)
                                       : fmt::format("at {}:{}", location.file, location.line);
  std::string what = exception_type.empty()      ? std::string()
                     : exception_message.empty() ? fmt::format(" ({})", exception_type)
                                                 : fmt::format(" ({}: {})", exception_type, exception_message);
  return "failed " + where + what;
}

std::string SourceLoc::ToString() const {
  if (empty()) return "";
  auto slash = file.find_last_of('/');
  std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  return fmt::format("{} {}", base, line);
}

std::string QualifiedOpName(const std::string& op, const std::string& overload) {
  if (overload.empty() || overload == "default") return op;
  return op + "." + overload;
}

std::string Node::qualified_name() const { return QualifiedOpName(op, overload); }

const Value* Node::arg(const std::string& name, size_t position) const {
  for (const auto& a : args)
    if (!a.name.empty() && a.name == name) return &a.value;
  if (position < args.size() && (args[position].name.empty() || args[position].name == name))
    return &args[position].value;
  return nullptr;
}

std::string Node::SignatureKey(std::string* tensor_signature) const {
  std::string key;
  key.reserve(64 + 24 * (args.size() + outputs.size()));
  key += op;
  if (!overload.empty() && overload != "default") {
    key += '.';
    key += overload;
  }
  key += '(';
  if (tensor_signature) tensor_signature->clear();
  for (const auto& a : args) {
    key += a.name;
    key += '=';
    const size_t start = key.size();
    a.value.AppendTo(key);
    if (tensor_signature && (a.value.kind == Value::Kind::kTensor || a.value.kind == Value::Kind::kTensorList)) {
      if (!tensor_signature->empty()) *tensor_signature += ", ";  // as TensorSignature() writes it
      tensor_signature->append(key, start, key.size() - start);
    }
    key += ';';
  }
  key += ")->(";
  for (const auto& o : outputs) {
    o.AppendTo(key);
    key += ';';
  }
  key += ')';
  return key;
}

std::string Node::TensorSignature() const {
  std::string out;
  for (const auto& a : args) {
    if (a.value.kind != Value::Kind::kTensor && a.value.kind != Value::Kind::kTensorList) continue;
    if (!out.empty()) out += ", ";
    a.value.AppendTo(out);
  }
  return out;
}

namespace {

struct TorchDtype {
  std::string_view name;
  hlo::PrimitiveType type;  // the XLA element type, or the storage type when `exact` is false
  bool exact;               // XLA has this element type
};

// Every torch dtype (c10::ScalarType and its Python aliases) with its XLA element type.
constexpr TorchDtype kTorchDtypes[] = {
    {"float32", hlo::PrimitiveType::F32, true},
    {"float", hlo::PrimitiveType::F32, true},
    {"float64", hlo::PrimitiveType::F64, true},
    {"double", hlo::PrimitiveType::F64, true},
    {"float16", hlo::PrimitiveType::F16, true},
    {"half", hlo::PrimitiveType::F16, true},
    {"bfloat16", hlo::PrimitiveType::BF16, true},
    {"int64", hlo::PrimitiveType::S64, true},
    {"long", hlo::PrimitiveType::S64, true},
    {"int32", hlo::PrimitiveType::S32, true},
    {"int", hlo::PrimitiveType::S32, true},
    {"int16", hlo::PrimitiveType::S16, true},
    {"short", hlo::PrimitiveType::S16, true},
    {"int8", hlo::PrimitiveType::S8, true},
    {"uint8", hlo::PrimitiveType::U8, true},
    {"uint16", hlo::PrimitiveType::U16, true},
    {"uint32", hlo::PrimitiveType::U32, true},
    {"uint64", hlo::PrimitiveType::U64, true},
    {"bool", hlo::PrimitiveType::PRED, true},
    {"complex64", hlo::PrimitiveType::C64, true},
    {"cfloat", hlo::PrimitiveType::C64, true},
    {"complex128", hlo::PrimitiveType::C128, true},
    {"cdouble", hlo::PrimitiveType::C128, true},
    {"float8_e4m3fn", hlo::PrimitiveType::F8E4M3FN, true},
    {"float8_e5m2", hlo::PrimitiveType::F8E5M2, true},
    {"float8_e4m3fnuz", hlo::PrimitiveType::F8E4M3FNUZ, true},
    {"float8_e5m2fnuz", hlo::PrimitiveType::F8E5M2FNUZ, true},
    {"float8_e8m0fnu", hlo::PrimitiveType::F8E8M0FNU, true},
    {"int1", hlo::PrimitiveType::S1, true},
    {"int2", hlo::PrimitiveType::S2, true},
    {"int4", hlo::PrimitiveType::S4, true},
    {"uint1", hlo::PrimitiveType::U1, true},
    {"uint2", hlo::PrimitiveType::U2, true},
    {"uint4", hlo::PrimitiveType::U4, true},
    // No XLA element type: the storage type stands in, and the torch name is kept (TensorMeta::torch_dtype).
    {"complex32", hlo::PrimitiveType::C64, false},
    {"chalf", hlo::PrimitiveType::C64, false},
    {"qint8", hlo::PrimitiveType::S8, false},
    {"quint8", hlo::PrimitiveType::U8, false},
    {"qint32", hlo::PrimitiveType::S32, false},
    {"quint4x2", hlo::PrimitiveType::U8, false},
    {"quint2x4", hlo::PrimitiveType::U8, false},
    {"bits1x8", hlo::PrimitiveType::U8, false},
    {"bits2x4", hlo::PrimitiveType::U8, false},
    {"bits4x2", hlo::PrimitiveType::U8, false},
    {"bits8", hlo::PrimitiveType::U8, false},
    {"bits16", hlo::PrimitiveType::U16, false},
    {"int3", hlo::PrimitiveType::S8, false},
    {"int5", hlo::PrimitiveType::S8, false},
    {"int6", hlo::PrimitiveType::S8, false},
    {"int7", hlo::PrimitiveType::S8, false},
    {"uint3", hlo::PrimitiveType::U8, false},
    {"uint5", hlo::PrimitiveType::U8, false},
    {"uint6", hlo::PrimitiveType::U8, false},
    {"uint7", hlo::PrimitiveType::U8, false},
    {"float4_e2m1fn_x2", hlo::PrimitiveType::U8, false},
};

const TorchDtype* FindTorchDtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (const auto& d : kTorchDtypes)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace

std::optional<hlo::PrimitiveType> DtypeFromTorchName(std::string_view name) {
  const TorchDtype* d = FindTorchDtype(name);
  if (!d) return std::nullopt;
  return d->type;
}

std::string TorchDtypeWithoutXlaType(std::string_view name) {
  const TorchDtype* d = FindTorchDtype(name);
  if (!d || d->exact) return "";
  std::string_view n = d->name == "chalf" ? std::string_view("complex32") : d->name;
  return std::string(n);
}

std::string FirstDtypeWithoutXlaType(const Node& node) {
  auto of = [](const Value& v) -> std::string {
    if (v.kind == Value::Kind::kTensor) return v.tensor.torch_dtype;
    if (v.kind == Value::Kind::kDtype) return v.s;
    if (v.kind == Value::Kind::kTensorList)
      for (const auto& t : v.tensors)
        if (t && !t->torch_dtype.empty()) return t->torch_dtype;
    return "";
  };
  for (const auto& a : node.args)
    if (std::string d = of(a.value); !d.empty()) return d;
  for (const auto& o : node.outputs)
    if (std::string d = of(o); !d.empty()) return d;
  return "";
}

}  // namespace opprobe::analyzer
