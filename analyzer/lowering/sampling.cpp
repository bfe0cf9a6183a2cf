// Resampling ops. Upsampling (nearest, (bi)linear, bicubic) is separable: each spatial dim is a
// `dot` with a constant [in, out] interpolation matrix (what jax.image.resize's scale-and-translate
// does); the backward ops contract with the transposed matrix. im2col/col2im are a grouped
// convolution / backprop-input convolution with a constant one-hot kernel. grid_sampler_2d is a
// `gather` of the four neighbours with bilinear weights. cdist/pdist are broadcast differences
// and reductions.
#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

enum class Mode { kNearest, kNearestExact, kLinear, kCubic };

double SourceScale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  if (scale && *scale > 0) return 1.0 / *scale;
  return static_cast<double>(in) / static_cast<double>(out);
}

double Cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
double Cubic2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

// m[i, j]: weight of input i in output j (row-major [in, out]).
hlo::Literal InterpMatrix(PrimitiveType t, int64_t in, int64_t out, Mode mode, bool align_corners,
                          std::optional<double> scale, bool transpose) {
  hlo::Literal m(Shape::Array(t, transpose ? std::vector<int64_t>{out, in} : std::vector<int64_t>{in, out}));
  auto add = [&](int64_t i, int64_t j, double w) {
    i = std::clamp<int64_t>(i, 0, in - 1);
    int64_t k = transpose ? j * in + i : i * out + j;
    m.SetFromDouble(k, m.GetAsDouble(k) + w);
  };
  double s = SourceScale(in, out, mode == Mode::kLinear || mode == Mode::kCubic ? align_corners : false, scale);
  for (int64_t j = 0; j < out; ++j) {
    if (mode == Mode::kNearest) {
      add(std::min(static_cast<int64_t>(std::floor(static_cast<double>(j) * s)), in - 1), j, 1);
    } else if (mode == Mode::kNearestExact) {
      add(std::min(static_cast<int64_t>(std::floor((static_cast<double>(j) + 0.5) * s)), in - 1), j, 1);
    } else if (mode == Mode::kLinear) {
      double src = align_corners ? static_cast<double>(j) * s : std::max((static_cast<double>(j) + 0.5) * s - 0.5, 0.0);
      int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
      int64_t i1 = std::min(i0 + 1, in - 1);
      double l = src - static_cast<double>(i0);
      add(i0, j, 1 - l);
      add(i1, j, l);
    } else {
      double src = align_corners ? static_cast<double>(j) * s : (static_cast<double>(j) + 0.5) * s - 0.5;
      int64_t i0 = static_cast<int64_t>(std::floor(src));
      double tt = src - static_cast<double>(i0);
      const double a = -0.75;
      add(i0 - 1, j, Cubic2(tt + 1, a));
      add(i0, j, Cubic1(tt, a));
      add(i0 + 1, j, Cubic1(1 - tt, a));
      add(i0 + 2, j, Cubic2(2 - tt, a));
    }
  }
  return m;
}

// Contracts dim `d` of x with a constant [in, out] matrix, keeping the dim's position.
Instruction* ContractDim(Builder& b, Instruction* x, int64_t d, hlo::Literal m) {
  Instruction* wm = b.Constant(std::move(m));
  hlo::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {d};
  dn.rhs_contracting_dimensions = {0};
  Instruction* prod = b.Dot(x, wm, dn);
  int64_t rank = prod->shape.rank();
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank - 1; ++k) {
    if (k == d) perm.push_back(rank - 1);
    perm.push_back(k);
  }
  if (d == rank - 1) perm.push_back(rank - 1);
  return b.Transpose(prod, perm);
}

