#include "hlo/stablehlo/convert.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "hlo/builder.h"
#include "hlo/math.h"
#include "hlo/parser.h"
#include "support/quote.h"

namespace opprobe::hlo::stablehlo {
namespace {

// Splat constants larger than this keep their shape but not their values (an elided literal, as `{...}` in HLO
// text): a probe needs the shape, and a one-line splat must not take gigabytes.
constexpr int64_t kMaxSplatElements = int64_t{1} << 22;
// Integer lists in attributes (dimensions, padding, replica groups) longer than this are refused.
constexpr int64_t kMaxAttrInts = int64_t{1} << 20;

struct SimpleOp {
  std::string_view name;
  Opcode opcode;
};
// StableHLO (and mhlo/chlo) ops that are one HLO instruction with no attributes: the result type is the shape.
constexpr SimpleOp kSimpleOps[] = {
    {"abs", Opcode::kAbs},
    {"add", Opcode::kAdd},
    {"add_dependency", Opcode::kAddDependency},
    {"and", Opcode::kAnd},
    {"atan2", Opcode::kAtan2},
    {"bitcast_convert", Opcode::kBitcastConvert},
    {"cbrt", Opcode::kCbrt},
    {"ceil", Opcode::kCeil},
    {"clamp", Opcode::kClamp},
    {"complex", Opcode::kComplex},
    {"convert", Opcode::kConvert},
    {"copy", Opcode::kCopy},
    {"cosine", Opcode::kCos},
    {"count_leading_zeros", Opcode::kClz},
    {"divide", Opcode::kDivide},
    {"dynamic_update_slice", Opcode::kDynamicUpdateSlice},
    {"erf", Opcode::kErf},
    {"exponential", Opcode::kExp},
    {"exponential_minus_one", Opcode::kExpm1},
    {"floor", Opcode::kFloor},
    {"imag", Opcode::kImag},
    {"is_finite", Opcode::kIsFinite},
    {"log", Opcode::kLog},
    {"log_plus_one", Opcode::kLog1p},
    {"logistic", Opcode::kLogistic},
    {"maximum", Opcode::kMaximum},
    {"minimum", Opcode::kMinimum},
    {"multiply", Opcode::kMultiply},
    {"negate", Opcode::kNegate},
    {"not", Opcode::kNot},
    {"or", Opcode::kOr},
    {"popcnt", Opcode::kPopulationCount},
    {"power", Opcode::kPower},
    {"real", Opcode::kReal},
    {"remainder", Opcode::kRemainder},
    {"reshape", Opcode::kReshape},
    {"round_nearest_afz", Opcode::kRoundNearestAfz},
    {"round_nearest_even", Opcode::kRoundNearestEven},
    {"rsqrt", Opcode::kRsqrt},
    {"select", Opcode::kSelect},
    {"shift_left", Opcode::kShiftLeft},
    {"shift_right_arithmetic", Opcode::kShiftRightArithmetic},
    {"shift_right_logical", Opcode::kShiftRightLogical},
    {"sign", Opcode::kSign},
    {"sine", Opcode::kSin},
    {"sqrt", Opcode::kSqrt},
    {"subtract", Opcode::kSubtract},
    {"tan", Opcode::kTan},
    {"tanh", Opcode::kTanh},
    {"xor", Opcode::kXor},
};

// chlo ops XLA translates to one HLO instruction (through its high-level mhlo ops) rather than an expansion.
constexpr SimpleOp kChloSimpleOps[] = {
    {"chlo.erf", Opcode::kErf},
    {"chlo.tan", Opcode::kTan},
};

// chlo's implicitly broadcasting binary ops: broadcast the operands to the result shape, then the HLO op.
constexpr SimpleOp kChloBroadcastOps[] = {
    {"chlo.broadcast_add", Opcode::kAdd},
    {"chlo.broadcast_and", Opcode::kAnd},
    {"chlo.broadcast_atan2", Opcode::kAtan2},
    {"chlo.broadcast_complex", Opcode::kComplex},
    {"chlo.broadcast_divide", Opcode::kDivide},
    {"chlo.broadcast_maximum", Opcode::kMaximum},
    {"chlo.broadcast_minimum", Opcode::kMinimum},
    {"chlo.broadcast_multiply", Opcode::kMultiply},
    {"chlo.broadcast_or", Opcode::kOr},
    {"chlo.broadcast_power", Opcode::kPower},
    {"chlo.broadcast_remainder", Opcode::kRemainder},
    {"chlo.broadcast_shift_left", Opcode::kShiftLeft},
    {"chlo.broadcast_shift_right_arithmetic", Opcode::kShiftRightArithmetic},
    {"chlo.broadcast_shift_right_logical", Opcode::kShiftRightLogical},
    {"chlo.broadcast_subtract", Opcode::kSubtract},
    {"chlo.broadcast_xor", Opcode::kXor},
    {"chlo.broadcast_compare", Opcode::kCompare},
    {"chlo.broadcast_select", Opcode::kSelect},
};

std::optional<Opcode> Lookup(const SimpleOp* begin, const SimpleOp* end, std::string_view name) {
  for (auto* e = begin; e != end; ++e)
    if (e->name == name) return e->opcode;
  return std::nullopt;
}

bool IsSitePackages(const std::string& file) {
  return file.find("site-packages/") != std::string::npos || file.find("dist-packages/") != std::string::npos;
}

// torch_xla's op names: `aten__add`, `xla__device_data` (an identifier with `__` after a namespace).
bool LooksLikeTorchXlaOpName(const std::string& name) {
  auto pos = name.find("__");
  if (pos == std::string::npos || pos == 0 || pos + 2 >= name.size()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

class Converter {
 public:
  explicit Converter(const ParsedModule& m) : m_(m) {}

  Expected<std::unique_ptr<Module>> Run() {
    for (const auto& f : m_.functions) {
      if (functions_.count(f.name))
        return Err(f.pos, fmt::format("function @{} is defined twice", support::OneLine(f.name, 64)));
      functions_[f.name] = &f;
    }
    const Function* entry = nullptr;
    if (auto it = functions_.find("main"); it != functions_.end()) {
      entry = it->second;
    } else {
      std::vector<const Function*> pub;
      for (const auto& f : m_.functions)
        if (f.visibility != "private") pub.push_back(&f);
      if (pub.size() != 1)
        return Err(m_.functions.front().pos,
                   "no entry function: expected a function named @main (or exactly one public function)");
      entry = pub[0];
    }
    root_ = std::make_unique<Builder>("main");
    in_progress_.insert(entry->name);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * root, ConvertFunctionBody(*entry, *root_));
    if (!root_->ok()) return root_->status();
    std::unique_ptr<Module> module = root_->Build(root);
    module->set_name(m_.name.empty() ? entry->name : m_.name);
    return module;
  }

 private:
  // ---- errors and attributes ----
  Status Err(size_t pos, const std::string& message) const {
    auto [line, col] = LineColumn(m_.text, pos);
    return InvalidInput(fmt::format("{}:{}:{}: {}", m_.source_name, line, col, message));
  }
  Status OpErr(const Operation& op, const std::string& message) const {
    return Err(op.pos, fmt::format("{}: {}", support::OneLine(op.name, 64), message));
  }

  // The integers of a list attribute: `[1, 2]`, `array<i64: 1, 2>`, `dense<[1, 2]> : tensor<2xi64>`, a splat
  // `dense<1> : tensor<4xi64>`, or a single integer.
  Expected<std::vector<int64_t>> Ints(const Operation& op, const Attr& a) const {
    std::vector<int64_t> out;
    switch (a.kind) {
      case Attr::Kind::kInt: return std::vector<int64_t>{a.i};
      case Attr::Kind::kArray:
        for (const auto& e : a.elements) {
          if (e.kind == Attr::Kind::kInt) {
            out.push_back(e.i);
          } else if (e.kind == Attr::Kind::kBool) {
            out.push_back(e.b ? 1 : 0);
          } else if (e.kind == Attr::Kind::kArray) {  // nested: flatten (padding pairs)
            OPPROBE_ASSIGN_OR_RETURN(auto inner, Ints(op, e));
            out.insert(out.end(), inner.begin(), inner.end());
          } else {
            return Err(e.pos, fmt::format("{}: expected integers in a list", support::OneLine(op.name, 64)));
          }
          if (static_cast<int64_t>(out.size()) > kMaxAttrInts) return Err(a.pos, "list attribute too long");
        }
        return out;
      case Attr::Kind::kDense: {
        const DenseLiteral& d = *a.dense;
        if (!d.raw_hex.empty() || !d.resource.empty())
          return Err(a.pos, fmt::format("{}: expected a list of integers, got a binary literal",
                                        support::OneLine(op.name, 64)));
        int64_t count = static_cast<int64_t>(d.elements.size());
        if (d.splat) {
          count = 1;
          for (int64_t dim : a.type.dims) {
            if (dim < 0 || (dim > 0 && count > kMaxAttrInts / dim)) return Err(a.pos, "list attribute too long");
            count *= dim;
          }
        }
        for (int64_t i = 0; i < count; ++i) {
          const DenseElement& e = d.elements[d.splat ? 0 : static_cast<size_t>(i)];
          if (e.kind == DenseElement::Kind::kBool) {
            out.push_back(e.boolean ? 1 : 0);
          } else if (e.kind == DenseElement::Kind::kInt || e.kind == DenseElement::Kind::kBits) {
            int64_t v = static_cast<int64_t>(e.magnitude);
            out.push_back(e.negative ? -v : v);
          } else {
            return Err(a.pos, fmt::format("{}: expected integers in a dense list", support::OneLine(op.name, 64)));
          }
        }
        return out;
      }
      default: return Err(a.pos, fmt::format("{}: expected a list of integers", support::OneLine(op.name, 64)));
    }
  }
  Expected<std::vector<int64_t>> IntsAttr(const Operation& op, const std::string& key) const {
    const Attr* a = op.Find(key);
    if (!a) return OpErr(op, fmt::format("missing attribute '{}'", key));
    return Ints(op, *a);
  }
  // An optional list: empty when absent.
  Expected<std::vector<int64_t>> OptInts(const Operation& op, const std::string& key) const {
    const Attr* a = op.Find(key);
    if (!a) return std::vector<int64_t>{};
    return Ints(op, *a);
  }
  Expected<int64_t> IntAttr(const Operation& op, const std::string& key) const {
    const Attr* a = op.Find(key);
    if (!a) return OpErr(op, fmt::format("missing attribute '{}'", key));
    if (a->kind == Attr::Kind::kInt) return a->i;
    OPPROBE_ASSIGN_OR_RETURN(auto v, Ints(op, *a));
    if (v.size() != 1)
      return Err(a->pos, fmt::format("{}: '{}' must be one integer", support::OneLine(op.name, 64), key));
    return v[0];
  }
  bool BoolAttr(const Operation& op, const std::string& key, bool fallback = false) const {
    const Attr* a = op.Find(key);
    if (!a) return fallback;
    if (a->kind == Attr::Kind::kBool) return a->b;
    if (a->kind == Attr::Kind::kUnit) return true;
    if (a->kind == Attr::Kind::kInt) return a->i != 0;
    return fallback;
  }
  // An enum's value: `#stablehlo<comparison_direction LT>`, a bare `LT`, or `"LT"`.
  static std::string EnumText(const Attr& a) {
    if (a.kind == Attr::Kind::kEnum || a.kind == Attr::Kind::kString) return a.text;
    return "";
  }
  std::string EnumAttr(const Operation& op, const std::string& key) const {
    const Attr* a = op.Find(key);
    return a ? EnumText(*a) : "";
  }
  Expected<double> FloatAttr(const Operation& op, const std::string& key) const {
    const Attr* a = op.Find(key);
    if (!a) return OpErr(op, fmt::format("missing attribute '{}'", key));
    if (a->kind == Attr::Kind::kFloat) return a->f;
    if (a->kind == Attr::Kind::kInt) {
      if (a->type.kind == Type::Kind::kElement && a->type.element == PrimitiveType::F32) {  // bits
        uint32_t bits = static_cast<uint32_t>(a->i);
        float f;
        std::memcpy(&f, &bits, 4);
        return static_cast<double>(f);
      }
      return static_cast<double>(a->i);
    }
    return Err(a->pos, fmt::format("{}: '{}' must be a number", support::OneLine(op.name, 64), key));
  }

  // ---- types ----
  Expected<Shape> ShapeOf(const Type& t, size_t pos) const {
    switch (t.kind) {
      case Type::Kind::kTensor: {
        if (t.unranked)
          return Err(pos, fmt::format("unranked tensor type {} has no HLO shape", support::Quote(t.text)));
        std::vector<int64_t> dims = t.dims;
        std::vector<bool> dynamic(dims.size(), false);
        for (size_t i = 0; i < dims.size(); ++i) {
          if (dims[i] >= 0) continue;
          int64_t bound = i < t.bounds.size() ? t.bounds[i] : -1;
          if (bound < 0)
            return Err(pos, fmt::format("tensor type {} has a dynamic dimension without a bound: opprobe needs static "
                                        "or bounded shapes (export with concrete shapes)",
                                        support::Quote(t.text)));
          dims[i] = bound;
          dynamic[i] = true;
        }
        Shape s = Shape::Array(t.element, dims);
        for (size_t i = 0; i < dims.size(); ++i)
          if (dynamic[i]) s.set_dynamic_dimension(static_cast<int>(i), true);
        if (!s.ElementCount().ok()) return Err(pos, fmt::format("tensor type {} is too large", support::Quote(t.text)));
        return s;
      }
      case Type::Kind::kElement: return Shape::Scalar(t.element);
      case Type::Kind::kToken: return Shape::Token();
      case Type::Kind::kTuple: {
        std::vector<Shape> elems;
        for (const auto& e : t.elements) {
          OPPROBE_ASSIGN_OR_RETURN(Shape s, ShapeOf(e, pos));
          elems.push_back(std::move(s));
        }
        return Shape::Tuple(std::move(elems));
      }
      default: return Err(pos, fmt::format("type {} has no HLO shape", support::Quote(t.text)));
    }
  }

  // The result shapes of `op`: one per result, from its result types.
  Expected<std::vector<Shape>> ResultShapes(const Operation& op) const {
    if (static_cast<int64_t>(op.result_types.size()) != op.ResultCount())
      return OpErr(op, fmt::format("{} result(s) but {} result type(s)", op.ResultCount(), op.result_types.size()));
    std::vector<Shape> out;
    for (const auto& t : op.result_types) {
      OPPROBE_ASSIGN_OR_RETURN(Shape s, ShapeOf(t, op.pos));
      out.push_back(std::move(s));
    }
    return out;
  }

  // ---- locations ----
  const Location* Resolve(const Location& l, int& budget) const {
    const Location* cur = &l;
    while (cur->kind == Location::Kind::kAlias) {
      if (--budget < 0) return nullptr;
      auto it = m_.location_aliases.find(cur->text);
      if (it == m_.location_aliases.end()) return nullptr;
      cur = &it->second;
    }
    return cur;
  }

  // XLA's op_name: the names of the location (`name@scope` keeps `name`), joined with ';'; a name ending in ':'
  // is an op_type and is looked through.
  void CollectNames(const Location& l, std::vector<std::string>& names, std::vector<std::string>& types, int depth,
                    int& budget) const {
    if (depth > 64) return;
    const Location* r = Resolve(l, budget);
    if (!r) return;
    switch (r->kind) {
      case Location::Kind::kName: {
        std::string name = r->text.substr(0, r->text.find('@'));
        if (!name.empty() && name.back() == ':') {
          types.push_back(name.substr(0, name.size() - 1));
          if (!r->children.empty()) CollectNames(r->children[0], names, types, depth + 1, budget);
        } else {
          names.push_back(name);
        }
        break;
      }
      case Location::Kind::kCallSite:
        if (!r->children.empty()) CollectNames(r->children[0], names, types, depth + 1, budget);
        break;
      case Location::Kind::kFused:
        for (const auto& c : r->children) CollectNames(c, names, types, depth + 1, budget);
        break;
      default: break;
    }
  }

  // File locations, innermost first: a callsite's callee before its caller.
  void CollectFrames(const Location& l, std::vector<const Location*>& frames, int depth, int& budget) const {
    if (depth > 64) return;
    const Location* r = Resolve(l, budget);
    if (!r) return;
    switch (r->kind) {
      case Location::Kind::kFile: frames.push_back(r); break;
      case Location::Kind::kName:
      case Location::Kind::kCallSite:
        for (const auto& c : r->children) CollectFrames(c, frames, depth + 1, budget);
        break;
      case Location::Kind::kFused:  // XLA keeps the last file location of a fused one
        for (auto it = r->children.rbegin(); it != r->children.rend(); ++it)
          CollectFrames(*it, frames, depth + 1, budget);
        break;
      default: break;
    }
  }

  OpMetadata MetadataOf(const Location& l) const {
    OpMetadata md;
    int budget = 10000;
    std::vector<std::string> names, types;
    CollectNames(l, names, types, 0, budget);
    for (size_t i = 0; i < names.size(); ++i) md.op_name += (i ? ";" : "") + names[i];
    for (size_t i = 0; i < types.size(); ++i) md.op_type += (i ? ";" : "") + types[i];
    if (md.op_type.empty() && names.size() == 1 && LooksLikeTorchXlaOpName(names[0])) md.op_type = names[0];
    budget = 10000;
    std::vector<const Location*> frames;
    CollectFrames(l, frames, 0, budget);
    const Location* pick = nullptr;
    for (const Location* f : frames)
      if (!IsSitePackages(f->text)) {
        pick = f;
        break;
      }
    if (!pick && !frames.empty()) pick = frames.front();
    if (pick) {
      md.source_file = pick->text;
      md.source_line = static_cast<int32_t>(std::clamp<int64_t>(pick->line, 0, INT32_MAX));
    }
    return md;
  }

  // ---- values ----
  struct Frame {
    Builder* builder;
    std::map<std::string, std::vector<Instruction*>> values;
  };

  void Bind(const std::string& name, std::vector<Instruction*> results) {
    frames_.back().values[name] = std::move(results);
  }

  // The value `v` in the current computation: a value of this region, or an outer constant copied in.
  Expected<Instruction*> Use(const Value& v) {
    for (size_t f = frames_.size(); f-- > 0;) {
      auto it = frames_[f].values.find(v.name);
      if (it == frames_[f].values.end()) continue;
      if (v.index < 0 || v.index >= static_cast<int64_t>(it->second.size()))
        return Err(v.pos, fmt::format("%{} has no result #{}", support::OneLine(v.name, 64), v.index));
      Instruction* instr = it->second[static_cast<size_t>(v.index)];
      if (f == frames_.size() - 1) return instr;
      if (instr->opcode == Opcode::kConstant && instr->unknown_opcode.empty()) {
        Instruction* copy = CloneConstant(*instr);
        frames_.back().values[v.name] = std::vector<Instruction*>(it->second.size(), copy);
        return copy;
      }
      return Err(v.pos, fmt::format("%{} is defined outside this region and is not a constant (only while, case and "
                                    "if regions use outer values)",
                                    support::OneLine(v.name, 64)));
    }
    return Err(v.pos, fmt::format("use of undefined value %{}", support::OneLine(v.name, 64)));
  }

  // Whether `v` resolves, from the current computation, to a constant (copied into regions, never captured).
  bool IsOuterConstant(const Value& v) const {
    for (size_t f = frames_.size(); f-- > 0;) {
      auto it = frames_[f].values.find(v.name);
      if (it == frames_[f].values.end()) continue;
      if (v.index < 0 || v.index >= static_cast<int64_t>(it->second.size())) return false;
      const Instruction* i = it->second[static_cast<size_t>(v.index)];
      return i->opcode == Opcode::kConstant && i->unknown_opcode.empty();
    }
    return false;
  }

  Instruction* CloneConstant(const Instruction& c) {
    auto copy = std::make_unique<Instruction>();
    copy->opcode = Opcode::kConstant;
    copy->shape = c.shape;
    copy->literal = c.literal;
    copy->metadata = c.metadata;
    return B().Add(std::move(copy));
  }

  Builder& B() { return *frames_.back().builder; }

  Expected<std::vector<Instruction*>> Operands(const Operation& op) {
    std::vector<Instruction*> out;
    for (const auto& v : op.operands) {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * i, Use(v));
      out.push_back(i);
    }
    return out;
  }

  // Values used inside `regions` but defined outside them (their free variables), in order of first use;
  // constants are left out (they are copied in).
  void FreeValues(const std::vector<Region>& regions, std::vector<Value>& out) const {
    std::set<std::pair<std::string, int64_t>> seen;
    for (const auto& r : regions) {
      std::set<std::string> defined;
      CollectFree(r, defined, out, seen, 0);
    }
  }
  void CollectFree(const Region& r, std::set<std::string> defined, std::vector<Value>& out,
                   std::set<std::pair<std::string, int64_t>>& seen, int depth) const {
    if (depth > 200) return;
    for (const auto& b : r.blocks) {
      for (const auto& a : b.arguments) defined.insert(a.first);
      for (const auto& op : b.operations) {
        for (const auto& v : op.operands) {
          if (defined.count(v.name) || !seen.insert({v.name, v.index}).second) continue;
          if (!IsOuterConstant(v)) out.push_back(v);
        }
        for (const auto& nested : op.regions) CollectFree(nested, defined, out, seen, depth + 1);
        for (const auto& res : op.results) defined.insert(res.first);
      }
    }
  }

  // ---- building ----
  Instruction* Add(Opcode opcode, Shape shape, std::vector<Instruction*> operands, const OpMetadata& md) {
    auto i = std::make_unique<Instruction>();
    i->opcode = opcode;
    i->shape = std::move(shape);
    i->operands = std::move(operands);
    i->metadata = md;
    return B().Add(std::move(i));
  }
  Instruction* Add(std::unique_ptr<Instruction> i, const OpMetadata& md) {
    i->metadata = md;
    return B().Add(std::move(i));
  }
  static std::unique_ptr<Instruction> Make(Opcode opcode, Shape shape, std::vector<Instruction*> operands) {
    auto i = std::make_unique<Instruction>();
    i->opcode = opcode;
    i->shape = std::move(shape);
    i->operands = std::move(operands);
    return i;
  }
  Instruction* Tuple(const std::vector<Instruction*>& elems, const OpMetadata& md) {
    std::vector<Shape> shapes;
    shapes.reserve(elems.size());
    for (auto* e : elems) shapes.push_back(e->shape);
    return Add(Opcode::kTuple, Shape::Tuple(std::move(shapes)), elems, md);
  }
  // A get-tuple-element per element of a tuple-shaped instruction, as XLA emits after every multi-result op.
  std::vector<Instruction*> Unpack(Instruction* tuple, const OpMetadata& md) {
    std::vector<Instruction*> out;
    const auto& shapes = tuple->shape.tuple_shapes();
    for (size_t k = 0; k < shapes.size(); ++k) {
      auto g = Make(Opcode::kGetTupleElement, shapes[k], {tuple});
      g->tuple_index = static_cast<int64_t>(k);
      out.push_back(Add(std::move(g), md));
    }
    return out;
  }
  // One result: the instruction; several: it has the tuple of their shapes and is unpacked.
  std::vector<Instruction*> Results(std::unique_ptr<Instruction> i, const std::vector<Shape>& shapes,
                                    const OpMetadata& md) {
    if (shapes.size() == 1) {
      i->shape = shapes[0];
      return {Add(std::move(i), md)};
    }
    i->shape = Shape::Tuple(shapes);
    Instruction* t = Add(std::move(i), md);
    return Unpack(t, md);
  }

  // ---- functions and regions ----
  // Converts a function's body into `b`'s computation; returns its root.
  Expected<Instruction*> ConvertFunctionBody(const Function& f, Builder& b) {
    frames_.push_back(Frame{&b, {}});
    if (f.body.blocks.size() != 1) return Err(f.pos, "a function body must have exactly one block");
    const Block& block = f.body.blocks[0];
    if (block.arguments.size() != f.arguments.size()) return Err(f.pos, "function arguments do not match its body");
    for (size_t i = 0; i < f.arguments.size(); ++i) {
      OPPROBE_ASSIGN_OR_RETURN(Shape s, ShapeOf(f.arguments[i].second, f.pos));
      Instruction* p = b.Parameter(static_cast<int64_t>(i), s);
      if (i < f.argument_locations.size()) p->metadata = MetadataOf(f.argument_locations[i]);
      Bind(f.arguments[i].first, {p});
    }
    OPPROBE_ASSIGN_OR_RETURN(std::vector<Instruction*> returned, ConvertBlock(block, f.pos));
    Instruction* root = returned.size() == 1 ? returned[0] : Tuple(returned, {});
    frames_.pop_back();
    return root;
  }

  // Converts the operations of a block in the current frame; returns the values of its terminator.
  Expected<std::vector<Instruction*>> ConvertBlock(const Block& block, size_t pos) {
    for (const auto& op : block.operations) {
      if (op.name == "func.return" || op.name == "stablehlo.return" || op.name == "mhlo.return") {
        if (&op != &block.operations.back()) return OpErr(op, "a return must end its block");
        return Operands(op);
      }
      OPPROBE_ASSIGN_OR_RETURN(std::vector<Instruction*> results, ConvertOp(op));
      if (static_cast<int64_t>(results.size()) != op.ResultCount())
        return OpErr(op, fmt::format("{} result name(s) for {} result(s)", op.ResultCount(), results.size()));
      size_t k = 0;
      for (const auto& [name, count] : op.results) {
        std::vector<Instruction*> group(results.begin() + static_cast<long>(k),
                                        results.begin() + static_cast<long>(k + count));
        Bind(name, std::move(group));
        k += static_cast<size_t>(count);
      }
    }
    return Err(pos, "a block without a return");
  }

  // A region as a called computation whose parameters are its block arguments (reduce bodies, comparators,
  // scatter updates, ...): `root_tuple` makes several returned values one tuple.
  Expected<Computation*> RegionComputation(const Operation& op, const Region& r, const std::string& name) {
    if (r.blocks.size() != 1) return OpErr(op, "a region must have exactly one block");
    const Block& block = r.blocks[0];
    Builder sub = B().CreateSubBuilder(name);
    frames_.push_back(Frame{&sub, {}});
    for (size_t i = 0; i < block.arguments.size(); ++i) {
      OPPROBE_ASSIGN_OR_RETURN(Shape s, ShapeOf(block.arguments[i].second, op.pos));
      Bind(block.arguments[i].first, {sub.Parameter(static_cast<int64_t>(i), s)});
    }
    OPPROBE_ASSIGN_OR_RETURN(std::vector<Instruction*> returned, ConvertBlock(block, op.pos));
    if (returned.empty()) return OpErr(op, "a region returns nothing");
    Instruction* root = returned.size() == 1 ? returned[0] : Tuple(returned, {});
    frames_.pop_back();
    return sub.Finish(root);
  }

  // A while/case/if region: its parameter carries `carried` values (the block arguments, bound in order) and then
  // the `captured` outer values; `pass_through` makes the root a tuple of the returned values followed by the
  // captured ones unchanged (while's body).
  Expected<Computation*> CapturingRegion(const Operation& op, const Region& r, const std::string& name,
                                         const Shape& param_shape, bool param_is_tuple, size_t carried,
                                         const std::vector<Value>& captured, bool pass_through, bool root_tuple) {
    if (r.blocks.size() != 1) return OpErr(op, "a region must have exactly one block");
    const Block& block = r.blocks[0];
    if (block.arguments.size() != carried) return OpErr(op, "the region's arguments do not match its operands");
    Builder sub = B().CreateSubBuilder(name);
    frames_.push_back(Frame{&sub, {}});
    Instruction* param = sub.Parameter(0, param_shape);
    std::vector<Instruction*> elems;
    if (param_is_tuple) {
      elems = Unpack(param, {});
    } else if (carried + captured.size() == 1) {
      elems = {param};
    }
    for (size_t i = 0; i < carried; ++i) Bind(block.arguments[i].first, {elems[i]});
    std::vector<Instruction*> captured_values;
    for (size_t i = 0; i < captured.size(); ++i) {
      Instruction* v = elems[carried + i];
      captured_values.push_back(v);
      auto& slot = frames_.back().values[captured[i].name];
      if (slot.size() <= static_cast<size_t>(captured[i].index))
        slot.resize(static_cast<size_t>(captured[i].index) + 1, v);
      slot[static_cast<size_t>(captured[i].index)] = v;
    }
    OPPROBE_ASSIGN_OR_RETURN(std::vector<Instruction*> returned, ConvertBlock(block, op.pos));
    if (pass_through) returned.insert(returned.end(), captured_values.begin(), captured_values.end());
    Instruction* root = nullptr;
    if (returned.size() == 1 && !root_tuple) {
      root = returned[0];
    } else {
      root = Tuple(returned, {});
    }
    frames_.pop_back();
    return sub.Finish(root);
  }

  Expected<Computation*> FunctionComputation(const Operation& op, const std::string& name) {
    if (auto it = converted_.find(name); it != converted_.end()) return it->second;
    auto f = functions_.find(name);
    if (f == functions_.end())
      return OpErr(op, fmt::format("calls undefined function @{}", support::OneLine(name, 64)));
    if (in_progress_.count(name))
      return OpErr(op,
                   fmt::format("function @{} calls itself (recursion has no HLO form)", support::OneLine(name, 64)));
    in_progress_.insert(name);
    Builder sub = root_->CreateSubBuilder(name);
    // A function is its own scope: nothing outside it is visible.
    std::vector<Frame> saved;
    saved.swap(frames_);
    auto root = ConvertFunctionBody(*f->second, sub);
    saved.swap(frames_);
    if (!root.ok()) return root.status();
    in_progress_.erase(name);
    Computation* c = sub.Finish(*root);
    converted_[name] = c;
    return c;
  }

  // ---- operations ----
  static std::string Base(const std::string& name) {
    auto dot = name.find('.');
    std::string dialect = name.substr(0, dot);
    if (dialect == "stablehlo" || dialect == "mhlo") return name.substr(dot + 1);
    return name;
  }

  Status CheckArity(const Operation& op, size_t n) const {
    if (op.operands.size() != n) return OpErr(op, fmt::format("expected {} operand(s), got {}", n, op.operands.size()));
    return Status::Ok();
  }
  Status CheckResults(const Operation& op, const std::vector<Shape>& shapes, size_t n) const {
    if (shapes.size() != n) return OpErr(op, fmt::format("expected {} result(s), got {}", n, shapes.size()));
    return Status::Ok();
  }

  // Regions inside regions and calls inside called functions are converted recursively; a chain deeper than
  // this is refused (MLIR printed by a compiler nests far less).
  static constexpr int kMaxNesting = 64;
  struct Nesting {
    explicit Nesting(int& d) : depth(d) { ++depth; }
    ~Nesting() { --depth; }
    int& depth;
  };

  Expected<std::vector<Instruction*>> ConvertOp(const Operation& op) {
    Nesting nesting(nesting_);
    if (nesting_ > kMaxNesting)
      return OpErr(op, fmt::format("regions and calls nested more than {} deep", kMaxNesting));
    const bool was_unknown = unknown_;
    unknown_ = false;
    auto results = ConvertKnownOp(op);
    const bool converted_as_unknown = unknown_;
    unknown_ = was_unknown;
    // Items outside a known op's syntax (kept by the reader as `__words`) are a mistake in the text; an op this
    // reader does not know keeps whatever its syntax has.
    // (sdy.sharding_constraint's sharding, `<@mesh, [{}]>`, is such an item: ReplicatedShardyConstraint reads it.)
    if (results.ok() && !converted_as_unknown && op.name != "sdy.sharding_constraint")
      if (const Attr* w = op.Find("__words"); w && !w->elements.empty()) {
        const Attr& first = w->elements[0];
        return Err(first.pos, fmt::format("unexpected {} in operation {}",
                                          support::Quote(first.kind == Attr::Kind::kEnum ? first.text : "value"),
                                          support::Quote(op.name)));
      }
    return results;
  }

  // What one entry of the conversion table gets: the op, its name without the stablehlo/mhlo dialect (`base`), its
  // result shapes and metadata, and its operands (empty for the entries that convert regions before looking their
  // operands up, `Order::kRegionsFirst`).
  struct OpInput {
    const Operation& op;
    const std::string& base;
    const std::vector<Shape>& shapes;
    const OpMetadata& md;
    std::vector<Instruction*> ops;
  };
  using Converted = Expected<std::vector<Instruction*>>;
  using Conversion = Converted (Converter::*)(OpInput&);
  enum class Match { kHloBase, kFullName };  // stablehlo.X and mhlo.X by X; any other dialect's op by its full name
  enum class Order { kOperandsFirst, kRegionsFirst };
  struct OpConversion {
    std::string_view name;
    Match match;
    Order order;
    Conversion convert;
  };

  // The conversion table: one entry per op that is not a plain one-instruction op (kSimpleOps, kChloSimpleOps,
  // kChloBroadcastOps); an op in none of them becomes an unknown instruction named after it (Unknown).
  static const std::vector<OpConversion>& ConversionTable() {
    using C = Converter;
    constexpr Match H = Match::kHloBase, F = Match::kFullName;
    constexpr Order L = Order::kOperandsFirst, R = Order::kRegionsFirst;
    static const std::vector<OpConversion> kTable = {
        {"constant", H, R, &C::ConvertConstant},
        {"chlo.constant", F, R, &C::ConvertConstant},
        {"while", H, R, &C::ConvertWhile},
        {"case", H, R, &C::ConvertConditional},
        {"if", H, R, &C::ConvertConditional},
        {"iota", H, L, &C::ConvertIota},
        {"broadcast_in_dim", H, L, &C::ConvertBroadcastInDim},
        {"broadcast", H, L, &C::ConvertBroadcast},
        {"transpose", H, L, &C::ConvertTranspose},
        {"reverse", H, L, &C::ConvertReverse},
        {"concatenate", H, L, &C::ConvertConcatenate},
        {"slice", H, L, &C::ConvertSlice},
        {"dynamic_slice", H, L, &C::ConvertDynamicSlice},
        {"pad", H, L, &C::ConvertPad},
        {"compare", H, L, &C::ConvertCompare},
        {"dot_general", H, L, &C::ConvertDot},
        {"dot", H, L, &C::ConvertDot},
        {"convolution", H, L, &C::ConvertConvolution},
        {"reduce", H, L, &C::ConvertWithBody},
        {"reduce_window", H, L, &C::ConvertWithBody},
        {"scatter", H, L, &C::ConvertWithBody},
        {"sort", H, L, &C::ConvertWithBody},
        {"map", H, L, &C::ConvertWithBody},
        {"all_reduce", H, L, &C::ConvertWithBody},
        {"reduce_scatter", H, L, &C::ConvertWithBody},
        {"select_and_scatter", H, L, &C::ConvertSelectAndScatter},
        {"gather", H, L, &C::ConvertGather},
        {"fft", H, L, &C::ConvertFft},
        {"rng_bit_generator", H, L, &C::ConvertRngBitGenerator},
        {"rng", H, L, &C::ConvertRng},
        {"reduce_precision", H, L, &C::ConvertReducePrecision},
        {"triangular_solve", H, L, &C::ConvertTriangularSolve},
        {"cholesky", H, L, &C::ConvertCholesky},
        {"custom_call", H, L, &C::ConvertCustomCall},
        {"optimization_barrier", H, L, &C::ConvertOptimizationBarrier},
        {"tuple", H, L, &C::ConvertTuple},
        {"get_tuple_element", H, L, &C::ConvertGetTupleElement},
        {"get_dimension_size", H, L, &C::ConvertGetDimensionSize},
        {"set_dimension_size", H, L, &C::ConvertSetDimensionSize},
        {"after_all", H, L, &C::ConvertAfterAll},
        {"create_token", H, L, &C::ConvertAfterAll},
        {"replica_id", H, L, &C::ConvertReplicaOrPartitionId},
        {"partition_id", H, L, &C::ConvertReplicaOrPartitionId},
        {"batch_norm_training", H, L, &C::ConvertBatchNorm},
        {"batch_norm_inference", H, L, &C::ConvertBatchNorm},
        {"batch_norm_grad", H, L, &C::ConvertBatchNorm},
        {"all_gather", H, L, &C::ConvertCollective},
        {"all_to_all", H, L, &C::ConvertCollective},
        {"collective_permute", H, L, &C::ConvertCollective},
        {"collective_broadcast", H, L, &C::ConvertCollective},
        {"composite", H, L, &C::ConvertComposite},
        {"func.call", F, L, &C::ConvertCall},
        {"chlo.erf_inv", F, L, &C::ConvertErfInv},
        {"sdy.sharding_constraint", F, L, &C::ConvertShardingConstraint},
        {"chlo.top_k", F, L, &C::ConvertTopK},
        {"chlo.square", F, L, &C::ConvertSquare},
    };
    return kTable;
  }

 public:
  // The table's entry for an op name (`stablehlo.pad`, `mhlo.pad`, `func.call`), or null.
  static const OpConversion* FindConversion(std::string_view op_name) {
    static const std::map<std::pair<Match, std::string_view>, const OpConversion*> kIndex = [] {
      std::map<std::pair<Match, std::string_view>, const OpConversion*> index;
      for (const auto& e : ConversionTable()) index.emplace(std::make_pair(e.match, e.name), &e);
      return index;
    }();
    const bool hlo_dialect = op_name.rfind("stablehlo.", 0) == 0 || op_name.rfind("mhlo.", 0) == 0;
    auto it = hlo_dialect ? kIndex.find({Match::kHloBase, op_name.substr(op_name.find('.') + 1)})
                          : kIndex.find({Match::kFullName, op_name});
    return it == kIndex.end() ? nullptr : it->second;
  }
  static std::vector<std::string_view> ConversionNames() {
    std::vector<std::string_view> out;
    for (const auto& e : ConversionTable()) out.push_back(e.name);
    return out;
  }

 private:
  Converted ConvertKnownOp(const Operation& op) {
    const std::string base = Base(op.name);
    const OpMetadata md = op.has_location ? MetadataOf(op.location) : OpMetadata{};
    OPPROBE_ASSIGN_OR_RETURN(std::vector<Shape> shapes, ResultShapes(op));
    const OpConversion* entry = FindConversion(op.name);
    OpInput in{op, base, shapes, md, {}};
    // Ops whose regions are converted before their operands are looked up in this frame (captures).
    if (entry && entry->order == Order::kRegionsFirst) return (this->*entry->convert)(in);

    OPPROBE_ASSIGN_OR_RETURN(in.ops, Operands(op));
    const bool hlo_dialect = op.name.rfind("stablehlo.", 0) == 0 || op.name.rfind("mhlo.", 0) == 0;
    if (hlo_dialect) {
      if (auto opcode = Lookup(std::begin(kSimpleOps), std::end(kSimpleOps), base)) return Simple(in, *opcode);
    }
    if (auto opcode = Lookup(std::begin(kChloSimpleOps), std::end(kChloSimpleOps), op.name)) return Simple(in, *opcode);
    if (auto opcode = Lookup(std::begin(kChloBroadcastOps), std::end(kChloBroadcastOps), op.name))
      return ChloBroadcast(op, *opcode, in.ops, shapes, md);
    if (entry) return (this->*entry->convert)(in);
    return Unknown(op, in.ops, shapes, md);
  }

  // A plain one-instruction op: its opcode with the op's operands and result shape.
  Converted Simple(OpInput& in, Opcode opcode) {
    const Operation& op = in.op;
    int arity = OpcodeArity(opcode);
    if (arity >= 0) OPPROBE_RETURN_IF_ERROR(CheckArity(op, static_cast<size_t>(arity)));
    OPPROBE_RETURN_IF_ERROR(CheckResults(op, in.shapes, 1));
    std::vector<Instruction*> operands = in.ops;
    if (opcode == Opcode::kSelect && in.shapes[0].IsArray() && in.shapes[0].rank() > 0) {
      // XlaBuilder's select broadcasts a scalar predicate to the result's dims.
      for (auto*& x : operands)
        if (x->shape.IsArray() && x->shape.rank() == 0) {
          auto b = Make(Opcode::kBroadcast, Shape::Array(x->shape.element_type(), in.shapes[0].dimensions()), {x});
          x = Add(std::move(b), in.md);
        }
    }
    Instruction* i = Add(opcode, in.shapes[0], operands, in.md);
    FixLayout(*i);
    OPPROBE_RETURN_IF_ERROR(ApplyXlaShape(op, *i));
    return std::vector<Instruction*>{i};
  }

  // An entry that made one instruction whose shape is the op's one result.
  Converted Single(OpInput& in, std::unique_ptr<Instruction> i) {
    OPPROBE_RETURN_IF_ERROR(CheckResults(in.op, in.shapes, 1));
    i->shape = in.shapes[0];
    Instruction* added = Add(std::move(i), in.md);
    FixLayout(*added);
    OPPROBE_RETURN_IF_ERROR(ApplyXlaShape(in.op, *added));
    return std::vector<Instruction*>{added};
  }

  // ---- the table's conversions ----
  Converted ConvertConstant(OpInput& in) { return Constant(in.op, in.shapes, in.md); }
  Converted ConvertWhile(OpInput& in) { return While(in.op, in.shapes, in.md); }
  Converted ConvertConditional(OpInput& in) { return Conditional(in.op, in.shapes, in.md, in.base == "if"); }

  Converted ConvertIota(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 0));
    auto i = Make(Opcode::kIota, {}, {});
    OPPROBE_ASSIGN_OR_RETURN(i->iota_dimension, IntAttr(in.op, "iota_dimension"));
    return Single(in, std::move(i));
  }
  Converted ConvertBroadcastInDim(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
    OPPROBE_RETURN_IF_ERROR(CheckResults(op, in.shapes, 1));
    OPPROBE_ASSIGN_OR_RETURN(auto dims, IntsAttr(op, "broadcast_dimensions"));
    OPPROBE_ASSIGN_OR_RETURN(Instruction * b, BroadcastInDim(op, in.ops[0], in.shapes[0], dims, in.md));
    return std::vector<Instruction*>{b};
  }
  Converted ConvertBroadcast(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    OPPROBE_ASSIGN_OR_RETURN(auto sizes, IntsAttr(in.op, "broadcast_sizes"));
    auto i = Make(Opcode::kBroadcast, {}, in.ops);
    for (int d = 0; d < in.ops[0]->shape.rank(); ++d) i->dimensions.push_back(static_cast<int64_t>(sizes.size()) + d);
    return Single(in, std::move(i));
  }
  Converted ConvertTranspose(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    auto i = Make(Opcode::kTranspose, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(i->dimensions, IntsAttr(in.op, "permutation"));
    return Single(in, std::move(i));
  }
  Converted ConvertReverse(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    auto i = Make(Opcode::kReverse, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(i->dimensions, IntsAttr(in.op, "dimensions"));
    return Single(in, std::move(i));
  }
  Converted ConvertConcatenate(OpInput& in) {
    if (in.ops.empty()) return OpErr(in.op, "expected operands");
    auto i = Make(Opcode::kConcatenate, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(int64_t d, IntAttr(in.op, "dimension"));
    i->dimensions = {d};
    return Single(in, std::move(i));
  }
  Converted ConvertSlice(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    auto i = Make(Opcode::kSlice, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(i->slice, Slice(in.op, in.ops[0]->shape));
    return Single(in, std::move(i));
  }
  Converted ConvertDynamicSlice(OpInput& in) {
    if (in.ops.empty()) return OpErr(in.op, "expected operands");
    auto i = Make(Opcode::kDynamicSlice, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(i->mutable_rare().dynamic_slice_sizes, IntsAttr(in.op, "slice_sizes"));
    return Single(in, std::move(i));
  }
  Converted ConvertPad(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 2));
    auto i = Make(Opcode::kPad, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(auto lo, IntsAttr(op, "edge_padding_low"));
    OPPROBE_ASSIGN_OR_RETURN(auto hi, IntsAttr(op, "edge_padding_high"));
    OPPROBE_ASSIGN_OR_RETURN(auto interior, IntsAttr(op, "interior_padding"));
    if (lo.size() != hi.size() || lo.size() != interior.size()) return OpErr(op, "padding lists of different lengths");
    PaddingConfig pc;
    for (size_t k = 0; k < lo.size(); ++k) pc.dimensions.push_back({lo[k], hi[k], interior[k]});
    i->padding_config = pc;
    return Single(in, std::move(i));
  }
  Converted ConvertCompare(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 2));
    auto i = Make(Opcode::kCompare, {}, in.ops);
    std::string dir = EnumAttr(op, "comparison_direction");
    auto d = ComparisonDirectionFromName(dir);
    if (!d) return OpErr(op, fmt::format("unknown comparison direction {}", support::Quote(dir)));
    i->comparison_direction = *d;
    std::string type = EnumAttr(op, "compare_type");
    if (type == "FLOAT" || type == "TOTALORDER" || type == "SIGNED" || type == "UNSIGNED") {
      i->mutable_rare().comparison_type = type;
    } else if (!type.empty() && type != "NOTYPE") {
      return OpErr(op, fmt::format("unknown comparison type {}", support::Quote(type)));
    } else {
      i->mutable_rare().comparison_type = DefaultComparisonType(in.ops[0]->shape.element_type());
    }
    return Single(in, std::move(i));
  }
  Converted ConvertDot(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 2));
    auto i = Make(Opcode::kDot, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(i->dot_dimension_numbers, DotDims(in.op, in.base == "dot", in.ops[0]->shape));
    OPPROBE_ASSIGN_OR_RETURN(i->mutable_rare().operand_precision, Precision(in.op));
    return Single(in, std::move(i));
  }
  Converted ConvertConvolution(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 2));
    auto i = Make(Opcode::kConvolution, {}, in.ops);
    OPPROBE_RETURN_IF_ERROR(Convolution(in.op, *i));
    return Single(in, std::move(i));
  }
  Converted ConvertWithBody(OpInput& in) { return WithBody(in.op, in.base, in.ops, in.shapes, in.md); }
  Converted ConvertSelectAndScatter(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 3));
    if (op.regions.size() != 2) return OpErr(op, "expected a select and a scatter region");
    auto i = Make(Opcode::kSelectAndScatter, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(Computation * sel, RegionComputation(op, op.regions[0], "select"));
    OPPROBE_ASSIGN_OR_RETURN(Computation * sc, RegionComputation(op, op.regions[1], "scatter"));
    i->called_computations = {sel, sc};
    OPPROBE_ASSIGN_OR_RETURN(i->window, WindowFromAttrs(op, in.ops[0]->shape.rank(), false));
    return Single(in, std::move(i));
  }
  Converted ConvertGather(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 2));
    auto i = Make(Opcode::kGather, {}, in.ops);
    OPPROBE_RETURN_IF_ERROR(Gather(in.op, *i));
    return Single(in, std::move(i));
  }
  Converted ConvertFft(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
    auto i = Make(Opcode::kFft, {}, in.ops);
    std::string t = EnumAttr(op, "fft_type");
    auto ft = FftTypeFromName(t);
    if (!ft) return OpErr(op, fmt::format("unknown fft type {}", support::Quote(t)));
    i->fft_type = *ft;
    OPPROBE_ASSIGN_OR_RETURN(i->mutable_rare().fft_length, IntsAttr(op, "fft_length"));
    return Single(in, std::move(i));
  }
  Converted ConvertRngBitGenerator(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
    OPPROBE_RETURN_IF_ERROR(CheckResults(op, in.shapes, 2));
    auto i = Make(Opcode::kRngBitGenerator, {}, in.ops);
    std::string alg = EnumAttr(op, "rng_algorithm");
    if (alg == "DEFAULT" || alg.empty()) i->mutable_rare().rng_algorithm = "rng_default";
    else if (alg == "THREE_FRY") i->mutable_rare().rng_algorithm = "rng_three_fry";
    else if (alg == "PHILOX") i->mutable_rare().rng_algorithm = "rng_philox";
    else return OpErr(op, fmt::format("unknown rng algorithm {}", support::Quote(alg)));
    return Results(std::move(i), in.shapes, in.md);
  }
  Converted ConvertRng(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 3));
    auto i = Make(Opcode::kRng, {}, {in.ops[0], in.ops[1]});
    std::string dist = EnumAttr(op, "rng_distribution");
    if (dist == "UNIFORM") i->distribution = RandomDistribution::kUniform;
    else if (dist == "NORMAL") i->distribution = RandomDistribution::kNormal;
    else return OpErr(op, fmt::format("unknown rng distribution {}", support::Quote(dist)));
    return Single(in, std::move(i));
  }
  Converted ConvertReducePrecision(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
    auto i = Make(Opcode::kReducePrecision, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(int64_t e, IntAttr(op, "exponent_bits"));
    OPPROBE_ASSIGN_OR_RETURN(int64_t m, IntAttr(op, "mantissa_bits"));
    if (e < 0 || e > 64 || m < 0 || m > 64) return OpErr(op, "exponent/mantissa bits out of range");
    i->exponent_bits = static_cast<int32_t>(e);
    i->mantissa_bits = static_cast<int32_t>(m);
    return Single(in, std::move(i));
  }
  Converted ConvertTriangularSolve(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 2));
    auto i = Make(Opcode::kTriangularSolve, {}, in.ops);
    i->triangular_solve_options.left_side = BoolAttr(op, "left_side");
    i->triangular_solve_options.lower = BoolAttr(op, "lower");
    i->triangular_solve_options.unit_diagonal = BoolAttr(op, "unit_diagonal");
    std::string t = EnumAttr(op, "transpose_a");
    auto ta = TransposeAFromName(t.empty() ? "NO_TRANSPOSE" : t);
    if (!ta) return OpErr(op, fmt::format("unknown transpose_a {}", support::Quote(t)));
    i->triangular_solve_options.transpose_a = *ta;
    return Single(in, std::move(i));
  }
  Converted ConvertCholesky(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    auto i = Make(Opcode::kCholesky, {}, in.ops);
    i->cholesky_lower = BoolAttr(in.op, "lower");
    return Single(in, std::move(i));
  }
  Converted ConvertCustomCall(OpInput& in) { return CustomCall(in.op, in.ops, in.shapes, in.md); }
  Converted ConvertOptimizationBarrier(OpInput& in) {
    if (in.ops.size() != in.shapes.size()) return OpErr(in.op, "operands and results differ in number");
    Instruction* t = Tuple(in.ops, in.md);
    Instruction* b = Add(Opcode::kOptimizationBarrier, t->shape, {t}, in.md);
    return Unpack(b, in.md);
  }
  Converted ConvertTuple(OpInput& in) { return std::vector<Instruction*>{Tuple(in.ops, in.md)}; }
  Converted ConvertGetTupleElement(OpInput& in) {
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
    OPPROBE_ASSIGN_OR_RETURN(int64_t index, IntAttr(op, "index"));
    const Shape& tuple = in.ops[0]->shape;
    if (!tuple.IsTuple() || index < 0 || index >= static_cast<int64_t>(tuple.tuple_shapes().size()))
      return OpErr(op, "index out of range of the operand's tuple");
    auto i = Make(Opcode::kGetTupleElement, {}, in.ops);
    i->tuple_index = index;
    return Single(in, std::move(i));
  }
  Converted ConvertGetDimensionSize(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    auto i = Make(Opcode::kGetDimensionSize, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(int64_t d, IntAttr(in.op, "dimension"));
    i->dimensions = {d};
    return Single(in, std::move(i));
  }
  Converted ConvertSetDimensionSize(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 2));
    auto i = Make(Opcode::kSetDimensionSize, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(int64_t d, IntAttr(in.op, "dimension"));
    i->dimensions = {d};
    return Single(in, std::move(i));
  }
  Converted ConvertAfterAll(OpInput& in) { return Single(in, Make(Opcode::kAfterAll, {}, in.ops)); }
  Converted ConvertReplicaOrPartitionId(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 0));
    return Single(in, Make(in.base == "replica_id" ? Opcode::kReplicaId : Opcode::kPartitionId, {}, {}));
  }
  Converted ConvertBatchNorm(OpInput& in) {
    const Operation& op = in.op;
    Opcode opcode = in.base == "batch_norm_training"    ? Opcode::kBatchNormTraining
                    : in.base == "batch_norm_inference" ? Opcode::kBatchNormInference
                                                        : Opcode::kBatchNormGrad;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, static_cast<size_t>(OpcodeArity(opcode))));
    auto i = Make(opcode, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(double eps, FloatAttr(op, "epsilon"));
    i->epsilon = static_cast<float>(eps);
    OPPROBE_ASSIGN_OR_RETURN(i->feature_index, IntAttr(op, "feature_index"));
    return Results(std::move(i), in.shapes, in.md);
  }
  Converted ConvertCollective(OpInput& in) { return Collective(in.op, in.base, in.ops, in.shapes, in.md); }
  Converted ConvertComposite(OpInput& in) { return Composite(in.op, in.ops, in.shapes, in.md); }
  Converted ConvertCall(OpInput& in) {
    const Operation& op = in.op;
    const Attr* callee = op.Find("callee");
    if (!callee || callee->kind != Attr::Kind::kSymbol) return OpErr(op, "missing its callee");
    OPPROBE_ASSIGN_OR_RETURN(Computation * c, FunctionComputation(op, callee->text));
    auto i = Make(Opcode::kCall, {}, in.ops);
    i->called_computations = {c};
    if (in.shapes.empty()) {  // a call without results still runs: an empty tuple
      Add(std::move(i), in.md)->shape = Shape::Tuple({});
      return std::vector<Instruction*>{};
    }
    return Results(std::move(i), in.shapes, in.md);
  }
  Converted ConvertErfInv(OpInput& in) {
    // XLA's translation expands it (CHLO legalization: no HLO opcode): Giles' polynomial in -log((1-x)(1+x)), as
    // opprobe's own lowering of aten::erfinv builds it (hlo/math.h; for f64 XLA uses more terms of the same form).
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    OPPROBE_RETURN_IF_ERROR(CheckResults(in.op, in.shapes, 1));
    const OpMetadata saved = B().metadata();
    B().SetMetadata(in.md);
    Instruction* r = math::ErfInv(B(), in.ops[0]);
    B().SetMetadata(saved);
    return std::vector<Instruction*>{r};
  }
  Converted ConvertShardingConstraint(OpInput& in) {
    // Shardy's sharding constraint (JAX's random keys carry one on an empty mesh): XLA exports it as a `Sharding`
    // custom call. A sharding whose every dimension lists no mesh axes (`<@mesh, [{}, {}]>`) is `{replicated}`;
    // any other needs the mesh, which this reader does not model: the op stays unknown.
    const Operation& op = in.op;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
    OPPROBE_RETURN_IF_ERROR(CheckResults(op, in.shapes, 1));
    if (!ReplicatedShardyConstraint(op)) return Unknown(op, in.ops, in.shapes, in.md);
    auto i = Make(Opcode::kCustomCall, {}, in.ops);
    i->custom_call_target = "Sharding";
    i->sharding = Sharding{};  // kReplicated
    return Results(std::move(i), in.shapes, in.md);
  }
  Converted ConvertTopK(OpInput& in) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    OPPROBE_RETURN_IF_ERROR(CheckResults(in.op, in.shapes, 2));
    auto i = Make(Opcode::kTopK, {}, in.ops);
    OPPROBE_ASSIGN_OR_RETURN(i->k, IntAttr(in.op, "k"));
    i->largest = true;
    return Results(std::move(i), in.shapes, in.md);
  }
  Converted ConvertSquare(OpInput& in) {  // x * x (complex squares are expanded by XLA; they stay one instruction here)
    OPPROBE_RETURN_IF_ERROR(CheckArity(in.op, 1));
    OPPROBE_RETURN_IF_ERROR(CheckResults(in.op, in.shapes, 1));
    if (!IsComplex(in.shapes[0].element_type()))
      return std::vector<Instruction*>{Add(Opcode::kMultiply, in.shapes[0], {in.ops[0], in.ops[0]}, in.md)};
    return Unknown(in.op, in.ops, in.shapes, in.md);
  }

  // stablehlo.composite: a `chlo.*` composite (what jax.export writes for chlo ops) is recomposed into that op, as
  // XLA's pipeline does; the chlo ops XLA keeps whole (erf, top_k, tan) are converted as such, the others are
  // their decomposition's operations in place (XLA expands them the same way). Any other composite calls its
  // decomposition.
  Expected<std::vector<Instruction*>> Composite(const Operation& op, const std::vector<Instruction*>& ops,
                                                const std::vector<Shape>& shapes, const OpMetadata& md) {
    const Attr* d = op.Find("decomposition");
    if (!d || d->kind != Attr::Kind::kSymbol) return OpErr(op, "missing its decomposition function");
    const Attr* name = op.Find("name");
    const std::string composite = name && name->kind == Attr::Kind::kString ? name->text : "";
    if (composite == "chlo.erf" || composite == "chlo.tan") {
      OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
      OPPROBE_RETURN_IF_ERROR(CheckResults(op, shapes, 1));
      Instruction* i = Add(composite == "chlo.erf" ? Opcode::kErf : Opcode::kTan, shapes[0], ops, md);
      FixLayout(*i);
      return std::vector<Instruction*>{i};
    }
    if (composite == "chlo.top_k") {
      OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
      OPPROBE_RETURN_IF_ERROR(CheckResults(op, shapes, 2));
      const Attr* attrs = op.Find("composite_attributes");
      const Attr* k = attrs && attrs->kind == Attr::Kind::kDict ? attrs->Get("k") : nullptr;
      if (!k || k->kind != Attr::Kind::kInt) return OpErr(op, "a chlo.top_k composite needs composite_attributes k");
      auto i = Make(Opcode::kTopK, {}, ops);
      i->k = k->i;
      i->largest = true;
      return Results(std::move(i), shapes, md);
    }
    if (composite.rfind("chlo.", 0) == 0) return Inline(op, d->text, ops);
    OPPROBE_ASSIGN_OR_RETURN(Computation * callee, FunctionComputation(op, d->text));
    auto i = Make(Opcode::kCall, {}, ops);
    i->called_computations = {callee};
    return Results(std::move(i), shapes, md);
  }

  // The operations of function `name` in the current computation, its arguments bound to `args`.
  Expected<std::vector<Instruction*>> Inline(const Operation& op, const std::string& name,
                                             const std::vector<Instruction*>& args) {
    auto f = functions_.find(name);
    if (f == functions_.end())
      return OpErr(op, fmt::format("calls undefined function @{}", support::OneLine(name, 64)));
    if (in_progress_.count(name))
      return OpErr(op, fmt::format("function @{} calls itself", support::OneLine(name, 64)));
    const Function& fn = *f->second;
    if (fn.body.blocks.size() != 1 || fn.body.blocks[0].arguments.size() != args.size())
      return OpErr(op, fmt::format("@{} does not take the composite's operands", support::OneLine(name, 64)));
    in_progress_.insert(name);
    std::vector<Frame> saved;
    saved.swap(frames_);
    frames_.push_back(Frame{saved.back().builder, {}});
    for (size_t k = 0; k < args.size(); ++k) Bind(fn.body.blocks[0].arguments[k].first, {args[k]});
    auto results = ConvertBlock(fn.body.blocks[0], fn.pos);
    saved.swap(frames_);
    in_progress_.erase(name);
    return results;
  }

  // Whether an `sdy.sharding_constraint`'s sharding, as written after its operand (`<@mesh, [{}, {}]>`), names no
  // mesh axis for any dimension.
  bool ReplicatedShardyConstraint(const Operation& op) const {
    std::string_view text = m_.text;
    if (op.pos >= text.size()) return false;
    size_t open = text.find('<', op.pos), end = text.find('\n', op.pos);
    if (open == std::string_view::npos || (end != std::string_view::npos && open > end)) return false;
    size_t list = text.find('[', open), close = text.find(']', open);
    if (list == std::string_view::npos || close == std::string_view::npos || close < list) return false;
    std::string_view dims = text.substr(list + 1, close - list - 1);
    for (char c : dims)
      if (c != '{' && c != '}' && c != ',' && c != ' ') return false;  // an axis name, `?`, a priority
    return true;
  }

  // An op with no HLO translation here: one instruction named after it, unsupported everywhere.
  Expected<std::vector<Instruction*>> Unknown(const Operation& op, const std::vector<Instruction*>& ops,
                                              const std::vector<Shape>& shapes, const OpMetadata& md) {
    unknown_ = true;
    auto i = Make(Opcode::kCustomCall, {}, ops);
    i->unknown_opcode = op.name;
    if (shapes.empty()) {
      i->shape = Shape::Tuple({});
      Add(std::move(i), md);
      return std::vector<Instruction*>{};
    }
    return Results(std::move(i), shapes, md);
  }

  // The result layout XLA's shape inference gives (the translation builds with XlaBuilder): a transpose permutes
  // its operand's layout so that it is a bitcast; elementwise ops keep the layout of their first (select, clamp:
  // second) operand, as do reverse and dynamic-update-slice; everything else has the default layout.
  static void FixLayout(Instruction& i) {
    if (!i.shape.IsArray() || i.operands.empty()) return;
    auto layout_of = [](const Shape& s) {
      if (s.has_layout()) return s.minor_to_major();
      std::vector<int64_t> m;
      for (int d = s.rank() - 1; d >= 0; --d) m.push_back(d);
      return m;
    };
    if (i.opcode == Opcode::kTranspose) {
      const Shape& in = i.operands[0]->shape;
      if (!in.IsArray() || static_cast<int>(i.dimensions.size()) != in.rank() || in.rank() != i.shape.rank()) return;
      std::vector<int64_t> inverse(i.dimensions.size(), -1);
      for (size_t k = 0; k < i.dimensions.size(); ++k) {
        int64_t d = i.dimensions[k];
        if (d < 0 || d >= in.rank() || inverse[static_cast<size_t>(d)] >= 0) return;  // not a permutation
        inverse[static_cast<size_t>(d)] = static_cast<int64_t>(k);
      }
      std::vector<int64_t> m;
      for (int64_t d : layout_of(in)) m.push_back(inverse[static_cast<size_t>(d)]);
      i.shape.set_layout(m);
      return;
    }
    size_t src = 0;
    if (i.opcode == Opcode::kSelect || i.opcode == Opcode::kClamp) {
      src = 1;
    } else if (!IsElementwise(i.opcode) && i.opcode != Opcode::kReverse && i.opcode != Opcode::kDynamicUpdateSlice &&
               i.opcode != Opcode::kCopy) {
      return;
    }
    if (src >= i.operands.size()) return;
    const Shape& from = i.operands[src]->shape;
    if (from.IsArray() && from.rank() == i.shape.rank() && from.has_layout()) i.shape.set_layout(from.minor_to_major());
  }

  // `xla_shape = "f32[4,3]{0,1}"` (torch_xla keeps the HLO layout of a transpose): the result shape's layout.
  Status ApplyXlaShape(const Operation& op, Instruction& i) {
    const Attr* a = op.Find("xla_shape");
    if (!a || a->kind != Attr::Kind::kString) return Status::Ok();
    auto s = ParseShape(a->text);
    if (!s.ok() || !s->Compatible(i.shape))
      return Err(a->pos, fmt::format("{}: xla_shape {} does not match the result type", support::OneLine(op.name, 64),
                                     support::Quote(a->text)));
    i.shape = *s;
    return Status::Ok();
  }

  Expected<std::vector<Instruction*>> Constant(const Operation& op, const std::vector<Shape>& shapes,
                                               const OpMetadata& md) {
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 0));
    OPPROBE_RETURN_IF_ERROR(CheckResults(op, shapes, 1));
    const Attr* v = op.Find("value");
    if (!v) return OpErr(op, "missing its value");
    const Shape& shape = shapes[0];
    if (!shape.IsArray()) return OpErr(op, "a constant must be a tensor");
    const int64_t count = shape.elements();
    const PrimitiveType t = shape.element_type();
    // XLA exports a splat of more than one element (MLIR makes any literal whose values are all equal a splat) as a
    // scalar constant broadcast to the shape.
    bool splat = v->kind != Attr::Kind::kDense || v->dense->splat ||
                 (!v->dense->raw_hex.empty() && static_cast<int64_t>(v->dense->raw_hex.size() / 2) == ByteWidth(t));
    if (v->kind == Attr::Kind::kDense && !v->dense->resource.empty()) splat = false;
    Literal lit;
    if (splat && count > 1) {
      OPPROBE_ASSIGN_OR_RETURN(lit, MakeLiteral(op, *v, Shape::Scalar(t)));
    } else {
      OPPROBE_ASSIGN_OR_RETURN(lit, MakeLiteral(op, *v, shape));
      if (count > 1 && !lit.elided() && AllEqual(lit)) {
        Literal scalar(Shape::Scalar(t));
        std::memcpy(scalar.data().data(), lit.data().data(), scalar.data().size());
        lit = std::move(scalar);
        splat = true;
      }
    }
    auto c = Make(Opcode::kConstant, lit.shape(), {});
    c->literal = std::move(lit);
    Instruction* ci = Add(std::move(c), md);
    if (!(splat && count > 1)) return std::vector<Instruction*>{ci};
    return std::vector<Instruction*>{Add(Opcode::kBroadcast, shape, {ci}, md)};
  }

  static bool AllEqual(const Literal& lit) {
    const auto& d = lit.data();
    const size_t w = static_cast<size_t>(ByteWidth(lit.shape().element_type()));
    if (w == 0 || d.size() < 2 * w) return false;
    for (size_t k = w; k + w <= d.size(); k += w)
      if (std::memcmp(d.data(), d.data() + k, w) != 0) return false;
    return true;
  }

  Expected<Literal> MakeLiteral(const Operation& op, const Attr& v, const Shape& shape) const {
    int64_t count = shape.elements();
    const PrimitiveType t = shape.element_type();
    auto elided = [&]() {
      Literal lit;
      lit.mutable_shape() = shape;
      lit.set_elided(true);
      return lit;
    };
    DenseLiteral scalar;
    const DenseLiteral* d = nullptr;
    if (v.kind == Attr::Kind::kDense) {
      d = v.dense.get();
    } else if (v.kind == Attr::Kind::kInt || v.kind == Attr::Kind::kFloat || v.kind == Attr::Kind::kBool) {
      DenseElement e;
      if (v.kind == Attr::Kind::kInt) {
        e.kind = DenseElement::Kind::kInt;
        e.negative = v.i < 0;
        e.magnitude = v.i < 0 ? 0 - static_cast<uint64_t>(v.i) : static_cast<uint64_t>(v.i);
      } else if (v.kind == Attr::Kind::kFloat) {
        e.kind = DenseElement::Kind::kFloat;
        e.real = v.f;
      } else {
        e.kind = DenseElement::Kind::kBool;
        e.boolean = v.b;
      }
      scalar.elements.push_back(e);
      scalar.splat = true;
      d = &scalar;
    } else {
      return Err(v.pos, fmt::format("{}: expected a dense literal", support::OneLine(op.name, 64)));
    }
    if (!d->resource.empty()) return elided();
    if (!d->raw_hex.empty()) {
      const int width = ByteWidth(t);
      const size_t bytes = d->raw_hex.size() / 2;
      const bool whole = width > 0 && BitWidth(t) % 8 == 0 && static_cast<int64_t>(bytes) == count * width;
      const bool splat = width > 0 && BitWidth(t) % 8 == 0 && static_cast<int64_t>(bytes) == width;
      if ((!whole && !splat) || (splat && !whole && count > kMaxSplatElements)) return elided();
      std::vector<uint8_t> raw(bytes);
      for (size_t k = 0; k < bytes; ++k)
        raw[k] = static_cast<uint8_t>(std::stoi(d->raw_hex.substr(2 * k, 2), nullptr, 16));
      Literal lit(shape);
      for (int64_t k = 0; k < count; ++k)
        std::memcpy(lit.data().data() + k * width, raw.data() + (whole ? k * width : 0), static_cast<size_t>(width));
      return lit;
    }
    if (d->splat) {
      if (d->elements.size() != 1) return Err(v.pos, "malformed dense literal");
      if (count > kMaxSplatElements) return elided();
    } else if (static_cast<int64_t>(d->elements.size()) != count) {
      return Err(v.pos, fmt::format("{}: the literal has {} value(s), its type {} needs {}",
                                    support::OneLine(op.name, 64), d->elements.size(), shape.ToString(false), count));
    }
    Literal lit(shape);
    for (int64_t k = 0; k < count; ++k) {
      const DenseElement& e = d->elements[d->splat ? 0 : static_cast<size_t>(k)];
      OPPROBE_RETURN_IF_ERROR(SetElement(lit, k, e, t, v.pos));
    }
    return lit;
  }

  Status SetElement(Literal& lit, int64_t k, const DenseElement& e, PrimitiveType t, size_t pos) const {
    switch (e.kind) {
      case DenseElement::Kind::kBool: lit.SetFromDouble(k, e.boolean ? 1.0 : 0.0); return Status::Ok();
      case DenseElement::Kind::kFloat:
        if (IsInteger(t) || t == PrimitiveType::PRED) return Err(pos, "a float value in an integer literal");
        lit.SetFromDouble(k, e.real);
        return Status::Ok();
      case DenseElement::Kind::kComplex:
        if (!IsComplex(t)) return Err(pos, "a complex value in a real literal");
        lit.SetFromComplex(k, {e.real, e.imag});
        return Status::Ok();
      case DenseElement::Kind::kInt: {
        if (IsFloatingPoint(t) || IsComplex(t)) {
          double v = static_cast<double>(e.magnitude);
          lit.SetFromDouble(k, e.negative ? -v : v);
          return Status::Ok();
        }
        uint64_t bits = e.negative ? 0 - e.magnitude : e.magnitude;
        SetBits(lit, k, bits, t);
        return Status::Ok();
      }
      case DenseElement::Kind::kBits:
        SetBits(lit, k, e.negative ? 0 - e.magnitude : e.magnitude, t);
        return Status::Ok();
    }
    return Status::Ok();
  }

  static void SetBits(Literal& lit, int64_t k, uint64_t bits, PrimitiveType t) {
    switch (ByteWidth(t)) {
      case 1: lit.Set<uint8_t>(k, static_cast<uint8_t>(bits)); break;
      case 2: lit.Set<uint16_t>(k, static_cast<uint16_t>(bits)); break;
      case 4: lit.Set<uint32_t>(k, static_cast<uint32_t>(bits)); break;
      case 8: lit.Set<uint64_t>(k, bits); break;
      default: break;
    }
    if (t == PrimitiveType::PRED) lit.Set<uint8_t>(k, bits != 0);
  }

  // XLA's comparison type when the op names none: by the operands' element type.
  static std::string DefaultComparisonType(PrimitiveType t) {
    if (IsFloatingPoint(t) || IsComplex(t)) return "FLOAT";
    if (IsSignedInteger(t)) return "SIGNED";
    return "UNSIGNED";
  }

  Expected<SliceDimensions> Slice(const Operation& op, const Shape& operand) const {
    SliceDimensions s;
    if (const Attr* r = op.Find("__ranges")) {
      for (const auto& e : r->elements) {
        if (e.kind != Attr::Kind::kArray || e.elements.size() < 2)
          return OpErr(op, "expected ranges 'start:limit[:stride]'");
        for (const auto& n : e.elements)
          if (n.kind != Attr::Kind::kInt) return OpErr(op, "slice ranges must be integers");
        s.starts.push_back(e.elements[0].i);
        s.limits.push_back(e.elements[1].i);
        s.strides.push_back(e.elements.size() > 2 ? e.elements[2].i : 1);
      }
    } else {
      OPPROBE_ASSIGN_OR_RETURN(s.starts, IntsAttr(op, "start_indices"));
      OPPROBE_ASSIGN_OR_RETURN(s.limits, IntsAttr(op, "limit_indices"));
      OPPROBE_ASSIGN_OR_RETURN(s.strides, IntsAttr(op, "strides"));
    }
    if (s.starts.size() != s.limits.size() || s.starts.size() != s.strides.size() ||
        static_cast<int>(s.starts.size()) != operand.rank())
      return OpErr(op, "slice bounds do not match the operand's rank");
    return s;
  }

  // dot: lhs [..., k] x rhs [k, ...]; dot_general: its dimension numbers (generic or pretty).
  Expected<DotDimensionNumbers> DotDims(const Operation& op, bool plain_dot, const Shape& lhs) const {
    DotDimensionNumbers d;
    if (plain_dot) {
      d.lhs_contracting_dimensions = {std::max(0, lhs.rank() - 1)};
      d.rhs_contracting_dimensions = {0};
      return d;
    }
    if (const Attr* a = op.Find("dot_dimension_numbers")) {
      if (a->kind != Attr::Kind::kDict) return Err(a->pos, "dot_general: malformed dot_dimension_numbers");
      auto list = [&](const char* key, std::vector<int64_t>& out) -> Status {
        if (const Attr* v = a->Get(key)) { OPPROBE_ASSIGN_OR_RETURN(out, Ints(op, *v)); }
        return Status::Ok();
      };
      OPPROBE_RETURN_IF_ERROR(list("lhs_batching_dimensions", d.lhs_batch_dimensions));
      OPPROBE_RETURN_IF_ERROR(list("rhs_batching_dimensions", d.rhs_batch_dimensions));
      OPPROBE_RETURN_IF_ERROR(list("lhs_contracting_dimensions", d.lhs_contracting_dimensions));
      OPPROBE_RETURN_IF_ERROR(list("rhs_contracting_dimensions", d.rhs_contracting_dimensions));
      return d;
    }
    auto pair = [&](const char* key, std::vector<int64_t>& l, std::vector<int64_t>& r) -> Status {
      const Attr* a = op.Find(key);
      if (!a) return Status::Ok();
      if (a->kind != Attr::Kind::kArray || a->name != "x" || a->elements.size() != 2)
        return Err(a->pos, fmt::format("dot_general: expected '{} = [..] x [..]'", key));
      OPPROBE_ASSIGN_OR_RETURN(l, Ints(op, a->elements[0]));
      OPPROBE_ASSIGN_OR_RETURN(r, Ints(op, a->elements[1]));
      return Status::Ok();
    };
    OPPROBE_RETURN_IF_ERROR(pair("batching_dims", d.lhs_batch_dimensions, d.rhs_batch_dimensions));
    OPPROBE_RETURN_IF_ERROR(pair("contracting_dims", d.lhs_contracting_dimensions, d.rhs_contracting_dimensions));
    return d;
  }

  Expected<std::vector<PrecisionLevel>> Precision(const Operation& op) const {
    std::vector<PrecisionLevel> out;
    const Attr* a = op.Find("precision_config");
    if (!a) return out;
    if (a->kind != Attr::Kind::kArray) return Err(a->pos, "malformed precision_config");
    for (const auto& e : a->elements) {
      std::string p = EnumText(e);
      if (p == "DEFAULT") out.push_back(PrecisionLevel::kDefault);
      else if (p == "HIGH") out.push_back(PrecisionLevel::kHigh);
      else if (p == "HIGHEST") out.push_back(PrecisionLevel::kHighest);
      else return Err(e.pos, fmt::format("unknown precision {}", support::Quote(p)));
    }
    return out;
  }

  // `[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]`, from the pretty form's lists or the generic attribute's text.
  Status ConvDims(const Operation& op, ConvolutionDimensionNumbers& dn) const {
    const Attr* a = op.Find("dimension_numbers");
    if (!a) return OpErr(op, "missing attribute 'dimension_numbers'");
    std::vector<std::vector<std::string>> parts;
    if (a->kind == Attr::Kind::kArray && a->name == "x" && a->elements.size() == 3) {
      for (const auto& list : a->elements) {
        std::vector<std::string> items;
        items.reserve(list.elements.size());
        for (const auto& e : list.elements) items.push_back(e.kind == Attr::Kind::kInt ? std::to_string(e.i) : e.text);
        parts.push_back(std::move(items));
      }
    } else if (a->kind == Attr::Kind::kOther) {
      std::string text = a->text;
      if (text.rfind("raw", 0) == 0) return OpErr(op, "raw convolution dimension numbers are not supported");
      std::vector<std::string> cur;
      std::string tok;
      bool open = false;
      for (char c : text) {
        if (c == '[') {
          open = true;
          cur.clear();
          tok.clear();
        } else if (c == ']') {
          if (!tok.empty()) cur.push_back(tok);
          parts.push_back(cur);
          open = false;
          tok.clear();
        } else if (open && c == ',') {
          cur.push_back(tok);
          tok.clear();
        } else if (open && c != ' ') {
          tok.push_back(c);
        }
      }
    }
    if (parts.size() != 3) return Err(a->pos, "convolution: malformed dimension numbers");
    auto assign = [&](const std::vector<std::string>& items, char x, char y, int64_t& xd, int64_t& yd,
                      std::vector<int64_t>& spatial) -> Status {
      xd = yd = -1;
      spatial.assign(items.size() >= 2 ? items.size() - 2 : 0, -1);
      for (size_t k = 0; k < items.size(); ++k) {
        const std::string& it = items[k];
        if (it.size() == 1 && it[0] == x) {
          xd = static_cast<int64_t>(k);
        } else if (it.size() == 1 && it[0] == y) {
          yd = static_cast<int64_t>(k);
        } else if (!it.empty() && it.size() <= 3 &&
                   std::all_of(it.begin(), it.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          size_t s = static_cast<size_t>(std::stoi(it));
          if (s >= spatial.size()) return Err(a->pos, "convolution: spatial dimension out of range");
          spatial[s] = static_cast<int64_t>(k);
        } else {
          return Err(a->pos, fmt::format("convolution: unknown dimension label {}", support::Quote(it)));
        }
      }
      if (xd < 0 || yd < 0 || std::count(spatial.begin(), spatial.end(), -1) > 0)
        return Err(a->pos, "convolution: incomplete dimension numbers");
      return Status::Ok();
    };
    OPPROBE_RETURN_IF_ERROR(
        assign(parts[0], 'b', 'f', dn.input_batch_dimension, dn.input_feature_dimension, dn.input_spatial_dimensions));
    OPPROBE_RETURN_IF_ERROR(assign(parts[1], 'i', 'o', dn.kernel_input_feature_dimension,
                                   dn.kernel_output_feature_dimension, dn.kernel_spatial_dimensions));
    OPPROBE_RETURN_IF_ERROR(assign(parts[2], 'b', 'f', dn.output_batch_dimension, dn.output_feature_dimension,
                                   dn.output_spatial_dimensions));
    return Status::Ok();
  }

  Status Convolution(const Operation& op, Instruction& i) {
    ConvolutionDimensionNumbers dn;
    OPPROBE_RETURN_IF_ERROR(ConvDims(op, dn));
    const Shape& rhs = i.operands[1]->shape;
    const size_t n = dn.kernel_spatial_dimensions.size();
    for (int64_t d : dn.kernel_spatial_dimensions)
      if (d >= rhs.rank()) return OpErr(op, "kernel spatial dimension out of range of the kernel's rank");
    std::vector<int64_t> strides, lhs_dil, rhs_dil, reversal, pad;
    if (const Attr* w = op.Find("__window")) {  // pretty: window = {stride = [..], pad = [[..]], ...}
      if (w->kind != Attr::Kind::kDict) return Err(w->pos, "convolution: malformed window");
      for (const auto& v : w->dict) {
        const std::string& k = v.key;
        OPPROBE_ASSIGN_OR_RETURN(auto vals, Ints(op, v));
        if (k == "stride") strides = vals;
        else if (k == "pad") pad = vals;
        else if (k == "lhs_dilate") lhs_dil = vals;
        else if (k == "rhs_dilate") rhs_dil = vals;
        else if (k == "reverse") reversal = vals;
        else return Err(v.pos, fmt::format("convolution: unknown window field {}", support::Quote(k)));
      }
    } else {
      OPPROBE_ASSIGN_OR_RETURN(strides, OptInts(op, "window_strides"));
      OPPROBE_ASSIGN_OR_RETURN(pad, OptInts(op, "padding"));
      OPPROBE_ASSIGN_OR_RETURN(lhs_dil, OptInts(op, "lhs_dilation"));
      OPPROBE_ASSIGN_OR_RETURN(rhs_dil, OptInts(op, "rhs_dilation"));
      OPPROBE_ASSIGN_OR_RETURN(reversal, OptInts(op, "window_reversal"));
    }
    auto check = [&](const std::vector<int64_t>& v, size_t want, const char* what) -> Status {
      if (!v.empty() && v.size() != want) return OpErr(op, fmt::format("{} does not match the spatial rank", what));
      return Status::Ok();
    };
    OPPROBE_RETURN_IF_ERROR(check(strides, n, "window strides"));
    OPPROBE_RETURN_IF_ERROR(check(pad, 2 * n, "padding"));
    OPPROBE_RETURN_IF_ERROR(check(lhs_dil, n, "lhs dilation"));
    OPPROBE_RETURN_IF_ERROR(check(rhs_dil, n, "rhs dilation"));
    OPPROBE_RETURN_IF_ERROR(check(reversal, n, "window reversal"));
    Window win;
    for (size_t k = 0; k < n; ++k) {
      WindowDimension wd;
      wd.size = rhs.dimensions(static_cast<int>(dn.kernel_spatial_dimensions[k]));
      if (!strides.empty()) wd.stride = strides[k];
      if (!pad.empty()) {
        wd.padding_low = pad[2 * k];
        wd.padding_high = pad[2 * k + 1];
      }
      if (!lhs_dil.empty()) wd.base_dilation = lhs_dil[k];
      if (!rhs_dil.empty()) wd.window_dilation = rhs_dil[k];
      if (!reversal.empty()) wd.window_reversal = reversal[k] != 0;
      win.dimensions.push_back(wd);
    }
    i.window = win;
    i.convolution_dimension_numbers = dn;
    OPPROBE_ASSIGN_OR_RETURN(i.feature_group_count, IntAttr(op, "feature_group_count"));
    OPPROBE_ASSIGN_OR_RETURN(i.batch_group_count, IntAttr(op, "batch_group_count"));
    OPPROBE_ASSIGN_OR_RETURN(i.mutable_rare().operand_precision, Precision(op));
    return Status::Ok();
  }

  // reduce_window / select_and_scatter: window_dimensions, window_strides, base_dilations, window_dilations,
  // padding (N x 2).
  Expected<Window> WindowFromAttrs(const Operation& op, int rank, bool dilations) const {
    OPPROBE_ASSIGN_OR_RETURN(auto size, IntsAttr(op, "window_dimensions"));
    OPPROBE_ASSIGN_OR_RETURN(auto strides, OptInts(op, "window_strides"));
    OPPROBE_ASSIGN_OR_RETURN(auto pad, OptInts(op, "padding"));
    std::vector<int64_t> base, win_dil;
    if (dilations) {
      OPPROBE_ASSIGN_OR_RETURN(base, OptInts(op, "base_dilations"));
      OPPROBE_ASSIGN_OR_RETURN(win_dil, OptInts(op, "window_dilations"));
    }
    const size_t n = size.size();
    if (static_cast<int>(n) != rank) return OpErr(op, "window dimensions do not match the operand's rank");
    if ((!strides.empty() && strides.size() != n) || (!pad.empty() && pad.size() != 2 * n) ||
        (!base.empty() && base.size() != n) || (!win_dil.empty() && win_dil.size() != n))
      return OpErr(op, "window attributes of different lengths");
    Window w;
    for (size_t k = 0; k < n; ++k) {
      WindowDimension d;
      d.size = size[k];
      if (!strides.empty()) d.stride = strides[k];
      if (!pad.empty()) {
        d.padding_low = pad[2 * k];
        d.padding_high = pad[2 * k + 1];
      }
      if (!base.empty()) d.base_dilation = base[k];
      if (!win_dil.empty()) d.window_dilation = win_dil[k];
      w.dimensions.push_back(d);
    }
    return w;
  }

  Status Gather(const Operation& op, Instruction& i) {
    const Attr* a = op.Find("dimension_numbers");
    if (!a || a->kind != Attr::Kind::kDict) return OpErr(op, "missing or malformed dimension_numbers");
    GatherDimensionNumbers g;
    auto list = [&](const char* key, std::vector<int64_t>& out) -> Status {
      if (const Attr* v = a->Get(key)) { OPPROBE_ASSIGN_OR_RETURN(out, Ints(op, *v)); }
      return Status::Ok();
    };
    OPPROBE_RETURN_IF_ERROR(list("offset_dims", g.offset_dims));
    OPPROBE_RETURN_IF_ERROR(list("collapsed_slice_dims", g.collapsed_slice_dims));
    OPPROBE_RETURN_IF_ERROR(list("operand_batching_dims", g.operand_batching_dims));
    OPPROBE_RETURN_IF_ERROR(list("start_indices_batching_dims", g.start_indices_batching_dims));
    OPPROBE_RETURN_IF_ERROR(list("start_index_map", g.start_index_map));
    if (const Attr* v = a->Get("index_vector_dim")) {
      if (v->kind != Attr::Kind::kInt) return Err(v->pos, "gather: index_vector_dim must be an integer");
      g.index_vector_dim = v->i;
    }
    i.gather_dimension_numbers = g;
    OPPROBE_ASSIGN_OR_RETURN(i.mutable_rare().gather_slice_sizes, IntsAttr(op, "slice_sizes"));
    i.indices_are_sorted = BoolAttr(op, "indices_are_sorted");
    return Status::Ok();
  }

  Status ScatterDims(const Operation& op, Instruction& i) {
    const Attr* a = op.Find("scatter_dimension_numbers");
    if (!a || a->kind != Attr::Kind::kDict) return OpErr(op, "missing or malformed scatter_dimension_numbers");
    ScatterDimensionNumbers s;
    auto list = [&](const char* key, std::vector<int64_t>& out) -> Status {
      if (const Attr* v = a->Get(key)) { OPPROBE_ASSIGN_OR_RETURN(out, Ints(op, *v)); }
      return Status::Ok();
    };
    OPPROBE_RETURN_IF_ERROR(list("update_window_dims", s.update_window_dims));
    OPPROBE_RETURN_IF_ERROR(list("inserted_window_dims", s.inserted_window_dims));
    OPPROBE_RETURN_IF_ERROR(list("input_batching_dims", s.input_batching_dims));
    OPPROBE_RETURN_IF_ERROR(list("scatter_indices_batching_dims", s.scatter_indices_batching_dims));
    OPPROBE_RETURN_IF_ERROR(list("scatter_dims_to_operand_dims", s.scatter_dims_to_operand_dims));
    if (const Attr* v = a->Get("index_vector_dim")) {
      if (v->kind != Attr::Kind::kInt) return Err(v->pos, "scatter: index_vector_dim must be an integer");
      s.index_vector_dim = v->i;
    }
    i.scatter_dimension_numbers = s;
    i.indices_are_sorted = BoolAttr(op, "indices_are_sorted");
    i.unique_indices = BoolAttr(op, "unique_indices");
    return Status::Ok();
  }

  // Ops with one body region called as to_apply (reduce, reduce_window, scatter, sort, map, all_reduce,
  // reduce_scatter).
  Expected<std::vector<Instruction*>> WithBody(const Operation& op, const std::string& base,
                                               const std::vector<Instruction*>& ops, const std::vector<Shape>& shapes,
                                               const OpMetadata& md) {
    if (op.regions.size() != 1) return OpErr(op, "expected one region");
    if (shapes.empty()) return OpErr(op, "expected results");
    std::unique_ptr<Instruction> i;
    if (base == "reduce") {
      if (ops.size() != 2 * shapes.size()) return OpErr(op, "expected an init value per input");
      i = Make(Opcode::kReduce, {}, ops);
      OPPROBE_ASSIGN_OR_RETURN(i->dimensions, IntsAttr(op, "dimensions"));
    } else if (base == "reduce_window") {
      if (ops.size() != 2 * shapes.size()) return OpErr(op, "expected an init value per input");
      i = Make(Opcode::kReduceWindow, {}, ops);
      OPPROBE_ASSIGN_OR_RETURN(i->window, WindowFromAttrs(op, ops[0]->shape.rank(), true));
    } else if (base == "scatter") {
      if (ops.size() != 2 * shapes.size() + 1) return OpErr(op, "expected inputs, indices and an update per input");
      i = Make(Opcode::kScatter, {}, ops);
      OPPROBE_RETURN_IF_ERROR(ScatterDims(op, *i));
    } else if (base == "sort") {
      if (ops.size() != shapes.size() || ops.empty()) return OpErr(op, "operands and results differ in number");
      i = Make(Opcode::kSort, {}, ops);
      int64_t dim = -1;
      if (op.Find("dimension")) { OPPROBE_ASSIGN_OR_RETURN(dim, IntAttr(op, "dimension")); }
      if (dim < 0) dim += ops[0]->shape.rank();
      i->dimensions = {dim};
      i->is_stable = BoolAttr(op, "is_stable");
    } else if (base == "map") {
      if (shapes.size() != 1) return OpErr(op, "expected one result");
      i = Make(Opcode::kMap, {}, ops);
      OPPROBE_ASSIGN_OR_RETURN(i->dimensions, OptInts(op, "dimensions"));
    } else {  // all_reduce, reduce_scatter
      i = Make(base == "all_reduce" ? Opcode::kAllReduce : Opcode::kReduceScatter, {}, ops);
      if (base == "reduce_scatter") {
        OPPROBE_ASSIGN_OR_RETURN(int64_t d, IntAttr(op, "scatter_dimension"));
        i->dimensions = {d};
      }
      OPPROBE_RETURN_IF_ERROR(CollectiveAttrs(op, *i));
    }
    OPPROBE_ASSIGN_OR_RETURN(Computation * body, RegionComputation(op, op.regions[0], "region"));
    i->called_computations = {body};
    return Results(std::move(i), shapes, md);
  }

  // replica_groups, channel handle and use_global_device_ids, kept as HLO text attributes.
  Status CollectiveAttrs(const Operation& op, Instruction& i) {
    if (const Attr* g = op.Find("replica_groups")) {
      OPPROBE_ASSIGN_OR_RETURN(auto flat, Ints(op, *g));
      int64_t cols = g->type.dims.size() == 2 ? g->type.dims[1] : static_cast<int64_t>(flat.size());
      // A [groups, size] tensor: one group per row (an empty tensor: no groups, every device in one).
      std::vector<std::vector<int64_t>> groups;
      for (size_t k = 0; k < flat.size(); ++k) {
        if (groups.empty() || (cols > 0 && k % static_cast<size_t>(cols) == 0)) groups.emplace_back();
        groups.back().push_back(flat[k]);
      }
      i.mutable_rare().replica_groups.groups = std::move(groups);
    }
    if (const Attr* c = op.Find("channel_handle"); c && c->kind == Attr::Kind::kDict) {
      if (const Attr* h = c->Get("handle"); h && h->kind == Attr::Kind::kInt && h->i > 0)
        i.mutable_rare().channel_id = h->i;
    }
    if (BoolAttr(op, "use_global_device_ids")) i.use_global_device_ids = true;
    return Status::Ok();
  }

  Expected<std::vector<Instruction*>> Collective(const Operation& op, const std::string& base,
                                                 const std::vector<Instruction*>& ops, const std::vector<Shape>& shapes,
                                                 const OpMetadata& md) {
    if (ops.empty()) return OpErr(op, "expected operands");
    std::unique_ptr<Instruction> i;
    if (base == "all_gather") {
      i = Make(Opcode::kAllGather, {}, ops);
      OPPROBE_ASSIGN_OR_RETURN(int64_t d, IntAttr(op, "all_gather_dim"));
      i->dimensions = {d};
    } else if (base == "all_to_all") {
      i = Make(Opcode::kAllToAll, {}, ops);
      OPPROBE_ASSIGN_OR_RETURN(int64_t d, IntAttr(op, "split_dimension"));
      i->dimensions = {d};
    } else {
      i = Make(base == "collective_permute" ? Opcode::kCollectivePermute : Opcode::kCollectiveBroadcast, {}, ops);
      if (const Attr* p = op.Find("source_target_pairs")) {
        OPPROBE_ASSIGN_OR_RETURN(auto flat, Ints(op, *p));
        if (flat.size() % 2) return OpErr(op, "source_target_pairs must be pairs");
        for (size_t k = 0; k < flat.size(); k += 2)
          i->mutable_rare().source_target_pairs.push_back({flat[k], flat[k + 1]});
      }
    }
    OPPROBE_RETURN_IF_ERROR(CollectiveAttrs(op, *i));
    return Results(std::move(i), shapes, md);
  }

  Expected<std::vector<Instruction*>> CustomCall(const Operation& op, const std::vector<Instruction*>& ops,
                                                 const std::vector<Shape>& shapes, const OpMetadata& md) {
    const Attr* target = op.Find("call_target_name");
    if (!target || target->kind != Attr::Kind::kString) return OpErr(op, "missing call_target_name");
    auto i = Make(Opcode::kCustomCall, {}, ops);
    i->custom_call_target = target->text;
    if (const Attr* bc = op.Find("backend_config"); bc && bc->kind == Attr::Kind::kString)
      i->mutable_rare().backend_config = bc->text;
    // A typed-FFI call's configuration is a dictionary, which XLA keeps as its MLIR text.
    if (const Attr* bc = op.Find("mhlo.backend_config"); bc && bc->kind == Attr::Kind::kDict && bc->end > bc->pos)
      i->mutable_rare().backend_config = std::string(m_.text.substr(bc->pos, bc->end - bc->pos));
    if (const Attr* v = op.Find("api_version"); v && v->kind == Attr::Kind::kInt) {
      static constexpr const char* kVersions[] = {"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL",
                                                  "API_VERSION_STATUS_RETURNING",
                                                  "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};
      if (v->i >= 2 && v->i <= 4) i->mutable_rare().custom_call_api_version = kVersions[v->i];
    }
    if (BoolAttr(op, "has_side_effect")) i->custom_call_has_side_effect = true;
    // result_layouts: the layout of each result.
    std::vector<Shape> laid_out = shapes;
    if (const Attr* rl = op.Find("result_layouts");
        rl && rl->kind == Attr::Kind::kArray && rl->elements.size() == shapes.size()) {
      for (size_t k = 0; k < shapes.size(); ++k) {
        OPPROBE_ASSIGN_OR_RETURN(auto m, Ints(op, rl->elements[k]));
        if (!laid_out[k].IsArray() || static_cast<int>(m.size()) != laid_out[k].rank()) continue;
        std::vector<int64_t> sorted = m;
        std::sort(sorted.begin(), sorted.end());
        bool permutation = true;
        for (size_t d = 0; d < sorted.size(); ++d) permutation = permutation && sorted[d] == static_cast<int64_t>(d);
        if (permutation) laid_out[k].set_layout(m);
      }
    }
    if (const Attr* cc = op.Find("called_computations"); cc && cc->kind == Attr::Kind::kArray) {
      for (const auto& e : cc->elements) {
        if (e.kind != Attr::Kind::kSymbol) return Err(e.pos, "custom_call: called_computations must be symbols");
        OPPROBE_ASSIGN_OR_RETURN(Computation * c, FunctionComputation(op, e.text));
        i->called_computations.push_back(c);
      }
    }
    if (shapes.empty()) {  // side effects only: an empty tuple
      i->shape = Shape::Tuple({});
      Add(std::move(i), md);
      return std::vector<Instruction*>{};
    }
    // A custom call with several results returns one tuple of them.
    return Results(std::move(i), laid_out, md);
  }

  // XlaBuilder::BroadcastInDim, which XLA's translation calls: a broadcast to the output dims with the operand's
  // own sizes at the mapped dimensions; when an operand dimension of size 1 is expanded, that result is then
  // reshaped to drop such dimensions and broadcast again to the output.
  Expected<Instruction*> BroadcastInDim(const Operation& op, Instruction* x, const Shape& out,
                                        const std::vector<int64_t>& dims, const OpMetadata& md) {
    const int rank = x->shape.rank();
    if (static_cast<int>(dims.size()) != rank || !x->shape.IsArray() || !out.IsArray())
      return OpErr(op, "broadcast dimensions do not match the operand's rank");
    std::vector<int64_t> in_dims = out.dimensions();
    std::vector<bool> in_dynamic(in_dims.size(), false);
    for (int k = 0; k < rank; ++k) {
      int64_t d = dims[static_cast<size_t>(k)];
      if (d < 0 || d >= out.rank()) return OpErr(op, "broadcast dimension out of range of the result's rank");
      in_dims[static_cast<size_t>(d)] = x->shape.dimensions(k);
      in_dynamic[static_cast<size_t>(d)] = x->shape.is_dynamic_dimension(k);
    }
    for (int k = 0; k < out.rank(); ++k)
      if (out.is_dynamic_dimension(k) && !in_dynamic[static_cast<size_t>(k)]) {
        bool mapped = std::find(dims.begin(), dims.end(), k) != dims.end();
        if (!mapped) in_dynamic[static_cast<size_t>(k)] = true;
      }
    Shape in_shape = Shape::Array(out.element_type(), in_dims);
    for (size_t k = 0; k < in_dynamic.size(); ++k)
      if (in_dynamic[k]) in_shape.set_dynamic_dimension(static_cast<int>(k), true);
    auto b = Make(Opcode::kBroadcast, in_shape, {x});
    b->dimensions = dims;
    Instruction* first = Add(std::move(b), md);
    if (in_dims == out.dimensions()) {
      first->shape = out;
      return first;
    }
    std::vector<int64_t> kept_dims, kept;
    for (int k = 0; k < out.rank(); ++k) {
      if (in_dims[static_cast<size_t>(k)] == 1 && out.dimensions(k) != 1) continue;
      kept_dims.push_back(in_dims[static_cast<size_t>(k)]);
      kept.push_back(k);
    }
    Instruction* reshaped = Add(Opcode::kReshape, Shape::Array(out.element_type(), kept_dims), {first}, md);
    auto second = Make(Opcode::kBroadcast, out, {reshaped});
    second->dimensions = kept;
    return Add(std::move(second), md);
  }

  // chlo.broadcast_*: operands broadcast to the result's dims (numpy rules, or broadcast_dimensions), then the op.
  Expected<std::vector<Instruction*>> ChloBroadcast(const Operation& op, Opcode opcode, std::vector<Instruction*> ops,
                                                    const std::vector<Shape>& shapes, const OpMetadata& md) {
    const size_t arity = opcode == Opcode::kSelect ? 3 : 2;
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, arity));
    OPPROBE_RETURN_IF_ERROR(CheckResults(op, shapes, 1));
    const Shape& out = shapes[0];
    OPPROBE_ASSIGN_OR_RETURN(auto bdims, OptInts(op, "broadcast_dimensions"));
    for (auto*& x : ops) {
      if (x->shape.dimensions() == out.dimensions()) continue;
      Shape target = Shape::Array(x->shape.element_type(), out.dimensions());
      const int rank = x->shape.rank();
      std::vector<int64_t> dims;
      if (!bdims.empty() && static_cast<int>(bdims.size()) == rank) {
        dims = bdims;
      } else {
        if (rank > out.rank()) return OpErr(op, "an operand of higher rank than the result");
        for (int d = 0; d < rank; ++d) dims.push_back(out.rank() - rank + d);
      }
      OPPROBE_ASSIGN_OR_RETURN(x, BroadcastInDim(op, x, target, dims, md));
    }
    auto i = Make(opcode, out, ops);
    if (opcode == Opcode::kCompare) {
      std::string dir = EnumAttr(op, "comparison_direction");
      auto d = ComparisonDirectionFromName(dir);
      if (!d) return OpErr(op, fmt::format("unknown comparison direction {}", support::Quote(dir)));
      i->comparison_direction = *d;
      std::string type = EnumAttr(op, "compare_type");
      i->mutable_rare().comparison_type =
          type.empty() || type == "NOTYPE" ? DefaultComparisonType(ops[0]->shape.element_type()) : type;
    }
    return std::vector<Instruction*>{Add(std::move(i), md)};
  }

  // while: the operands and captured outer values in one tuple; the condition and body take it as their
  // parameter; the body returns the new carried values and the captured ones unchanged.
  Expected<std::vector<Instruction*>> While(const Operation& op, const std::vector<Shape>& shapes,
                                            const OpMetadata& md) {
    if (op.regions.size() != 2) return OpErr(op, "expected a cond and a body region");
    OPPROBE_ASSIGN_OR_RETURN(std::vector<Instruction*> ops, Operands(op));
    if (ops.size() != shapes.size()) return OpErr(op, "operands and results differ in number");
    std::vector<Value> captured;
    FreeValues(op.regions, captured);
    std::vector<Instruction*> all = ops;
    for (const auto& v : captured) {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * c, Use(v));
      all.push_back(c);
    }
    const bool tuple = all.size() != 1;
    Instruction* init = tuple ? Tuple(all, md) : all[0];
    const Shape state = init->shape;
    OPPROBE_ASSIGN_OR_RETURN(Computation * cond, CapturingRegion(op, op.regions[0], "region", state, tuple, ops.size(),
                                                                 captured, false, false));
    OPPROBE_ASSIGN_OR_RETURN(Computation * body, CapturingRegion(op, op.regions[1], "region", state, tuple, ops.size(),
                                                                 captured, true, tuple));
    auto w = Make(Opcode::kWhile, state, {init});
    w->called_computations = {body, cond};
    Instruction* wi = Add(std::move(w), md);
    if (!tuple) return std::vector<Instruction*>{wi};
    std::vector<Instruction*> parts = Unpack(wi, md);
    parts.resize(ops.size());
    return parts;
  }

  // case/if: each branch's parameter is what it uses from outside (one value as it is, several as a tuple,
  // none an empty tuple); the results come back as one value or a tuple.
  Expected<std::vector<Instruction*>> Conditional(const Operation& op, const std::vector<Shape>& shapes,
                                                  const OpMetadata& md, bool is_if) {
    if (op.regions.empty() || (is_if && op.regions.size() != 2)) return OpErr(op, "expected branch regions");
    OPPROBE_RETURN_IF_ERROR(CheckArity(op, 1));
    OPPROBE_ASSIGN_OR_RETURN(Instruction * index, Use(op.operands[0]));
    std::vector<Instruction*> operands = {index};
    std::vector<Computation*> branches;
    const bool tuple_result = shapes.size() != 1;
    for (size_t b = 0; b < op.regions.size(); ++b) {
      std::vector<Value> captured;
      FreeValues({op.regions[b]}, captured);
      std::vector<Instruction*> values;
      for (const auto& v : captured) {
        OPPROBE_ASSIGN_OR_RETURN(Instruction * c, Use(v));
        values.push_back(c);
      }
      const bool tuple_param = values.size() != 1;
      Instruction* arg = tuple_param ? Tuple(values, md) : values[0];
      operands.push_back(arg);
      OPPROBE_ASSIGN_OR_RETURN(Computation * c, CapturingRegion(op, op.regions[b], "region", arg->shape, tuple_param, 0,
                                                                captured, false, tuple_result));
      branches.push_back(c);
    }
    auto i = Make(Opcode::kConditional, {}, operands);
    i->called_computations = branches;
    if (shapes.empty()) {
      i->shape = Shape::Tuple({});
      Add(std::move(i), md);
      return std::vector<Instruction*>{};
    }
    return Results(std::move(i), shapes, md);
  }

  const ParsedModule& m_;
  std::map<std::string, const Function*> functions_;
  std::map<std::string, Computation*> converted_;
  std::set<std::string> in_progress_;
  std::vector<Frame> frames_;
  std::unique_ptr<Builder> root_;
  int nesting_ = 0;
  bool unknown_ = false;  // ConvertKnownOp fell back to Unknown
};

}  // namespace

Expected<std::unique_ptr<Module>> ConvertToHlo(const ParsedModule& module) { return Converter(module).Run(); }

bool HasOpConversion(std::string_view op_name) { return Converter::FindConversion(op_name) != nullptr; }

std::vector<std::string_view> OpConversionNames() { return Converter::ConversionNames(); }

}  // namespace opprobe::hlo::stablehlo
