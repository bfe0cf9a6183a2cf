// The value types of HLO instruction attributes (XLA's attribute syntax and its proto messages, flattened into
// plain structs). Which opcode has which attribute, and which field each one fills, is declared once in
// hlo/attributes.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace opprobe::hlo {

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
// PrecisionConfig.Precision; packed_nibble is an older XLA's fourth level.
enum class PrecisionLevel { kDefault = 0, kHigh = 1, kHighest = 2, kPackedNibble = 3 };

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

// `metadata={op_type="..." op_name="..." source_file="..." source_line=N ...}` (xla::OpMetadata).
struct OpMetadata {
  std::string op_type;
  std::string op_name;
  std::string source_file;
  int32_t source_line = 0;
  int32_t source_end_line = 0;
  int32_t source_column = 0;
  int32_t source_end_column = 0;
  std::vector<int64_t> profile_type;  // `profile_type={1}`
  std::string deduplicated_name;
  int32_t stack_frame_id = 0;
  std::string scheduling_name;
  // Fields this IR does not model, kept as written (`key=value`) so that the metadata prints back unchanged.
  std::vector<std::pair<std::string, std::string>> unknown_fields;
  bool empty() const { return *this == OpMetadata{}; }
  bool operator==(const OpMetadata&) const = default;
};

// `replica_groups=`: explicit groups `{{0,1},{2,3}}`, XLA's iota form `[2,2]<=[4]` (groups x group size,
// reshape dims, optional transpose `T(1,0)`), or the mesh form `mesh['a'=2,'b'=2] {'a'}`, which has no proto
// form here and is kept as its text.
struct CollectiveDeviceList {
  std::vector<std::vector<int64_t>> groups;
  bool iota = false;
  int64_t num_groups = 0;
  int64_t group_size = 0;
  std::vector<int64_t> iota_reshape_dims;
  std::vector<int64_t> iota_transpose_perm;  // empty: no transpose
  std::string mesh;                          // the mesh form's text
  bool empty() const { return *this == CollectiveDeviceList{}; }
  bool operator==(const CollectiveDeviceList&) const = default;
};

// One entry of `output_to_operand_aliasing={{0}: (1, {})}`: output element `output_index` may share the
// buffer of element `operand_shape_index` of operand `operand`.
struct OutputOperandAlias {
  std::vector<int64_t> output_index;
  int64_t operand = 0;
  std::vector<int64_t> operand_shape_index;
  bool operator==(const OutputOperandAlias&) const = default;
};

// `sharding=` (xla::OpSharding / HloSharding's text): replicated, manual, unknown, unreduced, maximal on one
// device, tiled over a device array (explicit devices or XLA's iota form), or a tuple of those. Shardings in
// the named (mesh) form have no OpSharding form and are kept as their text.
struct Sharding {
  enum class Type { kReplicated, kManual, kUnknown, kUnreduced, kMaximal, kTiled, kTuple, kNamed };
  Type type = Type::kReplicated;
  int64_t device = 0;              // kMaximal
  std::vector<int64_t> tile_dims;  // kTiled: `devices=[2,1]`
  std::vector<int64_t> devices;    // kTiled, explicit: `0,1`
  bool iota = false;               // kTiled, iota: `<=[2]` / `<=[2,2]T(1,0)`
  std::vector<int64_t> iota_reshape_dims;
  std::vector<int64_t> iota_transpose_perm;
  bool last_tile_dim_replicate = false;
  std::vector<Type> last_tile_dims;                     // `last_tile_dims={manual, replicated}`
  std::optional<std::pair<bool, int64_t>> shard_group;  // {true: shard_as, false: shard_like; group id}
  std::vector<OpMetadata> metadata;
  std::vector<Sharding> tuple;  // kTuple
  std::string named;            // kNamed: the element's text between its braces
  bool operator==(const Sharding&) const = default;
};
std::string_view ShardingTypeName(Sharding::Type t);  // "replicated", "manual", ... as last_tile_dims writes them
std::optional<Sharding::Type> ShardingTypeFromName(std::string_view name);

// `result_accuracy={mode=highest}` or `result_accuracy={tolerance={atol=0,rtol=0,ulps=1}}`.
struct ResultAccuracy {
  bool highest = false;  // mode=highest (mode=default otherwise), when there is no tolerance
  bool has_tolerance = false;
  double atol = 0, rtol = 0;
  int64_t ulps = 0;
  bool operator==(const ResultAccuracy&) const = default;
};

}  // namespace opprobe::hlo