std::vector<std::optional<double>> Scales(const LoweringContext& ctx, size_t nsp, bool backward) {
  std::vector<std::optional<double>> s(nsp);
  if (const Value* v = ctx.Arg("scale_factors", 2); v && v->kind == Value::Kind::kFloatList) {
    for (size_t i = 0; i < nsp && i < v->floats.size(); ++i) s[i] = v->floats[i];
    return s;
  }
  static const char* kNames[3][3] = {{"scales", "", ""}, {"scales_h", "scales_w", ""}, {"scales_d", "scales_h", "scales_w"}};
  for (size_t i = 0; i < nsp; ++i) {
    const Value* v = ctx.Arg(kNames[nsp - 1][i], 100);
    if (v && !v->is_none()) s[i] = v->AsDouble();
  }
  (void)backward;
  return s;
}

// upsample_*(input, output_size, ...) over `nsp` spatial dims: one interpolation matrix per dim.
Expected<LoweredOp> Upsample(const Node& n, Builder& b, Mode mode, size_t nsp) {
  LoweringContext ctx(n, b);
  Instruction* x = ctx.Tensor("input", 0) ? ctx.Tensor("input", 0) : ctx.Tensor("self", 0);
  if (!x) return ctx.Unsupported("tensor argument 'input' is missing");
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out) return ctx.Unsupported("the output size comes from the recorded output");
  std::vector<int64_t> xd = Dims(x);
  if (xd.size() != nsp + 2 || out->sizes.size() != xd.size()) return ctx.Unsupported("input rank does not match the op");
  bool align = ctx.Bool("align_corners", 2, false);
  auto scales = Scales(ctx, nsp, false);
  PrimitiveType t = x->shape.element_type();
  Instruction* r = x;
  for (size_t i = 0; i < nsp; ++i) {
    int64_t d = static_cast<int64_t>(i + 2);
    r = ContractDim(b, r, d, InterpMatrix(t, xd[i + 2], out->sizes[i + 2], mode, align, scales[i], false));
  }
  return ctx.Finish({r});
}

Expected<LoweredOp> UpsampleBackward(const Node& n, Builder& b, Mode mode, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  std::vector<int64_t> in_size = ctx.Ints("input_size", 2);
  std::vector<int64_t> gd = Dims(g);
  if (gd.size() != nsp + 2 || in_size.size() != gd.size()) return ctx.Unsupported("ranks do not match the op");
  bool align = ctx.Bool("align_corners", 3, false);
  auto scales = Scales(ctx, nsp, true);
  PrimitiveType t = g->shape.element_type();
  Instruction* r = g;
  for (size_t i = 0; i < nsp; ++i) {
    int64_t d = static_cast<int64_t>(i + 2);
    r = ContractDim(b, r, d, InterpMatrix(t, in_size[i + 2], gd[i + 2], mode, align, scales[i], true));
  }
  return ctx.Finish({r});
}

// An upsampling op and its backward (`backward`) in `kMode` over `kDims` spatial dims.
template <Mode kMode, size_t kDims>
Expected<LoweredOp> UpsampleOf(const Node& n, Builder& b) {
  return Upsample(n, b, kMode, kDims);
}
template <Mode kMode, size_t kDims>
Expected<LoweredOp> UpsampleBackwardOf(const Node& n, Builder& b) {
  return UpsampleBackward(n, b, kMode, kDims);
}

// One-hot kernel [C*kh*kw, 1, kh, kw] (groups = C): output channel c*K + k picks position k.
Instruction* PatchKernel(Builder& b, PrimitiveType t, int64_t C, int64_t kh, int64_t kw) {
  hlo::Literal k(Shape::Array(t, {C * kh * kw, 1, kh, kw}));
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t p = 0; p < kh * kw; ++p) k.SetFromDouble(((ch * kh * kw + p) * kh * kw) + p, 1.0);
  return b.Constant(std::move(k));
}

