#include "hlo/instruction.h"

#include <algorithm>
#include <map>

namespace opprobe::hlo {

// At namespace scope, not in a function: read without the guard a function's static needs. (Not constinit: clang
// cannot constant-initialize its std::string defaults; no static initializer of another file reads it.)
// Its strings' defaults fit the small-string buffer and its vectors start empty: nothing allocates, nothing throws.
// NOLINTNEXTLINE(bugprone-throwing-static-initialization)
const RareAttributes Instruction::kNoRareAttributes{};

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instr) {
  instructions_.push_back(std::move(instr));
  return instructions_.back().get();
}

std::vector<Instruction*> Computation::parameters() const {
  std::vector<Instruction*> params;
  for (const auto& i : instructions_)
    if (i->opcode == Opcode::kParameter) params.push_back(i.get());
  std::stable_sort(params.begin(), params.end(), [](const Instruction* a, const Instruction* b) {
    return a->parameter_number < b->parameter_number;
  });
  return params;
}

Instruction* Computation::FindInstruction(const std::string& name) const {
  for (const auto& i : instructions_)
    if (i->name == name) return i.get();
  return nullptr;
}

Computation* Module::AddComputation(std::unique_ptr<Computation> c) {
  computations_.push_back(std::move(c));
  return computations_.back().get();
}

Computation* Module::FindComputation(const std::string& name) const {
  for (const auto& c : computations_)
    if (c->name() == name) return c.get();
  return nullptr;
}

void Module::AssignIds() {
  int64_t next_instr = 1;
  int64_t next_comp = 1;
  for (auto& c : computations_) {
    c->id = next_comp++;
    for (auto& i : c->mutable_instructions()) i->id = next_instr++;
  }
}

std::unique_ptr<Module> Module::Clone() const {
  auto out = std::make_unique<Module>(name_);
  out->id = id;
  out->header_attributes = header_attributes;
  std::map<const Computation*, Computation*> comp_map;
  for (const auto& c : computations_) {
    auto nc = std::make_unique<Computation>(c->name());
    nc->id = c->id;
    nc->is_fusion_computation = c->is_fusion_computation;
    nc->execution_thread = c->execution_thread;
    std::map<const Instruction*, Instruction*> instr_map;
    for (const auto& i : c->instructions()) {
      auto ni = std::make_unique<Instruction>(*i);
      for (auto& op : ni->operands) op = instr_map.at(op);
      for (auto& cc : ni->called_computations) cc = comp_map.at(cc);
      instr_map[i.get()] = nc->AddInstruction(std::move(ni));
    }
    if (c->root()) nc->set_root(instr_map.at(c->root()));
    comp_map[c.get()] = out->AddComputation(std::move(nc));
  }
  if (entry_) out->set_entry(comp_map.at(entry_));
  return out;
}

}  // namespace opprobe::hlo
