#include "hlo/attributes.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "hlo.pb.h"
#include "xla_data.pb.h"

namespace opprobe::hlo {

const DotDimensionNumbers& DotNumbers(const Instruction& in) {
  static const DotDimensionNumbers kEmpty;
  return in.dot_dimension_numbers ? *in.dot_dimension_numbers : kEmpty;
}
const GatherDimensionNumbers& GatherNumbers(const Instruction& in) {
  static const GatherDimensionNumbers kEmpty;
  return in.gather_dimension_numbers ? *in.gather_dimension_numbers : kEmpty;
}
const ScatterDimensionNumbers& ScatterNumbers(const Instruction& in) {
  static const ScatterDimensionNumbers kEmpty;
  return in.scatter_dimension_numbers ? *in.scatter_dimension_numbers : kEmpty;
}

namespace {

constexpr AttrFieldInfo kFields[] = {
#define OPPROBE_HLO_ATTR_INFO(field, kind, proto, access) {AttrField::field, AttrKind::kind, #field, proto},
    OPPROBE_HLO_ATTR_FIELDS(OPPROBE_HLO_ATTR_INFO)
#undef OPPROBE_HLO_ATTR_INFO
};

// Spec builders: R required, O optional; C a called computation slot.
constexpr AttrSpec R(std::string_view key, AttrField f, AttrPrint p = AttrPrint::kAlways) {
  return {key, f, AttrNeed::kRequired, p, -1};
}
constexpr AttrSpec O(std::string_view key, AttrField f, AttrPrint p = AttrPrint::kIfSet) {
  return {key, f, AttrNeed::kOptional, p, -1};
}
constexpr AttrSpec D(std::string_view key, AttrField f) {
  return {key, f, AttrNeed::kDefaulted, AttrPrint::kIfSet, -1};
}
constexpr AttrSpec C(std::string_view key, int slot, AttrNeed need = AttrNeed::kRequired,
                     AttrPrint p = AttrPrint::kAlways) {
  return {key, AttrField::kCalledComputation, need, p, slot};
}

using F = AttrField;
using P = AttrPrint;

// XLA's HloParserImpl::CreateInstruction lists (required / optional) and HloInstruction's print order.
constexpr AttrSpec kResultAccuracyOnly[] = {O("result_accuracy", F::kResultAccuracy)};
constexpr AttrSpec kAllGather[] = {O("channel_id", F::kChannelId), O("replica_groups", F::kReplicaGroups, P::kAlways),
                                   O("constrain_layout", F::kConstrainLayout), R("dimensions", F::kDimensions),
                                   O("use_global_device_ids", F::kUseGlobalDeviceIds)};
constexpr AttrSpec kAllReduce[] = {O("channel_id", F::kChannelId), O("replica_groups", F::kReplicaGroups, P::kAlways),
                                   O("constrain_layout", F::kConstrainLayout),
                                   O("use_global_device_ids", F::kUseGlobalDeviceIds), C("to_apply", 0)};
constexpr AttrSpec kReduceScatter[] = {O("channel_id", F::kChannelId),
                                       O("replica_groups", F::kReplicaGroups, P::kAlways),
                                       O("constrain_layout", F::kConstrainLayout),
                                       O("use_global_device_ids", F::kUseGlobalDeviceIds),
                                       R("dimensions", F::kDimensions),
                                       C("to_apply", 0)};
constexpr AttrSpec kAllToAll[] = {O("channel_id", F::kChannelId), O("replica_groups", F::kReplicaGroups, P::kAlways),
                                  O("constrain_layout", F::kConstrainLayout), O("dimensions", F::kDimensions)};
constexpr AttrSpec kCollectiveBroadcast[] = {O("channel_id", F::kChannelId),
                                             O("replica_groups", F::kReplicaGroups, P::kAlways)};
constexpr AttrSpec kCollectivePermute[] = {O("channel_id", F::kChannelId),
                                           R("source_target_pairs", F::kSourceTargetPairs),
                                           O("slice_sizes", F::kCollectiveSliceSizes)};
constexpr AttrSpec kAsyncStart[] = {O("async_execution_thread", F::kAsyncExecutionThread),
                                    O("output_to_operand_aliasing", F::kOutputToOperandAliasing), C("calls", 0)};
constexpr AttrSpec kAsyncFollower[] = {O("async_execution_thread", F::kAsyncExecutionThread),
                                       C("calls", 0, AttrNeed::kOptional)};
constexpr AttrSpec kBatchNorm[] = {R("epsilon", F::kEpsilon), R("feature_index", F::kFeatureIndex)};
constexpr AttrSpec kBroadcast[] = {{"dimensions", F::kDimensions, AttrNeed::kRequiredForArrayOperand, P::kAlways, -1}};
constexpr AttrSpec kCall[] = {C("to_apply", 0), O("is_composite", F::kIsComposite)};
constexpr AttrSpec kCholesky[] = {O("lower", F::kCholeskyLower)};
constexpr AttrSpec kCompare[] = {R("direction", F::kDirection), O("type", F::kComparisonType)};
constexpr AttrSpec kDimensionsRequired[] = {R("dimensions", F::kDimensions)};
constexpr AttrSpec kConditional[] = {
    C("true_computation", 0, AttrNeed::kOptional, P::kPredicateBranches),
    C("false_computation", 1, AttrNeed::kOptional, P::kPredicateBranches),
    {"branch_computations", F::kCalledComputations, AttrNeed::kOptional, P::kIndexBranches, -1}};
constexpr AttrSpec kConvolution[] = {
    D("window", F::kWindow), R("dim_labels", F::kConvDims), O("feature_group_count", F::kFeatureGroupCount),
    O("batch_group_count", F::kBatchGroupCount), O("operand_precision", F::kOperandPrecision)};
constexpr AttrSpec kCopyStart[] = {O("cross_program_prefetch_index", F::kCrossProgramPrefetchIndex)};
constexpr AttrSpec kCustomCall[] = {O("window", F::kWindow),
                                    O("dim_labels", F::kConvDims),
                                    O("feature_group_count", F::kFeatureGroupCount),
                                    O("batch_group_count", F::kBatchGroupCount),
                                    O("padding_type", F::kPaddingType),
                                    R("custom_call_target", F::kCustomCallTarget),
                                    O("operand_layout_constraints", F::kOperandLayoutConstraints),
                                    O("custom_call_has_side_effect", F::kCustomCallHasSideEffect),
                                    O("literal", F::kLiteral),
                                    O("output_to_operand_aliasing", F::kOutputToOperandAliasing),
                                    O("schedule", F::kSchedule),
                                    O("api_version", F::kApiVersion),
                                    O("operand_precision", F::kOperandPrecision),
                                    {"called_computations", F::kCalledComputations, AttrNeed::kOptional, P::kIfSet, -1},
                                    C("to_apply", 0, AttrNeed::kOptional, P::kNever)};
constexpr AttrSpec kDomain[] = {R("domain", F::kDomain)};
constexpr AttrSpec kDot[] = {
    O("lhs_batch_dims", F::kDotLhsBatch),         O("lhs_contracting_dims", F::kDotLhsContracting, P::kAlways),
    O("rhs_batch_dims", F::kDotRhsBatch),         O("rhs_contracting_dims", F::kDotRhsContracting, P::kAlways),
    O("operand_precision", F::kOperandPrecision), O("algorithm", F::kDotAlgorithm)};
constexpr AttrSpec kDynamicSlice[] = {R("dynamic_slice_sizes", F::kDynamicSliceSizes)};
constexpr AttrSpec kFft[] = {R("fft_type", F::kFftType), R("fft_length", F::kFftLength)};
constexpr AttrSpec kFusion[] = {R("kind", F::kFusionKind), O("output_to_operand_aliasing", F::kOutputToOperandAliasing),
                                C("calls", 0)};
constexpr AttrSpec kGather[] = {R("offset_dims", F::kGatherOffsetDims),
                                R("collapsed_slice_dims", F::kGatherCollapsedSliceDims),
                                R("start_index_map", F::kGatherStartIndexMap),
                                O("operand_batching_dims", F::kGatherOperandBatchingDims),
                                O("start_indices_batching_dims", F::kGatherStartIndicesBatchingDims),
                                R("index_vector_dim", F::kGatherIndexVectorDim),
                                R("slice_sizes", F::kGatherSliceSizes),
                                O("indices_are_sorted", F::kIndicesAreSorted)};
constexpr AttrSpec kGetTupleElement[] = {R("index", F::kTupleIndex)};
constexpr AttrSpec kInfeed[] = {O("infeed_config", F::kInfeedConfig)};
constexpr AttrSpec kIota[] = {R("iota_dimension", F::kIotaDimension)};
constexpr AttrSpec kMap[] = {O("dimensions", F::kDimensions, P::kAlways), C("to_apply", 0)};
constexpr AttrSpec kOutfeed[] = {O("outfeed_shape", F::kOutfeedShape), O("outfeed_config", F::kOutfeedConfig)};
constexpr AttrSpec kPad[] = {R("padding", F::kPadding)};
constexpr AttrSpec kParameter[] = {O("parameter_replication", F::kParameterReplication)};
constexpr AttrSpec kSendRecv[] = {O("channel_id", F::kChannelId), O("is_host_transfer", F::kIsHostTransfer)};
constexpr AttrSpec kReduce[] = {R("dimensions", F::kDimensions), C("to_apply", 0)};
constexpr AttrSpec kReducePrecision[] = {R("exponent_bits", F::kExponentBits), R("mantissa_bits", F::kMantissaBits)};
constexpr AttrSpec kReduceWindow[] = {D("window", F::kWindow), C("to_apply", 0)};
constexpr AttrSpec kReshape[] = {O("inferred_dimension", F::kInferredDimension)};
constexpr AttrSpec kRng[] = {R("distribution", F::kDistribution)};
constexpr AttrSpec kRngBitGenerator[] = {R("algorithm", F::kRngAlgorithm)};
constexpr AttrSpec kRngGetAndUpdateState[] = {R("delta", F::kDelta)};
constexpr AttrSpec kScatter[] = {R("update_window_dims", F::kScatterUpdateWindowDims),
                                 R("inserted_window_dims", F::kScatterInsertedWindowDims),
                                 R("scatter_dims_to_operand_dims", F::kScatterDimsToOperandDims),
                                 O("input_batching_dims", F::kScatterInputBatchingDims),
                                 O("scatter_indices_batching_dims", F::kScatterIndicesBatchingDims),
                                 R("index_vector_dim", F::kScatterIndexVectorDim),
                                 O("indices_are_sorted", F::kIndicesAreSorted),
                                 O("unique_indices", F::kUniqueIndices),
                                 C("to_apply", 0)};
constexpr AttrSpec kSelectAndScatter[] = {D("window", F::kWindow), C("select", 0), C("scatter", 1)};
constexpr AttrSpec kSlice[] = {R("slice", F::kSlice)};
constexpr AttrSpec kSort[] = {R("dimensions", F::kDimensions), O("is_stable", F::kIsStable), C("to_apply", 0)};
constexpr AttrSpec kTopK[] = {R("k", F::kK), O("largest", F::kLargest, P::kAlways)};
constexpr AttrSpec kTriangularSolve[] = {O("left_side", F::kLeftSide), O("lower", F::kLower),
                                         O("unit_diagonal", F::kUnitDiagonal),
                                         O("transpose_a", F::kTransposeA, P::kAlways)};
constexpr AttrSpec kWhile[] = {C("condition", 1), C("body", 0)};

constexpr AttrSpec kGeneric[] = {O("sharding", F::kSharding),     O("frontend_attributes", F::kFrontendAttributes),
                                 O("statistics", F::kStatistics), O("control-predecessors", F::kControlPredecessors),
                                 O("metadata", F::kMetadata),     O("backend_config", F::kBackendConfig),
                                 O("origin", F::kOrigin)};

template <size_t N>
constexpr std::span<const AttrSpec> S(const AttrSpec (&a)[N]) {
  return {a, N};
}

std::span<const AttrSpec> Lookup(Opcode op) {
  switch (op) {
    case Opcode::kCbrt:
    case Opcode::kCos:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kRsqrt:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kTan:
    case Opcode::kTanh: return S(kResultAccuracyOnly);
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart: return S(kAllGather);
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart: return S(kAllReduce);
    case Opcode::kReduceScatter: return S(kReduceScatter);
    case Opcode::kAllToAll: return S(kAllToAll);
    case Opcode::kCollectiveBroadcast: return S(kCollectiveBroadcast);
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart: return S(kCollectivePermute);
    case Opcode::kAsyncStart: return S(kAsyncStart);
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone: return S(kAsyncFollower);
    case Opcode::kBatchNormGrad:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormTraining: return S(kBatchNorm);
    case Opcode::kBroadcast: return S(kBroadcast);
    case Opcode::kCall: return S(kCall);
    case Opcode::kCholesky: return S(kCholesky);
    case Opcode::kCompare: return S(kCompare);
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kTranspose:
    case Opcode::kGetDimensionSize:
    case Opcode::kSetDimensionSize: return S(kDimensionsRequired);
    case Opcode::kConditional: return S(kConditional);
    case Opcode::kConvolution: return S(kConvolution);
    case Opcode::kCopyStart: return S(kCopyStart);
    case Opcode::kCustomCall: return S(kCustomCall);
    case Opcode::kDomain: return S(kDomain);
    case Opcode::kDot: return S(kDot);
    case Opcode::kDynamicSlice: return S(kDynamicSlice);
    case Opcode::kFft: return S(kFft);
    case Opcode::kFusion: return S(kFusion);
    case Opcode::kGather: return S(kGather);
    case Opcode::kGetTupleElement: return S(kGetTupleElement);
    case Opcode::kInfeed: return S(kInfeed);
    case Opcode::kIota: return S(kIota);
    case Opcode::kMap: return S(kMap);
    case Opcode::kOutfeed: return S(kOutfeed);
    case Opcode::kPad: return S(kPad);
    case Opcode::kParameter: return S(kParameter);
    case Opcode::kRecv:
    case Opcode::kRecvDone:
    case Opcode::kSend:
    case Opcode::kSendDone: return S(kSendRecv);
    case Opcode::kReduce: return S(kReduce);
    case Opcode::kReducePrecision: return S(kReducePrecision);
    case Opcode::kReduceWindow: return S(kReduceWindow);
    case Opcode::kReshape: return S(kReshape);
    case Opcode::kRng: return S(kRng);
    case Opcode::kRngBitGenerator: return S(kRngBitGenerator);
    case Opcode::kRngGetAndUpdateState: return S(kRngGetAndUpdateState);
    case Opcode::kScatter: return S(kScatter);
    case Opcode::kSelectAndScatter: return S(kSelectAndScatter);
    case Opcode::kSlice: return S(kSlice);
    case Opcode::kSort: return S(kSort);
    case Opcode::kTopK: return S(kTopK);
    case Opcode::kTriangularSolve: return S(kTriangularSolve);
    case Opcode::kWhile: return S(kWhile);
    default: return {};
  }
}

// How a value's kind decides that an explicitly written value is still "nothing to print".
template <typename Tag, typename T>
bool KindEmpty(Tag, const T&) {
  return false;
}
bool KindEmpty(AttrKindTag<AttrKind::kWindow>, const support::HeapOptional<Window>& w) {
  return !w || w->dimensions.empty();
}
bool KindEmpty(AttrKindTag<AttrKind::kPrecisionList>, const std::vector<PrecisionLevel>& levels) {
  return std::all_of(levels.begin(), levels.end(), [](PrecisionLevel p) { return p == PrecisionLevel::kDefault; });
}
bool KindEmpty(AttrKindTag<AttrKind::kReplicaGroups>, const CollectiveDeviceList& g) { return g.empty(); }

// kWord fields: the proto enum behind the words (text = the value name without `prefix`, lower-cased when
// `lower`), or a fixed list of names for a proto string field, and the enum value an empty word stands for.
struct WordDomain {
  AttrField field;
  const google::protobuf::EnumDescriptor* (*descriptor)();
  std::string_view prefix;
  bool lower;
  int empty_value;  // -1: the empty word is not a value
  std::array<std::string_view, 4> names;
};
const WordDomain kWords[] = {
    {F::kDotAlgorithm, &xla::PrecisionConfig_Algorithm_descriptor, "ALG_", true, 0, {}},
    {F::kRngAlgorithm, &xla::RandomAlgorithm_descriptor, "", true, -1, {}},
    {F::kApiVersion, &xla::CustomCallApiVersion_descriptor, "", false, 1, {}},
    {F::kSchedule, &xla::CustomCallSchedule_descriptor, "", false, 0, {}},
    {F::kPaddingType, &xla::PaddingType_descriptor, "", false, 0, {}},
    {F::kComparisonType, nullptr, "", false, -1, {"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}},
    {F::kFusionKind, nullptr, "", false, -1, {"kLoop", "kInput", "kOutput", "kCustom"}},
};

const WordDomain* FindWords(AttrField f) {
  for (const auto& w : kWords)
    if (w.field == f) return &w;
  return nullptr;
}

std::string TextOf(const WordDomain& w, const std::string& enum_name) {
  std::string s = enum_name;
  if (!w.prefix.empty() && s.rfind(w.prefix, 0) == 0) s = s.substr(w.prefix.size());
  if (w.lower)
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const AttrFieldInfo& FieldInfo(AttrField f) { return kFields[static_cast<size_t>(f)]; }
int AttrFieldCount() { return static_cast<int>(std::size(kFields)); }

std::span<const AttrSpec> OpcodeAttributes(Opcode op) { return Lookup(op); }
std::span<const AttrSpec> GenericAttributes() { return S(kGeneric); }

const AttrSpec* FindAttribute(const Instruction& in, std::string_view key) {
  if (in.unknown_opcode.empty())
    for (const AttrSpec& s : OpcodeAttributes(in.opcode))
      if (s.key == key) return &s;
  for (const AttrSpec& s : GenericAttributes())
    if (s.key == key) return &s;
  return nullptr;
}

bool IsSet(AttrField f, const Instruction& in) {
  static const Instruction kDefault;
  switch (f) {
#define OPPROBE_HLO_ATTR_IS_SET(field, kind, proto, access)                                                         \
  case AttrField::field: {                                                                                          \
    auto get = [](const Instruction& in) -> const typename AttrValueType<AttrKind::kind>::type& { return access; }; \
    const auto& value = get(in);                                                                                    \
    const auto& unset = get(kDefault);                                                                              \
    /* The same object: a field of the shared default (rare() or DotNumbers() of an instruction without them). */   \
    return &value != &unset && !(value == unset) && !KindEmpty(AttrKindTag<AttrKind::kind>{}, value);               \
  }
    OPPROBE_HLO_ATTR_FIELDS(OPPROBE_HLO_ATTR_IS_SET)
#undef OPPROBE_HLO_ATTR_IS_SET
  }
  return false;
}

bool IsWordOf(AttrField f, std::string_view word) {
  const WordDomain* w = FindWords(f);
  if (!w) return false;
  if (!w->descriptor) return std::find(w->names.begin(), w->names.end(), word) != w->names.end() && !word.empty();
  const auto* d = w->descriptor();
  for (int i = 0; i < d->value_count(); ++i)
    if (TextOf(*w, d->value(i)->name()) == word) return true;
  return false;
}

std::string WordsOf(AttrField f) {
  const WordDomain* w = FindWords(f);
  std::string out;
  auto add = [&](std::string_view s) {
    if (!out.empty()) out += ", ";
    out += s;
  };
  if (!w) return out;
  if (!w->descriptor) {
    for (auto n : w->names)
      if (!n.empty()) add(n);
    return out;
  }
  const auto* d = w->descriptor();
  for (int i = 0; i < d->value_count(); ++i) add(TextOf(*w, d->value(i)->name()));
  return out;
}

std::optional<int> WordToEnum(AttrField f, std::string_view word) {
  const WordDomain* w = FindWords(f);
  if (!w || !w->descriptor) return std::nullopt;
  if (word.empty()) return w->empty_value >= 0 ? std::optional<int>(w->empty_value) : std::nullopt;
  const auto* d = w->descriptor();
  for (int i = 0; i < d->value_count(); ++i)
    if (TextOf(*w, d->value(i)->name()) == word) return d->value(i)->number();
  return std::nullopt;
}

std::string EnumToWord(AttrField f, int value) {
  const WordDomain* w = FindWords(f);
  if (!w || !w->descriptor) return {};
  if (value == w->empty_value) return {};
  const auto* v = w->descriptor()->FindValueByNumber(value);
  return v ? TextOf(*w, v->name()) : std::string();
}

}  // namespace opprobe::hlo
