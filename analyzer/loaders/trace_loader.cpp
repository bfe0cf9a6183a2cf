#include "analyzer/loaders/trace_loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "analyzer/loaders/json_stream.h"
#include "support/file_io.h"
#include "support/quote.h"

namespace opprobe::analyzer {

namespace {

using json::Ref;

// A JSON path (`calls[3].args[1].value`) for error messages, as a chain of the callers' segments on the stack: it
// costs nothing until an error renders it. A Path must not outlive the Path it was made from, so name each step
// (`const Path args = p.Key("args"); ... args.Index(i)`) rather than chaining calls on temporaries.
class Path {
 public:
  Path() = default;
  Path Key(std::string_view key) const { return Path(this, key, kNoIndex); }
  Path Index(size_t i) const { return Path(this, {}, i); }

  std::string str() const {
    std::vector<const Path*> chain;
    for (const Path* p = this; p != nullptr && p->parent_ != nullptr; p = p->parent_) chain.push_back(p);
    std::string out;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Path& p = **it;
      if (p.index_ != kNoIndex) {
        out += fmt::format("[{}]", p.index_);
      } else {
        if (!out.empty()) out += '.';
        out += p.key_;
      }
    }
    return out;
  }

 private:
  static constexpr size_t kNoIndex = static_cast<size_t>(-1);
  Path(const Path* parent, std::string_view key, size_t index) : parent_(parent), key_(key), index_(index) {}
  const Path* parent_ = nullptr;
  std::string_view key_;
  size_t index_ = kNoIndex;
};

// Describes a JSON value's type for "expected X, got Y" messages.
std::string TypeName(const Ref& j) {
  switch (j.type()) {
    case json::Type::kNull: return "null";
    case json::Type::kFalse:
    case json::Type::kTrue: return "a boolean";
    case json::Type::kInt:
    case json::Type::kUint: return "an integer";
    case json::Type::kFloat: return "a number";
    case json::Type::kString: return fmt::format("the string \"{}\"", j.str().substr(0, 40));
    case json::Type::kArray: return "an array";
    case json::Type::kObject: return "an object";
  }
  return "something else";
}

constexpr std::string_view kKinds =
    "none, tensor, tensor_list, bool, int, float, complex, string, int_list, float_list, bool_list, string_list, "
    "dtype, device, layout, memory_format, other";

bool HasDynamicTensor(const Value& v) {
  if (v.kind == Value::Kind::kTensor) return v.tensor.is_dynamic();
  if (v.kind == Value::Kind::kTensorList)
    for (const auto& t : v.tensors)
      if (t && t->is_dynamic()) return true;
  return v.symbolic;
}

// The checks of a trace's values. Each returns false after recording the first error (error()); the messages name
// the exact JSON path and stay one line (keys and strings from the file are escaped and bounded).
class Checker {
 public:
  const Status& error() const { return error_; }
  bool failed() const { return !error_.ok(); }

  bool Bad(const Path& p, const std::string& what) {
    std::string where = p.str();
    if (error_.ok()) error_ = InvalidInput(support::OneLine(where.empty() ? what : where + ": " + what, 1000));
    return false;
  }
  bool Expect(const Ref& j, const Path& p, std::string_view what) {
    return Bad(p, fmt::format("expected {}, got {}", what, TypeName(j)));
  }
  bool Required(const Ref& obj, const Path& p, std::string_view key, Ref* out) {
    std::optional<Ref> m = obj.Find(key);
    if (!m) return Bad(p, fmt::format("missing member \"{}\"", key));
    *out = *m;
    return true;
  }
  bool RequiredArray(const Ref& obj, const Path& p, std::string_view key, Ref* out) {
    if (!Required(obj, p, key, out)) return false;
    if (!out->is_array()) return Expect(*out, p.Key(key), "an array");
    return true;
  }
  bool GetString(const Ref& j, const Path& p, std::string* out) {
    if (!j.is_string()) return Expect(j, p, "a string");
    out->assign(j.str());
    return true;
  }
  bool GetInt(const Ref& j, const Path& p, int64_t* out) {
    if (j.is_unsigned()) {
      uint64_t u = j.uint64();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Bad(p, "integer out of range");
      *out = static_cast<int64_t>(u);
      return true;
    }
    if (!j.is_integer()) return Expect(j, p, "an integer");
    *out = j.int64();
    return true;
  }
  bool GetBool(const Ref& j, const Path& p, bool* out) {
    if (!j.is_boolean()) return Expect(j, p, "a boolean");
    *out = j.boolean();
    return true;
  }
  // A float: a JSON number, or "nan" / "inf" / "-inf" (JSON has no non-finite numbers).
  bool GetFloat(const Ref& j, const Path& p, double* out) {
    if (j.is_number()) {
      *out = j.number();
      return true;
    }
    if (j.is_string()) {
      std::string_view s = j.str();
      if (s == "nan") return *out = std::numeric_limits<double>::quiet_NaN(), true;
      if (s == "inf") return *out = std::numeric_limits<double>::infinity(), true;
      if (s == "-inf") return *out = -std::numeric_limits<double>::infinity(), true;
    }
    return Expect(j, p, "a number (or \"nan\", \"inf\", \"-inf\")");
  }
  bool GetDtype(const Ref& j, const Path& p, hlo::PrimitiveType* out) {
    if (!j.is_string()) return Expect(j, p, "a string");
    auto t = DtypeFromTorchName(j.str());
    if (!t) return Bad(p, fmt::format("unknown dtype '{}'", j.str()));
    *out = *t;
    return true;
  }
  // {"file": "train.py", "line": 12}
  bool ParseLoc(const Ref& loc, const Path& lp, SourceLoc* out) {
    if (!loc.is_object()) return Expect(loc, lp, "an object {\"file\", \"line\"}");
    static constexpr std::string_view kNames[] = {"file", "line"};
    std::optional<Ref> m[std::size(kNames)];
    loc.FindAll(kNames, m);
    if (m[0]) {
      if (!GetString(*m[0], lp.Key("file"), &out->file)) return false;
    }
    if (m[1]) {
      int64_t line = 0;
      if (!GetInt(*m[1], lp.Key("line"), &line)) return false;
      if (line < 0 || line > std::numeric_limits<int>::max()) return Bad(lp.Key("line"), "line out of range");
      out->line = static_cast<int>(line);
    }
    return true;
  }
  // {"op": "aten::convolution", "loc": {...}?, "lib_loc": {...}?, "module_path": "..."?}: the forward call whose
  // autograd node made a backward call.
  bool ParseForwardCall(const Ref& j, const Path& p, ForwardCall* out) {
    if (!j.is_object()) return Expect(j, p, "a forward call object {\"op\", \"loc\", \"module_path\"}");
    static constexpr std::string_view kNames[] = {"op", "loc", "lib_loc", "module_path"};
    std::optional<Ref> m[std::size(kNames)];
    j.FindAll(kNames, m);
    if (!m[0]) return Bad(p, "missing member \"op\"");
    if (!GetString(*m[0], p.Key("op"), &out->op)) return false;
    if (out->op.empty()) return Bad(p.Key("op"), "expected an op name like \"aten::mul\"");
    if (m[1] && !ParseLoc(*m[1], p.Key("loc"), &out->loc)) return false;
    if (m[2] && !ParseLoc(*m[2], p.Key("lib_loc"), &out->lib_loc)) return false;
    if (m[3] && !GetString(*m[3], p.Key("module_path"), &out->module_path)) return false;
    return true;
  }

