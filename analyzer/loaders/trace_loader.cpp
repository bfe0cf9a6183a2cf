#include "analyzer/loaders/trace_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hlo/quote.h"
#include "hlo/file_io.h"

namespace opprobe::analyzer {

namespace {

using json = nlohmann::json;

// A JSON path under construction (`calls[3].args[1].value`) for error messages.
class Path {
 public:
  Path() = default;
  Path Key(std::string_view k) const { return Path(text_.empty() ? std::string(k) : text_ + "." + std::string(k)); }
  Path Index(size_t i) const { return Path(fmt::format("{}[{}]", text_, i)); }
  const std::string& str() const { return text_; }

 private:
  explicit Path(std::string t) : text_(std::move(t)) {}
  std::string text_;
};

// Describes a JSON value's type for "expected X, got Y" messages.
std::string TypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::string: return fmt::format("the string \"{}\"", j.get_ref<const std::string&>().substr(0, 40));
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "something else";
  }
}

Status Bad(const Path& p, const std::string& what) {
  // Paths and messages may carry keys and strings from the file: one line, escaped and bounded.
  return InvalidInput(hlo::OneLine(p.str().empty() ? what : p.str() + ": " + what, 1000));
}

Status Expect(const json& j, const Path& p, std::string_view what) {
  return Bad(p, fmt::format("expected {}, got {}", what, TypeName(j)));
}

// Member lookup: nullptr when absent.
const json* Member(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Expected<const json*> Required(const json& obj, const Path& p, std::string_view key) {
  const json* m = Member(obj, key);
  if (!m) return Bad(p, fmt::format("missing member \"{}\"", key));
  return m;
}

Expected<std::string> GetString(const json& j, const Path& p) {
  if (!j.is_string()) return Expect(j, p, "a string");
  return j.get<std::string>();
}

Expected<int64_t> GetInt(const json& j, const Path& p) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Bad(p, "integer out of range");
    return static_cast<int64_t>(u);
  }
  if (!j.is_number_integer()) return Expect(j, p, "an integer");
  return j.get<int64_t>();
}

Expected<bool> GetBool(const json& j, const Path& p) {
  if (!j.is_boolean()) return Expect(j, p, "a boolean");
  return j.get<bool>();
}

// A float: a JSON number, or "nan" / "inf" / "-inf" (JSON has no non-finite numbers).
Expected<double> GetFloat(const json& j, const Path& p) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return Expect(j, p, "a number (or \"nan\", \"inf\", \"-inf\")");
}

Expected<const json*> RequiredArray(const json& obj, const Path& p, std::string_view key) {
  OPPROBE_ASSIGN_OR_RETURN(const json* m, Required(obj, p, key));
  if (!m->is_array()) return Expect(*m, p.Key(key), "an array");
  return m;
}

Expected<hlo::PrimitiveType> GetDtype(const json& j, const Path& p) {
  OPPROBE_ASSIGN_OR_RETURN(std::string name, GetString(j, p));
  auto t = DtypeFromTorchName(name);
  if (!t) return Bad(p, fmt::format("unknown dtype '{}'", name));
  return *t;
}

// {"dtype": "float32", "shape": [4, 3], "dynamic": [false, true]?}
Expected<TensorMeta> ParseTensorMeta(const json& j, const Path& p) {
  if (!j.is_object()) return Expect(j, p, "a tensor object");
  TensorMeta m;
  OPPROBE_ASSIGN_OR_RETURN(const json* dtype, Required(j, p, "dtype"));
  OPPROBE_ASSIGN_OR_RETURN(m.dtype, GetDtype(*dtype, p.Key("dtype")));
  m.torch_dtype = TorchDtypeWithoutXlaType(dtype->get<std::string>());
  OPPROBE_ASSIGN_OR_RETURN(const json* shape, RequiredArray(j, p, "shape"));
  for (size_t i = 0; i < shape->size(); ++i) {
    OPPROBE_ASSIGN_OR_RETURN(int64_t d, GetInt((*shape)[i], p.Key("shape").Index(i)));
    if (d < 0) return Bad(p.Key("shape").Index(i), fmt::format("negative size {}", d));
    m.sizes.push_back(d);
  }
  if (const json* dyn = Member(j, "dynamic")) {
    if (!dyn->is_array()) return Expect(*dyn, p.Key("dynamic"), "an array of booleans");
    if (dyn->size() != m.sizes.size())
      return Bad(p.Key("dynamic"), fmt::format("has {} entries for {} sizes", dyn->size(), m.sizes.size()));
    for (size_t i = 0; i < dyn->size(); ++i) {
      OPPROBE_ASSIGN_OR_RETURN(bool b, GetBool((*dyn)[i], p.Key("dynamic").Index(i)));
      m.dynamic.push_back(b);
    }
    if (!m.is_dynamic()) m.dynamic.clear();
  }
  return m;
}

