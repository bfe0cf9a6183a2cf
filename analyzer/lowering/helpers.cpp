#include "analyzer/lowering/helpers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace opprobe::analyzer::lowering {

hlo::Shape ShapeOf(const TensorMeta& m) { return Shape::Array(m.dtype, m.sizes); }

Ctx::Ctx(const Node& n, Builder& builder) : node(n), b(builder) {
  params_.resize(n.args.size(), nullptr);
  lists_.resize(n.args.size());
  for (size_t i = 0; i < n.args.size(); ++i) {
    const Value& v = n.args[i].value;
    if (v.kind == Value::Kind::kTensor) {
      params_[i] = b.NextParameter(ShapeOf(v.tensor));
    } else if (v.kind == Value::Kind::kTensorList) {
      for (const auto& t : v.tensors) lists_[i].push_back(t ? b.NextParameter(ShapeOf(*t)) : nullptr);
    }
  }
}

size_t Ctx::Index(const std::string& name, size_t pos) const {
  for (size_t i = 0; i < node.args.size(); ++i)
    if (!node.args[i].name.empty() && node.args[i].name == name) return i;
  if (pos < node.args.size() && (node.args[pos].name.empty() || node.args[pos].name == name)) return pos;
  return node.args.size();
}

Instruction* Ctx::T(const std::string& name, size_t pos) const {
  size_t i = Index(name, pos);
  return i < params_.size() ? params_[i] : nullptr;
}

std::vector<Instruction*> Ctx::TList(const std::string& name, size_t pos) const {
  size_t i = Index(name, pos);
  return i < lists_.size() ? lists_[i] : std::vector<Instruction*>{};
}

const TensorMeta* Ctx::Meta(const std::string& name, size_t pos) const {
  const Value* v = V(name, pos);
  return v && v->is_tensor() ? &v->tensor : nullptr;
}

int64_t Ctx::Int(const std::string& name, size_t pos, int64_t def) const {
  const Value* v = V(name, pos);
  if (!v) return def;
  switch (v->kind) {
    case Value::Kind::kInt: return v->i;
    case Value::Kind::kBool: return v->b ? 1 : 0;
    case Value::Kind::kFloat: return static_cast<int64_t>(v->f);
    case Value::Kind::kIntList: return v->ints.size() == 1 ? v->ints[0] : def;
    default: return def;
  }
}

std::optional<int64_t> Ctx::OptInt(const std::string& name, size_t pos) const {
  const Value* v = V(name, pos);
  if (!v || v->is_none()) return std::nullopt;
  if (v->kind == Value::Kind::kInt) return v->i;
  if (v->kind == Value::Kind::kBool) return v->b ? 1 : 0;
  if (v->kind == Value::Kind::kIntList && v->ints.size() == 1) return v->ints[0];
  return std::nullopt;
}

double Ctx::Double(const std::string& name, size_t pos, double def) const {
  const Value* v = V(name, pos);
  if (!v) return def;
  switch (v->kind) {
    case Value::Kind::kInt: case Value::Kind::kBool: case Value::Kind::kFloat: return v->AsDouble();
    case Value::Kind::kComplex: return v->c.real();
    default: return def;
  }
}

bool Ctx::Bool(const std::string& name, size_t pos, bool def) const {
  const Value* v = V(name, pos);
  if (!v) return def;
  if (v->kind == Value::Kind::kBool) return v->b;
  if (v->kind == Value::Kind::kInt) return v->i != 0;
  return def;
}

std::vector<int64_t> Ctx::Ints(const std::string& name, size_t pos, std::vector<int64_t> def) const {
  auto v = OptInts(name, pos);
  return v ? *v : def;
}

std::optional<std::vector<int64_t>> Ctx::OptInts(const std::string& name, size_t pos) const {
  const Value* v = V(name, pos);
  if (!v || v->is_none()) return std::nullopt;
  if (v->kind == Value::Kind::kIntList) return v->ints;
  if (v->kind == Value::Kind::kInt) return std::vector<int64_t>{v->i};
  return std::nullopt;
}

