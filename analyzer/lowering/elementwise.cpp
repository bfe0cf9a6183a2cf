// Elementwise aten ops: unary math, binary arithmetic with type promotion and broadcasting,
// comparisons, activations and their backward ops. Complex arithmetic converts the real operand to
// the complex type first (XlaHelpers::Promote), so `x * y` with x f32 and y c64 is a c64 `convert`
// and a c64 `multiply`.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <numbers>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {
namespace {

using UnaryBody = std::function<Instruction*(Builder&, Instruction*)>;


// Output dims of an elementwise node: its first output, else the broadcast of its tensor args.
std::vector<int64_t> OutDims(const LoweringContext& ctx) {
  if (const TensorMeta* m = ctx.OutputMeta(0)) return m->sizes;
  std::vector<int64_t> d;
  for (const auto& a : ctx.node.args)
    if (a.value.is_tensor()) d = BroadcastShapes(d, a.value.tensor.sizes);
  return d;
}

Instruction* Trunc(Builder& b, Instruction* x) {
  // sign(x) * floor(|x|), as XLA's client library does for round-toward-zero.
  return Mul(b, b.Unary(Opcode::kSign, x), b.Unary(Opcode::kFloor, b.Unary(Opcode::kAbs, x)));
}

Instruction* Atan(Builder& b, Instruction* x) { return b.Binary(Opcode::kAtan2, x, FullLike(b, x, 1.0)); }

// sqrt(1 - x*x)
Instruction* OneMinusSq(Builder& b, Instruction* x) {
  return b.Unary(Opcode::kSqrt, Sub(b, FullLike(b, x, 1.0), Mul(b, x, x)));
}

Instruction* Gelu(Builder& b, Instruction* x, bool tanh_approx) {
  if (tanh_approx) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Instruction* x3 = Mul(b, Mul(b, x, x), x);
    Instruction* inner = MulScalar(b, Add(b, x, MulScalar(b, x3, 0.044715)), std::sqrt(2.0 / std::numbers::pi));
    return Mul(b, MulScalar(b, x, 0.5), AddScalar(b, b.Unary(Opcode::kTanh, inner), 1.0));
  }
  // x * 0.5 * (erf(x / sqrt(2)) + 1)  (torch_xla BuildGelu)
  Instruction* e = b.Unary(Opcode::kErf, MulScalar(b, x, std::numbers::sqrt2 / 2));
  return Mul(b, MulScalar(b, x, 0.5), AddScalar(b, e, 1.0));
}

Instruction* Softplus(Builder& b, Instruction* x, double beta, double threshold) {
  Instruction* bx = beta == 1.0 ? x : MulScalar(b, x, beta);
  Instruction* sp = b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, bx));
  if (beta != 1.0) sp = MulScalar(b, sp, 1.0 / beta);
  return b.Select(CmpScalar(b, bx, threshold, ComparisonDirection::kGt), x, sp);
}