template <typename T, typename F>
Expected<std::vector<T>> ParseList(const json& j, const Path& p, F&& element) {
  if (!j.is_array()) return Expect(j, p, "an array");
  std::vector<T> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    OPPROBE_ASSIGN_OR_RETURN(T v, element(j[i], p.Index(i)));
    out.push_back(std::move(v));
  }
  return out;
}

constexpr std::string_view kKinds =
    "none, tensor, tensor_list, bool, int, float, complex, string, int_list, float_list, bool_list, string_list, "
    "dtype, device, layout, memory_format, other";

// One argument or output value: {"kind": "...", ...}. See schemas/trace.schema.json ($defs/value).
Expected<Value> ParseValue(const json& j, const Path& p) {
  if (!j.is_object()) return Expect(j, p, "a value object with a \"kind\"");
  OPPROBE_ASSIGN_OR_RETURN(const json* kind_j, Required(j, p, "kind"));
  OPPROBE_ASSIGN_OR_RETURN(std::string kind, GetString(*kind_j, p.Key("kind")));
  Value v;
  auto value_member = [&]() { return Required(j, p, "value"); };
  const Path vp = p.Key("value");
  if (kind == "none") {
    return Value::None();
  } else if (kind == "tensor") {
    OPPROBE_ASSIGN_OR_RETURN(TensorMeta m, ParseTensorMeta(j, p));
    return Value::Tensor(std::move(m));
  } else if (kind == "tensor_list") {
    OPPROBE_ASSIGN_OR_RETURN(const json* list, value_member());
    v.kind = Value::Kind::kTensorList;
    OPPROBE_ASSIGN_OR_RETURN(v.tensors, ParseList<std::optional<TensorMeta>>(
        *list, vp, [](const json& e, const Path& ep) -> Expected<std::optional<TensorMeta>> {
          if (e.is_null()) return std::optional<TensorMeta>();
          OPPROBE_ASSIGN_OR_RETURN(TensorMeta m, ParseTensorMeta(e, ep));
          return std::optional<TensorMeta>(std::move(m));
        }));
    return v;
  } else if (kind == "bool") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    OPPROBE_ASSIGN_OR_RETURN(bool b, GetBool(*x, vp));
    return Value::Bool(b);
  } else if (kind == "int") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    OPPROBE_ASSIGN_OR_RETURN(int64_t i, GetInt(*x, vp));
    v = Value::Int(i);
  } else if (kind == "float") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    OPPROBE_ASSIGN_OR_RETURN(double f, GetFloat(*x, vp));
    return Value::Float(f);
  } else if (kind == "complex") {
    OPPROBE_ASSIGN_OR_RETURN(const json* re, Required(j, p, "real"));
    OPPROBE_ASSIGN_OR_RETURN(const json* im, Required(j, p, "imag"));
    OPPROBE_ASSIGN_OR_RETURN(double r, GetFloat(*re, p.Key("real")));
    OPPROBE_ASSIGN_OR_RETURN(double i, GetFloat(*im, p.Key("imag")));
    v.kind = Value::Kind::kComplex;
    v.c = {r, i};
    return v;
  } else if (kind == "string" || kind == "device" || kind == "layout" || kind == "memory_format") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    OPPROBE_ASSIGN_OR_RETURN(v.s, GetString(*x, vp));
    v.kind = kind == "string"   ? Value::Kind::kString
             : kind == "device" ? Value::Kind::kDevice
             : kind == "layout" ? Value::Kind::kLayout
                                : Value::Kind::kMemoryFormat;
    return v;
  } else if (kind == "int_list") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    OPPROBE_ASSIGN_OR_RETURN(auto ints, ParseList<int64_t>(*x, vp, GetInt));
    v = Value::IntList(std::move(ints));
  } else if (kind == "float_list") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    v.kind = Value::Kind::kFloatList;
    OPPROBE_ASSIGN_OR_RETURN(v.floats, ParseList<double>(*x, vp, GetFloat));
    return v;
  } else if (kind == "bool_list") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    v.kind = Value::Kind::kBoolList;
    OPPROBE_ASSIGN_OR_RETURN(auto bools, ParseList<bool>(*x, vp, GetBool));
    v.bools.assign(bools.begin(), bools.end());
    return v;
  } else if (kind == "string_list") {
    // The Graph has no string list (Dimname lists are rare): kept as text, `['a', 'b']`.
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    OPPROBE_ASSIGN_OR_RETURN(auto strs, ParseList<std::string>(*x, vp, GetString));
    std::string text = "[";
    for (size_t i = 0; i < strs.size(); ++i) text += (i ? ", '" : "'") + strs[i] + "'";
    return Value::String(text + "]");
  } else if (kind == "dtype") {
    OPPROBE_ASSIGN_OR_RETURN(const json* x, value_member());
    OPPROBE_ASSIGN_OR_RETURN(hlo::PrimitiveType t, GetDtype(*x, vp));
    Value d = Value::Dtype(t);
    d.s = TorchDtypeWithoutXlaType(x->get<std::string>());
    return d;
  } else if (kind == "other") {
    // A value the capture could not type (a Generator object, ...): kept as its Python repr.
    OPPROBE_ASSIGN_OR_RETURN(const json* type, Required(j, p, "type"));
    OPPROBE_ASSIGN_OR_RETURN(std::string type_name, GetString(*type, p.Key("type")));
    std::string repr = type_name;
    if (const json* r = Member(j, "repr")) {
      OPPROBE_ASSIGN_OR_RETURN(repr, GetString(*r, p.Key("repr")));
    }
    return Value::String(repr);
  } else {
    return Bad(p.Key("kind"), fmt::format("unknown value kind '{}' (expected one of: {})", kind, kKinds));
  }
  // int and int_list: SymInts without a hint are flagged.
  if (const json* sym = Member(j, "symbolic")) {
    OPPROBE_ASSIGN_OR_RETURN(v.symbolic, GetBool(*sym, p.Key("symbolic")));
  }
  return v;
}