std::vector<bool> Ctx::Bools(const std::string& name, size_t pos, std::vector<bool> def) const {
  const Value* v = V(name, pos);
  if (!v || v->kind != Value::Kind::kBoolList) return def;
  return v->bools;
}

std::optional<PrimitiveType> Ctx::Dtype(const std::string& name, size_t pos) const {
  const Value* v = V(name, pos);
  if (!v || v->kind != Value::Kind::kDtype) return std::nullopt;
  return v->dtype;
}

std::string Ctx::Str(const std::string& name, size_t pos, std::string def) const {
  const Value* v = V(name, pos);
  if (!v || v->kind != Value::Kind::kString) return def;
  return v->s;
}

const TensorMeta* Ctx::Out(size_t i) const {
  size_t k = 0;
  for (const auto& o : node.outputs) {
    if (o.is_none()) continue;
    if (o.kind == Value::Kind::kTensor) {
      if (k == i) return &o.tensor;
      ++k;
    } else if (o.kind == Value::Kind::kTensorList) {
      for (const auto& t : o.tensors) {
        if (!t) continue;
        if (k == i) return &*t;
        ++k;
      }
    } else {
      if (k == i) return nullptr;
      ++k;
    }
  }
  return nullptr;
}

PrimitiveType Ctx::OutType(size_t i, PrimitiveType fallback) const {
  const TensorMeta* m = Out(i);
  return m ? m->dtype : fallback;
}

Expected<Instruction*> Ctx::Req(const std::string& name, size_t pos) const {
  Instruction* t = T(name, pos);
  if (!t) return Bad(*this, fmt::format("tensor argument '{}' is missing", name));
  return t;
}

Expected<Instruction*> Ctx::Operand(const std::string& name, size_t pos, PrimitiveType type,
                                    const std::vector<int64_t>& dims) const {
  const Value* v = V(name, pos);
  if (!v) return Bad(*this, fmt::format("argument '{}' is missing", name));
  if (v->kind == Value::Kind::kTensor) {
    Instruction* p = T(name, pos);
    Instruction* x = Conv(b, p, type);
    if (x->shape.dimensions() != dims) {
      auto bd = BroadcastShapes(x->shape.dimensions(), dims);
      if (bd != dims) return Bad(*this, fmt::format("argument '{}' ({}) does not broadcast to [{}]", name,
                                                    v->tensor.ToString(), fmt::join(dims, ",")));
      x = Bcast(b, x, dims);
    }
    return x;
  }
  switch (v->kind) {
    case Value::Kind::kInt: case Value::Kind::kFloat: case Value::Kind::kBool: case Value::Kind::kComplex: {
      Instruction* s = ScalarOf(b, type, *v);
      return dims.empty() ? s : b.Broadcast(s, dims, {});
    }
    default:
      return Bad(*this, fmt::format("argument '{}' is {}, not a tensor or number", name, v->ToString()));
  }
}

Status Bad(const Ctx& c, const std::string& why) {
  return Unimplemented(fmt::format("{}: {}", c.node.qualified_name(), why));
}

