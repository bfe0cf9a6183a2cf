// HLO as analyzer input: an HLO text file (one module or many, torch_xla XLA_SAVE_TENSORS_FILE dumps
// included), a binary HloProto / HloModuleProto (`.pb`, `.hlo.pb`), or a dump directory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/instruction.h"
#include "support/status.h"

namespace opprobe::analyzer {

struct LoadedHloModule {
  // The module's name; `name#N` (N from 1) when its file holds several modules; in a directory the file
  // name follows in parentheses: `jit_f (module_0002.jit_f.after_optimizations.txt)`.
  std::string name;
  std::unique_ptr<hlo::Module> module;
};

// Loads `path`: a `.hlo`/`.txt` text file, a `.pb`/`.hlo.pb` binary, or a directory (every *.hlo,
// *.hlo.pb, *.pb and *.txt that holds HLO text, sorted by file name; other files such as .mlir or XLA's
// buffer-assignment text are skipped). Unreadable or malformed input is an InvalidInput Status whose
// message names the file (and line:col for text).
Expected<std::vector<LoadedHloModule>> LoadHlo(const std::string& path);

// True when `path` is HLO input LoadHlo accepts: a .hlo/.pb/.hlo.pb file, a text file whose content
// is HLO (an `HloModule` line or torch_xla `## BEGIN_GRAPH` framing), or a directory holding such files.
bool LooksLikeHlo(const std::string& path);

// How much of a .txt file is read to find its `HloModule` or `## BEGIN_GRAPH` line (a torch_xla dump writes the
// Python frames of the sync before it).
inline constexpr size_t kHloSniffBytes = size_t{1} << 16;
// The same for the file `path` from its first bytes (`head`; at most kHloSniffBytes of it are looked at), without
// opening it.
bool LooksLikeHloFile(const std::string& path, std::string_view head);

}  // namespace opprobe::analyzer
