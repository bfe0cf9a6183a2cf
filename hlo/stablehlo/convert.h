// StableHLO (the IR of mlir_ir.h) to hlo::Module, op by op as XLA's own StableHLO -> HLO translation does
// (xla/hlo/translate/mhlo_to_hlo): each op becomes the HLO instruction(s) XLA emits for it, multi-result ops a
// tuple-shaped instruction followed by a get-tuple-element per result, regions called computations, `func.call` a
// `call` of the callee's computation, and values a while/case/if region uses from outside it extra operands
// (constants are copied into the region instead, as XLA's constant sinking does). The module-wide rewrites XLA runs
// before its translation (canonicalization, folding, loop-invariant motion) are not applied.
//
// Metadata comes from each op's location as XLA reads it: op_name from the location's names, op_type from a name
// ending in ':', source_file/source_line from its innermost file location outside an installed Python package
// (site-packages, dist-packages) when there is one; a torch_xla name such as `aten__add` (its HLO op_type, which
// XLA's HLO -> StableHLO import keeps only as the op name) is the op_type too.
//
// An operation the reader does not convert (uniform_quantize, which XLA cannot translate either; a chlo op XLA
// would expand; an unknown op of a known dialect) becomes one instruction named after it (`unknown_opcode`), which
// every backend reports as unsupported, as the HLO text parser does for an unknown opcode.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "hlo/instruction.h"
#include "hlo/stablehlo/mlir_ir.h"
#include "support/status.h"

namespace opprobe::hlo::stablehlo {

// The entry is the function `main`, else the only public function. Errors name `source:line:col`.
Expected<std::unique_ptr<Module>> ConvertToHlo(const ParsedModule& module);

// The conversion table (convert.cpp): whether an op name (`stablehlo.pad`, `mhlo.pad`, `func.call`, `chlo.top_k`)
// has an entry of its own, and the entries' names (`pad`: stablehlo.pad and mhlo.pad; other dialects' ops in full).
// The plain one-instruction ops (`stablehlo.add`) are in the simple-op tables instead; an op in neither is
// converted to an unknown instruction named after it.
bool HasOpConversion(std::string_view op_name);
std::vector<std::string_view> OpConversionNames();

}  // namespace opprobe::hlo::stablehlo