Expected<LoweredOp> Done(const Ctx& c, std::vector<Instruction*> outs) {
  if (!c.b.ok()) return c.b.status().WithContext("lowering " + c.node.qualified_name());
  if (!c.node.outputs.empty()) {
    std::vector<std::optional<TensorMeta>> want;  // nullopt: a non-tensor (scalar) output
    for (const auto& o : c.node.outputs) {
      if (o.is_none()) continue;
      if (o.kind == Value::Kind::kTensor) want.push_back(o.tensor);
      else if (o.kind == Value::Kind::kTensorList) {
        for (const auto& t : o.tensors)
          if (t) want.push_back(*t);
      } else {
        want.push_back(std::nullopt);
      }
    }
    // An in-place op that returns nothing (`_foreach_add_`, `_fused_adam_`: `-> ()`, recorded as None) has
    // no output to check: its lowering's values are the tensors it writes.
    bool void_op = want.empty() && std::all_of(c.node.outputs.begin(), c.node.outputs.end(),
                                               [](const Value& o) { return o.is_none(); });
    if (void_op) {
      LoweredOp op;
      op.outputs = std::move(outs);
      return op;
    }
    if (want.size() != outs.size())
      return Internal(fmt::format("lowering of {} produced {} outputs but PyTorch returned {}", c.node.qualified_name(),
                                  outs.size(), want.size()));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!outs[i]) return Internal(fmt::format("{}: output {} missing", c.node.qualified_name(), i));
      const Shape& s = outs[i]->shape;
      if (!want[i]) {
        if (s.rank() != 0)
          return Internal(fmt::format("{}: output {} is {} but the op returns a number", c.node.qualified_name(), i,
                                      s.ToString(false)));
        continue;
      }
      bool dims_ok = s.rank() == want[i]->rank();
      for (int d = 0; dims_ok && d < s.rank(); ++d) {
        int64_t have = s.dimensions()[static_cast<size_t>(d)], need = want[i]->sizes[static_cast<size_t>(d)];
        // A bounded dynamic dim (XLA's `<=N`) holds its bound; the recorded size is one instance.
        dims_ok = s.is_dynamic_dimension(d) ? need <= have : need == have;
      }
      if (s.element_type() != want[i]->dtype || !dims_ok)
        return Internal(fmt::format("lowering of {} produced {} but PyTorch returned {}{}", c.node.qualified_name(),
                                    s.ToString(false), want[i]->ToString(),
                                    want.size() == 1 ? "" : fmt::format(" (output {})", i)));
    }
  }
  LoweredOp op;
  op.outputs = std::move(outs);
  return op;
}

// ---- types ----
namespace {
int Category(PrimitiveType t) {
  if (t == PrimitiveType::PRED) return 0;
  if (hlo::IsInteger(t)) return 1;
  if (hlo::IsFloatingPoint(t)) return 2;
  if (hlo::IsComplex(t)) return 3;
  return -1;
}
PrimitiveType SignedOfWidth(int bits) {
  switch (bits) {
    case 8: return PrimitiveType::S8;
    case 16: return PrimitiveType::S16;
    case 32: return PrimitiveType::S32;
    default: return PrimitiveType::S64;
  }
}
PrimitiveType ToComplex(PrimitiveType t) { return t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64; }
}  // namespace

bool IsFloatish(PrimitiveType t) { return hlo::IsFloatingPoint(t) || hlo::IsComplex(t); }
PrimitiveType DefaultFloat() { return PrimitiveType::F32; }
PrimitiveType FloatType(PrimitiveType t) { return IsFloatish(t) ? t : PrimitiveType::F32; }

PrimitiveType Promote(PrimitiveType a, PrimitiveType b) {
  if (a == PrimitiveType::PRIMITIVE_TYPE_INVALID) return b;
  if (b == PrimitiveType::PRIMITIVE_TYPE_INVALID || a == b) return a;
  int ca = Category(a), cb = Category(b);
  if (ca != cb) {
    PrimitiveType hi = ca > cb ? a : b, lo = ca > cb ? b : a;
    if (hlo::IsComplex(hi) && lo == PrimitiveType::F64) return PrimitiveType::C128;
    return hi;
  }
  switch (ca) {
    case 1: {
      bool ua = hlo::IsUnsignedInteger(a), ub = hlo::IsUnsignedInteger(b);
      int wa = hlo::BitWidth(a), wb = hlo::BitWidth(b);
      if (ua == ub) return wa >= wb ? a : b;
      int wu = ua ? wa : wb, ws = ua ? wb : wa;
      return ws > wu ? SignedOfWidth(ws) : SignedOfWidth(std::min(64, 2 * wu));
    }
    case 2:
      if ((a == PrimitiveType::F16 && b == PrimitiveType::BF16) || (a == PrimitiveType::BF16 && b == PrimitiveType::F16))
        return PrimitiveType::F32;
      return hlo::BitWidth(a) >= hlo::BitWidth(b) ? a : b;
    case 3:
      return hlo::BitWidth(a) >= hlo::BitWidth(b) ? a : b;
    default:
      return a;
  }
}

