#include "hlo/math.h"

#include <limits>

namespace opprobe::hlo::math {

namespace {

Instruction* Like(Builder& b, Instruction* x, double v) {
  return b.Full(x->shape.element_type(), v, x->shape.dimensions());
}

}  // namespace

Instruction* ErfInv(Builder& b, Instruction* x) {
  Instruction* one = Like(b, x, 1.0);
  Instruction* w =
      b.Unary(Opcode::kNegate, b.Unary(Opcode::kLog, b.Binary(Opcode::kMultiply, b.Binary(Opcode::kSubtract, one, x),
                                                              b.Binary(Opcode::kAdd, one, x))));
  Instruction* lt = b.Compare(w, Like(b, w, 5.0), ComparisonDirection::kLt);
  Instruction* w_small = b.Binary(Opcode::kAdd, w, Like(b, w, -2.5));
  Instruction* w_big = b.Binary(Opcode::kAdd, b.Unary(Opcode::kSqrt, w), Like(b, w, -3.0));
  Instruction* ww = b.Select(lt, w_small, w_big);
  static const double kSmall[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                  -0.00125372503, -0.00417768164, 0.246640727,    1.50140941};
  static const double kBig[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                                -0.0076224613,   0.00943887047,  1.00167406,    2.83297682};
  Instruction* p = b.Select(lt, Like(b, x, kSmall[0]), Like(b, x, kBig[0]));
  for (int i = 1; i < 9; ++i)
    p = b.Binary(Opcode::kAdd, b.Select(lt, Like(b, x, kSmall[i]), Like(b, x, kBig[i])),
                 b.Binary(Opcode::kMultiply, p, ww));
  Instruction* r = b.Binary(Opcode::kMultiply, p, x);
  Instruction* is_one = b.Compare(b.Unary(Opcode::kAbs, x), one, ComparisonDirection::kEq);
  return b.Select(is_one, b.Binary(Opcode::kMultiply, x, Like(b, x, std::numeric_limits<double>::infinity())), r);
}

}  // namespace opprobe::hlo::math
