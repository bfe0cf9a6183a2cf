// `opprobe ops [--core] [--missing]`: the aten -> HLO lowering table and its coverage of the Core
// ATen opset.
#include <fmt/format.h>

#include <memory>
#include <set>

#include "analyzer/lowering/core_ops.h"
#include "analyzer/lowering/lowering.h"
#include "cli/commands.h"

namespace opprobe::cli {
namespace {

struct OpsOptions {
  bool core = false;
  bool missing = false;
};

int RunOps(const OpsOptions& o) {
  const auto& table = analyzer::LoweringTable::Builtin();
  const auto& core = analyzer::CoreAtenOps();
  size_t lowered = 0;
  for (const auto& name : core)
    if (analyzer::FindLowering(table, name)) ++lowered;
  if (o.core || o.missing) {
    for (const auto& name : core) {
      const auto* e = analyzer::FindLowering(table, name);
      if (o.missing && e) continue;
      if (e) std::printf("%-44s lowered  %-13s %s\n", ("aten::" + name).c_str(), e->family.c_str(), e->name.c_str());
      else std::printf("%-44s missing\n", ("aten::" + name).c_str());
    }
    std::printf("\n%zu of %zu core aten ops lowered, %zu missing\n", lowered, core.size(), core.size() - lowered);
    return 0;
  }
  // Which table entries serve a core op (by exact name or as the overload-less fallback).
  std::set<std::string> serving;
  for (const auto& name : core)
    if (const auto* e = analyzer::FindLowering(table, name)) serving.insert(e->name);
  auto entries = table.entries();
  size_t in_place = 0;
  std::printf("%-44s %-13s %s\n", "LOWERING", "FAMILY", "CORE");
  for (const auto* e : entries) {
    in_place += e->in_place_of.empty() ? 0 : 1;
    std::printf("%-44s %-13s %s\n", e->name.c_str(), e->family.c_str(), serving.count(e->name) ? "core" : "");
  }
  std::printf(
      "\n%zu lowerings (%zu of them in-place forms of a functional lowering); %zu of %zu core aten ops lowered "
      "(opprobe ops --core lists them)\nFAMILY is the file of analyzer/lowering/ the lowering lives in.\n",
      entries.size(), in_place, lowered, core.size());
  return 0;
}

}  // namespace

void RegisterOps(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<OpsOptions>();
  auto* cmd = app.add_subcommand("ops",
                                 "List the aten -> HLO lowering table (each lowering with its family: the file "
                                 "of analyzer/lowering/ it lives in) and its coverage of the Core ATen opset");
  cmd->add_flag("--core", o->core, "List the 193 core aten ops, each lowered (with its lowering) or missing");
  cmd->add_flag("--missing", o->missing, "List only the core aten ops without a lowering");
  cmd->callback([o, &exit_code] { exit_code = RunOps(*o); });
}

}  // namespace opprobe::cli
