// hlo::Builder: builds a computation (and its called sub-computations) inside a module, inferring
// result shapes the way XLA's shape inference does. Like XlaBuilder it records the first error and
// keeps going with placeholder values, so a lowering can check `status()` once at the end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hlo/instruction.h"
#include "support/status.h"

namespace opprobe::hlo {

class Builder {
 public:
  // A builder for a new module whose entry computation is `name`.
  explicit Builder(std::string name);
  // A builder for a sub-computation (to_apply, comparator, body) of the same module.
  Builder CreateSubBuilder(const std::string& name);

  Instruction* Parameter(int64_t number, const Shape& shape, const std::string& name = "");
  // A parameter numbered after the ones this computation already has.
  Instruction* NextParameter(const Shape& shape, const std::string& name = "");
  Instruction* Constant(Literal literal);
  Instruction* ConstantScalar(PrimitiveType type, double value);
  // `value` broadcast to `dims` (a scalar constant then a broadcast, as XLA frontends emit).
  Instruction* Full(PrimitiveType type, double value, const std::vector<int64_t>& dims);

  Instruction* Unary(Opcode op, Instruction* x);
  Instruction* Binary(Opcode op, Instruction* a, Instruction* b);  // same dims required
  Instruction* Compare(Instruction* a, Instruction* b, ComparisonDirection dir, std::string type = "");
  Instruction* Select(Instruction* pred, Instruction* on_true, Instruction* on_false);
  Instruction* Clamp(Instruction* lo, Instruction* x, Instruction* hi);
  Instruction* Convert(Instruction* x, PrimitiveType to);
  Instruction* BitcastConvert(Instruction* x, PrimitiveType to);
  // Real/imag of complex, complex(re, im).
  Instruction* Real(Instruction* x) { return Unary(Opcode::kReal, x); }
  Instruction* Imag(Instruction* x) { return Unary(Opcode::kImag, x); }
  Instruction* Complex(Instruction* re, Instruction* im) { return Binary(Opcode::kComplex, re, im); }

  // Broadcast x into out_dims; `dimensions[i]` is the output dim of operand dim i.
  Instruction* Broadcast(Instruction* x, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& dimensions);
  // Numpy-style: x's dims align to the trailing dims of out_dims (size-1 dims are reshaped away first).
  Instruction* BroadcastTo(Instruction* x, const std::vector<int64_t>& out_dims);
  Instruction* Reshape(Instruction* x, const std::vector<int64_t>& dims);
  Instruction* Transpose(Instruction* x, const std::vector<int64_t>& permutation);
  Instruction* Slice(Instruction* x, const std::vector<int64_t>& starts, const std::vector<int64_t>& limits,
                     const std::vector<int64_t>& strides);
  Instruction* SliceInDim(Instruction* x, int64_t start, int64_t limit, int64_t stride, int64_t dim);
  Instruction* DynamicSlice(Instruction* x, const std::vector<Instruction*>& starts, const std::vector<int64_t>& sizes);
  Instruction* DynamicUpdateSlice(Instruction* x, Instruction* update, const std::vector<Instruction*>& starts);
  Instruction* Concatenate(const std::vector<Instruction*>& xs, int64_t dim);
  Instruction* Reverse(Instruction* x, const std::vector<int64_t>& dims);
  Instruction* Pad(Instruction* x, Instruction* pad_value, const PaddingConfig& config);
  Instruction* Iota(const Shape& shape, int64_t iota_dimension);

