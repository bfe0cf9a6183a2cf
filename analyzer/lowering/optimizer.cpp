// Optimizer ops. PyTorch 1.13's SGD and Adam run per-tensor ops by default (add_, mul_, addcmul_,
// addcdiv_, sqrt, div_, ...), which the elementwise family lowers; with foreach=True (and in 2.x
// by default) they dispatch `_foreach_*` ops over tensor lists, lowered here as one elementwise
// computation per list entry (what XLA does after functionalization). PyTorch 2.x adds the fused optimizers
// `_fused_adam_`, `_fused_adamw_` and `_fused_sgd_` (Adam/AdamW/SGD with fused=True), lowered as the
// per-parameter update they compute: they return nothing (they write the parameters and their state), so the
// lowering's values are the updated tensors in list order, every param, then every state tensor it writes; and
// `_foreach_norm` (clip_grad_norm_ with foreach), one p-norm per list entry.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

// The scalar operand of entry i: a number, an entry of a scalar list, or a tensor of a list.
Expected<Instruction*> Other(const LoweringContext& ctx, const std::string& name, size_t pos, size_t i, PrimitiveType t,
                             const std::vector<int64_t>& dims) {
  Builder& b = ctx.builder;
  const Value* v = ctx.Arg(name, pos);
  if (!v) v = ctx.Arg("scalar", pos);
  if (!v) v = ctx.Arg("scalars", pos);
  if (!v) v = ctx.Arg("other", pos);
  if (!v) v = ctx.Arg("exponent", pos);
  if (!v) return ctx.Unsupported("missing second operand");
  switch (v->kind) {
    case Value::Kind::kTensorList: {
      std::vector<Instruction*> l = ctx.TensorList(name, pos);
      if (l.empty()) l = ctx.TensorList("other", pos);
      if (i >= l.size() || !l[i]) return ctx.Unsupported("tensor lists of different lengths");
      return Bcast(b, b.Convert(l[i], t), dims);
    }
    case Value::Kind::kTensor:
      return Bcast(b, b.Convert(ctx.Tensor(name, pos) ? ctx.Tensor(name, pos) : ctx.Tensor("scalar", pos), t), dims);
    case Value::Kind::kFloatList:
      if (i >= v->floats.size()) return ctx.Unsupported("scalar list too short");
      return b.Broadcast(Scalar(b, t, v->floats[i]), dims, {});
    case Value::Kind::kIntList:
      if (i >= v->ints.size()) return ctx.Unsupported("scalar list too short");
      return b.Broadcast(Scalar(b, t, static_cast<double>(v->ints[i])), dims, {});
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kBool:
    case Value::Kind::kComplex: return b.Broadcast(ScalarOf(b, t, *v), dims, {});
    default: return ctx.Unsupported("unsupported second operand " + v->ToString());
  }
}

// One unary body per list entry, in the float type (or the entry's own type with `keeps_type`: abs, neg, sign).
LoweringFn ForeachUnary(UnaryBody body, bool keeps_type = false) {
  return [body, keeps_type](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    std::vector<Instruction*> xs = ctx.TensorList("self", 0);
    std::vector<Instruction*> outs;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i]) return ctx.Unsupported("None in a tensor list");
      PrimitiveType t = keeps_type ? xs[i]->shape.element_type() : FloatType(xs[i]->shape.element_type());
      outs.push_back(body(b, b.Convert(xs[i], t)));
    }
    return ctx.Finish(outs);
  };
}

// A foreach binary body: entry x and its second operand y (a tensor of a list, a scalar of a list, or one
// scalar), both in the entry's type t and dims; `i` is the entry's index (lerp reads its weight list).
using ForeachBody = Expected<Instruction*> (*)(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t i,
                                               PrimitiveType t);

