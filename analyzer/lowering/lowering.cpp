#include "analyzer/lowering/lowering.h"

#include <fmt/format.h>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer {

void LoweringTable::Register(std::string name, std::string family, LoweringFn fn) {
  Entry e{name, std::move(family), std::move(fn)};
  entries_[std::move(name)] = std::move(e);
}

const LoweringTable::Entry* LoweringTable::Find(const std::string& op, const std::string& overload) const {
  if (!overload.empty() && overload != "default") {
    if (auto it = entries_.find(op + "." + overload); it != entries_.end()) return &it->second;
  }
  if (auto it = entries_.find(op); it != entries_.end()) return &it->second;
  return nullptr;
}

std::vector<const LoweringTable::Entry*> LoweringTable::entries() const {
  std::vector<const Entry*> out;
  for (const auto& [k, e] : entries_) out.push_back(&e);
  return out;
}

Expected<LoweredModule> Lower(const Node& node, const LoweringTable& table) {
  if (std::string reason = lowering::NoXlaTypeReason(node); !reason.empty()) return Unimplemented(reason);
  const LoweringTable::Entry* entry = table.Find(node.op, node.overload);
  if (!entry) return Unimplemented(fmt::format("no lowering for {}", node.qualified_name()));
  std::string name = node.op.substr(node.op.find("::") == std::string::npos ? 0 : node.op.find("::") + 2);
  hlo::Builder b(name);
  hlo::OpMetadata md;
  md.op_type = node.op;
  for (auto& ch : md.op_type)
    if (ch == ':') ch = '_';
  md.op_name = md.op_type;
  md.source_file = node.loc.file;
  md.source_line = node.loc.line;
  b.SetMetadata(md);
  Expected<LoweredOp> lowered = [&]() -> Expected<LoweredOp> {
    try {
      return entry->fn(node, b);
    } catch (const std::exception& e) {  // a lowering bug must not take the analysis down
      return Internal(fmt::format("lowering {} threw: {}", node.qualified_name(), e.what()));
    }
  }();
  if (!lowered.ok()) return lowered.status();
  if (!b.ok()) return b.status().WithContext("lowering " + node.qualified_name());
  if (lowered->outputs.empty()) {
    // Pure metadata ops (detach, alias) lower to nothing; give the module its input as ROOT.
    LoweredModule out;
    hlo::Instruction* root = nullptr;
    out.module = b.Build(root);
    out.dynamic_shape = lowered->dynamic_shape;
    out.note = lowered->note;
    return out;
  }
  hlo::Instruction* synthetic = nullptr;
  hlo::Instruction* root = lowered->outputs[0];
  if (lowered->outputs.size() > 1) root = synthetic = b.Tuple(lowered->outputs);
  LoweredModule out;
  out.module = b.Build(root);
  out.dynamic_shape = lowered->dynamic_shape;
  out.note = lowered->note;
  for (const auto& i : out.module->entry()->instructions()) {
    // Parameters are inputs; constants stand for the scalars and literals PyTorch/XLA passes as device
    // data (parameters), so neither is a probe unit, as in Neuron's analyze.
    if (i->opcode == hlo::Opcode::kParameter || i->opcode == hlo::Opcode::kConstant || i.get() == synthetic) continue;
    out.units.push_back(i.get());
  }
  return out;
}

}  // namespace opprobe::analyzer
