// Shared helpers of the aten -> HLO lowerings: argument access, type promotion, broadcasting,
// scalar constants, reductions and the output check every lowering ends with.
//
// Conventions every lowering follows (so that callers such as the conformance suite can bind
// values without knowing the op):
// - Every tensor argument of the node (and every non-None entry of a tensor-list argument) becomes
//   one entry-computation parameter, in argument order, whether or not the lowering reads it.
// - LoweredOp.outputs hold one HLO value per node output that is not None (an int output such as
//   sym_size's becomes an s64 scalar; a tensor-list output contributes one value per tensor).
#pragma once

#include <complex>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/lowering/lowering.h"

namespace opprobe::analyzer::lowering {

using hlo::Builder;
using hlo::ComparisonDirection;
using hlo::Computation;
using hlo::Instruction;
using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;

hlo::Shape ShapeOf(const TensorMeta& m);

// The lowering context: the node, the builder, and the parameters made for the tensor arguments.
class Ctx {
 public:
  Ctx(const Node& node, Builder& b);

  const Node& node;
  Builder& b;

  // The argument value by schema name, else by position; nullptr when absent.
  const Value* V(const std::string& name, size_t pos) const { return node.arg(name, pos); }
  // The parameter of a tensor argument; nullptr when the argument is None or absent.
  Instruction* T(const std::string& name, size_t pos) const;
  // The parameters of a tensor-list argument (None entries are nullptr).
  std::vector<Instruction*> TList(const std::string& name, size_t pos) const;
  const TensorMeta* Meta(const std::string& name, size_t pos) const;

  // Typed access with defaults used when the argument is absent or None.
  int64_t Int(const std::string& name, size_t pos, int64_t def) const;
  std::optional<int64_t> OptInt(const std::string& name, size_t pos) const;
  double Double(const std::string& name, size_t pos, double def) const;
  bool Bool(const std::string& name, size_t pos, bool def) const;
  std::vector<int64_t> Ints(const std::string& name, size_t pos, std::vector<int64_t> def = {}) const;
  std::optional<std::vector<int64_t>> OptInts(const std::string& name, size_t pos) const;
  std::vector<bool> Bools(const std::string& name, size_t pos, std::vector<bool> def = {}) const;
  std::optional<PrimitiveType> Dtype(const std::string& name, size_t pos) const;
  std::string Str(const std::string& name, size_t pos, std::string def = "") const;

  // The i-th non-None output's meta (nullptr when the node carries no such output).
  const TensorMeta* Out(size_t i) const;
  PrimitiveType OutType(size_t i, PrimitiveType fallback) const;

  // A tensor argument that must be there.
  Expected<Instruction*> Req(const std::string& name, size_t pos) const;

  // An operand as a tensor of `type` broadcast to `dims`: a tensor argument (converted, broadcast)
  // or a scalar argument (a constant, broadcast as XLA frontends do).
  Expected<Instruction*> Operand(const std::string& name, size_t pos, PrimitiveType type,
                                 const std::vector<int64_t>& dims) const;

