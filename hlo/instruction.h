// hlo::Instruction, hlo::Computation, hlo::Module: the HLO IR, with the attributes XLA has per opcode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hlo/literal.h"
#include "hlo/opcode.h"
#include "hlo/shape.h"

namespace opprobe::hlo {

class Computation;

struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;  // rhs_dilate
  int64_t base_dilation = 1;    // lhs_dilate
  bool window_reversal = false;
  bool operator==(const WindowDimension&) const = default;
};
struct Window {
  std::vector<WindowDimension> dimensions;
  bool operator==(const Window&) const = default;
};

struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = 0;
  int64_t input_feature_dimension = 1;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 1;
  int64_t kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0;
  int64_t output_feature_dimension = 1;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvolutionDimensionNumbers&) const = default;
};

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;
  std::vector<int64_t> lhs_batch_dimensions;
  std::vector<int64_t> rhs_batch_dimensions;
  bool operator==(const DotDimensionNumbers&) const = default;
};

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

struct SliceDimensions {  // slice={[start:limit:stride], ...}
  std::vector<int64_t> starts, limits, strides;
  bool operator==(const SliceDimensions&) const = default;
};

struct PaddingDimension {
  int64_t edge_padding_low = 0;
  int64_t edge_padding_high = 0;
  int64_t interior_padding = 0;
  bool operator==(const PaddingDimension&) const = default;
};
struct PaddingConfig {
  std::vector<PaddingDimension> dimensions;
  bool operator==(const PaddingConfig&) const = default;
};

enum class ComparisonDirection { kEq, kNe, kGe, kGt, kLe, kLt };
std::string_view ComparisonDirectionName(ComparisonDirection d);  // "EQ", ...
std::optional<ComparisonDirection> ComparisonDirectionFromName(std::string_view name);

enum class FftType { kFft = 0, kIfft = 1, kRfft = 2, kIrfft = 3 };
std::string_view FftTypeName(FftType t);  // "FFT", "IFFT", "RFFT", "IRFFT"
std::optional<FftType> FftTypeFromName(std::string_view name);

enum class RandomDistribution { kInvalid = 0, kUniform = 1, kNormal = 2 };
enum class PrecisionLevel { kDefault = 0, kHigh = 1, kHighest = 2 };

// triangular-solve's options (xla::TriangularSolveOptions): solve op(a)·x = b (left_side) or
// x·op(a) = b, with a lower or upper triangular, op = identity, transpose or adjoint.
enum class TransposeA { kNoTranspose = 1, kTranspose = 2, kAdjoint = 3 };  // proto enum values
struct TriangularSolveOptions {
  bool left_side = false;
  bool lower = false;
  bool unit_diagonal = false;
  TransposeA transpose_a = TransposeA::kNoTranspose;
  bool operator==(const TriangularSolveOptions&) const = default;
};
std::string_view TransposeAName(TransposeA t);  // "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"
std::optional<TransposeA> TransposeAFromName(std::string_view name);

struct OpMetadata {
  std::string op_type;
  std::string op_name;
  std::string source_file;
  int32_t source_line = 0;
  bool empty() const { return op_type.empty() && op_name.empty() && source_file.empty() && source_line == 0; }
  bool operator==(const OpMetadata&) const = default;
};

// One HLO instruction. Attributes that an opcode does not use stay at their defaults; the printer,
// parser and proto code know which opcode uses which (XLA's HloInstruction subclasses, flattened).
class Instruction {
 public:
  Opcode opcode = Opcode::kParameter;
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
  std::optional<Literal> literal;  // constant
  std::optional<Window> window;
  std::optional<ConvolutionDimensionNumbers> convolution_dimension_numbers;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  std::vector<PrecisionLevel> operand_precision;
  std::optional<DotDimensionNumbers> dot_dimension_numbers;
  std::optional<GatherDimensionNumbers> gather_dimension_numbers;
  std::vector<int64_t> gather_slice_sizes;
  std::optional<ScatterDimensionNumbers> scatter_dimension_numbers;
  bool indices_are_sorted = false;
  bool unique_indices = false;
  std::optional<SliceDimensions> slice;
  std::vector<int64_t> dynamic_slice_sizes;
  std::optional<PaddingConfig> padding_config;
  ComparisonDirection comparison_direction = ComparisonDirection::kEq;
  std::string comparison_type;  // "", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"
  FftType fft_type = FftType::kFft;
  std::vector<int64_t> fft_length;
  bool is_stable = false;  // sort
  int32_t exponent_bits = 0, mantissa_bits = 0;  // reduce-precision
  RandomDistribution distribution = RandomDistribution::kInvalid;  // rng
  std::string rng_algorithm;  // rng-bit-generator: "rng_default", "rng_three_fry", "rng_philox"
  std::string custom_call_target;
  std::string backend_config;
  std::string fusion_kind;  // "kLoop", ...
  int64_t k = 0;            // topk
  TriangularSolveOptions triangular_solve_options;  // triangular-solve
  bool cholesky_lower = false;                       // cholesky: `lower=true`
  bool largest = true;      // topk
  OpMetadata metadata;
  // The opcode text when the input named an opcode this IR does not know (opcode is then kCustomCall):
  // such an instruction parses, prints back under its own name, and every backend calls it unsupported.
  std::string unknown_opcode;
  // Attributes this IR does not model (sharding, replica_groups, frontend_attributes, ...), kept as
  // printed `key=value` text so that a parsed module prints back unchanged.
  std::vector<std::pair<std::string, std::string>> extra_attributes;

  Instruction* operand(int i) const { return operands[static_cast<size_t>(i)]; }
  int operand_count() const { return static_cast<int>(operands.size()); }
  Computation* to_apply() const { return called_computations.empty() ? nullptr : called_computations[0]; }
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

}  // namespace opprobe::hlo