namespace {
PrimitiveType CombineCategories(PrimitiveType higher, PrimitiveType lower) {
  using P = PrimitiveType;
  if (higher == P::PRIMITIVE_TYPE_INVALID) return lower;
  if (lower == P::PRIMITIVE_TYPE_INVALID) return higher;
  if (hlo::IsComplex(higher)) return higher;
  if (hlo::IsComplex(lower)) return hlo::IsFloatingPoint(higher) ? ToComplex(higher) : lower;
  if (hlo::IsFloatingPoint(higher)) return higher;
  if (higher == P::PRED || hlo::IsFloatingPoint(lower)) return Promote(higher, lower);
  return higher;
}
}  // namespace

PrimitiveType ResultType(const std::vector<const Value*>& values) {
  using P = PrimitiveType;
  P dim = P::PRIMITIVE_TYPE_INVALID, zero = P::PRIMITIVE_TYPE_INVALID, wrapped = P::PRIMITIVE_TYPE_INVALID;
  for (const Value* v : values) {
    if (!v) continue;
    switch (v->kind) {
      case Value::Kind::kTensor:
        if (v->tensor.rank() > 0) dim = Promote(dim, v->tensor.dtype);
        else zero = Promote(zero, v->tensor.dtype);
        break;
      case Value::Kind::kBool: wrapped = Promote(wrapped, P::PRED); break;
      case Value::Kind::kInt: wrapped = Promote(wrapped, P::S64); break;
      case Value::Kind::kFloat: wrapped = Promote(wrapped, P::F32); break;
      case Value::Kind::kComplex: wrapped = Promote(wrapped, P::C64); break;
      default: break;
    }
  }
  P r = CombineCategories(dim, CombineCategories(zero, wrapped));
  return r == P::PRIMITIVE_TYPE_INVALID ? P::F32 : r;
}

// ---- constants ----
Instruction* Scalar(Builder& b, PrimitiveType t, double v) { return b.ConstantScalar(t, v); }
Instruction* ScalarC(Builder& b, PrimitiveType t, std::complex<double> v) {
  if (!hlo::IsComplex(t)) return b.ConstantScalar(t, v.real());
  return b.Constant(hlo::Literal::ScalarComplex(t, v));
}
Instruction* ScalarOf(Builder& b, PrimitiveType t, const Value& v) {
  if (v.kind == Value::Kind::kComplex) return ScalarC(b, t, v.c);
  if (v.kind == Value::Kind::kInt && hlo::IsInteger(t) && hlo::BitWidth(t) == 64) return [&] {
      hlo::Literal l(Shape::Scalar(t));
      l.SetFromInt64(0, v.i);
      return b.Constant(std::move(l));
    }();
  return b.ConstantScalar(t, v.AsDouble());
}
Instruction* Full(Builder& b, PrimitiveType t, double v, const std::vector<int64_t>& dims) { return b.Full(t, v, dims); }
Instruction* FullLike(Builder& b, Instruction* like, double v) {
  return b.Full(like->shape.element_type(), v, like->shape.dimensions());
}

Instruction* ConstS64(Builder& b, int64_t v) {
  hlo::Literal l(Shape::Scalar(PrimitiveType::S64));
  l.SetFromInt64(0, v);
  return b.Constant(std::move(l));
}

namespace {
Instruction* IntLimit(Builder& b, PrimitiveType t, bool max) {
  hlo::Literal l(Shape::Scalar(t));
  int w = hlo::BitWidth(t);
  if (hlo::IsUnsignedInteger(t)) {
    if (max) {
      if (w == 64) l.Set<uint64_t>(0, std::numeric_limits<uint64_t>::max());
      else l.SetFromInt64(0, static_cast<int64_t>((uint64_t{1} << w) - 1));
    } else {
      l.SetFromInt64(0, 0);
    }
  } else if (w == 64) {
    l.SetFromInt64(0, max ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min());
  } else {
    l.SetFromInt64(0, max ? (int64_t{1} << (w - 1)) - 1 : -(int64_t{1} << (w - 1)));
  }
  return b.Constant(std::move(l));
}
}  // namespace

