// Argument decoding for the ExportedProgram reader: see pt2_arguments.h.
#include "analyzer/loaders/pt2_arguments.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "support/numbers.h"
#include "support/quote.h"

namespace opprobe::analyzer::pt2 {

using hlo::PrimitiveType;

namespace {

// c10::ScalarType numbering (used by operator-schema defaults) -> XLA element type (DtypeFromTorchName: the
// storage type for a dtype without one).
PrimitiveType C10Dtype(int64_t v) {
  static constexpr const char* kNames[] = {"uint8",
                                           "int8",
                                           "int16",
                                           "int32",
                                           "int64",
                                           "float16",
                                           "float32",
                                           "float64",
                                           "complex32",
                                           "complex64",
                                           "complex128",
                                           "bool",
                                           "qint8",
                                           "quint8",
                                           "qint32",
                                           "bfloat16",
                                           "quint4x2",
                                           "quint2x4",
                                           "bits1x8",
                                           "bits2x4",
                                           "bits4x2",
                                           "bits8",
                                           "bits16",
                                           "float8_e5m2",
                                           "float8_e4m3fn",
                                           "float8_e5m2fnuz",
                                           "float8_e4m3fnuz",
                                           "uint16",
                                           "uint32",
                                           "uint64",
                                           "uint1",
                                           "uint2",
                                           "uint3",
                                           "uint4",
                                           "uint5",
                                           "uint6",
                                           "uint7",
                                           "int1",
                                           "int2",
                                           "int3",
                                           "int4",
                                           "int5",
                                           "int6",
                                           "int7",
                                           "float8_e8m0fnu",
                                           "float4_e2m1fn_x2"};
  if (v >= 0 && v < static_cast<int64_t>(std::size(kNames)))
    return DtypeFromTorchName(kNames[v]).value_or(PrimitiveType::PRIMITIVE_TYPE_INVALID);
  return PrimitiveType::PRIMITIVE_TYPE_INVALID;
}

// Names as the capture writes them (capture/opprobe_capture/recorder.py), so both loaders agree.
std::string SerdeMemoryFormat(int64_t v) {
  switch (v) {
    case 1: return "contiguous_format";
    case 2: return "channels_last";
    case 3: return "channels_last_3d";
    case 4: return "preserve_format";
    default: return fmt::format("memory_format_{}", v);
  }
}
std::string C10MemoryFormat(int64_t v) {
  static const char* kNames[] = {"contiguous_format", "preserve_format", "channels_last", "channels_last_3d"};
  return v >= 0 && v < 4 ? kNames[v] : fmt::format("memory_format_{}", v);
}
std::string SerdeLayout(int64_t v) {
  static const char* kNames[] = {"unknown",    "sparse_coo", "sparse_csr", "sparse_csc",
                                 "sparse_bsr", "sparse_bsc", "_mkldnn",    "strided"};
  return v >= 0 && v < 8 ? kNames[v] : fmt::format("layout_{}", v);
}
std::string C10Layout(int64_t v) {
  static const char* kNames[] = {"strided",    "sparse_coo", "sparse_csr", "mkldnn",
                                 "sparse_csc", "sparse_bsr", "sparse_bsc"};
  return v >= 0 && v < 7 ? kNames[v] : fmt::format("layout_{}", v);
}

std::string BaseType(std::string_view declared) {
  std::string t(declared);
  while (!t.empty() && t.back() == '?') t.pop_back();
  return t;
}
bool IsListType(std::string_view declared) { return BaseType(declared).find('[') != std::string::npos; }
std::string ElementType(std::string_view declared) {
  std::string b = BaseType(declared);
  auto p = b.find('[');
  return p == std::string::npos ? b : b.substr(0, p);
}
// How many values one scalar stands for in a list type: 2 for `int[2]`, 1 for `int[]` (or a length not written as a
// positive number).
size_t DeclaredListLength(std::string_view declared) {
  std::string b = BaseType(declared);
  std::string n = b.substr(b.find('[') + 1, b.find(']') - b.find('[') - 1);
  return static_cast<size_t>(std::max(1, support::ParseInteger<int>(n).value_or(1)));
}

}  // namespace

std::optional<PrimitiveType> SerdeDtype(int64_t v, const SchemaVersion& version, std::string* name) {
  switch (v) {
    case 1: *name = "uint8"; return PrimitiveType::U8;
    case 2: *name = "int8"; return PrimitiveType::S8;
    case 3: *name = "int16"; return PrimitiveType::S16;
    case 4: *name = "int32"; return PrimitiveType::S32;
    case 5: *name = "int64"; return PrimitiveType::S64;
    case 6: *name = "float16"; return PrimitiveType::F16;
    case 7: *name = "float32"; return PrimitiveType::F32;
    case 8: *name = "float64"; return PrimitiveType::F64;
    case 9: *name = "complex32"; return PrimitiveType::C64;
    case 10: *name = "complex64"; return PrimitiveType::C64;
    case 11: *name = "complex128"; return PrimitiveType::C128;
    case 12: *name = "bool"; return PrimitiveType::PRED;
    case 13: *name = "bfloat16"; return PrimitiveType::BF16;
    case 28: *name = "uint16"; return PrimitiveType::U16;
    case 29: *name = "float8_e4m3fn"; return PrimitiveType::F8E4M3FN;
    case 30: *name = "float8_e5m2"; return PrimitiveType::F8E5M2;
    case 31: *name = "float8_e4m3fnuz"; return PrimitiveType::F8E4M3FNUZ;
    case 32: *name = "float8_e5m2fnuz"; return PrimitiveType::F8E5M2FNUZ;
    case 33: *name = "float8_e8m0fnu"; return PrimitiveType::F8E8M0FNU;
    case 34: *name = "uint32"; return PrimitiveType::U32;
    case 35: *name = "uint64"; return PrimitiveType::U64;
    default: break;
  }
  // Up to the 8.1 snapshot the float8 kinds were numbered 14 and 15 (renumbered to 29/30 by 8.6).
  if (version.major < 8 || (version.major == 8 && version.minor <= 1)) {
    if (v == 14) {
      *name = "float8_e4m3fn";
      return PrimitiveType::F8E4M3FN;
    }
    if (v == 15) {
      *name = "float8_e5m2";
      return PrimitiveType::F8E5M2;
    }
  }
  return std::nullopt;
}

void JsonAccess::Fail(const std::string& path, const std::string& msg) const {
  // Paths and messages carry keys and strings from the file: one line, escaped and bounded.
  throw Failure{InvalidInput(support::OneLine(fmt::format("{}: {}: {}", where_, path, msg), 1000))};
}

const json& JsonAccess::Require(const json& obj, const char* key, const std::string& path) const {
  if (!obj.is_object()) Fail(path, "expected an object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) Fail(path, fmt::format("missing required field '{}'", key));
  return *it;
}

const json* JsonAccess::Optional(const json& obj, const char* key) const {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

int64_t JsonAccess::Int(const json& j, const std::string& path) const {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_unsigned()) return static_cast<int64_t>(j.get<uint64_t>());
  Fail(path, fmt::format("expected an integer, got {}", j.type_name()));
}

double JsonAccess::Float(const json& j, const std::string& path) const {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  Fail(path, fmt::format("expected a number, got {}", j.type_name()));
}

const std::string& JsonAccess::Str(const json& j, const std::string& path) const {
  if (!j.is_string()) Fail(path, fmt::format("expected a string, got {}", j.type_name()));
  return j.get_ref<const std::string&>();
}

const json& JsonAccess::Array(const json& j, const std::string& path) const {
  if (!j.is_array()) Fail(path, fmt::format("expected a list, got {}", j.type_name()));
  // The caller's own reference back: `j` is a node of the archive's JSON, never a temporary.
  return j;  // NOLINT(bugprone-return-const-ref-from-parameter)
}

std::pair<std::string, const json*> JsonAccess::Union(const json& j, const std::string& path) const {
  if (!j.is_object()) Fail(path, fmt::format("expected a union object, got {}", j.type_name()));
  const json* chosen = nullptr;
  std::string key;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_null()) continue;
    if (chosen) Fail(path, fmt::format("union has more than one member set ('{}' and '{}')", key, it.key()));
    chosen = &it.value();
    key = it.key();
  }
  if (!chosen) {
    auto it = j.find("as_none");
    if (it != j.end()) return {"as_none", &*it};
    Fail(path, "union has no member set");
  }
  return {key, chosen};
}

