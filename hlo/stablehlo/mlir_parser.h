// Reads MLIR text that holds StableHLO (what jax.jit(f).lower(...).as_text(), jax.export and torch_xla's
// exported_program_to_stablehlo write) into the IR of mlir_ir.h: a `module` (or bare functions) of `func.func`s
// whose operations are in the pretty form of the stablehlo, chlo, mhlo and func dialects or in MLIR's generic form
// (`"stablehlo.add"(%a, %b) : (...) -> ...`), with `loc(...)` locations, `#loc` aliases, and the "pretty debug
// info" form torch_xla prints (`"aten__relu"(#loc26)` after an op, `[unknown]`). Syntax errors read
// `source:line:col: message`, one line, with any input text quoted (support/quote.h).
#pragma once

#include <string>
#include <string_view>

#include "hlo/stablehlo/mlir_ir.h"
#include "support/status.h"

namespace opprobe::hlo::stablehlo {

// The dialects whose operations the reader accepts; an operation of any other dialect is an error that names it.
bool IsKnownDialect(std::string_view dialect);

// `text` must outlive the result (ParsedModule::text points into it).
Expected<ParsedModule> ParseMlir(std::string_view text, const std::string& source_name);

}  // namespace opprobe::hlo::stablehlo
