// StableHLO in MLIR text as an hlo::Module: the reader (mlir_parser.h) and the op-by-op conversion to HLO that
// XLA's own StableHLO -> HLO translation performs (convert.h). docs/architecture.md ("StableHLO input") describes
// what is read and how each op is converted.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hlo/instruction.h"
#include "support/status.h"

namespace opprobe::hlo {

// One module from MLIR text (pretty or generic form). Errors are InvalidInput, one line: `source:line:col: message`.
Expected<std::unique_ptr<Module>> ParseStableHlo(std::string_view text, const std::string& source_name);

// Whether the start of a file reads as MLIR text: after comments and `#alias = ...` lines, `module`,
// `builtin.module`, `func.func` or their generic forms. MLIR bytecode (`ML\xEFR`) is not text.
bool LooksLikeStableHlo(std::string_view head);
bool IsMlirBytecode(std::string_view head);

}  // namespace opprobe::hlo