bool HasDynamicTensor(const Value& v) {
  if (v.kind == Value::Kind::kTensor) return v.tensor.is_dynamic();
  if (v.kind == Value::Kind::kTensorList)
    for (const auto& t : v.tensors)
      if (t && t->is_dynamic()) return true;
  return v.symbolic;
}

// {"file": "train.py", "line": 12}
Expected<SourceLoc> ParseLoc(const json& loc, const Path& lp) {
  SourceLoc out;
  if (!loc.is_object()) return Expect(loc, lp, "an object {\"file\", \"line\"}");
  if (const json* f = Member(loc, "file")) {
    OPPROBE_ASSIGN_OR_RETURN(out.file, GetString(*f, lp.Key("file")));
  }
  if (const json* l = Member(loc, "line")) {
    OPPROBE_ASSIGN_OR_RETURN(int64_t line, GetInt(*l, lp.Key("line")));
    if (line < 0 || line > std::numeric_limits<int>::max()) return Bad(lp.Key("line"), "line out of range");
    out.line = static_cast<int>(line);
  }
  return out;
}

// {"op": "aten::mul.Tensor", "loc": {...}, "lib_loc": {...}, "module_path": "layer1"}: a backward call's forward call.
Expected<ForwardCall> ParseForwardCall(const json& j, const Path& p) {
  if (!j.is_object()) return Expect(j, p, "a forward call object {\"op\", \"loc\", \"module_path\"}");
  ForwardCall f;
  OPPROBE_ASSIGN_OR_RETURN(const json* op, Required(j, p, "op"));
  OPPROBE_ASSIGN_OR_RETURN(f.op, GetString(*op, p.Key("op")));
  if (f.op.empty()) return Bad(p.Key("op"), "expected an op name like \"aten::mul\"");
  if (const json* loc = Member(j, "loc")) {
    OPPROBE_ASSIGN_OR_RETURN(f.loc, ParseLoc(*loc, p.Key("loc")));
  }
  if (const json* loc = Member(j, "lib_loc")) {
    OPPROBE_ASSIGN_OR_RETURN(f.lib_loc, ParseLoc(*loc, p.Key("lib_loc")));
  }
  if (const json* mp = Member(j, "module_path")) {
    OPPROBE_ASSIGN_OR_RETURN(f.module_path, GetString(*mp, p.Key("module_path")));
  }
  return f;
}

