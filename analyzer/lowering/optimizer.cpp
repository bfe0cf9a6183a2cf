// Optimizer ops. PyTorch 1.13's SGD and Adam run per-tensor ops by default (add_, mul_, addcmul_,
// addcdiv_, sqrt, div_, ...), which the elementwise family lowers; with foreach=True (and in 2.x
// by default) they dispatch `_foreach_*` ops over tensor lists, lowered here as one elementwise
// computation per list entry (what XLA does after functionalization).
#include <fmt/format.h>

#include "analyzer/lowering/ops.h"

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
    case Value::Kind::kInt: case Value::Kind::kFloat: case Value::Kind::kBool: case Value::Kind::kComplex:
      return b.Broadcast(ScalarOf(b, t, *v), dims, {});
    default:
      return ctx.Unsupported("unsupported second operand " + v->ToString());
  }
}

}  // namespace

Fn ForeachUnary(const std::string& op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    std::vector<Instruction*> xs = ctx.TensorList("self", 0);
    std::vector<Instruction*> outs;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i]) return ctx.Unsupported("None in a tensor list");
      PrimitiveType t = FloatType(xs[i]->shape.element_type());
      if (op == "abs" || op == "neg" || op == "sign") t = xs[i]->shape.element_type();
      Instruction* r = ApplyUnary(b, op, b.Convert(xs[i], t));
      if (!r) return ctx.Unsupported("no unary body for " + op);
      outs.push_back(r);
    }
    return ctx.Finish(outs);
  };
}

Fn ForeachBinary(const std::string& op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    std::vector<Instruction*> xs = ctx.TensorList("self", 0);
    std::vector<Instruction*> outs;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i]) return ctx.Unsupported("None in a tensor list");
      Instruction* x = xs[i];
      PrimitiveType t = ctx.OutputType(i, x->shape.element_type());
      if (op == "div") t = FloatType(t);
      x = b.Convert(x, t);
      std::vector<int64_t> dims = Dims(x);
      // _foreach_lerp names its second list `tensors1`.
      OPPROBE_ASSIGN_OR_RETURN(Instruction * y, Other(ctx, op == "lerp" ? "tensors1" : "other", 1, i, t, dims));
      const Value* alpha = ctx.Arg("alpha", 2);
      if (alpha && !alpha->is_none() && alpha->AsDouble() != 1 && (op == "add" || op == "sub"))
        y = Mul(b, y, b.Broadcast(ScalarOf(b, t, *alpha), dims, {}));
      Instruction* r;
      if (op == "add") r = Add(b, x, y);
      else if (op == "sub") r = Sub(b, x, y);
      else if (op == "mul") r = Mul(b, x, y);
      else if (op == "div") r = Div(b, x, y);
      else if (op == "maximum" || op == "clamp_min") r = b.Binary(Opcode::kMaximum, x, y);
      else if (op == "minimum" || op == "clamp_max") r = b.Binary(Opcode::kMinimum, x, y);
      else if (op == "pow") r = b.Binary(Opcode::kPower, x, y);
      else if (op == "lerp") {
        OPPROBE_ASSIGN_OR_RETURN(Instruction * w, Other(ctx, "weight", 2, i, t, dims));
        r = Add(b, x, Mul(b, w, Sub(b, y, x)));
      } else {
        return ctx.Unsupported("no foreach body for " + op);
      }
      outs.push_back(r);
    }
    return ctx.Finish(outs);
  };
}

namespace {
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
      s = b.Broadcast(b.Reshape(b.SliceInDim(b.Convert(st, t), static_cast<int64_t>(i), static_cast<int64_t>(i) + 1, 1, 0), {}), dims, {});
    } else if (v) {
      OPPROBE_ASSIGN_OR_RETURN(s, Other(ctx, v->kind == Value::Kind::kFloatList ? "scalars" : "value", 3, i, t, dims));
    }
    if (s) p = Mul(b, p, s);
    outs.push_back(Add(b, xs[i], p));
  }
  return ctx.Finish(outs);
}
}  // namespace

Expected<LoweredOp> ForeachAddcmul(const Node& n, Builder& b) { return ForeachAddc(n, b, true); }
Expected<LoweredOp> ForeachAddcdiv(const Node& n, Builder& b) { return ForeachAddc(n, b, false); }

Expected<LoweredOp> ForeachZero(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> outs;
  for (Instruction* x : ctx.TensorList("self", 0)) outs.push_back(FullLike(b, x, 0));
  return ctx.Finish(outs);
}

}  // namespace opprobe::analyzer::lowering
