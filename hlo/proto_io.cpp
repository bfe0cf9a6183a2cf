#include "hlo/proto_io.h"
#include "hlo/quote.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/stubs/logging.h>

#include "hlo.pb.h"
#include "xla_data.pb.h"

namespace opprobe::hlo {
namespace {

// ---------------------------------------------------------------------------------------------------
// Layout suffixes (`:T(8,128)(2,1)E(4)S(1)`) <-> LayoutProto tiles / element_size_in_bits / memory_space.

Status SuffixToLayout(const std::string& suffix, xla::LayoutProto* layout) {
  size_t i = 0;
  if (suffix.empty()) return Status::Ok();
  if (suffix[0] != ':') return Unimplemented(fmt::format("layout suffix {} has no XLA proto form", Quote(suffix)));
  ++i;
  auto read_group = [&](std::vector<int64_t>& out) -> bool {
    if (i >= suffix.size() || suffix[i] != '(') return false;
    ++i;
    while (i < suffix.size() && suffix[i] != ')') {
      size_t start = i;
      bool neg = suffix[i] == '-';
      if (neg) ++i;
      int64_t v = 0;
      while (i < suffix.size() && std::isdigit(static_cast<unsigned char>(suffix[i]))) {
        int digit = suffix[i++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;  // out of int64 range
        v = v * 10 + digit;
      }
      if (i == start) return false;
      out.push_back(neg ? -v : v);
      if (i < suffix.size() && suffix[i] == ',') ++i;
    }
    if (i >= suffix.size()) return false;
    ++i;
    return true;
  };
  while (i < suffix.size()) {
    char c = suffix[i++];
    if (c == 'T') {
      std::vector<int64_t> dims;
      if (!read_group(dims)) break;
      do {
        auto* tile = layout->add_tiles();
        for (int64_t d : dims) tile->add_dimensions(d);
        dims.clear();
      } while (i < suffix.size() && suffix[i] == '(' && read_group(dims));
      continue;
    }
    std::vector<int64_t> v;
    if ((c == 'E' || c == 'S') && read_group(v) && v.size() == 1) {
      if (c == 'E') layout->set_element_size_in_bits(v[0]);
      else layout->set_memory_space(v[0]);
      continue;
    }
    return Unimplemented(fmt::format("layout suffix {} has no XLA proto form here", Quote(suffix)));
  }
  if (i != suffix.size()) return Unimplemented(fmt::format("layout suffix {} has no XLA proto form here", Quote(suffix)));
  return Status::Ok();
}

std::string LayoutToSuffix(const xla::LayoutProto& layout) {
  std::string s;
  if (layout.tiles_size()) {
    s += "T";
    for (const auto& t : layout.tiles()) s += fmt::format("({})", fmt::join(t.dimensions(), ","));
  }
  if (layout.element_size_in_bits()) s += fmt::format("E({})", layout.element_size_in_bits());
  if (layout.memory_space()) s += fmt::format("S({})", layout.memory_space());
  return s.empty() ? s : ":" + s;
}

// ---------------------------------------------------------------------------------------------------
// Writing

Status WriteShape(const Shape& shape, xla::ShapeProto* p, int depth = 0) {
  if (depth > 64) return InvalidInput("shape nested too deeply");
  p->set_element_type(static_cast<xla::PrimitiveType>(static_cast<int>(shape.element_type())));
  if (shape.IsTuple()) {
    for (const auto& e : shape.tuple_shapes()) OPPROBE_RETURN_IF_ERROR(WriteShape(e, p->add_tuple_shapes(), depth + 1));
    return Status::Ok();
  }
  for (int i = 0; i < shape.rank(); ++i) {
    p->add_dimensions(shape.dimensions(i));
    p->add_is_dynamic_dimension(shape.is_dynamic_dimension(i));
  }
  if (shape.IsArray() && shape.has_layout()) {
    auto* layout = p->mutable_layout();
    for (int64_t d : shape.minor_to_major()) layout->add_minor_to_major(d);
    OPPROBE_RETURN_IF_ERROR(SuffixToLayout(shape.layout_suffix(), layout));
  }
  return Status::Ok();
}

template <typename T>
std::string RawBytes(const Literal& l) {
  return std::string(reinterpret_cast<const char*>(l.data().data()), l.data().size());
}

Status WriteLiteral(const Literal& l, xla::LiteralProto* p) {
  OPPROBE_RETURN_IF_ERROR(WriteShape(l.shape(), p->mutable_shape()));
  if (l.shape().IsTuple()) {
    for (const auto& e : l.tuple_elements()) OPPROBE_RETURN_IF_ERROR(WriteLiteral(e, p->add_tuple_literals()));
    return Status::Ok();
  }
  if (l.elided() || !l.shape().IsArray()) return Status::Ok();  // an elided literal: shape only
  const int64_t n = l.shape().elements();
  if (l.data().size() != static_cast<size_t>(n) * static_cast<size_t>(ByteWidth(l.shape().element_type())))
    return Internal("literal data does not match its shape");
  switch (l.shape().element_type()) {
    case PrimitiveType::PRED:
      for (int64_t i = 0; i < n; ++i) p->add_preds(l.Get<uint8_t>(i) != 0);
      break;
    case PrimitiveType::S4: p->set_s4s(RawBytes<int8_t>(l)); break;
    case PrimitiveType::U4: p->set_u4s(RawBytes<uint8_t>(l)); break;
    case PrimitiveType::S8: p->set_s8s(RawBytes<int8_t>(l)); break;
    case PrimitiveType::U8: p->set_u8s(RawBytes<uint8_t>(l)); break;
    case PrimitiveType::S16: p->set_s16s(RawBytes<int16_t>(l)); break;
    case PrimitiveType::U16: p->set_u16s(RawBytes<uint16_t>(l)); break;
    case PrimitiveType::F16: p->set_f16s(RawBytes<uint16_t>(l)); break;
    case PrimitiveType::BF16: p->set_bf16s(RawBytes<uint16_t>(l)); break;
    case PrimitiveType::F8E5M2: p->set_f8e5m2s(RawBytes<uint8_t>(l)); break;
    case PrimitiveType::F8E4M3FN: p->set_f8e4m3fns(RawBytes<uint8_t>(l)); break;
    case PrimitiveType::F8E4M3B11FNUZ: p->set_f8e4m3b11fnuzs(RawBytes<uint8_t>(l)); break;
    case PrimitiveType::F8E5M2FNUZ: p->set_f8e5m2fnuzs(RawBytes<uint8_t>(l)); break;
    case PrimitiveType::F8E4M3FNUZ: p->set_f8e4m3fnuzs(RawBytes<uint8_t>(l)); break;
    case PrimitiveType::S32:
      for (int64_t i = 0; i < n; ++i) p->add_s32s(l.Get<int32_t>(i));
      break;
    case PrimitiveType::S64:
      for (int64_t i = 0; i < n; ++i) p->add_s64s(l.Get<int64_t>(i));
      break;
    case PrimitiveType::U32:
      for (int64_t i = 0; i < n; ++i) p->add_u32s(l.Get<uint32_t>(i));
      break;
    case PrimitiveType::U64:
      for (int64_t i = 0; i < n; ++i) p->add_u64s(l.Get<uint64_t>(i));
      break;
    case PrimitiveType::F32:
      for (int64_t i = 0; i < n; ++i) p->add_f32s(l.Get<float>(i));
      break;
    case PrimitiveType::F64:
      for (int64_t i = 0; i < n; ++i) p->add_f64s(l.Get<double>(i));
      break;
    case PrimitiveType::C64:
      for (int64_t i = 0; i < 2 * n; ++i) p->add_c64s(l.Get<float>(i));
      break;
    case PrimitiveType::C128:
      for (int64_t i = 0; i < 2 * n; ++i) p->add_c128s(l.Get<double>(i));
      break;
    default:
      return Unimplemented(fmt::format("literal of type {}", PrimitiveTypeName(l.shape().element_type())));
  }
  return Status::Ok();
}

// `{a="b",c="d"}` -> map; false when the text is not that form.
bool ParseFrontendAttributes(const std::string& text, google::protobuf::Map<std::string, std::string>* out) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return false;
  size_t i = 1;
  while (i < text.size() - 1) {
    size_t eq = text.find('=', i);
    if (eq == std::string::npos) return false;
    std::string key = text.substr(i, eq - i);
    i = eq + 1;
    if (i >= text.size() || text[i] != '"') return false;
    ++i;
    std::string value;
    while (i < text.size() && text[i] != '"') {
      if (text[i] == '\\' && i + 1 < text.size()) ++i;
      value += text[i++];
    }
    if (i >= text.size()) return false;
    ++i;
    (*out)[key] = value;
    if (i < text.size() - 1 && text[i] == ',') ++i;
  }
  return true;
}

// `{}`, `{ {0,1},{2,3} }`, `{{0,1}}` -> replica groups.
bool ParseReplicaGroups(const std::string& text, xla::HloInstructionProto* p) {
  std::string t;
  for (char c : text)
    if (c != ' ') t += c;
  if (t.size() < 2 || t.front() != '{' || t.back() != '}') return false;
  t = t.substr(1, t.size() - 2);
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] == ',') {
      ++i;
      continue;
    }
    if (t[i] != '{') return false;
    size_t close = t.find('}', i);
    if (close == std::string::npos) return false;
    auto* g = p->add_replica_groups();
    std::string body = t.substr(i + 1, close - i - 1);
    size_t b = 0;
    while (b < body.size()) {
      size_t c = body.find(',', b);
      std::string num = body.substr(b, c == std::string::npos ? std::string::npos : c - b);
      char* e = nullptr;
      long long v = std::strtoll(num.c_str(), &e, 10);
      if (num.empty() || !e || *e) return false;
      g->add_replica_ids(v);
      if (c == std::string::npos) break;
      b = c + 1;
    }
    i = close + 1;
  }
  return true;
}

