// Matrix and vector products lower to `dot` with explicit dimension numbers (torch_xla CreateMatMul / JAX
// dot_general): mm contracts {1}x{0}, bmm adds batch dims {0}x{0}; addmm/baddbmm/linear add the
// broadcast bias; _grouped_mm is one dot per group, selected by a mask of its offsets; einsum and _trilinear are
// dots too; linalg_cross and trace are slices and a masked sum.
#include <fmt/format.h>

#include <algorithm>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

hlo::DotDimensionNumbers Dn(std::vector<int64_t> lc, std::vector<int64_t> rc, std::vector<int64_t> lb = {},
                            std::vector<int64_t> rb = {}) {
  hlo::DotDimensionNumbers d;
  d.lhs_contracting_dimensions = std::move(lc);
  d.rhs_contracting_dimensions = std::move(rc);
  d.lhs_batch_dimensions = std::move(lb);
  d.rhs_batch_dimensions = std::move(rb);
  return d;
}

// beta * self + alpha * product, self broadcast to the product's dims.
Expected<Instruction*> AddBias(const LoweringContext& ctx, Instruction* prod, PrimitiveType t) {
  Builder& b = ctx.builder;
  double alpha = ctx.Double("alpha", 4, 1), beta = ctx.Double("beta", 3, 1);
  Instruction* r = alpha == 1 ? prod : MulScalar(b, prod, alpha);
  if (beta == 0) return r;  // torch ignores self (even NaN) when beta == 0
  OPPROBE_ASSIGN_OR_RETURN(Instruction * self, ctx.Operand("self", 0, t, Dims(prod)));
  if (beta != 1) self = MulScalar(b, self, beta);
  return Add(b, self, r);
}

Expected<LoweredOp> Mm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("mat2", 1));
  if (x->shape.rank() != 2 || y->shape.rank() != 2) return ctx.Unsupported("mm needs 2-d operands");
  PrimitiveType t = ctx.OutputType(0, Promote(x->shape.element_type(), y->shape.element_type()));
  return ctx.Finish({b.Dot(b.Convert(x, t), b.Convert(y, t), Dn({1}, {0}))});
}

Expected<LoweredOp> Bmm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("mat2", 1));
  if (x->shape.rank() != 3 || y->shape.rank() != 3) return ctx.Unsupported("bmm needs 3-d operands");
  PrimitiveType t = ctx.OutputType(0, Promote(x->shape.element_type(), y->shape.element_type()));
  return ctx.Finish({b.Dot(b.Convert(x, t), b.Convert(y, t), Dn({2}, {1}, {0}, {0}))});
}

Expected<LoweredOp> Addmm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("mat1", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("mat2", 2));
  if (x->shape.rank() != 2 || y->shape.rank() != 2) return ctx.Unsupported("addmm needs 2-d operands");
  PrimitiveType t = ctx.OutputType(0, x->shape.element_type());
  Instruction* d = b.Dot(b.Convert(x, t), b.Convert(y, t), Dn({1}, {0}));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * r, AddBias(ctx, d, t));
  return ctx.Finish({r});
}

// _grouped_mm(self, mat2, offs, bias, out_dtype) (PyTorch 2.8+; Mixtral-style experts in transformers' grouped_mm
// experts): one matmul per group, the groups cut along one dim by `offs`, the groups' cumulative end offsets (int32
// [G]) read at run time. 2-d x 3-d: rows of self [M, K] by group times mat2[g] [K, N] -> [M, N]; 3-d x 2-d: self[g]
// [M, K] times the column group g of mat2 [K, N] -> [M, N]; 2-d x 2-d (the weight gradient): the K range of group g
// -> [G, M, N]; 3-d x 3-d: bmm. Each is the dot of every group with the whole cut dim and a select of the group each
// index belongs to (mask[g, i]: offs[g-1] <= i < offs[g]); indices past the last offset are zero (PyTorch leaves them
// unwritten).
Instruction* GroupMask(Builder& b, Instruction* offs, int64_t len) {
  int64_t G = Dims(offs)[0];
  Instruction* ends = b.Convert(offs, PrimitiveType::S64);
  Instruction* zero = b.Reshape(ConstS64(b, 0), {1});
  Instruction* starts = G == 1 ? zero : b.Concatenate({zero, b.SliceInDim(ends, 0, G - 1, 1, 0)}, 0);
  Shape sh = Shape::Array(PrimitiveType::S64, {G, len});
  Instruction* i = b.Iota(sh, 1);
  return b.Binary(Opcode::kAnd, b.Compare(i, b.Broadcast(starts, {G, len}, {0}), ComparisonDirection::kGe),
                  b.Compare(i, b.Broadcast(ends, {G, len}, {0}), ComparisonDirection::kLt));  // [G, len]
}