Instruction* Erfinv(Builder& b, Instruction* x) {
  // Giles' single-precision approximation (XLA's ErfInv32): w = -log((1-x)(1+x)); two polynomials.
  Instruction* one = FullLike(b, x, 1.0);
  Instruction* w = b.Unary(Opcode::kNegate, b.Unary(Opcode::kLog, Mul(b, Sub(b, one, x), Add(b, one, x))));
  Instruction* lt = CmpScalar(b, w, 5.0, ComparisonDirection::kLt);
  Instruction* w_small = AddScalar(b, w, -2.5);
  Instruction* w_big = AddScalar(b, b.Unary(Opcode::kSqrt, w), -3.0);
  Instruction* ww = b.Select(lt, w_small, w_big);
  static const double kSmall[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
  static const double kBig[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
  Instruction* p = b.Select(lt, FullLike(b, x, kSmall[0]), FullLike(b, x, kBig[0]));
  for (int i = 1; i < 9; ++i)
    p = Add(b, b.Select(lt, FullLike(b, x, kSmall[i]), FullLike(b, x, kBig[i])), Mul(b, p, ww));
  Instruction* r = Mul(b, p, x);
  // |x| == 1 -> +-inf
  Instruction* is_one = CmpScalar(b, b.Unary(Opcode::kAbs, x), 1.0, ComparisonDirection::kEq);
  return b.Select(is_one, MulScalar(b, x, std::numeric_limits<double>::infinity()), r);
}

// Unary bodies over the compute type (the output type, or the input type for predicates).
const std::map<std::string, UnaryBody>& UnaryBodies() {
  static const auto* m = new std::map<std::string, UnaryBody>{
      {"abs", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kAbs, x); }},
      {"absolute", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kAbs, x); }},
      {"neg", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kNegate, x); }},
      {"negative", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kNegate, x); }},
      {"positive", [](Builder&, Instruction* x) { return x; }},
      {"exp", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kExp, x); }},
      {"exp2", [](Builder& b, Instruction* x) { return b.Binary(Opcode::kPower, FullLike(b, x, 2.0), x); }},
      {"expm1", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kExpm1, x); }},
      {"log", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kLog, x); }},
      {"log2", [](Builder& b, Instruction* x) { return MulScalar(b, b.Unary(Opcode::kLog, x), 1.0 / std::numbers::ln2); }},
      {"log10",
       [](Builder& b, Instruction* x) { return MulScalar(b, b.Unary(Opcode::kLog, x), 1.0 / std::numbers::ln10); }},
      {"log1p", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kLog1p, x); }},
      {"sqrt", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kSqrt, x); }},
      {"rsqrt", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kRsqrt, x); }},
      {"sin", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kSin, x); }},
      {"cos", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kCos, x); }},
      {"tan", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kTan, x); }},
      {"tanh", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kTanh, x); }},
      {"sigmoid", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kLogistic, x); }},
      {"atan", [](Builder& b, Instruction* x) { return Atan(b, x); }},
      {"arctan", [](Builder& b, Instruction* x) { return Atan(b, x); }},
      {"asin",
       [](Builder& b, Instruction* x) {
         // 2 * atan2(x, 1 + sqrt(1 - x^2))  (XLA client library Asin)
         return MulScalar(b, b.Binary(Opcode::kAtan2, x, AddScalar(b, OneMinusSq(b, x), 1.0)), 2.0);
       }},
      {"acos",
       [](Builder& b, Instruction* x) {
         // 2 * atan2(sqrt(1 - x^2), 1 + x)  (XLA client library Acos)
         return MulScalar(b, b.Binary(Opcode::kAtan2, OneMinusSq(b, x), AddScalar(b, x, 1.0)), 2.0);
       }},
      {"sinh",
       [](Builder& b, Instruction* x) {
         return MulScalar(b, Sub(b, b.Unary(Opcode::kExp, x), b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x))), 0.5);
       }},
      {"cosh",
       [](Builder& b, Instruction* x) {
         return MulScalar(b, Add(b, b.Unary(Opcode::kExp, x), b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x))), 0.5);
       }},
      {"asinh",
       [](Builder& b, Instruction* x) {
         // sign(x) * log(|x| + sqrt(x^2 + 1))
         Instruction* a = b.Unary(Opcode::kAbs, x);
         Instruction* r = b.Unary(Opcode::kLog, Add(b, a, b.Unary(Opcode::kSqrt, AddScalar(b, Mul(b, a, a), 1.0))));
         return Mul(b, b.Unary(Opcode::kSign, x), r);
       }},
      {"acosh",
       [](Builder& b, Instruction* x) {
         return b.Unary(Opcode::kLog, Add(b, x, b.Unary(Opcode::kSqrt, AddScalar(b, Mul(b, x, x), -1.0))));
       }},
      {"atanh",
       [](Builder& b, Instruction* x) {
         // 0.5 * (log1p(x) - log1p(-x))
         return MulScalar(b, Sub(b, b.Unary(Opcode::kLog1p, x), b.Unary(Opcode::kLog1p, b.Unary(Opcode::kNegate, x))), 0.5);
       }},
      {"ceil", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kCeil, x); }},
      {"floor", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kFloor, x); }},
      {"round", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kRoundNearestEven, x); }},
      {"trunc", [](Builder& b, Instruction* x) { return Trunc(b, x); }},
      {"fix", [](Builder& b, Instruction* x) { return Trunc(b, x); }},
      {"frac", [](Builder& b, Instruction* x) { return Sub(b, x, Trunc(b, x)); }},
      {"sign", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kSign, x); }},
      {"sgn", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kSign, x); }},
      {"reciprocal", [](Builder& b, Instruction* x) { return Div(b, FullLike(b, x, 1.0), x); }},
      {"square", [](Builder& b, Instruction* x) { return Mul(b, x, x); }},
      {"erf", [](Builder& b, Instruction* x) { return b.Unary(Opcode::kErf, x); }},
      {"erfc", [](Builder& b, Instruction* x) { return Sub(b, FullLike(b, x, 1.0), b.Unary(Opcode::kErf, x)); }},
      {"erfinv", [](Builder& b, Instruction* x) { return Erfinv(b, x); }},
      {"relu",
       [](Builder& b, Instruction* x) { return b.Binary(Opcode::kMaximum, x, FullLike(b, x, 0.0)); }},
      {"relu6",
       [](Builder& b, Instruction* x) { return b.Clamp(Scalar(b, x->shape.element_type(), 0), x,
                                                       Scalar(b, x->shape.element_type(), 6)); }},
      {"silu", [](Builder& b, Instruction* x) { return Mul(b, x, b.Unary(Opcode::kLogistic, x)); }},
      {"mish",
       [](Builder& b, Instruction* x) { return Mul(b, x, b.Unary(Opcode::kTanh, Softplus(b, x, 1.0, 20.0))); }},
      {"hardsigmoid",
       [](Builder& b, Instruction* x) {
         PrimitiveType t = x->shape.element_type();
         return MulScalar(b, b.Clamp(Scalar(b, t, 0), AddScalar(b, x, 3.0), Scalar(b, t, 6)), 1.0 / 6.0);
       }},
      {"hardswish",
       [](Builder& b, Instruction* x) {
         PrimitiveType t = x->shape.element_type();
         return Mul(b, x, MulScalar(b, b.Clamp(Scalar(b, t, 0), AddScalar(b, x, 3.0), Scalar(b, t, 6)), 1.0 / 6.0));
       }},
      {"logsigmoid",
       [](Builder& b, Instruction* x) { return b.Unary(Opcode::kNegate, Softplus(b, b.Unary(Opcode::kNegate, x), 1.0, 1e30)); }},
      {"deg2rad", [](Builder& b, Instruction* x) { return MulScalar(b, x, std::numbers::pi / 180.0); }},
      {"rad2deg", [](Builder& b, Instruction* x) { return MulScalar(b, x, 180.0 / std::numbers::pi); }},
      {"bitwise_not",
       [](Builder& b, Instruction* x) { return b.Unary(Opcode::kNot, x); }},
      {"conj_physical",
       [](Builder& b, Instruction* x) {
         if (!hlo::IsComplex(x->shape.element_type())) return x;
         return b.Complex(b.Real(x), b.Unary(Opcode::kNegate, b.Imag(x)));
       }},
      {"resolve_conj", [](Builder&, Instruction* x) { return x; }},
      {"resolve_neg", [](Builder&, Instruction* x) { return x; }},
      {"sinc",
       [](Builder& b, Instruction* x) {
         Instruction* px = MulScalar(b, x, std::numbers::pi);
         Instruction* r = Div(b, b.Unary(Opcode::kSin, px), px);
         return b.Select(CmpScalar(b, x, 0.0, ComparisonDirection::kEq), FullLike(b, x, 1.0), r);
       }},
  };
  return *m;
}