Expected<LoweredOp> Im2Col(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> k = ctx.Ints("kernel_size", 1), dil = ctx.Ints("dilation", 2), pad = ctx.Ints("padding", 3),
                       st = ctx.Ints("stride", 4);
  if (k.size() != 2 || dil.size() != 2 || pad.size() != 2 || st.size() != 2) return ctx.Unsupported("2-d parameters expected");
  Instruction* x = x0;
  bool unbatched = x->shape.rank() == 3;
  if (unbatched) {
    std::vector<int64_t> d = Dims(x);
    d.insert(d.begin(), 1);
    x = b.Reshape(x, d);
  }
  std::vector<int64_t> xd = Dims(x);
  int64_t C = xd[1];
  PrimitiveType t = x->shape.element_type();
  hlo::Window w;
  for (int i = 0; i < 2; ++i) {
    hlo::WindowDimension d;
    d.size = k[static_cast<size_t>(i)];
    d.stride = st[static_cast<size_t>(i)];
    d.padding_low = d.padding_high = pad[static_cast<size_t>(i)];
    d.window_dilation = dil[static_cast<size_t>(i)];
    w.dimensions.push_back(d);
  }
  hlo::ConvolutionDimensionNumbers dn;
  dn.input_spatial_dimensions = dn.kernel_spatial_dimensions = dn.output_spatial_dimensions = {2, 3};
  Instruction* y = b.Convolution(x, PatchKernel(b, t, C, k[0], k[1]), w, dn, C, 1, t);
  std::vector<int64_t> yd = Dims(y);
  std::vector<int64_t> out = {yd[0], yd[1], yd[2] * yd[3]};
  if (unbatched) out.erase(out.begin());
  return ctx.Finish({b.Reshape(y, out)});
}

Expected<LoweredOp> Col2Im(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> osz = ctx.Ints("output_size", 1), k = ctx.Ints("kernel_size", 2), dil = ctx.Ints("dilation", 3),
                       pad = ctx.Ints("padding", 4), st = ctx.Ints("stride", 5);
  if (osz.size() != 2 || k.size() != 2 || dil.size() != 2 || pad.size() != 2 || st.size() != 2)
    return ctx.Unsupported("2-d parameters expected");
  Instruction* x = x0;
  bool unbatched = x->shape.rank() == 2;
  if (unbatched) x = b.Reshape(x, {1, Dims(x)[0], Dims(x)[1]});
  std::vector<int64_t> xd = Dims(x);
  int64_t K = k[0] * k[1];
  if (K == 0 || xd[1] % K != 0) return ctx.Unsupported("channels not divisible by the kernel size");
  int64_t C = xd[1] / K;
  int64_t lh = (osz[0] + 2 * pad[0] - (dil[0] * (k[0] - 1) + 1)) / st[0] + 1;
  int64_t lw = (osz[1] + 2 * pad[1] - (dil[1] * (k[1] - 1) + 1)) / st[1] + 1;
  if (lh * lw != xd[2]) return ctx.Unsupported("block count does not match output_size");
  PrimitiveType t = x->shape.element_type();
  Instruction* cols = b.Reshape(x, {xd[0], xd[1], lh, lw});
  // The transpose of im2col: a backprop-input convolution with the one-hot kernel
  // (lhs_dilation = stride, reversed kernel, feature groups = C).
  Instruction* kern = b.Reverse(PatchKernel(b, t, C, k[0], k[1]), {2, 3});
  hlo::Window w;
  for (int i = 0; i < 2; ++i) {
    size_t u = static_cast<size_t>(i);
    hlo::WindowDimension d;
    d.size = k[u];
    d.base_dilation = st[u];
    d.window_dilation = dil[u];
    int64_t k_eff = (k[u] - 1) * dil[u] + 1;
    int64_t l = i == 0 ? lh : lw;
    d.padding_low = k_eff - 1 - pad[u];
    d.padding_high = osz[u] + k_eff - 1 - ((l - 1) * st[u] + 1) - d.padding_low;
    w.dimensions.push_back(d);
  }
  hlo::ConvolutionDimensionNumbers dn;
  dn.input_spatial_dimensions = dn.kernel_spatial_dimensions = dn.output_spatial_dimensions = {2, 3};
  dn.kernel_input_feature_dimension = 0;
  dn.kernel_output_feature_dimension = 1;
  // kernel [C*K, 1, kh, kw] as [input features per group = K, output = 1] per group: regroup to
  // [K, C, kh, kw] so that feature_group_count = C pairs K input channels with one output channel.
  Instruction* kr = b.Reshape(kern, {C, K, k[0], k[1]});
  kr = b.Transpose(kr, {1, 0, 2, 3});
  Instruction* y = b.Convolution(cols, kr, w, dn, C, 1, t);
  if (unbatched) y = b.Reshape(y, {C, osz[0], osz[1]});
  return ctx.Finish({y});
}

