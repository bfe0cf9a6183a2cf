// Optimizer ops. PyTorch 1.13's SGD and Adam run per-tensor ops by default (add_, mul_, addcmul_,
// addcdiv_, sqrt, div_, ...), which the elementwise family lowers; with foreach=True (and in 2.x
// by default) they dispatch `_foreach_*` ops over tensor lists, lowered here as one elementwise
// computation per list entry (what XLA does after functionalization).
#include <fmt/format.h>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {
namespace {

// The scalar operand of entry i: a number, an entry of a scalar list, or a tensor of a list.
Expected<Instruction*> Other(const Ctx& c, const std::string& name, size_t pos, size_t i, PrimitiveType t,
                             const std::vector<int64_t>& dims) {
  Builder& b = c.b;
  const Value* v = c.V(name, pos);
  if (!v) v = c.V("scalar", pos);
  if (!v) v = c.V("scalars", pos);
  if (!v) v = c.V("other", pos);
  if (!v) v = c.V("exponent", pos);
  if (!v) return Bad(c, "missing second operand");
  switch (v->kind) {
    case Value::Kind::kTensorList: {
      std::vector<Instruction*> l = c.TList(name, pos);
      if (l.empty()) l = c.TList("other", pos);
      if (i >= l.size() || !l[i]) return Bad(c, "tensor lists of different lengths");
      return Bcast(b, b.Convert(l[i], t), dims);
    }
    case Value::Kind::kTensor:
      return Bcast(b, b.Convert(c.T(name, pos) ? c.T(name, pos) : c.T("scalar", pos), t), dims);
    case Value::Kind::kFloatList:
      if (i >= v->floats.size()) return Bad(c, "scalar list too short");
      return b.Broadcast(Scalar(b, t, v->floats[i]), dims, {});
    case Value::Kind::kIntList:
      if (i >= v->ints.size()) return Bad(c, "scalar list too short");
      return b.Broadcast(Scalar(b, t, static_cast<double>(v->ints[i])), dims, {});
    case Value::Kind::kInt: case Value::Kind::kFloat: case Value::Kind::kBool: case Value::Kind::kComplex:
      return b.Broadcast(ScalarOf(b, t, *v), dims, {});
    default:
      return Bad(c, "unsupported second operand " + v->ToString());
  }
}

}  // namespace

Fn ForeachUnary(const std::string& op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    Ctx c(n, b);
    std::vector<Instruction*> xs = c.TList("self", 0);
    std::vector<Instruction*> outs;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i]) return Bad(c, "None in a tensor list");
      PrimitiveType t = FloatType(xs[i]->shape.element_type());
      if (op == "abs" || op == "neg" || op == "sign") t = xs[i]->shape.element_type();
      Instruction* r = ApplyUnary(b, op, b.Convert(xs[i], t));
      if (!r) return Bad(c, "no unary body for " + op);
      outs.push_back(r);
    }
    return Done(c, outs);
  };
}

Fn ForeachBinary(const std::string& op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    Ctx c(n, b);
    std::vector<Instruction*> xs = c.TList("self", 0);
    std::vector<Instruction*> outs;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i]) return Bad(c, "None in a tensor list");
      Instruction* x = xs[i];
      PrimitiveType t = c.OutType(i, x->shape.element_type());
      if (op == "div") t = FloatType(t);
      x = b.Convert(x, t);
      std::vector<int64_t> dims = Dims(x);
      // _foreach_lerp names its second list `tensors1`.
      OPPROBE_ASSIGN_OR_RETURN(Instruction * y, Other(c, op == "lerp" ? "tensors1" : "other", 1, i, t, dims));
      const Value* alpha = c.V("alpha", 2);
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
        OPPROBE_ASSIGN_OR_RETURN(Instruction * w, Other(c, "weight", 2, i, t, dims));
        r = Add(b, x, Mul(b, w, Sub(b, y, x)));
      } else {
        return Bad(c, "no foreach body for " + op);
      }
      outs.push_back(r);
    }
    return Done(c, outs);
  };
}

namespace {
Expected<LoweredOp> ForeachAddc(const Node& n, Builder& b, bool mul) {
  Ctx c(n, b);
  std::vector<Instruction*> xs = c.TList("self", 0);
  std::vector<Instruction*> t1 = c.TList("tensor1", 1);
  std::vector<Instruction*> t2 = c.TList("tensor2", 2);
  if (t1.size() != xs.size() || t2.size() != xs.size()) return Bad(c, "tensor lists of different lengths");
  std::vector<Instruction*> outs;
  for (size_t i = 0; i < xs.size(); ++i) {
    PrimitiveType t = xs[i]->shape.element_type();
    std::vector<int64_t> dims = Dims(xs[i]);
    Instruction* p = mul ? Mul(b, Bcast(b, b.Convert(t1[i], t), dims), Bcast(b, b.Convert(t2[i], t), dims))
                         : Div(b, Bcast(b, b.Convert(t1[i], t), dims), Bcast(b, b.Convert(t2[i], t), dims));
    const Value* v = c.V("value", 3);
    if (!v) v = c.V("scalars", 3);
    Instruction* s = nullptr;
    if (v && v->kind == Value::Kind::kTensor) {
      // A 1-d tensor of per-entry scalars: slice entry i.
      Instruction* st = c.T("scalars", 3);
      s = b.Broadcast(b.Reshape(b.SliceInDim(b.Convert(st, t), static_cast<int64_t>(i), static_cast<int64_t>(i) + 1, 1, 0), {}), dims, {});
    } else if (v) {
      OPPROBE_ASSIGN_OR_RETURN(s, Other(c, v->kind == Value::Kind::kFloatList ? "scalars" : "value", 3, i, t, dims));
    }
    if (s) p = Mul(b, p, s);
    outs.push_back(Add(b, xs[i], p));
  }
  return Done(c, outs);
}
}  // namespace

Expected<LoweredOp> ForeachAddcmul(const Node& n, Builder& b) { return ForeachAddc(n, b, true); }
Expected<LoweredOp> ForeachAddcdiv(const Node& n, Builder& b) { return ForeachAddc(n, b, false); }

Expected<LoweredOp> ForeachZero(const Node& n, Builder& b) {
  Ctx c(n, b);
  std::vector<Instruction*> outs;
  for (Instruction* x : c.TList("self", 0)) outs.push_back(FullLike(b, x, 0));
  return Done(c, outs);
}

}  // namespace opprobe::analyzer::lowering
