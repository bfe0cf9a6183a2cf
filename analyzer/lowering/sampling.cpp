// Resampling ops. Upsampling (nearest, (bi)linear, bicubic) is separable: each spatial dim is a
// `dot` with a constant [in, out] interpolation matrix (what jax.image.resize's scale-and-translate
// does); the backward ops contract with the transposed matrix. im2col/col2im are a grouped
// convolution / backprop-input convolution with a constant one-hot kernel. grid_sampler_2d is a
// `gather` of the four neighbours with bilinear weights, its backward a scatter-add into them. cdist/pdist are
// broadcast differences and reductions.
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
  static const char* kNames[3][3] = {
      {"scales", "", ""}, {"scales_h", "scales_w", ""}, {"scales_d", "scales_h", "scales_w"}};
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
  if (xd.size() != nsp + 2 || out->sizes.size() != xd.size())
    return ctx.Unsupported("input rank does not match the op");
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
  if (k.size() != 2 || dil.size() != 2 || pad.size() != 2 || st.size() != 2)
    return ctx.Unsupported("2-d parameters expected");
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

// grid_sampler_2d's arguments and the sampling positions both directions share: the input as [N, H*W, C] rows, the
// grid's unnormalized x and y ([N, Ho, Wo]), and d(position)/d(grid) per axis (the unnormalization's factor, zero where
// border padding clips the position: PyTorch's clip_coordinates_set_grad treats the border itself as outside).
struct GridSampling {
  int64_t interp = 0, N = 0, C = 0, H = 0, W = 0, Ho = 0, Wo = 0;
  PrimitiveType t = PrimitiveType::F32;
  Instruction* xt = nullptr;  // [N, H*W, C]
  Instruction *ix = nullptr, *iy = nullptr;
  Instruction *dix = nullptr, *diy = nullptr;  // [N, Ho, Wo]

  std::vector<int64_t> Positions() const { return {N, Ho, Wo}; }
  std::vector<int64_t> Taps() const { return {N, Ho, Wo, C}; }
};

Expected<GridSampling> ReadGridSampling(const LoweringContext& ctx, Builder& b, size_t input_pos) {
  GridSampling g;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", input_pos));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * grid, ctx.RequiredTensor("grid", input_pos + 1));
  g.interp = ctx.Int("interpolation_mode", input_pos + 2, 0);
  int64_t padding = ctx.Int("padding_mode", input_pos + 3, 0);
  bool align = ctx.Bool("align_corners", input_pos + 4, false);
  if (g.interp > 1) return ctx.Unsupported("bicubic grid sampling");
  if (padding == 2) return ctx.Unsupported("reflection padding in grid sampling");
  std::vector<int64_t> xd = Dims(x), gd = Dims(grid);
  if (xd.size() != 4 || gd.size() != 4 || gd[3] != 2) return ctx.Unsupported("expects 4-d input and grid");
  g.N = xd[0], g.C = xd[1], g.H = xd[2], g.W = xd[3], g.Ho = gd[1], g.Wo = gd[2];
  g.t = x->shape.element_type();
  Instruction* gr = b.Convert(grid, g.t);
  std::vector<int64_t> pd = g.Positions();
  Instruction* gx = b.Reshape(b.SliceInDim(gr, 0, 1, 1, 3), pd);
  Instruction* gy = b.Reshape(b.SliceInDim(gr, 1, 2, 1, 3), pd);
  auto unnorm = [&](Instruction* v, int64_t size) {
    // align: (v + 1) / 2 * (size - 1); else ((v + 1) * size - 1) / 2
    if (align) return MulScalar(b, AddScalar(b, v, 1), (static_cast<double>(size) - 1) / 2);
    return MulScalar(b, AddScalar(b, MulScalar(b, AddScalar(b, v, 1), static_cast<double>(size)), -1), 0.5);
  };
  auto factor = [&](int64_t size) {
    return align ? (static_cast<double>(size) - 1) / 2 : static_cast<double>(size) / 2;
  };
  g.ix = unnorm(gx, g.W);
  g.iy = unnorm(gy, g.H);
  g.dix = Full(b, g.t, factor(g.W), pd);
  g.diy = Full(b, g.t, factor(g.H), pd);
  if (padding == 1) {  // border: clip coordinates; no gradient through a clipped one
    auto inside = [&](Instruction* v, int64_t size) {
      return b.Binary(Opcode::kAnd, CmpScalar(b, v, 0, ComparisonDirection::kGt),
                      CmpScalar(b, v, static_cast<double>(size - 1), ComparisonDirection::kLt));
    };
    g.dix = b.Select(inside(g.ix, g.W), g.dix, Full(b, g.t, 0, pd));
    g.diy = b.Select(inside(g.iy, g.H), g.diy, Full(b, g.t, 0, pd));
    g.ix = b.Clamp(Scalar(b, g.t, 0), g.ix, Scalar(b, g.t, static_cast<double>(g.W - 1)));
    g.iy = b.Clamp(Scalar(b, g.t, 0), g.iy, Scalar(b, g.t, static_cast<double>(g.H - 1)));
  }
  // input as [N, H*W, C] for a batched gather of rows.
  g.xt = b.Reshape(b.Transpose(b.Convert(x, g.t), {0, 2, 3, 1}), {g.N, g.H * g.W, g.C});
  return g;
}

