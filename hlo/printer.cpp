// The HLO printer, part 1: modules, computations, instruction lines and literals. Attributes are printed by
// print_attributes.cpp.
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

// XLA's RoundTripFpToString (xla/util.cc): max_digits10 of the type for bf16/f16/f8, and for f32/f64
// digits10 first, max_digits10 when that does not read back.
std::string FloatText(double v, PrimitiveType t) {
  switch (t) {
    case PrimitiveType::BF16: return FormatG(v, 4);
    case PrimitiveType::F16: return FormatG(v, 5);
    case PrimitiveType::F8E5M2:
    case PrimitiveType::F8E5M2FNUZ: return FormatG(v, 2);
    case PrimitiveType::F8E4M3FN:
    case PrimitiveType::F8E4M3B11FNUZ:
    case PrimitiveType::F8E4M3FNUZ: return FormatG(v, 3);
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

std::string FormatG(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

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
  if (literal.data().size() <
      static_cast<size_t>(shape.elements()) * static_cast<size_t>(ByteWidth(shape.element_type())))
    return "{...}";
  if (shape.rank() == 0 || (literal.splat() && shape.elements() > 0)) return ElementText(literal, 0, false);
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

std::string ToString(const Instruction& in, const PrintOptions& o) {
  return fmt::format("{} = {} {}({}){}", Name(in.name, o), in.shape.ToString(), OpcodeText(in), OperandsToString(in, o),
                     AttributesToString(in, o));
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
  for (const auto& [k, v] : m.header_attributes) out += fmt::format(", {}={}", k, v);
  out += "\n\n";
  for (const auto& c : m.computations()) {
    out += ToString(*c, o, c.get() == m.entry());
    out += "\n";
  }
  return out;
}

}  // namespace opprobe::hlo