Expected<LoweredOp> GroupedMm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("mat2", 1));
  Instruction* offs = ctx.Tensor("offs", 2);
  if (ctx.Tensor("bias", 3)) return ctx.Unsupported("_grouped_mm with a bias");
  PrimitiveType t = x->shape.element_type();
  PrimitiveType out = ctx.OutputType(0, t);
  y = b.Convert(y, t);
  int64_t xr = Rank(x), yr = Rank(y);
  std::vector<int64_t> xd = Dims(x), yd = Dims(y);
  if (xr == 3 && yr == 3) {
    if (xd[0] != yd[0] || xd[2] != yd[1]) return ctx.Unsupported("batch or contracted sizes do not match");
    return ctx.Finish({b.Convert(b.Dot(x, y, Dn({2}, {1}, {0}, {0})), out)});
  }
  if (!offs) return ctx.Unsupported("offs is required unless both operands are 3-d");
  if (Rank(offs) != 1 || !hlo::IsInteger(offs->shape.element_type()) || Dims(offs)[0] < 1)
    return ctx.Unsupported("offs must be a 1-d integer tensor of the groups' end offsets");
  int64_t G = Dims(offs)[0];
  Instruction* r = nullptr;
  if (xr == 2 && yr == 3) {  // [M, K] x [G, K, N]
    int64_t M = xd[0], N = yd[2];
    if (yd[0] != G || xd[1] != yd[1]) return ctx.Unsupported("sizes do not fit a 2-d x 3-d grouped matmul");
    Instruction* all = b.Dot(x, y, Dn({1}, {1}));  // [M, G, N]
    Instruction* keep = b.Broadcast(GroupMask(b, offs, M), {M, G, N}, {1, 0});
    r = ReduceSum(b, b.Select(keep, all, Full(b, t, 0, {M, G, N})), {1});
  } else if (xr == 3 && yr == 2) {  // [G, M, K] x [K, N]
    int64_t M = xd[1], N = yd[1];
    if (xd[0] != G || xd[2] != yd[0]) return ctx.Unsupported("sizes do not fit a 3-d x 2-d grouped matmul");
    Instruction* all = b.Dot(x, y, Dn({2}, {0}));  // [G, M, N]
    Instruction* keep = b.Broadcast(GroupMask(b, offs, N), {G, M, N}, {0, 2});
    r = ReduceSum(b, b.Select(keep, all, Full(b, t, 0, {G, M, N})), {0});
  } else if (xr == 2 && yr == 2) {  // [M, K] x [K, N], K cut into groups
    int64_t M = xd[0], K = xd[1];
    if (yd[0] != K) return ctx.Unsupported("sizes do not fit a 2-d x 2-d grouped matmul");
    Instruction* keep = b.Broadcast(GroupMask(b, offs, K), {G, M, K}, {0, 2});
    Instruction* xs = b.Select(keep, b.Broadcast(x, {G, M, K}, {1, 2}), Full(b, t, 0, {G, M, K}));
    r = b.Dot(xs, y, Dn({2}, {0}));  // [G, M, N]
  } else {
    return ctx.Unsupported("operands must be 2-d or 3-d");
  }
  return ctx.Finish({b.Convert(r, out)});
}

// baddbmm, and with `sum_batches` addbmm (the batch products summed).
Expected<LoweredOp> BatchMatmulAdd(const Node& n, Builder& b, bool sum_batches) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("batch1", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("batch2", 2));
  PrimitiveType t = ctx.OutputType(0, x->shape.element_type());
  Instruction* d = sum_batches ? ReduceSum(b, b.Dot(b.Convert(x, t), b.Convert(y, t), Dn({2}, {1}, {0}, {0})), {0})
                               : b.Dot(b.Convert(x, t), b.Convert(y, t), Dn({2}, {1}, {0}, {0}));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * r, AddBias(ctx, d, t));
  return ctx.Finish({r});
}

Expected<LoweredOp> Baddbmm(const Node& n, Builder& b) { return BatchMatmulAdd(n, b, false); }
Expected<LoweredOp> Addbmm(const Node& n, Builder& b) { return BatchMatmulAdd(n, b, true); }

