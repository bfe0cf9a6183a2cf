#include "hlo/printer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace opprobe::hlo {
namespace {

std::string_view OpcodeText(const Instruction& in) {
  return in.unknown_opcode.empty() ? OpcodeName(in.opcode) : std::string_view(in.unknown_opcode);
}

std::string Braced(const std::vector<int64_t>& v) { return fmt::format("{{{}}}", fmt::join(v, ",")); }

std::string Name(const std::string& name, const PrintOptions& o) { return o.long_style ? "%" + name : name; }

std::string OperandsToString(const Instruction& instr, const PrintOptions& o) {
  if (instr.opcode == Opcode::kParameter) return std::to_string(instr.parameter_number);
  if (instr.opcode == Opcode::kConstant && instr.unknown_opcode.empty())
    return instr.literal ? LiteralToString(*instr.literal) : "{...}";
  std::string out;
  for (size_t i = 0; i < instr.operands.size(); ++i) {
    if (i) out += ", ";
    if (i && i % 5 == 0) out += fmt::format("/*index={}*/", i);
    const Instruction* op = instr.operands[i];
    if (o.long_style) out += op->shape.ToString() + " ";
    out += Name(op->name, o);
  }
  return out;
}

std::string SliceToString(const SliceDimensions& s) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < s.starts.size(); ++i) {
    if (s.strides[i] == 1) parts.push_back(fmt::format("[{}:{}]", s.starts[i], s.limits[i]));
    else parts.push_back(fmt::format("[{}:{}:{}]", s.starts[i], s.limits[i], s.strides[i]));
  }
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

std::string PrecisionName(PrecisionLevel p) {
  switch (p) {
    case PrecisionLevel::kHigh: return "high";
    case PrecisionLevel::kHighest: return "highest";
    default: return "default";
  }
}

std::string CalledName(const Computation* c, const PrintOptions& o) { return c ? Name(c->name(), o) : "<null>"; }

// Where XLA prints an attribute this IR keeps verbatim: 0 with the opcode's own attributes (before the
// called computations), 1 after the called computations (generic attributes), 2 after metadata.
int ExtraGroup(const std::string& key) {
  static const char* kGeneric[] = {"sharding", "frontend_attributes", "control-predecessors", "statistics",
                                   "is_composite", "operation_queue_id", "wait_on_operation_queues"};
  static const char* kLast[] = {"backend_config", "origin", "original_value"};
  for (const char* k : kGeneric)
    if (key == k) return 1;
  for (const char* k : kLast)
    if (key == k) return 2;
  return 0;
}

// Opcodes whose called computation XLA prints as `to_apply=` (others print `calls=`).
bool PrintsToApply(Opcode op) {
  switch (op) {
    case Opcode::kCall: case Opcode::kMap: case Opcode::kReduceWindow: case Opcode::kReduce:
    case Opcode::kAllReduce: case Opcode::kReduceScatter: case Opcode::kAllReduceStart: case Opcode::kScatter:
    case Opcode::kSort: case Opcode::kTopK:
      return true;
    default:
      return false;
  }
}