// Predicates and type-changing unary ops that compute on the input type.
const std::map<std::string, UnaryBody>& InputTypeBodies() {
  static const auto* m = new std::map<std::string, UnaryBody>{
      {"isnan", [](Builder& b, Instruction* x) { return b.Compare(x, x, ComparisonDirection::kNe); }},
      {"isinf",
       [](Builder& b, Instruction* x) {
         if (!IsFloatish(x->shape.element_type())) return Full(b, PrimitiveType::PRED, 0, Dims(x));
         return CmpScalar(b, b.Unary(Opcode::kAbs, x), std::numeric_limits<double>::infinity(), ComparisonDirection::kEq);
       }},
      {"isposinf",
       [](Builder& b, Instruction* x) {
         return CmpScalar(b, x, std::numeric_limits<double>::infinity(), ComparisonDirection::kEq);
       }},
      {"isneginf",
       [](Builder& b, Instruction* x) {
         return CmpScalar(b, x, -std::numeric_limits<double>::infinity(), ComparisonDirection::kEq);
       }},
      {"isfinite",
       [](Builder& b, Instruction* x) {
         if (!IsFloatish(x->shape.element_type())) return Full(b, PrimitiveType::PRED, 1, Dims(x));
         return b.Unary(Opcode::kIsFinite, x);
       }},
      {"signbit",
       [](Builder& b, Instruction* x) {
         if (!hlo::IsFloatingPoint(x->shape.element_type())) return CmpScalar(b, x, 0, ComparisonDirection::kLt);
         // The sign bit of the integer of the same width.
         int w = hlo::BitWidth(x->shape.element_type());
         PrimitiveType it = w == 64 ? PrimitiveType::S64 : w == 32 ? PrimitiveType::S32 : PrimitiveType::S16;
         return CmpScalar(b, b.BitcastConvert(x, it), 0, ComparisonDirection::kLt);
       }},
      {"logical_not",
       [](Builder& b, Instruction* x) {
         if (x->shape.element_type() == PrimitiveType::PRED) return b.Unary(Opcode::kNot, x);
         return CmpScalar(b, x, 0, ComparisonDirection::kEq);
       }},
      {"abs",  // complex abs is real
       [](Builder& b, Instruction* x) { return b.Unary(Opcode::kAbs, x); }},
      {"real", [](Builder& b, Instruction* x) { return hlo::IsComplex(x->shape.element_type()) ? b.Real(x) : x; }},
      {"imag", [](Builder& b, Instruction* x) { return b.Imag(x); }},
      {"angle",
       [](Builder& b, Instruction* x) {
         if (hlo::IsComplex(x->shape.element_type())) return b.Binary(Opcode::kAtan2, b.Imag(x), b.Real(x));
         Instruction* f = b.Convert(x, FloatType(x->shape.element_type()));
         Instruction* pi = FullLike(b, f, std::numbers::pi);
         Instruction* r = b.Select(CmpScalar(b, f, 0, ComparisonDirection::kLt), pi, FullLike(b, f, 0));
         return b.Select(b.Compare(f, f, ComparisonDirection::kNe), f, r);
       }},
  };
  return *m;
}

