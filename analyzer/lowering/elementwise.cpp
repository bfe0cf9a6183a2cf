// Elementwise aten ops: unary math, binary arithmetic with type promotion and broadcasting, comparisons and
// logical ops, where/clamp/lerp, dtype conversions and copies. Complex arithmetic converts the real operand to
// the complex type first (XlaHelpers::Promote), so `x * y` with x f32 and y c64 is a c64 `convert` and a c64
// `multiply`. Activations and the backward ops of pointwise functions are in activation.cpp.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "analyzer/lowering/families.h"
#include "hlo/math.h"

namespace opprobe::analyzer::lowering {

std::vector<int64_t> ElementwiseDims(const LoweringContext& ctx) {
  if (const TensorMeta* m = ctx.OutputMeta(0)) return m->sizes;
  std::vector<int64_t> d;
  for (const auto& a : ctx.node.args)
    if (a.value.is_tensor()) d = BroadcastShapes(d, a.value.tensor.sizes);
  return d;
}

namespace {

Instruction* Trunc(Builder& b, Instruction* x) {
  // sign(x) * floor(|x|), as XLA's client library does for round-toward-zero.
  return Mul(b, b.Unary(Opcode::kSign, x), b.Unary(Opcode::kFloor, b.Unary(Opcode::kAbs, x)));
}

Instruction* Atan(Builder& b, Instruction* x) { return b.Binary(Opcode::kAtan2, x, FullLike(b, x, 1.0)); }

// sqrt(1 - x*x)
Instruction* OneMinusSq(Builder& b, Instruction* x) {
  return b.Unary(Opcode::kSqrt, Sub(b, FullLike(b, x, 1.0), Mul(b, x, x)));
}

template <Opcode kOpcode>
Instruction* OpcodeOf(Builder& b, Instruction* x) {
  return b.Unary(kOpcode, x);
}

Instruction* Erfinv(Builder& b, Instruction* x) { return hlo::math::ErfInv(b, x); }  // (hlo/math.h)

}  // namespace

namespace math {

Instruction* Abs(Builder& b, Instruction* x) { return b.Unary(Opcode::kAbs, x); }
Instruction* Negate(Builder& b, Instruction* x) { return b.Unary(Opcode::kNegate, x); }
Instruction* Exp(Builder& b, Instruction* x) { return b.Unary(Opcode::kExp, x); }
Instruction* Log(Builder& b, Instruction* x) { return b.Unary(Opcode::kLog, x); }
Instruction* Sqrt(Builder& b, Instruction* x) { return b.Unary(Opcode::kSqrt, x); }
Instruction* Sigmoid(Builder& b, Instruction* x) { return b.Unary(Opcode::kLogistic, x); }
Instruction* Sign(Builder& b, Instruction* x) { return b.Unary(Opcode::kSign, x); }
Instruction* Reciprocal(Builder& b, Instruction* x) { return Div(b, FullLike(b, x, 1.0), x); }
Instruction* ErfInv(Builder& b, Instruction* x) { return Erfinv(b, x); }

}  // namespace math

namespace {

// ---- unary bodies computed in the result type ----
Instruction* Identity(Builder&, Instruction* x) { return x; }
Instruction* Exp2(Builder& b, Instruction* x) { return b.Binary(Opcode::kPower, FullLike(b, x, 2.0), x); }
Instruction* Log2(Builder& b, Instruction* x) {
  return MulScalar(b, b.Unary(Opcode::kLog, x), 1.0 / std::numbers::ln2);
}
Instruction* Log10(Builder& b, Instruction* x) {
  return MulScalar(b, b.Unary(Opcode::kLog, x), 1.0 / std::numbers::ln10);
}
// 2 * atan2(x, 1 + sqrt(1 - x^2))  (XLA client library Asin)
Instruction* Asin(Builder& b, Instruction* x) {
  return MulScalar(b, b.Binary(Opcode::kAtan2, x, AddScalar(b, OneMinusSq(b, x), 1.0)), 2.0);
}
// 2 * atan2(sqrt(1 - x^2), 1 + x)  (XLA client library Acos)
Instruction* Acos(Builder& b, Instruction* x) {
  return MulScalar(b, b.Binary(Opcode::kAtan2, OneMinusSq(b, x), AddScalar(b, x, 1.0)), 2.0);
}
Instruction* Sinh(Builder& b, Instruction* x) {
  return MulScalar(b, Sub(b, b.Unary(Opcode::kExp, x), b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x))), 0.5);
}
Instruction* Cosh(Builder& b, Instruction* x) {
  return MulScalar(b, Add(b, b.Unary(Opcode::kExp, x), b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x))), 0.5);
}
// sign(x) * log(|x| + sqrt(x^2 + 1))
Instruction* Asinh(Builder& b, Instruction* x) {
  Instruction* a = b.Unary(Opcode::kAbs, x);
  Instruction* r = b.Unary(Opcode::kLog, Add(b, a, b.Unary(Opcode::kSqrt, AddScalar(b, Mul(b, a, a), 1.0))));
  return Mul(b, b.Unary(Opcode::kSign, x), r);
}
Instruction* Acosh(Builder& b, Instruction* x) {
  return b.Unary(Opcode::kLog, Add(b, x, b.Unary(Opcode::kSqrt, AddScalar(b, Mul(b, x, x), -1.0))));
}
// 0.5 * (log1p(x) - log1p(-x))
Instruction* Atanh(Builder& b, Instruction* x) {
  return MulScalar(b, Sub(b, b.Unary(Opcode::kLog1p, x), b.Unary(Opcode::kLog1p, b.Unary(Opcode::kNegate, x))), 0.5);
}
Instruction* Frac(Builder& b, Instruction* x) { return Sub(b, x, Trunc(b, x)); }
Instruction* Square(Builder& b, Instruction* x) { return Mul(b, x, x); }
Instruction* Erfc(Builder& b, Instruction* x) { return Sub(b, FullLike(b, x, 1.0), b.Unary(Opcode::kErf, x)); }
Instruction* Deg2rad(Builder& b, Instruction* x) { return MulScalar(b, x, std::numbers::pi / 180.0); }
Instruction* Rad2deg(Builder& b, Instruction* x) { return MulScalar(b, x, 180.0 / std::numbers::pi); }
Instruction* ConjPhysical(Builder& b, Instruction* x) {
  if (!hlo::IsComplex(x->shape.element_type())) return x;
  return b.Complex(b.Real(x), b.Unary(Opcode::kNegate, b.Imag(x)));
}
Instruction* Sinc(Builder& b, Instruction* x) {
  Instruction* px = MulScalar(b, x, std::numbers::pi);
  Instruction* r = Div(b, b.Unary(Opcode::kSin, px), px);
  return b.Select(CmpScalar(b, x, 0.0, ComparisonDirection::kEq), FullLike(b, x, 1.0), r);
}

