// HloModuleProto conversion, part 4: reading and validating modules, computations and instructions (ids,
// operands, called computations, cycles). Attribute values are read by proto_attributes.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/stubs/logging.h>

#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

#include "hlo/proto_internal.h"
#include "hlo/proto_io.h"
#include "hlo/verifier.h"
#include "support/quote.h"

namespace opprobe::hlo {
namespace {

using namespace proto_internal;

Status CheckArity(const Instruction& in) {
  if (!in.unknown_opcode.empty() || in.opcode == Opcode::kParameter || in.opcode == Opcode::kConstant)
    return Status::Ok();
  int arity = OpcodeArity(in.opcode);
  if (arity >= 0 && in.operand_count() != arity)
    return InvalidInput(
        fmt::format("{} takes {} operand(s), has {}", OpcodeName(in.opcode), arity, in.operand_count()));
  return Status::Ok();
}

Expected<std::unique_ptr<Instruction>> ReadInstruction(const xla::HloInstructionProto& p, const std::string& src) {
  auto in = std::make_unique<Instruction>();
  in->name = p.name();
  in->id = p.id();
  if (p.opcode().empty()) return InvalidInput("instruction has no opcode");
  if (auto op = OpcodeFromName(p.opcode())) {
    in->opcode = *op;
  } else {
    in->opcode = Opcode::kCustomCall;
    in->unknown_opcode = p.opcode();
  }
  OPPROBE_ASSIGN_OR_RETURN(in->shape, ReadShape(p.shape()));
  in->parameter_number = p.parameter_number();
  if (in->opcode == Opcode::kParameter && in->parameter_number < 0) return InvalidInput("negative parameter number");
  if (in->opcode == Opcode::kConstant && in->unknown_opcode.empty()) {
    if (p.has_literal()) {
      OPPROBE_ASSIGN_OR_RETURN(Literal lit, ReadLiteral(p.literal(), in->shape));
      in->literal = std::move(lit);
    } else {
      Literal lit;
      lit.mutable_shape() = in->shape;
      lit.set_elided(true);
      in->literal = std::move(lit);
    }
  }
  OPPROBE_RETURN_IF_ERROR(ReadAttributes(p, *in, src + " opprobe_text_attributes"));
  return in;
}

Expected<std::unique_ptr<Module>> ReadModule(const xla::HloModuleProto& mp, const std::string& src) {
  auto module = std::make_unique<Module>(mp.name());
  module->id = mp.id();
  std::unordered_map<int64_t, Computation*> comp_by_id;
  std::unordered_map<int64_t, std::pair<Instruction*, Computation*>> instr_by_id;
  struct PendingCalls {
    Instruction* instr;
    const xla::HloInstructionProto* proto;
    Computation* comp;
  };
  std::vector<PendingCalls> pending;
  for (const auto& cp : mp.computations()) {
    std::string cwhere = fmt::format("{}: computation {} (id {})", src, support::Quote(cp.name()), cp.id());
    if (comp_by_id.count(cp.id())) return InvalidInput(cwhere + ": duplicate computation id");
    if (module->FindComputation(cp.name())) return InvalidInput(cwhere + ": duplicate computation name");
    if (cp.instructions_size() == 0) return InvalidInput(cwhere + ": no instructions");
    auto comp = std::make_unique<Computation>(cp.name());
    comp->id = cp.id();
    comp->is_fusion_computation = cp.is_fusion_computation();
    comp->execution_thread = cp.execution_thread();
    std::unordered_map<int64_t, size_t> local;  // id -> index in cp.instructions
    std::vector<std::unique_ptr<Instruction>> made;
    std::set<int64_t> params;
    for (int k = 0; k < cp.instructions_size(); ++k) {
      const auto& ip = cp.instructions(k);
      std::string iwhere = fmt::format("{}, instruction {} (id {})", cwhere, support::Quote(ip.name()), ip.id());
      auto in = ReadInstruction(ip, src);
      if (!in.ok()) return InvalidInput(iwhere + ": " + in.status().message());
      if (instr_by_id.count(ip.id()) || local.count(ip.id()))
        return InvalidInput(iwhere + ": duplicate instruction id");
      if ((*in)->opcode == Opcode::kParameter && !params.insert((*in)->parameter_number).second)
        return InvalidInput(iwhere + ": duplicate parameter number");
      local[ip.id()] = static_cast<size_t>(k);
      made.push_back(std::move(*in));
    }
    for (size_t k = 0; k < params.size(); ++k)
      if (!params.count(static_cast<int64_t>(k))) return InvalidInput(fmt::format("{}: no parameter {}", cwhere, k));
    // Operands (same computation only), then operands-before-users order with cycle detection.
    const size_t n = made.size();
    std::vector<std::vector<size_t>> deps(n);
    for (size_t k = 0; k < n; ++k) {
      const auto& ip = cp.instructions(static_cast<int>(k));
      for (int64_t oid : ip.operand_ids()) {
        auto it = local.find(oid);
        if (it == local.end())
          return InvalidInput(
              fmt::format("{}, instruction {} (id {}): operand id {} is not an instruction of this computation", cwhere,
                          support::Quote(ip.name()), ip.id(), oid));
        made[k]->operands.push_back(made[it->second].get());
        deps[k].push_back(it->second);
      }
      for (int64_t pid : ip.control_predecessor_ids()) {
        auto it = local.find(pid);
        if (it == local.end())
          return InvalidInput(fmt::format(
              "{}, instruction {} (id {}): control predecessor id {} is not an instruction of this computation", cwhere,
              support::Quote(ip.name()), ip.id(), pid));
        made[k]->mutable_rare().control_predecessors.push_back(made[it->second]->name);
      }
      auto arity = CheckArity(*made[k]);
      if (!arity.ok())
        return InvalidInput(fmt::format("{}, instruction {}: {}", cwhere, support::Quote(ip.name()), arity.message()));
    }
    std::vector<int> state(n, 0);
    std::vector<size_t> order;
    for (size_t root = 0; root < n; ++root) {
      if (state[root]) continue;
      std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
      state[root] = 1;
      while (!stack.empty()) {
        auto& [k, next] = stack.back();
        if (next < deps[k].size()) {
          size_t d = deps[k][next++];
          if (state[d] == 1)
            return InvalidInput(fmt::format("{}, instruction {} (id {}): operand ids form a cycle", cwhere,
                                            support::Quote(cp.instructions(static_cast<int>(d)).name()),
                                            cp.instructions(static_cast<int>(d)).id()));
          if (state[d] == 0) {
            state[d] = 1;
            stack.push_back({d, 0});
          }
        } else {
          state[k] = 2;
          order.push_back(k);
          stack.pop_back();
        }
      }
    }
    Computation* c = comp.get();
    std::vector<Instruction*> raw(n);
    for (size_t k = 0; k < n; ++k) raw[k] = made[k].get();
    for (size_t k : order) {
      Instruction* added = comp->AddInstruction(std::move(made[k]));
      instr_by_id[cp.instructions(static_cast<int>(k)).id()] = {added, c};
      pending.push_back({added, &cp.instructions(static_cast<int>(k)), c});
    }
    auto root_it = local.find(cp.root_id());
    if (root_it == local.end())
      return InvalidInput(fmt::format("{}: root id {} is not one of its instructions", cwhere, cp.root_id()));
    comp->set_root(raw[root_it->second]);
    comp_by_id[cp.id()] = module->AddComputation(std::move(comp));
  }
  if (module->computations().empty()) return InvalidInput(src + ": module has no computations");
  for (const auto& pc : pending) {
    for (int64_t cid : pc.proto->called_computation_ids()) {
      auto it = comp_by_id.find(cid);
      if (it == comp_by_id.end())
        return InvalidInput(
            fmt::format("{}: computation {}, instruction {} (id {}): called computation id {} does not exist", src,
                        support::Quote(pc.comp->name()), support::Quote(pc.instr->name), pc.proto->id(), cid));
      pc.instr->called_computations.push_back(it->second);
    }
    if (pc.instr->opcode == Opcode::kWhile && pc.instr->called_computations.size() != 2)
      return InvalidInput(
          fmt::format("{}: while {} needs a body and a condition", src, support::Quote(pc.instr->name)));
    if (pc.instr->opcode == Opcode::kSelectAndScatter && pc.instr->called_computations.size() != 2)
      return InvalidInput(
          fmt::format("{}: select-and-scatter {} needs select and scatter", src, support::Quote(pc.instr->name)));
  }
  // The call graph must be acyclic.
  std::unordered_map<const Computation*, int> state;
  std::function<Status(const Computation*, int)> visit = [&](const Computation* c, int depth) -> Status {
    if (depth > 1000) return InvalidInput(fmt::format("{}: call graph nested too deeply", src));
    int& s = state[c];
    if (s == 2) return Status::Ok();
    if (s == 1)
      return InvalidInput(fmt::format("{}: computation {} calls itself (call cycle)", src, support::Quote(c->name())));
    s = 1;
    for (const auto& i : c->instructions())
      for (const Computation* callee : i->called_computations) OPPROBE_RETURN_IF_ERROR(visit(callee, depth + 1));
    state[c] = 2;
    return Status::Ok();
  };
  for (const auto& c : module->computations()) OPPROBE_RETURN_IF_ERROR(visit(c.get(), 0));
  Computation* entry = nullptr;
  if (auto it = comp_by_id.find(mp.entry_computation_id()); it != comp_by_id.end()) entry = it->second;
  if (!entry && !mp.entry_computation_name().empty()) entry = module->FindComputation(mp.entry_computation_name());
  if (!entry && mp.entry_computation_id() != 0)
    return InvalidInput(fmt::format("{}: entry computation id {} does not exist", src, mp.entry_computation_id()));
  module->set_entry(entry ? entry : module->computations().back().get());
  if (mp.opprobe_header_attributes_size()) {
    for (const auto& t : mp.opprobe_header_attributes()) module->header_attributes.emplace_back(t.key(), t.value());
  } else {
    if (mp.has_schedule() && mp.schedule().sequences_size())
      module->header_attributes.emplace_back("is_scheduled", "true");
    if (mp.input_output_alias().entries_size()) {
      std::vector<std::string> parts;
      for (const auto& e : mp.input_output_alias().entries())
        parts.push_back(fmt::format("{{{}}}: ({}, {{{}}}, {})", fmt::join(e.output_shape_index(), ","),
                                    e.parameter_number(), fmt::join(e.parameter_shape_index(), ","),
                                    e.kind() == xla::MUST_ALIAS ? "must-alias" : "may-alias"));
      module->header_attributes.emplace_back("input_output_alias", fmt::format("{{ {} }}", fmt::join(parts, ", ")));
    }
  }
  return module;
}

}  // namespace

Expected<std::unique_ptr<Module>> ModuleFromProtoBytes(std::string_view bytes, const std::string& source_name) {
  // Names and strings from the proto reach the message quoted; OneLine is the last guard that it stays one line.
  // A module read is verified (hlo/verifier.h) before it is returned, as the text parser's are.
  auto one_line = [&](Expected<std::unique_ptr<Module>> m) -> Expected<std::unique_ptr<Module>> {
    if (m.ok()) {
      if (Status st = VerifyModule(**m, source_name); !st.ok()) return st;
      return m;
    }
    return Status(m.status().code(), support::OneLine(m.status().message(), 1000));
  };
  if (bytes.empty()) return InvalidInput(source_name + ": empty file, not an HloProto or HloModuleProto");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return InvalidInput(source_name + ": file too large for a protobuf message");
  const int size = static_cast<int>(bytes.size());
  google::protobuf::LogSilencer quiet;  // bad bytes are reported as a Status, not logged by libprotobuf
  {
    xla::HloProto hp;
    if (hp.ParseFromArray(bytes.data(), size) && hp.has_hlo_module() && hp.hlo_module().computations_size() > 0)
      return one_line(ReadModule(hp.hlo_module(), source_name));
  }
  xla::HloModuleProto mp;
  if (!mp.ParseFromArray(bytes.data(), size))
    return InvalidInput(source_name + ": not an HloProto or HloModuleProto (truncated or not protobuf)");
  if (mp.computations_size() == 0)
    return InvalidInput(source_name + ": not an HloProto or HloModuleProto (no computations)");
  return one_line(ReadModule(mp, source_name));
}

}  // namespace opprobe::hlo
