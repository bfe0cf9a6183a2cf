// Repro files for an unsupported probe unit: `<dir>/<opcode>_<fingerprint>.hlo` (XLA long-style text)
// and `.hlo.pb` (HloProto), so a compiler engineer can reproduce with one command.
#pragma once

#include <string>

#include "hlo/instruction.h"
#include "support/status.h"

namespace opprobe::hlo {

// Writes both files atomically (support/file_io.h), creating `dir` when needed, and returns the
// path of the .hlo file. `opcode` and `fingerprint` become part of the file name; characters other than
// [A-Za-z0-9._-] are replaced by '_'.
Expected<std::string> WriteRepro(const Module& unit, const std::string& dir, const std::string& opcode,
                                 const std::string& fingerprint);

}  // namespace opprobe::hlo