void NodeState::Note(const std::string& n) {
  for (const auto& x : notes)
    if (x == n) return;
  notes.push_back(n);
}

void ArgumentDecoder::UseTensor(const DecodedTensor& t, NodeState& ns) {
  if (!t.unhinted_note.empty()) {
    ns.dynamic = true;
    ns.Note(t.unhinted_note);
  }
}

std::string ArgumentDecoder::SymbolOf(const std::string& expr) const {
  // `Symbol('s0', integer=True, positive=True)` (srepr) or a plain `s0`.
  auto p = expr.find("Symbol('");
  if (p != std::string::npos) {
    auto q = expr.find('\'', p + 8);
    if (q != std::string::npos) return expr.substr(p + 8, q - p - 8);
  }
  // Otherwise the first identifier that names a range constraint, else the first identifier.
  std::string first;
  for (size_t i = 0; i < expr.size();) {
    if (std::isalpha(static_cast<unsigned char>(expr[i])) || expr[i] == '_') {
      size_t j = i;
      while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_')) ++j;
      std::string id = expr.substr(i, j - i);
      if (ranges_.count(id)) return id;
      if (first.empty()) first = id;
      i = j;
    } else {
      ++i;
    }
  }
  return first.empty() ? expr : first;
}

ArgumentDecoder::SymValue ArgumentDecoder::Unhinted(const std::string& expr, const std::string& what) const {
  SymValue v;
  v.symbolic = true;
  std::string sym = SymbolOf(expr);
  auto it = ranges_.find(sym);
  if (it != ranges_.end() && it->second.max) {
    v.value = *it->second.max;
    v.unhinted_note = fmt::format("{} symbol {} has no hint; using its upper bound {}", what, sym, v.value);
  } else if (it != ranges_.end() && it->second.min) {
    v.value = std::max<int64_t>(*it->second.min, 1);
    v.unhinted_note =
        fmt::format("{} symbol {} has no hint and no upper bound; using {} (its lower bound)", what, sym, v.value);
  } else {
    v.value = 1;
    v.unhinted_note = fmt::format("{} symbol {} has no hint and no range; using 1", what, sym);
  }
  return v;
}

