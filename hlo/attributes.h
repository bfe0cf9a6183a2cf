// The one declaration of HLO instruction attributes (issue #16.1): for every opcode, the attributes XLA gives it
// (key, kind, required or optional, when it is printed) in XLA's print order, and for every attribute field of
// hlo::Instruction its value kind and its place in HloInstructionProto.
//
// The text parser (parse_attributes.cpp), the printer (print_attributes.cpp) and the proto writer and reader
// (proto_attributes.cpp) walk these tables; none of them lists attributes of its own. A verifier or a
// structural hash walks them the same way: OpcodeAttributes/GenericAttributes give the specs, VisitField gives
// each spec's field as a typed reference (AttrValueType<kind>), IsSet tells whether a value differs from the
// field's default. An attribute the schema does not know for an opcode is kept verbatim in
// Instruction::rare().unknown_attributes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hlo/instruction.h"

namespace opprobe::hlo {

// How an attribute's value is written (text and proto), and so the C++ type of the field it fills.
enum class AttrKind : uint8_t {
  kInt,                 // int64_t                      index=1
  kInt32,               // int32_t                      exponent_bits=5
  kOptInt,              // std::optional<int64_t>       channel_id=2
  kBool,                // bool                         is_stable=true
  kFloat,               // float                        epsilon=0.001
  kString,              // std::string, quoted          custom_call_target="foo"
  kStringOrJson,        // std::string                  backend_config="..." or a JSON dict {...} kept as written
  kWord,                // std::string, one enum name   algorithm=rng_philox, api_version=API_VERSION_TYPED_FFI
  kIntList,             // std::vector<int64_t>         dimensions={0,1}
  kIntListList,         // std::vector<std::vector<int64_t>>  source_target_pairs={{0,1},{1,0}}
  kBoolList,            // std::vector<bool>            parameter_replication={false,true}
  kNameList,            // std::vector<std::string>     control-predecessors={%a, %b}
  kText,                // std::string, balanced braces kept as written  origin={...}
  kWindow,              // support::HeapOptional<Window>        window={size=3x3 stride=2x2}
  kConvDims,            // support::HeapOptional<ConvolutionDimensionNumbers>  dim_labels=b01f_01io->b01f
  kSlice,               // support::HeapOptional<SliceDimensions>             slice={[0:2], [0:8:2]}
  kPadding,             // support::HeapOptional<PaddingConfig>               padding=0_1x2_2_1
  kDirection,           // ComparisonDirection          direction=LT
  kFftType,             // FftType                      fft_type=RFFT
  kDistribution,        // RandomDistribution           distribution=rng_uniform
  kTransposeA,          // TransposeA                   transpose_a=NO_TRANSPOSE
  kPrecisionList,       // std::vector<PrecisionLevel>  operand_precision={high,default}
  kMetadata,            // support::SharedValue<OpMetadata>      metadata={op_type="..." ...}
  kSharding,            // support::HeapOptional<Sharding>      sharding={devices=[2,1]<=[2]}
  kFrontendAttributes,  // std::vector<std::pair<std::string, std::string>>  frontend_attributes={a="b"}
  kReplicaGroups,       // CollectiveDeviceList         replica_groups={{0,1}} or [2,2]<=[4]
  kAliasing,            // std::vector<OutputOperandAlias>  output_to_operand_aliasing={{0}: (1, {})}
  kShape,               // support::HeapOptional<Shape>         outfeed_shape=f32[2]{0}
  kShapeList,           // support::HeapOptional<std::vector<Shape>>  operand_layout_constraints={f32[2]{0}}
  kLiteral,             // support::HeapOptional<Literal>       literal=s32[] 1
  kResultAccuracy,      // support::HeapOptional<ResultAccuracy>  result_accuracy={mode=highest}
  kComputation,         // std::vector<Computation*>, one slot (AttrSpec::slot)  to_apply=%add
  kComputationList,     // std::vector<Computation*>, all of it               branch_computations={%a, %b}
};

template <AttrKind K>
struct AttrKindTag {
  static constexpr AttrKind kind = K;
};

template <AttrKind K>
struct AttrValueType;
#define OPPROBE_HLO_ATTR_VALUE_TYPE(K, ...) \
  template <>                               \
  struct AttrValueType<AttrKind::K> {       \
    using type = __VA_ARGS__;               \
  };
OPPROBE_HLO_ATTR_VALUE_TYPE(kInt, int64_t)
OPPROBE_HLO_ATTR_VALUE_TYPE(kInt32, int32_t)
OPPROBE_HLO_ATTR_VALUE_TYPE(kOptInt, std::optional<int64_t>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kBool, bool)
OPPROBE_HLO_ATTR_VALUE_TYPE(kFloat, float)
OPPROBE_HLO_ATTR_VALUE_TYPE(kString, std::string)
OPPROBE_HLO_ATTR_VALUE_TYPE(kStringOrJson, std::string)
OPPROBE_HLO_ATTR_VALUE_TYPE(kWord, std::string)
OPPROBE_HLO_ATTR_VALUE_TYPE(kIntList, std::vector<int64_t>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kIntListList, std::vector<std::vector<int64_t>>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kBoolList, std::vector<bool>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kNameList, std::vector<std::string>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kText, std::string)
OPPROBE_HLO_ATTR_VALUE_TYPE(kWindow, support::HeapOptional<Window>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kConvDims, support::HeapOptional<ConvolutionDimensionNumbers>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kSlice, support::HeapOptional<SliceDimensions>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kPadding, support::HeapOptional<PaddingConfig>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kDirection, ComparisonDirection)
OPPROBE_HLO_ATTR_VALUE_TYPE(kFftType, FftType)
OPPROBE_HLO_ATTR_VALUE_TYPE(kDistribution, RandomDistribution)
OPPROBE_HLO_ATTR_VALUE_TYPE(kTransposeA, TransposeA)
OPPROBE_HLO_ATTR_VALUE_TYPE(kPrecisionList, std::vector<PrecisionLevel>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kMetadata, support::SharedValue<OpMetadata>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kSharding, support::HeapOptional<Sharding>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kFrontendAttributes, std::vector<std::pair<std::string, std::string>>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kReplicaGroups, CollectiveDeviceList)
OPPROBE_HLO_ATTR_VALUE_TYPE(kAliasing, std::vector<OutputOperandAlias>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kShape, support::HeapOptional<Shape>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kShapeList, support::HeapOptional<std::vector<Shape>>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kLiteral, support::HeapOptional<Literal>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kResultAccuracy, support::HeapOptional<ResultAccuracy>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kComputation, std::vector<Computation*>)
OPPROBE_HLO_ATTR_VALUE_TYPE(kComputationList, std::vector<Computation*>)
#undef OPPROBE_HLO_ATTR_VALUE_TYPE

// The out-of-line attributes (Instruction::rare()): the mutable form creates them.
inline RareAttributes& Rare(Instruction& in) { return in.mutable_rare(); }
inline const RareAttributes& Rare(const Instruction& in) { return in.rare(); }
// Dimension-number structs that several attributes fill one member each: the mutable form creates the struct.
inline DotDimensionNumbers& DotNumbers(Instruction& in) {
  return in.dot_dimension_numbers ? *in.dot_dimension_numbers : in.dot_dimension_numbers.emplace();
}
inline GatherDimensionNumbers& GatherNumbers(Instruction& in) {
  return in.gather_dimension_numbers ? *in.gather_dimension_numbers : in.gather_dimension_numbers.emplace();
}
inline ScatterDimensionNumbers& ScatterNumbers(Instruction& in) {
  return in.scatter_dimension_numbers ? *in.scatter_dimension_numbers : in.scatter_dimension_numbers.emplace();
}
const DotDimensionNumbers& DotNumbers(const Instruction& in);  // a default struct when absent
const GatherDimensionNumbers& GatherNumbers(const Instruction& in);
const ScatterDimensionNumbers& ScatterNumbers(const Instruction& in);

// Every attribute field of Instruction, once: (field, kind, HloInstructionProto field path or "" when XLA's proto
// has no field for it (the proto writer keeps such attributes as opprobe text), accessor on `in`).
#define OPPROBE_HLO_ATTR_FIELDS(F)                                                                                   \
  F(kDimensions, kIntList, "dimensions", in.dimensions)                                                              \
  F(kTupleIndex, kInt, "tuple_index", in.tuple_index)                                                                \
  F(kIotaDimension, kInt, "dimensions", in.iota_dimension)                                                           \
  F(kFeatureIndex, kInt, "feature_index", in.feature_index)                                                          \
  F(kEpsilon, kFloat, "epsilon", in.epsilon)                                                                         \
  F(kWindow, kWindow, "window", in.window)                                                                           \
  F(kConvDims, kConvDims, "convolution_dimension_numbers", in.convolution_dimension_numbers)                         \
  F(kFeatureGroupCount, kInt, "feature_group_count", in.feature_group_count)                                         \
  F(kBatchGroupCount, kInt, "batch_group_count", in.batch_group_count)                                               \
  F(kOperandPrecision, kPrecisionList, "precision_config.operand_precision", Rare(in).operand_precision)             \
  F(kDotAlgorithm, kWord, "precision_config.algorithm", Rare(in).dot_algorithm)                                      \
  F(kDotLhsBatch, kIntList, "dot_dimension_numbers.lhs_batch_dimensions", DotNumbers(in).lhs_batch_dimensions)       \
  F(kDotLhsContracting, kIntList, "dot_dimension_numbers.lhs_contracting_dimensions",                                \
    DotNumbers(in).lhs_contracting_dimensions)                                                                       \
  F(kDotRhsBatch, kIntList, "dot_dimension_numbers.rhs_batch_dimensions", DotNumbers(in).rhs_batch_dimensions)       \
  F(kDotRhsContracting, kIntList, "dot_dimension_numbers.rhs_contracting_dimensions",                                \
    DotNumbers(in).rhs_contracting_dimensions)                                                                       \
  F(kGatherOffsetDims, kIntList, "gather_dimension_numbers.offset_dims", GatherNumbers(in).offset_dims)              \
  F(kGatherCollapsedSliceDims, kIntList, "gather_dimension_numbers.collapsed_slice_dims",                            \
    GatherNumbers(in).collapsed_slice_dims)                                                                          \
  F(kGatherStartIndexMap, kIntList, "gather_dimension_numbers.start_index_map", GatherNumbers(in).start_index_map)   \
  F(kGatherOperandBatchingDims, kIntList, "gather_dimension_numbers.operand_batching_dims",                          \
    GatherNumbers(in).operand_batching_dims)                                                                         \
  F(kGatherStartIndicesBatchingDims, kIntList, "gather_dimension_numbers.start_indices_batching_dims",               \
    GatherNumbers(in).start_indices_batching_dims)                                                                   \
  F(kGatherIndexVectorDim, kInt, "gather_dimension_numbers.index_vector_dim", GatherNumbers(in).index_vector_dim)    \
  F(kGatherSliceSizes, kIntList, "gather_slice_sizes", Rare(in).gather_slice_sizes)                                  \
  F(kScatterUpdateWindowDims, kIntList, "scatter_dimension_numbers.update_window_dims",                              \
    ScatterNumbers(in).update_window_dims)                                                                           \
  F(kScatterInsertedWindowDims, kIntList, "scatter_dimension_numbers.inserted_window_dims",                          \
    ScatterNumbers(in).inserted_window_dims)                                                                         \
  F(kScatterDimsToOperandDims, kIntList, "scatter_dimension_numbers.scatter_dims_to_operand_dims",                   \
    ScatterNumbers(in).scatter_dims_to_operand_dims)                                                                 \
  F(kScatterInputBatchingDims, kIntList, "scatter_dimension_numbers.input_batching_dims",                            \
    ScatterNumbers(in).input_batching_dims)                                                                          \
  F(kScatterIndicesBatchingDims, kIntList, "scatter_dimension_numbers.scatter_indices_batching_dims",                \
    ScatterNumbers(in).scatter_indices_batching_dims)                                                                \
  F(kScatterIndexVectorDim, kInt, "scatter_dimension_numbers.index_vector_dim", ScatterNumbers(in).index_vector_dim) \
  F(kIndicesAreSorted, kBool, "indices_are_sorted", in.indices_are_sorted)                                           \
  F(kUniqueIndices, kBool, "unique_indices", in.unique_indices)                                                      \
  F(kSlice, kSlice, "slice_dimensions", in.slice)                                                                    \
  F(kDynamicSliceSizes, kIntList, "dynamic_slice_sizes", Rare(in).dynamic_slice_sizes)                               \
  F(kPadding, kPadding, "padding_config", in.padding_config)                                                         \
  F(kDirection, kDirection, "comparison_direction", in.comparison_direction)                                         \
  F(kComparisonType, kWord, "comparison_type", Rare(in).comparison_type)                                             \
  F(kFftType, kFftType, "fft_type", in.fft_type)                                                                     \
  F(kFftLength, kIntList, "fft_length", Rare(in).fft_length)                                                         \
  F(kIsStable, kBool, "is_stable", in.is_stable)                                                                     \
  F(kExponentBits, kInt32, "exponent_bits", in.exponent_bits)                                                        \
  F(kMantissaBits, kInt32, "mantissa_bits", in.mantissa_bits)                                                        \
  F(kDistribution, kDistribution, "distribution", in.distribution)                                                   \
  F(kRngAlgorithm, kWord, "rng_algorithm", Rare(in).rng_algorithm)                                                   \
  F(kCustomCallTarget, kString, "custom_call_target", in.custom_call_target)                                         \
  F(kBackendConfig, kStringOrJson, "backend_config", Rare(in).backend_config)                                        \
  F(kFusionKind, kWord, "fusion_kind", Rare(in).fusion_kind)                                                         \
  F(kK, kInt, "k", in.k)                                                                                             \
  F(kLargest, kBool, "largest", in.largest)                                                                          \
  F(kLeftSide, kBool, "triangular_solve_options.left_side", in.triangular_solve_options.left_side)                   \
  F(kLower, kBool, "triangular_solve_options.lower", in.triangular_solve_options.lower)                              \
  F(kUnitDiagonal, kBool, "triangular_solve_options.unit_diagonal", in.triangular_solve_options.unit_diagonal)       \
  F(kTransposeA, kTransposeA, "triangular_solve_options.transpose_a", in.triangular_solve_options.transpose_a)       \
  F(kCholeskyLower, kBool, "cholesky_options.lower", in.cholesky_lower)                                              \
  F(kMetadata, kMetadata, "metadata", in.metadata)                                                                   \
  F(kChannelId, kOptInt, "channel_id", Rare(in).channel_id)                                                          \
  F(kReplicaGroups, kReplicaGroups, "replica_groups", Rare(in).replica_groups)                                       \
  F(kConstrainLayout, kBool, "constrain_layout", in.constrain_layout)                                                \
  F(kUseGlobalDeviceIds, kBool, "use_global_device_ids", in.use_global_device_ids)                                   \
  F(kSourceTargetPairs, kIntListList, "source_target_pairs", Rare(in).source_target_pairs)                           \
  F(kCollectiveSliceSizes, kIntListList, "", Rare(in).collective_slice_sizes)                                        \
  F(kIsHostTransfer, kBool, "is_host_transfer", in.is_host_transfer)                                                 \
  F(kAsyncExecutionThread, kString, "async_execution_thread", Rare(in).async_execution_thread)                       \
  F(kCrossProgramPrefetchIndex, kOptInt, "cross_program_prefetch_index", Rare(in).cross_program_prefetch_index)      \
  F(kCustomCallHasSideEffect, kBool, "custom_call_has_side_effect", in.custom_call_has_side_effect)                  \
  F(kApiVersion, kWord, "custom_call_api_version", Rare(in).custom_call_api_version)                                 \
  F(kSchedule, kWord, "custom_call_schedule", Rare(in).custom_call_schedule)                                         \
  F(kPaddingType, kWord, "padding_type", Rare(in).padding_type)                                                      \
  F(kOperandLayoutConstraints, kShapeList, "operand_shapes_with_layout", in.operand_layout_constraints)              \
  F(kOutputToOperandAliasing, kAliasing, "output_operand_aliasing", Rare(in).output_to_operand_aliasing)             \
  F(kIsComposite, kBool, "is_composite", in.is_composite)                                                            \
  F(kDelta, kInt, "delta", in.delta)                                                                                 \
  F(kInfeedConfig, kString, "infeed_config", Rare(in).infeed_config)                                                 \
  F(kOutfeedConfig, kString, "outfeed_config", Rare(in).outfeed_config)                                              \
  F(kOutfeedShape, kShape, "outfeed_shape", in.outfeed_shape)                                                        \
  F(kInferredDimension, kOptInt, "", Rare(in).inferred_dimension)                                                    \
  F(kResultAccuracy, kResultAccuracy, "result_accuracy", in.result_accuracy)                                         \
  F(kParameterReplication, kBoolList, "parameter_replication.replicated_at_leaf_buffers",                            \
    Rare(in).parameter_replication)                                                                                  \
  F(kLiteral, kLiteral, "literal", in.literal)                                                                       \
  F(kSharding, kSharding, "sharding", in.sharding)                                                                   \
  F(kFrontendAttributes, kFrontendAttributes, "frontend_attributes", Rare(in).frontend_attributes)                   \
  F(kControlPredecessors, kNameList, "control_predecessor_ids", Rare(in).control_predecessors)                       \
  F(kStatistics, kText, "", Rare(in).statistics)                                                                     \
  F(kOrigin, kText, "", Rare(in).origin)                                                                             \
  F(kDomain, kText, "", Rare(in).domain)                                                                             \
  F(kCalledComputation, kComputation, "called_computation_ids", in.called_computations)                              \
  F(kCalledComputations, kComputationList, "called_computation_ids", in.called_computations)

enum class AttrField : uint8_t {
#define OPPROBE_HLO_ATTR_FIELD_ENUM(field, kind, proto, access) field,
  OPPROBE_HLO_ATTR_FIELDS(OPPROBE_HLO_ATTR_FIELD_ENUM)
#undef OPPROBE_HLO_ATTR_FIELD_ENUM
};

struct AttrFieldInfo {
  AttrField field;
  AttrKind kind;
  std::string_view name;        // "kDimensions"
  std::string_view proto_path;  // "dot_dimension_numbers.lhs_contracting_dimensions"; "" when XLA has no field
};
const AttrFieldInfo& FieldInfo(AttrField f);
int AttrFieldCount();

// Calls fn(AttrKindTag<kind>{}, value&) with the field of `in` that `f` names, typed by its kind.
template <typename Fn>
decltype(auto) VisitField(AttrField f, Instruction& in, Fn&& fn) {
  switch (f) {
#define OPPROBE_HLO_ATTR_VISIT(field, kind, proto, access) \
  case AttrField::field:                                   \
    return fn(AttrKindTag<AttrKind::kind>{}, static_cast<typename AttrValueType<AttrKind::kind>::type&>(access));
    OPPROBE_HLO_ATTR_FIELDS(OPPROBE_HLO_ATTR_VISIT)
#undef OPPROBE_HLO_ATTR_VISIT
  }
  return fn(AttrKindTag<AttrKind::kInt>{}, in.tuple_index);  // unreachable: every field has a case
}
template <typename Fn>
decltype(auto) VisitField(AttrField f, const Instruction& in, Fn&& fn) {
  switch (f) {
#define OPPROBE_HLO_ATTR_VISIT(field, kind, proto, access) \
  case AttrField::field:                                   \
    return fn(AttrKindTag<AttrKind::kind>{}, static_cast<const typename AttrValueType<AttrKind::kind>::type&>(access));
    OPPROBE_HLO_ATTR_FIELDS(OPPROBE_HLO_ATTR_VISIT)
#undef OPPROBE_HLO_ATTR_VISIT
  }
  return fn(AttrKindTag<AttrKind::kInt>{}, in.tuple_index);
}

// Whether the text must give an attribute.
enum class AttrNeed : uint8_t {
  kOptional,
  kRequired,
  kRequiredForArrayOperand,  // broadcast's dimensions: required unless operand 0 is a scalar
  kDefaulted,                // optional; when absent the field takes its empty value (a window {} in XLA)
};
// When the printer writes an attribute.
enum class AttrPrint : uint8_t {
  kAlways,
  kIfSet,              // when IsSet: the value differs from the field's default and is not empty
  kNever,              // parsed only (custom-call `to_apply=` prints as called_computations)
  kPredicateBranches,  // conditional true/false_computation: two branches selected by a pred operand
  kIndexBranches,      // conditional branch_computations: the other form
};

struct AttrSpec {
  std::string_view key;  // as written: "dimensions", "control-predecessors"
  AttrField field;
  AttrNeed need = AttrNeed::kOptional;
  AttrPrint print = AttrPrint::kIfSet;
  int slot = -1;  // kComputation: the index into called_computations
  AttrKind kind() const { return FieldInfo(field).kind; }
};

// The opcode's own attributes, in XLA's print order (before the generic ones). Unknown opcodes have none.
std::span<const AttrSpec> OpcodeAttributes(Opcode op);
// Attributes every instruction may have (sharding, frontend_attributes, metadata, backend_config, ...), in
// print order. Unknown attributes print after control-predecessors and before metadata.
std::span<const AttrSpec> GenericAttributes();
// The spec `key` names for this instruction (its opcode's, then the generic ones), or null when unknown.
const AttrSpec* FindAttribute(const Instruction& in, std::string_view key);

// The value differs from the field's default and is not empty (an empty window, all-default precisions).
bool IsSet(AttrField f, const Instruction& in);

// kWord fields: whether `word` is one of the field's names; the proto enum value a word stands for (an empty
// word: the field's default value), and back.
bool IsWordOf(AttrField f, std::string_view word);
std::string WordsOf(AttrField f);  // "rng_default, rng_three_fry, rng_philox" for messages
std::optional<int> WordToEnum(AttrField f, std::string_view word);
std::string EnumToWord(AttrField f, int value);

}  // namespace opprobe::hlo