  // Reduce one or more operands (with as many init values) over `dims` with `to_apply`.
  Instruction* Reduce(const std::vector<Instruction*>& operands, const std::vector<Instruction*>& inits,
                      const std::vector<int64_t>& dims, Computation* to_apply);
  Instruction* ReduceWindow(const std::vector<Instruction*>& operands, const std::vector<Instruction*>& inits,
                            const Window& window, Computation* to_apply);
  Instruction* SelectAndScatter(Instruction* operand, Computation* select, const Window& window, Instruction* source,
                                Instruction* init, Computation* scatter);
  Instruction* Dot(Instruction* lhs, Instruction* rhs, const DotDimensionNumbers& dnums,
                   PrimitiveType result_type = PrimitiveType::PRIMITIVE_TYPE_INVALID);
  Instruction* Convolution(Instruction* lhs, Instruction* rhs, const Window& window,
                           const ConvolutionDimensionNumbers& dnums, int64_t feature_group_count = 1,
                           int64_t batch_group_count = 1,
                           PrimitiveType result_type = PrimitiveType::PRIMITIVE_TYPE_INVALID);
  // Gather and scatter take their result shape from the caller (XLA's inference is long; the
  // evaluator checks consistency).
  Instruction* Gather(Instruction* operand, Instruction* indices, const GatherDimensionNumbers& dnums,
                      const std::vector<int64_t>& slice_sizes, const Shape& result);
  Instruction* Scatter(const std::vector<Instruction*>& operands, Instruction* indices,
                       const std::vector<Instruction*>& updates, const ScatterDimensionNumbers& dnums,
                       Computation* to_apply);
  Instruction* Sort(const std::vector<Instruction*>& operands, int64_t dim, Computation* comparator,
                    bool is_stable = false);
  Instruction* Fft(Instruction* x, FftType type, const std::vector<int64_t>& fft_length);
  Instruction* Tuple(const std::vector<Instruction*>& elements);
  Instruction* GetTupleElement(Instruction* tuple, int64_t index);
  Instruction* Rng(Instruction* a, Instruction* b, RandomDistribution dist, const Shape& shape);
  Instruction* CustomCall(const std::vector<Instruction*>& operands, const std::string& target, const Shape& shape);
  // cholesky(a): the lower (or upper) factor of each [..., n, n] matrix; the other triangle is unspecified.
  Instruction* Cholesky(Instruction* a, bool lower);
  // triangular-solve(a, b): x with op(a)·x = b (left_side) or x·op(a) = b; a is [..., n, n] triangular.
  Instruction* TriangularSolve(Instruction* a, Instruction* b, const TriangularSolveOptions& options);
  Instruction* Call(const std::vector<Instruction*>& operands, Computation* callee);
  Instruction* While(Instruction* init, Computation* condition, Computation* body);
  Instruction* SetDimensionSize(Instruction* x, Instruction* size, int64_t dim);

  // Scalar computations used as to_apply: `add`, `maximum`, ... over `type`, made once per module.
  Computation* ScalarBinaryComputation(Opcode op, PrimitiveType type);

  // Generic escape hatch: adds a fully formed instruction (name and id are filled in).
  Instruction* Add(std::unique_ptr<Instruction> instr);

  // Moves every computation of `other` (a module built apart, such as one lowering's) into this builder's module,
  // each renamed `prefix.NAME`, and returns what was its entry: a computation to call from this one.
  Computation* Adopt(std::unique_ptr<Module> other, const std::string& prefix);

  // Finishes a sub-computation with `root` and adds it to the module (callees before callers).
  Computation* Finish(Instruction* root);
  // Finishes the entry computation with `root` and returns the module.
  std::unique_ptr<Module> Build(Instruction* root);

  // Sets the metadata given to every later instruction.
  void SetMetadata(OpMetadata metadata) { metadata_ = std::move(metadata); }
  const OpMetadata& metadata() const { return *metadata_; }

  const Status& status() const { return state_->status; }
  void Fail(Status s) {
    if (state_->status.ok()) state_->status = std::move(s);
  }
  bool ok() const { return state_->status.ok(); }

 private:
  struct State {
    std::unique_ptr<Module> module;
    Status status;
    int64_t next_id = 1;
    std::vector<std::pair<std::string, Computation*>> scalar_computations;
  };
  Builder(std::shared_ptr<State> state, std::string name);
  Instruction* Make(Opcode op, Shape shape, std::vector<Instruction*> operands);
  Instruction* Bad(const std::string& message, Shape placeholder = Shape::Scalar(PrimitiveType::F32));

  std::shared_ptr<State> state_;
  std::unique_ptr<Computation> computation_;
  support::SharedValue<OpMetadata> metadata_;  // shared by every instruction added while it is set
  int64_t parameter_count_ = 0;
};

}  // namespace opprobe::hlo
