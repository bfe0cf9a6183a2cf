#include "cli/commands.h"

namespace opprobe::cli {

void RegisterLower(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("lower", "(not yet available)");
  cmd->callback([&exit_code] { exit_code = 0; });
}

}  // namespace opprobe::cli