// XLA fields for attributes the IR keeps as text (best effort; the text is written verbatim as well).
void WriteKnownExtra(const Instruction& in, const std::string& key, const std::string& value,
                     xla::HloInstructionProto* p) {
  if (key == "frontend_attributes") {
    ParseFrontendAttributes(value, p->mutable_frontend_attributes()->mutable_map());
  } else if (key == "sharding") {
    if (value == "{replicated}") {
      p->mutable_sharding()->set_type(xla::OpSharding::REPLICATED);
    } else if (value == "{manual}") {
      p->mutable_sharding()->set_type(xla::OpSharding::MANUAL);
    } else if (value.rfind("{maximal device=", 0) == 0) {
      p->mutable_sharding()->set_type(xla::OpSharding::MAXIMAL);
      p->mutable_sharding()->add_tile_assignment_dimensions(1);
      p->mutable_sharding()->add_tile_assignment_devices(std::strtoll(value.c_str() + 16, nullptr, 10));
    }
  } else if (key == "api_version" && in.opcode == Opcode::kCustomCall) {
    xla::CustomCallApiVersion v;
    if (xla::CustomCallApiVersion_Parse(value, &v)) p->set_custom_call_api_version(v);
  } else if (key == "channel_id") {
    p->set_channel_id(std::strtoll(value.c_str(), nullptr, 10));
  } else if (key == "replica_groups") {
    ParseReplicaGroups(value, p);
  } else if (key == "constrain_layout") {
    p->set_constrain_layout(value == "true");
  } else if (key == "use_global_device_ids") {
    p->set_use_global_device_ids(value == "true");
  } else if (key == "custom_call_has_side_effect") {
    p->set_custom_call_has_side_effect(value == "true");
  } else if (key == "backend_config" && !value.empty()) {
    if (value.front() == '"') {
      std::string out;
      for (size_t i = 1; i + 1 < value.size(); ++i) {
        if (value[i] == '\\' && i + 2 < value.size()) ++i;
        out += value[i];
      }
      p->set_backend_config(out);
    } else {
      p->set_backend_config(value);
    }
  }
}

struct Ids {
  std::unordered_map<const Instruction*, int64_t> instr;
  std::unordered_map<const Computation*, int64_t> comp;
  std::vector<const Computation*> order;  // callees before callers
};

Expected<Ids> AssignProtoIds(const Module& m) {
  Ids ids;
  std::unordered_map<const Computation*, int> state;
  std::function<Status(const Computation*, int)> visit = [&](const Computation* c, int depth) -> Status {
    if (depth > 1000) return InvalidInput("call graph nested too deeply");
    int& s = state[c];
    if (s == 2) return Status::Ok();
    if (s == 1) return InvalidInput(fmt::format("computation {} calls itself", c->name()));
    s = 1;
    for (const auto& i : c->instructions())
      for (const Computation* callee : i->called_computations) {
        if (!callee) return InvalidInput(fmt::format("instruction {} has a null called computation", i->name));
        OPPROBE_RETURN_IF_ERROR(visit(callee, depth + 1));
      }
    state[c] = 2;
    ids.order.push_back(c);
    return Status::Ok();
  };
  for (const auto& c : m.computations()) OPPROBE_RETURN_IF_ERROR(visit(c.get(), 0));
  int64_t next_comp = 1, next_instr = 1;
  for (const Computation* c : ids.order) {
    ids.comp[c] = next_comp++;
    for (const auto& i : c->instructions()) ids.instr[i.get()] = next_instr++;
  }
  return ids;
}

