// Normalizations as reductions (torchax / ATen's math kernels): mean and biased variance by
// reduce-add, rsqrt, multiply/add; backward ops from the same statistics. f16/bf16 inputs
// accumulate in f32 like ATen's CPU kernels. Also weight_norm and renorm (a p-norm and a scale), and
// the batch_norm / layer_norm composites torch.export keeps.
#include <fmt/format.h>

#include <numeric>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

PrimitiveType AccType(PrimitiveType t) {
  return t == PrimitiveType::F16 || t == PrimitiveType::BF16 ? PrimitiveType::F32 : FloatType(t);
}

// Channel vector (C) broadcast along dim 1 of `dims` (or a constant when absent).
Instruction* PerChannel(Builder& b, Instruction* v, PrimitiveType t, const std::vector<int64_t>& dims, double def,
                        int64_t channel_dim = 1) {
  if (!v) return Full(b, t, def, dims);
  return b.Broadcast(b.Convert(v, t), dims, {channel_dim});
}

// An output value shaped like the node's output `i` (empty tensors for unused statistics).
Instruction* Shaped(const LoweringContext& ctx, size_t i, Instruction* v) {
  const TensorMeta* m = ctx.OutputMeta(i);
  if (!m) return v;
  if (m->sizes != Dims(v) && Numel(m->sizes) == 0) return Full(ctx.builder, m->dtype, 0, m->sizes);
  return ctx.builder.Convert(m->sizes == Dims(v) ? v : ctx.builder.Reshape(v, m->sizes), m->dtype);
}

// The forms of batch norm: native_batch_norm and _native_batch_norm_legit (training from the `training`
// argument; the legit op's no_stats overload always trains), _native_batch_norm_legit_no_training, and
// _native_batch_norm_legit_functional, which also returns the updated running statistics.
enum class BatchNormForm { kNative, kNoTraining, kFunctional };

Expected<LoweredOp> BatchNorm(const Node& n, Builder& b, BatchNormForm form) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  Instruction* w = ctx.Tensor("weight", 1);
  Instruction* bias = ctx.Tensor("bias", 2);
  Instruction* rm = ctx.Tensor("running_mean", 3);
  Instruction* rv = ctx.Tensor("running_var", 4);
  bool training = form == BatchNormForm::kNoTraining ? false : ctx.Bool("training", 5, true);
  if (n.overload == "no_stats") training = true;
  double eps = ctx.Double("eps", 7, 1e-5);
  PrimitiveType in_t = x0->shape.element_type();
  PrimitiveType t = AccType(in_t);
  Instruction* x = b.Convert(x0, t);
  std::vector<int64_t> dims = Dims(x);
  if (dims.size() < 2) return ctx.Unsupported("needs at least 2 dims");
  std::vector<int64_t> red = {0};
  for (size_t i = 2; i < dims.size(); ++i) red.push_back(static_cast<int64_t>(i));
  const int64_t per_channel = Numel(dims) / dims[1];  // exact: every element of one channel
  double count = static_cast<double>(per_channel);
  Instruction *mean, *invstd;
  if (training || !rm || !rv) {
    mean = MulScalar(b, ReduceSum(b, x, red), 1.0 / count);
    Instruction* centered = Sub(b, x, b.Broadcast(mean, dims, {1}));
    Instruction* var = MulScalar(b, ReduceSum(b, Mul(b, centered, centered), red), 1.0 / count);
    invstd = b.Unary(Opcode::kRsqrt, AddScalar(b, var, eps));
  } else {
    mean = b.Convert(rm, t);
    invstd = b.Unary(Opcode::kRsqrt, AddScalar(b, b.Convert(rv, t), eps));
  }
  Instruction* y = Mul(b, Sub(b, x, b.Broadcast(mean, dims, {1})), b.Broadcast(invstd, dims, {1}));
  if (w) y = Mul(b, y, PerChannel(b, w, t, dims, 1));
  if (bias) y = Add(b, y, PerChannel(b, bias, t, dims, 0));
  std::vector<Instruction*> outs = {b.Convert(y, in_t)};
  outs.push_back(Shaped(ctx, 1, mean));
  outs.push_back(Shaped(ctx, 2, invstd));
  if (form == BatchNormForm::kFunctional) {
    // also returns the updated running statistics
    double momentum = ctx.Double("momentum", 6, 0.1);
    if (!rm || !rv) return ctx.Unsupported("needs running statistics");
    Instruction* nm = Add(b, MulScalar(b, b.Convert(rm, t), 1 - momentum), MulScalar(b, mean, momentum));
    double unbias = count > 1 ? count / (count - 1) : 1;
    Instruction* var = Sub(b, Div(b, FullLike(b, invstd, 1), Mul(b, invstd, invstd)), FullLike(b, invstd, eps));
    Instruction* nv = Add(b, MulScalar(b, b.Convert(rv, t), 1 - momentum), MulScalar(b, var, momentum * unbias));
    outs.push_back(Shaped(ctx, 3, nm));
    outs.push_back(Shaped(ctx, 4, nv));
  }
  return ctx.Finish(outs);
}

