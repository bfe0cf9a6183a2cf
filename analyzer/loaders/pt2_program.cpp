// Decoding of one torch.export ExportedProgram JSON (schema majors 1 to 8; research/formats.md A.6-A.8)
// into analyzer::Graph nodes.
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/loaders/op_schemas.h"
#include "analyzer/loaders/pt2_loader.h"
#include "hlo/quote.h"

namespace opprobe::analyzer {

namespace {

using json = nlohmann::json;
using hlo::PrimitiveType;

constexpr int kMaxSubgraphDepth = 32;
// The newest ExportedProgram schema major (torch/_export/serde/schema.py SCHEMA_VERSION, torch 2.9: 8.x).
constexpr int kNewestSchemaMajor = 8;

// Serialized ScalarType (torch/_export/serde/schema.py numbering, not c10's) -> XLA element type.
// nullopt: not a known value. A dtype without an XLA element type (complex32) gives its storage type;
// TorchDtypeWithoutXlaType(*name) tells it apart.
std::optional<PrimitiveType> SerdeDtype(int64_t v, int schema_major, int schema_minor, std::string* name) {
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
  if (schema_major < 8 || (schema_major == 8 && schema_minor <= 1)) {
    if (v == 14) { *name = "float8_e4m3fn"; return PrimitiveType::F8E4M3FN; }
    if (v == 15) { *name = "float8_e5m2"; return PrimitiveType::F8E5M2; }
  }
  return std::nullopt;
}

// c10::ScalarType numbering (used by operator-schema defaults) -> XLA element type (DtypeFromTorchName: the
// storage type for a dtype without one).
PrimitiveType C10Dtype(int64_t v) {
  static constexpr const char* kNames[] = {
      "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex32", "complex64",
      "complex128", "bool", "qint8", "quint8", "qint32", "bfloat16", "quint4x2", "quint2x4", "bits1x8", "bits2x4",
      "bits4x2", "bits8", "bits16", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz", "uint16",
      "uint32", "uint64", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "int1", "int2", "int3",
      "int4", "int5", "int6", "int7", "float8_e8m0fnu", "float4_e2m1fn_x2"};
  if (v >= 0 && v < static_cast<int64_t>(std::size(kNames)))
    return DtypeFromTorchName(kNames[v]).value_or(PrimitiveType::PRIMITIVE_TYPE_INVALID);
  return PrimitiveType::PRIMITIVE_TYPE_INVALID;
}

// Names as the capture writes them (cli/capture/capture_recorder.py), so both loaders agree.
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
  static const char* kNames[] = {"unknown", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
                                 "_mkldnn", "strided"};
  return v >= 0 && v < 8 ? kNames[v] : fmt::format("layout_{}", v);
}
std::string C10Layout(int64_t v) {
  static const char* kNames[] = {"strided", "sparse_coo", "sparse_csr", "mkldnn", "sparse_csc", "sparse_bsr",
                                 "sparse_bsc"};
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

class Failure {
 public:
  explicit Failure(Status s) : status(std::move(s)) {}
  Status status;
};

struct SymValue {
  int64_t value = 0;
  bool symbolic = false;
  std::string unhinted_note;  // set when symbolic without a hint
};

struct DecodedTensor {
  TensorMeta meta;
  std::string unhinted_note;
};

struct NodeState {
  bool dynamic = false;
  std::vector<std::string> notes;
  void Note(const std::string& n) {
    for (const auto& x : notes)
      if (x == n) return;
    notes.push_back(n);
  }
};

struct Scope {
  const json* graph = nullptr;
  std::string path;  // JSON path of the graph object
  const Scope* parent = nullptr;
  std::unordered_map<std::string, DecodedTensor>* cache = nullptr;
};

class Decoder {
 public:
  Decoder(const std::string& where, const std::string& program, Graph& graph)
      : where_(where), program_(program), graph_(graph) {}

  Status Run(std::string_view text);

 private:
  [[noreturn]] void Fail(const std::string& path, const std::string& msg) const {
    // Paths and messages carry keys and strings from the file: one line, escaped and bounded.
    throw Failure(InvalidInput(hlo::OneLine(fmt::format("{}: {}: {}", where_, path, msg), 1000)));
  }

  const json& Require(const json& obj, const char* key, const std::string& path) const {
    if (!obj.is_object()) Fail(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) Fail(path, fmt::format("missing required field '{}'", key));
    return *it;
  }
  const json* Optional(const json& obj, const char* key) const {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  int64_t Int(const json& j, const std::string& path) const {
    if (j.is_number_integer()) return j.get<int64_t>();
    if (j.is_number_unsigned()) return static_cast<int64_t>(j.get<uint64_t>());
    Fail(path, fmt::format("expected an integer, got {}", j.type_name()));
  }
  double Float(const json& j, const std::string& path) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
      const auto& s = j.get_ref<const std::string&>();
      if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    Fail(path, fmt::format("expected a number, got {}", j.type_name()));
  }
  const std::string& Str(const json& j, const std::string& path) const {
    if (!j.is_string()) Fail(path, fmt::format("expected a string, got {}", j.type_name()));
    return j.get_ref<const std::string&>();
  }
  const json& Array(const json& j, const std::string& path) const {
    if (!j.is_array()) Fail(path, fmt::format("expected a list, got {}", j.type_name()));
    return j;
  }

  // A union: schema 8.x writes exactly one key; schema 1 writes every member with the unused ones null.
  std::pair<std::string, const json*> Union(const json& j, const std::string& path) const {
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

  std::string SymbolOf(const std::string& expr) const;
  SymValue Unhinted(const std::string& expr, const std::string& what) const;
  SymValue DecodeSymInt(const json& j, const std::string& path) const;
  SymValue DecodeSymIntArgument(const json& j, const std::string& path, const Scope& scope) const;
  DecodedTensor DecodeTensorMeta(const json& j, const std::string& path) const;
  const DecodedTensor& Tensor(const std::string& name, const std::string& path, const Scope& scope) const;
  std::string TensorName(const json& j, const std::string& path) const;
  std::optional<TensorMeta> OptionalTensor(const json& j, const std::string& path, const Scope& scope,
                                           NodeState& ns) const;
  Value DecodeArgument(const json& j, const std::string& path, const std::string& declared, const Scope& scope,
                       NodeState& ns, int depth);
  Value DefaultValue(const OpSchemaArg& a, NodeState& ns) const;
  void DecodeGraph(const json& g, const std::string& path, const Scope* parent, int depth);
  void DecodeNode(const json& n, const std::string& path, const Scope& scope, int depth);
  void UseTensor(const DecodedTensor& t, NodeState& ns) const {
    if (!t.unhinted_note.empty()) {
      ns.dynamic = true;
      ns.Note(t.unhinted_note);
    }
  }

  std::string where_;
  std::string program_;
  Graph& graph_;
  int major_ = 0;
  int minor_ = 0;
  struct Range {
    std::optional<int64_t> min, max;
  };
  std::map<std::string, Range> ranges_;
  std::vector<std::unique_ptr<std::unordered_map<std::string, DecodedTensor>>> caches_;
};

std::string Decoder::SymbolOf(const std::string& expr) const {
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

SymValue Decoder::Unhinted(const std::string& expr, const std::string& what) const {
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

SymValue Decoder::DecodeSymInt(const json& j, const std::string& path) const {
  if (j.is_number()) return SymValue{Int(j, path), false, {}};  // schema 1: storage_offset is a bare int
  auto [key, v] = Union(j, path);
  if (key == "as_int") return SymValue{Int(*v, path + ".as_int"), false, {}};
  if (key == "as_expr") {
    std::string p = path + ".as_expr";
    if (v->is_string()) return Unhinted(v->get<std::string>(), "size");
    const std::string& expr = Str(Require(*v, "expr_str", p), p + ".expr_str");
    if (const json* hint = Optional(*v, "hint")) {
      if (hint->is_number()) return SymValue{Int(*hint, p + ".hint"), true, {}};
      auto [hk, hv] = Union(*hint, p + ".hint");
      if (hk == "as_int") return SymValue{Int(*hv, p + ".hint.as_int"), true, {}};
      if (hk == "as_bool" && hv->is_boolean()) return SymValue{hv->get<bool>() ? 1 : 0, true, {}};
      if (hk == "as_float") return SymValue{static_cast<int64_t>(Float(*hv, p + ".hint.as_float")), true, {}};
    }
    return Unhinted(expr, "size");
  }
  Fail(path, fmt::format("unknown SymInt member '{}'", key));
}

SymValue Decoder::DecodeSymIntArgument(const json& j, const std::string& path, const Scope& scope) const {
  if (j.is_number()) return SymValue{Int(j, path), false, {}};
  auto [key, v] = Union(j, path);
  if (key == "as_int") return SymValue{Int(*v, path + ".as_int"), false, {}};
  if (key == "as_name") {
    const std::string& name = Str(*v, path + ".as_name");
    for (const Scope* s = &scope; s; s = s->parent) {
      const json* table = Optional(*s->graph, "sym_int_values");
      if (!table || !table->is_object()) continue;
      auto it = table->find(name);
      if (it != table->end()) return DecodeSymInt(*it, fmt::format("{}.sym_int_values.{}", s->path, name));
    }
    return Unhinted(name, "int");
  }
  Fail(path, fmt::format("unknown SymIntArgument member '{}'", key));
}

DecodedTensor Decoder::DecodeTensorMeta(const json& j0, const std::string& path0) const {
  const json* j = &j0;
  std::string path = path0;
  if (j->is_object() && !j->contains("dtype") && j->contains("meta")) {  // schema 1: {"meta": TensorMeta}
    j = &(*j)["meta"];
    path += ".meta";
  }
  DecodedTensor t;
  int64_t code = Int(Require(*j, "dtype", path), path + ".dtype");
  std::string dtype_name;
  auto dtype = SerdeDtype(code, major_, minor_, &dtype_name);
  if (!dtype) Fail(path + ".dtype", fmt::format("unknown ScalarType {}", code));
  t.meta.dtype = *dtype;
  t.meta.torch_dtype = TorchDtypeWithoutXlaType(dtype_name);
  const json& sizes = Array(Require(*j, "sizes", path), path + ".sizes");
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

const DecodedTensor& Decoder::Tensor(const std::string& name, const std::string& path, const Scope& scope) const {
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
  Fail(path, fmt::format("tensor {} is not in tensor_values", hlo::Quote(name)));
}

std::string Decoder::TensorName(const json& j, const std::string& path) const {
  if (j.is_string()) return j.get<std::string>();
  return Str(Require(j, "name", path), path + ".name");
}

std::optional<TensorMeta> Decoder::OptionalTensor(const json& j, const std::string& path, const Scope& scope,
                                                  NodeState& ns) const {
  auto [key, v] = Union(j, path);
  if (key == "as_none") return std::nullopt;
  if (key == "as_tensor") {
    const DecodedTensor& t = Tensor(TensorName(*v, path + ".as_tensor"), path + ".as_tensor", scope);
    UseTensor(t, ns);
    return t.meta;
  }
  Fail(path, fmt::format("unknown OptionalTensorArgument member '{}'", key));
}

Value Decoder::DecodeArgument(const json& j, const std::string& path, const std::string& declared, const Scope& scope,
                              NodeState& ns, int depth) {
  if (depth > kMaxSubgraphDepth) Fail(path, fmt::format("arguments nested deeper than {}", kMaxSubgraphDepth));
  auto [key, vp] = Union(j, path);
  const json& v = *vp;
  const std::string p = path + "." + key;
  const std::string base = BaseType(declared);
  Value out;
  auto tensor_list = [&](const json& list, const std::string& lp) {
    Value r;
    r.kind = Value::Kind::kTensorList;
    Array(list, lp);
    for (size_t i = 0; i < list.size(); ++i) {
      std::string ip = fmt::format("{}[{}]", lp, i);
      const DecodedTensor& t = Tensor(TensorName(list[i], ip), ip, scope);
      UseTensor(t, ns);
      r.tensors.emplace_back(t.meta);
    }
    return r;
  };
  if (key == "as_none") return Value::None();
  if (key == "as_tensor") {
    const DecodedTensor& t = Tensor(TensorName(v, p), p, scope);
    UseTensor(t, ns);
    return Value::Tensor(t.meta);
  }
  if (key == "as_tensors") return tensor_list(v, p);
  if (key == "as_optional_tensors") {
    out.kind = Value::Kind::kTensorList;
    Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) out.tensors.push_back(OptionalTensor(v[i], fmt::format("{}[{}]", p, i), scope, ns));
    return out;
  }
  if (key == "as_optional_tensor") {
    auto t = OptionalTensor(v, p, scope, ns);
    return t ? Value::Tensor(*t) : Value::None();
  }
  if (key == "as_int") {
    int64_t x = Int(v, p);
    if (base == "float") return Value::Float(static_cast<double>(x));
    if (IsListType(declared) && ElementType(declared) != "Tensor") {
      // `int[2] stride=1` style: one int stands for the whole list.
      std::string b = BaseType(declared);
      std::string n = b.substr(b.find('[') + 1, b.find(']') - b.find('[') - 1);
      int reps = n.empty() ? 1 : std::max(1, std::atoi(n.c_str()));
      return Value::IntList(std::vector<int64_t>(reps, x));
    }
    return Value::Int(x);
  }
  if (key == "as_ints") {
    out.kind = Value::Kind::kIntList;
    Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) out.ints.push_back(Int(v[i], fmt::format("{}[{}]", p, i)));
    return out;
  }
  if (key == "as_float") return Value::Float(Float(v, p));
  if (key == "as_floats") {
    out.kind = Value::Kind::kFloatList;
    Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) out.floats.push_back(Float(v[i], fmt::format("{}[{}]", p, i)));
    return out;
  }
  if (key == "as_string") return Value::String(Str(v, p));
  if (key == "as_strings") {
    Array(v, p);
    std::string joined;
    for (size_t i = 0; i < v.size(); ++i) joined += (i ? "," : "") + Str(v[i], fmt::format("{}[{}]", p, i));
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
    Array(v, p);
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
    int64_t code = Int(v, p);
    std::string name;
    auto t = SerdeDtype(code, major_, minor_, &name);
    if (!t) Fail(p, fmt::format("unknown ScalarType {}", code));
    Value d = Value::Dtype(*t);
    d.s = TorchDtypeWithoutXlaType(name);
    return d;
  }
  if (key == "as_memory_format") {
    out.kind = Value::Kind::kMemoryFormat;
    out.s = SerdeMemoryFormat(Int(v, p));
    return out;
  }
  if (key == "as_layout") {
    out.kind = Value::Kind::kLayout;
    out.s = SerdeLayout(Int(v, p));
    return out;
  }
  if (key == "as_device") {
    out.kind = Value::Kind::kDevice;
    out.s = Str(Require(v, "type", p), p + ".type");
    if (const json* index = Optional(v, "index")) out.s += fmt::format(":{}", Int(*index, p + ".index"));
    return out;
  }
  if (key == "as_bool") {
    if (!v.is_boolean()) Fail(p, "expected a bool");
    return Value::Bool(v.get<bool>());
  }
  if (key == "as_bools") {
    out.kind = Value::Kind::kBoolList;
    Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_boolean()) Fail(fmt::format("{}[{}]", p, i), "expected a bool");
      out.bools.push_back(v[i].get<bool>());
    }
    return out;
  }
  auto sym_scalar = [&](const json& s, const std::string& sp, const char* concrete) -> Value {
    auto [sk, sv] = Union(s, sp);
    if (sk == "as_name") {
      ns.Note(fmt::format("symbolic {} '{}'", concrete + 3, Str(*sv, sp + ".as_name")));
      Value r = std::string(concrete) == "as_bool" ? Value::Bool(false) : Value::Float(0.0);
      r.symbolic = true;
      return r;
    }
    if (sk != concrete) Fail(sp, fmt::format("unknown member '{}'", sk));
    if (std::string(concrete) == "as_bool") {
      if (!sv->is_boolean()) Fail(sp + "." + sk, "expected a bool");
      return Value::Bool(sv->get<bool>());
    }
    return Value::Float(Float(*sv, sp + "." + sk));
  };
  if (key == "as_sym_bool") return sym_scalar(v, p, "as_bool");
  if (key == "as_sym_float") return sym_scalar(v, p, "as_float");
  if (key == "as_sym_bools" || key == "as_sym_floats") {
    bool is_bool = key == "as_sym_bools";
    out.kind = is_bool ? Value::Kind::kBoolList : Value::Kind::kFloatList;
    Array(v, p);
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
    out.c = {Float(Require(v, "real", p), p + ".real"), Float(Require(v, "imag", p), p + ".imag")};
    return out;
  }
  if (key == "as_graph") {
    // A higher-order op's subgraph: its nodes are analyzed too (same program).
    const std::string& name = Str(Require(v, "name", p), p + ".name");
    DecodeGraph(Require(v, "graph", p), p + ".graph", &scope, depth + 1);
    return Value::String(name);
  }
  if (key == "as_custom_obj") return Value::String(Str(Require(v, "class_fqn", p), p + ".class_fqn"));
  if (key == "as_operator") return Value::String(Str(v, p));
  if (key == "as_nested_tensors") {
    out.kind = Value::Kind::kTensorList;
    Array(v, p);
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
    Array(v, p);
    for (size_t i = 0; i < v.size(); ++i) {
      std::string ip = fmt::format("{}[{}]", p, i);
      const json& inner = Array(v[i], ip);
      for (size_t k = 0; k < inner.size(); ++k) {
        std::string kp = fmt::format("{}[{}]", ip, k);
        if (ints) out.ints.push_back(Int(inner[k], kp));
        else out.floats.push_back(Float(inner[k], kp));
      }
    }
    ns.Note(fmt::format("{} flattened", key));
    return out;
  }
  if (key == "as_string_to_argument") {
    if (!v.is_object()) Fail(p, "expected an object");
    std::string keys;
    for (auto it = v.begin(); it != v.end(); ++it) {
      DecodeArgument(it.value(), p + "." + it.key(), "", scope, ns, depth + 1);  // validates, visits subgraphs
      keys += (keys.empty() ? "" : ",") + it.key();
    }
    return Value::String(keys);
  }
  ns.Note(fmt::format("argument kind '{}' is not known to this reader", key));
  return Value::None();
}

Value Decoder::DefaultValue(const OpSchemaArg& a, NodeState& ns) const {
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
    else {
      std::string n = base.substr(base.find('[') + 1, base.find(']') - base.find('[') - 1);
      int reps = n.empty() ? 1 : std::max(1, std::atoi(n.c_str()));
      items.assign(reps, d);
    }
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

struct Target {
  bool skip = false;  // symbolic-int arithmetic on Python numbers, not a tensor op
  std::string ns, name, overload;
};

Target ParseTarget(const std::string& t) {
  Target out;
  std::string s = t;
  if (s.starts_with("#")) {  // registered extension `#<namespace>:<op_name>`
    auto colon = s.find(':');
    out.ns = s.substr(1, colon == std::string::npos ? std::string::npos : colon - 1);
    out.name = colon == std::string::npos ? "" : s.substr(colon + 1);
    out.overload = "default";
    return out;
  }
  for (const char* prefix : {"torch.ops.", "executorch.exir.dialects.edge.ops."}) {
    if (s.starts_with(prefix)) {
      s = s.substr(std::string_view(prefix).size());
      auto d1 = s.find('.');
      out.ns = s.substr(0, d1);
      std::string rest = d1 == std::string::npos ? "" : s.substr(d1 + 1);
      if (out.ns == "higher_order") {
        out.name = rest;
        out.overload = "default";
        return out;
      }
      auto d2 = rest.rfind('.');
      if (d2 == std::string::npos) {
        out.name = rest;
        out.overload = "default";
      } else {
        out.name = rest.substr(0, d2);
        out.overload = rest.substr(d2 + 1);
      }
      return out;
    }
  }
  // `_operator.add`, `math.trunc`, `torch.sym_max`, `builtins.getattr`: Python-level symbolic-int arithmetic.
  out.skip = true;
  return out;
}

// The index of a nesting-aware separator split (formats.md A.8: `()`/`[]` nesting is respected).
std::vector<std::string_view> SplitTopLevel(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == sep && depth <= 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace

SourceLoc InnermostUserFrame(std::string_view trace) {
  SourceLoc best;
  size_t pos = 0;
  while ((pos = trace.find("File \"", pos)) != std::string_view::npos) {
    size_t fstart = pos + 6;
    size_t fend = trace.find('"', fstart);
    if (fend == std::string_view::npos) break;
    std::string_view file = trace.substr(fstart, fend - fstart);
    pos = fend + 1;
    std::string_view rest = trace.substr(pos);
    if (!rest.starts_with(", line ")) continue;
    int line = 0;
    size_t i = 7;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])) && line < 100000000)
      line = line * 10 + (rest[i++] - '0');
    bool in_torch = file.starts_with("torch/") || file.find("/torch/") != std::string_view::npos;
    if (!in_torch) {
      best.file = std::string(file);
      best.line = line;
    }
  }
  return best;
}

