#include "analyzer/graph/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

std::string TensorMeta::ToString() const {
  std::string out(hlo::PrimitiveTypeName(dtype));
  out += '[';
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ',';
    if (i < dynamic.size() && dynamic[i]) out += "<=";
    out += std::to_string(sizes[i]);
  }
  return out + ']';
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
      for (const auto& t : tensors) parts.push_back(t ? t->ToString() : "None");
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case Kind::kBool: return b ? "True" : "False";
    case Kind::kInt: return std::to_string(i);
    case Kind::kFloat: return hlo::RoundTripDouble(f, false);
    case Kind::kComplex: return fmt::format("({}+{}j)", hlo::RoundTripDouble(c.real(), false), hlo::RoundTripDouble(c.imag(), false));
    case Kind::kString: return fmt::format("'{}'", s);
    case Kind::kIntList: return fmt::format("[{}]", fmt::join(ints, ","));
    case Kind::kFloatList: {
      std::vector<std::string> parts;
      for (double x : floats) parts.push_back(hlo::RoundTripDouble(x, false));
      return fmt::format("[{}]", fmt::join(parts, ","));
    }
    case Kind::kBoolList: {
      std::vector<std::string> parts;
      for (bool x : bools) parts.push_back(x ? "True" : "False");
      return fmt::format("[{}]", fmt::join(parts, ","));
    }
    case Kind::kDtype: return std::string(hlo::PrimitiveTypeName(dtype));
    case Kind::kDevice: case Kind::kLayout: case Kind::kMemoryFormat: return s;
  }
  return "?";
}

std::string SourceLoc::ToString() const {
  if (empty()) return "";
  auto slash = file.find_last_of('/');
  std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  return fmt::format("{} {}", base, line);
}

std::string Node::qualified_name() const {
  if (overload.empty() || overload == "default") return op;
  return op + "." + overload;
}

const Value* Node::arg(const std::string& name, size_t position) const {
  for (const auto& a : args)
    if (!a.name.empty() && a.name == name) return &a.value;
  if (position < args.size() && (args[position].name.empty() || args[position].name == name)) return &args[position].value;
  return nullptr;
}

std::string Node::SignatureKey() const {
  std::string key = qualified_name() + "(";
  for (const auto& a : args) key += a.name + "=" + a.value.ToString() + ";";
  key += ")->(";
  for (const auto& o : outputs) key += o.ToString() + ";";
  return key + ")";
}

std::string Node::TensorSignature() const {
  std::vector<std::string> parts;
  for (const auto& a : args) {
    if (a.value.kind == Value::Kind::kTensor) parts.push_back(a.value.tensor.ToString());
    else if (a.value.kind == Value::Kind::kTensorList) parts.push_back(a.value.ToString());
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::optional<hlo::PrimitiveType> DtypeFromTorchName(std::string_view name) {
  using hlo::PrimitiveType;
  if (name.starts_with("torch.")) name.remove_prefix(6);
  struct M {
    std::string_view n;
    PrimitiveType t;
  };
  static constexpr M kMap[] = {
      {"float32", PrimitiveType::F32},   {"float", PrimitiveType::F32},      {"float64", PrimitiveType::F64},
      {"double", PrimitiveType::F64},    {"float16", PrimitiveType::F16},    {"half", PrimitiveType::F16},
      {"bfloat16", PrimitiveType::BF16}, {"int64", PrimitiveType::S64},      {"long", PrimitiveType::S64},
      {"int32", PrimitiveType::S32},     {"int", PrimitiveType::S32},        {"int16", PrimitiveType::S16},
      {"short", PrimitiveType::S16},     {"int8", PrimitiveType::S8},        {"uint8", PrimitiveType::U8},
      {"uint16", PrimitiveType::U16},    {"uint32", PrimitiveType::U32},     {"uint64", PrimitiveType::U64},
      {"bool", PrimitiveType::PRED},     {"complex64", PrimitiveType::C64},  {"cfloat", PrimitiveType::C64},
      {"complex128", PrimitiveType::C128}, {"cdouble", PrimitiveType::C128},
      {"float8_e4m3fn", PrimitiveType::F8E4M3FN}, {"float8_e5m2", PrimitiveType::F8E5M2},
  };
  for (const auto& m : kMap)
    if (m.n == name) return m.t;
  return std::nullopt;
}

}  // namespace opprobe::analyzer