Expected<LoweredOp> Addmv(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  Instruction* x = ctx.Tensor("mat", 1);
  Instruction* y = ctx.Tensor("vec", 2);
  Instruction* d = nullptr;
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  if (x && y) {
    d = b.Dot(b.Convert(x, t), b.Convert(y, t), Dn({1}, {0}));
  } else {  // addr: outer product of vec1, vec2
    Instruction* v1 = ctx.Tensor("vec1", 1);
    Instruction* v2 = ctx.Tensor("vec2", 2);
    if (!v1 || !v2) return ctx.Unsupported("needs mat/vec or vec1/vec2");
    d = b.Dot(b.Convert(v1, t), b.Convert(v2, t), Dn({}, {}));
  }
  OPPROBE_ASSIGN_OR_RETURN(Instruction * r, AddBias(ctx, d, t));
  return ctx.Finish({r});
}

// The vector products: dot/inner/vdot (vdot conjugates self), mv, and outer/ger.
enum class Product { kDot, kVdot, kMv, kOuter };

Expected<LoweredOp> VectorProduct(const Node& n, Builder& b, Product product) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  Instruction* y = ctx.Tensor("tensor", 1);
  if (!y) y = ctx.Tensor("vec", 1);
  if (!y) y = ctx.Tensor("vec2", 1);
  if (!y) y = ctx.Tensor("other", 1);
  if (!y) return ctx.Unsupported("needs a second operand");
  PrimitiveType t = ctx.OutputType(0, Promote(x->shape.element_type(), y->shape.element_type()));
  x = b.Convert(x, t);
  y = b.Convert(y, t);
  if (product == Product::kOuter) return ctx.Finish({b.Dot(x, y, Dn({}, {}))});
  if (product == Product::kMv) return ctx.Finish({b.Dot(x, y, Dn({1}, {0}))});
  if (product == Product::kVdot && hlo::IsComplex(t)) x = b.Complex(b.Real(x), b.Unary(Opcode::kNegate, b.Imag(x)));
  return ctx.Finish({b.Dot(x, y, Dn({0}, {0}))});
}

template <Product kProduct>
Expected<LoweredOp> ProductOf(const Node& n, Builder& b) {
  return VectorProduct(n, b, kProduct);
}

// torch.matmul semantics over dot_general: 1-d operands get a unit dim that is removed after.
Expected<Instruction*> MatmulOf(const LoweringContext& ctx, Instruction* x, Instruction* y, PrimitiveType t) {
  Builder& b = ctx.builder;
  x = b.Convert(x, t);
  y = b.Convert(y, t);
  int64_t rx = x->shape.rank(), ry = y->shape.rank();
  if (rx == 0 || ry == 0) return ctx.Unsupported("matmul of a 0-d tensor");
  if (rx == 1 && ry == 1) return b.Dot(x, y, Dn({0}, {0}));
  if (rx == 2 && ry == 1) return b.Dot(x, y, Dn({1}, {0}));
  if (rx == 1 && ry == 2) return b.Dot(x, y, Dn({0}, {0}));
  if (rx == 2 && ry == 2) return b.Dot(x, y, Dn({1}, {0}));
  bool x_vec = rx == 1, y_vec = ry == 1;
  if (x_vec) x = b.Reshape(x, {1, Dims(x)[0]});
  if (y_vec) y = b.Reshape(y, {Dims(y)[0], 1});
  std::vector<int64_t> xd = Dims(x), yd = Dims(y);
  std::vector<int64_t> xb(xd.begin(), xd.end() - 2), yb(yd.begin(), yd.end() - 2);
  std::vector<int64_t> batch = BroadcastShapes(xb, yb);
  std::vector<int64_t> xf = batch, yf = batch;
  xf.insert(xf.end(), xd.end() - 2, xd.end());
  yf.insert(yf.end(), yd.end() - 2, yd.end());
  x = b.BroadcastTo(x, xf);
  y = b.BroadcastTo(y, yf);
  int64_t nb = static_cast<int64_t>(batch.size());
  std::vector<int64_t> bd = DimRange(0, nb);
  Instruction* d = b.Dot(x, y, Dn({nb + 1}, {nb}, bd, bd));
  std::vector<int64_t> out = batch;
  if (!x_vec) out.push_back(xd[xd.size() - 2]);
  if (!y_vec) out.push_back(yd.back());
  return b.Reshape(d, out);
}

Expected<LoweredOp> Matmul(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("other", 1));
  PrimitiveType t = ctx.OutputType(0, Promote(x->shape.element_type(), y->shape.element_type()));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * r, MatmulOf(ctx, x, y, t));
  return ctx.Finish({r});
}