Expected<LoweredOp> GridSampler2d(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * grid, ctx.RequiredTensor("grid", 1));
  int64_t interp = ctx.Int("interpolation_mode", 2, 0);
  int64_t padding = ctx.Int("padding_mode", 3, 0);
  bool align = ctx.Bool("align_corners", 4, false);
  if (interp > 1) return ctx.Unsupported("bicubic grid sampling");
  if (padding == 2) return ctx.Unsupported("reflection padding in grid sampling");
  std::vector<int64_t> xd = Dims(x), gd = Dims(grid);
  if (xd.size() != 4 || gd.size() != 4 || gd[3] != 2) return ctx.Unsupported("expects 4-d input and grid");
  int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], Ho = gd[1], Wo = gd[2];
  PrimitiveType t = x->shape.element_type();
  Instruction* g = b.Convert(grid, t);
  std::vector<int64_t> pd = {N, Ho, Wo};
  Instruction* gx = b.Reshape(b.SliceInDim(g, 0, 1, 1, 3), pd);
  Instruction* gy = b.Reshape(b.SliceInDim(g, 1, 2, 1, 3), pd);
  auto unnorm = [&](Instruction* v, int64_t size) {
    // align: (v + 1) / 2 * (size - 1); else ((v + 1) * size - 1) / 2
    if (align) return MulScalar(b, AddScalar(b, v, 1), (static_cast<double>(size) - 1) / 2);
    return MulScalar(b, AddScalar(b, MulScalar(b, AddScalar(b, v, 1), static_cast<double>(size)), -1), 0.5);
  };
  Instruction* ix = unnorm(gx, W);
  Instruction* iy = unnorm(gy, H);
  if (padding == 1) {  // border: clip coordinates
    ix = b.Clamp(Scalar(b, t, 0), ix, Scalar(b, t, static_cast<double>(W - 1)));
    iy = b.Clamp(Scalar(b, t, 0), iy, Scalar(b, t, static_cast<double>(H - 1)));
  }
  // input as [N, H*W, C] for a batched gather of rows.
  Instruction* xt = b.Reshape(b.Transpose(x, {0, 2, 3, 1}), {N, H * W, C});
  Instruction* bidx = b.Iota(Shape::Array(PrimitiveType::S64, pd), 0);
  auto tap = [&](Instruction* yy, Instruction* xx) {
    // value at integer (yy, xx) (as t), zero outside; returns [N, Ho, Wo, C]
    Instruction* inb = b.Binary(Opcode::kAnd,
                                b.Binary(Opcode::kAnd, CmpScalar(b, xx, 0, ComparisonDirection::kGe),
                                         CmpScalar(b, xx, static_cast<double>(W - 1), ComparisonDirection::kLe)),
                                b.Binary(Opcode::kAnd, CmpScalar(b, yy, 0, ComparisonDirection::kGe),
                                         CmpScalar(b, yy, static_cast<double>(H - 1), ComparisonDirection::kLe)));
    Instruction* xi = b.Convert(b.Clamp(Scalar(b, t, 0), xx, Scalar(b, t, static_cast<double>(W - 1))), PrimitiveType::S64);
    Instruction* yi = b.Convert(b.Clamp(Scalar(b, t, 0), yy, Scalar(b, t, static_cast<double>(H - 1))), PrimitiveType::S64);
    Instruction* pos = Add(b, MulScalar(b, yi, static_cast<double>(W)), xi);
    std::vector<int64_t> d1 = {N, Ho, Wo, 1};
    Instruction* idx = b.Concatenate({b.Reshape(bidx, d1), b.Reshape(pos, d1)}, 3);
    hlo::GatherDimensionNumbers dn;
    dn.offset_dims = {3};
    dn.collapsed_slice_dims = {0, 1};
    dn.start_index_map = {0, 1};
    dn.index_vector_dim = 3;
    Instruction* v = b.Gather(xt, idx, dn, {1, 1, C}, Shape::Array(t, {N, Ho, Wo, C}));
    return b.Select(b.Broadcast(inb, {N, Ho, Wo, C}, {0, 1, 2}), v, Full(b, t, 0, {N, Ho, Wo, C}));
  };
  Instruction* r;
  std::vector<int64_t> od = {N, Ho, Wo, C};
  if (interp == 1) {  // nearest (round half to even, like nearbyint)
    r = tap(b.Unary(Opcode::kRoundNearestEven, iy), b.Unary(Opcode::kRoundNearestEven, ix));
  } else {
    Instruction* x0 = b.Unary(Opcode::kFloor, ix);
    Instruction* y0 = b.Unary(Opcode::kFloor, iy);
    Instruction* x1 = AddScalar(b, x0, 1);
    Instruction* y1 = AddScalar(b, y0, 1);
    Instruction* wx1 = Sub(b, ix, x0);
    Instruction* wx0 = Sub(b, FullLike(b, wx1, 1), wx1);
    Instruction* wy1 = Sub(b, iy, y0);
    Instruction* wy0 = Sub(b, FullLike(b, wy1, 1), wy1);
    auto wb = [&](Instruction* a, Instruction* bb) { return b.Broadcast(Mul(b, a, bb), od, {0, 1, 2}); };
    r = Add(b, Add(b, Mul(b, tap(y0, x0), wb(wy0, wx0)), Mul(b, tap(y0, x1), wb(wy0, wx1))),
            Add(b, Mul(b, tap(y1, x0), wb(wy1, wx0)), Mul(b, tap(y1, x1), wb(wy1, wx1))));
  }
  return ctx.Finish({b.Transpose(r, {0, 3, 1, 2})});
}

