// hlo::Instruction, hlo::Computation, hlo::Module: the HLO IR, with the attributes XLA has per opcode (which
// opcode has which attribute, and which field below it fills, is declared once in hlo/attributes.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hlo/attribute_types.h"
#include "hlo/literal.h"
#include "hlo/opcode.h"
#include "hlo/shape.h"
#include "support/heap_optional.h"
#include "support/prefetch.h"
#include "support/shared_value.h"

namespace opprobe::hlo {

class Computation;

// The attributes of an instruction that most instructions leave unset (strings and lists that only a few opcodes
// have), held out of line: an instruction without any costs one pointer for them (Instruction::rare()).
struct RareAttributes {
  std::vector<PrecisionLevel> operand_precision;
  std::string dot_algorithm;  // dot `algorithm=dot_bf16_bf16_f32` (PrecisionConfig.Algorithm); empty: unset
  std::vector<int64_t> gather_slice_sizes;
  std::vector<int64_t> dynamic_slice_sizes;
  std::string comparison_type;  // "", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"
  std::vector<int64_t> fft_length;
  std::string rng_algorithm = "rng_default";  // rng-bit-generator: "rng_default", "rng_three_fry", "rng_philox"
  std::string backend_config;                 // any opcode; custom-call's opaque string or a JSON dict
  std::string fusion_kind = "kLoop";          // "kLoop", "kInput", "kOutput", "kCustom"
  // Collectives, send/recv, async.
  CollectiveDeviceList replica_groups;
  std::vector<std::vector<int64_t>> source_target_pairs;     // collective-permute: {{source, target}, ...}
  std::vector<std::vector<int64_t>> collective_slice_sizes;  // collective-permute `slice_sizes={{...}}`
  std::string async_execution_thread;                        // async ops; empty: the main thread
  // Custom calls.
  std::string custom_call_api_version;  // `api_version=API_VERSION_TYPED_FFI`; empty: API_VERSION_ORIGINAL
  std::string custom_call_schedule;     // `schedule=SCHEDULE_LATEST`; empty: SCHEDULE_NONE
  std::string padding_type;             // `padding_type=PADDING_VALID`; empty: PADDING_INVALID
  std::vector<OutputOperandAlias> output_to_operand_aliasing;  // custom-call, fusion, async-start
  // Others.
  std::string infeed_config, outfeed_config;  // infeed, outfeed
  std::vector<bool> parameter_replication;    // parameter `parameter_replication={false,true}`
  // Attributes every opcode may have.
  std::vector<std::pair<std::string, std::string>> frontend_attributes;  // in written order; XLA's is sorted
  std::vector<std::string> control_predecessors;  // names of instructions of the same computation
  // Held as their text (balanced braces): `statistics={...}`, `origin={...}`, domain's `domain={...}`.
  std::string statistics, origin, domain;
  // Attributes the schema (hlo/attributes.h) does not know for this opcode, kept as written `key=value` so
  // that a parsed module prints back unchanged; they are part of the fingerprint like every other attribute.
  std::vector<std::pair<std::string, std::string>> unknown_attributes;
  std::optional<int64_t> channel_id;                    // collectives, send and recv
  std::optional<int64_t> cross_program_prefetch_index;  // copy-start
  std::optional<int64_t> inferred_dimension;            // reshape
  bool operator==(const RareAttributes&) const = default;
};

// One HLO instruction. Attributes that an opcode does not use stay at their defaults; hlo/attributes.h declares
// which opcode uses which (XLA's HloInstruction subclasses, flattened), and the parser, printer and proto code
// walk that declaration. So that an instruction stays small (issue #17.3: a big module holds hundreds of
// thousands), the large optional structs are support::HeapOptional (std::optional's interface, one pointer while
// unset), the string and list attributes few opcodes have are in RareAttributes (rare(), mutable_rare()), and the
// metadata is a support::SharedValue (instructions with the same metadata share one).
class Instruction {
 public:
  Opcode opcode = Opcode::kParameter;
  // The opcode text when the input named an opcode this IR does not know (opcode is then kCustomCall):
  // such an instruction parses, prints back under its own name, and every backend calls it unsupported.
  // (Beside the opcode, in the first cache line, since every pass over a module reads both.)
  std::string unknown_opcode;
  std::string name;
  Shape shape;
  std::vector<Instruction*> operands;
  int64_t id = 0;  // unique within the module (HloInstructionProto.id)

  // Called computations, in XLA's order: to_apply; while: {body, condition}; conditional:
  // {true, false} or the branch list; select-and-scatter: {select, scatter}; fusion/call: {callee}.
  std::vector<Computation*> called_computations;