 private:
  std::vector<Instruction*> params_;              // per arg: the tensor parameter
  std::vector<std::vector<Instruction*>> lists_;  // per arg: tensor-list parameters
  size_t Index(const std::string& name, size_t pos) const;
};

// Finishes a lowering: checks each value against the node's outputs (dtype and dims) and the
// builder's status, and returns the LoweredOp.
Expected<LoweredOp> Done(const Ctx& c, std::vector<Instruction*> outs);

// ---- errors ----
Status Bad(const Ctx& c, const std::string& why);

// ---- types ----
PrimitiveType Promote(PrimitiveType a, PrimitiveType b);
// torch.result_type over tensors (dimensioned > zero-dim > Python scalars) and scalars.
PrimitiveType ResultType(const std::vector<const Value*>& values);
bool IsFloatish(PrimitiveType t);  // float or complex
PrimitiveType DefaultFloat();     // f32
// The type computations run in for an op whose result is float (integers -> f32).
PrimitiveType FloatType(PrimitiveType t);
// torch.finfo(t).eps of a float type (of the component type for complex).
double MachineEpsilon(PrimitiveType t);

// ---- constants ----
Instruction* Scalar(Builder& b, PrimitiveType t, double v);
Instruction* ScalarC(Builder& b, PrimitiveType t, std::complex<double> v);
Instruction* ScalarOf(Builder& b, PrimitiveType t, const Value& v);
Instruction* Full(Builder& b, PrimitiveType t, double v, const std::vector<int64_t>& dims);
Instruction* FullLike(Builder& b, Instruction* like, double v);
// Largest/lowest finite-or-inf values used as reduction inits.
Instruction* MaxValue(Builder& b, PrimitiveType t);  // +inf or the largest integer
Instruction* MinValue(Builder& b, PrimitiveType t);  // -inf or the smallest integer
Instruction* ConstS64(Builder& b, int64_t v);

// ---- shapes ----
std::vector<int64_t> Dims(Instruction* x);
int64_t Rank(Instruction* x);
// Wraps a possibly negative dim into [0, rank) (rank 0 allows -1/0); nullopt when out of range.
std::optional<int64_t> WrapDim(int64_t d, int64_t rank);
std::vector<int64_t> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
Instruction* Conv(Builder& b, Instruction* x, PrimitiveType t);  // convert (no-op when equal)
Instruction* Bcast(Builder& b, Instruction* x, const std::vector<int64_t>& dims);  // numpy broadcast
// Broadcast `x` (whose dims are `dims_of_out` positions of out_dims) into out_dims.
Instruction* BcastIn(Builder& b, Instruction* x, const std::vector<int64_t>& out_dims,
                     const std::vector<int64_t>& dims_of_out);

// ---- arithmetic shorthands (same shapes and types) ----
Instruction* Add(Builder& b, Instruction* x, Instruction* y);
Instruction* Sub(Builder& b, Instruction* x, Instruction* y);
Instruction* Mul(Builder& b, Instruction* x, Instruction* y);
Instruction* Div(Builder& b, Instruction* x, Instruction* y);
Instruction* MulScalar(Builder& b, Instruction* x, double v);
Instruction* AddScalar(Builder& b, Instruction* x, double v);
Instruction* Cmp(Builder& b, Instruction* x, Instruction* y, ComparisonDirection d);
Instruction* CmpScalar(Builder& b, Instruction* x, double v, ComparisonDirection d);

// ---- reductions ----
// Reduces `dims` of x with the binary `op` (add, maximum, minimum, multiply, and, or) from `init`.
Instruction* Reduce(Builder& b, Instruction* x, const std::vector<int64_t>& dims, Opcode op, Instruction* init);
Instruction* ReduceSum(Builder& b, Instruction* x, const std::vector<int64_t>& dims);
Instruction* ReduceMax(Builder& b, Instruction* x, const std::vector<int64_t>& dims);
Instruction* ReduceMin(Builder& b, Instruction* x, const std::vector<int64_t>& dims);
// The dims of x with `reduced` set to 1 (keepdim form).
std::vector<int64_t> KeepDims(const std::vector<int64_t>& dims, const std::vector<int64_t>& reduced);
// Reduces then broadcasts back to x's dims (for softmax-like ops).
Instruction* BcastBack(Builder& b, Instruction* reduced, const std::vector<int64_t>& full_dims,
                       const std::vector<int64_t>& reduced_dims);
// Normalizes a dim list (negative, empty = all when `empty_is_all`); error text on failure.
Expected<std::vector<int64_t>> NormDims(const std::vector<int64_t>& dims, int64_t rank, bool empty_is_all);

// A comparator computation for sort over `types` (one pair of parameters per operand) comparing the
// first operand with `dir` (total order for floats, NaN last in ascending order like torch).
Computation* SortComparator(Builder& b, const std::vector<PrimitiveType>& types, bool descending);

// A (value, index) arg-max/arg-min reducer for variadic reduce/reduce-window: keeps the better
// value, the lower index on ties, NaN wins (pooling.cpp).
Computation* ArgReducer(Builder& b, PrimitiveType vt, PrimitiveType it, bool is_max);

// Number of elements of dims.
int64_t Numel(const std::vector<int64_t>& dims);

// The scatter combiner that keeps the update (torch's plain scatter / index_put).
Computation* ReplaceComputation(Builder& b, PrimitiveType t);

// A `while` loop over a tuple of values: `cond` returns a scalar pred from the state, `body` the next
// state (same shapes); the sub-computations are named `name`_cond and `name`_body. Returns the final
// state's elements.
using LoopState = std::vector<Instruction*>;
LoopState Loop(Builder& b, const LoopState& init, const std::string& name,
               const std::function<Instruction*(Builder&, const LoopState&)>& cond,
               const std::function<LoopState(Builder&, const LoopState&)>& body);

}  // namespace opprobe::analyzer::lowering