// One binary body per list entry, in the entry's recorded type (made float with `float_result`: div).
// `other_name` is the second list's schema name (`other`; `tensors1` for lerp).
LoweringFn ForeachBinary(ForeachBody body, bool float_result = false, const std::string& other_name = "other") {
  return [body, float_result, other_name](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    std::vector<Instruction*> xs = ctx.TensorList("self", 0);
    std::vector<Instruction*> outs;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i]) return ctx.Unsupported("None in a tensor list");
      Instruction* x = xs[i];
      PrimitiveType t = ctx.OutputType(i, x->shape.element_type());
      if (float_result) t = FloatType(t);
      x = b.Convert(x, t);
      std::vector<int64_t> dims = Dims(x);
      OPPROBE_ASSIGN_OR_RETURN(Instruction * y, Other(ctx, other_name, 1, i, t, dims));
      OPPROBE_ASSIGN_OR_RETURN(Instruction * r, body(ctx, x, y, i, t));
      outs.push_back(r);
    }
    return ctx.Finish(outs);
  };
}

// y * alpha for add/sub (y when alpha is absent or 1).
Instruction* AlphaScaled(const LoweringContext& ctx, Instruction* y, PrimitiveType t) {
  Builder& b = ctx.builder;
  const Value* alpha = ctx.Arg("alpha", 2);
  if (alpha && !alpha->is_none() && alpha->AsDouble() != 1)
    return Mul(b, y, b.Broadcast(ScalarOf(b, t, *alpha), Dims(y), {}));
  return y;
}

Expected<Instruction*> ForeachAdd(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t, PrimitiveType t) {
  return Add(ctx.builder, x, AlphaScaled(ctx, y, t));
}
Expected<Instruction*> ForeachSub(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t, PrimitiveType t) {
  return Sub(ctx.builder, x, AlphaScaled(ctx, y, t));
}
Expected<Instruction*> ForeachMul(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t, PrimitiveType) {
  return Mul(ctx.builder, x, y);
}
Expected<Instruction*> ForeachDiv(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t, PrimitiveType) {
  return Div(ctx.builder, x, y);
}
Expected<Instruction*> ForeachMaximum(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t,
                                      PrimitiveType) {
  return ctx.builder.Binary(Opcode::kMaximum, x, y);
}
Expected<Instruction*> ForeachMinimum(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t,
                                      PrimitiveType) {
  return ctx.builder.Binary(Opcode::kMinimum, x, y);
}
Expected<Instruction*> ForeachPow(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t, PrimitiveType) {
  return ctx.builder.Binary(Opcode::kPower, x, y);
}
// x + w (y - x), the weight a scalar or a third list.
Expected<Instruction*> ForeachLerp(const LoweringContext& ctx, Instruction* x, Instruction* y, size_t i,
                                   PrimitiveType t) {
  Builder& b = ctx.builder;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, Other(ctx, "weight", 2, i, t, Dims(x)));
  return Add(b, x, Mul(b, w, Sub(b, y, x)));
}

Expected<LoweredOp> ForeachAddc(const Node& n, Builder& b, bool mul) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> xs = ctx.TensorList("self", 0);
  std::vector<Instruction*> t1 = ctx.TensorList("tensor1", 1);
  std::vector<Instruction*> t2 = ctx.TensorList("tensor2", 2);
  if (t1.size() != xs.size() || t2.size() != xs.size()) return ctx.Unsupported("tensor lists of different lengths");
  std::vector<Instruction*> outs;
  for (size_t i = 0; i < xs.size(); ++i) {
    PrimitiveType t = xs[i]->shape.element_type();
    std::vector<int64_t> dims = Dims(xs[i]);
    Instruction* p = mul ? Mul(b, Bcast(b, b.Convert(t1[i], t), dims), Bcast(b, b.Convert(t2[i], t), dims))
                         : Div(b, Bcast(b, b.Convert(t1[i], t), dims), Bcast(b, b.Convert(t2[i], t), dims));
    const Value* v = ctx.Arg("value", 3);
    if (!v) v = ctx.Arg("scalars", 3);
    Instruction* s = nullptr;
    if (v && v->kind == Value::Kind::kTensor) {
      // A 1-d tensor of per-entry scalars: slice entry i.
      Instruction* st = ctx.Tensor("scalars", 3);
      s = b.Broadcast(
          b.Reshape(b.SliceInDim(b.Convert(st, t), static_cast<int64_t>(i), static_cast<int64_t>(i) + 1, 1, 0), {}),
          dims, {});
    } else if (v) {
      OPPROBE_ASSIGN_OR_RETURN(s, Other(ctx, v->kind == Value::Kind::kFloatList ? "scalars" : "value", 3, i, t, dims));
    }
    if (s) p = Mul(b, p, s);
    outs.push_back(Add(b, xs[i], p));
  }
  return ctx.Finish(outs);
}
Expected<LoweredOp> ForeachAddcmul(const Node& n, Builder& b) { return ForeachAddc(n, b, true); }
Expected<LoweredOp> ForeachAddcdiv(const Node& n, Builder& b) { return ForeachAddc(n, b, false); }