// Pairwise p-norm distances between rows: x [.., P, M], y [.., R, M] -> [.., P, R].
Instruction* PairDist(Builder& b, Instruction* x, Instruction* y, double p) {
  std::vector<int64_t> xd = Dims(x), yd = Dims(y);
  size_t r = xd.size();
  std::vector<int64_t> batch(xd.begin(), xd.end() - 2);
  int64_t P = xd[r - 2], R = yd[r - 2], M = xd[r - 1];
  std::vector<int64_t> big = batch;
  big.insert(big.end(), {P, R, M});
  std::vector<int64_t> xmap, ymap;
  for (size_t i = 0; i < batch.size(); ++i) xmap.push_back(static_cast<int64_t>(i)), ymap.push_back(static_cast<int64_t>(i));
  int64_t nb = static_cast<int64_t>(batch.size());
  xmap.insert(xmap.end(), {nb, nb + 2});
  ymap.insert(ymap.end(), {nb + 1, nb + 2});
  Instruction* diff = b.Unary(Opcode::kAbs, Sub(b, b.Broadcast(x, big, xmap), b.Broadcast(y, big, ymap)));
  int64_t last = nb + 2;
  if (std::isinf(p)) return ReduceMax(b, diff, {last});
  if (p == 0) return ReduceSum(b, b.Convert(CmpScalar(b, diff, 0, ComparisonDirection::kNe), x->shape.element_type()), {last});
  if (p == 1) return ReduceSum(b, diff, {last});
  if (p == 2) return b.Unary(Opcode::kSqrt, ReduceSum(b, Mul(b, diff, diff), {last}));
  Instruction* s = ReduceSum(b, b.Binary(Opcode::kPower, diff, FullLike(b, diff, p)), {last});
  return b.Binary(Opcode::kPower, s, FullLike(b, s, 1.0 / p));
}

