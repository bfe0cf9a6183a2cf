// The lowering families: each .cpp file of analyzer/lowering that lowers aten ops ends with one function that
// lists its lowerings, and LoweringTable::Builtin() registers every list. A family's name is its file's stem
// (FamilyOf(__FILE__)), and a list names functions of its own file, so the family `opprobe ops` prints is where
// the lowering lives. The few functions that one family shares with another are declared at the end.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analyzer/lowering/context.h"

namespace opprobe::analyzer::lowering {

// Turns the meta `self` was recorded with after an in-place call that changed its shape back into the meta it had
// before the call (the capture records a call's arguments once it has run).
using RestoreSelf = void (*)(const Node& call, TensorMeta& self);

// Whether a functional lowering also lowers its op's in-place form (`aten::add_` for `aten::add`), the way
// torchax maps each mutation to its functional op: the in-place op computes the functional result and writes it
// into `self`, so its recorded output (self after the call) is what the functional lowering produces. An op that
// changes self's shape in place (transpose_, unsqueeze_) names how to restore self's shape before the call.
struct InPlace {
  bool listed = false;
  RestoreSelf restore = nullptr;
};
inline constexpr InPlace kNoInPlaceForm{};
inline constexpr InPlace kInPlaceForm{true, nullptr};
inline constexpr InPlace InPlaceView(RestoreSelf restore) { return InPlace{true, restore}; }

// One lowering of a family's list.
struct Lowering {
  const char* name;  // `aten::relu` (every overload not listed on its own) or `aten::add.Tensor`
  LoweringFn fn;
  InPlace in_place = kNoInPlaceForm;
};

struct LoweringFamily {
  std::string name;
  std::vector<Lowering> lowerings;
};

// A family's name from its source file: the stem of `path` ("elementwise" for ".../elementwise.cpp").
std::string FamilyOf(std::string_view path);

// The in-place form of an op name: `aten::add` -> `aten::add_`, `aten::foo.bar` -> `aten::foo_.bar`.
std::string InPlaceName(const std::string& name);

// Every family, in no particular order (table.cpp).
std::vector<const LoweringFamily*> BuiltinFamilies();

// ---- the families ----
const LoweringFamily& ActivationLowerings();
const LoweringFamily& AttentionLowerings();
const LoweringFamily& ConvLowerings();
const LoweringFamily& ElementwiseLowerings();
const LoweringFamily& FactorizationLowerings();
const LoweringFamily& FactoryLowerings();
const LoweringFamily& FftLowerings();
const LoweringFamily& HistogramLowerings();
const LoweringFamily& IndexingLowerings();
const LoweringFamily& LinalgLowerings();
const LoweringFamily& LossLowerings();
const LoweringFamily& NormLowerings();
const LoweringFamily& OptimizerLowerings();
const LoweringFamily& PoolingLowerings();
const LoweringFamily& QuantizedLowerings();
const LoweringFamily& RandomLowerings();
const LoweringFamily& ReductionLowerings();
const LoweringFamily& RnnLowerings();
const LoweringFamily& SamplingLowerings();
const LoweringFamily& ShapeLowerings();
const LoweringFamily& SpecialLowerings();

// ---- what families share ----

// elementwise.cpp: a unary op's body over one value.
using UnaryBody = Instruction* (*)(Builder& b, Instruction* x);
// The lowering of a unary op over `self` that computes `body` in its result type (integer inputs of a float op
// are converted to the float result type first; integer ops such as abs or neg stay integral).
LoweringFn UnaryInResultType(UnaryBody body);
// The dims of an elementwise call's result: its recorded output's, else the broadcast of its tensor arguments.
std::vector<int64_t> ElementwiseDims(const LoweringContext& ctx);
// Bodies of elementwise math that other families reuse (the _foreach_ ops, special functions).
namespace math {
Instruction* Abs(Builder& b, Instruction* x);
Instruction* Negate(Builder& b, Instruction* x);
Instruction* Exp(Builder& b, Instruction* x);
Instruction* Log(Builder& b, Instruction* x);
Instruction* Sqrt(Builder& b, Instruction* x);
Instruction* Sigmoid(Builder& b, Instruction* x);
Instruction* Sign(Builder& b, Instruction* x);
Instruction* Reciprocal(Builder& b, Instruction* x);
Instruction* ErfInv(Builder& b, Instruction* x);  // Giles' approximation, as XLA's ErfInv32
}  // namespace math

// pooling.cpp: a (value, index) arg-max/arg-min reducer for variadic reduce/reduce-window: keeps the better
// value, the lower index on ties, NaN wins (also reduction.cpp's argmax/argmin and max.dim/min.dim).
Computation* ArgReducer(Builder& b, PrimitiveType vt, PrimitiveType it, bool is_max);

// special.cpp: the modified Bessel function I0 (factory.cpp's kaiser_window).
Instruction* BesselI0(Builder& b, Instruction* x);

// quantized.cpp: why the node cannot lower when one of its tensors (or dtype arguments) has a torch dtype without
// an XLA element type (qint8, complex32, bits8, ...); empty when all have one (Lower checks it first).
std::string NoXlaTypeReason(const Node& node);

}  // namespace opprobe::analyzer::lowering