 private:
  Status error_;
};

// One call's arguments and outputs, parsed once for every call record that spells them the same way.
struct Body {
  SharedVector<Argument> args;
  SharedVector<Value> outputs;
  bool dynamic = false;
};

struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Parses call records (schemas/trace.schema.json, $defs/call) into Nodes.
class CallReader : public Checker {
 public:
  bool ParseCall(const Ref& j, const Path& p, Node* n);
  size_t distinct_bodies() const { return bodies_.size(); }

 private:
  bool ParseBody(const Ref& args, const std::optional<Ref>& outputs, const Path& p, Body* body);
  bool ParseTensorMeta(const Ref& j, const Path& p, TensorMeta* m);
  bool ParseValue(const Ref& j, const Path& p, Value* v);

  // Argument and output text -> their parsed form: a record whose text was seen before is not parsed again (the
  // same bytes parse to the same values, without an error since the first time had none).
  std::unordered_map<std::string, Body, TextHash, std::equal_to<>> bodies_;
  std::string key_;
};

// {"dtype": "float32", "shape": [4, 3], "dynamic": [false, true]?}
bool CallReader::ParseTensorMeta(const Ref& j, const Path& p, TensorMeta* m) {
  if (!j.is_object()) return Expect(j, p, "a tensor object");
  Ref dtype, shape;
  if (!Required(j, p, "dtype", &dtype) || !GetDtype(dtype, p.Key("dtype"), &m->dtype)) return false;
  m->torch_dtype = TorchDtypeWithoutXlaType(dtype.str());
  if (!RequiredArray(j, p, "shape", &shape)) return false;
  const Path sp = p.Key("shape");
  m->sizes.reserve(shape.size());
  size_t i = 0;
  for (auto it = shape.begin(); it != shape.end(); ++it, ++i) {
    int64_t d = 0;
    if (!GetInt(*it, sp.Index(i), &d)) return false;
    if (d < 0) return Bad(sp.Index(i), fmt::format("negative size {}", d));
    m->sizes.push_back(d);
  }
  if (auto dyn = j.Find("dynamic")) {
    const Path dp = p.Key("dynamic");
    if (!dyn->is_array()) return Expect(*dyn, dp, "an array of booleans");
    if (dyn->size() != m->sizes.size())
      return Bad(dp, fmt::format("has {} entries for {} sizes", dyn->size(), m->sizes.size()));
    i = 0;
    for (auto it = dyn->begin(); it != dyn->end(); ++it, ++i) {
      bool b = false;
      if (!GetBool(*it, dp.Index(i), &b)) return false;
      m->dynamic.push_back(b);
    }
    if (!m->is_dynamic()) m->dynamic.clear();
  }
  return true;
}

// One argument or output value: {"kind": "...", ...}. See schemas/trace.schema.json ($defs/value).
bool CallReader::ParseValue(const Ref& j, const Path& p, Value* v) {
  if (!j.is_object()) return Expect(j, p, "a value object with a \"kind\"");
  Ref kind_j, x;
  if (!Required(j, p, "kind", &kind_j)) return false;
  if (!kind_j.is_string()) return Expect(kind_j, p.Key("kind"), "a string");
  const std::string_view kind = kind_j.str();
  const Path vp = p.Key("value");
  auto list = [&](auto&& element) {  // the `value` member as a list, element by element
    if (!Required(j, p, "value", &x)) return false;
    if (!x.is_array()) return Expect(x, vp, "an array");
    size_t i = 0;
    for (auto it = x.begin(); it != x.end(); ++it, ++i)
      if (!element(*it, vp.Index(i))) return false;
    return true;
  };
  if (kind == "none") {
    *v = Value::None();
    return true;
  }
  if (kind == "tensor") {
    v->kind = Value::Kind::kTensor;
    return ParseTensorMeta(j, p, &v->tensor);
  }
  if (kind == "tensor_list") {
    v->kind = Value::Kind::kTensorList;
    return list([&](const Ref& e, const Path& ep) {
      if (e.is_null()) {
        v->tensors.emplace_back();
        return true;
      }
      TensorMeta m;
      if (!ParseTensorMeta(e, ep, &m)) return false;
      v->tensors.emplace_back(std::move(m));
      return true;
    });
  }
  if (kind == "bool") {
    v->kind = Value::Kind::kBool;
    return Required(j, p, "value", &x) && GetBool(x, vp, &v->b);
  }
  if (kind == "int") {
    v->kind = Value::Kind::kInt;
    if (!Required(j, p, "value", &x) || !GetInt(x, vp, &v->i)) return false;
  } else if (kind == "float") {
    v->kind = Value::Kind::kFloat;
    return Required(j, p, "value", &x) && GetFloat(x, vp, &v->f);
  } else if (kind == "complex") {
    Ref re, im;
    double r = 0, i = 0;
    if (!Required(j, p, "real", &re) || !Required(j, p, "imag", &im) || !GetFloat(re, p.Key("real"), &r) ||
        !GetFloat(im, p.Key("imag"), &i))
      return false;
    v->kind = Value::Kind::kComplex;
    v->c = {r, i};
    return true;
  } else if (kind == "string" || kind == "device" || kind == "layout" || kind == "memory_format") {
    if (!Required(j, p, "value", &x) || !GetString(x, vp, &v->s)) return false;
    v->kind = kind == "string"   ? Value::Kind::kString
              : kind == "device" ? Value::Kind::kDevice
              : kind == "layout" ? Value::Kind::kLayout
                                 : Value::Kind::kMemoryFormat;
    return true;
  } else if (kind == "int_list") {
    v->kind = Value::Kind::kIntList;
    if (!list([&](const Ref& e, const Path& ep) {
          int64_t n = 0;
          if (!GetInt(e, ep, &n)) return false;
          v->ints.push_back(n);
          return true;
        }))
      return false;
  } else if (kind == "float_list") {
    v->kind = Value::Kind::kFloatList;
    return list([&](const Ref& e, const Path& ep) {
      double f = 0;
      if (!GetFloat(e, ep, &f)) return false;
      v->floats.push_back(f);
      return true;
    });
  } else if (kind == "bool_list") {
    v->kind = Value::Kind::kBoolList;
    return list([&](const Ref& e, const Path& ep) {
      bool b = false;
      if (!GetBool(e, ep, &b)) return false;
      v->bools.push_back(b);
      return true;
    });
  } else if (kind == "string_list") {
    // The Graph has no string list (Dimname lists are rare): kept as text, `['a', 'b']`.
    std::string text = "[";
    size_t n = 0;
    if (!list([&](const Ref& e, const Path& ep) {
          std::string s;
          if (!GetString(e, ep, &s)) return false;
          text += (n++ ? ", '" : "'") + s + "'";
          return true;
        }))
      return false;
    *v = Value::String(text + "]");
    return true;
  } else if (kind == "dtype") {
    hlo::PrimitiveType t = hlo::PrimitiveType::PRIMITIVE_TYPE_INVALID;
    if (!Required(j, p, "value", &x) || !GetDtype(x, vp, &t)) return false;
    *v = Value::Dtype(t);
    v->s = TorchDtypeWithoutXlaType(x.str());
    return true;
  } else if (kind == "other") {
    // A value the capture could not type (a Generator object, ...): kept as its Python repr.
    Ref type;
    std::string repr;
    if (!Required(j, p, "type", &type) || !GetString(type, p.Key("type"), &repr)) return false;
    if (auto r = j.Find("repr")) {
      if (!GetString(*r, p.Key("repr"), &repr)) return false;
    }
    *v = Value::String(std::move(repr));
    return true;
  } else {
    return Bad(p.Key("kind"), fmt::format("unknown value kind '{}' (expected one of: {})", kind, kKinds));
  }
  // int and int_list: SymInts without a hint are flagged.
  if (auto sym = j.Find("symbolic")) {
    if (!GetBool(*sym, p.Key("symbolic"), &v->symbolic)) return false;
  }
  return true;
}

bool CallReader::ParseBody(const Ref& args, const std::optional<Ref>& outputs, const Path& p, Body* body) {
  // The lookup key: the argument text, and the output text after a NUL (which JSON text cannot hold).
  const std::string_view args_text = args.source();
  key_.assign(args_text);
  if (outputs) {
    key_ += '\0';
    key_.append(outputs->source());
  }
  if (auto it = bodies_.find(std::string_view(key_)); it != bodies_.end()) {
    *body = it->second;
    return true;
  }
  std::vector<Argument> parsed_args;
  parsed_args.reserve(args.size());
  const Path args_path = p.Key("args");
  size_t i = 0;
  for (auto it = args.begin(); it != args.end(); ++it, ++i) {
    const Ref a = *it;
    const Path ap = args_path.Index(i);
    if (!a.is_object()) return Expect(a, ap, "an argument object {\"name\", \"value\"}");
    Argument arg;
    if (auto name = a.Find("name")) {
      if (!GetString(*name, ap.Key("name"), &arg.name)) return false;
    }
    Ref value;
    if (!Required(a, ap, "value", &value) || !ParseValue(value, ap.Key("value"), &arg.value)) return false;
    parsed_args.push_back(std::move(arg));
  }
  std::vector<Value> parsed_outputs;
  if (outputs) {
    const Path op = p.Key("outputs");
    if (!outputs->is_array()) return Expect(*outputs, op, "an array");
    parsed_outputs.reserve(outputs->size());
    i = 0;
    for (auto it = outputs->begin(); it != outputs->end(); ++it, ++i) {
      Value v;
      if (!ParseValue(*it, op.Index(i), &v)) return false;
      parsed_outputs.push_back(std::move(v));
    }
  }
  Body b;
  for (const auto& a : parsed_args) b.dynamic = b.dynamic || HasDynamicTensor(a.value);
  for (const auto& o : parsed_outputs) b.dynamic = b.dynamic || HasDynamicTensor(o);
  b.args = std::move(parsed_args);
  b.outputs = std::move(parsed_outputs);
  *body = bodies_.emplace(key_, std::move(b)).first->second;
  return true;
}

// One call record (schemas/trace.schema.json, $defs/call). Members are checked in a fixed order whatever their order
// in the file, so the first error reported does not depend on how a writer ordered them; a member that is not known
// is ignored. A new optional member is one more name in kNames (and the enum) and its check below.
bool CallReader::ParseCall(const Ref& j, const Path& p, Node* n) {
  if (!j.is_object()) return Expect(j, p, "a call object");
  static constexpr std::string_view kNames[] = {"op",   "overload", "args",        "outputs", "loc",    "lib_loc",
                                                "step", "count",    "module_path", "phase",   "forward"};
  enum { kOp, kOverload, kArgs, kOutputs, kLoc, kLibLoc, kStep, kCount, kModulePath, kPhase, kForward };
  std::optional<Ref> m[std::size(kNames)];
  j.FindAll(kNames, m);
  if (!m[kOp]) return Bad(p, "missing member \"op\"");
  if (!GetString(*m[kOp], p.Key("op"), &n->op)) return false;
  if (n->op.empty() || n->op.find("::") == std::string::npos)
    return Bad(p.Key("op"), fmt::format("expected a qualified op name like \"aten::mul\", got \"{}\"", n->op));
  n->overload = "default";
  if (m[kOverload]) {
    if (!GetString(*m[kOverload], p.Key("overload"), &n->overload)) return false;
    if (n->overload.empty()) n->overload = "default";
  }
  if (!m[kArgs]) return Bad(p, "missing member \"args\"");
  if (!m[kArgs]->is_array()) return Expect(*m[kArgs], p.Key("args"), "an array");
  Body body;
  if (!ParseBody(*m[kArgs], m[kOutputs], p, &body)) return false;
  n->args = std::move(body.args);
  n->outputs = std::move(body.outputs);
  if (m[kLoc]) {
    if (!ParseLoc(*m[kLoc], p.Key("loc"), &n->loc)) return false;
  }
  if (m[kLibLoc]) {
    if (!ParseLoc(*m[kLibLoc], p.Key("lib_loc"), &n->lib_loc)) return false;
  }
  if (m[kForward]) {
    if (!ParseForwardCall(*m[kForward], p.Key("forward"), &n->forward)) return false;
  }
  if (m[kStep]) {
    if (!GetInt(*m[kStep], p.Key("step"), &n->step)) return false;
    if (n->step < 0) return Bad(p.Key("step"), fmt::format("expected a step >= 0, got {}", n->step));
  }
  if (m[kModulePath]) {
    if (!GetString(*m[kModulePath], p.Key("module_path"), &n->module_path)) return false;
  }
  if (m[kPhase]) {
    if (!GetString(*m[kPhase], p.Key("phase"), &n->phase)) return false;
    if (n->phase != "forward" && n->phase != "backward" && n->phase != "optimizer" && !n->phase.empty())
      return Bad(p.Key("phase"), fmt::format("unknown phase '{}' (expected forward, backward or optimizer)", n->phase));
  }
  if (m[kCount]) {
    if (!GetInt(*m[kCount], p.Key("count"), &n->count)) return false;
    if (n->count < 1) return Bad(p.Key("count"), fmt::format("expected a count >= 1, got {}", n->count));
  }
  n->dynamic_shape = body.dynamic;
  if (n->dynamic_shape) n->note = "symbolic sizes recorded by the capture";
  return true;
}

// The members of the document besides `calls` that this reader knows; each is kept (the last one when a name
// repeats) and checked once the whole document is read. A new optional member is one more name here and its check in
// TraceReader::Finish.
constexpr const char* kHeaderMembers[] = {"format", "version",     "script", "torch_version", "status", "exit_status",
                                          "error",  "skipped_ops", "graphs", "host_only_ops", "program"};

// Reads a trace document from a json::Stream: the header members are kept, the calls are checked and handed to the
// sink one by one as they are read. The errors are those (and in the order) of checking the whole document at once:
// a syntax error anywhere first; then the header (format, version, script, torch_version), the calls in order, the
// capture status and skipped_ops.
class TraceReader {
 public:
  TraceReader(json::Stream& stream, NodeSink& sink) : stream_(stream), sink_(sink) {}