std::string ModulePathFromNnModuleStack(std::string_view stack) {
  auto items = SplitTopLevel(stack, ';');
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (it->empty()) continue;
    auto fields = SplitTopLevel(*it, ',');
    std::string path = fields.size() >= 2 ? std::string(fields[1]) : "";
    // Older spellings: `L['self'].layer1[0].conv1`, `self.layer1.0`.
    for (const char* prefix : {"L['self']", "L[\"self\"]", "L__self__", "self"}) {
      if (path.starts_with(prefix) && (path.size() == strlen(prefix) || path[strlen(prefix)] == '.' ||
                                       path[strlen(prefix)] == '[')) {
        path = path.substr(strlen(prefix));
        break;
      }
    }
    std::string norm;
    for (size_t i = 0; i < path.size(); ++i) {
      char c = path[i];
      if (c == '[') {
        size_t close = path.find(']', i);
        if (close == std::string::npos) break;
        std::string inner = path.substr(i + 1, close - i - 1);
        if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"')) inner = inner.substr(1, inner.size() - 2);
        if (!norm.empty()) norm += '.';
        norm += inner;
        i = close;
      } else if (c == '.') {
        if (!norm.empty()) norm += '.';
      } else {
        norm += c;
      }
    }
    return norm;
  }
  return "";
}