Instruction* MaxValue(Builder& b, PrimitiveType t) {
  if (t == PrimitiveType::PRED) return b.ConstantScalar(t, 1);
  if (hlo::IsInteger(t)) return IntLimit(b, t, true);
  return b.ConstantScalar(t, std::numeric_limits<double>::infinity());
}
Instruction* MinValue(Builder& b, PrimitiveType t) {
  if (t == PrimitiveType::PRED) return b.ConstantScalar(t, 0);
  if (hlo::IsInteger(t)) return IntLimit(b, t, false);
  return b.ConstantScalar(t, -std::numeric_limits<double>::infinity());
}

// ---- shapes ----
std::vector<int64_t> Dims(Instruction* x) { return x->shape.dimensions(); }
int64_t Rank(Instruction* x) { return x->shape.rank(); }

std::optional<int64_t> WrapDim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r) return std::nullopt;
  return d < 0 ? d + r : d;
}

std::vector<int64_t> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Instruction* Conv(Builder& b, Instruction* x, PrimitiveType t) { return b.Convert(x, t); }
Instruction* Bcast(Builder& b, Instruction* x, const std::vector<int64_t>& dims) { return b.BroadcastTo(x, dims); }
Instruction* BcastIn(Builder& b, Instruction* x, const std::vector<int64_t>& out_dims,
                     const std::vector<int64_t>& dims_of_out) {
  if (x->shape.dimensions() == out_dims) return x;
  return b.Broadcast(x, out_dims, dims_of_out);
}

Instruction* Add(Builder& b, Instruction* x, Instruction* y) { return b.Binary(Opcode::kAdd, x, y); }
Instruction* Sub(Builder& b, Instruction* x, Instruction* y) { return b.Binary(Opcode::kSubtract, x, y); }
Instruction* Mul(Builder& b, Instruction* x, Instruction* y) { return b.Binary(Opcode::kMultiply, x, y); }
Instruction* Div(Builder& b, Instruction* x, Instruction* y) { return b.Binary(Opcode::kDivide, x, y); }
Instruction* MulScalar(Builder& b, Instruction* x, double v) { return Mul(b, x, FullLike(b, x, v)); }
Instruction* AddScalar(Builder& b, Instruction* x, double v) { return Add(b, x, FullLike(b, x, v)); }
Instruction* Cmp(Builder& b, Instruction* x, Instruction* y, ComparisonDirection d) { return b.Compare(x, y, d); }
Instruction* CmpScalar(Builder& b, Instruction* x, double v, ComparisonDirection d) {
  return b.Compare(x, FullLike(b, x, v), d);
}

// ---- reductions ----
Instruction* Reduce(Builder& b, Instruction* x, const std::vector<int64_t>& dims, Opcode op, Instruction* init) {
  return b.Reduce({x}, {init}, dims, b.ScalarBinaryComputation(op, x->shape.element_type()));
}
Instruction* ReduceSum(Builder& b, Instruction* x, const std::vector<int64_t>& dims) {
  PrimitiveType t = x->shape.element_type();
  if (t == PrimitiveType::PRED) return Reduce(b, x, dims, Opcode::kOr, Scalar(b, t, 0));
  return Reduce(b, x, dims, Opcode::kAdd, Scalar(b, t, 0));
}
Instruction* ReduceMax(Builder& b, Instruction* x, const std::vector<int64_t>& dims) {
  PrimitiveType t = x->shape.element_type();
  return Reduce(b, x, dims, t == PrimitiveType::PRED ? Opcode::kOr : Opcode::kMaximum, MinValue(b, t));
}
Instruction* ReduceMin(Builder& b, Instruction* x, const std::vector<int64_t>& dims) {
  PrimitiveType t = x->shape.element_type();
  return Reduce(b, x, dims, t == PrimitiveType::PRED ? Opcode::kAnd : Opcode::kMinimum, MaxValue(b, t));
}