  // The graph without nodes, or the first error (without the source name).
  Expected<Graph> Read();

 private:
  struct Member {
    bool present = false;
    json::Tape tape{/*own_strings=*/true};  // kept after the stream has moved on
    Ref value;
  };
  Member* HeaderMember(std::string_view name) {
    for (size_t i = 0; i < std::size(kHeaderMembers); ++i)
      if (name == kHeaderMembers[i]) return &header_[i];
    return nullptr;
  }
  std::optional<Ref> Header(std::string_view name) {
    Member* m = HeaderMember(name);
    return m && m->present ? std::optional<Ref>(m->value) : std::nullopt;
  }
  bool ReadCalls();
  Expected<Graph> Finish();
  Status CaptureStatusOf(Graph& g);
  Status SkippedOps();
  Status StepGraphsOf(Graph& g);
  Status ProgramOf(Graph& g);
  Status HostOnlyOps();

  json::Stream& stream_;
  NodeSink& sink_;
  Member header_[std::size(kHeaderMembers)];
  json::Tape scratch_;  // keys, calls, members nobody reads
  CallReader calls_;
  bool seen_calls_ = false;
  Status calls_error_;                   // the first bad call (or `calls` that is not an array)
  std::unordered_set<std::string> ops_;  // the op names of the calls
};

bool TraceReader::ReadCalls() {
  const Path root;
  const Path calls_path = root.Key("calls");
  if (seen_calls_) {
    // Streaming cannot take back the calls of an earlier `calls`, so a second one is refused.
    if (calls_error_.ok())
      calls_error_ = InvalidInput("calls: appears more than once (a trace has one array of calls)");
    Ref ignored;
    return stream_.Read(scratch_, &ignored);
  }
  seen_calls_ = true;
  if (stream_.Peek() != '[') {
    Ref value;
    if (!stream_.Read(scratch_, &value)) return false;
    Checker c;
    c.Expect(value, calls_path, "an array");
    calls_error_ = c.error();
    return true;
  }
  if (!stream_.Expect('[', "'['")) return false;
  if (stream_.Peek() == ']') return stream_.Expect(']', "']'");
  for (size_t i = 0;; ++i) {
    Ref call;
    if (!stream_.Read(scratch_, &call)) return false;
    if (calls_error_.ok()) {
      Node n;
      if (calls_.ParseCall(call, calls_path.Index(i), &n)) {
        if (!ops_.count(n.op)) ops_.insert(n.op);
        sink_.Add(std::move(n));
      } else {
        calls_error_ = calls_.error();
      }
    }
    std::optional<char> next = stream_.Peek();
    if (next == ',') {
      stream_.Expect(',', "','");
      continue;
    }
    return stream_.Expect(']', "',' or ']'");
  }
}

Expected<Graph> TraceReader::Read() {
  if (!stream_.AtValue() && !stream_.failed() && stream_.only_whitespace_so_far())
    return InvalidInput("empty file, expected an opprobe trace (JSON)");
  if (stream_.Peek() != '{') {
    // Not an object: still JSON first (a syntax error wins), then the complaint about its type.
    Ref root;
    if (!stream_.Read(scratch_, &root)) return stream_.error();
    Checker c;
    c.Expect(root, Path().Key("(root)"), "a JSON object");  // before reading on moves the text it may quote
    if (!stream_.ExpectEnd()) return stream_.error();
    return c.error();
  }
  bool ok = stream_.Expect('{', "'{'");
  if (ok && stream_.Peek() == '}') {
    ok = stream_.Expect('}', "'}'");
  } else {
    while (ok) {
      if (stream_.Peek() != '"') {
        ok = stream_.Expect('"', "a member name (a string)");
        break;
      }
      Ref key_ref;
      if (!stream_.Read(scratch_, &key_ref)) break;
      const std::string key(key_ref.str());
      if (!stream_.Expect(':', "':'")) break;
      if (key == "calls") {
        ok = ReadCalls();
      } else if (Member* m = HeaderMember(key)) {
        ok = stream_.Read(m->tape, &m->value);
        m->present = ok;
      } else {
        Ref ignored;
        ok = stream_.Read(scratch_, &ignored);
      }
      if (!ok) break;
      if (stream_.Peek() == ',') {
        ok = stream_.Expect(',', "','");
        continue;
      }
      ok = stream_.Expect('}', "',' or '}'");
      break;
    }
  }
  if (!ok || stream_.failed() || !stream_.ExpectEnd()) return stream_.error();
  return Finish();
}

// `status`, `exit_status` and `error` (how the captured script ended) into Graph::capture.
Status TraceReader::CaptureStatusOf(Graph& g) {
  const Path root;
  Checker c;
  std::optional<Ref> status = Header("status");
  if (!status) return Status::Ok();
  CaptureStatus cs;
  std::string s;
  if (!c.GetString(*status, root.Key("status"), &s)) return c.error();
  if (s == "error") cs.status = CaptureStatus::Status::kFailed;
  else if (s != "ok") {
    c.Bad(root.Key("status"), fmt::format("expected \"ok\" or \"error\", got \"{}\"", s));
    return c.error();
  }
  std::optional<Ref> exit_status = Header("exit_status");
  if (exit_status) {
    int64_t code = 0;
    if (!c.GetInt(*exit_status, root.Key("exit_status"), &code)) return c.error();
    cs.exit_code = static_cast<int>(std::clamp<int64_t>(code, -1000000, 1000000));
  }
  if (std::optional<Ref> err = Header("error")) {
    const Path ep = root.Key("error");
    if (!err->is_object()) {
      c.Expect(*err, ep, "an object {\"type\", \"message\", \"exit_status\"}");
      return c.error();
    }
    if (auto t = err->Find("type")) {
      if (!c.GetString(*t, ep.Key("type"), &cs.exception_type)) return c.error();
    }
    if (auto m = err->Find("message")) {
      std::string msg;
      if (!c.GetString(*m, ep.Key("message"), &msg)) return c.error();
      cs.exception_message = msg.substr(0, msg.find('\n'));  // one line in reports
    }
    if (auto es = err->Find("exit_status"); es && !exit_status) {
      int64_t code = 0;
      if (!c.GetInt(*es, ep.Key("exit_status"), &code)) return c.error();
      cs.exit_code = static_cast<int>(std::clamp<int64_t>(code, -1000000, 1000000));
    }
    if (auto loc = err->Find("loc")) {
      if (!c.ParseLoc(*loc, ep.Key("loc"), &cs.location)) return c.error();
    }
  }
  if (cs.status == CaptureStatus::Status::kOk && cs.exit_code != 0) cs.status = CaptureStatus::Status::kFailed;
  g.capture = cs;
  return Status::Ok();
}

// Traces written before the shim recorded calls outside aten list them only in `skipped_ops` (name -> count):
// each becomes a node without a call site, so that reports list it instead of dropping it. By name, as a JSON object
// read into a map orders them.
Status TraceReader::SkippedOps() {
  std::optional<Ref> skipped = Header("skipped_ops");
  if (!skipped) return Status::Ok();
  Checker c;
  const Path root;
  const Path sp = root.Key("skipped_ops");
  if (!skipped->is_object()) {
    c.Expect(*skipped, sp, "an object {op: count}");
    return c.error();
  }
  std::map<std::string_view, Ref> by_name;
  for (auto it = skipped->begin(); it != skipped->end(); ++it) by_name[it.key()] = it.value();
  for (const auto& [name, count_j] : by_name) {
    int64_t count = 0;
    if (!c.GetInt(count_j, sp.Key(name), &count)) return c.error();
    const std::string op(name);
    if (name.find("::") == std::string_view::npos || name.starts_with("aten::") || IsBookkeepingOp(op) || count < 1)
      continue;
    if (ops_.count(op)) continue;  // newer shims record such calls in `calls`
    Node n;
    n.op = op;
    n.overload = "default";
    n.count = count;
    n.note = "listed in the trace's skipped_ops without a call site (captured by an older opprobe)";
    sink_.Add(std::move(n));
  }
  return Status::Ok();
}

// `host_only_ops`: calls that never reach a device (no tensor in or out; bookkeeping namespaces), no part of the model:
// checked ({name: count}) and left out.
Status TraceReader::HostOnlyOps() {
  std::optional<Ref> ops = Header("host_only_ops");
  if (!ops) return Status::Ok();
  Checker c;
  const Path root;
  const Path hp = root.Key("host_only_ops");
  if (!ops->is_object()) {
    c.Expect(*ops, hp, "an object {op: count}");
    return c.error();
  }
  for (auto it = ops->begin(); it != ops->end(); ++it) {
    int64_t count = 0;
    if (!c.GetInt(it.value(), hp.Key(it.key()), &count)) return c.error();
  }
  return Status::Ok();
}

// `graphs` (capture_steps.py's model of torch_xla's steps) into Graph::steps.
Status TraceReader::StepGraphsOf(Graph& g) {
  std::optional<Ref> graphs = Header("graphs");
  if (!graphs) return Status::Ok();
  Checker c;
  const Path root;
  const Path gp = root.Key("graphs");
  if (!graphs->is_object()) {
    c.Expect(*graphs, gp, "an object {steps, executed_graphs, distinct_graphs, recompilations, cuts}");
    return c.error();
  }
  StepGraphs s;
  auto str = [&](const Ref& obj, const Path& p, const char* key, std::string* out) {
    auto v = obj.Find(key);
    return !v || c.GetString(*v, p.Key(key), out);
  };
  auto num = [&](const Ref& obj, const Path& p, const char* key, int64_t* out) {
    auto v = obj.Find(key);
    if (!v) {
      c.Bad(p, fmt::format("missing member \"{}\"", key));
      return false;
    }
    return c.GetInt(*v, p.Key(key), out) && (*out >= 0 || (c.Bad(p.Key(key), "expected a count"), false));
  };
  auto loc = [&](const Ref& obj, const Path& p, const char* key, SourceLoc* out) {
    auto v = obj.Find(key);
    return !v || c.ParseLoc(*v, p.Key(key), out);
  };
  if (!str(*graphs, gp, "model", &s.model) || !num(*graphs, gp, "steps", &s.steps) ||
      !num(*graphs, gp, "executed_graphs", &s.executed_graphs) ||
      !num(*graphs, gp, "distinct_graphs", &s.distinct_graphs))
    return c.error();
  // Each object of the array member `key` (absent: none) handed to `read` with its path; false on the first error.
  auto objects = [&](const char* key, const auto& read) {
    auto list = graphs->Find(key);
    if (!list) return true;
    const Path lp = gp.Key(key);
    if (!list->is_array()) return c.Expect(*list, lp, "an array"), false;
    size_t i = 0;
    for (auto it = list->begin(); it != list->end(); ++it, ++i) {
      const Ref r = it.value();
      const Path rp = lp.Index(i);
      if (!r.is_object()) return c.Expect(r, rp, "an object"), false;
      if (!read(r, rp)) return false;
    }
    return true;
  };
  // An object member `key` (absent: fine) whose fields `read` takes.
  auto object = [&](const Ref& r, const Path& rp, const char* key, const auto& read) {
    auto v = r.Find(key);
    if (!v) return true;
    const Path p = rp.Key(key);
    if (!v->is_object()) return c.Expect(*v, p, "an object"), false;
    return static_cast<bool>(read(*v, p));
  };
  const bool ok =
      objects("recompilations",
              [&](const Ref& r, const Path& rp) {
                StepGraphs::Recompilation x;
                if (!num(r, rp, "step", &x.step) || !num(r, rp, "graph", &x.graph) || !str(r, rp, "cause", &x.cause) ||
                    !object(r, rp, "trigger",
                            [&](const Ref& t, const Path& tp) {
                              return str(t, tp, "kind", &x.trigger_kind) && str(t, tp, "op", &x.trigger_op) &&
                                     loc(t, tp, "loc", &x.trigger_loc);
                            }) ||
                    !object(r, rp, "call", [&](const Ref& t, const Path& tp) {
                      return str(t, tp, "op", &x.op) && loc(t, tp, "loc", &x.loc) && str(t, tp, "before", &x.before) &&
                             str(t, tp, "after", &x.after);
                    }))
                  return false;
                s.recompilations.push_back(std::move(x));
                return true;
              }) &&
      objects("cuts", [&](const Ref& r, const Path& rp) {
        StepGraphs::Cut x;
        if (!str(r, rp, "kind", &x.kind) || !str(r, rp, "op", &x.op) || !loc(r, rp, "loc", &x.loc) ||
            !num(r, rp, "count", &x.count) || !num(r, rp, "extra_graphs", &x.extra_graphs))
          return false;
        s.cuts.push_back(std::move(x));
        return true;
      });
  if (!ok) return c.error();
  g.steps = std::move(s);
  return Status::Ok();
}

// `program` (capture_program.py's data flow of the first step) into Graph::program. Value ids are checked here: a
// call reads only values made before it; builders may rely on that.
Status TraceReader::ProgramOf(Graph& g) {
  std::optional<Ref> program = Header("program");
  if (!program) return Status::Ok();
  Checker c;
  const Path root;
  const Path pp = root.Key("program");
  if (!program->is_object()) {
    c.Expect(*program, pp, "an object {scope, calls, inputs, outputs}");
    return c.error();
  }
  StepDataFlow f;
  auto str = [&](const Ref& obj, const Path& p, const char* key, std::string* out) {
    auto v = obj.Find(key);
    return !v || v->is_null() || c.GetString(*v, p.Key(key), out);
  };
  auto loc = [&](const Ref& obj, const Path& p, const char* key, SourceLoc* out) {
    auto v = obj.Find(key);
    return !v || v->is_null() || c.ParseLoc(*v, p.Key(key), out);
  };
  auto count = [&](const Ref& v, const Path& p, int64_t* out, int64_t min) {
    return c.GetInt(v, p, out) &&
           (*out >= min || (c.Bad(p, min < 0 ? "expected -1 or more" : "expected a count"), false));
  };
  if (!str(*program, pp, "scope", &f.scope) || !loc(*program, pp, "begin", &f.begin) ||
      !loc(*program, pp, "end", &f.end) || !str(*program, pp, "end_kind", &f.end_kind))
    return c.error();
  if (auto u = program->Find("untracked_writes"); u && !count(*u, pp.Key("untracked_writes"), &f.untracked_writes, 0))
    return c.error();
  // Known value ids as they are made: inputs first, then each call's outputs.
  std::unordered_set<int64_t> known;
  auto array = [&](const char* key, const auto& read) {
    auto list = program->Find(key);
    if (!list) return true;
    const Path lp = pp.Key(key);
    if (!list->is_array()) return c.Expect(*list, lp, "an array"), false;
    size_t i = 0;
    for (auto it = list->begin(); it != list->end(); ++it, ++i)
      if (!read(it.value(), lp.Index(i))) return false;
    return true;
  };
  auto value = [&](std::vector<StepDataFlow::Value>& out, bool is_input) {
    return [&, is_input](const Ref& r, const Path& rp) {
      if (!r.is_object()) return c.Expect(r, rp, "an object {value, kind, name}"), false;
      StepDataFlow::Value v;
      auto id = r.Find("value");
      if (!id) return c.Bad(rp, "missing member \"value\""), false;
      if (!count(*id, rp.Key("value"), &v.value, 0) || !str(r, rp, "kind", &v.kind) || !str(r, rp, "name", &v.name))
        return false;
      if (auto a = r.Find("aliases"); a && !a->is_null() && !count(*a, rp.Key("aliases"), &v.aliases, 0)) return false;
      if (auto sh = r.Find("sharding"); is_input && sh && !sh->is_null()) {
        const Path sp = rp.Key("sharding");
        if (!sh->is_array()) return c.Expect(*sh, sp, "an array: per dimension, the mesh axes that split it"), false;
        size_t d = 0;
        for (auto dim = sh->begin(); dim != sh->end(); ++dim, ++d) {
          if (!dim.value().is_array()) return c.Expect(dim.value(), sp.Index(d), "an array of mesh axes"), false;
          std::vector<int64_t> axes;
          size_t k = 0;
          for (auto a = dim.value().begin(); a != dim.value().end(); ++a, ++k) {
            int64_t axis = 0;
            if (!count(a.value(), sp.Index(d).Index(k), &axis, 0)) return false;
            axes.push_back(axis);
          }
          v.sharding.push_back(std::move(axes));
        }
      }
      if (is_input) known.insert(v.value);
      out.push_back(std::move(v));
      return true;
    };
  };
  auto ids = [&](const Ref& r, const Path& p, std::vector<int64_t>* out, bool reads) {
    if (!r.is_array()) return c.Expect(r, p, "an array of value ids"), false;
    size_t i = 0;
    for (auto it = r.begin(); it != r.end(); ++it, ++i) {
      int64_t id = 0;
      if (!count(it.value(), p.Index(i), &id, reads ? 0 : -1)) return false;
      if (reads && !known.count(id))
        return c.Bad(p.Index(i), fmt::format("value {} is read before it is made", id)), false;
      out->push_back(id);
    }
    return true;
  };
  // One call of the step: [call index, [input ids], [output ids]].
  auto one_call = [&](const Ref& r, const Path& rp) {
    if (!r.is_array() || r.size() != 3) return c.Expect(r, rp, "[call index, [input ids], [output ids]]"), false;
    StepDataFlow::Call call;
    auto it = r.begin();
    if (!count(it.value(), rp.Index(0), &call.node, 0)) return false;
    ++it;
    if (!ids(it.value(), rp.Index(1), &call.inputs, true)) return false;
    ++it;
    if (!ids(it.value(), rp.Index(2), &call.outputs, false)) return false;
    for (int64_t id : call.outputs)
      if (id >= 0) known.insert(id);
    f.calls.push_back(std::move(call));
    return true;
  };
  bool ok = array("inputs", value(f.inputs, true)) && array("calls", one_call);
  ok = ok && array("outputs", value(f.outputs, false));
  if (!ok) return c.error();
  if (auto mesh = program->Find("mesh"); mesh && !mesh->is_null()) {
    const Path mp = pp.Key("mesh");
    if (!mesh->is_object()) return c.Expect(*mesh, mp, "an object {shape, devices}"), c.error();
    for (const char* key : {"shape", "devices"}) {
      auto list = mesh->Find(key);
      if (!list || !list->is_array()) {
        c.Bad(mp.Key(key), "expected an array of integers");
        return c.error();
      }
      size_t i = 0;
      for (auto it = list->begin(); it != list->end(); ++it, ++i) {
        int64_t n = 0;
        if (!count(it.value(), mp.Key(key).Index(i), &n, key[0] == 's' ? 1 : 0)) return c.error();
        (key[0] == 's' ? f.mesh.shape : f.mesh.devices).push_back(n);
      }
    }
    int64_t devices = 1;
    for (int64_t n : f.mesh.shape) devices = n > (int64_t{1} << 20) / devices ? (int64_t{1} << 21) : devices * n;
    if (devices != static_cast<int64_t>(f.mesh.devices.size()))
      return InvalidInput(fmt::format("program.mesh: a mesh of shape {} holds {} devices, not {}",
                                      fmt::join(f.mesh.shape, "x"), devices, f.mesh.devices.size()));
  }
  for (size_t i = 0; i < f.inputs.size(); ++i)
    for (const auto& axes : f.inputs[i].sharding)
      for (int64_t a : axes)
        if (a >= static_cast<int64_t>(f.mesh.shape.size()))
          return InvalidInput(
              fmt::format("program.inputs[{}].sharding: no mesh axis {} (the mesh has {})", i, a, f.mesh.shape.size()));
  for (size_t i = 0; i < f.outputs.size(); ++i) {
    const auto& o = f.outputs[i];
    if (!known.count(o.value))
      return InvalidInput(fmt::format("program.outputs[{}].value: value {} is never made", i, o.value));
    if (o.aliases >= static_cast<int64_t>(f.inputs.size()))
      return InvalidInput(fmt::format("program.outputs[{}].aliases: no input {}", i, o.aliases));
  }
  g.program = std::move(f);
  return Status::Ok();
}

Expected<Graph> TraceReader::Finish() {
  const Path root;
  Checker c;
  std::optional<Ref> f = Header("format");
  if (!f) {
    c.Bad(root, "missing member \"format\"");
    return c.error();
  }
  std::string format_name;
  if (!c.GetString(*f, root.Key("format"), &format_name)) return c.error();
  if (format_name != "opprobe-trace") {
    c.Bad(root.Key("format"),
          fmt::format("expected \"opprobe-trace\", got \"{}\" (not an opprobe trace)", format_name));
    return c.error();
  }
  std::optional<Ref> v = Header("version");
  if (!v) {
    c.Bad(root, "missing member \"version\"");
    return c.error();
  }
  int64_t version = 0;
  if (!c.GetInt(*v, root.Key("version"), &version)) return c.error();
  if (version > kTraceFormatVersion) {
    c.Bad(root.Key("version"), fmt::format("trace format version {} is newer than this opprobe reads ({}); "
                                           "upgrade opprobe or capture again with this one",
                                           version, kTraceFormatVersion));
    return c.error();
  }
  if (version < 1) {
    c.Bad(root.Key("version"), fmt::format("unknown trace format version {}", version));
    return c.error();
  }

  Graph g;
  g.input_kind = "trace";
  if (auto s = Header("script")) {
    if (!c.GetString(*s, root.Key("script"), &g.model)) return c.error();
  }
  if (auto tv = Header("torch_version")) {
    if (!c.GetString(*tv, root.Key("torch_version"), &g.torch_version)) return c.error();
  }
  if (!seen_calls_) {
    c.Bad(root, "missing member \"calls\"");
    return c.error();
  }
  if (!calls_error_.ok()) return calls_error_;
  OPPROBE_RETURN_IF_ERROR(CaptureStatusOf(g));
  OPPROBE_RETURN_IF_ERROR(SkippedOps());
  OPPROBE_RETURN_IF_ERROR(HostOnlyOps());
  OPPROBE_RETURN_IF_ERROR(StepGraphsOf(g));
  OPPROBE_RETURN_IF_ERROR(ProgramOf(g));
  return g;
}

Expected<Graph> Parse(json::Stream stream, const std::string& source_name, NodeSink& sink) {
  try {
    TraceReader reader(stream, sink);
    Expected<Graph> g = reader.Read();
    if (!g.ok())
      return stream.io_failed() ? g.status() : g.status().WithContext(source_name);  // read errors name the file
    if (g->model.empty()) g->model = source_name;
    return g;
  } catch (const std::exception& e) {  // allocation failures: never escape
    return InvalidInput(fmt::format("{}: cannot read trace: {}", source_name, support::OneLine(e.what())));
  }
}

}  // namespace