Status WriteInstruction(const Instruction& in, const Ids& ids, xla::HloInstructionProto* p) {
  auto where = [&](const Status& st) { return st.WithContext(fmt::format("instruction {}", in.name)); };
  p->set_name(in.name);
  p->set_opcode(in.unknown_opcode.empty() ? std::string(OpcodeName(in.opcode)) : in.unknown_opcode);
  OPPROBE_RETURN_IF_ERROR(where(WriteShape(in.shape, p->mutable_shape())));
  p->set_id(ids.instr.at(&in));
  for (const Instruction* op : in.operands) {
    auto it = ids.instr.find(op);
    if (it == ids.instr.end()) return InvalidInput(fmt::format("instruction {}: operand outside the module", in.name));
    p->add_operand_ids(it->second);
  }
  for (const Computation* c : in.called_computations) p->add_called_computation_ids(ids.comp.at(c));
  if (!in.metadata.empty()) {
    auto* md = p->mutable_metadata();
    md->set_op_type(in.metadata.op_type);
    md->set_op_name(in.metadata.op_name);
    md->set_source_file(in.metadata.source_file);
    md->set_source_line(in.metadata.source_line);
  }
  const Opcode op = in.opcode;
  const bool known = in.unknown_opcode.empty();
  if (op == Opcode::kParameter) p->set_parameter_number(in.parameter_number);
  if (op == Opcode::kConstant && known && in.literal) OPPROBE_RETURN_IF_ERROR(where(WriteLiteral(*in.literal, p->mutable_literal())));
  if (op == Opcode::kIota) p->add_dimensions(in.iota_dimension);  // XLA keeps iota_dimension in `dimensions`
  else
    for (int64_t d : in.dimensions) p->add_dimensions(d);
  if (op == Opcode::kGetTupleElement) p->set_tuple_index(in.tuple_index);
  if (in.window) {
    for (const auto& d : in.window->dimensions) {
      auto* w = p->mutable_window()->add_dimensions();
      w->set_size(d.size);
      w->set_stride(d.stride);
      w->set_padding_low(d.padding_low);
      w->set_padding_high(d.padding_high);
      w->set_window_dilation(d.window_dilation);
      w->set_base_dilation(d.base_dilation);
      w->set_window_reversal(d.window_reversal);
    }
    if (in.window->dimensions.empty()) p->mutable_window();
  }
  if (in.convolution_dimension_numbers) {
    const auto& d = *in.convolution_dimension_numbers;
    auto* c = p->mutable_convolution_dimension_numbers();
    c->set_input_batch_dimension(d.input_batch_dimension);
    c->set_input_feature_dimension(d.input_feature_dimension);
    for (int64_t v : d.input_spatial_dimensions) c->add_input_spatial_dimensions(v);
    c->set_kernel_input_feature_dimension(d.kernel_input_feature_dimension);
    c->set_kernel_output_feature_dimension(d.kernel_output_feature_dimension);
    for (int64_t v : d.kernel_spatial_dimensions) c->add_kernel_spatial_dimensions(v);
    c->set_output_batch_dimension(d.output_batch_dimension);
    c->set_output_feature_dimension(d.output_feature_dimension);
    for (int64_t v : d.output_spatial_dimensions) c->add_output_spatial_dimensions(v);
  }
  if (op == Opcode::kConvolution) {
    p->set_feature_group_count(in.feature_group_count);
    p->set_batch_group_count(in.batch_group_count);
  }
  if (!in.operand_precision.empty())
    for (auto pr : in.operand_precision)
      p->mutable_precision_config()->add_operand_precision(static_cast<xla::PrecisionConfig::Precision>(pr));
  if (in.dot_dimension_numbers) {
    const auto& d = *in.dot_dimension_numbers;
    auto* x = p->mutable_dot_dimension_numbers();
    for (int64_t v : d.lhs_contracting_dimensions) x->add_lhs_contracting_dimensions(v);
    for (int64_t v : d.rhs_contracting_dimensions) x->add_rhs_contracting_dimensions(v);
    for (int64_t v : d.lhs_batch_dimensions) x->add_lhs_batch_dimensions(v);
    for (int64_t v : d.rhs_batch_dimensions) x->add_rhs_batch_dimensions(v);
  }
  if (in.gather_dimension_numbers) {
    const auto& g = *in.gather_dimension_numbers;
    auto* x = p->mutable_gather_dimension_numbers();
    for (int64_t v : g.offset_dims) x->add_offset_dims(v);
    for (int64_t v : g.collapsed_slice_dims) x->add_collapsed_slice_dims(v);
    for (int64_t v : g.start_index_map) x->add_start_index_map(v);
    x->set_index_vector_dim(g.index_vector_dim);
    for (int64_t v : g.operand_batching_dims) x->add_operand_batching_dims(v);
    for (int64_t v : g.start_indices_batching_dims) x->add_start_indices_batching_dims(v);
  }
  for (int64_t v : in.gather_slice_sizes) p->add_gather_slice_sizes(v);
  if (in.scatter_dimension_numbers) {
    const auto& s = *in.scatter_dimension_numbers;
    auto* x = p->mutable_scatter_dimension_numbers();
    for (int64_t v : s.update_window_dims) x->add_update_window_dims(v);
    for (int64_t v : s.inserted_window_dims) x->add_inserted_window_dims(v);
    for (int64_t v : s.scatter_dims_to_operand_dims) x->add_scatter_dims_to_operand_dims(v);
    x->set_index_vector_dim(s.index_vector_dim);
    for (int64_t v : s.input_batching_dims) x->add_input_batching_dims(v);
    for (int64_t v : s.scatter_indices_batching_dims) x->add_scatter_indices_batching_dims(v);
  }
  p->set_indices_are_sorted(in.indices_are_sorted);
  p->set_unique_indices(in.unique_indices);
  if (in.slice) {
    const auto& s = *in.slice;
    if (s.limits.size() != s.starts.size() || s.strides.size() != s.starts.size())
      return InvalidInput(fmt::format("instruction {}: malformed slice", in.name));
    for (size_t i = 0; i < s.starts.size(); ++i) {
      auto* d = p->add_slice_dimensions();
      d->set_start(s.starts[i]);
      d->set_limit(s.limits[i]);
      d->set_stride(s.strides[i]);
    }
  }
  for (int64_t v : in.dynamic_slice_sizes) p->add_dynamic_slice_sizes(v);
  if (in.padding_config) {
    auto* c = p->mutable_padding_config();
    for (const auto& d : in.padding_config->dimensions) {
      auto* x = c->add_dimensions();
      x->set_edge_padding_low(d.edge_padding_low);
      x->set_edge_padding_high(d.edge_padding_high);
      x->set_interior_padding(d.interior_padding);
    }
  }
  if (op == Opcode::kCompare && known) {
    p->set_comparison_direction(std::string(ComparisonDirectionName(in.comparison_direction)));
    p->set_comparison_type(in.comparison_type);
  }
  if (op == Opcode::kFft) {
    p->set_fft_type(static_cast<xla::FftType>(in.fft_type));
    for (int64_t v : in.fft_length) p->add_fft_length(v);
  }
  p->set_is_stable(in.is_stable);
  p->set_exponent_bits(in.exponent_bits);
  p->set_mantissa_bits(in.mantissa_bits);
  p->set_distribution(static_cast<xla::RandomDistribution>(in.distribution));
  if (op == Opcode::kRngBitGenerator) {
    p->set_rng_algorithm(in.rng_algorithm == "rng_three_fry" ? xla::RNG_THREE_FRY
                         : in.rng_algorithm == "rng_philox"  ? xla::RNG_PHILOX
                                                             : xla::RNG_DEFAULT);
  }
  p->set_epsilon(in.epsilon);
  p->set_feature_index(in.feature_index);
  if (known && op == Opcode::kCustomCall) {
    p->set_custom_call_target(in.custom_call_target);
    p->set_backend_config(in.backend_config);
    p->set_custom_call_api_version(xla::API_VERSION_ORIGINAL);  // XLA's default; api_version= text overrides
  }
  if (op == Opcode::kFusion) p->set_fusion_kind(in.fusion_kind.empty() ? "kLoop" : in.fusion_kind);
  if (op == Opcode::kTopK) {
    p->set_k(in.k);
    p->set_largest(in.largest);
  }
  if (op == Opcode::kTriangularSolve) {
    auto* t = p->mutable_triangular_solve_options();
    t->set_left_side(in.triangular_solve_options.left_side);
    t->set_lower(in.triangular_solve_options.lower);
    t->set_unit_diagonal(in.triangular_solve_options.unit_diagonal);
    t->set_transpose_a(static_cast<xla::TriangularSolveOptions::Transpose>(in.triangular_solve_options.transpose_a));
  }
  if (op == Opcode::kCholesky) p->mutable_cholesky_options()->set_lower(in.cholesky_lower);
  for (const auto& [k, v] : in.extra_attributes) {
    WriteKnownExtra(in, k, v, p);
    auto* t = p->add_opprobe_text_attributes();
    t->set_key(k);
    t->set_value(v);
  }
  return Status::Ok();
}

