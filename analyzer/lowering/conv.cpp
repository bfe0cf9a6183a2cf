// Convolutions as XLA builds them (torch_xla convolution.cpp, TF's conv_grad_ops):
// - forward: `convolution` with the default dimension numbers (bf01_oi01->bf01 in 2-d),
//   feature_group_count = groups; bias broadcast along the feature dim and added;
// - transposed forward = the backprop-input form: lhs_dilation = stride, reversed kernel with
//   swapped in/out feature dims, padding (k-1)*d - p (+ output_padding on the high side);
// - grad input = the same backprop-input convolution of grad_output;
// - grad weight = a convolution of input and grad_output with batch and feature dims swapped and
//   batch_group_count = groups; grad bias = reduce-add over batch and spatial dims.
#include <fmt/format.h>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

std::vector<int64_t> Expand(std::vector<int64_t> v, size_t n, int64_t def) {
  if (v.empty()) v.assign(n, def);
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  return v;
}

ConvParams ReadParams(const LoweringContext& ctx, size_t nsp, size_t first) {
  ConvParams p;
  p.stride = Expand(ctx.Ints("stride", first), nsp, 1);
  p.padding = Expand(ctx.Ints("padding", first + 1), nsp, 0);
  p.dilation = Expand(ctx.Ints("dilation", first + 2), nsp, 1);
  p.transposed = ctx.Bool("transposed", first + 3, false);
  p.output_padding = Expand(ctx.Ints("output_padding", first + 4), nsp, 0);
  p.groups = ctx.Int("groups", first + 5, 1);
  return p;
}

hlo::ConvolutionDimensionNumbers DefaultDnums(size_t nsp) {
  hlo::ConvolutionDimensionNumbers d;
  for (size_t i = 0; i < nsp; ++i) {
    d.input_spatial_dimensions.push_back(static_cast<int64_t>(i + 2));
    d.kernel_spatial_dimensions.push_back(static_cast<int64_t>(i + 2));
    d.output_spatial_dimensions.push_back(static_cast<int64_t>(i + 2));
  }
  return d;
}

std::vector<int64_t> SpatialDims(size_t nsp) { return DimRange(2, 2 + static_cast<int64_t>(nsp)); }

