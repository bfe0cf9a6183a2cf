#include "hlo/probe_unit.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "hlo/fingerprint.h"
#include "support/numbers.h"

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

std::unique_ptr<Module> MakeBatchModule(const std::vector<const Module*>& units, const std::string& name) {
  auto module = std::make_unique<Module>(name);
  auto entry = std::make_unique<Computation>("main");
  std::vector<Instruction*> roots;
  std::vector<Shape> root_shapes;
  int64_t next_parameter = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    const Module& unit = *units[u];
    if (!unit.entry() || !unit.entry()->root()) continue;
    const std::string suffix = fmt::format(".u{}", u);
    const std::string marker = BatchUnitMarker(u);
    std::map<const Computation*, Computation*> copied;
    // Copies one computation's instructions into `to`, names suffixed and operands and callees remapped.
    auto copy_into = [&](const Computation& from, Computation& to, int64_t parameter_base) {
      std::map<const Instruction*, Instruction*> map;
      for (const auto& i : from.instructions()) {
        auto ni = std::make_unique<Instruction>(*i);
        ni->name += suffix;
        ni->metadata.mutable_value().op_name = marker;
        if (ni->opcode == Opcode::kParameter) ni->parameter_number += parameter_base;
        if (!ni->rare().control_predecessors.empty())
          for (auto& pred : ni->mutable_rare().control_predecessors) pred += suffix;
        for (auto& op : ni->operands) op = map.at(op);
        for (auto& cc : ni->called_computations) cc = copied.at(cc);
        map[i.get()] = to.AddInstruction(std::move(ni));
      }
      return map;
    };
    // Computations are held callees first, so every callee is copied before its callers.
    for (const auto& c : unit.computations()) {
      if (c.get() == unit.entry()) continue;
      auto nc = std::make_unique<Computation>(c->name() + suffix);
      nc->is_fusion_computation = c->is_fusion_computation;
      nc->execution_thread = c->execution_thread;
      auto map = copy_into(*c, *nc, 0);
      if (c->root()) nc->set_root(map.at(c->root()));
      copied[c.get()] = module->AddComputation(std::move(nc));
    }
    auto map = copy_into(*unit.entry(), *entry, next_parameter);
    next_parameter += static_cast<int64_t>(unit.entry()->parameters().size());
    Instruction* root = map.at(unit.entry()->root());
    int gte = 0;
    std::function<void(Instruction*)> leaves = [&](Instruction* in) {
      if (!in->shape.IsTuple()) {
        roots.push_back(in);
        root_shapes.push_back(in->shape);
        return;
      }
      for (size_t k = 0; k < in->shape.tuple_shapes().size(); ++k) {
        auto g = std::make_unique<Instruction>();
        g->opcode = Opcode::kGetTupleElement;
        g->name = fmt::format("leaf.{}{}", gte++, suffix);
        g->shape = in->shape.tuple_shapes()[k];
        g->tuple_index = static_cast<int64_t>(k);
        g->operands = {in};
        leaves(entry->AddInstruction(std::move(g)));
      }
    };
    leaves(root);
  }
  auto tuple = std::make_unique<Instruction>();
  tuple->opcode = Opcode::kTuple;
  tuple->name = "batch";
  tuple->operands = roots;
  tuple->shape = Shape::Tuple(std::move(root_shapes));
  entry->set_root(entry->AddInstruction(std::move(tuple)));
  module->set_entry(module->AddComputation(std::move(entry)));
  module->AssignIds();
  return module;
}

namespace {
constexpr std::string_view kBatchUnitPrefix = "opprobe.batch.unit.";
}  // namespace

std::string BatchUnitMarker(size_t k) { return fmt::format("{}{}", kBatchUnitPrefix, k); }

std::optional<size_t> BatchUnitOf(std::string_view op_name) {
  if (op_name.substr(0, kBatchUnitPrefix.size()) != kBatchUnitPrefix) return std::nullopt;
  return support::ParseInteger<size_t>(op_name.substr(kBatchUnitPrefix.size()));
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