Expected<LoweredOp> ForeachZero(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> outs;
  for (Instruction* x : ctx.TensorList("self", 0)) outs.push_back(FullLike(b, x, 0));
  return ctx.Finish(outs);
}

Expected<LoweredOp> ForeachNorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> xs = ctx.TensorList("self", 0);
  const double ord = ctx.Double("ord", 1, 2);
  std::optional<PrimitiveType> dtype = ctx.Dtype("dtype", 2);
  std::vector<Instruction*> outs;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i]) return ctx.Unsupported("None in a tensor list");
    PrimitiveType t = dtype ? *dtype : FloatType(xs[i]->shape.element_type());
    Instruction* a = b.Unary(Opcode::kAbs, b.Convert(xs[i], t));
    std::vector<int64_t> all = AllDims(a);
    Instruction* r;
    if (std::isinf(ord)) {
      r = ord > 0 ? ReduceMax(b, a, all) : ReduceMin(b, a, all);
    } else if (ord == 0) {
      r = ReduceSum(b, b.Convert(CmpScalar(b, a, 0, ComparisonDirection::kNe), t), all);
    } else if (ord == 1) {
      r = ReduceSum(b, a, all);
    } else if (ord == 2) {
      r = b.Unary(Opcode::kSqrt, ReduceSum(b, Mul(b, a, a), all));
    } else {
      Instruction* s = ReduceSum(b, b.Binary(Opcode::kPower, a, Full(b, t, ord, Dims(a))), all);
      r = b.Binary(Opcode::kPower, s, Scalar(b, t, 1.0 / ord));
    }
    outs.push_back(r);
  }
  return ctx.Finish(outs);
}

// A scalar optimizer hyper-parameter: a number, or a 0-d/1-element tensor (the `tensor_lr` overloads).
Expected<Instruction*> Hyper(const LoweringContext& ctx, const std::string& name, size_t pos, PrimitiveType t,
                             const std::vector<int64_t>& dims) {
  Builder& b = ctx.builder;
  const Value* v = ctx.Arg(name, pos);
  if (!v || v->is_none()) return ctx.Unsupported("missing argument " + name);
  if (v->kind == Value::Kind::kTensor) {
    Instruction* x = ctx.Tensor(name, pos);
    return b.Broadcast(b.Reshape(b.Convert(x, t), {}), dims, {});
  }
  return b.Broadcast(ScalarOf(b, t, *v), dims, {});
}

// grad (divided by grad_scale when given, negated for maximize) of entry i.
Expected<Instruction*> Grad(const LoweringContext& ctx, const std::vector<Instruction*>& grads, size_t i,
                            PrimitiveType t, const std::vector<int64_t>& dims, bool maximize) {
  Builder& b = ctx.builder;
  Instruction* g = Bcast(b, b.Convert(grads[i], t), dims);
  if (Instruction* scale = ctx.Tensor("grad_scale", 100))
    g = Div(b, g, Bcast(b, b.Convert(b.Reshape(scale, {}), t), dims));
  if (maximize) g = b.Unary(Opcode::kNegate, g);
  return g;
}

