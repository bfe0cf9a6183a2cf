#include "cli/app.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "opprobe_version.h"

namespace opprobe::cli {

namespace {
constexpr RegisterFn kCommands[] = {
    RegisterAnalyze,
    RegisterCapture,
    RegisterLower,
    RegisterBackends,
    RegisterCache,
    RegisterProfile,
    RegisterRun,
    RegisterOps,
    RegisterDiff,
};
std::vector<std::string>& AfterDashes() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

const std::vector<std::string>& ArgsAfterDoubleDash() { return AfterDashes(); }

void PrintWarning(const std::string& message) { std::fprintf(stderr, "opprobe: warning: %s\n", message.c_str()); }

int ReportError(const Status& status) {
  std::fprintf(stderr, "opprobe: %s\n", status.message().c_str());
  return ExitCodeFor(status);
}

int Run(int argc, char** argv) {
  CLI::App app{"opprobe: will this PyTorch model run on that XLA backend? Lowers every aten op to HLO,\n"
               "probes a backend compiler with each unique instruction and reports what stands in the way."};
  app.set_version_flag("--version", std::string("opprobe ") + OPPROBE_VERSION);
  app.require_subcommand(1);
  AfterDashes().clear();
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    AfterDashes().assign(argv + i + 1, argv + argc);
    break;
  }
  int exit_code = kExitOk;
  for (RegisterFn reg : kCommands) reg(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message; usage errors are bad input.
    app.exit(e);
    return kExitBadInput;
  }
  return exit_code;
}

}  // namespace opprobe::cli
