// `cmd:TEMPLATE`: runs an external compiler on each probe unit. The template is split into argv with
// shell-like quoting (no shell is involved); the placeholders {hlo_pb} (HloModuleProto bytes), {hlo_txt}
// (HLO text, long style), {workdir} and {fingerprint} are replaced in every word. Exit status 0 means
// supported, any other exit status unsupported (the tail of stderr is the reason); a timeout or a
// signal is an error verdict.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"
#include "support/status.h"

namespace opprobe::compiler_probe::cmd {

// Splits `text` into words like a POSIX shell would without expansions: blanks separate words,
// '...' is literal, "..." allows \" \\ \$ \` escapes, and a backslash outside quotes escapes the next
// character. An unterminated quote or a trailing backslash is a usage error.
Expected<std::vector<std::string>> SplitCommandLine(const std::string& text);

// Validates the template (at least one placeholder, program found on PATH) and computes the version.
// Errors are kUnavailable (exit 3).
Expected<std::unique_ptr<Backend>> CreateCmdBackend(const std::string& command_template, const BackendOptions& options);

// Registers `cmd` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

}  // namespace opprobe::compiler_probe::cmd