Expected<LoweredOp> NativeBatchNorm(const Node& n, Builder& b) { return BatchNorm(n, b, BatchNormForm::kNative); }
Expected<LoweredOp> BatchNormNoTraining(const Node& n, Builder& b) {
  return BatchNorm(n, b, BatchNormForm::kNoTraining);
}
Expected<LoweredOp> BatchNormFunctional(const Node& n, Builder& b) {
  return BatchNorm(n, b, BatchNormForm::kFunctional);
}

Expected<LoweredOp> BatchNormBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_out", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 1));
  Instruction* w = ctx.Tensor("weight", 2);
  Instruction* rm = ctx.Tensor("running_mean", 3);
  Instruction* rv = ctx.Tensor("running_var", 4);
  Instruction* sm = ctx.Tensor("save_mean", 5);
  Instruction* si = ctx.Tensor("save_invstd", 6);
  bool train = ctx.Bool("train", 7, true);
  double eps = ctx.Double("eps", 8, 1e-5);
  std::vector<bool> mask = ctx.Bools("output_mask", 9, {true, true, true});
  PrimitiveType in_t = x0->shape.element_type();
  PrimitiveType t = AccType(in_t);
  Instruction* x = b.Convert(x0, t);
  Instruction* g = b.Convert(g0, t);
  std::vector<int64_t> dims = Dims(x);
  if (dims.size() < 2) return ctx.Unsupported("needs at least 2 dims");
  std::vector<int64_t> red = {0};
  for (size_t i = 2; i < dims.size(); ++i) red.push_back(static_cast<int64_t>(i));
  const int64_t per_channel = Numel(dims) / dims[1];  // exact: every element of one channel
  double count = static_cast<double>(per_channel);
  Instruction *mean, *invstd;
  if (train) {
    if (!sm || !si) return ctx.Unsupported("training backward needs save_mean and save_invstd");
    mean = b.Convert(sm, t);
    invstd = b.Convert(si, t);
  } else {
    if (!rm || !rv) return ctx.Unsupported("eval backward needs running statistics");
    mean = b.Convert(rm, t);
    invstd = b.Unary(Opcode::kRsqrt, AddScalar(b, b.Convert(rv, t), eps));
  }
  Instruction* xhat = Mul(b, Sub(b, x, b.Broadcast(mean, dims, {1})), b.Broadcast(invstd, dims, {1}));
  Instruction* sum_g = ReduceSum(b, g, red);
  Instruction* sum_gx = ReduceSum(b, Mul(b, g, xhat), red);
  Instruction* wv = w ? b.Convert(w, t) : Full(b, t, 1, {dims[1]});
  std::vector<Instruction*> outs;
  if (mask.size() > 0 && mask[0]) {
    Instruction* scale = Mul(b, wv, invstd);  // [C]
    Instruction* gi;
    if (train) {
      // w * invstd * (g - sum_g/N - xhat * sum_gx/N)
      Instruction* mg = b.Broadcast(MulScalar(b, sum_g, 1.0 / count), dims, {1});
      Instruction* mgx = b.Broadcast(MulScalar(b, sum_gx, 1.0 / count), dims, {1});
      gi = Mul(b, b.Broadcast(scale, dims, {1}), Sub(b, Sub(b, g, mg), Mul(b, xhat, mgx)));
    } else {
      gi = Mul(b, g, b.Broadcast(scale, dims, {1}));
    }
    outs.push_back(b.Convert(gi, in_t));
  }
  if (mask.size() > 1 && mask[1]) outs.push_back(b.Convert(sum_gx, ctx.OutputType(outs.size(), t)));
  if (mask.size() > 2 && mask[2]) outs.push_back(b.Convert(sum_g, ctx.OutputType(outs.size(), t)));
  return ctx.Finish(outs);
}