void Decoder::DecodeNode(const json& n, const std::string& path, const Scope& scope, int depth) {
  if (!n.is_object()) Fail(path, "expected a node object");
  const std::string& target = Str(Require(n, "target", path), path + ".target");
  Target t = ParseTarget(target);
  const json& inputs = Array(Require(n, "inputs", path), path + ".inputs");
  const json& outputs = Array(Require(n, "outputs", path), path + ".outputs");
  NodeState ns;
  Node node;
  node.op = t.skip ? target : t.ns + "::" + t.name;
  node.overload = t.overload;
  node.program = program_;

  struct In {
    std::string name;
    const json* arg;
    std::string path;
    bool keyword = false;
    bool used = false;
  };
  std::vector<In> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string ip = fmt::format("{}.inputs[{}]", path, i);
    const json& na = inputs[i];
    if (!na.is_object()) Fail(ip, "expected a NamedArgument object");
    In in;
    if (const json* name = Optional(na, "name")) in.name = Str(*name, ip + ".name");
    in.arg = &Require(na, "arg", ip);
    in.path = ip + ".arg";
    if (const json* kind = Optional(na, "kind")) in.keyword = kind->is_number_integer() && kind->get<int>() == 2;
    ins.push_back(std::move(in));
  }

  const OpSchema* schema = (!t.skip && t.ns == "aten") ? FindAtenSchema(t.name, t.overload) : nullptr;
  if (schema) {
    for (size_t i = 0; i < schema->args.size(); ++i) {
      const OpSchemaArg& sa = schema->args[i];
      In* found = nullptr;
      for (auto& in : ins)
        if (!in.used && in.name == sa.name) {
          found = &in;
          break;
        }
      if (!found && i < ins.size() && !ins[i].used && ins[i].name.empty() && !ins[i].keyword) found = &ins[i];
      Argument arg;
      arg.name = sa.name;
      if (found) {
        found->used = true;
        arg.value = DecodeArgument(*found->arg, found->path, sa.type, scope, ns, depth);
      } else if (sa.has_default) {
        arg.value = DefaultValue(sa, ns);
      } else {
        ns.Note(fmt::format("argument '{}' is missing and has no default", sa.name));
      }
      node.args.push_back(std::move(arg));
    }
    for (auto& in : ins) {
      if (in.used) continue;
      ns.Note(fmt::format("argument '{}' is not in the torch {} schema of {}.{}", in.name,
                          OpSchemaTableTorchVersion(), node.op, node.overload));
      node.args.push_back({in.name, DecodeArgument(*in.arg, in.path, "", scope, ns, depth)});
    }
  } else {
    for (auto& in : ins) node.args.push_back({in.name, DecodeArgument(*in.arg, in.path, "", scope, ns, depth)});
    if (!t.skip)
      ns.Note(fmt::format("no schema for {}.{} in the op table (torch {}); arguments as named in the file", node.op,
                          node.overload, OpSchemaTableTorchVersion()));
  }

  for (size_t i = 0; i < outputs.size(); ++i) {
    Value v = DecodeArgument(outputs[i], fmt::format("{}.outputs[{}]", path, i), "", scope, ns, depth);
    if (!v.is_none()) node.outputs.push_back(std::move(v));
  }

  if (const json* meta = Optional(n, "metadata"); meta && meta->is_object()) {
    if (const json* st = Optional(*meta, "stack_trace"); st && st->is_string())
      node.loc = InnermostUserFrame(st->get_ref<const std::string&>());
    if (const json* nm = Optional(*meta, "nn_module_stack"); nm && nm->is_string())
      node.module_path = ModulePathFromNnModuleStack(nm->get_ref<const std::string&>());
  }
  if (t.skip) return;  // validated, but Python-number arithmetic is not an aten op
  node.dynamic_shape = ns.dynamic;
  for (const auto& note : ns.notes) node.note += (node.note.empty() ? "" : "; ") + note;
  graph_.nodes.push_back(std::move(node));
}