// ---- unary bodies computed in the input type (predicates and ops whose result type differs) ----
Instruction* IsNan(Builder& b, Instruction* x) { return b.Compare(x, x, ComparisonDirection::kNe); }
Instruction* IsInf(Builder& b, Instruction* x) {
  if (!IsFloatish(x->shape.element_type())) return Full(b, PrimitiveType::PRED, 0, Dims(x));
  return CmpScalar(b, b.Unary(Opcode::kAbs, x), std::numeric_limits<double>::infinity(), ComparisonDirection::kEq);
}
Instruction* IsPosInf(Builder& b, Instruction* x) {
  return CmpScalar(b, x, std::numeric_limits<double>::infinity(), ComparisonDirection::kEq);
}
Instruction* IsNegInf(Builder& b, Instruction* x) {
  return CmpScalar(b, x, -std::numeric_limits<double>::infinity(), ComparisonDirection::kEq);
}
Instruction* IsFinite(Builder& b, Instruction* x) {
  if (!IsFloatish(x->shape.element_type())) return Full(b, PrimitiveType::PRED, 1, Dims(x));
  return b.Unary(Opcode::kIsFinite, x);
}
Instruction* Signbit(Builder& b, Instruction* x) {
  if (!hlo::IsFloatingPoint(x->shape.element_type())) return CmpScalar(b, x, 0, ComparisonDirection::kLt);
  // The sign bit of the integer of the same width.
  int w = hlo::BitWidth(x->shape.element_type());
  PrimitiveType it = w == 64 ? PrimitiveType::S64 : w == 32 ? PrimitiveType::S32 : PrimitiveType::S16;
  return CmpScalar(b, b.BitcastConvert(x, it), 0, ComparisonDirection::kLt);
}
Instruction* LogicalNot(Builder& b, Instruction* x) {
  if (x->shape.element_type() == PrimitiveType::PRED) return b.Unary(Opcode::kNot, x);
  return CmpScalar(b, x, 0, ComparisonDirection::kEq);
}
Instruction* Real(Builder& b, Instruction* x) { return hlo::IsComplex(x->shape.element_type()) ? b.Real(x) : x; }
Instruction* Imag(Builder& b, Instruction* x) { return b.Imag(x); }
Instruction* Angle(Builder& b, Instruction* x) {
  if (hlo::IsComplex(x->shape.element_type())) return b.Binary(Opcode::kAtan2, b.Imag(x), b.Real(x));
  Instruction* f = b.Convert(x, FloatType(x->shape.element_type()));
  Instruction* pi = FullLike(b, f, std::numbers::pi);
  Instruction* r = b.Select(CmpScalar(b, f, 0, ComparisonDirection::kLt), pi, FullLike(b, f, 0));
  return b.Select(b.Compare(f, f, ComparisonDirection::kNe), f, r);
}

// A unary op over `self`: `body` applied to self converted to the result type (integer inputs of a float op
// compute in the float result type; integer ops such as abs, neg, sign or bitwise_not stay integral), or, with
// `in_input_type`, to self as it is, the value converted to the result type after.
Expected<LoweredOp> LowerUnary(const Node& n, Builder& b, UnaryBody body, bool in_input_type) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType out = ctx.OutputType(0, FloatType(x->shape.element_type()));
  if (in_input_type) return ctx.Finish({b.Convert(body(b, x), out)});
  return ctx.Finish({body(b, b.Convert(x, out))});
}

LoweringFn UnaryInInputType(UnaryBody body) {
  return [body](const Node& n, Builder& b) { return LowerUnary(n, b, body, true); };
}

// abs of a complex tensor is real: it computes in the input type.
Expected<LoweredOp> AbsOp(const Node& n, Builder& b) {
  const Value* self = n.arg("self", 0);
  bool complex = self && self->is_tensor() && hlo::IsComplex(self->tensor.dtype);
  return LowerUnary(n, b, math::Abs, complex);
}

// round(x) to even, or round(x * 10^d) / 10^d with `decimals`, as ATen does.
Expected<LoweredOp> Round(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType out = ctx.OutputType(0, FloatType(x->shape.element_type()));
  Instruction* xin = b.Convert(x, out);
  if (int64_t decimals = ctx.Int("decimals", 1, 0); decimals != 0) {
    double scale = std::pow(10.0, static_cast<double>(decimals));
    Instruction* r = Div(b, b.Unary(Opcode::kRoundNearestEven, MulScalar(b, xin, scale)), FullLike(b, xin, scale));
    return ctx.Finish({r});
  }
  return ctx.Finish({b.Unary(Opcode::kRoundNearestEven, xin)});
}

// ---- binary ----
struct Bin {
  Instruction* a;
  Instruction* b;
  PrimitiveType t;
  std::vector<int64_t> dims;
};