Expected<LoweredOp> LowerUnary(const std::string& op, const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType in = x->shape.element_type();
  PrimitiveType out = ctx.OutputType(0, FloatType(in));
  auto& typed = InputTypeBodies();
  if (auto it = typed.find(op); it != typed.end() && (op != "abs" || hlo::IsComplex(in))) {
    Instruction* r = it->second(b, x);
    return ctx.Finish({b.Convert(r, out)});
  }
  auto& bodies = UnaryBodies();
  auto it = bodies.find(op);
  if (it == bodies.end()) return ctx.Unsupported("no unary body for " + op);
  // Integer inputs of float ops compute in the float output type; integer ops (abs, neg, sign,
  // bitwise_not, relu on ints) stay integral.
  Instruction* xin = b.Convert(x, out);
  if (op == "round" && ctx.Int("decimals", 1, 0) != 0) {
    // round(x * 10^d) / 10^d, as ATen does
    double scale = std::pow(10.0, static_cast<double>(ctx.Int("decimals", 1, 0)));
    Instruction* r = Div(b, b.Unary(Opcode::kRoundNearestEven, MulScalar(b, xin, scale)), FullLike(b, xin, scale));
    return ctx.Finish({r});
  }
  Instruction* r = it->second(b, xin);
  return ctx.Finish({r});
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
  std::vector<int64_t> dims = OutDims(ctx);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, ctx.Operand(an, ap, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * bb, ctx.Operand(bn, bp, t, dims));
  return Bin{a, bb, t, dims};
}

Instruction* FloorDivInt(Builder& b, Instruction* x, Instruction* y) {
  // q = x / y (truncating); q - 1 where the remainder is non-zero and the signs differ.
  Instruction* q = Div(b, x, y);
  Instruction* r = b.Binary(Opcode::kRemainder, x, y);
  Instruction* zero = FullLike(b, x, 0);
  Instruction* nz = b.Compare(r, zero, ComparisonDirection::kNe);
  Instruction* diff = b.Compare(b.Compare(r, zero, ComparisonDirection::kLt), b.Compare(y, zero, ComparisonDirection::kLt),
                                ComparisonDirection::kNe);
  return b.Select(b.Binary(Opcode::kAnd, nz, diff), Sub(b, q, FullLike(b, q, 1)), q);
}

Instruction* PyRemainder(Builder& b, Instruction* x, Instruction* y) {
  // r = fmod(x, y); r + y where r != 0 and sign(r) != sign(y)
  Instruction* r = b.Binary(Opcode::kRemainder, x, y);
  Instruction* zero = FullLike(b, x, 0);
  Instruction* nz = b.Compare(r, zero, ComparisonDirection::kNe);
  Instruction* diff = b.Compare(b.Compare(r, zero, ComparisonDirection::kLt), b.Compare(y, zero, ComparisonDirection::kLt),
                                ComparisonDirection::kNe);
  return b.Select(b.Binary(Opcode::kAnd, nz, diff), Add(b, r, y), r);
}

// add/sub with alpha as PyTorch/XLA builds them (torch_xla tensor_methods.cpp): `self + other * alpha`,
// where the product is an aten::mul node of its IR, even for alpha == 1; a Python-number `other` is
// multiplied with alpha as a scalar before the broadcast. The product's instructions carry
// op_type aten__mul, so reports attribute them to aten::mul, as AWS Neuron's analyze does.
Expected<LoweredOp> LowerAddSubWithAlpha(const std::string& op, const LoweringContext& ctx, const Value& other, const Value& alpha,
                                         PrimitiveType t, PrimitiveType out) {
  Builder& b = ctx.builder;
  std::vector<int64_t> dims = OutDims(ctx);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.Operand("self", 0, t, dims));
  const hlo::OpMetadata own = b.metadata();
  hlo::OpMetadata mul = own;
  mul.op_type = mul.op_name = "aten__mul";
  auto alpha_scalar = [&] { return alpha.kind == Value::Kind::kComplex ? ScalarC(b, t, alpha.c) : ScalarOf(b, t, alpha); };
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
  Instruction* r = op == "add" ? Add(b, x, scaled) : Sub(b, x, scaled);
  return ctx.Finish({b.Convert(r, out)});
}