bool IsBookkeepingOp(const std::string& op) {
  if (op.starts_with("aten::")) return false;  // the usual call, answered first
  for (const char* ns : {"profiler::", "prims::", "prim::", "debugprims::"})
    if (op.rfind(ns, 0) == 0) return true;
  // Version queries that libraries dispatch at import time; they compute nothing on a tensor.
  for (const char* name : {"torchvision::_cuda_version", "torchaudio::cuda_version", "torchaudio::_cuda_version"})
    if (op == name) return true;
  return false;
}

Expected<Graph> ParseTrace(std::string_view json_text, const std::string& source_name, NodeSink& sink) {
  return Parse(json::Stream::FromText(json_text), source_name, sink);
}

Expected<Graph> LoadTrace(const std::string& path, NodeSink& sink, size_t read_bytes) {
  OPPROBE_ASSIGN_OR_RETURN(io::FileReader reader, io::FileReader::Open(path));
  return Parse(json::Stream::FromFile(std::move(reader), read_bytes), path, sink);
}

Expected<Graph> ParseTrace(std::string_view json_text, const std::string& source_name) {
  Graph nodes;
  GraphNodes sink(nodes);
  OPPROBE_ASSIGN_OR_RETURN(Graph g, ParseTrace(json_text, source_name, sink));
  g.nodes = std::move(nodes.nodes);
  return g;
}

Expected<Graph> LoadTrace(const std::string& path) {
  Graph nodes;
  GraphNodes sink(nodes);
  OPPROBE_ASSIGN_OR_RETURN(Graph g, LoadTrace(path, sink));
  g.nodes = std::move(nodes.nodes);
  return g;
}

}  // namespace opprobe::analyzer