void Decoder::DecodeGraph(const json& g, const std::string& path, const Scope* parent, int depth) {
  if (depth > kMaxSubgraphDepth) Fail(path, fmt::format("subgraphs nested deeper than {}", kMaxSubgraphDepth));
  if (!g.is_object()) Fail(path, "expected a graph object");
  const json& nodes = Array(Require(g, "nodes", path), path + ".nodes");
  const json& tv = Require(g, "tensor_values", path);
  if (!tv.is_object()) Fail(path + ".tensor_values", "expected an object");
  caches_.push_back(std::make_unique<std::unordered_map<std::string, DecodedTensor>>());
  Scope scope{&g, path, parent, caches_.back().get()};
  for (size_t i = 0; i < nodes.size(); ++i) DecodeNode(nodes[i], fmt::format("{}.nodes[{}]", path, i), scope, depth);
}

Status Decoder::Run(std::string_view text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return InvalidInput(fmt::format("{}: invalid JSON: {}", where_, hlo::OneLine(e.what())));
  }
  try {
    if (!doc.is_object()) Fail("$", "expected an ExportedProgram object");
    const json& version = Require(doc, "schema_version", "$");
    if (version.is_number_integer()) {
      major_ = version.get<int>();
    } else if (version.is_object()) {
      major_ = static_cast<int>(Int(Require(version, "major", "$.schema_version"), "$.schema_version.major"));
      if (const json* minor = Optional(version, "minor")) minor_ = static_cast<int>(Int(*minor, "$.schema_version.minor"));
    } else {
      Fail("$.schema_version", "expected an integer or {\"major\", \"minor\"}");
    }
    // Majors 1-8 share one layout; early files write every union member (unused ones null), later ones
    // only the set one, and Union() reads both (real files: schema 2 of torch 2.3, 7.3/7.4 of torch 2.6).
    if (major_ < 1 || major_ > kNewestSchemaMajor)
      Fail(version.is_object() ? "$.schema_version.major" : "$.schema_version",
           fmt::format("unknown schema major version {} (this reader knows 1 to {})", major_, kNewestSchemaMajor));
    if (const json* tv = Optional(doc, "torch_version"); tv && tv->is_string() && graph_.torch_version.empty())
      graph_.torch_version = tv->get<std::string>();
    if (const json* rc = Optional(doc, "range_constraints"); rc && rc->is_object()) {
      for (auto it = rc->begin(); it != rc->end(); ++it) {
        Range r;
        if (const json* lo = Optional(it.value(), "min_val"); lo && lo->is_number_integer()) r.min = lo->get<int64_t>();
        // Some serializers write int_oo as a huge integer: treat anything past 2^31 as unbounded.
        if (const json* hi = Optional(it.value(), "max_val"); hi && hi->is_number_integer() &&
                                                               hi->get<int64_t>() < (int64_t{1} << 31))
          r.max = hi->get<int64_t>();
        ranges_[it.key()] = r;
      }
    }
    const json& gm = Require(doc, "graph_module", "$");
    DecodeGraph(Require(gm, "graph", "$.graph_module"), "$.graph_module.graph", nullptr, 0);
  } catch (const Failure& f) {
    return f.status;
  } catch (const json::exception& e) {
    return InvalidInput(fmt::format("{}: malformed program: {}", where_, hlo::OneLine(e.what())));
  }
  return Status::Ok();
}

Status DecodeExportedProgram(std::string_view json_text, const std::string& program, const std::string& where,
                             Graph& graph) {
  Decoder d(where, program, graph);
  return d.Run(json_text);
}

}  // namespace opprobe::analyzer