Expected<LoweredOp> LowerBinary(const std::string& op, const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  const Value* self = ctx.Arg("self", 0);
  if (!self) return ctx.Unsupported("argument 'self' is missing");
  std::string other_name = op == "pow" ? "exponent" : "other";
  const Value* other = ctx.Arg(other_name, 1);
  if (!other) return ctx.Unsupported(fmt::format("argument '{}' is missing", other_name));
  PrimitiveType out = ctx.OutputType(0, ResultType({self, other}));
  // The type the arithmetic runs in: the output type (an in-place op keeps self's type, its
  // result is converted back).
  PrimitiveType t = out;
  if (op == "div" || op == "true_divide") {
    std::string mode = ctx.String("rounding_mode", 2);
    PrimitiveType common = ResultType({self, other});
    if (mode.empty()) t = FloatType(common);
    else t = common;
  } else if (op == "atan2" || op == "hypot" || op == "xlogy" || op == "logaddexp" || op == "logaddexp2") {
    t = FloatType(ResultType({self, other}));
  } else if (op == "add" || op == "sub" || op == "mul" || op == "rsub" || op == "maximum" || op == "minimum" ||
             op == "fmax" || op == "fmin" || op == "remainder" || op == "fmod" || op == "floor_divide" || op == "pow" ||
             op == "copysign" || op == "bitwise_and" || op == "bitwise_or" || op == "bitwise_xor" ||
             op == "bitwise_left_shift" || op == "bitwise_right_shift" || op == "__lshift__" || op == "__rshift__") {
    t = ResultType({self, other});
    if (op == "copysign") t = FloatType(t);
  }
  if ((op == "add" || op == "sub") && t != PrimitiveType::PRED) {
    const Value* alpha = ctx.Arg("alpha", 2);
    if (alpha && !alpha->is_none()) return LowerAddSubWithAlpha(op, ctx, *other, *alpha, t, out);
  }
  OPPROBE_ASSIGN_OR_RETURN(Bin v, Operands(ctx, "self", 0, other_name, 1, t));
  Instruction* x = v.a;
  Instruction* y = v.b;
  Instruction* r = nullptr;
  auto alpha_scaled = [&](Instruction* z) -> Instruction* {
    const Value* alpha = ctx.Arg("alpha", 2);
    if (!alpha || alpha->is_none()) return z;
    if (alpha->kind == Value::Kind::kComplex) return Mul(b, z, b.Broadcast(ScalarC(b, t, alpha->c), Dims(z), {}));
    if (alpha->AsDouble() == 1.0) return z;
    return Mul(b, z, b.Broadcast(ScalarOf(b, t, *alpha), Dims(z), {}));
  };
  bool is_int = hlo::IsInteger(t) || t == PrimitiveType::PRED;
  if (op == "add") {
    r = t == PrimitiveType::PRED ? b.Binary(Opcode::kOr, x, alpha_scaled(y)) : Add(b, x, alpha_scaled(y));
  } else if (op == "sub") {
    r = Sub(b, x, alpha_scaled(y));
  } else if (op == "rsub") {
    r = Sub(b, y, alpha_scaled(x));
  } else if (op == "mul") {
    r = t == PrimitiveType::PRED ? b.Binary(Opcode::kAnd, x, y) : Mul(b, x, y);
  } else if (op == "div" || op == "true_divide") {
    std::string mode = ctx.String("rounding_mode", 2);
    if (mode.empty()) r = Div(b, x, y);
    else if (mode == "trunc") r = is_int ? Div(b, x, y) : Trunc(b, Div(b, x, y));
    else if (mode == "floor") r = is_int ? FloorDivInt(b, x, y) : b.Unary(Opcode::kFloor, Div(b, x, y));
    else return ctx.Unsupported("unknown rounding_mode " + mode);
  } else if (op == "floor_divide") {
    r = is_int ? FloorDivInt(b, x, y) : b.Unary(Opcode::kFloor, Div(b, x, y));
  } else if (op == "pow") {
    r = b.Binary(Opcode::kPower, x, y);
  } else if (op == "maximum" || op == "max") {
    r = t == PrimitiveType::PRED ? b.Binary(Opcode::kOr, x, y) : b.Binary(Opcode::kMaximum, x, y);
  } else if (op == "minimum" || op == "min") {
    r = t == PrimitiveType::PRED ? b.Binary(Opcode::kAnd, x, y) : b.Binary(Opcode::kMinimum, x, y);
  } else if (op == "fmax" || op == "fmin") {
    Instruction* m = b.Binary(op == "fmax" ? Opcode::kMaximum : Opcode::kMinimum, x, y);
    if (is_int) {
      r = m;
    } else {  // NaN loses: pick the other operand where one is NaN
      Instruction* xn = b.Compare(x, x, ComparisonDirection::kNe);
      Instruction* yn = b.Compare(y, y, ComparisonDirection::kNe);
      r = b.Select(xn, y, b.Select(yn, x, m));
    }
  } else if (op == "atan2") {
    r = b.Binary(Opcode::kAtan2, x, y);
  } else if (op == "remainder") {
    r = PyRemainder(b, x, y);
  } else if (op == "fmod") {
    r = b.Binary(Opcode::kRemainder, x, y);
  } else if (op == "bitwise_and" || op == "__and__") {
    r = b.Binary(Opcode::kAnd, x, y);
  } else if (op == "bitwise_or" || op == "__or__") {
    r = b.Binary(Opcode::kOr, x, y);
  } else if (op == "bitwise_xor" || op == "__xor__") {
    r = b.Binary(Opcode::kXor, x, y);
  } else if (op == "bitwise_left_shift" || op == "__lshift__") {
    r = b.Binary(Opcode::kShiftLeft, x, y);
  } else if (op == "bitwise_right_shift" || op == "__rshift__") {
    r = b.Binary(hlo::IsUnsignedInteger(t) ? Opcode::kShiftRightLogical : Opcode::kShiftRightArithmetic, x, y);
  } else if (op == "hypot") {
    r = b.Unary(Opcode::kSqrt, Add(b, Mul(b, x, x), Mul(b, y, y)));
  } else if (op == "copysign") {
    Instruction* ax = b.Unary(Opcode::kAbs, x);
    Instruction* neg = b.Compare(y, FullLike(b, y, 0), ComparisonDirection::kLt);
    // -0.0 has its sign bit set: compare the integer bits for the sign
    int w = hlo::BitWidth(t);
    PrimitiveType it = w == 64 ? PrimitiveType::S64 : w == 32 ? PrimitiveType::S32 : PrimitiveType::S16;
    if (hlo::IsFloatingPoint(t)) neg = CmpScalar(b, b.BitcastConvert(y, it), 0, ComparisonDirection::kLt);
    r = b.Select(neg, b.Unary(Opcode::kNegate, ax), ax);
  } else if (op == "xlogy") {
    Instruction* p = Mul(b, x, b.Unary(Opcode::kLog, y));
    Instruction* x0 = CmpScalar(b, x, 0, ComparisonDirection::kEq);
    Instruction* yn = b.Compare(y, y, ComparisonDirection::kNe);
    r = b.Select(b.Binary(Opcode::kAnd, x0, b.Unary(Opcode::kNot, yn)), FullLike(b, x, 0), p);
  } else if (op == "logaddexp") {
    Instruction* m = b.Binary(Opcode::kMaximum, x, y);
    Instruction* d = b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, Sub(b, x, y)));
    r = Add(b, m, b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, d)));
    r = b.Select(b.Unary(Opcode::kIsFinite, m), r, m);  // both -inf, or one +inf / NaN
  } else if (op == "logaddexp2") {
    Instruction* m = b.Binary(Opcode::kMaximum, x, y);
    Instruction* d = b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, Sub(b, x, y)));
    Instruction* e = b.Binary(Opcode::kPower, FullLike(b, d, 2.0), d);
    r = Add(b, m, MulScalar(b, b.Unary(Opcode::kLog1p, e), 1.0 / std::numbers::ln2));
    r = b.Select(b.Unary(Opcode::kIsFinite, m), r, m);
  } else {
    return ctx.Unsupported("no binary body for " + op);
  }
  return ctx.Finish({b.Convert(r, out)});
}

}  // namespace