Expected<LoweredOp> FusedAdam(const Node& n, Builder& b, bool adamw) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> ps = ctx.TensorList("self", 0), gs = ctx.TensorList("grads", 1),
                            ms = ctx.TensorList("exp_avgs", 2), vs = ctx.TensorList("exp_avg_sqs", 3),
                            maxs = ctx.TensorList("max_exp_avg_sqs", 4), steps = ctx.TensorList("state_steps", 5);
  bool amsgrad = ctx.Bool("amsgrad", 12, false), maximize = ctx.Bool("maximize", 13, false);
  if (gs.size() != ps.size() || ms.size() != ps.size() || vs.size() != ps.size() || steps.size() != ps.size() ||
      (amsgrad && maxs.size() != ps.size()))
    return ctx.Unsupported("tensor lists of different lengths");
  const double beta1 = ctx.Double("beta1", 7, 0.9), beta2 = ctx.Double("beta2", 8, 0.999);
  const double wd = ctx.Double("weight_decay", 9, 0), eps = ctx.Double("eps", 10, 1e-8);
  std::vector<Instruction*> new_p, new_m, new_v, new_max;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (!ps[i] || !gs[i] || !ms[i] || !vs[i] || !steps[i]) return ctx.Unsupported("None in a tensor list");
    PrimitiveType t = ps[i]->shape.element_type();
    std::vector<int64_t> dims = Dims(ps[i]);
    Instruction* p = ps[i];
    OPPROBE_ASSIGN_OR_RETURN(Instruction * lr, Hyper(ctx, "lr", 6, t, dims));
    OPPROBE_ASSIGN_OR_RETURN(Instruction * g, Grad(ctx, gs, i, t, dims, maximize));
    if (wd != 0) {
      if (adamw) p = Mul(b, p, Sub(b, Full(b, t, 1, dims), MulScalar(b, lr, wd)));  // decoupled decay
      else g = Add(b, g, MulScalar(b, p, wd));
    }
    Instruction* m = Add(b, MulScalar(b, ms[i], beta1), MulScalar(b, g, 1 - beta1));
    Instruction* v = Add(b, MulScalar(b, vs[i], beta2), MulScalar(b, Mul(b, g, g), 1 - beta2));
    // Bias corrections from the step count (already incremented by the optimizer).
    Instruction* step = b.Broadcast(b.Reshape(b.Convert(steps[i], t), {}), dims, {});
    auto pow = [&](double base) { return b.Binary(Opcode::kPower, Full(b, t, base, dims), step); };
    Instruction* bc1 = Sub(b, Full(b, t, 1, dims), pow(beta1));
    Instruction* bc2 = Sub(b, Full(b, t, 1, dims), pow(beta2));
    Instruction* vhat = v;
    if (amsgrad) {
      vhat = b.Binary(Opcode::kMaximum, b.Convert(maxs[i], t), v);
      new_max.push_back(vhat);
    }
    Instruction* denom =
        Add(b, Div(b, b.Unary(Opcode::kSqrt, vhat), b.Unary(Opcode::kSqrt, bc2)), Full(b, t, eps, dims));
    p = Sub(b, p, Div(b, Mul(b, Div(b, lr, bc1), m), denom));
    new_p.push_back(p), new_m.push_back(m), new_v.push_back(v);
  }
  std::vector<Instruction*> outs = new_p;
  outs.insert(outs.end(), new_m.begin(), new_m.end());
  outs.insert(outs.end(), new_v.begin(), new_v.end());
  outs.insert(outs.end(), new_max.begin(), new_max.end());
  return ctx.Finish(outs);
}

Expected<LoweredOp> FusedAdamOp(const Node& n, Builder& b) { return FusedAdam(n, b, false); }
Expected<LoweredOp> FusedAdamWOp(const Node& n, Builder& b) { return FusedAdam(n, b, true); }