Expected<LoweredOp> LayerNorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  std::vector<int64_t> norm_shape = ctx.Ints("normalized_shape", 1);
  Instruction* w = ctx.Tensor("weight", 2);
  Instruction* bias = ctx.Tensor("bias", 3);
  double eps = ctx.Double("eps", 4, 1e-5);
  PrimitiveType in_t = x0->shape.element_type();
  PrimitiveType t = AccType(in_t);
  Instruction* x = b.Convert(x0, t);
  std::vector<int64_t> dims = Dims(x);
  int64_t axis = static_cast<int64_t>(dims.size()) - static_cast<int64_t>(norm_shape.size());
  if (axis < 0) return ctx.Unsupported("normalized_shape longer than the input rank");
  std::vector<int64_t> red, keep;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) (i >= axis ? red : keep).push_back(i);
  double count = static_cast<double>(Numel(norm_shape));
  Instruction* mean = MulScalar(b, ReduceSum(b, x, red), 1.0 / count);
  Instruction* centered = Sub(b, x, b.Broadcast(mean, dims, keep));
  Instruction* var = MulScalar(b, ReduceSum(b, Mul(b, centered, centered), red), 1.0 / count);
  Instruction* rstd = b.Unary(Opcode::kRsqrt, AddScalar(b, var, eps));
  Instruction* y = Mul(b, centered, b.Broadcast(rstd, dims, keep));
  if (w) y = Mul(b, y, b.Broadcast(b.Convert(w, t), dims, red));
  if (bias) y = Add(b, y, b.Broadcast(b.Convert(bias, t), dims, red));
  std::vector<int64_t> stat_dims = KeepDims(dims, red);
  std::vector<Instruction*> outs = {b.Convert(y, in_t)};
  if (ctx.node.outputs.size() > 1 || ctx.node.outputs.empty()) {
    outs.push_back(Shaped(ctx, 1, b.Reshape(mean, stat_dims)));
    outs.push_back(Shaped(ctx, 2, b.Reshape(rstd, stat_dims)));
  }
  return ctx.Finish(outs);
}

Expected<LoweredOp> LayerNormBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_out", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 1));
  std::vector<int64_t> norm_shape = ctx.Ints("normalized_shape", 2);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * mean0, ctx.RequiredTensor("mean", 3));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rstd0, ctx.RequiredTensor("rstd", 4));
  Instruction* w = ctx.Tensor("weight", 5);
  std::vector<bool> mask = ctx.Bools("output_mask", 7, {true, true, true});
  PrimitiveType in_t = x0->shape.element_type();
  PrimitiveType t = AccType(in_t);
  Instruction* x = b.Convert(x0, t);
  Instruction* g = b.Convert(g0, t);
  std::vector<int64_t> dims = Dims(x);
  int64_t axis = static_cast<int64_t>(dims.size()) - static_cast<int64_t>(norm_shape.size());
  if (axis < 0) return ctx.Unsupported("normalized_shape longer than the input rank");
  std::vector<int64_t> red, keep;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) (i >= axis ? red : keep).push_back(i);
  std::vector<int64_t> kdims;
  kdims.reserve(keep.size());
  for (int64_t k : keep) kdims.push_back(dims[static_cast<size_t>(k)]);
  Instruction* mean = b.Broadcast(b.Reshape(b.Convert(mean0, t), kdims), dims, keep);
  Instruction* rstd = b.Broadcast(b.Reshape(b.Convert(rstd0, t), kdims), dims, keep);
  Instruction* xhat = Mul(b, Sub(b, x, mean), rstd);
  std::vector<Instruction*> outs;
  double count = static_cast<double>(Numel(norm_shape));
  if (mask[0]) {
    Instruction* wg = w ? Mul(b, g, b.Broadcast(b.Convert(w, t), dims, red)) : g;
    Instruction* s1 = BcastBack(b, ReduceSum(b, wg, red), dims, red);
    Instruction* s2 = BcastBack(b, ReduceSum(b, Mul(b, wg, xhat), red), dims, red);
    // rstd/N * (N*wg - s1 - xhat*s2)
    Instruction* inner = Sub(b, Sub(b, MulScalar(b, wg, count), s1), Mul(b, xhat, s2));
    outs.push_back(b.Convert(MulScalar(b, Mul(b, rstd, inner), 1.0 / count), in_t));
  }
  if (mask.size() > 1 && mask[1]) {
    if (w) outs.push_back(b.Convert(ReduceSum(b, Mul(b, g, xhat), keep), ctx.OutputType(outs.size(), t)));
  }
  if (mask.size() > 2 && mask[2]) {
    if (ctx.Tensor("bias", 6) || ctx.OutputMeta(outs.size()))
      outs.push_back(b.Convert(ReduceSum(b, g, keep), ctx.OutputType(outs.size(), t)));
  }
  return ctx.Finish(outs);
}