Expected<Node> ParseCall(const json& j, const Path& p) {
  if (!j.is_object()) return Expect(j, p, "a call object");
  Node n;
  OPPROBE_ASSIGN_OR_RETURN(const json* op, Required(j, p, "op"));
  OPPROBE_ASSIGN_OR_RETURN(n.op, GetString(*op, p.Key("op")));
  if (n.op.empty() || n.op.find("::") == std::string::npos)
    return Bad(p.Key("op"), fmt::format("expected a qualified op name like \"aten::mul\", got \"{}\"", n.op));
  n.overload = "default";
  if (const json* ov = Member(j, "overload")) {
    OPPROBE_ASSIGN_OR_RETURN(n.overload, GetString(*ov, p.Key("overload")));
    if (n.overload.empty()) n.overload = "default";
  }
  OPPROBE_ASSIGN_OR_RETURN(const json* args, RequiredArray(j, p, "args"));
  for (size_t i = 0; i < args->size(); ++i) {
    const json& a = (*args)[i];
    Path ap = p.Key("args").Index(i);
    if (!a.is_object()) return Expect(a, ap, "an argument object {\"name\", \"value\"}");
    Argument arg;
    if (const json* name = Member(a, "name")) {
      OPPROBE_ASSIGN_OR_RETURN(arg.name, GetString(*name, ap.Key("name")));
    }
    OPPROBE_ASSIGN_OR_RETURN(const json* value, Required(a, ap, "value"));
    OPPROBE_ASSIGN_OR_RETURN(arg.value, ParseValue(*value, ap.Key("value")));
    n.args.push_back(std::move(arg));
  }
  if (const json* outs = Member(j, "outputs")) {
    OPPROBE_ASSIGN_OR_RETURN(n.outputs, ParseList<Value>(*outs, p.Key("outputs"), ParseValue));
  }
  if (const json* loc = Member(j, "loc")) {
    OPPROBE_ASSIGN_OR_RETURN(n.loc, ParseLoc(*loc, p.Key("loc")));
  }
  if (const json* loc = Member(j, "lib_loc")) {
    OPPROBE_ASSIGN_OR_RETURN(n.lib_loc, ParseLoc(*loc, p.Key("lib_loc")));
  }
  if (const json* fw = Member(j, "forward")) {
    OPPROBE_ASSIGN_OR_RETURN(n.forward, ParseForwardCall(*fw, p.Key("forward")));
  }
  if (const json* st = Member(j, "step")) {
    OPPROBE_ASSIGN_OR_RETURN(n.step, GetInt(*st, p.Key("step")));
    if (n.step < 0) return Bad(p.Key("step"), fmt::format("expected a step >= 0, got {}", n.step));
  }
  if (const json* mp = Member(j, "module_path")) {
    OPPROBE_ASSIGN_OR_RETURN(n.module_path, GetString(*mp, p.Key("module_path")));
  }
  if (const json* ph = Member(j, "phase")) {
    OPPROBE_ASSIGN_OR_RETURN(n.phase, GetString(*ph, p.Key("phase")));
    if (n.phase != "forward" && n.phase != "backward" && n.phase != "optimizer" && !n.phase.empty())
      return Bad(p.Key("phase"), fmt::format("unknown phase '{}' (expected forward, backward or optimizer)", n.phase));
  }
  if (const json* c = Member(j, "count")) {
    OPPROBE_ASSIGN_OR_RETURN(n.count, GetInt(*c, p.Key("count")));
    if (n.count < 1) return Bad(p.Key("count"), fmt::format("expected a count >= 1, got {}", n.count));
  }
  for (const auto& a : n.args) n.dynamic_shape = n.dynamic_shape || HasDynamicTensor(a.value);
  for (const auto& o : n.outputs) n.dynamic_shape = n.dynamic_shape || HasDynamicTensor(o);
  if (n.dynamic_shape) n.note = "symbolic sizes recorded by the capture";
  return n;
}