Expected<Bin> Operands(const LoweringContext& ctx, const std::string& an, size_t ap, const std::string& bn, size_t bp,
                       PrimitiveType t) {
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, ctx.Operand(an, ap, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * bb, ctx.Operand(bn, bp, t, dims));
  return Bin{a, bb, t, dims};
}

// The operands of a binary op (`self`, and `other` or pow's `exponent`) and the type its result is recorded in.
struct BinaryArgs {
  const Value* self;
  const Value* other;
  PrimitiveType out;
};

Expected<BinaryArgs> ReadBinary(const LoweringContext& ctx, const std::string& other_name) {
  const Value* self = ctx.Arg("self", 0);
  if (!self) return ctx.Unsupported("argument 'self' is missing");
  const Value* other = ctx.Arg(other_name, 1);
  if (!other) return ctx.Unsupported(fmt::format("argument '{}' is missing", other_name));
  return BinaryArgs{self, other, ctx.OutputType(0, ResultType({self, other}))};
}

// The type a binary op computes in: the recorded result type, torch.result_type of its operands, or that type
// made float (integer operands of atan2, hypot, ... compute in f32).
enum class ComputeIn { kResultType, kPromotedType, kPromotedFloat };

PrimitiveType ComputeType(ComputeIn in, const BinaryArgs& a) {
  switch (in) {
    case ComputeIn::kResultType: return a.out;
    case ComputeIn::kPromotedType: return ResultType({a.self, a.other});
    case ComputeIn::kPromotedFloat: return FloatType(ResultType({a.self, a.other}));
  }
  return a.out;
}

bool IsIntegral(PrimitiveType t) { return hlo::IsInteger(t) || t == PrimitiveType::PRED; }

// A binary body: x and y in the compute type t, broadcast to the result's dims.
using BinaryBody = Instruction* (*)(Builder& b, Instruction* x, Instruction* y, PrimitiveType t);

LoweringFn Binary(ComputeIn in, BinaryBody body, const std::string& other_name = "other") {
  return [in, body, other_name](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    OPPROBE_ASSIGN_OR_RETURN(BinaryArgs a, ReadBinary(ctx, other_name));
    PrimitiveType t = ComputeType(in, a);
    OPPROBE_ASSIGN_OR_RETURN(Bin v, Operands(ctx, "self", 0, other_name, 1, t));
    return ctx.Finish({b.Convert(body(b, v.a, v.b, t), a.out)});
  };
}

Instruction* FloorDivInt(Builder& b, Instruction* x, Instruction* y) {
  // q = x / y (truncating); q - 1 where the remainder is non-zero and the signs differ.
  Instruction* q = Div(b, x, y);
  Instruction* r = b.Binary(Opcode::kRemainder, x, y);
  Instruction* zero = FullLike(b, x, 0);
  Instruction* nz = b.Compare(r, zero, ComparisonDirection::kNe);
  Instruction* diff = b.Compare(b.Compare(r, zero, ComparisonDirection::kLt),
                                b.Compare(y, zero, ComparisonDirection::kLt), ComparisonDirection::kNe);
  return b.Select(b.Binary(Opcode::kAnd, nz, diff), Sub(b, q, FullLike(b, q, 1)), q);
}

Instruction* PyRemainder(Builder& b, Instruction* x, Instruction* y) {
  // r = fmod(x, y); r + y where r != 0 and sign(r) != sign(y)
  Instruction* r = b.Binary(Opcode::kRemainder, x, y);
  Instruction* zero = FullLike(b, x, 0);
  Instruction* nz = b.Compare(r, zero, ComparisonDirection::kNe);
  Instruction* diff = b.Compare(b.Compare(r, zero, ComparisonDirection::kLt),
                                b.Compare(y, zero, ComparisonDirection::kLt), ComparisonDirection::kNe);
  return b.Select(b.Binary(Opcode::kAnd, nz, diff), Add(b, r, y), r);
}

// `z * alpha` for add/sub/rsub's alpha (z itself when alpha is absent or 1).
Instruction* AlphaScaled(const LoweringContext& ctx, Instruction* z, PrimitiveType t) {
  Builder& b = ctx.builder;
  const Value* alpha = ctx.Arg("alpha", 2);
  if (!alpha || alpha->is_none()) return z;
  if (alpha->kind == Value::Kind::kComplex) return Mul(b, z, b.Broadcast(ScalarC(b, t, alpha->c), Dims(z), {}));
  if (alpha->AsDouble() == 1.0) return z;
  return Mul(b, z, b.Broadcast(ScalarOf(b, t, *alpha), Dims(z), {}));
}

// add/sub with alpha as PyTorch/XLA builds them (torch_xla tensor_methods.cpp): `self + other * alpha`,
// where the product is an aten::mul node of its IR, even for alpha == 1; a Python-number `other` is
// multiplied with alpha as a scalar before the broadcast. The product's instructions carry
// op_type aten__mul, so reports attribute them to aten::mul, as AWS Neuron's analyze does.
Expected<LoweredOp> LowerAddSubWithAlpha(bool add, const LoweringContext& ctx, const Value& other, const Value& alpha,
                                         PrimitiveType t, PrimitiveType out) {
  Builder& b = ctx.builder;
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.Operand("self", 0, t, dims));
  const hlo::OpMetadata own = b.metadata();
  hlo::OpMetadata mul = own;
  mul.op_type = mul.op_name = "aten__mul";
  auto alpha_scalar = [&] {
    return alpha.kind == Value::Kind::kComplex ? ScalarC(b, t, alpha.c) : ScalarOf(b, t, alpha);
  };
  Instruction* scaled = nullptr;
  if (other.kind == Value::Kind::kInt || other.kind == Value::Kind::kFloat || other.kind == Value::Kind::kBool ||
      other.kind == Value::Kind::kComplex) {
    Instruction* o = other.kind == Value::Kind::kComplex ? ScalarC(b, t, other.c) : ScalarOf(b, t, other);
    Instruction* a = alpha_scalar();
    b.SetMetadata(mul);
    Instruction* product = Mul(b, o, a);
    b.SetMetadata(own);
    scaled = dims.empty() ? product : b.Broadcast(product, dims, {});
  } else {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.Operand("other", 1, t, dims));
    Instruction* a = alpha_scalar();
    b.SetMetadata(mul);
    Instruction* product = Mul(b, y, dims.empty() ? a : b.Broadcast(a, dims, {}));
    b.SetMetadata(own);
    scaled = product;
  }
  Instruction* r = add ? Add(b, x, scaled) : Sub(b, x, scaled);
  return ctx.Finish({b.Convert(r, out)});
}