Expected<LoweredOp> Linear(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.RequiredTensor("weight", 1));
  PrimitiveType t = ctx.OutputType(0, x->shape.element_type());
  x = b.Convert(x, t);
  w = b.Convert(w, t);
  int64_t rx = x->shape.rank();
  Instruction* d = w->shape.rank() == 1 ? b.Dot(x, w, Dn({rx - 1}, {0})) : b.Dot(x, w, Dn({rx - 1}, {1}));
  if (Instruction* bias = ctx.Tensor("bias", 2)) d = Add(b, d, Bcast(b, b.Convert(bias, t), Dims(d)));
  return ctx.Finish({d});
}

Expected<LoweredOp> Einsum(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::string eq = ctx.String("equation", 0);
  std::vector<Instruction*> xs = ctx.TensorList("tensors", 1);
  std::string lhs = eq.substr(0, eq.find("->"));
  std::string rhs = eq.find("->") == std::string::npos ? "" : eq.substr(eq.find("->") + 2);
  auto strip = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    return s;
  };
  lhs = strip(lhs);
  rhs = strip(rhs);
  if (lhs.find("...") != std::string::npos) return ctx.Unsupported("einsum with ellipsis");
  std::vector<std::string> subs;
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      subs.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  if (subs.size() != xs.size() || xs.empty() || xs.size() > 2)
    return ctx.Unsupported("einsum over 1 or 2 operands only");
  PrimitiveType t = ctx.OutputType(0, xs[0]->shape.element_type());
  if (eq.find("->") == std::string::npos) {
    std::string all;
    for (auto& s : subs) all += s;
    std::string out;
    for (char ch : all)
      if (std::count(all.begin(), all.end(), ch) == 1 && out.find(ch) == std::string::npos) out += ch;
    std::sort(out.begin(), out.end());
    rhs = out;
  }
  // One operand: sum out the labels not in rhs, then transpose.
  auto reduce_missing = [&](Instruction* x, std::string& s, const std::string& keep) {
    std::vector<int64_t> dims;
    std::string kept;
    for (size_t i = 0; i < s.size(); ++i) {
      if (keep.find(s[i]) == std::string::npos) dims.push_back(static_cast<int64_t>(i));
      else kept += s[i];
    }
    if (!dims.empty()) x = ReduceSum(b, x, dims);
    s = kept;
    return x;
  };
  for (auto& s : subs)
    for (char ch : s)
      if (std::count(s.begin(), s.end(), ch) > 1) return ctx.Unsupported("einsum with repeated labels (diagonals)");
  Instruction* r;
  std::string cur;
  if (xs.size() == 1) {
    cur = subs[0];
    r = reduce_missing(b.Convert(xs[0], t), cur, rhs);
  } else {
    std::string a = subs[0], bb = subs[1];
    Instruction* x = b.Convert(xs[0], t);
    Instruction* y = b.Convert(xs[1], t);
    // Labels only in one operand and not in the output are summed first.
    x = reduce_missing(x, a, bb + rhs);
    y = reduce_missing(y, bb, a + rhs);
    hlo::DotDimensionNumbers dn;
    std::string batch, contract;
    for (char ch : a)
      if (bb.find(ch) != std::string::npos) (rhs.find(ch) != std::string::npos ? batch : contract) += ch;
    for (char ch : batch) {
      dn.lhs_batch_dimensions.push_back(static_cast<int64_t>(a.find(ch)));
      dn.rhs_batch_dimensions.push_back(static_cast<int64_t>(bb.find(ch)));
    }
    for (char ch : contract) {
      dn.lhs_contracting_dimensions.push_back(static_cast<int64_t>(a.find(ch)));
      dn.rhs_contracting_dimensions.push_back(static_cast<int64_t>(bb.find(ch)));
    }
    r = b.Dot(x, y, dn);
    cur = batch;
    for (char ch : a)
      if (batch.find(ch) == std::string::npos && contract.find(ch) == std::string::npos) cur += ch;
    for (char ch : bb)
      if (batch.find(ch) == std::string::npos && contract.find(ch) == std::string::npos) cur += ch;
  }
  if (cur.size() != rhs.size()) return ctx.Unsupported("einsum output labels not covered");
  std::vector<int64_t> perm;
  for (char ch : rhs) perm.push_back(static_cast<int64_t>(cur.find(ch)));
  if (!perm.empty()) r = b.Transpose(r, perm);
  return ctx.Finish({r});
}