// printf("%.*g") as absl::StrFormat does.
std::string FormatG(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

// XLA's RoundTripFpToString (xla/util.cc): max_digits10 of the type for bf16/f16/f8, and for f32/f64
// digits10 first, max_digits10 when that does not read back.
std::string FloatText(double v, PrimitiveType t) {
  switch (t) {
    case PrimitiveType::BF16: return FormatG(v, 4);
    case PrimitiveType::F16: return FormatG(v, 5);
    case PrimitiveType::F8E5M2: case PrimitiveType::F8E5M2FNUZ: return FormatG(v, 2);
    case PrimitiveType::F8E4M3FN: case PrimitiveType::F8E4M3B11FNUZ: case PrimitiveType::F8E4M3FNUZ:
      return FormatG(v, 3);
    case PrimitiveType::F32: {
      float f = static_cast<float>(v);
      std::string r = FormatG(f, 6);
      if (std::isnan(f) || std::strtof(r.c_str(), nullptr) == f) return r;
      return FormatG(f, 9);
    }
    default: {
      std::string r = FormatG(v, 15);
      if (std::isnan(v) || std::strtod(r.c_str(), nullptr) == v) return r;
      return FormatG(v, 17);
    }
  }
}

std::string ElementText(const Literal& l, int64_t i, bool in_array) {
  PrimitiveType t = l.shape().element_type();
  if (t == PrimitiveType::PRED) {
    bool b = l.Get<uint8_t>(i) != 0;
    return in_array ? (b ? "1" : "0") : (b ? "true" : "false");
  }
  if (IsSignedInteger(t)) return std::to_string(l.GetAsInt64(i));
  if (IsUnsignedInteger(t)) return std::to_string(l.GetAsUint64(i));
  if (IsComplex(t)) {
    auto c = l.GetAsComplex(i);
    PrimitiveType part = ComplexComponentType(t);
    return "(" + FloatText(c.real(), part) + ", " + FloatText(c.imag(), part) + ")";
  }
  return FloatText(l.GetAsDouble(i), t);
}

// XLA's DenseArrayPrintHelper in one-line mode (literal.cc).
void PrintArray(const Literal& l, size_t dim, std::vector<int64_t>& index, int64_t& linear, std::string& out) {
  const auto& dims = l.shape().dimensions();
  const size_t rank = dims.size();
  if (dim == rank) {
    out += ElementText(l, linear++, true);
    return;
  }
  const int64_t n = dims[dim];
  const size_t remaining = rank - dim;
  auto brace = [&](bool open) -> std::string {
    if (rank == 1) return open ? "{" : "}";
    if (remaining == 1) return open ? (n <= 1 ? "{" : "{ ") : (n <= 1 ? "}" : " }");
    if (open) {
      if (rank > 3 && dim > 0 && dim < rank)
        return fmt::format("{{ /*i{}={}*/{}", dim - 1, index.back(), n > 0 ? " " : "");
      return "{ ";
    }
    return " }";
  };
  out += brace(true);
  for (int64_t k = 0; k < n; ++k) {
    index.push_back(k);
    PrintArray(l, dim + 1, index, linear, out);
    index.pop_back();
    if (k + 1 < n) out += remaining > 1 ? ", " : ", ";
  }
  out += brace(false);
}

}  // namespace

std::string LiteralToString(const Literal& literal) {
  if (literal.elided()) return "{...}";
  const Shape& shape = literal.shape();
  if (shape.IsTuple()) {
    std::string out = "( ";
    for (size_t i = 0; i < literal.tuple_elements().size(); ++i) {
      if (i) out += ", ";
      out += LiteralToString(literal.tuple_elements()[i]);
    }
    return out + " )";
  }
  if (shape.IsToken()) return "token";
  if (!shape.IsArray()) return "{...}";
  if (literal.data().size() < static_cast<size_t>(shape.elements()) * static_cast<size_t>(ByteWidth(shape.element_type())))
    return "{...}";
  if (shape.rank() == 0) return ElementText(literal, 0, false);
  std::string out;
  std::vector<int64_t> index;
  int64_t linear = 0;
  PrintArray(literal, 0, index, linear, out);
  return out;
}

std::string CEscape(const std::string& s) {
  // absl::CEscape: \n \r \t \" \' \\, other bytes outside printable ASCII as three octal digits.
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c >= 0x7f) out += fmt::format("\\{:03o}", c);
        else out += ch;
    }
  }
  return out;
}