Expected<LoweredOp> AddOrSub(const Node& n, Builder& b, bool add) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(BinaryArgs a, ReadBinary(ctx, "other"));
  PrimitiveType t = ResultType({a.self, a.other});
  if (t != PrimitiveType::PRED) {
    const Value* alpha = ctx.Arg("alpha", 2);
    if (alpha && !alpha->is_none()) return LowerAddSubWithAlpha(add, ctx, *a.other, *alpha, t, a.out);
  }
  OPPROBE_ASSIGN_OR_RETURN(Bin v, Operands(ctx, "self", 0, "other", 1, t));
  Instruction* r;
  if (!add) r = Sub(b, v.a, AlphaScaled(ctx, v.b, t));
  else if (t == PrimitiveType::PRED) r = b.Binary(Opcode::kOr, v.a, AlphaScaled(ctx, v.b, t));
  else r = Add(b, v.a, AlphaScaled(ctx, v.b, t));
  return ctx.Finish({b.Convert(r, a.out)});
}

Expected<LoweredOp> AddOp(const Node& n, Builder& b) { return AddOrSub(n, b, true); }
Expected<LoweredOp> SubOp(const Node& n, Builder& b) { return AddOrSub(n, b, false); }

// other - self * alpha
Expected<LoweredOp> Rsub(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(BinaryArgs a, ReadBinary(ctx, "other"));
  PrimitiveType t = ResultType({a.self, a.other});
  OPPROBE_ASSIGN_OR_RETURN(Bin v, Operands(ctx, "self", 0, "other", 1, t));
  return ctx.Finish({b.Convert(Sub(b, v.b, AlphaScaled(ctx, v.a, t)), a.out)});
}

// div and true_divide: true division in a float type, or with rounding_mode "trunc"/"floor" in the operands'
// promoted type.
Expected<LoweredOp> DivOp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(BinaryArgs a, ReadBinary(ctx, "other"));
  std::string mode = ctx.String("rounding_mode", 2);
  PrimitiveType common = ResultType({a.self, a.other});
  PrimitiveType t = mode.empty() ? FloatType(common) : common;
  OPPROBE_ASSIGN_OR_RETURN(Bin v, Operands(ctx, "self", 0, "other", 1, t));
  Instruction *x = v.a, *y = v.b, *r;
  bool is_int = IsIntegral(t);
  if (mode.empty()) r = Div(b, x, y);
  else if (mode == "trunc") r = is_int ? Div(b, x, y) : Trunc(b, Div(b, x, y));
  else if (mode == "floor") r = is_int ? FloorDivInt(b, x, y) : b.Unary(Opcode::kFloor, Div(b, x, y));
  else return ctx.Unsupported("unknown rounding_mode " + mode);
  return ctx.Finish({b.Convert(r, a.out)});
}

