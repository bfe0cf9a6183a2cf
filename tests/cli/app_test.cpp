// cli/app: the command table Run registers from (all commands, or only the one a run names first).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cli/commands.h"

namespace opprobe::cli {
namespace {

// Run registers only the command argv[1] names: each entry's name must be the one subcommand its Register adds.
TEST(AppTest, EachCommandRegistersTheOneSubcommandItIsNamedFor) {
  std::set<std::string> names;
  for (const Command& c : Commands()) {
    CLI::App app;
    int exit_code = 0;
    c.reg(app, exit_code);
    const auto subs = app.get_subcommands([](CLI::App*) { return true; });
    ASSERT_EQ(subs.size(), 1u) << c.name;
    EXPECT_EQ(subs[0]->get_name(), c.name);
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " twice";
  }
  EXPECT_EQ(names.size(), 9u);
}

}  // namespace
}  // namespace opprobe::cli
