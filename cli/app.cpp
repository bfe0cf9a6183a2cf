#include "cli/app.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "opprobe_version.h"

namespace opprobe::cli {

namespace {
std::vector<std::string>& AfterDashes() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"analyze", RegisterAnalyze},   {"capture", RegisterCapture}, {"lower", RegisterLower},
      {"backends", RegisterBackends}, {"cache", RegisterCache},     {"profile", RegisterProfile},
      {"run", RegisterRun},           {"ops", RegisterOps},         {"diff", RegisterDiff},
  };
  return commands;
}

const std::vector<std::string>& ArgsAfterDoubleDash() { return AfterDashes(); }

void PrintWarning(const std::string& message) { std::fprintf(stderr, "opprobe: warning: %s\n", message.c_str()); }

int ReportError(const Status& status) {
  std::fprintf(stderr, "opprobe: %s\n", status.message().c_str());
  return ExitCodeFor(status);
}

int Run(int argc, char** argv) {
  CLI::App app{
      "opprobe: will this PyTorch model run on that XLA backend? Lowers every aten op to HLO,\n"
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
  // A run that names its command first (`opprobe analyze ...`) registers only that command: with one subcommand at
  // most (require_subcommand(1)) its parse never looks at the others, whose options cost about a million
  // instructions to set up (more than the rest of a warm `analyze`'s report). Anything else (help, --version, an
  // unknown or misspelt command) registers them all, so that help lists them and an error reads as it did.
  const Command* named = nullptr;
  if (argc > 1)
    for (const Command& c : Commands())
      if (std::strcmp(argv[1], c.name) == 0) named = &c;
  if (named) {
    named->reg(app, exit_code);
  } else {
    for (const Command& c : Commands()) c.reg(app, exit_code);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) { return app.exit(e); } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) { return app.exit(e); } catch (const CLI::ParseError& e) {
    // CLI11 prints the message; usage errors are bad input.
    app.exit(e);
    return kExitBadInput;
  }
  return exit_code;
}

}  // namespace opprobe::cli