// One tap of the sampling: the [N, Ho, Wo, 2] (batch, row of xt) indices of integer position (yy, xx), clamped into
// the input, and whether the position lies inside it (zero padding: a tap outside reads and receives zero).
struct GridTap {
  Instruction* index;   // [N, Ho, Wo, 2] S64
  Instruction* inside;  // [N, Ho, Wo, C] PRED
};

GridTap TapAt(Builder& b, const GridSampling& g, Instruction* yy, Instruction* xx) {
  PrimitiveType t = g.t;
  std::vector<int64_t> pd = g.Positions();
  Instruction* inb = b.Binary(Opcode::kAnd,
                              b.Binary(Opcode::kAnd, CmpScalar(b, xx, 0, ComparisonDirection::kGe),
                                       CmpScalar(b, xx, static_cast<double>(g.W - 1), ComparisonDirection::kLe)),
                              b.Binary(Opcode::kAnd, CmpScalar(b, yy, 0, ComparisonDirection::kGe),
                                       CmpScalar(b, yy, static_cast<double>(g.H - 1), ComparisonDirection::kLe)));
  Instruction* xi =
      b.Convert(b.Clamp(Scalar(b, t, 0), xx, Scalar(b, t, static_cast<double>(g.W - 1))), PrimitiveType::S64);
  Instruction* yi =
      b.Convert(b.Clamp(Scalar(b, t, 0), yy, Scalar(b, t, static_cast<double>(g.H - 1))), PrimitiveType::S64);
  Instruction* pos = Add(b, MulScalar(b, yi, static_cast<double>(g.W)), xi);
  Instruction* bidx = b.Iota(Shape::Array(PrimitiveType::S64, pd), 0);
  std::vector<int64_t> d1 = {g.N, g.Ho, g.Wo, 1};
  Instruction* idx = b.Concatenate({b.Reshape(bidx, d1), b.Reshape(pos, d1)}, 3);
  return {idx, b.Broadcast(inb, g.Taps(), {0, 1, 2})};
}

// The value at a tap (as t), zero outside: [N, Ho, Wo, C].
Instruction* TapValue(Builder& b, const GridSampling& g, const GridTap& tap) {
  hlo::GatherDimensionNumbers dn;
  dn.offset_dims = {3};
  dn.collapsed_slice_dims = {0, 1};
  dn.start_index_map = {0, 1};
  dn.index_vector_dim = 3;
  Instruction* v = b.Gather(g.xt, tap.index, dn, {1, 1, g.C}, Shape::Array(g.t, g.Taps()));
  return b.Select(tap.inside, v, Full(b, g.t, 0, g.Taps()));
}