Expected<LoweredOp> FusedSgd(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> ps = ctx.TensorList("self", 0), gs = ctx.TensorList("grads", 1),
                            bufs = ctx.TensorList("momentum_buffer_list", 2);
  const double wd = ctx.Double("weight_decay", 3, 0), momentum = ctx.Double("momentum", 4, 0);
  const double dampening = ctx.Double("dampening", 6, 0);
  const bool nesterov = ctx.Bool("nesterov", 7, false), maximize = ctx.Bool("maximize", 8, false);
  const bool first = ctx.Bool("is_first_step", 9, false);
  if (gs.size() != ps.size() || (momentum != 0 && bufs.size() != ps.size()))
    return ctx.Unsupported("tensor lists of different lengths");
  std::vector<Instruction*> new_p, new_buf;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (!ps[i] || !gs[i]) return ctx.Unsupported("None in a tensor list");
    PrimitiveType t = ps[i]->shape.element_type();
    std::vector<int64_t> dims = Dims(ps[i]);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * lr, Hyper(ctx, "lr", 5, t, dims));
    OPPROBE_ASSIGN_OR_RETURN(Instruction * g, Grad(ctx, gs, i, t, dims, maximize));
    if (wd != 0) g = Add(b, g, MulScalar(b, ps[i], wd));
    if (momentum != 0) {
      if (!bufs[i]) return ctx.Unsupported("None in the momentum buffers");
      Instruction* buf = first ? g : Add(b, MulScalar(b, bufs[i], momentum), MulScalar(b, g, 1 - dampening));
      new_buf.push_back(buf);
      g = nesterov ? Add(b, g, MulScalar(b, buf, momentum)) : buf;
    }
    new_p.push_back(Sub(b, ps[i], Mul(b, lr, g)));
  }
  std::vector<Instruction*> outs = new_p;
  outs.insert(outs.end(), new_buf.begin(), new_buf.end());
  return ctx.Finish(outs);
}

}  // namespace

const LoweringFamily& OptimizerLowerings() {
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"aten::_foreach_abs", ForeachUnary(math::Abs, /*keeps_type=*/true), kInPlaceForm},
                             {"aten::_foreach_neg", ForeachUnary(math::Negate, /*keeps_type=*/true), kInPlaceForm},
                             {"aten::_foreach_sign", ForeachUnary(math::Sign, /*keeps_type=*/true), kInPlaceForm},
                             {"aten::_foreach_exp", ForeachUnary(math::Exp), kInPlaceForm},
                             {"aten::_foreach_log", ForeachUnary(math::Log), kInPlaceForm},
                             {"aten::_foreach_reciprocal", ForeachUnary(math::Reciprocal), kInPlaceForm},
                             {"aten::_foreach_sigmoid", ForeachUnary(math::Sigmoid), kInPlaceForm},
                             {"aten::_foreach_sqrt", ForeachUnary(math::Sqrt), kInPlaceForm},
                             {"aten::_foreach_add", ForeachBinary(ForeachAdd), kInPlaceForm},
                             {"aten::_foreach_sub", ForeachBinary(ForeachSub), kInPlaceForm},
                             {"aten::_foreach_mul", ForeachBinary(ForeachMul), kInPlaceForm},
                             {"aten::_foreach_div", ForeachBinary(ForeachDiv, /*float_result=*/true), kInPlaceForm},
                             {"aten::_foreach_maximum", ForeachBinary(ForeachMaximum), kInPlaceForm},
                             {"aten::_foreach_clamp_min", ForeachBinary(ForeachMaximum), kInPlaceForm},
                             {"aten::_foreach_minimum", ForeachBinary(ForeachMinimum), kInPlaceForm},
                             {"aten::_foreach_clamp_max", ForeachBinary(ForeachMinimum), kInPlaceForm},
                             {"aten::_foreach_pow", ForeachBinary(ForeachPow), kInPlaceForm},
                             {"aten::_foreach_lerp", ForeachBinary(ForeachLerp, false, "tensors1"), kInPlaceForm},
                             {"aten::_foreach_addcmul", ForeachAddcmul, kInPlaceForm},
                             {"aten::_foreach_addcdiv", ForeachAddcdiv, kInPlaceForm},
                             {"aten::_foreach_zero_", ForeachZero},
                             {"aten::_foreach_norm", ForeachNorm},
                             {"aten::_fused_adam_", FusedAdamOp},
                             {"aten::_fused_adamw_", FusedAdamWOp},
                             {"aten::_fused_sgd_", FusedSgd},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