std::string WindowToString(const Window& window) {
  if (window.dimensions.empty()) return "{}";
  auto join = [&](auto get) {
    std::vector<std::string> parts;
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
    fields.push_back("pad=" + join([](const WindowDimension& d) { return fmt::format("{}_{}", d.padding_low, d.padding_high); }));
  if (any([](const WindowDimension& d) { return d.base_dilation != 1; }))
    fields.push_back("lhs_dilate=" + join([](const WindowDimension& d) { return std::to_string(d.base_dilation); }));
  if (any([](const WindowDimension& d) { return d.window_dilation != 1; }))
    fields.push_back("rhs_dilate=" + join([](const WindowDimension& d) { return std::to_string(d.window_dilation); }));
  if (any([](const WindowDimension& d) { return d.window_reversal; }))
    fields.push_back("rhs_reversal=" + join([](const WindowDimension& d) { return std::string(d.window_reversal ? "1" : "0"); }));
  return fmt::format("{{{}}}", fmt::join(fields, " "));
}

std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& dn) {
  auto labels = [](size_t rank, int64_t a, char ca, int64_t b, char cb, const std::vector<int64_t>& spatial) {
    std::string s(rank, '?');
    if (a >= 0 && static_cast<size_t>(a) < rank) s[static_cast<size_t>(a)] = ca;
    if (b >= 0 && static_cast<size_t>(b) < rank) s[static_cast<size_t>(b)] = cb;
    for (size_t i = 0; i < spatial.size(); ++i)
      if (spatial[i] >= 0 && static_cast<size_t>(spatial[i]) < rank) s[static_cast<size_t>(spatial[i])] = static_cast<char>('0' + i);
    return s;
  };
  size_t rank = dn.input_spatial_dimensions.size() + 2;
  return labels(rank, dn.input_batch_dimension, 'b', dn.input_feature_dimension, 'f', dn.input_spatial_dimensions) + "_" +
         labels(rank, dn.kernel_input_feature_dimension, 'i', dn.kernel_output_feature_dimension, 'o',
                dn.kernel_spatial_dimensions) +
         "->" + labels(rank, dn.output_batch_dimension, 'b', dn.output_feature_dimension, 'f', dn.output_spatial_dimensions);
}

std::string PaddingConfigToString(const PaddingConfig& config) {
  std::vector<std::string> parts;
  bool interior = false;
  for (const auto& d : config.dimensions) interior |= d.interior_padding != 0;
  for (const auto& d : config.dimensions) {
    if (interior)
      parts.push_back(fmt::format("{}_{}_{}", d.edge_padding_low, d.edge_padding_high, d.interior_padding));
    else
      parts.push_back(fmt::format("{}_{}", d.edge_padding_low, d.edge_padding_high));
  }
  return fmt::format("{}", fmt::join(parts, "x"));
}

std::string MetadataToString(const OpMetadata& m) {
  std::vector<std::string> parts;
  if (!m.op_type.empty()) parts.push_back(fmt::format("op_type=\"{}\"", CEscape(m.op_type)));
  if (!m.op_name.empty()) parts.push_back(fmt::format("op_name=\"{}\"", CEscape(m.op_name)));
  if (!m.source_file.empty()) parts.push_back(fmt::format("source_file=\"{}\"", CEscape(m.source_file)));
  if (m.source_line != 0) parts.push_back(fmt::format("source_line={}", m.source_line));
  return fmt::format("{{{}}}", fmt::join(parts, " "));
}

