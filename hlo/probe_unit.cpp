#include "hlo/probe_unit.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "hlo/fingerprint.h"

namespace opprobe::hlo {

std::unique_ptr<Module> MakeProbeModule(const Instruction& instr, const std::string& name) {
  auto module = std::make_unique<Module>(name);
  std::map<const Computation*, Computation*> copied;
  int comp_counter = 0;
  // Copies a called computation (callees first), renaming it canonically.
  std::function<Computation*(const Computation*)> copy = [&](const Computation* c) -> Computation* {
    if (auto it = copied.find(c); it != copied.end()) return it->second;
    std::map<const Instruction*, Instruction*> map;
    std::vector<std::unique_ptr<Instruction>> body;
    for (const auto& i : c->instructions())
      for (auto* callee : i->called_computations) copy(callee);
    auto nc = std::make_unique<Computation>(fmt::format("region_{}", comp_counter++));
    int k = 0;
    for (const auto& i : c->instructions()) {
      auto ni = std::make_unique<Instruction>(*i);
      ni->name = fmt::format("{}.{}", OpcodeName(i->opcode), k++);
      ni->metadata.reset();
      // Names of the original computation; ordering only.
      if (!ni->rare().control_predecessors.empty()) ni->mutable_rare().control_predecessors.clear();
      for (auto& op : ni->operands) op = map.at(op);
      for (auto& cc : ni->called_computations) cc = copied.at(cc);
      map[i.get()] = nc->AddInstruction(std::move(ni));
    }
    if (c->root()) nc->set_root(map.at(c->root()));
    Computation* added = module->AddComputation(std::move(nc));
    copied[c] = added;
    return added;
  };
  for (auto* callee : instr.called_computations) copy(callee);

  auto entry = std::make_unique<Computation>("main");
  std::map<const Instruction*, Instruction*> params;
  auto root = std::make_unique<Instruction>(instr);
  root->name = std::string(OpcodeName(instr.opcode));
  // Every attribute the instruction has, modelled or unknown, stays: the backend sees it and the fingerprint
  // holds it. Control predecessors name instructions the unit does not have.
  if (!root->rare().control_predecessors.empty()) root->mutable_rare().control_predecessors.clear();
  for (auto& op : root->operands) {
    auto it = params.find(op);
    if (it == params.end()) {
      auto p = std::make_unique<Instruction>();
      p->opcode = Opcode::kParameter;
      p->parameter_number = static_cast<int64_t>(params.size());
      p->name = fmt::format("p{}", p->parameter_number);
      p->shape = op->shape;
      it = params.emplace(op, entry->AddInstruction(std::move(p))).first;
    }
    op = it->second;
  }
  for (auto& cc : root->called_computations) cc = copied.at(cc);
  Instruction* r = entry->AddInstruction(std::move(root));
  entry->set_root(r);
  module->set_entry(module->AddComputation(std::move(entry)));
  module->AssignIds();
  return module;
}

uint64_t Fnv1a64(std::string_view text, uint64_t hash) {
  constexpr uint64_t kPrime = 1099511628211ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* end = p + text.size();
  for (; end - p >= 4; p += 4) {  // the same steps, a quarter of the loop's (cache checksums hash every lookup)
    hash = (hash ^ p[0]) * kPrime;
    hash = (hash ^ p[1]) * kPrime;
    hash = (hash ^ p[2]) * kPrime;
    hash = (hash ^ p[3]) * kPrime;
  }
  for (; p != end; ++p) hash = (hash ^ *p) * kPrime;
  return hash;
}

std::string Fnv1a64Hex(std::string_view text) { return HashHex(Fnv1a64(text)); }

std::string Fingerprint(const Module& module) {
  if (module.entry() == nullptr || module.entry()->root() == nullptr) return Fnv1a64Hex("");
  return UnitFingerprint(*module.entry()->root());
}

}  // namespace opprobe::hlo