// ---- binary bodies ----
Instruction* Multiply(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  return t == PrimitiveType::PRED ? b.Binary(Opcode::kAnd, x, y) : Mul(b, x, y);
}
Instruction* FloorDivide(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  return IsIntegral(t) ? FloorDivInt(b, x, y) : b.Unary(Opcode::kFloor, Div(b, x, y));
}
Instruction* Pow(Builder& b, Instruction* x, Instruction* y, PrimitiveType) { return b.Binary(Opcode::kPower, x, y); }
Instruction* Maximum(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  return t == PrimitiveType::PRED ? b.Binary(Opcode::kOr, x, y) : b.Binary(Opcode::kMaximum, x, y);
}
Instruction* Minimum(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  return t == PrimitiveType::PRED ? b.Binary(Opcode::kAnd, x, y) : b.Binary(Opcode::kMinimum, x, y);
}
// fmax/fmin: NaN loses, the other operand is picked where one is NaN.
Instruction* NanLosing(Builder& b, Instruction* x, Instruction* y, PrimitiveType t, Opcode op) {
  Instruction* m = b.Binary(op, x, y);
  if (IsIntegral(t)) return m;
  Instruction* xn = b.Compare(x, x, ComparisonDirection::kNe);
  Instruction* yn = b.Compare(y, y, ComparisonDirection::kNe);
  return b.Select(xn, y, b.Select(yn, x, m));
}
Instruction* Fmax(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  return NanLosing(b, x, y, t, Opcode::kMaximum);
}
Instruction* Fmin(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  return NanLosing(b, x, y, t, Opcode::kMinimum);
}
Instruction* Atan2(Builder& b, Instruction* x, Instruction* y, PrimitiveType) { return b.Binary(Opcode::kAtan2, x, y); }
Instruction* Remainder(Builder& b, Instruction* x, Instruction* y, PrimitiveType) { return PyRemainder(b, x, y); }
Instruction* Fmod(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  return b.Binary(Opcode::kRemainder, x, y);
}
Instruction* BitwiseAnd(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  return b.Binary(Opcode::kAnd, x, y);
}
Instruction* BitwiseOr(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  return b.Binary(Opcode::kOr, x, y);
}
Instruction* BitwiseXor(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  return b.Binary(Opcode::kXor, x, y);
}
Instruction* ShiftLeft(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  return b.Binary(Opcode::kShiftLeft, x, y);
}
Instruction* ShiftRight(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  return b.Binary(hlo::IsUnsignedInteger(t) ? Opcode::kShiftRightLogical : Opcode::kShiftRightArithmetic, x, y);
}
Instruction* Hypot(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  return b.Unary(Opcode::kSqrt, Add(b, Mul(b, x, x), Mul(b, y, y)));
}
Instruction* Copysign(Builder& b, Instruction* x, Instruction* y, PrimitiveType t) {
  Instruction* ax = b.Unary(Opcode::kAbs, x);
  Instruction* neg = b.Compare(y, FullLike(b, y, 0), ComparisonDirection::kLt);
  // -0.0 has its sign bit set: compare the integer bits for the sign
  int w = hlo::BitWidth(t);
  PrimitiveType it = w == 64 ? PrimitiveType::S64 : w == 32 ? PrimitiveType::S32 : PrimitiveType::S16;
  if (hlo::IsFloatingPoint(t)) neg = CmpScalar(b, b.BitcastConvert(y, it), 0, ComparisonDirection::kLt);
  return b.Select(neg, b.Unary(Opcode::kNegate, ax), ax);
}
Instruction* Xlogy(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  Instruction* p = Mul(b, x, b.Unary(Opcode::kLog, y));
  Instruction* x0 = CmpScalar(b, x, 0, ComparisonDirection::kEq);
  Instruction* yn = b.Compare(y, y, ComparisonDirection::kNe);
  return b.Select(b.Binary(Opcode::kAnd, x0, b.Unary(Opcode::kNot, yn)), FullLike(b, x, 0), p);
}
Instruction* Logaddexp(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  Instruction* m = b.Binary(Opcode::kMaximum, x, y);
  Instruction* d = b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, Sub(b, x, y)));
  Instruction* r = Add(b, m, b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, d)));
  return b.Select(b.Unary(Opcode::kIsFinite, m), r, m);  // both -inf, or one +inf / NaN
}
Instruction* Logaddexp2(Builder& b, Instruction* x, Instruction* y, PrimitiveType) {
  Instruction* m = b.Binary(Opcode::kMaximum, x, y);
  Instruction* d = b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, Sub(b, x, y)));
  Instruction* e = b.Binary(Opcode::kPower, FullLike(b, d, 2.0), d);
  Instruction* r = Add(b, m, MulScalar(b, b.Unary(Opcode::kLog1p, e), 1.0 / std::numbers::ln2));
  return b.Select(b.Unary(Opcode::kIsFinite, m), r, m);
}

LoweringFn Compare(ComparisonDirection d) {
  return [d](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    const Value* self = ctx.Arg("self", 0);
    const Value* other = ctx.Arg("other", 1);
    if (!self || !other) return ctx.Unsupported("needs self and other");
    PrimitiveType t = ResultType({self, other});
    OPPROBE_ASSIGN_OR_RETURN(Bin v, Operands(ctx, "self", 0, "other", 1, t));
    Instruction* r = b.Compare(v.a, v.b, d);
    return ctx.Finish({b.Convert(r, ctx.OutputType(0, PrimitiveType::PRED))});
  };
}

LoweringFn Logical(Opcode op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    std::vector<int64_t> dims = ElementwiseDims(ctx);
    auto as_pred = [&](const std::string& name, size_t pos) -> Expected<Instruction*> {
      const Value* v = ctx.Arg(name, pos);
      if (!v) return ctx.Unsupported("argument missing: " + name);
      PrimitiveType t = v->is_tensor() ? v->tensor.dtype : PrimitiveType::PRED;
      OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.Operand(name, pos, t, dims));
      if (t == PrimitiveType::PRED) return x;
      return CmpScalar(b, x, 0, ComparisonDirection::kNe);
    };
    OPPROBE_ASSIGN_OR_RETURN(Instruction * x, as_pred("self", 0));
    OPPROBE_ASSIGN_OR_RETURN(Instruction * y, as_pred("other", 1));
    Instruction* r = b.Binary(op, x, y);
    return ctx.Finish({b.Convert(r, ctx.OutputType(0, PrimitiveType::PRED))});
  };
}