Expected<LoweredOp> GroupNorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  Instruction* w = ctx.Tensor("weight", 1);
  Instruction* bias = ctx.Tensor("bias", 2);
  int64_t N = ctx.Int("N", 3, 0), C = ctx.Int("C", 4, 0), HxW = ctx.Int("HxW", 5, 0), G = ctx.Int("group", 6, 1);
  double eps = ctx.Double("eps", 7, 1e-5);
  if (G <= 0 || C % G != 0) return ctx.Unsupported("C must be divisible by group");
  PrimitiveType in_t = x0->shape.element_type();
  PrimitiveType t = AccType(in_t);
  Instruction* x = b.Reshape(b.Convert(x0, t), {N, G, C / G * HxW});
  std::vector<int64_t> gd = Dims(x);
  const int64_t per_group = C / G * HxW;  // exact: G divides C
  double count = static_cast<double>(per_group);
  Instruction* mean = MulScalar(b, ReduceSum(b, x, {2}), 1.0 / count);
  Instruction* centered = Sub(b, x, b.Broadcast(mean, gd, {0, 1}));
  Instruction* var = MulScalar(b, ReduceSum(b, Mul(b, centered, centered), {2}), 1.0 / count);
  Instruction* rstd = b.Unary(Opcode::kRsqrt, AddScalar(b, var, eps));
  Instruction* y = b.Reshape(Mul(b, centered, b.Broadcast(rstd, gd, {0, 1})), {N, C, HxW});
  std::vector<int64_t> yd = {N, C, HxW};
  if (w) y = Mul(b, y, b.Broadcast(b.Convert(w, t), yd, {1}));
  if (bias) y = Add(b, y, b.Broadcast(b.Convert(bias, t), yd, {1}));
  y = b.Reshape(y, Dims(x0));
  return ctx.Finish({b.Convert(y, in_t), Shaped(ctx, 1, mean), Shaped(ctx, 2, rstd)});
}

