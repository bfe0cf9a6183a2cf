// Quantized tensors. Tensors whose torch dtype has no XLA element type: quantized (qint8, quint8, qint32,
// quint4x2, quint2x4), complex32, the bits types and the sub-byte integers XLA does not number. PyTorch/XLA has
// no XLA tensor of these dtypes (its quantized support goes through the quantized_decomposed ops on plain integer
// tensors), so an aten call that takes or returns one has no lowering; the reason names the dtype. PT2E
// quantization's quantized_decomposed::quantize_per_tensor / dequantize_per_tensor are a scale, a round and a
// clamp on plain tensors.
#include <fmt/format.h>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {

std::string NoXlaTypeReason(const Node& node) {
  std::string dtype = FirstDtypeWithoutXlaType(node);
  if (dtype.empty()) return "";
  std::string why;
  if (dtype.starts_with("qint") || dtype.starts_with("quint"))
    why =
        "a quantized dtype: XLA has no quantized element type and PyTorch/XLA has no lowering for quantized "
        "tensors (quantize to int8 with quantized_decomposed ops, or run this part on the CPU)";
  else if (dtype == "complex32") why = "XLA has no 32-bit complex element type (c64 and c128 only)";
  else if (dtype.starts_with("bits")) why = "a bits dtype: opaque bytes that XLA has no element type for";
  else why = "XLA has no element type for it";
  return fmt::format("{} uses torch.{}, {}", node.qualified_name(), dtype, why);
}

namespace {

// PT2E quantization's quantize/dequantize (quantized_decomposed::*_per_tensor with scalar scale and zero point).
Expected<LoweredOp> QuantizePerTensor(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  double scale = ctx.Double("scale", 1, 1), zp = ctx.Double("zero_point", 2, 0);
  double lo = ctx.Double("quant_min", 3, -128), hi = ctx.Double("quant_max", 4, 127);
  PrimitiveType q = ctx.OutputType(0, ctx.Dtype("dtype", 5).value_or(PrimitiveType::S8));
  Instruction* x = b.Convert(x0, PrimitiveType::F32);
  std::vector<int64_t> d = Dims(x);
  Instruction* r = AddScalar(b, b.Unary(Opcode::kRoundNearestEven, MulScalar(b, x, 1.0 / scale)), zp);
  r = b.Clamp(Full(b, PrimitiveType::F32, lo, d), r, Full(b, PrimitiveType::F32, hi, d));
  return ctx.Finish({b.Convert(r, q)});
}

Expected<LoweredOp> DequantizePerTensor(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  double scale = ctx.Double("scale", 1, 1), zp = ctx.Double("zero_point", 2, 0);
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  Instruction* r = MulScalar(b, AddScalar(b, b.Convert(x0, PrimitiveType::F32), -zp), scale);
  return ctx.Finish({b.Convert(r, t)});
}

}  // namespace

const LoweringFamily& QuantizedLowerings() {
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"quantized_decomposed::quantize_per_tensor", QuantizePerTensor},
                             {"quantized_decomposed::dequantize_per_tensor", DequantizePerTensor},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
