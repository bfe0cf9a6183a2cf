// StableHLO as analyzer input: MLIR text (pretty or generic form) as jax.jit(f).lower(...).as_text(), jax.export
// and torch_xla's exported_program_to_stablehlo write it, converted to HLO op by op (hlo/stablehlo/stablehlo.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analyzer/loaders/hlo_loader.h"
#include "support/status.h"

namespace opprobe::analyzer {

// Loads the one module of the `.mlir` file at `path`. Unreadable or malformed input is an InvalidInput Status
// whose message starts with the file (and line:col for a syntax error); MLIR bytecode is refused with how to get
// text instead.
Expected<std::vector<LoadedHloModule>> LoadStableHlo(const std::string& path);

// True when `path` is StableHLO input: a `.mlir`/`.mlirbc` file, or a file whose first bytes (`head`) read as MLIR
// text or bytecode.
bool LooksLikeStableHlo(const std::string& path, std::string_view head);

}  // namespace opprobe::analyzer
