// The HLO building blocks lowerings are made of: scalar constants, broadcasting, elementwise arithmetic,
// reductions, sort comparators and while loops, each a few instructions added to a Builder.
#pragma once

#include <complex>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/lowering/lowering.h"
#include "analyzer/lowering/type_promotion.h"

namespace opprobe::analyzer::lowering {

using hlo::Builder;
using hlo::ComparisonDirection;
using hlo::Computation;
using hlo::Instruction;
using hlo::Opcode;
using hlo::Shape;

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
Instruction* Bcast(Builder& b, Instruction* x, const std::vector<int64_t>& dims);  // numpy broadcast
// Broadcast `x` (whose dims are `dims_of_out` positions of out_dims) into out_dims.
Instruction* BcastIn(Builder& b, Instruction* x, const std::vector<int64_t>& out_dims,
                     const std::vector<int64_t>& dims_of_out);
// Number of elements of dims.
int64_t Numel(const std::vector<int64_t>& dims);
// Every dim of x: 0, 1, ..., rank - 1.
std::vector<int64_t> AllDims(Instruction* x);
// The dims begin, begin + 1, ..., end - 1 (none when end <= begin).
std::vector<int64_t> DimRange(int64_t begin, int64_t end);

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

// ---- computations ----
// A comparator computation for sort over `types` (one pair of parameters per operand) comparing the
// first operand with `dir` (total order for floats, NaN last in ascending order like torch).
Computation* SortComparator(Builder& b, const std::vector<PrimitiveType>& types, bool descending);
// The scatter combiner that keeps the update (torch's plain scatter / index_put).
Computation* ReplaceComputation(Builder& b, PrimitiveType t);
// A scatter's dimension numbers for updates along one dimension `dim` of a rank-`rank` operand: indices [N, 1],
// updates shaped like the operand with N at `dim` (index_add, index_reduce, unfold_backward).
hlo::ScatterDimensionNumbers ScatterAlongDim(int64_t dim, int64_t rank);

// A `while` loop over a tuple of values: `cond` returns a scalar pred from the state, `body` the next
// state (same shapes); the sub-computations are named `name`_cond and `name`_body. Returns the final
// state's elements.
using LoopState = std::vector<Instruction*>;
LoopState Loop(Builder& b, const LoopState& init, const std::string& name,
               const std::function<Instruction*(Builder&, const LoopState&)>& cond,
               const std::function<LoopState(Builder&, const LoopState&)>& body);

}  // namespace opprobe::analyzer::lowering
