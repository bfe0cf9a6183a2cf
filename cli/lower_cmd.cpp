// `opprobe lower MODEL [--op aten::mul] [--emit hlo|proto -o DIR]`: drill-down from aten ops to their HLO.
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "analyzer/lowering/lowering.h"
#include "analyzer/pipeline/pipeline.h"
#include "cli/commands.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "support/file_io.h"

namespace opprobe::cli {
namespace {

struct LowerArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> ops;
  std::string emit = "hlo";
  std::string out_dir;
  std::string style = "long";
};

std::string FileStem(const analyzer::Node& n, size_t index) {
  std::string name = n.qualified_name();
  for (auto& c : name)
    if (c == ':' || c == '.' || c == '/') c = '_';
  while (name.find("__") != std::string::npos) name.replace(name.find("__"), 2, "_");
  return fmt::format("{:04d}_{}", index, name);
}

int RunLower(const LowerArgs& a) {
  auto graph = analyzer::LoadGraph(a.inputs);
  if (!graph.ok()) return ReportError(graph.status());
  if (a.emit != "hlo" && a.emit != "proto") return ReportError(InvalidInput("--emit: expected hlo or proto"));
  if (a.emit == "proto" && a.out_dir.empty()) return ReportError(InvalidInput("--emit proto needs -o DIR"));
  hlo::PrintOptions style = a.style == "short" ? hlo::PrintOptions::Short() : hlo::PrintOptions::Long();
  if (!a.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    if (ec) return ReportError(InvalidInput(fmt::format("-o {}: {}", a.out_dir, ec.message())));
  }
  std::set<std::string> seen;
  size_t index = 0, matched = 0, failures = 0;
  for (const analyzer::Node& n : graph->nodes) {
    if (!a.ops.empty()) {
      bool want = false;
      for (const auto& o : a.ops) want |= o == n.op || o == n.qualified_name();
      if (!want) continue;
    }
    if (!seen.insert(n.SignatureKey()).second) continue;  // each distinct call once
    ++matched;
    std::string header =
        fmt::format("// {}({}) at {}{}", n.qualified_name(), n.TensorSignature(),
                    n.loc.empty() ? "?" : n.loc.ToString(), n.module_path.empty() ? "" : " in " + n.module_path);
    auto lowered = analyzer::Lower(n, analyzer::LoweringTable::Builtin());
    if (!lowered.ok()) {
      ++failures;
      std::printf("%s\n// lowering failed: %s\n\n", header.c_str(), lowered.status().message().c_str());
      continue;
    }
    lowered->module->set_name(FileStem(n, index).substr(5));
    std::string text = hlo::ToString(*lowered->module, style);
    if (a.out_dir.empty()) {
      std::printf("%s\n%s\n", header.c_str(), text.c_str());
    } else {
      std::string stem = (std::filesystem::path(a.out_dir) / FileStem(n, index)).string();
      Status st;
      if (a.emit == "hlo") {
        st = io::WriteFileAtomically(stem + ".hlo", fmt::format("{}\n{}", header, text));
      } else {
        lowered->module->AssignIds();
        auto bytes = hlo::ModuleToHloProtoBytes(*lowered->module);
        st = bytes.ok() ? io::WriteFileAtomically(stem + ".hlo.pb", *bytes) : bytes.status();
      }
      if (!st.ok()) return ReportError(st);
    }
    ++index;
  }
  if (!a.ops.empty() && matched == 0) {
    std::set<std::string> names;
    for (const auto& n : graph->nodes) names.insert(n.op);
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return ReportError(InvalidInput(fmt::format("--op: the model has no call of {}; it calls: {}", a.ops[0], known)));
  }
  if (!a.out_dir.empty())
    std::printf("wrote %zu lowered module%s to %s%s\n", index, index == 1 ? "" : "s", a.out_dir.c_str(),
                failures ? fmt::format(" ({} ops failed to lower)", failures).c_str() : "");
  return 0;
}

}  // namespace

void RegisterLower(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<LowerArgs>();
  auto* cmd =
      app.add_subcommand("lower", "Print (or write) the HLO module each distinct aten call of a model lowers to");
  cmd->add_option("inputs", args->inputs, "Trace .json or .pt2 files")->required();
  cmd->add_option("--op", args->ops, "Only this aten op (aten::mul or aten::mul.Tensor); repeatable");
  cmd->add_option("--emit", args->emit, "hlo (text) or proto (HloProto .hlo.pb; needs -o)")->capture_default_str();
  cmd->add_option("-o,--output-dir", args->out_dir, "Write one file per module here instead of printing");
  cmd->add_option("--style", args->style, "Text style: long (%names, operand shapes) or short")
      ->check(CLI::IsMember({"long", "short"}))
      ->capture_default_str();
  cmd->footer("Example:\n  opprobe lower samples/traces/unsupported.json --op aten::mul");
  cmd->callback([args, &exit_code] { exit_code = RunLower(*args); });
}

}  // namespace opprobe::cli