  std::vector<int64_t> dimensions;  // broadcast, reduce, transpose, reverse, concatenate ({dim}), sort, ...
  int64_t parameter_number = 0;
  int64_t tuple_index = 0;
  int64_t iota_dimension = 0;
  int64_t feature_index = 0;
  float epsilon = 0.0f;
  support::HeapOptional<Literal> literal;  // constant; custom-call `literal=`
  support::HeapOptional<Window> window;
  support::HeapOptional<ConvolutionDimensionNumbers> convolution_dimension_numbers;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  support::HeapOptional<DotDimensionNumbers> dot_dimension_numbers;
  support::HeapOptional<GatherDimensionNumbers> gather_dimension_numbers;
  support::HeapOptional<ScatterDimensionNumbers> scatter_dimension_numbers;
  bool indices_are_sorted = false;
  bool unique_indices = false;
  support::HeapOptional<SliceDimensions> slice;
  support::HeapOptional<PaddingConfig> padding_config;
  ComparisonDirection comparison_direction = ComparisonDirection::kEq;
  FftType fft_type = FftType::kFft;
  bool is_stable = false;                                          // sort
  int32_t exponent_bits = 0, mantissa_bits = 0;                    // reduce-precision
  RandomDistribution distribution = RandomDistribution::kInvalid;  // rng
  int64_t k = 0;                                                   // topk
  TriangularSolveOptions triangular_solve_options;                 // triangular-solve
  bool cholesky_lower = false;                                     // cholesky: `lower=true`
  bool largest = true;                                             // topk
  // custom-call's target: in the instruction, as in XLA's, since every custom-call has one (a Neuron module holds
  // thousands).
  std::string custom_call_target;
  support::SharedValue<OpMetadata> metadata;  // read as metadata->op_type; metadata.mutable_value() to change it

  // Collectives, send/recv, async and scheduling.
  bool constrain_layout = false;
  bool use_global_device_ids = false;
  bool is_host_transfer = false;  // send, recv and their -done
  // Custom calls.
  bool custom_call_has_side_effect = false;
  support::HeapOptional<std::vector<Shape>> operand_layout_constraints;
  // Others.
  bool is_composite = false;                              // call
  int64_t delta = 0;                                      // rng-get-and-update-state
  support::HeapOptional<Shape> outfeed_shape;             // outfeed
  support::HeapOptional<ResultAccuracy> result_accuracy;  // transcendental unary ops
  // Attributes every opcode may have.
  support::HeapOptional<Sharding> sharding;

  // The attributes few instructions have (a RareAttributes{} when none is set); mutable_rare() creates them.
  const RareAttributes& rare() const { return rare_ ? *rare_ : kNoRareAttributes; }
  RareAttributes& mutable_rare() { return rare_ ? *rare_ : rare_.emplace(); }
  // Lets the out-of-line attributes go when none differs from its default (after code that visited every field
  // through mutable_rare()).
  void ReleaseRareIfUnset() {
    if (rare_ && *rare_ == kNoRareAttributes) rare_.reset();
  }

  Instruction* operand(int i) const { return operands[static_cast<size_t>(i)]; }
  int operand_count() const { return static_cast<int>(operands.size()); }
  Computation* to_apply() const { return called_computations.empty() ? nullptr : called_computations[0]; }

 private:
  static const RareAttributes kNoRareAttributes;  // a namespace-scope object: reading it needs no guard
  support::HeapOptional<RareAttributes> rare_;
};

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  int64_t id = 0;
  bool is_fusion_computation = false;
  std::string execution_thread;  // `}, execution_thread="worker"`; empty: the main thread

  // Appends an instruction; instructions are kept in operands-before-users order.
  Instruction* AddInstruction(std::unique_ptr<Instruction> instr);
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  std::vector<std::unique_ptr<Instruction>>& mutable_instructions() { return instructions_; }
  Instruction* root() const { return root_; }
  void set_root(Instruction* r) { root_ = r; }
  // Parameters ordered by parameter_number.
  std::vector<Instruction*> parameters() const;
  Instruction* FindInstruction(const std::string& name) const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  Instruction* root_ = nullptr;
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  int64_t id = 0;

  // Computations in callees-before-callers order; the entry is usually last.
  Computation* AddComputation(std::unique_ptr<Computation> c);
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }
  std::vector<std::unique_ptr<Computation>>& mutable_computations() { return computations_; }
  Computation* entry() const { return entry_; }
  void set_entry(Computation* c) { entry_ = c; }
  Computation* FindComputation(const std::string& name) const;

  // Header attributes kept verbatim from parsed text (`is_scheduled=true`, `entry_computation_layout=...`).
  std::vector<std::pair<std::string, std::string>> header_attributes;

  // Gives every instruction a module-unique id (1..N) and every computation its own id, as XLA's
  // CreateFromProto expects.
  void AssignIds();
  // Deep copy.
  std::unique_ptr<Module> Clone() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
};

// For a pass over a big computation, whose instructions are out of the caches by then (200k of them are about
// 100 MB): brings instruction k + 4 of `instrs` into the cache, its opcode through its operand list, so that the miss
// hides behind the work on the instructions between. Gives that instruction (to prefetch more of it), or null past
// the end.
inline const Instruction* PrefetchAhead(const std::vector<std::unique_ptr<Instruction>>& instrs, size_t k) {
  constexpr size_t kAhead = 4;
  if (k + kAhead >= instrs.size()) return nullptr;
  const Instruction* in = instrs[k + kAhead].get();
  const auto* first = reinterpret_cast<const char*>(in);
  support::PrefetchBytes(in, static_cast<size_t>(reinterpret_cast<const char*>(&in->operands + 1) - first));
  return in;
}

}  // namespace opprobe::hlo