// `line L, column C` of a byte offset (nlohmann reports the offset just past the bad character).
std::string LineColumn(std::string_view text, size_t byte) {
  if (byte > text.size()) byte = text.size();
  size_t line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("line {}, column {}", line, col);
}

// `status`, `exit_status` and `error` (how the captured script ended) into Graph::capture.
Status ParseCaptureStatus(const json& doc, const Path& root, Graph& g) {
  const json* status = Member(doc, "status");
  if (status == nullptr) return Status::Ok();
  CaptureStatus c;
  OPPROBE_ASSIGN_OR_RETURN(std::string s, GetString(*status, root.Key("status")));
  if (s == "error") c.status = CaptureStatus::Status::kFailed;
  else if (s != "ok") return Bad(root.Key("status"), fmt::format("expected \"ok\" or \"error\", got \"{}\"", s));
  if (const json* es = Member(doc, "exit_status")) {
    OPPROBE_ASSIGN_OR_RETURN(int64_t code, GetInt(*es, root.Key("exit_status")));
    c.exit_code = static_cast<int>(std::clamp<int64_t>(code, -1000000, 1000000));
  }
  if (const json* err = Member(doc, "error")) {
    Path ep = root.Key("error");
    if (!err->is_object()) return Expect(*err, ep, "an object {\"type\", \"message\", \"exit_status\"}");
    if (const json* t = Member(*err, "type")) {
      OPPROBE_ASSIGN_OR_RETURN(c.exception_type, GetString(*t, ep.Key("type")));
    }
    if (const json* m = Member(*err, "message")) {
      OPPROBE_ASSIGN_OR_RETURN(std::string msg, GetString(*m, ep.Key("message")));
      c.exception_message = msg.substr(0, msg.find('\n'));  // one line in reports
    }
    if (const json* es = Member(*err, "exit_status"); es != nullptr && Member(doc, "exit_status") == nullptr) {
      OPPROBE_ASSIGN_OR_RETURN(int64_t code, GetInt(*es, ep.Key("exit_status")));
      c.exit_code = static_cast<int>(std::clamp<int64_t>(code, -1000000, 1000000));
    }
    if (const json* loc = Member(*err, "loc")) {
      Path lp = ep.Key("loc");
      if (!loc->is_object()) return Expect(*loc, lp, "an object {\"file\", \"line\"}");
      if (const json* f = Member(*loc, "file")) {
        OPPROBE_ASSIGN_OR_RETURN(c.location.file, GetString(*f, lp.Key("file")));
      }
      if (const json* l = Member(*loc, "line")) {
        OPPROBE_ASSIGN_OR_RETURN(int64_t line, GetInt(*l, lp.Key("line")));
        if (line < 0 || line > std::numeric_limits<int>::max()) return Bad(lp.Key("line"), "line out of range");
        c.location.line = static_cast<int>(line);
      }
    }
  }
  if (c.status == CaptureStatus::Status::kOk && c.exit_code != 0) c.status = CaptureStatus::Status::kFailed;
  g.capture = c;
  return Status::Ok();
}

// Traces written before the shim recorded calls outside aten list them only in `skipped_ops` (name -> count):
// each becomes a node without a call site, so that reports list it instead of dropping it.
Status ParseSkippedOps(const json& doc, const Path& root, Graph& g) {
  const json* skipped = Member(doc, "skipped_ops");
  if (skipped == nullptr) return Status::Ok();
  Path sp = root.Key("skipped_ops");
  if (!skipped->is_object()) return Expect(*skipped, sp, "an object {op: count}");
  for (const auto& [name, count_j] : skipped->items()) {
    OPPROBE_ASSIGN_OR_RETURN(int64_t count, GetInt(count_j, sp.Key(name)));
    if (name.find("::") == std::string::npos || name.rfind("aten::", 0) == 0 || IsBookkeepingOp(name) || count < 1)
      continue;
    bool recorded = false;  // newer shims record such calls in `calls`
    for (const auto& n : g.nodes) recorded = recorded || n.op == name;
    if (recorded) continue;
    Node n;
    n.op = name;
    n.overload = "default";
    n.count = count;
    n.note = "listed in the trace's skipped_ops without a call site (captured by an older opprobe)";
    g.nodes.push_back(std::move(n));
  }
  return Status::Ok();
}