Expected<LoweredOp> Cdist(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("x1", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("x2", 1));
  double p = ctx.Double("p", 2, 2);
  if (x->shape.rank() < 2 || y->shape.rank() != x->shape.rank()) return ctx.Unsupported("needs matching ranks >= 2");
  std::vector<int64_t> xd = Dims(x), yd = Dims(y);
  std::vector<int64_t> xb(xd.begin(), xd.end() - 2), yb(yd.begin(), yd.end() - 2);
  std::vector<int64_t> batch = BroadcastShapes(xb, yb);
  std::vector<int64_t> xf = batch, yf = batch;
  xf.insert(xf.end(), xd.end() - 2, xd.end());
  yf.insert(yf.end(), yd.end() - 2, yd.end());
  return ctx.Finish({PairDist(b, Bcast(b, x, xf), Bcast(b, y, yf), p)});
}

Expected<LoweredOp> Pdist(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double p = ctx.Double("p", 1, 2);
  if (x->shape.rank() != 2) return ctx.Unsupported("needs a 2-d input");
  int64_t N = Dims(x)[0];
  Instruction* full = b.Reshape(PairDist(b, x, x, p), {N * N});
  int64_t cnt = N * (N - 1) / 2;
  hlo::Literal idx(Shape::Array(PrimitiveType::S64, {cnt, 1}));
  int64_t k = 0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = i + 1; j < N; ++j) idx.SetFromInt64(k++, i * N + j);
  hlo::GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;
  return ctx.Finish({b.Gather(full, b.Constant(std::move(idx)), dn, {1}, Shape::Array(x->shape.element_type(), {cnt}))});
}

}  // namespace

const LoweringFamily& SamplingLowerings() {
  using M = Mode;
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__), {
      {"aten::upsample_nearest1d", UpsampleOf<M::kNearest, 1>},
      {"aten::upsample_nearest2d", UpsampleOf<M::kNearest, 2>},
      {"aten::upsample_nearest3d", UpsampleOf<M::kNearest, 3>},
      {"aten::_upsample_nearest_exact1d", UpsampleOf<M::kNearestExact, 1>},
      {"aten::_upsample_nearest_exact2d", UpsampleOf<M::kNearestExact, 2>},
      {"aten::_upsample_nearest_exact3d", UpsampleOf<M::kNearestExact, 3>},
      {"aten::upsample_linear1d", UpsampleOf<M::kLinear, 1>},
      {"aten::upsample_bilinear2d", UpsampleOf<M::kLinear, 2>},
      {"aten::upsample_trilinear3d", UpsampleOf<M::kLinear, 3>},
      {"aten::upsample_bicubic2d", UpsampleOf<M::kCubic, 2>},
      {"aten::upsample_nearest1d_backward", UpsampleBackwardOf<M::kNearest, 1>},
      {"aten::upsample_nearest2d_backward", UpsampleBackwardOf<M::kNearest, 2>},
      {"aten::upsample_nearest3d_backward", UpsampleBackwardOf<M::kNearest, 3>},
      {"aten::_upsample_nearest_exact1d_backward", UpsampleBackwardOf<M::kNearestExact, 1>},
      {"aten::_upsample_nearest_exact2d_backward", UpsampleBackwardOf<M::kNearestExact, 2>},
      {"aten::_upsample_nearest_exact3d_backward", UpsampleBackwardOf<M::kNearestExact, 3>},
      {"aten::upsample_linear1d_backward", UpsampleBackwardOf<M::kLinear, 1>},
      {"aten::upsample_bilinear2d_backward", UpsampleBackwardOf<M::kLinear, 2>},
      {"aten::upsample_trilinear3d_backward", UpsampleBackwardOf<M::kLinear, 3>},
      {"aten::upsample_bicubic2d_backward", UpsampleBackwardOf<M::kCubic, 2>},
      {"aten::im2col", Im2Col},
      {"aten::col2im", Col2Im},
      {"aten::grid_sampler_2d", GridSampler2d},
      {"aten::_cdist_forward", Cdist},
      {"aten::_pdist_forward", Pdist},
  }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