Expected<LoweredOp> GroupNormBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_out", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * mean0, ctx.RequiredTensor("mean", 2));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rstd0, ctx.RequiredTensor("rstd", 3));
  Instruction* w = ctx.Tensor("weight", 4);
  int64_t N = ctx.Int("N", 5, 0), C = ctx.Int("C", 6, 0), HxW = ctx.Int("HxW", 7, 0), G = ctx.Int("group", 8, 1);
  std::vector<bool> mask = ctx.Bools("output_mask", 9, {true, true, true});
  if (G <= 0 || C % G != 0) return ctx.Unsupported("C must be divisible by group");
  PrimitiveType in_t = x0->shape.element_type();
  PrimitiveType t = AccType(in_t);
  int64_t D = C / G * HxW;
  std::vector<int64_t> cd = {N, C, HxW}, gd = {N, G, D};
  Instruction* x = b.Reshape(b.Convert(x0, t), gd);
  Instruction* g = b.Reshape(b.Convert(g0, t), cd);
  Instruction* mean = b.Broadcast(b.Reshape(b.Convert(mean0, t), {N, G}), gd, {0, 1});
  Instruction* rstd = b.Broadcast(b.Reshape(b.Convert(rstd0, t), {N, G}), gd, {0, 1});
  Instruction* xhat = Mul(b, Sub(b, x, mean), rstd);  // [N, G, D]
  Instruction* xhat_c = b.Reshape(xhat, cd);
  std::vector<Instruction*> outs;
  if (mask[0]) {
    Instruction* wg = w ? Mul(b, g, b.Broadcast(b.Convert(w, t), cd, {1})) : g;
    wg = b.Reshape(wg, gd);
    Instruction* s1 = b.Broadcast(ReduceSum(b, wg, {2}), gd, {0, 1});
    Instruction* s2 = b.Broadcast(ReduceSum(b, Mul(b, wg, xhat), {2}), gd, {0, 1});
    Instruction* inner = Sub(b, Sub(b, MulScalar(b, wg, static_cast<double>(D)), s1), Mul(b, xhat, s2));
    Instruction* gi = MulScalar(b, Mul(b, rstd, inner), 1.0 / static_cast<double>(D));
    outs.push_back(b.Convert(b.Reshape(gi, Dims(x0)), in_t));
  }
  if (mask.size() > 1 && mask[1])
    outs.push_back(b.Convert(ReduceSum(b, Mul(b, g, xhat_c), {0, 2}), ctx.OutputType(outs.size(), t)));
  if (mask.size() > 2 && mask[2]) outs.push_back(b.Convert(ReduceSum(b, g, {0, 2}), ctx.OutputType(outs.size(), t)));
  return ctx.Finish(outs);
}

// Dims of x except `dim` (the weight-norm reduction dims); dim == -1 means all.
std::vector<int64_t> OtherDims(int64_t rank, int64_t dim) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim) r.push_back(i);
  return r;
}

Expected<LoweredOp> WeightNorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v, ctx.RequiredTensor("v", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("g", 1));
  int64_t dim = ctx.Int("dim", 2, 0);
  std::vector<int64_t> vd = Dims(v);
  std::vector<int64_t> red = OtherDims(v->shape.rank(), dim);
  // norm = sqrt(sum(v^2) over the other dims), shaped like g; w = v * g / norm
  Instruction* norm = b.Reshape(b.Unary(Opcode::kSqrt, ReduceSum(b, Mul(b, v, v), red)), Dims(g));
  Instruction* scale = Div(b, b.Convert(g, v->shape.element_type()), norm);
  return ctx.Finish({Mul(b, v, Bcast(b, scale, vd)), norm});
}

Expected<LoweredOp> WeightNormBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * gw, ctx.RequiredTensor("grad_w", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v, ctx.RequiredTensor("saved_v", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("saved_g", 2));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * norms, ctx.RequiredTensor("saved_norms", 3));
  int64_t dim = ctx.Int("dim", 4, 0);
  std::vector<int64_t> vd = Dims(v);
  std::vector<int64_t> red = OtherDims(v->shape.rank(), dim);
  // ATen's weight_norm backward: per_dir = sum(grad_w * v); grad_g = per_dir / norms;
  // grad_v = (g / norms) * (grad_w - v * per_dir / norms^2)
  Instruction* per_dir = b.Reshape(ReduceSum(b, Mul(b, gw, v), red), Dims(g));
  Instruction* grad_g = Div(b, per_dir, norms);
  Instruction* coef = Div(b, per_dir, Mul(b, norms, norms));
  Instruction* grad_v = Mul(b, Bcast(b, Div(b, g, norms), vd), Sub(b, gw, Mul(b, v, Bcast(b, coef, vd))));
  return ctx.Finish({grad_v, grad_g});
}

Expected<LoweredOp> Renorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double p = ctx.Double("p", 1, 2), maxnorm = ctx.Double("maxnorm", 3, 1);
  auto d = WrapDim(ctx.Int("dim", 2, 0), x->shape.rank());
  if (!d) return ctx.Unsupported("dimension out of range");
  std::vector<int64_t> dims = Dims(x), red;
  for (int64_t i = 0; i < x->shape.rank(); ++i)
    if (i != *d) red.push_back(i);
  Instruction* a = b.Unary(Opcode::kAbs, x);
  Instruction* s = ReduceSum(b, b.Binary(Opcode::kPower, a, FullLike(b, a, p)), red);
  Instruction* norm = b.Binary(Opcode::kPower, s, FullLike(b, s, 1 / p));
  Instruction* factor = b.Select(CmpScalar(b, norm, maxnorm, ComparisonDirection::kGt),
                                 Div(b, FullLike(b, norm, maxnorm), AddScalar(b, norm, 1e-7)), FullLike(b, norm, 1));
  return ctx.Finish({Mul(b, x, b.Broadcast(factor, dims, {*d}))});
}