Status WriteProgramShape(const Computation& c, xla::ProgramShapeProto* p) {
  for (const Instruction* param : c.parameters()) {
    OPPROBE_RETURN_IF_ERROR(WriteShape(param->shape, p->add_parameters()));
    p->add_parameter_names(param->name);
  }
  if (c.root()) OPPROBE_RETURN_IF_ERROR(WriteShape(c.root()->shape, p->mutable_result()));
  return Status::Ok();
}

// `{ {0}: (41, {}, must-alias), {1}: (2, {0}, may-alias) }` -> alias entries; false when not that form.
bool ParseInputOutputAlias(const std::string& text, xla::HloInputOutputAliasProto* out) {
  std::string t;
  for (char c : text)
    if (c != ' ') t += c;
  if (t.size() < 2 || t.front() != '{' || t.back() != '}') return false;
  size_t i = 1;
  auto read_index = [&](google::protobuf::RepeatedField<int64_t>* idx) -> bool {
    if (i >= t.size() || t[i] != '{') return false;
    size_t close = t.find('}', i);
    if (close == std::string::npos) return false;
    std::string body = t.substr(i + 1, close - i - 1);
    size_t b = 0;
    while (b < body.size()) {
      size_t c = body.find(',', b);
      idx->Add(std::strtoll(body.substr(b, c == std::string::npos ? std::string::npos : c - b).c_str(), nullptr, 10));
      if (c == std::string::npos) break;
      b = c + 1;
    }
    i = close + 1;
    return true;
  };
  while (i < t.size() - 1) {
    auto* e = out->add_entries();
    if (!read_index(e->mutable_output_shape_index())) return false;
    if (t.compare(i, 2, ":(") != 0) return false;
    i += 2;
    size_t comma = t.find(',', i);
    if (comma == std::string::npos) return false;
    e->set_parameter_number(std::strtoll(t.substr(i, comma - i).c_str(), nullptr, 10));
    i = comma + 1;
    if (!read_index(e->mutable_parameter_shape_index())) return false;
    if (t.compare(i, 11, ",must-alias") == 0) {
      e->set_kind(xla::MUST_ALIAS);
      i += 11;
    } else if (t.compare(i, 10, ",may-alias") == 0) {
      e->set_kind(xla::MAY_ALIAS);
      i += 10;
    } else {
      e->set_kind(xla::MAY_ALIAS);
    }
    if (i >= t.size() || t[i] != ')') return false;
    ++i;
    if (i < t.size() - 1 && t[i] == ',') ++i;
  }
  return true;
}