// Kernel [O, I/g, k...] regrouped for a backprop-input convolution: [O/g, I, k...] where the
// input-feature dim (0) pairs with grad_output's features and the output-feature dim (1) is I.
Instruction* RegroupKernel(Builder& b, Instruction* w, int64_t g) {
  std::vector<int64_t> d = Dims(w);
  if (g == 1) return w;
  int64_t O = d[0], Ig = d[1];
  std::vector<int64_t> s1 = {g, O / g, Ig};
  s1.insert(s1.end(), d.begin() + 2, d.end());
  Instruction* r = b.Reshape(w, s1);
  std::vector<int64_t> perm = {1, 0, 2};
  for (size_t i = 3; i < s1.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  r = b.Transpose(r, perm);
  std::vector<int64_t> s2 = {O / g, g * Ig};
  s2.insert(s2.end(), d.begin() + 2, d.end());
  return b.Reshape(r, s2);
}

// The backprop-input convolution: `grad` (N, O, out...) and kernel `w` laid out [O, I/g, k...]
// give (N, I, in...). `in_sizes` are the spatial sizes to produce.
Instruction* BackpropInput(Builder& b, Instruction* grad, Instruction* w, const ConvParams& p,
                           const std::vector<int64_t>& in_sizes, PrimitiveType t) {
  size_t nsp = in_sizes.size();
  std::vector<int64_t> wd = Dims(w), gd = Dims(grad);
  Instruction* k = RegroupKernel(b, w, p.groups);
  k = b.Reverse(k, SpatialDims(nsp));
  hlo::Window win;
  for (size_t i = 0; i < nsp; ++i) {
    hlo::WindowDimension d;
    d.size = wd[i + 2];
    d.stride = 1;
    d.base_dilation = p.stride[i];
    d.window_dilation = p.dilation[i];
    int64_t k_eff = (wd[i + 2] - 1) * p.dilation[i] + 1;
    int64_t expanded_out = (gd[i + 2] - 1) * p.stride[i] + 1;
    d.padding_low = k_eff - 1 - p.padding[i];
    d.padding_high = in_sizes[i] + k_eff - 1 - expanded_out - d.padding_low;
    win.dimensions.push_back(d);
  }
  hlo::ConvolutionDimensionNumbers dn = DefaultDnums(nsp);
  dn.kernel_input_feature_dimension = 0;
  dn.kernel_output_feature_dimension = 1;
  return b.Convolution(grad, k, win, dn, p.groups, 1, t);
}

// The backprop-filter convolution: activations `x` (N, C, in...) and `grad` (N, O, out...) give the
// kernel gradient [O, C/g, k...].
Instruction* BackpropFilter(Builder& b, Instruction* x, Instruction* grad, const ConvParams& p,
                            const std::vector<int64_t>& k_sizes, PrimitiveType t) {
  size_t nsp = k_sizes.size();
  std::vector<int64_t> xd = Dims(x), gd = Dims(grad);
  hlo::Window win;
  for (size_t i = 0; i < nsp; ++i) {
    hlo::WindowDimension d;
    d.size = gd[i + 2];
    d.stride = p.dilation[i];
    d.window_dilation = p.stride[i];
    d.padding_low = p.padding[i];
    d.padding_high = (k_sizes[i] - 1) * p.dilation[i] + (gd[i + 2] - 1) * p.stride[i] + 1 - xd[i + 2] - p.padding[i];
    win.dimensions.push_back(d);
  }
  hlo::ConvolutionDimensionNumbers dn;
  dn.input_batch_dimension = 1;
  dn.input_feature_dimension = 0;
  dn.input_spatial_dimensions = SpatialDims(nsp);
  dn.kernel_input_feature_dimension = 0;
  dn.kernel_output_feature_dimension = 1;
  dn.kernel_spatial_dimensions = SpatialDims(nsp);
  dn.output_batch_dimension = 1;
  dn.output_feature_dimension = 0;
  dn.output_spatial_dimensions = SpatialDims(nsp);
  return b.Convolution(x, grad, win, dn, 1, p.groups, t);
}

Instruction* Forward(Builder& b, Instruction* x, Instruction* w, const ConvParams& p, PrimitiveType t) {
  size_t nsp = static_cast<size_t>(x->shape.rank() - 2);
  std::vector<int64_t> wd = Dims(w);
  hlo::Window win;
  for (size_t i = 0; i < nsp; ++i) {
    hlo::WindowDimension d;
    d.size = wd[i + 2];
    d.stride = p.stride[i];
    d.padding_low = p.padding[i];
    d.padding_high = p.padding[i];
    d.window_dilation = p.dilation[i];
    win.dimensions.push_back(d);
  }
  return b.Convolution(x, w, win, DefaultDnums(nsp), p.groups, 1, t);
}

// Transposed convolution forward: weight [Cin, Cout/g, k...].
Instruction* TransposedForward(Builder& b, Instruction* x, Instruction* w, const ConvParams& p, PrimitiveType t) {
  size_t nsp = static_cast<size_t>(x->shape.rank() - 2);
  std::vector<int64_t> xd = Dims(x), wd = Dims(w);
  std::vector<int64_t> out_sizes;
  out_sizes.reserve(nsp);
  for (size_t i = 0; i < nsp; ++i)
    out_sizes.push_back((xd[i + 2] - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (wd[i + 2] - 1) +
                        p.output_padding[i] + 1);
  // It is the backprop-input convolution of a forward conv whose kernel is w ([O=Cin, I/g=Cout/g]).
  return BackpropInput(b, x, w, p, out_sizes, t);
}

Expected<Instruction*> WithBias(const LoweringContext& ctx, Instruction* y, const std::string& name, size_t pos,
                                PrimitiveType t) {
  Instruction* bias = ctx.Tensor(name, pos);
  if (!bias) return y;
  Builder& b = ctx.builder;
  return Add(b, y, b.Broadcast(b.Convert(bias, t), Dims(y), {1}));
}

Expected<LoweredOp> ConvCommon(const LoweringContext& ctx, Instruction* x, Instruction* w, const ConvParams& p,
                               size_t bias_pos) {
  Builder& b = ctx.builder;
  PrimitiveType t = ctx.OutputType(0, x->shape.element_type());
  if (x->shape.rank() < 3 || w->shape.rank() != x->shape.rank())
    return ctx.Unsupported("convolution needs N-d input and kernel");
  size_t nsp = static_cast<size_t>(x->shape.rank() - 2);
  if (p.stride.size() != nsp || p.padding.size() != nsp || p.dilation.size() != nsp)
    return ctx.Unsupported("stride/padding/dilation of the wrong length");
  x = b.Convert(x, t);
  w = b.Convert(w, t);
  Instruction* y = p.transposed ? TransposedForward(b, x, w, p, t) : Forward(b, x, w, p, t);
  OPPROBE_ASSIGN_OR_RETURN(y, WithBias(ctx, y, "bias", bias_pos, t));
  return ctx.Finish({y});
}

Expected<LoweredOp> Convolution(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.RequiredTensor("weight", 1));
  size_t nsp = x->shape.rank() >= 2 ? static_cast<size_t>(x->shape.rank() - 2) : 0;
  ConvParams p = ReadParams(ctx, nsp, 3);
  return ConvCommon(ctx, x, w, p, 2);
}

// How a convolution op lays out its arguments: _convolution (convolution's), conv1d/2d/3d(input, weight, bias,
// stride, padding, dilation, groups) and conv_transpose1d/2d/3d(input, weight, bias, stride, padding,
// output_padding, groups, dilation).
enum class ConvArgs { kConvolution, kConv, kConvTranspose };

Expected<LoweredOp> ConvNd(const Node& n, Builder& b, ConvArgs layout) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.RequiredTensor("weight", 1));
  bool unbatched = x->shape.rank() == w->shape.rank() - 1;
  if (unbatched) {
    std::vector<int64_t> d = Dims(x);
    d.insert(d.begin(), 1);
    x = b.Reshape(x, d);
  }
  size_t nsp = static_cast<size_t>(std::max<int64_t>(x->shape.rank() - 2, 0));
  ConvParams p;
  if (layout == ConvArgs::kConvolution) {
    p = ReadParams(ctx, nsp, 3);
  } else if (layout == ConvArgs::kConvTranspose) {
    p.transposed = true;
    p.stride = Expand(ctx.Ints("stride", 3), nsp, 1);
    p.padding = Expand(ctx.Ints("padding", 4), nsp, 0);
    p.output_padding = Expand(ctx.Ints("output_padding", 5), nsp, 0);
    p.groups = ctx.Int("groups", 6, 1);
    p.dilation = Expand(ctx.Ints("dilation", 7), nsp, 1);
  } else {
    p.stride = Expand(ctx.Ints("stride", 3), nsp, 1);
    if (const Value* pv = ctx.Arg("padding", 4); pv && pv->kind == Value::Kind::kString) {
      if (pv->s == "same") {
        p.padding.assign(nsp, 0);
        std::vector<int64_t> dil = Expand(ctx.Ints("dilation", 5), nsp, 1);
        for (size_t i = 0; i < nsp; ++i) {
          int64_t total = dil[i] * (Dims(w)[i + 2] - 1);
          if (total % 2 != 0) return ctx.Unsupported("padding='same' with uneven total padding");
          p.padding[i] = total / 2;
        }
      } else {
        p.padding.assign(nsp, 0);
      }
    } else {
      p.padding = Expand(ctx.Ints("padding", 4), nsp, 0);
    }
    p.dilation = Expand(ctx.Ints("dilation", 5), nsp, 1);
    p.groups = ctx.Int("groups", 6, 1);
    p.output_padding.assign(nsp, 0);
  }
  Builder& bb = b;
  PrimitiveType t = ctx.OutputType(0, x->shape.element_type());
  x = bb.Convert(x, t);
  w = bb.Convert(w, t);
  Instruction* y = p.transposed ? TransposedForward(bb, x, w, p, t) : Forward(bb, x, w, p, t);
  OPPROBE_ASSIGN_OR_RETURN(y, WithBias(ctx, y, "bias", 2, t));
  if (unbatched) {
    std::vector<int64_t> d = Dims(y);
    d.erase(d.begin());
    y = bb.Reshape(y, d);
  }
  return ctx.Finish({y});
}

