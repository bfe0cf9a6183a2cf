// One file per subcommand; each registers itself on the app and sets `exit_code` when it runs.
// Adding a subcommand = one file, its Register declaration below, and one line in cli/app.cpp's Commands().
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "support/status.h"

namespace opprobe::cli {

using RegisterFn = void (*)(CLI::App& app, int& exit_code);

void RegisterAnalyze(CLI::App& app, int& exit_code);   // analyze_cmd.cpp
void RegisterCapture(CLI::App& app, int& exit_code);   // capture_cmd.cpp
void RegisterLower(CLI::App& app, int& exit_code);     // lower_cmd.cpp
void RegisterBackends(CLI::App& app, int& exit_code);  // backends_cmd.cpp
void RegisterCache(CLI::App& app, int& exit_code);     // cache_cmd.cpp
void RegisterProfile(CLI::App& app, int& exit_code);   // profile_cmd.cpp
void RegisterRun(CLI::App& app, int& exit_code);       // run_cmd.cpp
void RegisterOps(CLI::App& app, int& exit_code);       // ops_cmd.cpp
void RegisterDiff(CLI::App& app, int& exit_code);      // diff_cmd.cpp

// Every command, by the name its Register function gives it.
struct Command {
  const char* name;
  RegisterFn reg;
};
const std::vector<Command>& Commands();

// The arguments that followed the first `--` on the command line (empty when there was none): the
// script command of `analyze -- python train.py` and `capture -- ...`.
const std::vector<std::string>& ArgsAfterDoubleDash();

// Prints `opprobe: <message>` on stderr and returns the exit code for the status (cli/exit_codes.h).
int ReportError(const Status& status);
// Prints `opprobe: warning: <message>` on stderr (the pipeline's on_warning, result warnings).
void PrintWarning(const std::string& message);

}  // namespace opprobe::cli