Status FillModuleProto(const Module& m, xla::HloModuleProto* p, bool unique_names = false) {
  OPPROBE_ASSIGN_OR_RETURN(Ids ids, AssignProtoIds(m));
  p->set_name(m.name());
  p->set_id(m.id);
  for (const Computation* c : ids.order) {
    auto* cp = p->add_computations();
    cp->set_name(c->name());
    cp->set_id(ids.comp.at(c));
    cp->set_is_fusion_computation(c->is_fusion_computation);
    if (c->instructions().empty()) return InvalidInput(fmt::format("computation {} has no instructions", c->name()));
    for (const auto& i : c->instructions())
      OPPROBE_RETURN_IF_ERROR(
          WriteInstruction(*i, ids, cp->add_instructions()).WithContext(fmt::format("computation {}", c->name())));
    const Instruction* root = c->root() ? c->root() : c->instructions().back().get();
    cp->set_root_id(ids.instr.at(root));
    OPPROBE_RETURN_IF_ERROR(WriteProgramShape(*c, cp->mutable_program_shape()));
  }
  // XLA requires instruction names to be unique across the module (HloModule::CreateFromProto rejects a
  // repeat); the IR keeps them unique per computation only, so with unique_names a later repeat gets a `.N` suffix.
  if (unique_names) {
    std::unordered_set<std::string> taken, seen;
    for (const auto& cp : p->computations())
      for (const auto& ip : cp.instructions()) taken.insert(ip.name());
    for (auto& cp : *p->mutable_computations())
      for (auto& ip : *cp.mutable_instructions()) {
        if (seen.insert(ip.name()).second) continue;
        for (int k = 1;; ++k) {
          std::string fresh = fmt::format("{}.{}", ip.name(), k);
          if (taken.insert(fresh).second) {
            seen.insert(fresh);
            ip.set_name(fresh);
            break;
          }
        }
      }
  }
  if (!m.entry()) return InvalidInput(fmt::format("module {} has no entry computation", m.name()));
  p->set_entry_computation_name(m.entry()->name());
  p->set_entry_computation_id(ids.comp.at(m.entry()));
  OPPROBE_RETURN_IF_ERROR(WriteProgramShape(*m.entry(), p->mutable_host_program_shape()));
  for (const auto& [k, v] : m.header_attributes) {
    auto* t = p->add_opprobe_header_attributes();
    t->set_key(k);
    t->set_value(v);
    if (k == "is_scheduled" && v == "true") {
      for (const Computation* c : ids.order) {
        auto& seq = (*p->mutable_schedule()->mutable_sequences())[ids.comp.at(c)];
        for (const auto& i : c->instructions()) seq.add_instruction_ids(ids.instr.at(i.get()));
      }
    } else if (k == "input_output_alias") {
      xla::HloInputOutputAliasProto alias;
      if (ParseInputOutputAlias(v, &alias)) *p->mutable_input_output_alias() = alias;
    } else if (k == "frontend_attributes") {
      ParseFrontendAttributes(v, p->mutable_frontend_attributes()->mutable_map());
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------------
// Reading

Expected<Shape> ReadShape(const xla::ShapeProto& p, int depth = 0) {
  if (depth > 64) return InvalidInput("shape nested too deeply");
  int t = static_cast<int>(p.element_type());
  auto type = static_cast<PrimitiveType>(t);
  if (type == PrimitiveType::TUPLE) {
    std::vector<Shape> elements;
    for (const auto& e : p.tuple_shapes()) {
      OPPROBE_ASSIGN_OR_RETURN(Shape s, ReadShape(e, depth + 1));
      elements.push_back(std::move(s));
    }
    return Shape::Tuple(std::move(elements));
  }
  if (type == PrimitiveType::TOKEN) return Shape::Token();
  if (PrimitiveTypeName(type) == "invalid")
    return InvalidInput(fmt::format("unsupported element type {} ({})", xla::PrimitiveType_Name(p.element_type()), t));
  Shape s;
  s.set_element_type(type);
  for (int64_t d : p.dimensions()) {
    if (d < 0) return InvalidInput("negative dimension in shape");
    s.mutable_dimensions().push_back(d);
  }
  for (int i = 0; i < p.is_dynamic_dimension_size() && i < s.rank(); ++i)
    if (p.is_dynamic_dimension(i)) s.set_dynamic_dimension(i, true);
  if (s.IsArray()) {
    auto n = s.ElementCount();
    if (!n.ok()) return n.status();
  }
  if (p.has_layout() && s.IsArray()) {
    std::vector<int64_t> m2m(p.layout().minor_to_major().begin(), p.layout().minor_to_major().end());
    if (static_cast<int>(m2m.size()) != s.rank())
      return InvalidInput(fmt::format("layout has {} entries for shape {}", m2m.size(), s.ToString(false)));
    std::vector<bool> seen(m2m.size(), false);
    for (int64_t d : m2m) {
      if (d < 0 || d >= s.rank() || seen[static_cast<size_t>(d)])
        return InvalidInput(fmt::format("layout of shape {} is not a permutation", s.ToString(false)));
      seen[static_cast<size_t>(d)] = true;
    }
    s.set_layout(std::move(m2m));
    s.set_layout_suffix(LayoutToSuffix(p.layout()));
  }
  return s;
}

template <typename T, typename Src>
void CopyRepeated(const Src& src, Literal& l) {
  for (int i = 0; i < src.size(); ++i) l.Set<T>(i, static_cast<T>(src.Get(i)));
}

Expected<Literal> ReadLiteral(const xla::LiteralProto& p, const Shape& declared, int depth = 0) {
  if (depth > 64) return InvalidInput("literal nested too deeply");
  OPPROBE_ASSIGN_OR_RETURN(Shape shape, p.has_shape() ? ReadShape(p.shape()) : Expected<Shape>(declared));
  if (shape.IsTuple()) {
    if (static_cast<size_t>(p.tuple_literals_size()) != shape.tuple_shapes().size())
      return InvalidInput("tuple literal does not match its shape");
    std::vector<Literal> elements;
    for (int i = 0; i < p.tuple_literals_size(); ++i) {
      OPPROBE_ASSIGN_OR_RETURN(Literal e, ReadLiteral(p.tuple_literals(i), shape.tuple_shapes()[static_cast<size_t>(i)], depth + 1));
      elements.push_back(std::move(e));
    }
    Literal l = Literal::Tuple(std::move(elements));
    l.mutable_shape() = shape;
    return l;
  }
  if (!shape.IsArray()) {
    Literal l;
    l.mutable_shape() = shape;
    return l;
  }
  const int64_t n = shape.elements();
  const PrimitiveType t = shape.element_type();
  // How many elements the proto carries for this type.
  int64_t have = 0;
  std::string_view bytes;
  switch (t) {
    case PrimitiveType::PRED: have = p.preds_size(); break;
    case PrimitiveType::S32: have = p.s32s_size(); break;
    case PrimitiveType::S64: have = p.s64s_size(); break;
    case PrimitiveType::U32: have = p.u32s_size(); break;
    case PrimitiveType::U64: have = p.u64s_size(); break;
    case PrimitiveType::F32: have = p.f32s_size(); break;
    case PrimitiveType::F64: have = p.f64s_size(); break;
    case PrimitiveType::C64: have = p.c64s_size() / 2; break;
    case PrimitiveType::C128: have = p.c128s_size() / 2; break;
    case PrimitiveType::S4: bytes = p.s4s(); break;
    case PrimitiveType::U4: bytes = p.u4s(); break;
    case PrimitiveType::S8: bytes = p.s8s(); break;
    case PrimitiveType::U8: bytes = p.u8s(); break;
    case PrimitiveType::S16: bytes = p.s16s(); break;
    case PrimitiveType::U16: bytes = p.u16s(); break;
    case PrimitiveType::F16: bytes = p.f16s(); break;
    case PrimitiveType::BF16: bytes = p.bf16s(); break;
    case PrimitiveType::F8E5M2: bytes = p.f8e5m2s(); break;
    case PrimitiveType::F8E4M3FN: bytes = p.f8e4m3fns(); break;
    case PrimitiveType::F8E4M3B11FNUZ: bytes = p.f8e4m3b11fnuzs(); break;
    case PrimitiveType::F8E5M2FNUZ: bytes = p.f8e5m2fnuzs(); break;
    case PrimitiveType::F8E4M3FNUZ: bytes = p.f8e4m3fnuzs(); break;
    default: return InvalidInput(fmt::format("literal of type {} is not supported", PrimitiveTypeName(t)));
  }
  const int width = ByteWidth(t);
  if (!bytes.empty()) have = static_cast<int64_t>(bytes.size()) / width;
  if (have == 0 && n != 0) {  // a literal without values: printed as {...}
    Literal l;
    l.mutable_shape() = shape;
    l.set_elided(true);
    return l;
  }
  if (have != n || (!bytes.empty() && bytes.size() != static_cast<size_t>(n) * static_cast<size_t>(width)))
    return InvalidInput(fmt::format("literal of shape {} holds {} values, needs {}", shape.ToString(), have, n));
  Literal l(shape);
  switch (t) {
    case PrimitiveType::PRED:
      for (int64_t i = 0; i < n; ++i) l.Set<uint8_t>(i, p.preds(static_cast<int>(i)) ? 1 : 0);
      break;
    case PrimitiveType::S32: CopyRepeated<int32_t>(p.s32s(), l); break;
    case PrimitiveType::S64: CopyRepeated<int64_t>(p.s64s(), l); break;
    case PrimitiveType::U32: CopyRepeated<uint32_t>(p.u32s(), l); break;
    case PrimitiveType::U64: CopyRepeated<uint64_t>(p.u64s(), l); break;
    case PrimitiveType::F32: CopyRepeated<float>(p.f32s(), l); break;
    case PrimitiveType::F64: CopyRepeated<double>(p.f64s(), l); break;
    case PrimitiveType::C64: CopyRepeated<float>(p.c64s(), l); break;
    case PrimitiveType::C128: CopyRepeated<double>(p.c128s(), l); break;
    default: std::memcpy(l.data().data(), bytes.data(), bytes.size());
  }
  // Proto values follow the literal's layout; the IR holds them row-major.
  const auto& m2m = shape.minor_to_major();
  bool row_major = true;
  for (size_t k = 0; k < m2m.size(); ++k)
    if (m2m[k] != static_cast<int64_t>(m2m.size() - 1 - k)) row_major = false;
  if (shape.has_layout() && !row_major && n > 0) {
    Literal out(shape);
    const int rank = shape.rank();
    const size_t ew = static_cast<size_t>(t == PrimitiveType::C64 ? 8 : t == PrimitiveType::C128 ? 16 : width);
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    for (int64_t lin = 0; lin < n; ++lin) {
      // idx: multi-index of the lin-th element in layout order (minor dimension fastest).
      int64_t row = 0;
      for (int d = 0; d < rank; ++d) row = row * shape.dimensions(d) + idx[static_cast<size_t>(d)];
      std::memcpy(out.data().data() + row * static_cast<int64_t>(ew), l.data().data() + lin * static_cast<int64_t>(ew), ew);
      for (size_t k = 0; k < m2m.size(); ++k) {
        size_t d = static_cast<size_t>(m2m[k]);
        if (++idx[d] < shape.dimensions(static_cast<int>(d))) break;
        idx[d] = 0;
      }
    }
    return out;
  }
  return l;
}

std::string QuoteIfNeeded(const std::string& v) {
  if (v.size() >= 2 && v.front() == '{' && v.back() == '}') return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool IsCollective(Opcode op) {
  switch (op) {
    case Opcode::kAllReduce: case Opcode::kAllReduceStart: case Opcode::kAllGather: case Opcode::kAllGatherStart:
    case Opcode::kAllToAll: case Opcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

// Attributes of an XLA-written proto (no opprobe text) that the IR keeps as text, as XLA prints them.
void DeriveExtras(const xla::HloInstructionProto& p, Instruction& in) {
  auto& x = in.extra_attributes;
  if (in.opcode == Opcode::kCustomCall && in.unknown_opcode.empty() &&
      p.custom_call_api_version() != xla::API_VERSION_ORIGINAL)
    x.emplace_back("api_version", xla::CustomCallApiVersion_Name(p.custom_call_api_version()));
  if (p.custom_call_has_side_effect()) x.emplace_back("custom_call_has_side_effect", "true");
  if (p.channel_id() > 0) x.emplace_back("channel_id", std::to_string(p.channel_id()));
  if (IsCollective(in.opcode)) {
    std::vector<std::string> groups;
    for (const auto& g : p.replica_groups()) groups.push_back(fmt::format("{{{}}}", fmt::join(g.replica_ids(), ",")));
    x.emplace_back("replica_groups", groups.empty() ? "{}" : fmt::format("{{{}}}", fmt::join(groups, ",")));
    if (p.constrain_layout()) x.emplace_back("constrain_layout", "true");
    if (p.use_global_device_ids()) x.emplace_back("use_global_device_ids", "true");
  }
  if (p.has_sharding()) {
    const auto& s = p.sharding();
    if (s.type() == xla::OpSharding::REPLICATED) x.emplace_back("sharding", "{replicated}");
    else if (s.type() == xla::OpSharding::MANUAL) x.emplace_back("sharding", "{manual}");
    else if (s.type() == xla::OpSharding::MAXIMAL && s.tile_assignment_devices_size() == 1)
      x.emplace_back("sharding", fmt::format("{{maximal device={}}}", s.tile_assignment_devices(0)));
  }
  if (p.has_frontend_attributes() && !p.frontend_attributes().map().empty()) {
    std::map<std::string, std::string> sorted(p.frontend_attributes().map().begin(), p.frontend_attributes().map().end());
    std::vector<std::string> parts;
    for (const auto& [k, v] : sorted) parts.push_back(k + "=" + QuoteIfNeeded(v));
    x.emplace_back("frontend_attributes", fmt::format("{{{}}}", fmt::join(parts, ",")));
  }
  if (!p.backend_config().empty() && !(in.opcode == Opcode::kCustomCall && in.unknown_opcode.empty()))
    x.emplace_back("backend_config", QuoteIfNeeded(p.backend_config()));
}

Status CheckArity(const Instruction& in) {
  if (!in.unknown_opcode.empty() || in.opcode == Opcode::kParameter || in.opcode == Opcode::kConstant)
    return Status::Ok();
  int arity = OpcodeArity(in.opcode);
  if (arity >= 0 && in.operand_count() != arity)
    return InvalidInput(fmt::format("{} takes {} operand(s), has {}", OpcodeName(in.opcode), arity, in.operand_count()));
  return Status::Ok();
}

Expected<std::unique_ptr<Instruction>> ReadInstruction(const xla::HloInstructionProto& p) {
  auto in = std::make_unique<Instruction>();
  in->name = p.name();
  in->id = p.id();
  if (p.opcode().empty()) return InvalidInput("instruction has no opcode");
  if (auto op = OpcodeFromName(p.opcode())) {
    in->opcode = *op;
  } else {
    in->opcode = Opcode::kCustomCall;
    in->unknown_opcode = p.opcode();
  }
  OPPROBE_ASSIGN_OR_RETURN(in->shape, ReadShape(p.shape()));
  const Opcode op = in->opcode;
  const bool known = in->unknown_opcode.empty();
  in->metadata.op_type = p.metadata().op_type();
  in->metadata.op_name = p.metadata().op_name();
  in->metadata.source_file = p.metadata().source_file();
  in->metadata.source_line = p.metadata().source_line();
  in->parameter_number = p.parameter_number();
  if (op == Opcode::kParameter && in->parameter_number < 0) return InvalidInput("negative parameter number");
  if (op == Opcode::kConstant && known) {
    if (p.has_literal()) {
      OPPROBE_ASSIGN_OR_RETURN(Literal lit, ReadLiteral(p.literal(), in->shape));
      in->literal = std::move(lit);
    } else {
      Literal lit;
      lit.mutable_shape() = in->shape;
      lit.set_elided(true);
      in->literal = std::move(lit);
    }
  }
  if (op == Opcode::kIota) {
    in->iota_dimension = p.dimensions_size() ? p.dimensions(0) : 0;
  } else {
    in->dimensions.assign(p.dimensions().begin(), p.dimensions().end());
  }
  in->tuple_index = p.tuple_index();
  if (p.has_window()) {
    Window w;
    for (const auto& d : p.window().dimensions()) {
      WindowDimension wd;
      wd.size = d.size();
      wd.stride = d.stride();
      wd.padding_low = d.padding_low();
      wd.padding_high = d.padding_high();
      wd.window_dilation = d.window_dilation() ? d.window_dilation() : 1;
      wd.base_dilation = d.base_dilation() ? d.base_dilation() : 1;
      wd.window_reversal = d.window_reversal();
      w.dimensions.push_back(wd);
    }
    in->window = w;
  }
  if (p.has_convolution_dimension_numbers()) {
    const auto& c = p.convolution_dimension_numbers();
    ConvolutionDimensionNumbers d;
    d.input_batch_dimension = c.input_batch_dimension();
    d.input_feature_dimension = c.input_feature_dimension();
    d.input_spatial_dimensions.assign(c.input_spatial_dimensions().begin(), c.input_spatial_dimensions().end());
    d.kernel_input_feature_dimension = c.kernel_input_feature_dimension();
    d.kernel_output_feature_dimension = c.kernel_output_feature_dimension();
    d.kernel_spatial_dimensions.assign(c.kernel_spatial_dimensions().begin(), c.kernel_spatial_dimensions().end());
    d.output_batch_dimension = c.output_batch_dimension();
    d.output_feature_dimension = c.output_feature_dimension();
    d.output_spatial_dimensions.assign(c.output_spatial_dimensions().begin(), c.output_spatial_dimensions().end());
    in->convolution_dimension_numbers = d;
  }
  in->feature_group_count = p.feature_group_count() ? p.feature_group_count() : 1;
  in->batch_group_count = p.batch_group_count() ? p.batch_group_count() : 1;
  for (int v : p.precision_config().operand_precision()) {
    if (v < 0 || v > 2) {
      in->operand_precision.clear();
      break;
    }
    in->operand_precision.push_back(static_cast<PrecisionLevel>(v));
  }
  if (p.has_dot_dimension_numbers()) {
    const auto& x = p.dot_dimension_numbers();
    DotDimensionNumbers d;
    d.lhs_contracting_dimensions.assign(x.lhs_contracting_dimensions().begin(), x.lhs_contracting_dimensions().end());
    d.rhs_contracting_dimensions.assign(x.rhs_contracting_dimensions().begin(), x.rhs_contracting_dimensions().end());
    d.lhs_batch_dimensions.assign(x.lhs_batch_dimensions().begin(), x.lhs_batch_dimensions().end());
    d.rhs_batch_dimensions.assign(x.rhs_batch_dimensions().begin(), x.rhs_batch_dimensions().end());
    in->dot_dimension_numbers = d;
  }
  if (p.has_gather_dimension_numbers()) {
    const auto& x = p.gather_dimension_numbers();
    GatherDimensionNumbers g;
    g.offset_dims.assign(x.offset_dims().begin(), x.offset_dims().end());
    g.collapsed_slice_dims.assign(x.collapsed_slice_dims().begin(), x.collapsed_slice_dims().end());
    g.start_index_map.assign(x.start_index_map().begin(), x.start_index_map().end());
    g.index_vector_dim = x.index_vector_dim();
    g.operand_batching_dims.assign(x.operand_batching_dims().begin(), x.operand_batching_dims().end());
    g.start_indices_batching_dims.assign(x.start_indices_batching_dims().begin(), x.start_indices_batching_dims().end());
    in->gather_dimension_numbers = g;
  }
  in->gather_slice_sizes.assign(p.gather_slice_sizes().begin(), p.gather_slice_sizes().end());
  if (p.has_scatter_dimension_numbers()) {
    const auto& x = p.scatter_dimension_numbers();
    ScatterDimensionNumbers s;
    s.update_window_dims.assign(x.update_window_dims().begin(), x.update_window_dims().end());
    s.inserted_window_dims.assign(x.inserted_window_dims().begin(), x.inserted_window_dims().end());
    s.scatter_dims_to_operand_dims.assign(x.scatter_dims_to_operand_dims().begin(), x.scatter_dims_to_operand_dims().end());
    s.index_vector_dim = x.index_vector_dim();
    s.input_batching_dims.assign(x.input_batching_dims().begin(), x.input_batching_dims().end());
    s.scatter_indices_batching_dims.assign(x.scatter_indices_batching_dims().begin(), x.scatter_indices_batching_dims().end());
    in->scatter_dimension_numbers = s;
  }
  in->indices_are_sorted = p.indices_are_sorted();
  in->unique_indices = p.unique_indices();
  if (op == Opcode::kSlice || p.slice_dimensions_size()) {
    SliceDimensions s;
    for (const auto& d : p.slice_dimensions()) {
      s.starts.push_back(d.start());
      s.limits.push_back(d.limit());
      s.strides.push_back(d.stride() ? d.stride() : 1);
    }
    in->slice = s;
  }
  in->dynamic_slice_sizes.assign(p.dynamic_slice_sizes().begin(), p.dynamic_slice_sizes().end());
  if (p.has_padding_config()) {
    PaddingConfig c;
    for (const auto& d : p.padding_config().dimensions())
      c.dimensions.push_back({d.edge_padding_low(), d.edge_padding_high(), d.interior_padding()});
    in->padding_config = c;
  }
  if (op == Opcode::kCompare && known) {
    auto d = ComparisonDirectionFromName(p.comparison_direction());
    if (!d) return InvalidInput(fmt::format("unknown comparison_direction {}", Quote(p.comparison_direction())));
    in->comparison_direction = *d;
    in->comparison_type = p.comparison_type();
  }
  if (p.fft_type() < 0 || p.fft_type() > 3) return InvalidInput("unknown fft_type");
  in->fft_type = static_cast<FftType>(p.fft_type());
  in->fft_length.assign(p.fft_length().begin(), p.fft_length().end());
  in->is_stable = p.is_stable();
  in->exponent_bits = p.exponent_bits();
  in->mantissa_bits = p.mantissa_bits();
  if (p.distribution() < 0 || p.distribution() > 2) return InvalidInput("unknown distribution");
  in->distribution = static_cast<RandomDistribution>(p.distribution());
  if (op == Opcode::kRngBitGenerator) {
    in->rng_algorithm = p.rng_algorithm() == xla::RNG_THREE_FRY ? "rng_three_fry"
                        : p.rng_algorithm() == xla::RNG_PHILOX  ? "rng_philox"
                                                                : "rng_default";
  }
  in->epsilon = p.epsilon();
  in->feature_index = p.feature_index();
  if (op == Opcode::kCustomCall && known) {
    in->custom_call_target = p.custom_call_target();
    in->backend_config = p.backend_config();
  }
  if (op == Opcode::kFusion) in->fusion_kind = p.fusion_kind();
  in->k = p.k();
  in->largest = op == Opcode::kTopK ? p.largest() : true;
  if (op == Opcode::kTriangularSolve) {
    const auto& t = p.triangular_solve_options();
    in->triangular_solve_options.left_side = t.left_side();
    in->triangular_solve_options.lower = t.lower();
    in->triangular_solve_options.unit_diagonal = t.unit_diagonal();
    // XLA treats an unset (0, TRANSPOSE_INVALID) as an error; we read it as NO_TRANSPOSE.
    if (t.transpose_a() < 0 || t.transpose_a() > 3) return InvalidInput("unknown triangular_solve_options.transpose_a");
    in->triangular_solve_options.transpose_a =
        t.transpose_a() == 0 ? TransposeA::kNoTranspose : static_cast<TransposeA>(t.transpose_a());
  }
  if (op == Opcode::kCholesky) in->cholesky_lower = p.cholesky_options().lower();
  if (p.opprobe_text_attributes_size()) {
    for (const auto& t : p.opprobe_text_attributes()) in->extra_attributes.emplace_back(t.key(), t.value());
  } else {
    DeriveExtras(p, *in);
  }
  return in;
}

Expected<std::unique_ptr<Module>> ReadModule(const xla::HloModuleProto& mp, const std::string& src) {
  auto module = std::make_unique<Module>(mp.name());
  module->id = mp.id();
  std::unordered_map<int64_t, Computation*> comp_by_id;
  std::unordered_map<int64_t, std::pair<Instruction*, Computation*>> instr_by_id;
  struct PendingCalls {
    Instruction* instr;
    const xla::HloInstructionProto* proto;
    Computation* comp;
  };
  std::vector<PendingCalls> pending;
  for (const auto& cp : mp.computations()) {
    std::string cwhere = fmt::format("{}: computation {} (id {})", src, Quote(cp.name()), cp.id());
    if (comp_by_id.count(cp.id())) return InvalidInput(cwhere + ": duplicate computation id");
    if (module->FindComputation(cp.name())) return InvalidInput(cwhere + ": duplicate computation name");
    if (cp.instructions_size() == 0) return InvalidInput(cwhere + ": no instructions");
    auto comp = std::make_unique<Computation>(cp.name());
    comp->id = cp.id();
    comp->is_fusion_computation = cp.is_fusion_computation();
    std::unordered_map<int64_t, size_t> local;  // id -> index in cp.instructions
    std::vector<std::unique_ptr<Instruction>> made;
    std::set<int64_t> params;
    for (int k = 0; k < cp.instructions_size(); ++k) {
      const auto& ip = cp.instructions(k);
      std::string iwhere = fmt::format("{}, instruction {} (id {})", cwhere, Quote(ip.name()), ip.id());
      auto in = ReadInstruction(ip);
      if (!in.ok()) return InvalidInput(iwhere + ": " + in.status().message());
      if (instr_by_id.count(ip.id()) || local.count(ip.id())) return InvalidInput(iwhere + ": duplicate instruction id");
      if ((*in)->opcode == Opcode::kParameter && !params.insert((*in)->parameter_number).second)
        return InvalidInput(iwhere + ": duplicate parameter number");
      local[ip.id()] = static_cast<size_t>(k);
      made.push_back(std::move(*in));
    }
    for (size_t k = 0; k < params.size(); ++k)
      if (!params.count(static_cast<int64_t>(k))) return InvalidInput(fmt::format("{}: no parameter {}", cwhere, k));
    // Operands (same computation only), then operands-before-users order with cycle detection.
    const size_t n = made.size();
    std::vector<std::vector<size_t>> deps(n);
    for (size_t k = 0; k < n; ++k) {
      const auto& ip = cp.instructions(static_cast<int>(k));
      for (int64_t oid : ip.operand_ids()) {
        auto it = local.find(oid);
        if (it == local.end())
          return InvalidInput(fmt::format("{}, instruction {} (id {}): operand id {} is not an instruction of this computation",
                                          cwhere, Quote(ip.name()), ip.id(), oid));
        made[k]->operands.push_back(made[it->second].get());
        deps[k].push_back(it->second);
      }
      auto arity = CheckArity(*made[k]);
      if (!arity.ok()) return InvalidInput(fmt::format("{}, instruction {}: {}", cwhere, Quote(ip.name()), arity.message()));
    }
    std::vector<int> state(n, 0);
    std::vector<size_t> order;
    for (size_t root = 0; root < n; ++root) {
      if (state[root]) continue;
      std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
      state[root] = 1;
      while (!stack.empty()) {
        auto& [k, next] = stack.back();
        if (next < deps[k].size()) {
          size_t d = deps[k][next++];
          if (state[d] == 1)
            return InvalidInput(fmt::format("{}, instruction {} (id {}): operand ids form a cycle", cwhere,
                                            Quote(cp.instructions(static_cast<int>(d)).name()),
                                            cp.instructions(static_cast<int>(d)).id()));
          if (state[d] == 0) {
            state[d] = 1;
            stack.push_back({d, 0});
          }
        } else {
          state[k] = 2;
          order.push_back(k);
          stack.pop_back();
        }
      }
    }
    Computation* c = comp.get();
    std::vector<Instruction*> raw(n);
    for (size_t k = 0; k < n; ++k) raw[k] = made[k].get();
    for (size_t k : order) {
      Instruction* added = comp->AddInstruction(std::move(made[k]));
      instr_by_id[cp.instructions(static_cast<int>(k)).id()] = {added, c};
      pending.push_back({added, &cp.instructions(static_cast<int>(k)), c});
    }
    auto root_it = local.find(cp.root_id());
    if (root_it == local.end()) return InvalidInput(fmt::format("{}: root id {} is not one of its instructions", cwhere, cp.root_id()));
    comp->set_root(raw[root_it->second]);
    comp_by_id[cp.id()] = module->AddComputation(std::move(comp));
  }
  if (module->computations().empty()) return InvalidInput(src + ": module has no computations");
  for (const auto& pc : pending) {
    for (int64_t cid : pc.proto->called_computation_ids()) {
      auto it = comp_by_id.find(cid);
      if (it == comp_by_id.end())
        return InvalidInput(fmt::format("{}: computation {}, instruction {} (id {}): called computation id {} does not exist",
                                        src, Quote(pc.comp->name()), Quote(pc.instr->name), pc.proto->id(), cid));
      pc.instr->called_computations.push_back(it->second);
    }
    if (pc.instr->opcode == Opcode::kWhile && pc.instr->called_computations.size() != 2)
      return InvalidInput(fmt::format("{}: while {} needs a body and a condition", src, Quote(pc.instr->name)));
    if (pc.instr->opcode == Opcode::kSelectAndScatter && pc.instr->called_computations.size() != 2)
      return InvalidInput(fmt::format("{}: select-and-scatter {} needs select and scatter", src, Quote(pc.instr->name)));
  }
  // The call graph must be acyclic.
  std::unordered_map<const Computation*, int> state;
  std::function<Status(const Computation*, int)> visit = [&](const Computation* c, int depth) -> Status {
    if (depth > 1000) return InvalidInput(fmt::format("{}: call graph nested too deeply", src));
    int& s = state[c];
    if (s == 2) return Status::Ok();
    if (s == 1) return InvalidInput(fmt::format("{}: computation {} calls itself (call cycle)", src, Quote(c->name())));
    s = 1;
    for (const auto& i : c->instructions())
      for (const Computation* callee : i->called_computations) OPPROBE_RETURN_IF_ERROR(visit(callee, depth + 1));
    state[c] = 2;
    return Status::Ok();
  };
  for (const auto& c : module->computations()) OPPROBE_RETURN_IF_ERROR(visit(c.get(), 0));
  Computation* entry = nullptr;
  if (auto it = comp_by_id.find(mp.entry_computation_id()); it != comp_by_id.end()) entry = it->second;
  if (!entry && !mp.entry_computation_name().empty()) entry = module->FindComputation(mp.entry_computation_name());
  if (!entry && mp.entry_computation_id() != 0)
    return InvalidInput(fmt::format("{}: entry computation id {} does not exist", src, mp.entry_computation_id()));
  module->set_entry(entry ? entry : module->computations().back().get());
  if (mp.opprobe_header_attributes_size()) {
    for (const auto& t : mp.opprobe_header_attributes()) module->header_attributes.emplace_back(t.key(), t.value());
  } else {
    if (mp.has_schedule() && mp.schedule().sequences_size()) module->header_attributes.emplace_back("is_scheduled", "true");
    if (mp.input_output_alias().entries_size()) {
      std::vector<std::string> parts;
      for (const auto& e : mp.input_output_alias().entries())
        parts.push_back(fmt::format("{{{}}}: ({}, {{{}}}, {})", fmt::join(e.output_shape_index(), ","),
                                    e.parameter_number(), fmt::join(e.parameter_shape_index(), ","),
                                    e.kind() == xla::MUST_ALIAS ? "must-alias" : "may-alias"));
      module->header_attributes.emplace_back("input_output_alias", fmt::format("{{ {} }}", fmt::join(parts, ", ")));
    }
  }
  return module;
}

}  // namespace

Expected<std::string> ModuleToProtoBytes(const Module& module, bool unique_names) {
  xla::HloModuleProto p;
  OPPROBE_RETURN_IF_ERROR(FillModuleProto(module, &p, unique_names).WithContext(fmt::format("module {}", module.name())));
  std::string out;
  if (!p.SerializeToString(&out)) return Internal(fmt::format("module {}: proto serialization failed", module.name()));
  return out;
}

Expected<std::string> ModuleToHloProtoBytes(const Module& module) {
  xla::HloProto p;
  OPPROBE_RETURN_IF_ERROR(FillModuleProto(module, p.mutable_hlo_module()).WithContext(fmt::format("module {}", module.name())));
  std::string out;
  if (!p.SerializeToString(&out)) return Internal(fmt::format("module {}: proto serialization failed", module.name()));
  return out;
}

Expected<std::unique_ptr<Module>> ModuleFromProtoBytes(std::string_view bytes, const std::string& source_name) {
  // Names and strings from the proto reach the message quoted; OneLine is the last guard that it stays one line.
  auto one_line = [](Expected<std::unique_ptr<Module>> m) -> Expected<std::unique_ptr<Module>> {
    if (m.ok()) return m;
    return Status(m.status().code(), OneLine(m.status().message(), 1000));
  };
  if (bytes.empty()) return InvalidInput(source_name + ": empty file, not an HloProto or HloModuleProto");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return InvalidInput(source_name + ": file too large for a protobuf message");
  const int size = static_cast<int>(bytes.size());
  google::protobuf::LogSilencer quiet;  // bad bytes are reported as a Status, not logged by libprotobuf
  {
    xla::HloProto hp;
    if (hp.ParseFromArray(bytes.data(), size) && hp.has_hlo_module() && hp.hlo_module().computations_size() > 0)
      return one_line(ReadModule(hp.hlo_module(), source_name));
  }
  xla::HloModuleProto mp;
  if (!mp.ParseFromArray(bytes.data(), size))
    return InvalidInput(source_name + ": not an HloProto or HloModuleProto (truncated or not protobuf)");
  if (mp.computations_size() == 0)
    return InvalidInput(source_name + ": not an HloProto or HloModuleProto (no computations)");
  return one_line(ReadModule(mp, source_name));
}

}  // namespace opprobe::hlo