ArgumentDecoder::SymValue ArgumentDecoder::DecodeSymInt(const json& j, const std::string& path) const {
  if (j.is_number()) return SymValue{j_.Int(j, path), false, {}};  // schema 1: storage_offset is a bare int
  auto [key, v] = j_.Union(j, path);
  if (key == "as_int") return SymValue{j_.Int(*v, path + ".as_int"), false, {}};
  if (key == "as_expr") {
    std::string p = path + ".as_expr";
    if (v->is_string()) return Unhinted(v->get<std::string>(), "size");
    const std::string& expr = j_.Str(j_.Require(*v, "expr_str", p), p + ".expr_str");
    if (const json* hint = j_.Optional(*v, "hint")) {
      if (hint->is_number()) return SymValue{j_.Int(*hint, p + ".hint"), true, {}};
      auto [hk, hv] = j_.Union(*hint, p + ".hint");
      if (hk == "as_int") return SymValue{j_.Int(*hv, p + ".hint.as_int"), true, {}};
      if (hk == "as_bool" && hv->is_boolean()) return SymValue{hv->get<bool>() ? 1 : 0, true, {}};
      if (hk == "as_float") return SymValue{static_cast<int64_t>(j_.Float(*hv, p + ".hint.as_float")), true, {}};
    }
    return Unhinted(expr, "size");
  }
  j_.Fail(path, fmt::format("unknown SymInt member '{}'", key));
}