// _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim) (nn.functional.bilinear):
// each input gets unit dims at its expand positions, the three are multiplied with broadcasting and
// the sumdim dims are summed away.
Expected<LoweredOp> Trilinear(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> xs;
  const char* names[3] = {"i1", "i2", "i3"};
  const char* expands[3] = {"expand1", "expand2", "expand3"};
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  std::vector<int64_t> out;
  for (size_t i = 0; i < 3; ++i) {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor(names[i], i));
    std::vector<int64_t> d = Dims(x);
    std::vector<int64_t> ex = ctx.Ints(expands[i], 3 + i);
    std::sort(ex.begin(), ex.end());
    for (int64_t e : ex) {
      if (e < 0 || e > static_cast<int64_t>(d.size()))
        return ctx.Unsupported(fmt::format("{} has a bad dim {}", expands[i], e));
      d.insert(d.begin() + e, 1);
    }
    xs.push_back(b.Reshape(b.Convert(x, t), d));
    out = out.empty() ? d : BroadcastShapes(out, d);
  }
  Instruction* p = Mul(b, Bcast(b, xs[0], out), Bcast(b, xs[1], out));
  p = Mul(b, p, Bcast(b, xs[2], out));
  OPPROBE_ASSIGN_OR_RETURN(std::vector<int64_t> sum,
                           NormDims(ctx.Ints("sumdim", 6), static_cast<int64_t>(out.size()), false));
  return ctx.Finish({sum.empty() ? p : ReduceSum(b, p, sum)});
}

Expected<LoweredOp> LinalgCross(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("other", 1));
  std::vector<int64_t> dims = BroadcastShapes(Dims(x0), Dims(y0));
  PrimitiveType t = ctx.OutputType(0, Promote(x0->shape.element_type(), y0->shape.element_type()));
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  Instruction* y = Bcast(b, b.Convert(y0, t), dims);
  auto d = WrapDim(ctx.Int("dim", 2, -1), static_cast<int64_t>(dims.size()));
  if (!d || dims[static_cast<size_t>(*d)] != 3) return ctx.Unsupported("cross needs size 3 along dim");
  auto at = [&](Instruction* v, int64_t i) { return b.SliceInDim(v, i, i + 1, 1, *d); };
  std::vector<Instruction*> parts;
  parts.reserve(3);
  for (int64_t i = 0; i < 3; ++i)
    parts.push_back(
        Sub(b, Mul(b, at(x, (i + 1) % 3), at(y, (i + 2) % 3)), Mul(b, at(x, (i + 2) % 3), at(y, (i + 1) % 3))));
  return ctx.Finish({b.Concatenate(parts, *d)});
}

Expected<LoweredOp> Trace(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  if (x0->shape.rank() != 2) return ctx.Unsupported("trace needs a 2-d input");
  PrimitiveType t = ctx.OutputType(0, x0->shape.element_type());
  Instruction* x = b.Convert(x0, t);
  std::vector<int64_t> d = Dims(x);
  Shape is = Shape::Array(PrimitiveType::S64, d);
  Instruction* diag = b.Compare(b.Iota(is, 0), b.Iota(is, 1), ComparisonDirection::kEq);
  return ctx.Finish({ReduceSum(b, b.Select(diag, x, FullLike(b, x, 0)), {0, 1})});
}

}  // namespace

const LoweringFamily& LinalgLowerings() {
  using P = Product;
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::mm", Mm},
                                                     {"aten::bmm", Bmm},
                                                     {"aten::_grouped_mm", GroupedMm},
                                                     {"aten::addmm", Addmm},
                                                     {"aten::baddbmm", Baddbmm},
                                                     {"aten::addbmm", Addbmm},
                                                     {"aten::addmv", Addmv},
                                                     {"aten::addr", Addmv},
                                                     {"aten::dot", ProductOf<P::kDot>},
                                                     {"aten::inner", ProductOf<P::kDot>},
                                                     {"aten::vdot", ProductOf<P::kVdot>},
                                                     {"aten::mv", ProductOf<P::kMv>},
                                                     {"aten::outer", ProductOf<P::kOuter>},
                                                     {"aten::ger", ProductOf<P::kOuter>},
                                                     {"aten::matmul", Matmul},
                                                     {"aten::linear", Linear},
                                                     {"aten::einsum", Einsum},
                                                     {"aten::_trilinear", Trilinear},
                                                     {"aten::linalg_cross", LinalgCross},
                                                     {"aten::trace", Trace},
                                                 }};
  return *family;
}
}  // namespace opprobe::analyzer::lowering