Instruction* ApplyUnary(Builder& b, const std::string& op, Instruction* x) {
  auto& bodies = UnaryBodies();
  auto it = bodies.find(op);
  return it == bodies.end() ? nullptr : it->second(b, x);
}

Fn Unary(const std::string& op) {
  return [op](const Node& n, Builder& b) { return LowerUnary(op, n, b); };
}

Fn Binary(const std::string& op) {
  return [op](const Node& n, Builder& b) { return LowerBinary(op, n, b); };
}

Fn Compare(ComparisonDirection d) {
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

Fn Logical(Opcode op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    std::vector<int64_t> dims = OutDims(ctx);
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
  std::vector<int64_t> dims = OutDims(ctx);
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
  std::vector<int64_t> dims = OutDims(ctx);
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

Expected<LoweredOp> Threshold(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x);
  PrimitiveType t = x->shape.element_type();
  OPPROBE_ASSIGN_OR_RETURN(Instruction * th, ctx.Operand("threshold", 1, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * val, ctx.Operand("value", 2, t, dims));
  return ctx.Finish({b.Select(b.Compare(x, th, ComparisonDirection::kLe), val, x)});
}

Expected<LoweredOp> ThresholdBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  PrimitiveType t = g->shape.element_type();
  std::vector<int64_t> dims = OutDims(ctx);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * th, ctx.Operand("threshold", 2, x->shape.element_type(), dims));
  Instruction* le = b.Compare(Bcast(b, x, dims), th, ComparisonDirection::kLe);
  return ctx.Finish({b.Select(le, Full(b, t, 0, dims), Bcast(b, g, dims))});
}