ArgumentDecoder::SymValue ArgumentDecoder::DecodeSymIntArgument(const json& j, const std::string& path,
                                                                const Scope& scope) const {
  if (j.is_number()) return SymValue{j_.Int(j, path), false, {}};
  auto [key, v] = j_.Union(j, path);
  if (key == "as_int") return SymValue{j_.Int(*v, path + ".as_int"), false, {}};
  if (key == "as_name") {
    const std::string& name = j_.Str(*v, path + ".as_name");
    for (const Scope* s = &scope; s; s = s->parent) {
      const json* table = j_.Optional(*s->graph, "sym_int_values");
      if (!table || !table->is_object()) continue;
      auto it = table->find(name);
      if (it != table->end()) return DecodeSymInt(*it, fmt::format("{}.sym_int_values.{}", s->path, name));
    }
    return Unhinted(name, "int");
  }
  j_.Fail(path, fmt::format("unknown SymIntArgument member '{}'", key));
}

DecodedTensor ArgumentDecoder::DecodeTensorMeta(const json& j0, const std::string& path0) const {
  const json* j = &j0;
  std::string path = path0;
  if (j->is_object() && !j->contains("dtype") && j->contains("meta")) {  // schema 1: {"meta": TensorMeta}
    j = &(*j)["meta"];
    path += ".meta";
  }
  DecodedTensor t;
  int64_t code = j_.Int(j_.Require(*j, "dtype", path), path + ".dtype");
  std::string dtype_name;
  auto dtype = SerdeDtype(code, version_, &dtype_name);
  if (!dtype) j_.Fail(path + ".dtype", fmt::format("unknown ScalarType {}", code));
  t.meta.dtype = *dtype;
  t.meta.torch_dtype = TorchDtypeWithoutXlaType(dtype_name);
  const json& sizes = j_.Array(j_.Require(*j, "sizes", path), path + ".sizes");
  bool any_dynamic = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    SymValue s = DecodeSymInt(sizes[i], fmt::format("{}.sizes[{}]", path, i));
    t.meta.sizes.push_back(s.value);
    t.meta.dynamic.push_back(s.symbolic);
    any_dynamic |= s.symbolic;
    if (!s.unhinted_note.empty() && t.unhinted_note.empty()) t.unhinted_note = s.unhinted_note;
  }
  if (!any_dynamic) t.meta.dynamic.clear();
  return t;
}

const DecodedTensor& ArgumentDecoder::Tensor(const std::string& name, const std::string& path,
                                             const Scope& scope) const {
  for (const Scope* s = &scope; s; s = s->parent) {
    auto cached = s->cache->find(name);
    if (cached != s->cache->end()) return cached->second;
    const json& table = (*s->graph)["tensor_values"];
    auto it = table.find(name);
    if (it != table.end()) {
      DecodedTensor t = DecodeTensorMeta(*it, fmt::format("{}.tensor_values.{}", s->path, name));
      return s->cache->emplace(name, std::move(t)).first->second;
    }
  }
  j_.Fail(path, fmt::format("tensor {} is not in tensor_values", support::Quote(name)));
}

std::string ArgumentDecoder::TensorName(const json& j, const std::string& path) const {
  if (j.is_string()) return j.get<std::string>();
  return j_.Str(j_.Require(j, "name", path), path + ".name");
}

std::optional<TensorMeta> ArgumentDecoder::OptionalTensor(const json& j, const std::string& path, const Scope& scope,
                                                          NodeState& ns) const {
  auto [key, v] = j_.Union(j, path);
  if (key == "as_none") return std::nullopt;
  if (key == "as_tensor") {
    std::string name = TensorName(*v, path + ".as_tensor");
    const DecodedTensor& t = Tensor(name, path + ".as_tensor", scope);
    UseTensor(t, ns);
    ns.tensor_names.push_back(std::move(name));
    return t.meta;
  }
  j_.Fail(path, fmt::format("unknown OptionalTensorArgument member '{}'", key));
}

