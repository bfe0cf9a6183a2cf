// The aten -> HLO lowering table: one pure function per aten op (DESIGN.md "Lowering").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analyzer/graph/graph.h"
#include "hlo/builder.h"
#include "support/status.h"

namespace opprobe::analyzer {

// What a lowering produces: the HLO values of the aten op's outputs, in schema order.
struct LoweredOp {
  std::vector<hlo::Instruction*> outputs;
  bool dynamic_shape = false;  // output shape depends on data; lowered to XLA's bounded form
  std::string note;            // shown in reports (e.g. "bounded by the input size 16")
};

// A lowering builds into `b`: parameters for the tensor arguments (Builder::NextParameter, in
// argument order), then the instructions. It does no I/O and never throws; an argument it cannot
// handle is an error value (it becomes a `failureAt: "lowering"` verdict).
using LoweringFn = std::function<Expected<LoweredOp>(const Node&, hlo::Builder&)>;

class LoweringTable {
 public:
  struct Entry {
    std::string name;    // `aten::add.Tensor` or `aten::relu` (all overloads)
    std::string family;  // the file the lowering lives in: `elementwise` for elementwise.cpp, `conv`, ...
    LoweringFn fn;
    std::string in_place_of;  // an in-place form derived from a functional entry (`aten::add_`): its name
  };
  // Adds an entry. A name the table already has is rejected (kInternal naming both families) and the first
  // registration stays: a table never silently replaces a lowering.
  Status Register(Entry entry);
  Status Register(std::string name, std::string family, LoweringFn fn);
  // `aten::name.overload`, falling back to `aten::name`. An out= overload (`out`, or `X_out` for the functional
  // overload `X`: `aten::where.self_out`) that is not listed itself lowers as its functional overload.
  const Entry* Find(const std::string& op, const std::string& overload) const;
  std::vector<const Entry*> entries() const;  // sorted by name

  // The table with every built-in lowering: each family's list (families.h) and the in-place forms derived
  // from it, registered when the table is first asked for an entry (a warm run that lowers nothing never is).
  static const LoweringTable& Builtin();
  // What Register rejected while Builtin() was built (a name listed twice): empty unless a family list is wrong.
  const std::vector<Status>& rejected() const;
  // Whether this is Builtin(): what it lowers is fixed by opprobe's build, so outcomes may be memoized under it.
  bool builtin() const { return builtin_; }

 private:
  void Fill() const;  // Builtin's registrations, once

  bool builtin_ = false;
  std::unique_ptr<std::once_flag> filled_ = std::make_unique<std::once_flag>();  // (a table stays movable)
  std::map<std::string, Entry> entries_;
  std::vector<Status> rejected_;
};

// A node lowered into its own module: the entry computation takes the node's tensor arguments as
// parameters and returns its outputs (a tuple when there are several).
struct LoweredModule {
  std::unique_ptr<hlo::Module> module;
  // The probe units: every instruction of the entry computation except parameters, constants (which
  // stand for PyTorch/XLA's device-data scalars) and the tuple that only gathers several outputs, in
  // order. A unit whose metadata.op_type names another aten op (a lowering that follows PyTorch/XLA's
  // IR, e.g. add's `other * alpha` is an aten::mul node there) is attributed to that op.
  std::vector<const hlo::Instruction*> units;
  bool dynamic_shape = false;
  std::string note;
};

// The check Lower applies to every lowering: each output's element type and dimensions equal what the trace or
// program recorded (Node::outputs; non-tensor outputs such as None or a Scalar are not compared, a bounded
// dynamic-shape result compares dtype and rank only). A mismatch is a kInternal error naming both shapes:
// "lowering of aten::transpose_ produced c64[1,63,129] but PyTorch returned c64[1,129,63]".
Status CheckLoweredOutputs(const Node& node, const std::vector<hlo::Instruction*>& outputs, bool dynamic_shape);

// Calls on sparse tensors (to_sparse, _values, coalesce, a factory with a sparse layout, ...): XLA has dense arrays
// only, so Lower reports them as such instead of "no lowering".
bool IsSparseLayoutCall(const Node& node);

// Errors: kUnimplemented when the table has no entry ("no lowering for aten::foo.bar"), or whatever
// the lowering returned.
Expected<LoweredModule> Lower(const Node& node, const LoweringTable& table);

}  // namespace opprobe::analyzer
