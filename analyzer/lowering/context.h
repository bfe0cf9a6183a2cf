// The lowering context: how a lowering function reads the aten call it lowers (arguments by schema name,
// the parameters made for its tensors, the outputs PyTorch recorded) and how it ends (Finish, Unsupported).
//
// Conventions every lowering follows (so that callers such as the conformance suite can bind
// values without knowing the op):
// - Every tensor argument of the node (and every non-None entry of a tensor-list argument) becomes
//   one entry-computation parameter, in argument order, whether or not the lowering reads it.
// - LoweredOp.outputs hold one HLO value per node output that is not None (an int output such as
//   sym_size's becomes an s64 scalar; a tensor-list output contributes one value per tensor).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyzer/lowering/building_blocks.h"

namespace opprobe::analyzer::lowering {

hlo::Shape ShapeOf(const TensorMeta& m);

class LoweringContext {
 public:
  // Makes one parameter per tensor argument (and per tensor of a tensor-list argument), in argument order.
  LoweringContext(const Node& node, Builder& builder);

  const Node& node;
  Builder& builder;

  // The argument value by schema name, else by position; nullptr when absent.
  const Value* Arg(const std::string& name, size_t pos) const { return node.arg(name, pos); }
  // The parameter of a tensor argument; nullptr when the argument is None or absent.
  Instruction* Tensor(const std::string& name, size_t pos) const;
  // A tensor argument that must be there (an Unsupported error when it is not).
  Expected<Instruction*> RequiredTensor(const std::string& name, size_t pos) const;
  // The parameters of a tensor-list argument (None entries are nullptr).
  std::vector<Instruction*> TensorList(const std::string& name, size_t pos) const;
  // The recorded dtype and sizes of a tensor argument; nullptr when it is not a tensor.
  const TensorMeta* ArgMeta(const std::string& name, size_t pos) const;

  // Typed access with defaults used when the argument is absent or None.
  int64_t Int(const std::string& name, size_t pos, int64_t def) const;
  std::optional<int64_t> OptInt(const std::string& name, size_t pos) const;
  double Double(const std::string& name, size_t pos, double def) const;
  bool Bool(const std::string& name, size_t pos, bool def) const;
  std::vector<int64_t> Ints(const std::string& name, size_t pos, const std::vector<int64_t>& def = {}) const;
  std::optional<std::vector<int64_t>> OptInts(const std::string& name, size_t pos) const;
  std::vector<bool> Bools(const std::string& name, size_t pos, std::vector<bool> def = {}) const;
  std::optional<PrimitiveType> Dtype(const std::string& name, size_t pos) const;
  std::string String(const std::string& name, size_t pos, std::string def = "") const;

  // The i-th non-None output's recorded meta (nullptr when the node carries no such output).
  const TensorMeta* OutputMeta(size_t i) const;
  // The i-th output's recorded dtype, or `fallback` when none was recorded.
  PrimitiveType OutputType(size_t i, PrimitiveType fallback) const;

  // An operand as a tensor of `type` broadcast to `dims`: a tensor argument (converted, broadcast)
  // or a scalar argument (a constant, broadcast as XLA frontends do).
  Expected<Instruction*> Operand(const std::string& name, size_t pos, PrimitiveType type,
                                 const std::vector<int64_t>& dims) const;

  // Ends a lowering: checks the builder's status and each value against the node's recorded outputs
  // (dtype and dims), and returns the LoweredOp.
  Expected<LoweredOp> Finish(std::vector<Instruction*> outs) const;
  // Ends a lowering that cannot handle this call: kUnimplemented "aten::op.overload: why".
  Status Unsupported(const std::string& why) const;

 private:
  std::vector<Instruction*> params_;              // per arg: the tensor parameter
  std::vector<std::vector<Instruction*>> lists_;  // per arg: tensor-list parameters
  size_t Index(const std::string& name, size_t pos) const;
};

// Lowers `n` as the op `op` with `args` (the same tensor arguments in the same order, so the parameters are
// the same) by `fn`, and keeps its first value: how a composite op that torch.export keeps (batch_norm,
// dropout) reuses the lowering of the native op it stands for.
Expected<LoweredOp> LowerAsFirstOutputOf(const Node& n, Builder& b, const char* op, const LoweringFn& fn,
                                         std::vector<Argument> args);
// The argument's value, or `def` when it is absent or None.
Value ArgOr(const Node& n, const char* name, size_t pos, const Value& def);

}  // namespace opprobe::analyzer::lowering
