// hlo::Module <-> XLA's HloModuleProto / HloProto wire format (hlo/proto/*.proto, research/formats.md B.4).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hlo/instruction.h"
#include "support/status.h"

namespace opprobe::hlo {

// What the writer below emits, as a revision: a backend that hands units to a compiler as HloModuleProto names it in
// its version, so that a cached verdict given to an older encoding is not reused. Bump it whenever the bytes written
// for the same module change (proto-2: a constant's shape carries its literal's layout, strings are checked UTF-8;
// proto-3: a scalar without a layout is written with its one layout, `{}`).
inline constexpr std::string_view kProtoWriterRevision = "proto-3";

// Serialized HloModuleProto: instruction ids 1..N unique across the module, computation ids in callee-first
// order, entry_computation_id/name, host_program_shape and every computation's program_shape,
// called_computation_ids in XLA's order, and every attribute the IR holds (attributes kept as text are
// written to their XLA field where there is one, and verbatim to opprobe_text_attributes).
// `unique_names`: instruction names repeated in different computations get a `.N` suffix, as XLA's
// HloModule::CreateFromProto requires module-wide unique names (for modules handed to a real compiler).
Expected<std::string> ModuleToProtoBytes(const Module& module, bool unique_names = false);

// Serialized HloProto (the wrapper `--xla_dump_hlo_as_proto` writes as *.hlo.pb) around the module.
Expected<std::string> ModuleToHloProtoBytes(const Module& module);

// Reads an HloProto or a bare HloModuleProto. Rejects bytes that are not such a message (truncated,
// garbage), unknown or duplicate ids, dangling operand/called-computation/root ids, operand and call
// cycles, and shapes whose element count overflows 64 bits, with a one-line message naming
// `source_name` and the computation / instruction.
Expected<std::unique_ptr<Module>> ModuleFromProtoBytes(std::string_view bytes, const std::string& source_name);

}  // namespace opprobe::hlo