Expected<LoweredOp> ConvolutionBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.RequiredTensor("weight", 2));
  if (x->shape.rank() < 3) return ctx.Unsupported("needs batched N-d input");
  size_t nsp = static_cast<size_t>(x->shape.rank() - 2);
  ConvParams p = ReadParams(ctx, nsp, 4);
  std::vector<bool> mask = ctx.Bools("output_mask", 10, {true, true, true});
  if (mask.size() != 3) return ctx.Unsupported("output_mask must have 3 entries");
  PrimitiveType t = g->shape.element_type();
  x = b.Convert(x, t);
  w = b.Convert(w, t);
  std::vector<int64_t> xd = Dims(x), wd = Dims(w);
  std::vector<Instruction*> outs;
  if (mask[0]) {
    std::vector<int64_t> in_sizes(xd.begin() + 2, xd.end());
    if (!p.transposed) {
      outs.push_back(BackpropInput(b, g, w, p, in_sizes, t));
    } else {
      // The transposed conv's input gradient is the plain forward conv of grad_output with w.
      outs.push_back(Forward(b, g, w, p, t));
    }
  }
  if (mask[1]) {
    std::vector<int64_t> k_sizes(wd.begin() + 2, wd.end());
    if (!p.transposed) {
      outs.push_back(BackpropFilter(b, x, g, p, k_sizes, t));
    } else {
      // Roles swap: grad_output acts as the forward input, the input as the forward output.
      outs.push_back(BackpropFilter(b, g, x, p, k_sizes, t));
    }
  }
  if (mask[2]) {
    std::vector<int64_t> dims = {0};
    for (size_t i = 0; i < nsp; ++i) dims.push_back(static_cast<int64_t>(i + 2));
    outs.push_back(ReduceSum(b, g, dims));
  }
  return ctx.Finish(outs);
}

template <ConvArgs kLayout>
Expected<LoweredOp> ConvOf(const Node& n, Builder& b) {
  return ConvNd(n, b, kLayout);
}

}  // namespace

const LoweringFamily& ConvLowerings() {
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::convolution", Convolution},
                                                     {"aten::convolution_overrideable", Convolution},
                                                     {"aten::_convolution", ConvOf<ConvArgs::kConvolution>},
                                                     {"aten::conv1d", ConvOf<ConvArgs::kConv>},
                                                     {"aten::conv2d", ConvOf<ConvArgs::kConv>},
                                                     {"aten::conv3d", ConvOf<ConvArgs::kConv>},
                                                     {"aten::conv_transpose1d", ConvOf<ConvArgs::kConvTranspose>},
                                                     {"aten::conv_transpose2d", ConvOf<ConvArgs::kConvTranspose>},
                                                     {"aten::conv_transpose3d", ConvOf<ConvArgs::kConvTranspose>},
                                                     {"aten::convolution_backward", ConvolutionBackward},
                                                 }};
  return *family;
}
}  // namespace opprobe::analyzer::lowering
