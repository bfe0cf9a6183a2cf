#include "analyzer/lowering/external_lowering.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "hlo/builder.h"
#include "hlo/stablehlo/stablehlo.h"
#include "support/file_io.h"

namespace opprobe::analyzer {

Expected<ExternalLowerings> ReadTorchaxLowerings(const std::string& path) {
  OPPROBE_ASSIGN_OR_RETURN(std::string text, io::ReadFile(path));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string bad = fmt::format("{}: torchax's lowerings are malformed", path);
  if (!doc.is_object() || !doc.contains("calls") || !doc["calls"].is_array())
    return InvalidInput(bad + ": no `calls` array");
  ExternalLowerings out;
  out.library = "torchax";
  if (doc.contains("torchax") && doc["torchax"].is_string()) out.version = doc["torchax"].get<std::string>();
  size_t k = 0;
  for (const auto& c : doc["calls"]) {
    auto str = [&](const char* key) -> std::string {
      auto it = c.find(key);
      return it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    ExternalLowerings::Call call{str("op"), str("overload"), str("mlir"), str("error")};
    if (!c.is_object() || call.op.empty() || (call.mlir.empty() && call.error.empty()))
      return InvalidInput(fmt::format("{}: calls[{}] has no op, or neither mlir nor error", bad, k));
    if (call.overload.empty()) call.overload = "default";
    out.calls.push_back(std::move(call));
    ++k;
  }
  return out;
}

namespace {

// What one signature lowers to: the module's text, or why there is none.
struct Lowered {
  std::string mlir;
  std::string error;
};

// Copies the entry computation of `m` into `b`: its parameters become the builder's next parameters (their shapes
// as the module declares them), its other instructions are copied with their operands mapped, the computations they
// call adopted as they are. Returns the values of its root (a tuple root: its elements).
Expected<std::vector<hlo::Instruction*>> Inline(std::unique_ptr<hlo::Module> m, hlo::Builder& b) {
  const hlo::Computation* entry = m->entry();
  if (entry == nullptr || entry->root() == nullptr) return InvalidInput("the module has no entry computation");
  // Every computation moves into the builder's module; the entry's instructions are copied out of it first.
  std::vector<std::unique_ptr<hlo::Instruction>> copies;
  std::vector<const hlo::Instruction*> originals;
  for (const auto& in : entry->instructions()) {
    copies.push_back(std::make_unique<hlo::Instruction>(*in));
    originals.push_back(in.get());
  }
  const hlo::Instruction* root = entry->root();
  const std::vector<hlo::Instruction*> params = entry->parameters();
  std::vector<hlo::Shape> param_shapes(params.size());
  for (const hlo::Instruction* p : params)
    if (p->parameter_number >= 0 && static_cast<size_t>(p->parameter_number) < params.size())
      param_shapes[static_cast<size_t>(p->parameter_number)] = p->shape;
  b.Adopt(std::move(m), "torchax");
  std::vector<hlo::Instruction*> declared;
  declared.reserve(param_shapes.size());
  for (const hlo::Shape& s : param_shapes) declared.push_back(b.NextParameter(s));
  std::unordered_map<const hlo::Instruction*, hlo::Instruction*> mapped;
  for (size_t i = 0; i < copies.size(); ++i) {
    const hlo::Instruction* orig = originals[i];
    if (orig->opcode == hlo::Opcode::kParameter) {
      if (orig->parameter_number < 0 || static_cast<size_t>(orig->parameter_number) >= declared.size())
        return InvalidInput(fmt::format("parameter {} out of range", orig->parameter_number));
      mapped[orig] = declared[static_cast<size_t>(orig->parameter_number)];
      continue;
    }
    std::unique_ptr<hlo::Instruction> copy = std::move(copies[i]);
    for (auto& operand : copy->operands) {
      auto it = mapped.find(operand);
      if (it == mapped.end()) return InvalidInput(fmt::format("{} uses a value defined after it", orig->name));
      operand = it->second;
    }
    copy->name.clear();
    copy->metadata = support::SharedValue<hlo::OpMetadata>(hlo::OpMetadata{});  // the call's, from the builder
    mapped[orig] = b.Add(std::move(copy));
  }
  std::vector<hlo::Instruction*> outputs;
  if (root->opcode == hlo::Opcode::kTuple) {
    for (const hlo::Instruction* e : root->operands) outputs.push_back(mapped.at(e));
  } else {
    outputs.push_back(mapped.at(root));
  }
  return outputs;
}

}  // namespace

Expected<LoweringTable> ExternalLoweringTable(const Graph& trace, const ExternalLowerings& lowerings) {
  auto by_signature = std::make_shared<std::unordered_map<std::string, Lowered>>();
  const std::string who = lowerings.version.empty() ? lowerings.library : lowerings.library + " " + lowerings.version;
  size_t k = 0;
  for (const Node& n : trace.nodes) {
    // The calls the loader left out (bookkeeping) have no node: their entries are passed over by name. A node with
    // no entry (an older trace's `skipped_ops`, which the loader adds after the calls) gets none: its lowering says
    // so.
    size_t j = k;
    while (j < lowerings.calls.size() && (lowerings.calls[j].op != n.op || lowerings.calls[j].overload != n.overload))
      ++j;
    if (j == lowerings.calls.size()) continue;
    const auto& c = lowerings.calls[j];
    k = j + 1;
    by_signature->emplace(n.SignatureKey(), Lowered{c.mlir, c.error});
  }
  if (!trace.nodes.empty() && by_signature->empty() && !lowerings.calls.empty())
    return InvalidInput(fmt::format("{}'s lowerings do not follow the trace: no entry matches its calls", who));
  std::map<std::string, bool> ops;
  for (const Node& n : trace.nodes) ops[n.op] = true;
  LoweringTable table;
  for (const auto& [op, unused] : ops) {
    Status st = table.Register(
        op, lowerings.library, [by_signature, who](const Node& node, hlo::Builder& b) -> Expected<LoweredOp> {
          auto it = by_signature->find(node.SignatureKey());
          if (it == by_signature->end())
            return Unimplemented(
                fmt::format("{} lowered no call of {} with these arguments", who, node.qualified_name()));
          if (!it->second.error.empty()) return Unimplemented(it->second.error);
          auto module = hlo::ParseStableHlo(it->second.mlir, who + " " + node.qualified_name());
          if (!module.ok())  // (the reader's own kind: a bug of opprobe's is kInternal, what it cannot read yet not)
            return module.status().WithContext(
                fmt::format("{}'s StableHLO for {} does not convert", who, node.qualified_name()));
          auto outputs = Inline(std::move(module).value(), b);
          if (!outputs.ok())
            return outputs.status().WithContext(fmt::format("{}'s StableHLO for {}", who, node.qualified_name()));
          LoweredOp out;
          out.outputs = std::move(outputs).value();
          return out;
        });
    if (!st.ok()) return st;
  }
  return table;
}

}  // namespace opprobe::analyzer
