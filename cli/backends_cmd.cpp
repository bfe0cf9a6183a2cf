// `opprobe backends [--show-profile NAME]`: what backends and built-in profiles there are.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/rules/rules_backend.h"

namespace opprobe::cli {
namespace {

int RunBackends(const std::string& show) {
  namespace rules = compiler_probe::rules;
  if (!show.empty()) {
    std::string text = rules::BuiltinProfileText(show);
    if (text.empty())
      return ReportError(InvalidInput(fmt::format("--show-profile: no built-in profile '{}' (built-in: {})", show,
                                                  fmt::join(rules::BuiltinProfileNames(), ", "))));
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  std::printf("Backends (--backend SPEC):\n");
  const compiler_probe::Registry registry = compiler_probe::Registry::Builtin();
  for (const auto& e : registry.entries()) {
    std::printf("  %-28s %s\n", e.usage.c_str(), e.description.c_str());
    if (std::string installed = registry.Installed(e.name); !installed.empty())
      std::printf("  %-28s %s\n", "", installed.c_str());
  }
  std::printf("\nBuilt-in rules profiles (rules:NAME; print one with --show-profile NAME):\n");
  for (const auto& name : rules::BuiltinProfileNames()) {
    auto p = rules::ParseProfile(rules::BuiltinProfileText(name), name);
    std::printf("  %-28s %s\n", name.c_str(),
                p.ok() ? fmt::format("{} ({} rules)", p->description, p->rules.size()).c_str() : "(invalid)");
  }
  return 0;
}

}  // namespace

void RegisterBackends(CLI::App& app, int& exit_code) {
  auto show = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("backends", "List the backends and the built-in rules profiles");
  cmd->add_option("--show-profile", *show, "Print a built-in profile's JSON (a starting point for your own)");
  cmd->callback([show, &exit_code] { exit_code = RunBackends(*show); });
}

}  // namespace opprobe::cli