Value ArgumentDecoder::Decode(const json& j, const std::string& path, const std::string& declared, const Scope& scope,
                              NodeState& ns, int depth) {
  if (depth > kMaxSubgraphDepth) j_.Fail(path, fmt::format("arguments nested deeper than {}", kMaxSubgraphDepth));
  auto [key, vp] = j_.Union(j, path);
  const json& v = *vp;
  const std::string p = path + "." + key;
  const std::string base = BaseType(declared);
  Value out;
  auto tensor_list = [&](const json& list, const std::string& lp) {
    Value r;
    r.kind = Value::Kind::kTensorList;
    j_.Array(list, lp);
    for (size_t i = 0; i < list.size(); ++i) {
      std::string ip = fmt::format("{}[{}]", lp, i);
      std::string name = TensorName(list[i], ip);
      const DecodedTensor& t = Tensor(name, ip, scope);
      UseTensor(t, ns);
      ns.tensor_names.push_back(std::move(name));
      r.tensors.emplace_back(t.meta);
    }
    return r;
  };
  if (key == "as_none") return Value::None();
  if (key == "as_tensor") {
    std::string name = TensorName(v, p);
    const DecodedTensor& t = Tensor(name, p, scope);
    UseTensor(t, ns);
    ns.tensor_names.push_back(std::move(name));
    return Value::Tensor(t.meta);
  }
  if (key == "as_tensors") return tensor_list(v, p);
  if (key == "as_optional_tensors") {
    out.kind = Value::Kind::kTensorList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i)
      out.tensors.push_back(OptionalTensor(v[i], fmt::format("{}[{}]", p, i), scope, ns));
    return out;
  }
  if (key == "as_optional_tensor") {
    auto t = OptionalTensor(v, p, scope, ns);
    return t ? Value::Tensor(*t) : Value::None();
  }
  if (key == "as_int") {
    int64_t x = j_.Int(v, p);
    if (base == "float") return Value::Float(static_cast<double>(x));
    if (IsListType(declared) && ElementType(declared) != "Tensor") {
      // `int[2] stride=1` style: one int stands for the whole list.
      return Value::IntList(std::vector<int64_t>(DeclaredListLength(declared), x));
    }
    return Value::Int(x);
  }
  if (key == "as_ints") {
    out.kind = Value::Kind::kIntList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) out.ints.push_back(j_.Int(v[i], fmt::format("{}[{}]", p, i)));
    return out;
  }
  if (key == "as_float") return Value::Float(j_.Float(v, p));
  if (key == "as_floats") {
    out.kind = Value::Kind::kFloatList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) out.floats.push_back(j_.Float(v[i], fmt::format("{}[{}]", p, i)));
    return out;
  }
  if (key == "as_string") return Value::String(j_.Str(v, p));
  if (key == "as_strings") {
    j_.Array(v, p);
    std::string joined;
    for (size_t i = 0; i < v.size(); ++i) joined += (i ? "," : "") + j_.Str(v[i], fmt::format("{}[{}]", p, i));
    return Value::String(joined);
  }
  if (key == "as_sym_int") {
    SymValue s = DecodeSymIntArgument(v, p, scope);
    if (!s.unhinted_note.empty()) {
      ns.dynamic = true;
      ns.Note(s.unhinted_note);
    }
    out = Value::Int(s.value);
    out.symbolic = s.symbolic;
    return out;
  }
  if (key == "as_sym_ints") {
    out.kind = Value::Kind::kIntList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) {
      SymValue s = DecodeSymIntArgument(v[i], fmt::format("{}[{}]", p, i), scope);
      if (!s.unhinted_note.empty()) {
        ns.dynamic = true;
        ns.Note(s.unhinted_note);
      }
      out.ints.push_back(s.value);
      out.symbolic |= s.symbolic;
    }
    return out;
  }
  if (key == "as_scalar_type") {
    int64_t code = j_.Int(v, p);
    std::string name;
    auto t = SerdeDtype(code, version_, &name);
    if (!t) j_.Fail(p, fmt::format("unknown ScalarType {}", code));
    Value d = Value::Dtype(*t);
    d.s = TorchDtypeWithoutXlaType(name);
    return d;
  }
  if (key == "as_memory_format") {
    out.kind = Value::Kind::kMemoryFormat;
    out.s = SerdeMemoryFormat(j_.Int(v, p));
    return out;
  }
  if (key == "as_layout") {
    out.kind = Value::Kind::kLayout;
    out.s = SerdeLayout(j_.Int(v, p));
    return out;
  }
  if (key == "as_device") {
    out.kind = Value::Kind::kDevice;
    out.s = j_.Str(j_.Require(v, "type", p), p + ".type");
    if (const json* index = j_.Optional(v, "index")) out.s += fmt::format(":{}", j_.Int(*index, p + ".index"));
    return out;
  }
  if (key == "as_bool") {
    if (!v.is_boolean()) j_.Fail(p, "expected a bool");
    return Value::Bool(v.get<bool>());
  }
  if (key == "as_bools") {
    out.kind = Value::Kind::kBoolList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_boolean()) j_.Fail(fmt::format("{}[{}]", p, i), "expected a bool");
      out.bools.push_back(v[i].get<bool>());
    }
    return out;
  }
  auto sym_scalar = [&](const json& s, const std::string& sp, const char* concrete) -> Value {
    auto [sk, sv] = j_.Union(s, sp);
    if (sk == "as_name") {
      ns.Note(fmt::format("symbolic {} '{}'", concrete + 3, j_.Str(*sv, sp + ".as_name")));
      Value r = std::string(concrete) == "as_bool" ? Value::Bool(false) : Value::Float(0.0);
      r.symbolic = true;
      return r;
    }
    if (sk != concrete) j_.Fail(sp, fmt::format("unknown member '{}'", sk));
    if (std::string(concrete) == "as_bool") {
      if (!sv->is_boolean()) j_.Fail(sp + "." + sk, "expected a bool");
      return Value::Bool(sv->get<bool>());
    }
    return Value::Float(j_.Float(*sv, sp + "." + sk));
  };
  if (key == "as_sym_bool") return sym_scalar(v, p, "as_bool");
  if (key == "as_sym_float") return sym_scalar(v, p, "as_float");
  if (key == "as_sym_bools" || key == "as_sym_floats") {
    bool is_bool = key == "as_sym_bools";
    out.kind = is_bool ? Value::Kind::kBoolList : Value::Kind::kFloatList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) {
      Value e = sym_scalar(v[i], fmt::format("{}[{}]", p, i), is_bool ? "as_bool" : "as_float");
      if (is_bool) out.bools.push_back(e.b);
      else out.floats.push_back(e.f);
      out.symbolic |= e.symbolic;
    }
    return out;
  }
  if (key == "as_complex") {
    out.kind = Value::Kind::kComplex;
    out.c = {j_.Float(j_.Require(v, "real", p), p + ".real"), j_.Float(j_.Require(v, "imag", p), p + ".imag")};
    return out;
  }
  if (key == "as_graph") {
    // A higher-order op's subgraph: its nodes are analyzed too (same program).
    const std::string& name = j_.Str(j_.Require(v, "name", p), p + ".name");
    decode_subgraph_(j_.Require(v, "graph", p), p + ".graph", &scope, depth + 1);
    return Value::String(name);
  }
  if (key == "as_custom_obj") return Value::String(j_.Str(j_.Require(v, "class_fqn", p), p + ".class_fqn"));
  if (key == "as_operator") return Value::String(j_.Str(v, p));
  if (key == "as_nested_tensors") {
    out.kind = Value::Kind::kTensorList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) {
      Value inner = tensor_list(v[i], fmt::format("{}[{}]", p, i));
      for (auto& t : inner.tensors) out.tensors.push_back(std::move(t));
    }
    ns.Note("nested tensor lists are flattened");
    return out;
  }
  if (key == "as_int_lists" || key == "as_float_lists") {
    bool ints = key == "as_int_lists";
    out.kind = ints ? Value::Kind::kIntList : Value::Kind::kFloatList;
    j_.Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) {
      std::string ip = fmt::format("{}[{}]", p, i);
      const json& inner = j_.Array(v[i], ip);
      for (size_t k = 0; k < inner.size(); ++k) {
        std::string kp = fmt::format("{}[{}]", ip, k);
        if (ints) out.ints.push_back(j_.Int(inner[k], kp));
        else out.floats.push_back(j_.Float(inner[k], kp));
      }
    }
    ns.Note(fmt::format("{} flattened", key));
    return out;
  }
  if (key == "as_string_to_argument") {
    if (!v.is_object()) j_.Fail(p, "expected an object");
    std::string keys;
    for (auto it = v.begin(); it != v.end(); ++it) {
      Decode(it.value(), p + "." + it.key(), "", scope, ns, depth + 1);  // validates, visits subgraphs
      keys += (keys.empty() ? "" : ",") + it.key();
    }
    return Value::String(keys);
  }
  ns.Note(fmt::format("argument kind '{}' is not known to this reader", key));
  return Value::None();
}