Fn ActivationBackward(const std::string& op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
    Instruction* y = op == "elu_backward" ? g : ctx.Tensor("output", 1);  // elu_backward's tensor is self_or_result (6)
    if (!y) y = ctx.Tensor("self", 1);
    if (!y) return ctx.Unsupported("needs output/self");
    PrimitiveType t = ctx.OutputType(0, g->shape.element_type());
    g = b.Convert(g, t);
    y = b.Convert(y, t);
    std::vector<int64_t> dims = OutDims(ctx);
    g = Bcast(b, g, dims);
    y = Bcast(b, y, dims);
    Instruction* r = nullptr;
    if (op == "tanh_backward") {  // g * (1 - y^2)
      r = Mul(b, g, Sub(b, FullLike(b, y, 1), Mul(b, y, y)));
    } else if (op == "sigmoid_backward") {  // g * y * (1 - y)
      r = Mul(b, g, Mul(b, y, Sub(b, FullLike(b, y, 1), y)));
    } else if (op == "silu_backward") {  // g * s * (1 + x (1 - s))
      Instruction* s = b.Unary(Opcode::kLogistic, y);
      r = Mul(b, g, Mul(b, s, AddScalar(b, Mul(b, y, Sub(b, FullLike(b, s, 1), s)), 1)));
    } else if (op == "gelu_backward") {
      std::string approx = ctx.String("approximate", 2, "none");
      if (approx == "tanh") {
        // d/dx 0.5 x (1 + tanh(u)), u = k (x + 0.044715 x^3)
        double k = std::sqrt(2.0 / std::numbers::pi);
        Instruction* x2 = Mul(b, y, y);
        Instruction* u = MulScalar(b, Add(b, y, MulScalar(b, Mul(b, x2, y), 0.044715)), k);
        Instruction* th = b.Unary(Opcode::kTanh, u);
        Instruction* du = MulScalar(b, AddScalar(b, MulScalar(b, x2, 3 * 0.044715), 1.0), k);
        Instruction* left = MulScalar(b, AddScalar(b, th, 1.0), 0.5);
        Instruction* right = Mul(b, MulScalar(b, y, 0.5), Mul(b, Sub(b, FullLike(b, th, 1), Mul(b, th, th)), du));
        r = Mul(b, g, Add(b, left, right));
      } else {
        // cdf + x * pdf
        Instruction* cdf = MulScalar(b, AddScalar(b, b.Unary(Opcode::kErf, MulScalar(b, y, std::numbers::sqrt2 / 2)), 1), 0.5);
        Instruction* pdf = MulScalar(b, b.Unary(Opcode::kExp, MulScalar(b, Mul(b, y, y), -0.5)),
                                     1.0 / std::sqrt(2 * std::numbers::pi));
        r = Mul(b, g, Add(b, cdf, Mul(b, y, pdf)));
      }
    } else if (op == "hardsigmoid_backward") {
      Instruction* in = b.Binary(Opcode::kAnd, CmpScalar(b, y, -3, ComparisonDirection::kGt),
                                 CmpScalar(b, y, 3, ComparisonDirection::kLt));
      r = b.Select(in, MulScalar(b, g, 1.0 / 6.0), FullLike(b, g, 0));
    } else if (op == "hardswish_backward") {
      Instruction* mid = Mul(b, g, AddScalar(b, MulScalar(b, y, 1.0 / 3.0), 0.5));
      Instruction* r1 = b.Select(CmpScalar(b, y, 3, ComparisonDirection::kGe), g, mid);
      r = b.Select(CmpScalar(b, y, -3, ComparisonDirection::kLe), FullLike(b, g, 0), r1);
    } else if (op == "hardtanh_backward") {
      double lo = ctx.Double("min_val", 2, -1), hi = ctx.Double("max_val", 3, 1);
      Instruction* out = b.Binary(Opcode::kOr, CmpScalar(b, y, lo, ComparisonDirection::kLe),
                                  CmpScalar(b, y, hi, ComparisonDirection::kGe));
      r = b.Select(out, FullLike(b, g, 0), g);
    } else if (op == "leaky_relu_backward") {
      double slope = ctx.Double("negative_slope", 2, 0.01);
      r = b.Select(CmpScalar(b, y, 0, ComparisonDirection::kGt), g, MulScalar(b, g, slope));
    } else if (op == "elu_backward") {
      double alpha = ctx.Double("alpha", 2, 1), scale = ctx.Double("scale", 3, 1), in_scale = ctx.Double("input_scale", 4, 1);
      bool is_result = ctx.Bool("is_result", 5, false);
      const Value* sx = ctx.Arg("self_or_result", 6);
      Instruction* v = ctx.Tensor("self_or_result", 6);
      (void)sx;
      if (!v) return ctx.Unsupported("needs self_or_result");
      v = Bcast(b, b.Convert(v, t), dims);
      Instruction* neg;
      if (is_result) {  // g * in_scale * (v + alpha*scale)
        neg = Mul(b, g, MulScalar(b, AddScalar(b, v, alpha * scale), in_scale));
      } else {  // g * in_scale * alpha * scale * exp(v * in_scale)
        neg = Mul(b, g, MulScalar(b, b.Unary(Opcode::kExp, MulScalar(b, v, in_scale)), in_scale * alpha * scale));
      }
      r = b.Select(CmpScalar(b, v, 0, ComparisonDirection::kLe), neg, MulScalar(b, g, scale));
    } else if (op == "softplus_backward") {
      double beta = ctx.Double("beta", 2, 1), threshold = ctx.Double("threshold", 3, 20);
      Instruction* bx = MulScalar(b, y, beta);
      Instruction* s = b.Unary(Opcode::kLogistic, bx);
      r = b.Select(CmpScalar(b, bx, threshold, ComparisonDirection::kGt), g, Mul(b, g, s));
    } else if (op == "mish_backward") {
      Instruction* sp = Softplus(b, y, 1, 20);
      Instruction* tsp = b.Unary(Opcode::kTanh, sp);
      Instruction* s = b.Unary(Opcode::kLogistic, y);
      r = Mul(b, g, Add(b, tsp, Mul(b, Mul(b, y, s), Sub(b, FullLike(b, tsp, 1), Mul(b, tsp, tsp)))));
    } else if (op == "logit_backward") {
      const Value* eps = ctx.Arg("eps", 2);
      Instruction* d = Div(b, g, Mul(b, y, Sub(b, FullLike(b, y, 1), y)));
      if (eps && !eps->is_none()) {
        double e = eps->AsDouble();
        Instruction* out = b.Binary(Opcode::kOr, CmpScalar(b, y, e, ComparisonDirection::kLt),
                                    CmpScalar(b, y, 1 - e, ComparisonDirection::kGt));
        r = b.Select(out, FullLike(b, g, 0), d);
      } else {
        Instruction* out = b.Binary(Opcode::kOr, CmpScalar(b, y, 0, ComparisonDirection::kLt),
                                    CmpScalar(b, y, 1, ComparisonDirection::kGt));
        r = b.Select(out, FullLike(b, g, std::numeric_limits<double>::quiet_NaN()), d);
      }
    } else if (op == "log_sigmoid_backward") {
      // g * (1 - sigmoid(x)) = g * sigmoid(-x)
      r = Mul(b, g, b.Unary(Opcode::kLogistic, b.Unary(Opcode::kNegate, y)));
    } else {
      return ctx.Unsupported("no backward body for " + op);
    }
    return ctx.Finish({r});
  };
}

