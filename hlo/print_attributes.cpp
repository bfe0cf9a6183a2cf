// The HLO printer, part 2: attributes. AttributesToString walks the opcode's schema (hlo/attributes.h) and then
// the generic attributes; ValuePrinter writes one value per AttrKind as XLA prints it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "hlo/literal.h"
#include "hlo/printer.h"

namespace opprobe::hlo {
namespace {

std::string Braced(const std::vector<int64_t>& v) { return fmt::format("{{{}}}", fmt::join(v, ",")); }

std::string Name(const std::string& name, const PrintOptions& o) { return o.long_style ? "%" + name : name; }

std::string CalledName(const Computation* c, const PrintOptions& o) { return c ? Name(c->name(), o) : "<null>"; }

std::string SliceToString(const SliceDimensions& s) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < s.starts.size(); ++i) {
    int64_t stride = i < s.strides.size() ? s.strides[i] : 1;
    int64_t limit = i < s.limits.size() ? s.limits[i] : 0;
    if (stride == 1) parts.push_back(fmt::format("[{}:{}]", s.starts[i], limit));
    else parts.push_back(fmt::format("[{}:{}:{}]", s.starts[i], limit, stride));
  }
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

std::string_view PrecisionName(PrecisionLevel p) {
  switch (p) {
    case PrecisionLevel::kHigh: return "high";
    case PrecisionLevel::kHighest: return "highest";
    case PrecisionLevel::kPackedNibble: return "packed_nibble";
    default: return "default";
  }
}

// A frontend attribute's value: a JSON dictionary as is, anything else quoted (XLA's FrontendAttributesToString).
std::string FrontendValue(const std::string& v) {
  if (v.size() >= 2 && v.front() == '{' && v.back() == '}') return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string ShardingBody(const Sharding& s);

std::string ShardingMetadata(const Sharding& s) {
  if (s.metadata.empty()) return {};
  if (s.metadata.size() == 1) return " metadata=" + MetadataToString(s.metadata[0]);
  std::vector<std::string> parts;
  parts.reserve(s.metadata.size());
  for (const auto& m : s.metadata) parts.push_back(MetadataToString(m));
  return fmt::format(" metadata={{{}}}", fmt::join(parts, ", "));
}

std::string ShardingBody(const Sharding& s) {
  std::string out;
  switch (s.type) {
    case Sharding::Type::kNamed: return s.named;
    case Sharding::Type::kMaximal: out = fmt::format("maximal device={}", s.device); break;
    case Sharding::Type::kTiled: {
      out = "devices=" + fmt::format("[{}]", fmt::join(s.tile_dims, ","));
      if (s.iota) {
        out += fmt::format("<=[{}]", fmt::join(s.iota_reshape_dims, ","));
        if (!s.iota_transpose_perm.empty()) out += fmt::format("T({})", fmt::join(s.iota_transpose_perm, ","));
      } else {
        out += fmt::format("{}", fmt::join(s.devices, ","));
      }
      if (s.last_tile_dim_replicate) out += " last_tile_dim_replicate";
      if (!s.last_tile_dims.empty()) {
        std::vector<std::string_view> names;
        names.reserve(s.last_tile_dims.size());
        for (auto t : s.last_tile_dims) names.push_back(ShardingTypeName(t));
        out += fmt::format(" last_tile_dims={{{}}}", fmt::join(names, ", "));
      }
      break;
    }
    default: out = std::string(ShardingTypeName(s.type));
  }
  if (s.shard_group)
    out += fmt::format(" {} {}", s.shard_group->first ? "shard_as" : "shard_like", s.shard_group->second);
  return out + ShardingMetadata(s);
}

// Writes one value of each kind; `spec` tells computation slots apart.
struct ValuePrinter {
  const Instruction& in;
  const AttrSpec& spec;
  const PrintOptions& o;

  std::string operator()(AttrKindTag<AttrKind::kInt>, int64_t v) const { return std::to_string(v); }
  std::string operator()(AttrKindTag<AttrKind::kInt32>, int32_t v) const { return std::to_string(v); }
  std::string operator()(AttrKindTag<AttrKind::kOptInt>, const std::optional<int64_t>& v) const {
    return v ? std::to_string(*v) : "0";
  }
  std::string operator()(AttrKindTag<AttrKind::kBool>, bool v) const { return v ? "true" : "false"; }
  // absl::StrCat(float): six significant digits, as XLA prints epsilon.
  std::string operator()(AttrKindTag<AttrKind::kFloat>, float v) const { return FormatG(v, 6); }
  std::string operator()(AttrKindTag<AttrKind::kString>, const std::string& v) const {
    return "\"" + CEscape(v) + "\"";
  }
  // XLA prints a JSON dict as is and anything else quoted.
  std::string operator()(AttrKindTag<AttrKind::kStringOrJson>, const std::string& v) const {
    if (v.size() >= 2 && v.front() == '{' && v.back() == '}') return v;
    return "\"" + CEscape(v) + "\"";
  }
  std::string operator()(AttrKindTag<AttrKind::kWord>, const std::string& v) const { return v; }
  std::string operator()(AttrKindTag<AttrKind::kIntList>, const std::vector<int64_t>& v) const { return Braced(v); }
  std::string operator()(AttrKindTag<AttrKind::kIntListList>, const std::vector<std::vector<int64_t>>& v) const {
    std::vector<std::string> parts;
    parts.reserve(v.size());
    for (const auto& l : v) parts.push_back(Braced(l));
    return fmt::format("{{{}}}", fmt::join(parts, ","));
  }
  std::string operator()(AttrKindTag<AttrKind::kBoolList>, const std::vector<bool>& v) const {
    std::vector<std::string_view> parts;
    parts.reserve(v.size());
    for (bool b : v) parts.push_back(b ? "true" : "false");
    return fmt::format("{{{}}}", fmt::join(parts, ","));
  }
  std::string operator()(AttrKindTag<AttrKind::kNameList>, const std::vector<std::string>& v) const {
    std::vector<std::string> parts;
    parts.reserve(v.size());
    for (const auto& n : v) parts.push_back(Name(n, o));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  std::string operator()(AttrKindTag<AttrKind::kText>, const std::string& v) const { return v; }
  std::string operator()(AttrKindTag<AttrKind::kWindow>, const support::HeapOptional<Window>& v) const {
    return v ? WindowToString(*v) : "{}";
  }
  std::string operator()(AttrKindTag<AttrKind::kConvDims>,
                         const support::HeapOptional<ConvolutionDimensionNumbers>& v) const {
    return ConvolutionDimensionNumbersToString(v ? *v : ConvolutionDimensionNumbers{});
  }
  std::string operator()(AttrKindTag<AttrKind::kSlice>, const support::HeapOptional<SliceDimensions>& v) const {
    return SliceToString(v ? *v : SliceDimensions{});
  }
  std::string operator()(AttrKindTag<AttrKind::kPadding>, const support::HeapOptional<PaddingConfig>& v) const {
    return PaddingConfigToString(v ? *v : PaddingConfig{});
  }
  std::string operator()(AttrKindTag<AttrKind::kDirection>, ComparisonDirection v) const {
    return std::string(ComparisonDirectionName(v));
  }
  std::string operator()(AttrKindTag<AttrKind::kFftType>, FftType v) const { return std::string(FftTypeName(v)); }
  std::string operator()(AttrKindTag<AttrKind::kDistribution>, RandomDistribution v) const {
    return v == RandomDistribution::kNormal ? "rng_normal" : "rng_uniform";
  }
  std::string operator()(AttrKindTag<AttrKind::kTransposeA>, TransposeA v) const {
    return std::string(TransposeAName(v));
  }
  std::string operator()(AttrKindTag<AttrKind::kPrecisionList>, const std::vector<PrecisionLevel>& v) const {
    std::vector<std::string_view> parts;
    parts.reserve(v.size());
    for (auto p : v) parts.push_back(PrecisionName(p));
    return fmt::format("{{{}}}", fmt::join(parts, ","));
  }
  std::string operator()(AttrKindTag<AttrKind::kMetadata>, const support::SharedValue<OpMetadata>& v) const {
    return MetadataToString(*v);
  }
  std::string operator()(AttrKindTag<AttrKind::kSharding>, const support::HeapOptional<Sharding>& v) const {
    return v ? ShardingToString(*v) : "{replicated}";
  }
  std::string operator()(AttrKindTag<AttrKind::kFrontendAttributes>,
                         const std::vector<std::pair<std::string, std::string>>& v) const {
    std::vector<std::string> parts;
    parts.reserve(v.size());
    for (const auto& [k, val] : v) parts.push_back(k + "=" + FrontendValue(val));
    return fmt::format("{{{}}}", fmt::join(parts, ","));
  }
  std::string operator()(AttrKindTag<AttrKind::kReplicaGroups>, const CollectiveDeviceList& v) const {
    return ReplicaGroupsToString(v);
  }
  std::string operator()(AttrKindTag<AttrKind::kAliasing>, const std::vector<OutputOperandAlias>& v) const {
    std::vector<std::string> parts;
    parts.reserve(v.size());
    for (const auto& a : v)
      parts.push_back(fmt::format("{}: ({}, {})", Braced(a.output_index), a.operand, Braced(a.operand_shape_index)));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  std::string operator()(AttrKindTag<AttrKind::kShape>, const support::HeapOptional<Shape>& v) const {
    return v ? v->ToString() : "()";
  }
  std::string operator()(AttrKindTag<AttrKind::kShapeList>, const support::HeapOptional<std::vector<Shape>>& v) const {
    std::vector<std::string> parts;
    if (v)
      for (const auto& s : *v) parts.push_back(s.ToString());
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  static std::string ShapedLiteral(const Literal& l) {
    if (!l.shape().IsTuple() || l.elided()) return l.shape().ToString() + " " + LiteralToString(l);
    std::vector<std::string> parts;
    for (const auto& e : l.tuple_elements()) parts.push_back(ShapedLiteral(e));
    return fmt::format("( {} )", fmt::join(parts, ", "));
  }
  std::string operator()(AttrKindTag<AttrKind::kLiteral>, const support::HeapOptional<Literal>& v) const {
    return v ? ShapedLiteral(*v) : "()";
  }
  std::string operator()(AttrKindTag<AttrKind::kResultAccuracy>, const support::HeapOptional<ResultAccuracy>& v) const {
    if (!v) return "{mode=default}";
    if (!v->has_tolerance) return v->highest ? "{mode=highest}" : "{mode=default}";
    return fmt::format("{{tolerance={{atol={},rtol={},ulps={}}}}}", RoundTripDouble(v->atol, false),
                       RoundTripDouble(v->rtol, false), v->ulps);
  }
  std::string operator()(AttrKindTag<AttrKind::kComputation>, const std::vector<Computation*>& v) const {
    size_t slot = static_cast<size_t>(spec.slot);
    return CalledName(slot < v.size() ? v[slot] : nullptr, o);
  }
  std::string operator()(AttrKindTag<AttrKind::kComputationList>, const std::vector<Computation*>& v) const {
    std::vector<std::string> names;
    names.reserve(v.size());
    for (auto* c : v) names.push_back(CalledName(c, o));
    return fmt::format("{{{}}}", fmt::join(names, ", "));
  }
};

bool PredicateBranches(const Instruction& in) {
  return in.called_computations.size() == 2 && in.operands.size() == 3 &&
         in.operands[0]->shape.element_type() == PrimitiveType::PRED;
}

bool ShouldPrint(const Instruction& in, const AttrSpec& spec) {
  const AttrKind kind = spec.kind();
  switch (spec.print) {
    case AttrPrint::kNever: return false;
    case AttrPrint::kPredicateBranches: return PredicateBranches(in);
    case AttrPrint::kIndexBranches: return !PredicateBranches(in) && !in.called_computations.empty();
    case AttrPrint::kAlways:
      if (kind == AttrKind::kComputation) return static_cast<size_t>(spec.slot) < in.called_computations.size();
      return true;
    case AttrPrint::kIfSet:
      if (kind == AttrKind::kComputation) return static_cast<size_t>(spec.slot) < in.called_computations.size();
      if (kind == AttrKind::kComputationList) return !in.called_computations.empty();
      return IsSet(spec.field, in);
  }
  return false;
}

}  // namespace

std::string WindowToString(const Window& window) {
  if (window.dimensions.empty()) return "{}";
  auto join = [&](auto get) {
    std::vector<std::string> parts;
    parts.reserve(window.dimensions.size());
    for (const auto& d : window.dimensions) parts.push_back(get(d));
    return fmt::format("{}", fmt::join(parts, "x"));
  };
  auto any = [&](auto pred) {
    for (const auto& d : window.dimensions)
      if (pred(d)) return true;
    return false;
  };
  std::vector<std::string> fields;
  fields.push_back("size=" + join([](const WindowDimension& d) { return std::to_string(d.size); }));
  if (any([](const WindowDimension& d) { return d.stride != 1; }))
    fields.push_back("stride=" + join([](const WindowDimension& d) { return std::to_string(d.stride); }));
  if (any([](const WindowDimension& d) { return d.padding_low != 0 || d.padding_high != 0; }))
    fields.push_back(
        "pad=" + join([](const WindowDimension& d) { return fmt::format("{}_{}", d.padding_low, d.padding_high); }));
  if (any([](const WindowDimension& d) { return d.base_dilation != 1; }))
    fields.push_back("lhs_dilate=" + join([](const WindowDimension& d) { return std::to_string(d.base_dilation); }));
  if (any([](const WindowDimension& d) { return d.window_dilation != 1; }))
    fields.push_back("rhs_dilate=" + join([](const WindowDimension& d) { return std::to_string(d.window_dilation); }));
  if (any([](const WindowDimension& d) { return d.window_reversal; }))
    fields.push_back("rhs_reversal=" +
                     join([](const WindowDimension& d) { return std::string(d.window_reversal ? "1" : "0"); }));
  return fmt::format("{{{}}}", fmt::join(fields, " "));
}

std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& dn) {
  auto labels = [](size_t rank, int64_t a, char ca, int64_t b, char cb, const std::vector<int64_t>& spatial) {
    std::string s(rank, '?');
    if (a >= 0 && static_cast<size_t>(a) < rank) s[static_cast<size_t>(a)] = ca;
    if (b >= 0 && static_cast<size_t>(b) < rank) s[static_cast<size_t>(b)] = cb;
    for (size_t i = 0; i < spatial.size(); ++i)
      if (spatial[i] >= 0 && static_cast<size_t>(spatial[i]) < rank)
        s[static_cast<size_t>(spatial[i])] = static_cast<char>('0' + i);
    return s;
  };
  // The rank: two plus the spatial dimensions, or more when labels skip dimensions (`?b01f`, '?' unused).
  size_t rank = dn.input_spatial_dimensions.size() + 2;
  auto widen = [&](int64_t a, int64_t b, const std::vector<int64_t>& spatial) {
    for (int64_t v : spatial) rank = std::max<size_t>(rank, v >= 0 && v < 64 ? static_cast<size_t>(v) + 1 : 0);
    for (int64_t v : {a, b}) rank = std::max<size_t>(rank, v >= 0 && v < 64 ? static_cast<size_t>(v) + 1 : 0);
  };
  widen(dn.input_batch_dimension, dn.input_feature_dimension, dn.input_spatial_dimensions);
  widen(dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension, dn.kernel_spatial_dimensions);
  widen(dn.output_batch_dimension, dn.output_feature_dimension, dn.output_spatial_dimensions);
  return labels(rank, dn.input_batch_dimension, 'b', dn.input_feature_dimension, 'f', dn.input_spatial_dimensions) +
         "_" +
         labels(rank, dn.kernel_input_feature_dimension, 'i', dn.kernel_output_feature_dimension, 'o',
                dn.kernel_spatial_dimensions) +
         "->" +
         labels(rank, dn.output_batch_dimension, 'b', dn.output_feature_dimension, 'f', dn.output_spatial_dimensions);
}

std::string PaddingConfigToString(const PaddingConfig& config) {
  std::vector<std::string> parts;
  bool interior = false;
  for (const auto& d : config.dimensions) interior |= d.interior_padding != 0;
  for (const auto& d : config.dimensions) {
    if (interior) parts.push_back(fmt::format("{}_{}_{}", d.edge_padding_low, d.edge_padding_high, d.interior_padding));
    else parts.push_back(fmt::format("{}_{}", d.edge_padding_low, d.edge_padding_high));
  }
  return fmt::format("{}", fmt::join(parts, "x"));
}

std::string MetadataToString(const OpMetadata& m) {
  std::vector<std::string> parts;
  auto quoted = [&](std::string_view key, const std::string& v) {
    if (!v.empty()) parts.push_back(fmt::format("{}=\"{}\"", key, CEscape(v)));
  };
  auto number = [&](std::string_view key, int64_t v) {
    if (v != 0) parts.push_back(fmt::format("{}={}", key, v));
  };
  quoted("op_type", m.op_type);
  quoted("op_name", m.op_name);
  quoted("source_file", m.source_file);
  number("source_line", m.source_line);
  number("source_end_line", m.source_end_line);
  number("source_column", m.source_column);
  number("source_end_column", m.source_end_column);
  if (!m.profile_type.empty()) parts.push_back("profile_type=" + Braced(m.profile_type));
  quoted("deduplicated_name", m.deduplicated_name);
  number("stack_frame_id", m.stack_frame_id);
  quoted("scheduling_name", m.scheduling_name);
  for (const auto& [k, v] : m.unknown_fields) parts.push_back(fmt::format("{}={}", k, v));
  return fmt::format("{{{}}}", fmt::join(parts, " "));
}

std::string ShardingToString(const Sharding& s) {
  if (s.type == Sharding::Type::kTuple) {
    std::vector<std::string> parts;
    parts.reserve(s.tuple.size());
    for (const auto& e : s.tuple) parts.push_back(ShardingToString(e));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  return "{" + ShardingBody(s) + "}";
}

std::string ReplicaGroupsToString(const CollectiveDeviceList& g) {
  if (!g.mesh.empty()) return g.mesh;
  if (g.iota) {
    std::string out = fmt::format("[{},{}]<=[{}]", g.num_groups, g.group_size, fmt::join(g.iota_reshape_dims, ","));
    if (!g.iota_transpose_perm.empty()) out += fmt::format("T({})", fmt::join(g.iota_transpose_perm, ","));
    return out;
  }
  std::vector<std::string> parts;
  parts.reserve(g.groups.size());
  for (const auto& group : g.groups) parts.push_back(Braced(group));
  return fmt::format("{{{}}}", fmt::join(parts, ","));
}

std::string AttributeValueToString(const Instruction& in, const AttrSpec& spec, const PrintOptions& o) {
  return VisitField(spec.field, in, ValuePrinter{in, spec, o});
}

std::string AttributesToString(const Instruction& in, const PrintOptions& o) {
  std::string out;
  auto add = [&](std::string_view key, const std::string& value) {
    out += ", ";
    out += key;
    out += '=';
    out += value;
  };
  bool calls_printed = false;
  if (in.unknown_opcode.empty()) {
    for (const AttrSpec& spec : OpcodeAttributes(in.opcode)) {
      const bool call = spec.kind() == AttrKind::kComputation || spec.kind() == AttrKind::kComputationList;
      calls_printed |= call && spec.print != AttrPrint::kNever;
      if (ShouldPrint(in, spec)) add(spec.key, AttributeValueToString(in, spec, o));
    }
  }
  // Called computations the opcode's schema has no place for (an unknown opcode read from a proto).
  if (!calls_printed && !in.called_computations.empty()) {
    std::vector<std::string> names;
    names.reserve(in.called_computations.size());
    for (auto* c : in.called_computations) names.push_back(CalledName(c, o));
    add("calls", fmt::format("{}", fmt::join(names, ", ")));
  }
  for (const AttrSpec& spec : GenericAttributes()) {
    if (spec.field == AttrField::kMetadata) {
      if (o.print_unknown_attributes)
        for (const auto& [k, v] : in.rare().unknown_attributes) add(k, v);
      if (!o.print_metadata) continue;
    }
    if (ShouldPrint(in, spec)) add(spec.key, AttributeValueToString(in, spec, o));
  }
  return out;
}

}  // namespace opprobe::hlo