std::string AttributesToString(const Instruction& in, const PrintOptions& o) {
  std::vector<std::string> a;
  const bool known = in.unknown_opcode.empty();
  switch (known ? in.opcode : Opcode::kParameter) {
    case Opcode::kBroadcast: case Opcode::kTranspose: case Opcode::kReverse: case Opcode::kConcatenate:
    case Opcode::kReduce: case Opcode::kMap:
      a.push_back("dimensions=" + Braced(in.dimensions));
      break;
    case Opcode::kSort:
      a.push_back("dimensions=" + Braced(in.dimensions));
      if (in.is_stable) a.push_back("is_stable=true");
      break;
    case Opcode::kSetDimensionSize: case Opcode::kGetDimensionSize:
      a.push_back("dimensions=" + Braced(in.dimensions));
      break;
    case Opcode::kSlice:
      if (in.slice) a.push_back("slice=" + SliceToString(*in.slice));
      break;
    case Opcode::kDynamicSlice:
      a.push_back("dynamic_slice_sizes=" + Braced(in.dynamic_slice_sizes));
      break;
    case Opcode::kPad:
      if (in.padding_config) a.push_back("padding=" + PaddingConfigToString(*in.padding_config));
      break;
    case Opcode::kIota:
      a.push_back(fmt::format("iota_dimension={}", in.iota_dimension));
      break;
    case Opcode::kGetTupleElement:
      a.push_back(fmt::format("index={}", in.tuple_index));
      break;
    case Opcode::kCompare:
      a.push_back(fmt::format("direction={}", ComparisonDirectionName(in.comparison_direction)));
      if (!in.comparison_type.empty()) a.push_back("type=" + in.comparison_type);
      break;
    case Opcode::kConvolution:
      if (in.window) a.push_back("window=" + WindowToString(*in.window));
      if (in.convolution_dimension_numbers)
        a.push_back("dim_labels=" + ConvolutionDimensionNumbersToString(*in.convolution_dimension_numbers));
      if (in.feature_group_count != 1) a.push_back(fmt::format("feature_group_count={}", in.feature_group_count));
      if (in.batch_group_count != 1) a.push_back(fmt::format("batch_group_count={}", in.batch_group_count));
      break;
    case Opcode::kDot:
      if (in.dot_dimension_numbers) {
        const auto& d = *in.dot_dimension_numbers;
        if (!d.lhs_batch_dimensions.empty()) a.push_back("lhs_batch_dims=" + Braced(d.lhs_batch_dimensions));
        a.push_back("lhs_contracting_dims=" + Braced(d.lhs_contracting_dimensions));
        if (!d.rhs_batch_dimensions.empty()) a.push_back("rhs_batch_dims=" + Braced(d.rhs_batch_dimensions));
        a.push_back("rhs_contracting_dims=" + Braced(d.rhs_contracting_dimensions));
      }
      break;
    case Opcode::kReduceWindow: case Opcode::kSelectAndScatter:
      if (in.window) a.push_back("window=" + WindowToString(*in.window));
      break;
    case Opcode::kGather:
      if (in.gather_dimension_numbers) {
        const auto& g = *in.gather_dimension_numbers;
        a.push_back("offset_dims=" + Braced(g.offset_dims));
        a.push_back("collapsed_slice_dims=" + Braced(g.collapsed_slice_dims));
        a.push_back("start_index_map=" + Braced(g.start_index_map));
        if (!g.operand_batching_dims.empty()) a.push_back("operand_batching_dims=" + Braced(g.operand_batching_dims));
        if (!g.start_indices_batching_dims.empty())
          a.push_back("start_indices_batching_dims=" + Braced(g.start_indices_batching_dims));
        a.push_back(fmt::format("index_vector_dim={}", g.index_vector_dim));
      }
      a.push_back("slice_sizes=" + Braced(in.gather_slice_sizes));
      if (in.indices_are_sorted) a.push_back("indices_are_sorted=true");
      break;
    case Opcode::kScatter:
      if (in.scatter_dimension_numbers) {
        const auto& s = *in.scatter_dimension_numbers;
        a.push_back("update_window_dims=" + Braced(s.update_window_dims));
        a.push_back("inserted_window_dims=" + Braced(s.inserted_window_dims));
        a.push_back("scatter_dims_to_operand_dims=" + Braced(s.scatter_dims_to_operand_dims));
        if (!s.input_batching_dims.empty()) a.push_back("input_batching_dims=" + Braced(s.input_batching_dims));
        if (!s.scatter_indices_batching_dims.empty())
          a.push_back("scatter_indices_batching_dims=" + Braced(s.scatter_indices_batching_dims));
        a.push_back(fmt::format("index_vector_dim={}", s.index_vector_dim));
      }
      if (in.indices_are_sorted) a.push_back("indices_are_sorted=true");
      if (in.unique_indices) a.push_back("unique_indices=true");
      break;
    case Opcode::kFft:
      a.push_back(fmt::format("fft_type={}", FftTypeName(in.fft_type)));
      a.push_back("fft_length=" + Braced(in.fft_length));
      break;
    case Opcode::kReducePrecision:
      a.push_back(fmt::format("exponent_bits={}", in.exponent_bits));
      a.push_back(fmt::format("mantissa_bits={}", in.mantissa_bits));
      break;
    case Opcode::kBatchNormTraining: case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
      a.push_back("epsilon=" + FormatG(in.epsilon, 6));  // absl::StrCat(float): six significant digits
      a.push_back(fmt::format("feature_index={}", in.feature_index));
      break;
    case Opcode::kRng:
      a.push_back(in.distribution == RandomDistribution::kNormal ? "distribution=rng_normal" : "distribution=rng_uniform");
      break;
    case Opcode::kRngBitGenerator:
      a.push_back("algorithm=" + (in.rng_algorithm.empty() ? std::string("rng_default") : in.rng_algorithm));
      break;
    case Opcode::kCustomCall:
      a.push_back(fmt::format("custom_call_target=\"{}\"", CEscape(in.custom_call_target)));
      break;
    case Opcode::kCholesky:
      if (in.cholesky_lower) a.push_back("lower=true");
      break;
    case Opcode::kTriangularSolve: {
      const auto& t = in.triangular_solve_options;
      if (t.left_side) a.push_back("left_side=true");
      if (t.lower) a.push_back("lower=true");
      if (t.unit_diagonal) a.push_back("unit_diagonal=true");
      a.push_back(fmt::format("transpose_a={}", TransposeAName(t.transpose_a)));
      break;
    }
    case Opcode::kTopK:
      a.push_back(fmt::format("k={}", in.k));
      a.push_back(in.largest ? "largest=true" : "largest=false");  // XLA prints both k and largest
      break;
    case Opcode::kFusion:
      a.push_back("kind=" + (in.fusion_kind.empty() ? std::string("kLoop") : in.fusion_kind));
      break;
    default:
      break;
  }
  if (known && (in.opcode == Opcode::kDot || in.opcode == Opcode::kConvolution) && !in.operand_precision.empty()) {
    bool non_default = false;
    for (auto p : in.operand_precision) non_default |= p != PrecisionLevel::kDefault;
    if (non_default) {
      std::vector<std::string> ps;
      for (auto p : in.operand_precision) ps.push_back(PrecisionName(p));
      a.push_back(fmt::format("operand_precision={{{}}}", fmt::join(ps, ",")));
    }
  }
  auto extras = [&](int group) {
    if (!o.print_extra_attributes) return;
    for (const auto& [k, v] : in.extra_attributes)
      if (k != "metadata" && ExtraGroup(k) == group) a.push_back(k + "=" + v);
  };
  extras(0);
  // Called computations.
  const auto& cc = in.called_computations;
  switch (known ? in.opcode : Opcode::kParameter) {
    case Opcode::kWhile:
      if (cc.size() == 2) {
        a.push_back("condition=" + CalledName(cc[1], o));
        a.push_back("body=" + CalledName(cc[0], o));
      }
      break;
    case Opcode::kSelectAndScatter:
      if (cc.size() == 2) {
        a.push_back("select=" + CalledName(cc[0], o));
        a.push_back("scatter=" + CalledName(cc[1], o));
      }
      break;
    case Opcode::kConditional:
      if (cc.size() == 2 && in.operands.size() == 3 && in.operands[0]->shape.element_type() == PrimitiveType::PRED) {
        a.push_back("true_computation=" + CalledName(cc[0], o));
        a.push_back("false_computation=" + CalledName(cc[1], o));
      } else {
        std::vector<std::string> names;
        for (auto* c : cc) names.push_back(CalledName(c, o));
        a.push_back(fmt::format("branch_computations={{{}}}", fmt::join(names, ", ")));
      }
      break;
    case Opcode::kFusion:
      if (!cc.empty()) a.push_back("calls=" + CalledName(cc[0], o));
      break;
    case Opcode::kCustomCall:
      if (!cc.empty()) {
        std::vector<std::string> names;
        for (auto* c : cc) names.push_back(CalledName(c, o));
        a.push_back(fmt::format("called_computations={{{}}}", fmt::join(names, ", ")));
      }
      break;
    default:
      if (!cc.empty()) {
        if (PrintsToApply(in.opcode)) {
          a.push_back("to_apply=" + CalledName(cc[0], o));
        } else {
          std::vector<std::string> names;
          for (auto* c : cc) names.push_back(CalledName(c, o));
          a.push_back(fmt::format("calls={}", fmt::join(names, ", ")));
        }
      }
  }
  extras(1);
  if (o.print_metadata) {
    const std::string* verbatim = nullptr;  // metadata with fields this IR does not model
    if (o.print_extra_attributes)
      for (const auto& [k, v] : in.extra_attributes)
        if (k == "metadata") verbatim = &v;
    if (verbatim) a.push_back("metadata=" + *verbatim);
    else if (!in.metadata.empty()) a.push_back("metadata=" + MetadataToString(in.metadata));
  }
  if (known && in.opcode == Opcode::kCustomCall && !in.backend_config.empty()) {
    // XLA prints a JSON dict as is and anything else quoted.
    const std::string& bc = in.backend_config;
    if (bc.size() >= 2 && bc.front() == '{' && bc.back() == '}') a.push_back("backend_config=" + bc);
    else a.push_back(fmt::format("backend_config=\"{}\"", CEscape(bc)));
  }
  extras(2);
  std::string out;
  for (const auto& s : a) out += ", " + s;
  return out;
}

