#include "analyzer/lowering/building_blocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace opprobe::analyzer::lowering {

// ---- constants ----
Instruction* Scalar(Builder& b, PrimitiveType t, double v) { return b.ConstantScalar(t, v); }
Instruction* ScalarC(Builder& b, PrimitiveType t, std::complex<double> v) {
  if (!hlo::IsComplex(t)) return b.ConstantScalar(t, v.real());
  return b.Constant(hlo::Literal::ScalarComplex(t, v));
}
Instruction* ScalarOf(Builder& b, PrimitiveType t, const Value& v) {
  if (v.kind == Value::Kind::kComplex) return ScalarC(b, t, v.c);
  if (v.kind == Value::Kind::kInt && hlo::IsInteger(t) && hlo::BitWidth(t) == 64)
    return [&] {
      hlo::Literal l(Shape::Scalar(t));
      l.SetFromInt64(0, v.i);
      return b.Constant(std::move(l));
    }();
  return b.ConstantScalar(t, v.AsDouble());
}
Instruction* Full(Builder& b, PrimitiveType t, double v, const std::vector<int64_t>& dims) {
  return b.Full(t, v, dims);
}
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
  if (dims.empty() && empty_is_all) return DimRange(0, rank);
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

std::vector<int64_t> AllDims(Instruction* x) { return DimRange(0, x->shape.rank()); }

std::vector<int64_t> DimRange(int64_t begin, int64_t end) {
  std::vector<int64_t> d(static_cast<size_t>(std::max<int64_t>(end - begin, 0)));
  std::iota(d.begin(), d.end(), begin);
  return d;
}

int64_t Numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

hlo::ScatterDimensionNumbers ScatterAlongDim(int64_t dim, int64_t rank) {
  hlo::ScatterDimensionNumbers dn;
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim) dn.update_window_dims.push_back(i);
  dn.inserted_window_dims = {dim};
  dn.scatter_dims_to_operand_dims = {dim};
  dn.index_vector_dim = 1;
  return dn;
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