std::vector<int64_t> KeepDims(const std::vector<int64_t>& dims, const std::vector<int64_t>& reduced) {
  std::vector<int64_t> out = dims;
  for (int64_t d : reduced) out[static_cast<size_t>(d)] = 1;
  return out;
}

Instruction* BcastBack(Builder& b, Instruction* reduced, const std::vector<int64_t>& full_dims,
                       const std::vector<int64_t>& reduced_dims) {
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < static_cast<int64_t>(full_dims.size()); ++i)
    if (std::find(reduced_dims.begin(), reduced_dims.end(), i) == reduced_dims.end()) kept.push_back(i);
  return b.Broadcast(reduced, full_dims, kept);
}

Expected<std::vector<int64_t>> NormDims(const std::vector<int64_t>& dims, int64_t rank, bool empty_is_all) {
  std::vector<int64_t> out;
  if (dims.empty() && empty_is_all) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    auto w = WrapDim(d, rank);
    if (!w) return InvalidInput(fmt::format("dimension {} out of range for rank {}", d, rank));
    if (rank == 0) continue;
    if (std::find(out.begin(), out.end(), *w) == out.end()) out.push_back(*w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Computation* SortComparator(Builder& b, const std::vector<PrimitiveType>& types, bool descending) {
  Builder sub = b.CreateSubBuilder(descending ? "compare-greater-than" : "compare-less-than");
  std::vector<Instruction*> ps;
  for (size_t i = 0; i < types.size(); ++i) {
    ps.push_back(sub.Parameter(static_cast<int64_t>(2 * i), Shape::Scalar(types[i])));
    ps.push_back(sub.Parameter(static_cast<int64_t>(2 * i + 1), Shape::Scalar(types[i])));
  }
  std::string type = hlo::IsFloatingPoint(types[0]) ? "TOTALORDER" : "";
  Instruction* c = sub.Compare(ps[0], ps[1], descending ? ComparisonDirection::kGt : ComparisonDirection::kLt, type);
  return sub.Finish(c);
}

int64_t Numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

double MachineEpsilon(PrimitiveType t) {
  t = hlo::ComplexComponentType(t);
  if (t == PrimitiveType::F64) return std::numeric_limits<double>::epsilon();
  if (t == PrimitiveType::BF16) return 0.0078125;     // 2^-7
  if (t == PrimitiveType::F16) return 0.0009765625;   // 2^-10
  return std::numeric_limits<float>::epsilon();
}

Computation* ReplaceComputation(Builder& b, PrimitiveType t) {
  Builder sub = b.CreateSubBuilder("replace");
  sub.Parameter(0, Shape::Scalar(t));
  Instruction* y = sub.Parameter(1, Shape::Scalar(t));
  return sub.Finish(y);
}

LoopState Loop(Builder& b, const LoopState& init, const std::string& name,
               const std::function<Instruction*(Builder&, const LoopState&)>& cond,
               const std::function<LoopState(Builder&, const LoopState&)>& body) {
  std::vector<Shape> shapes;
  for (Instruction* v : init) shapes.push_back(v->shape);
  Shape ts = Shape::Tuple(shapes);
  auto unpack = [&](Builder& sb, Instruction* t) {
    LoopState s;
    for (size_t i = 0; i < init.size(); ++i) s.push_back(sb.GetTupleElement(t, static_cast<int64_t>(i)));
    return s;
  };
  Builder cb = b.CreateSubBuilder(name + "_cond");
  Computation* cc = cb.Finish(cond(cb, unpack(cb, cb.Parameter(0, ts, "state"))));
  Builder bb = b.CreateSubBuilder(name + "_body");
  Computation* bc = bb.Finish(bb.Tuple(body(bb, unpack(bb, bb.Parameter(0, ts, "state")))));
  Instruction* w = b.While(b.Tuple(init), cc, bc);
  return unpack(b, w);
}

}  // namespace opprobe::analyzer::lowering