Value ArgumentDecoder::Default(const OpSchemaArg& a, NodeState& ns) const {
  const json& d = a.default_value;
  const std::string base = BaseType(a.type);
  const std::string elem = ElementType(a.type);
  if (d.is_null()) return Value::None();
  auto as_float = [](const json& x) {
    if (x.is_string()) {
      const auto& s = x.get_ref<const std::string&>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      return std::numeric_limits<double>::quiet_NaN();
    }
    return x.is_number() ? x.get<double>() : 0.0;
  };
  if (IsListType(a.type)) {
    Value v;
    std::vector<json> items;
    if (d.is_array()) items.assign(d.begin(), d.end());
    else items.assign(DeclaredListLength(a.type), d);
    if (elem == "float") {
      v.kind = Value::Kind::kFloatList;
      for (const auto& x : items) v.floats.push_back(as_float(x));
    } else if (elem == "bool") {
      v.kind = Value::Kind::kBoolList;
      for (const auto& x : items) v.bools.push_back(x.is_boolean() && x.get<bool>());
    } else if (elem == "int" || elem == "SymInt") {
      v.kind = Value::Kind::kIntList;
      for (const auto& x : items) v.ints.push_back(x.is_number() ? x.get<int64_t>() : 0);
    } else {
      if (!items.empty()) ns.Note(fmt::format("default of '{}' ({}) not represented", a.name, a.type));
      v.kind = elem.starts_with("Tensor") ? Value::Kind::kTensorList : Value::Kind::kNone;
    }
    return v;
  }
  if (base == "ScalarType" && d.is_number_integer()) return Value::Dtype(C10Dtype(d.get<int64_t>()));
  if (base == "MemoryFormat" && d.is_number_integer()) {
    Value v;
    v.kind = Value::Kind::kMemoryFormat;
    v.s = C10MemoryFormat(d.get<int64_t>());
    return v;
  }
  if (base == "Layout" && d.is_number_integer()) {
    Value v;
    v.kind = Value::Kind::kLayout;
    v.s = C10Layout(d.get<int64_t>());
    return v;
  }
  if (base == "Device" && d.is_string()) {
    Value v;
    v.kind = Value::Kind::kDevice;
    v.s = d.get<std::string>();
    return v;
  }
  if (d.is_boolean()) return Value::Bool(d.get<bool>());
  if (base == "float" || d.is_number_float() || (d.is_string() && (base == "Scalar" || base == "float")))
    return Value::Float(as_float(d));
  if (d.is_number_integer()) return Value::Int(d.get<int64_t>());
  if (d.is_string()) return Value::String(d.get<std::string>());
  if (d.is_object() && d.contains("real")) {
    Value v;
    v.kind = Value::Kind::kComplex;
    v.c = {as_float(d["real"]), as_float(d["imag"])};
    return v;
  }
  ns.Note(fmt::format("default of '{}' ({}) not represented", a.name, a.type));
  return Value::None();
}

}  // namespace opprobe::analyzer::pt2