// The bilinear corners (y0, x0), (y0, x1), (y1, x0), (y1, x1) and their weights' factors.
struct Bilinear {
  Instruction *x0, *x1, *y0, *y1;
  Instruction *wx0, *wx1, *wy0, *wy1;  // [N, Ho, Wo]
};

Bilinear Corners(Builder& b, const GridSampling& g) {
  Bilinear c;
  c.x0 = b.Unary(Opcode::kFloor, g.ix);
  c.y0 = b.Unary(Opcode::kFloor, g.iy);
  c.x1 = AddScalar(b, c.x0, 1);
  c.y1 = AddScalar(b, c.y0, 1);
  c.wx1 = Sub(b, g.ix, c.x0);
  c.wx0 = Sub(b, FullLike(b, c.wx1, 1), c.wx1);
  c.wy1 = Sub(b, g.iy, c.y0);
  c.wy0 = Sub(b, FullLike(b, c.wy1, 1), c.wy1);
  return c;
}

Expected<LoweredOp> GridSampler2d(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(GridSampling g, ReadGridSampling(ctx, b, 0));
  std::vector<int64_t> od = g.Taps();
  Instruction* r;
  if (g.interp == 1) {  // nearest (round half to even, like nearbyint)
    r = TapValue(b, g, TapAt(b, g, b.Unary(Opcode::kRoundNearestEven, g.iy), b.Unary(Opcode::kRoundNearestEven, g.ix)));
  } else {
    Bilinear c = Corners(b, g);
    auto wb = [&](Instruction* a, Instruction* bb) { return b.Broadcast(Mul(b, a, bb), od, {0, 1, 2}); };
    auto val = [&](Instruction* yy, Instruction* xx) { return TapValue(b, g, TapAt(b, g, yy, xx)); };
    r = Add(b, Add(b, Mul(b, val(c.y0, c.x0), wb(c.wy0, c.wx0)), Mul(b, val(c.y0, c.x1), wb(c.wy0, c.wx1))),
            Add(b, Mul(b, val(c.y1, c.x0), wb(c.wy1, c.wx0)), Mul(b, val(c.y1, c.x1), wb(c.wy1, c.wx1))));
  }
  return ctx.Finish({b.Transpose(r, {0, 3, 1, 2})});
}

// grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask):
// the input's gradient scatter-adds each output's gradient into the taps it read, with their weights; the grid's is
// the bilinear weights' derivative along x and y summed over the channels (zero for nearest), times
// d(position)/d(grid). grad_input is left out when output_mask[0] is false (PyTorch returns an undefined tensor there);
// grad_grid is always computed, as PyTorch's kernels do.
Expected<LoweredOp> GridSampler2dBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * go0, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(GridSampling g, ReadGridSampling(ctx, b, 1));
  std::vector<bool> mask = ctx.Bools("output_mask", 6, {true, true});
  if (mask.size() != 2) return ctx.Unsupported("output_mask must have 2 entries");
  std::vector<int64_t> od = g.Taps(), pd = g.Positions();
  if (Dims(go0) != std::vector<int64_t>{g.N, g.C, g.Ho, g.Wo})
    return ctx.Unsupported("grad_output does not fit the grid");
  Instruction* go = b.Transpose(b.Convert(go0, g.t), {0, 2, 3, 1});  // [N, Ho, Wo, C]
  hlo::ScatterDimensionNumbers sdn;
  sdn.update_window_dims = {3};
  sdn.inserted_window_dims = {0, 1};
  sdn.scatter_dims_to_operand_dims = {0, 1};
  sdn.index_vector_dim = 3;
  Instruction* gin = Full(b, g.t, 0, {g.N, g.H * g.W, g.C});
  auto scatter = [&](const GridTap& tap, Instruction* w) {  // gin[tap] += go * w (w: [N, Ho, Wo] or null)
    Instruction* upd = w ? Mul(b, go, b.Broadcast(w, od, {0, 1, 2})) : go;
    upd = b.Select(tap.inside, upd, Full(b, g.t, 0, od));
    gin = b.Scatter({gin}, tap.index, {upd}, sdn, b.ScalarBinaryComputation(Opcode::kAdd, g.t));
  };
  Instruction* ggrid;
  if (g.interp == 1) {
    scatter(TapAt(b, g, b.Unary(Opcode::kRoundNearestEven, g.iy), b.Unary(Opcode::kRoundNearestEven, g.ix)), nullptr);
    ggrid = Full(b, g.t, 0, {g.N, g.Ho, g.Wo, 2});
  } else {
    Bilinear c = Corners(b, g);
    GridTap t00 = TapAt(b, g, c.y0, c.x0), t01 = TapAt(b, g, c.y0, c.x1), t10 = TapAt(b, g, c.y1, c.x0),
            t11 = TapAt(b, g, c.y1, c.x1);
    if (mask[0]) {
      scatter(t00, Mul(b, c.wy0, c.wx0));
      scatter(t01, Mul(b, c.wy0, c.wx1));
      scatter(t10, Mul(b, c.wy1, c.wx0));
      scatter(t11, Mul(b, c.wy1, c.wx1));
    }
    Instruction *v00 = TapValue(b, g, t00), *v01 = TapValue(b, g, t01), *v10 = TapValue(b, g, t10),
                *v11 = TapValue(b, g, t11);
    auto wb = [&](Instruction* w) { return b.Broadcast(w, od, {0, 1, 2}); };
    // d out / d ix = (v01 - v00) wy0 + (v11 - v10) wy1; d out / d iy = (v10 - v00) wx0 + (v11 - v01) wx1.
    Instruction* dx = Add(b, Mul(b, Sub(b, v01, v00), wb(c.wy0)), Mul(b, Sub(b, v11, v10), wb(c.wy1)));
    Instruction* dy = Add(b, Mul(b, Sub(b, v10, v00), wb(c.wx0)), Mul(b, Sub(b, v11, v01), wb(c.wx1)));
    Instruction* gx = Mul(b, ReduceSum(b, Mul(b, go, dx), {3}), g.dix);
    Instruction* gy = Mul(b, ReduceSum(b, Mul(b, go, dy), {3}), g.diy);
    std::vector<int64_t> d1 = {g.N, g.Ho, g.Wo, 1};
    ggrid = b.Concatenate({b.Reshape(gx, d1), b.Reshape(gy, d1)}, 3);
  }
  std::vector<Instruction*> outs;
  PrimitiveType it = ctx.OutputType(0, g.t);
  if (mask[0]) outs.push_back(b.Convert(b.Transpose(b.Reshape(gin, {g.N, g.H, g.W, g.C}), {0, 3, 1, 2}), it));
  const TensorMeta* grid_meta = ctx.ArgMeta("grid", 2);
  outs.push_back(b.Convert(ggrid, grid_meta ? grid_meta->dtype : g.t));
  return ctx.Finish(outs);
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
  for (size_t i = 0; i < batch.size(); ++i)
    xmap.push_back(static_cast<int64_t>(i)), ymap.push_back(static_cast<int64_t>(i));
  int64_t nb = static_cast<int64_t>(batch.size());
  xmap.insert(xmap.end(), {nb, nb + 2});
  ymap.insert(ymap.end(), {nb + 1, nb + 2});
  Instruction* diff = b.Unary(Opcode::kAbs, Sub(b, b.Broadcast(x, big, xmap), b.Broadcast(y, big, ymap)));
  int64_t last = nb + 2;
  if (std::isinf(p)) return ReduceMax(b, diff, {last});
  if (p == 0)
    return ReduceSum(b, b.Convert(CmpScalar(b, diff, 0, ComparisonDirection::kNe), x->shape.element_type()), {last});
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
  return ctx.Finish(
      {b.Gather(full, b.Constant(std::move(idx)), dn, {1}, Shape::Array(x->shape.element_type(), {cnt}))});
}

}  // namespace

const LoweringFamily& SamplingLowerings() {
  using M = Mode;
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
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
                             {"aten::grid_sampler_2d_backward", GridSampler2dBackward},
                             {"aten::_cdist_forward", Cdist},
                             {"aten::_pdist_forward", Pdist},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