std::string ToString(const Instruction& in, const PrintOptions& o) {
  return fmt::format("{} = {} {}({}){}", Name(in.name, o), in.shape.ToString(), OpcodeText(in),
                     OperandsToString(in, o), AttributesToString(in, o));
}

std::string InstructionSignature(const Instruction& in) {
  PrintOptions o = PrintOptions::Canonical();
  std::string operands;
  if (in.opcode == Opcode::kParameter || in.opcode == Opcode::kConstant) {
    operands = OperandsToString(in, o);
  } else {
    for (size_t i = 0; i < in.operands.size(); ++i) {
      if (i) operands += ", ";
      operands += in.operands[i]->shape.ToString();
    }
  }
  return fmt::format("{} {}({}){}", in.shape.ToString(), OpcodeText(in), operands, AttributesToString(in, o));
}

std::string ToString(const Computation& c, const PrintOptions& o, bool is_entry) {
  std::string out;
  if (is_entry) out += "ENTRY ";
  out += Name(c.name(), o);
  if (o.long_style) {
    std::vector<std::string> params;
    for (const Instruction* p : c.parameters()) params.push_back(p->name + ": " + p->shape.ToString(false));
    out += fmt::format(" ({}) -> {}", fmt::join(params, ", "), c.root() ? c.root()->shape.ToString(false) : "()");
  }
  out += " {\n";
  for (const auto& i : c.instructions()) {
    out += "  ";
    if (i.get() == c.root()) out += "ROOT ";
    out += ToString(*i, o);
    out += "\n";
  }
  out += "}";
  if (!c.execution_thread.empty()) out += fmt::format(", execution_thread=\"{}\"", CEscape(c.execution_thread));
  out += "\n";
  return out;
}

std::string ToString(const Module& m, const PrintOptions& o) {
  // As HloModule::Print: the header line, a blank line, and every computation followed by a blank line.
  std::string out = "HloModule " + m.name();
  for (const auto& [k, v] : m.header_attributes) out += ", " + k + "=" + v;
  out += "\n\n";
  for (const auto& c : m.computations()) {
    out += ToString(*c, o, c.get() == m.entry());
    out += "\n";
  }
  return out;
}

}  // namespace opprobe::hlo