Expected<LoweredOp> Lerp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<int64_t> dims = OutDims(ctx);
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.Operand("self", 0, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * e, ctx.Operand("end", 1, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.Operand("weight", 2, t, dims));
  // x + w (e - x)
  return ctx.Finish({Add(b, x, Mul(b, w, Sub(b, e, x)))});
}

namespace {
Expected<LoweredOp> AddcOp(const Node& n, Builder& b, bool mul) {
  LoweringContext ctx(n, b);
  std::vector<int64_t> dims = OutDims(ctx);
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
}  // namespace

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
  double big = t == PrimitiveType::F64 ? std::numeric_limits<double>::max()
               : t == PrimitiveType::F16 ? 65504.0
               : t == PrimitiveType::BF16 ? 3.3895313892515355e38
                                          : std::numeric_limits<float>::max();
  auto opt = [&](const char* name, size_t pos, double def) {
    const Value* v = ctx.Arg(name, pos);
    return v && !v->is_none() ? v->AsDouble() : def;
  };
  double nan = opt("nan", 1, 0.0), pos = opt("posinf", 2, big), neg = opt("neginf", 3, -big);
  Instruction* r = b.Select(b.Compare(x, x, ComparisonDirection::kNe), FullLike(b, x, nan), x);
  r = b.Select(CmpScalar(b, x, std::numeric_limits<double>::infinity(), ComparisonDirection::kEq), FullLike(b, x, pos), r);
  r = b.Select(CmpScalar(b, x, -std::numeric_limits<double>::infinity(), ComparisonDirection::kEq), FullLike(b, x, neg), r);
  return ctx.Finish({r});
}

Expected<LoweredOp> LeakyRelu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double slope = ctx.Double("negative_slope", 1, 0.01);
  return ctx.Finish({b.Select(CmpScalar(b, x, 0, ComparisonDirection::kGt), x, MulScalar(b, x, slope))});
}

Expected<LoweredOp> Hardtanh(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = x->shape.element_type();
  double lo = ctx.Double("min_val", 1, -1), hi = ctx.Double("max_val", 2, 1);
  return ctx.Finish({b.Clamp(Scalar(b, t, lo), x, Scalar(b, t, hi))});
}

Expected<LoweredOp> Elu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double alpha = ctx.Double("alpha", 1, 1), scale = ctx.Double("scale", 2, 1), in_scale = ctx.Double("input_scale", 3, 1);
  if (n.op == "aten::selu" || n.op == "aten::selu_") {
    alpha = 1.6732632423543772848170429916717;
    scale = 1.0507009873554804934193349852946;
  } else if (n.op == "aten::celu" || n.op == "aten::celu_") {
    alpha = ctx.Double("alpha", 1, 1);
    scale = 1;
    in_scale = 1 / alpha;
  }
  Instruction* neg = MulScalar(b, b.Unary(Opcode::kExpm1, MulScalar(b, x, in_scale)), alpha * scale);
  return ctx.Finish({b.Select(CmpScalar(b, x, 0, ComparisonDirection::kGt), MulScalar(b, x, scale), neg)});
}

Expected<LoweredOp> Softplus(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  return ctx.Finish({Softplus(b, x, ctx.Double("beta", 1, 1), ctx.Double("threshold", 2, 20))});
}

Expected<LoweredOp> Gelu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  return ctx.Finish({Gelu(b, x, ctx.String("approximate", 1, "none") == "tanh")});
}

Expected<LoweredOp> LogSigmoidForward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  Instruction* r = b.Unary(Opcode::kNegate, Softplus(b, b.Unary(Opcode::kNegate, x), 1.0, 1e30));
  std::vector<Instruction*> outs = {r};
  // ATen's CPU kernel also returns its buffer, exp(-|x|) (an empty tensor on other devices).
  if (const TensorMeta* buf = ctx.OutputMeta(1))
    outs.push_back(buf->sizes == Dims(x) ? b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, x)))
                                         : Full(b, buf->dtype, 0, buf->sizes));
  return ctx.Finish(outs);
}

Expected<LoweredOp> Polar(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<int64_t> dims = OutDims(ctx);
  PrimitiveType t = hlo::ComplexComponentType(ctx.OutputType(0, PrimitiveType::C64));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, ctx.Operand("abs", 0, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * th, ctx.Operand("angle", 1, t, dims));
  return ctx.Finish({b.Complex(Mul(b, a, b.Unary(Opcode::kCos, th)), Mul(b, a, b.Unary(Opcode::kSin, th)))});
}

Expected<LoweredOp> ComplexOp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * re, ctx.RequiredTensor("real", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * im, ctx.RequiredTensor("imag", 1));
  std::vector<int64_t> dims = OutDims(ctx);
  return ctx.Finish({b.Complex(Bcast(b, re, dims), Bcast(b, im, dims))});
}

}  // namespace opprobe::analyzer::lowering
