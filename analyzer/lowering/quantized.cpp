// Tensors whose torch dtype has no XLA element type: quantized (qint8, quint8, qint32, quint4x2, quint2x4),
// complex32, the bits types and the sub-byte integers XLA does not number. PyTorch/XLA has no XLA tensor of
// these dtypes (its quantized support goes through the quantized_decomposed ops on plain integer tensors), so
// an aten call that takes or returns one has no lowering; the reason names the dtype.
#include <fmt/format.h>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {

std::string NoXlaTypeReason(const Node& node) {
  std::string dtype = FirstDtypeWithoutXlaType(node);
  if (dtype.empty()) return "";
  std::string why;
  if (dtype.starts_with("qint") || dtype.starts_with("quint"))
    why = "a quantized dtype: XLA has no quantized element type and PyTorch/XLA has no lowering for quantized "
          "tensors (quantize to int8 with quantized_decomposed ops, or run this part on the CPU)";
  else if (dtype == "complex32")
    why = "XLA has no 32-bit complex element type (c64 and c128 only)";
  else if (dtype.starts_with("bits"))
    why = "a bits dtype: opaque bytes that XLA has no element type for";
  else
    why = "XLA has no element type for it";
  return fmt::format("{} uses torch.{}, {}", node.qualified_name(), dtype, why);
}

}  // namespace opprobe::analyzer::lowering