Expected<LoweredOp> Where(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  const Value* self = ctx.Arg("self", 1);
  const Value* other = ctx.Arg("other", 2);
  PrimitiveType t = ctx.OutputType(0, ResultType({self, other}));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * cond, ctx.Operand("condition", 0, PrimitiveType::PRED, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.Operand("self", 1, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.Operand("other", 2, t, dims));
  return ctx.Finish({b.Select(cond, x, y)});
}

Expected<LoweredOp> Clamp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  PrimitiveType t = ctx.OutputType(0, x0->shape.element_type());
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  auto bound = [&](const std::string& name, size_t pos) -> Expected<Instruction*> {
    const Value* v = ctx.Arg(name, pos);
    if (!v || v->is_none()) return static_cast<Instruction*>(nullptr);
    return ctx.Operand(name, pos, t, dims);
  };
  OPPROBE_ASSIGN_OR_RETURN(Instruction * lo, bound("min", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * hi, bound("max", 2));
  // torch.clamp: min(max(x, lo), hi); NaN propagates from x.
  Instruction* r = x;
  if (lo) r = b.Binary(Opcode::kMaximum, r, lo);
  if (hi) r = b.Binary(Opcode::kMinimum, r, hi);
  return ctx.Finish({r});
}

Expected<LoweredOp> Lerp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.Operand("self", 0, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * e, ctx.Operand("end", 1, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.Operand("weight", 2, t, dims));
  // x + w (e - x)
  return ctx.Finish({Add(b, x, Mul(b, w, Sub(b, e, x)))});
}

Expected<LoweredOp> AddcOp(const Node& n, Builder& b, bool mul) {
  LoweringContext ctx(n, b);
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.Operand("self", 0, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * t1, ctx.Operand("tensor1", 1, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * t2, ctx.Operand("tensor2", 2, t, dims));
  Instruction* p = mul ? Mul(b, t1, t2) : Div(b, t1, t2);
  const Value* v = ctx.Arg("value", 3);
  if (v && !v->is_none() && !(v->kind != Value::Kind::kComplex && v->AsDouble() == 1.0))
    p = Mul(b, p, b.Broadcast(ScalarOf(b, t, *v), dims, {}));
  return ctx.Finish({Add(b, x, p)});
}
Expected<LoweredOp> Addcmul(const Node& n, Builder& b) { return AddcOp(n, b, true); }
Expected<LoweredOp> Addcdiv(const Node& n, Builder& b) { return AddcOp(n, b, false); }

Expected<LoweredOp> ToCopy(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = ctx.OutputType(0, ctx.Dtype("dtype", 1).value_or(x->shape.element_type()));
  Instruction* r = x;
  if (hlo::IsComplex(x->shape.element_type()) && !hlo::IsComplex(t)) r = b.Real(x);
  return ctx.Finish({b.Convert(r, t)});
}

Expected<LoweredOp> Copy(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * self, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src, ctx.RequiredTensor("src", 1));
  PrimitiveType t = self->shape.element_type();
  if (hlo::IsComplex(src->shape.element_type()) && !hlo::IsComplex(t)) src = b.Real(src);
  return ctx.Finish({Bcast(b, b.Convert(src, t), Dims(self))});
}

Expected<LoweredOp> NanToNum(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = x->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return ctx.Finish({x});
  double big = t == PrimitiveType::F64    ? std::numeric_limits<double>::max()
               : t == PrimitiveType::F16  ? 65504.0
               : t == PrimitiveType::BF16 ? 3.3895313892515355e38
                                          : std::numeric_limits<float>::max();
  auto opt = [&](const char* name, size_t pos, double def) {
    const Value* v = ctx.Arg(name, pos);
    return v && !v->is_none() ? v->AsDouble() : def;
  };
  double nan = opt("nan", 1, 0.0), pos = opt("posinf", 2, big), neg = opt("neginf", 3, -big);
  Instruction* r = b.Select(b.Compare(x, x, ComparisonDirection::kNe), FullLike(b, x, nan), x);
  r = b.Select(CmpScalar(b, x, std::numeric_limits<double>::infinity(), ComparisonDirection::kEq), FullLike(b, x, pos),
               r);
  r = b.Select(CmpScalar(b, x, -std::numeric_limits<double>::infinity(), ComparisonDirection::kEq), FullLike(b, x, neg),
               r);
  return ctx.Finish({r});
}

Expected<LoweredOp> Polar(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  PrimitiveType t = hlo::ComplexComponentType(ctx.OutputType(0, PrimitiveType::C64));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, ctx.Operand("abs", 0, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * th, ctx.Operand("angle", 1, t, dims));
  return ctx.Finish({b.Complex(Mul(b, a, b.Unary(Opcode::kCos, th)), Mul(b, a, b.Unary(Opcode::kSin, th)))});
}

Expected<LoweredOp> ComplexOp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * re, ctx.RequiredTensor("real", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * im, ctx.RequiredTensor("imag", 1));
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  return ctx.Finish({b.Complex(Bcast(b, re, dims), Bcast(b, im, dims))});
}

Expected<LoweredOp> Heaviside(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, ctx.RequiredTensor("values", 1));
  std::vector<int64_t> dims = BroadcastShapes(Dims(x0), Dims(v0));
  PrimitiveType t = ctx.OutputType(0, x0->shape.element_type());
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  Instruction* v = Bcast(b, b.Convert(v0, t), dims);
  Instruction* step = b.Select(CmpScalar(b, x, 0, ComparisonDirection::kLt), FullLike(b, x, 0), FullLike(b, x, 1));
  Instruction* r = b.Select(CmpScalar(b, x, 0, ComparisonDirection::kEq), v, step);
  if (IsFloatish(t)) r = b.Select(b.Compare(x, x, ComparisonDirection::kNe), x, r);
  return ctx.Finish({r});
}

Expected<LoweredOp> Logit(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  PrimitiveType t = ctx.OutputType(0, FloatType(x0->shape.element_type()));
  Instruction* x = b.Convert(x0, t);
  if (const Value* eps = ctx.Arg("eps", 1); eps && !eps->is_none()) {
    double e = eps->AsDouble();
    x = b.Clamp(Scalar(b, t, e), x, Scalar(b, t, 1 - e));
  }
  return ctx.Finish({b.Unary(Opcode::kLog, Div(b, x, Sub(b, FullLike(b, x, 1), x)))});
}

Expected<LoweredOp> Frexp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = x->shape.element_type();
  Instruction* ax = b.Unary(Opcode::kAbs, x);
  Instruction* zero = CmpScalar(b, x, 0, ComparisonDirection::kEq);
  Instruction* safe = b.Select(zero, FullLike(b, x, 1), ax);
  Instruction* e =
      AddScalar(b, b.Unary(Opcode::kFloor, MulScalar(b, b.Unary(Opcode::kLog, safe), 1 / std::numbers::ln2)), 1);
  Instruction* m = Div(b, x, b.Binary(Opcode::kPower, FullLike(b, x, 2), e));
  // log rounding: keep |m| in [0.5, 1)
  Instruction* big = CmpScalar(b, b.Unary(Opcode::kAbs, m), 1, ComparisonDirection::kGe);
  m = b.Select(big, MulScalar(b, m, 0.5), m);
  e = b.Select(big, AddScalar(b, e, 1), e);
  Instruction* small = b.Binary(Opcode::kAnd, CmpScalar(b, b.Unary(Opcode::kAbs, m), 0.5, ComparisonDirection::kLt),
                                b.Unary(Opcode::kNot, zero));
  m = b.Select(small, MulScalar(b, m, 2), m);
  e = b.Select(small, AddScalar(b, e, -1), e);
  e = b.Select(zero, FullLike(b, e, 0), e);
  m = b.Select(zero, x, m);
  (void)t;
  return ctx.Finish({m, b.Convert(e, ctx.OutputType(1, PrimitiveType::S32))});
}