Expected<Graph> ParseDocument(const json& doc) {
  Path root;
  if (!doc.is_object()) return Expect(doc, Path().Key("(root)"), "a JSON object");
  OPPROBE_ASSIGN_OR_RETURN(const json* format, Required(doc, root, "format"));
  OPPROBE_ASSIGN_OR_RETURN(std::string format_name, GetString(*format, root.Key("format")));
  if (format_name != "opprobe-trace")
    return Bad(root.Key("format"), fmt::format("expected \"opprobe-trace\", got \"{}\" (not an opprobe trace)", format_name));
  OPPROBE_ASSIGN_OR_RETURN(const json* version_j, Required(doc, root, "version"));
  OPPROBE_ASSIGN_OR_RETURN(int64_t version, GetInt(*version_j, root.Key("version")));
  if (version > kTraceFormatVersion)
    return Bad(root.Key("version"), fmt::format("trace format version {} is newer than this opprobe reads ({}); "
                                                "upgrade opprobe or capture again with this one",
                                                version, kTraceFormatVersion));
  if (version < 1) return Bad(root.Key("version"), fmt::format("unknown trace format version {}", version));

  Graph g;
  g.input_kind = "trace";
  if (const json* s = Member(doc, "script")) {
    OPPROBE_ASSIGN_OR_RETURN(g.model, GetString(*s, root.Key("script")));
  }
  if (const json* tv = Member(doc, "torch_version")) {
    OPPROBE_ASSIGN_OR_RETURN(g.torch_version, GetString(*tv, root.Key("torch_version")));
  }
  OPPROBE_ASSIGN_OR_RETURN(const json* calls, RequiredArray(doc, root, "calls"));
  g.nodes.reserve(calls->size());
  for (size_t i = 0; i < calls->size(); ++i) {
    OPPROBE_ASSIGN_OR_RETURN(Node n, ParseCall((*calls)[i], root.Key("calls").Index(i)));
    g.nodes.push_back(std::move(n));
  }
  OPPROBE_RETURN_IF_ERROR(ParseCaptureStatus(doc, root, g));
  OPPROBE_RETURN_IF_ERROR(ParseSkippedOps(doc, root, g));
  return g;
}

}  // namespace

bool IsBookkeepingOp(const std::string& op) {
  for (const char* ns : {"profiler::", "prims::", "prim::", "debugprims::"})
    if (op.rfind(ns, 0) == 0) return true;
  // Version queries that libraries dispatch at import time; they compute nothing on a tensor.
  for (const char* name : {"torchvision::_cuda_version", "torchaudio::cuda_version", "torchaudio::_cuda_version"})
    if (op == name) return true;
  return false;
}

Expected<Graph> ParseTrace(std::string_view json_text, const std::string& source_name) {
  try {
    json doc;
    try {
      doc = json::parse(json_text.begin(), json_text.end());
    } catch (const json::parse_error& e) {
      if (json_text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        return InvalidInput(source_name + ": empty file, expected an opprobe trace (JSON)");
      // e.what() is `[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ...`.
      std::string what = e.what();
      auto colon = what.find(": ", what.find("parse error"));
      std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
      return InvalidInput(fmt::format("{}: not valid JSON at {} (byte {}): {}", source_name,
                                      LineColumn(json_text, e.byte), e.byte, detail));
    }
    auto g = ParseDocument(doc);
    if (!g.ok()) return g.status().WithContext(source_name);
    if (g->model.empty()) g->model = source_name;
    return g;
  } catch (const std::exception& e) {  // nlohmann type errors and allocation failures: never escape
    return InvalidInput(fmt::format("{}: cannot read trace: {}", source_name, hlo::OneLine(e.what())));
  }
}

Expected<Graph> LoadTrace(const std::string& path) {
  OPPROBE_ASSIGN_OR_RETURN(std::string text, io::ReadFile(path));
  return ParseTrace(text, path);
}

}  // namespace opprobe::analyzer