// _batch_norm_with_update (BatchNorm in training mode, 2.4+): native_batch_norm with training=True, plus the
// empty `reserve` tensor the op also returns. (Its in-place update of running_mean/var is not an output.)
Expected<LoweredOp> BatchNormWithUpdate(const Node& n, Builder& b) {
  Node bn = n;
  bn.op = "aten::native_batch_norm";
  bn.overload = "default";
  bn.args.clear();
  for (const char* name : {"input", "weight", "bias", "running_mean", "running_var"}) {
    const Value* v = n.arg(name, bn.args.size());
    bn.args.push_back({name, v ? *v : Value::None()});
  }
  bn.args.push_back({"training", Value::Bool(true)});
  const Value* momentum = n.arg("momentum", 5);
  const Value* eps = n.arg("eps", 6);
  bn.args.push_back({"momentum", momentum ? *momentum : Value::Float(0.1)});
  bn.args.push_back({"eps", eps ? *eps : Value::Float(1e-5)});
  if (bn.outputs.size() > 3) bn.outputs.resize(3);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, NativeBatchNorm(bn, b));
  if (n.outputs.size() > 3 && n.outputs[3].kind == Value::Kind::kTensor)
    op.outputs.push_back(Full(b, n.outputs[3].tensor.dtype, 0, n.outputs[3].tensor.sizes));
  return op;
}

// batch_norm and layer_norm, which torch.export (2.5+) keeps undecomposed: the native op's first value.
Expected<LoweredOp> BatchNormComposite(const Node& n, Builder& b) {
  std::vector<Argument> args;
  const char* names[] = {"input", "weight", "bias", "running_mean", "running_var"};
  args.reserve(5);
  for (size_t i = 0; i < 5; ++i) args.push_back({names[i], ArgOr(n, names[i], i, Value::None())});
  args.push_back({"training", ArgOr(n, "training", 5, Value::Bool(false))});
  args.push_back({"momentum", ArgOr(n, "momentum", 6, Value::Float(0.1))});
  args.push_back({"eps", ArgOr(n, "eps", 7, Value::Float(1e-5))});
  return LowerAsFirstOutputOf(n, b, "aten::native_batch_norm", NativeBatchNorm, std::move(args));
}

Expected<LoweredOp> LayerNormComposite(const Node& n, Builder& b) {
  std::vector<Argument> args;
  const char* names[] = {"input", "normalized_shape", "weight", "bias"};
  args.reserve(4);
  for (size_t i = 0; i < 4; ++i) args.push_back({names[i], ArgOr(n, names[i], i, Value::None())});
  args.push_back({"eps", ArgOr(n, "eps", 4, Value::Float(1e-5))});
  return LowerAsFirstOutputOf(n, b, "aten::native_layer_norm", LayerNorm, std::move(args));
}

}  // namespace

const LoweringFamily& NormLowerings() {
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"aten::native_batch_norm", NativeBatchNorm},
                             {"aten::_native_batch_norm_legit", NativeBatchNorm},
                             {"aten::_native_batch_norm_legit_no_training", BatchNormNoTraining},
                             {"aten::_native_batch_norm_legit_functional", BatchNormFunctional},
                             {"aten::_batch_norm_with_update", BatchNormWithUpdate},
                             {"aten::batch_norm", BatchNormComposite},
                             {"aten::native_batch_norm_backward", BatchNormBackward},
                             {"aten::native_layer_norm", LayerNorm},
                             {"aten::layer_norm", LayerNormComposite},
                             {"aten::native_layer_norm_backward", LayerNormBackward},
                             {"aten::native_group_norm", GroupNorm},
                             {"aten::native_group_norm_backward", GroupNormBackward},
                             {"aten::_weight_norm_interface", WeightNorm},
                             {"aten::_weight_norm_interface_backward", WeightNormBackward},
                             {"aten::renorm", Renorm},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