// Ops whose result is not a tensor and that no device runs (promote_types, result_type): nothing to lower.
Expected<LoweredOp> NoTensorResult(const Node& n, Builder& b) { return LoweredOp{}; }

}  // namespace

LoweringFn UnaryInResultType(UnaryBody body) {
  return [body](const Node& n, Builder& b) { return LowerUnary(n, b, body, false); };
}

const LoweringFamily& ElementwiseLowerings() {
  using Dir = ComparisonDirection;
  using In = ComputeIn;
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             // unary math, in the result type
                             {"aten::abs", AbsOp, kInPlaceForm},
                             {"aten::absolute", AbsOp},
                             {"aten::neg", UnaryInResultType(math::Negate), kInPlaceForm},
                             {"aten::negative", UnaryInResultType(math::Negate)},
                             {"aten::positive", UnaryInResultType(Identity)},
                             {"aten::exp", UnaryInResultType(math::Exp), kInPlaceForm},
                             {"aten::exp2", UnaryInResultType(Exp2), kInPlaceForm},
                             {"aten::expm1", UnaryInResultType(OpcodeOf<Opcode::kExpm1>), kInPlaceForm},
                             {"aten::log", UnaryInResultType(math::Log), kInPlaceForm},
                             {"aten::log2", UnaryInResultType(Log2), kInPlaceForm},
                             {"aten::log10", UnaryInResultType(Log10), kInPlaceForm},
                             {"aten::log1p", UnaryInResultType(OpcodeOf<Opcode::kLog1p>), kInPlaceForm},
                             {"aten::sqrt", UnaryInResultType(math::Sqrt), kInPlaceForm},
                             {"aten::rsqrt", UnaryInResultType(OpcodeOf<Opcode::kRsqrt>), kInPlaceForm},
                             {"aten::sin", UnaryInResultType(OpcodeOf<Opcode::kSin>), kInPlaceForm},
                             {"aten::cos", UnaryInResultType(OpcodeOf<Opcode::kCos>), kInPlaceForm},
                             {"aten::tan", UnaryInResultType(OpcodeOf<Opcode::kTan>), kInPlaceForm},
                             {"aten::tanh", UnaryInResultType(OpcodeOf<Opcode::kTanh>), kInPlaceForm},
                             {"aten::sigmoid", UnaryInResultType(math::Sigmoid), kInPlaceForm},
                             {"aten::atan", UnaryInResultType(Atan), kInPlaceForm},
                             {"aten::arctan", UnaryInResultType(Atan)},
                             {"aten::asin", UnaryInResultType(Asin), kInPlaceForm},
                             {"aten::acos", UnaryInResultType(Acos), kInPlaceForm},
                             {"aten::sinh", UnaryInResultType(Sinh), kInPlaceForm},
                             {"aten::cosh", UnaryInResultType(Cosh), kInPlaceForm},
                             {"aten::asinh", UnaryInResultType(Asinh), kInPlaceForm},
                             {"aten::acosh", UnaryInResultType(Acosh), kInPlaceForm},
                             {"aten::atanh", UnaryInResultType(Atanh), kInPlaceForm},
                             {"aten::ceil", UnaryInResultType(OpcodeOf<Opcode::kCeil>), kInPlaceForm},
                             {"aten::floor", UnaryInResultType(OpcodeOf<Opcode::kFloor>), kInPlaceForm},
                             {"aten::round", Round, kInPlaceForm},
                             {"aten::trunc", UnaryInResultType(Trunc), kInPlaceForm},
                             {"aten::fix", UnaryInResultType(Trunc)},
                             {"aten::frac", UnaryInResultType(Frac), kInPlaceForm},
                             {"aten::sign", UnaryInResultType(math::Sign), kInPlaceForm},
                             {"aten::sgn", UnaryInResultType(math::Sign), kInPlaceForm},
                             {"aten::reciprocal", UnaryInResultType(math::Reciprocal), kInPlaceForm},
                             {"aten::square", UnaryInResultType(Square), kInPlaceForm},
                             {"aten::erf", UnaryInResultType(OpcodeOf<Opcode::kErf>), kInPlaceForm},
                             {"aten::erfc", UnaryInResultType(Erfc), kInPlaceForm},
                             {"aten::erfinv", UnaryInResultType(math::ErfInv), kInPlaceForm},
                             {"aten::deg2rad", UnaryInResultType(Deg2rad), kInPlaceForm},
                             {"aten::rad2deg", UnaryInResultType(Rad2deg), kInPlaceForm},
                             {"aten::bitwise_not", UnaryInResultType(OpcodeOf<Opcode::kNot>), kInPlaceForm},
                             {"aten::conj_physical", UnaryInResultType(ConjPhysical)},
                             {"aten::_conj", UnaryInResultType(ConjPhysical)},
                             {"aten::_conj_physical", UnaryInResultType(ConjPhysical)},
                             {"aten::resolve_conj", UnaryInResultType(Identity)},
                             {"aten::resolve_neg", UnaryInResultType(Identity)},
                             {"aten::sinc", UnaryInResultType(Sinc)},
                             {"aten::logit", Logit, kInPlaceForm},
                             {"aten::frexp", Frexp},
                             // unary, in the input type
                             {"aten::isnan", UnaryInInputType(IsNan)},
                             {"aten::isinf", UnaryInInputType(IsInf)},
                             {"aten::isposinf", UnaryInInputType(IsPosInf)},
                             {"aten::isneginf", UnaryInInputType(IsNegInf)},
                             {"aten::isfinite", UnaryInInputType(IsFinite)},
                             {"aten::signbit", UnaryInInputType(Signbit)},
                             {"aten::logical_not", UnaryInInputType(LogicalNot), kInPlaceForm},
                             {"aten::real", UnaryInInputType(Real)},
                             {"aten::imag", UnaryInInputType(Imag)},
                             {"aten::angle", UnaryInInputType(Angle)},
                             // binary arithmetic
                             {"aten::add", AddOp, kInPlaceForm},
                             {"aten::sub", SubOp, kInPlaceForm},
                             {"aten::subtract", SubOp},
                             {"aten::rsub", Rsub},
                             {"aten::mul", Binary(In::kPromotedType, Multiply), kInPlaceForm},
                             {"aten::multiply", Binary(In::kPromotedType, Multiply)},
                             {"aten::div", DivOp, kInPlaceForm},
                             {"aten::divide", DivOp},
                             {"aten::true_divide", DivOp, kInPlaceForm},
                             {"aten::floor_divide", Binary(In::kPromotedType, FloorDivide), kInPlaceForm},
                             {"aten::remainder", Binary(In::kPromotedType, Remainder), kInPlaceForm},
                             {"aten::fmod", Binary(In::kPromotedType, Fmod), kInPlaceForm},
                             {"aten::pow", Binary(In::kPromotedType, Pow, "exponent"), kInPlaceForm},
                             {"aten::maximum", Binary(In::kPromotedType, Maximum)},
                             {"aten::max.other", Binary(In::kPromotedType, Maximum)},
                             {"aten::minimum", Binary(In::kPromotedType, Minimum)},
                             {"aten::min.other", Binary(In::kPromotedType, Minimum)},
                             {"aten::fmax", Binary(In::kPromotedType, Fmax)},
                             {"aten::fmin", Binary(In::kPromotedType, Fmin)},
                             {"aten::copysign", Binary(In::kPromotedFloat, Copysign), kInPlaceForm},
                             {"aten::atan2", Binary(In::kPromotedFloat, Atan2), kInPlaceForm},
                             {"aten::arctan2", Binary(In::kPromotedFloat, Atan2)},
                             {"aten::hypot", Binary(In::kPromotedFloat, Hypot), kInPlaceForm},
                             {"aten::xlogy", Binary(In::kPromotedFloat, Xlogy), kInPlaceForm},
                             {"aten::logaddexp", Binary(In::kPromotedFloat, Logaddexp)},
                             {"aten::logaddexp2", Binary(In::kPromotedFloat, Logaddexp2)},
                             {"aten::heaviside", Heaviside, kInPlaceForm},
                             // bitwise
                             {"aten::bitwise_and", Binary(In::kPromotedType, BitwiseAnd), kInPlaceForm},
                             {"aten::bitwise_or", Binary(In::kPromotedType, BitwiseOr), kInPlaceForm},
                             {"aten::bitwise_xor", Binary(In::kPromotedType, BitwiseXor), kInPlaceForm},
                             {"aten::bitwise_left_shift", Binary(In::kPromotedType, ShiftLeft)},
                             {"aten::bitwise_right_shift", Binary(In::kPromotedType, ShiftRight)},
                             {"aten::__and__", Binary(In::kResultType, BitwiseAnd)},
                             {"aten::__or__", Binary(In::kResultType, BitwiseOr)},
                             {"aten::__xor__", Binary(In::kResultType, BitwiseXor)},
                             {"aten::__lshift__", Binary(In::kPromotedType, ShiftLeft)},
                             {"aten::__rshift__", Binary(In::kPromotedType, ShiftRight)},
                             // comparisons and logical ops
                             {"aten::eq", Compare(Dir::kEq), kInPlaceForm},
                             {"aten::ne", Compare(Dir::kNe), kInPlaceForm},
                             {"aten::not_equal", Compare(Dir::kNe)},
                             {"aten::lt", Compare(Dir::kLt), kInPlaceForm},
                             {"aten::less", Compare(Dir::kLt)},
                             {"aten::le", Compare(Dir::kLe), kInPlaceForm},
                             {"aten::less_equal", Compare(Dir::kLe)},
                             {"aten::gt", Compare(Dir::kGt), kInPlaceForm},
                             {"aten::greater", Compare(Dir::kGt)},
                             {"aten::ge", Compare(Dir::kGe), kInPlaceForm},
                             {"aten::greater_equal", Compare(Dir::kGe)},
                             {"aten::logical_and", Logical(Opcode::kAnd), kInPlaceForm},
                             {"aten::logical_or", Logical(Opcode::kOr), kInPlaceForm},
                             {"aten::logical_xor", Logical(Opcode::kXor), kInPlaceForm},
                             // ternary and others
                             {"aten::where.self", Where},
                             {"aten::where.Scalar", Where},
                             {"aten::where.ScalarOther", Where},
                             {"aten::where.ScalarSelf", Where},
                             {"aten::clamp", Clamp, kInPlaceForm},
                             {"aten::clamp_min", Clamp, kInPlaceForm},
                             {"aten::clamp_max", Clamp, kInPlaceForm},
                             {"aten::clip", Clamp},
                             {"aten::lerp", Lerp, kInPlaceForm},
                             {"aten::addcmul", Addcmul, kInPlaceForm},
                             {"aten::addcdiv", Addcdiv, kInPlaceForm},
                             {"aten::nan_to_num", NanToNum, kInPlaceForm},
                             {"aten::polar", Polar},
                             {"aten::complex", ComplexOp},
                             // dtype conversions and copies
                             {"aten::_to_copy", ToCopy},
                             {"aten::type_as", ToCopy},
                             {"aten::copy", Copy, kInPlaceForm},
                             {"aten::promote_types", NoTensorResult},
                             {"aten::result_type", NoTensorResult},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
