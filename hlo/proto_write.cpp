// HloModuleProto conversion, part 3: writing modules, computations and instructions (ids, operands, called
// computations, program shapes, the module header). Attribute values are written by proto_attributes.cpp.
#include <fmt/format.h>

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "hlo/parser.h"
#include "hlo/proto_internal.h"
#include "hlo/proto_io.h"
#include "support/quote.h"

namespace opprobe::hlo {
namespace {

using namespace proto_internal;

struct Ids {
  std::unordered_map<const Instruction*, int64_t> instr;
  std::unordered_map<const Computation*, int64_t> comp;
  std::vector<const Computation*> order;  // callees before callers
};

Expected<Ids> AssignProtoIds(const Module& m) {
  Ids ids;
  std::unordered_map<const Computation*, int> state;
  std::function<Status(const Computation*, int)> visit = [&](const Computation* c, int depth) -> Status {
    if (depth > 1000) return InvalidInput("call graph nested too deeply");
    int& s = state[c];
    if (s == 2) return Status::Ok();
    if (s == 1) return InvalidInput(fmt::format("computation {} calls itself", c->name()));
    s = 1;
    for (const auto& i : c->instructions())
      for (const Computation* callee : i->called_computations) {
        if (!callee) return InvalidInput(fmt::format("instruction {} has a null called computation", i->name));
        OPPROBE_RETURN_IF_ERROR(visit(callee, depth + 1));
      }
    state[c] = 2;
    ids.order.push_back(c);
    return Status::Ok();
  };
  for (const auto& c : m.computations()) OPPROBE_RETURN_IF_ERROR(visit(c.get(), 0));
  int64_t next_comp = 1, next_instr = 1;
  for (const Computation* c : ids.order) {
    ids.comp[c] = next_comp++;
    for (const auto& i : c->instructions()) ids.instr[i.get()] = next_instr++;
  }
  return ids;
}

Status WriteInstruction(const Instruction& in, const Computation& comp, const Ids& ids, xla::HloInstructionProto* p) {
  auto where = [&](const Status& st) { return st.WithContext(fmt::format("instruction {}", in.name)); };
  p->set_name(in.name);
  p->set_opcode(in.unknown_opcode.empty() ? std::string(OpcodeName(in.opcode)) : in.unknown_opcode);
  const bool literal = in.opcode == Opcode::kConstant && in.unknown_opcode.empty() && in.literal;
  OPPROBE_RETURN_IF_ERROR(where(WriteShape(literal ? WithLayout(in.shape) : in.shape, p->mutable_shape())));
  p->set_id(ids.instr.at(&in));
  for (const Instruction* op : in.operands) {
    auto it = ids.instr.find(op);
    if (it == ids.instr.end()) return InvalidInput(fmt::format("instruction {}: operand outside the module", in.name));
    p->add_operand_ids(it->second);
  }
  for (const Computation* c : in.called_computations) p->add_called_computation_ids(ids.comp.at(c));
  for (const std::string& name : in.rare().control_predecessors) {
    const Instruction* pred = comp.FindInstruction(name);
    if (!pred)
      return InvalidInput(
          fmt::format("instruction {}: control predecessor {} is not in {}", in.name, name, comp.name()));
    p->add_control_predecessor_ids(ids.instr.at(pred));
  }
  if (in.opcode == Opcode::kParameter) p->set_parameter_number(in.parameter_number);
  if (literal) OPPROBE_RETURN_IF_ERROR(where(WriteLiteral(*in.literal, p->mutable_literal())));
  return where(WriteAttributes(in, p));
}

Status WriteProgramShape(const Computation& c, xla::ProgramShapeProto* p) {
  for (const Instruction* param : c.parameters()) {
    OPPROBE_RETURN_IF_ERROR(WriteShape(param->shape, p->add_parameters()));
    p->add_parameter_names(param->name);
  }
  if (c.root()) OPPROBE_RETURN_IF_ERROR(WriteShape(c.root()->shape, p->mutable_result()));
  return Status::Ok();
}

// `{ {0}: (41, {}, must-alias), {1}: (2, {0}, may-alias) }` -> alias entries; false when not that form.
bool ParseInputOutputAlias(const std::string& text, xla::HloInputOutputAliasProto* out) {
  std::string t;
  for (char c : text)
    if (c != ' ') t += c;
  if (t.size() < 2 || t.front() != '{' || t.back() != '}') return false;
  size_t i = 1;
  auto read_index = [&](google::protobuf::RepeatedField<int64_t>* idx) -> bool {
    if (i >= t.size() || t[i] != '{') return false;
    size_t close = t.find('}', i);
    if (close == std::string::npos) return false;
    std::string body = t.substr(i + 1, close - i - 1);
    size_t b = 0;
    while (b < body.size()) {
      size_t c = body.find(',', b);
      idx->Add(std::strtoll(body.substr(b, c == std::string::npos ? std::string::npos : c - b).c_str(), nullptr, 10));
      if (c == std::string::npos) break;
      b = c + 1;
    }
    i = close + 1;
    return true;
  };
  while (i < t.size() - 1) {
    auto* e = out->add_entries();
    if (!read_index(e->mutable_output_shape_index())) return false;
    if (t.compare(i, 2, ":(") != 0) return false;
    i += 2;
    size_t comma = t.find(',', i);
    if (comma == std::string::npos) return false;
    e->set_parameter_number(std::strtoll(t.substr(i, comma - i).c_str(), nullptr, 10));
    i = comma + 1;
    if (!read_index(e->mutable_parameter_shape_index())) return false;
    if (t.compare(i, 11, ",must-alias") == 0) {
      e->set_kind(xla::MUST_ALIAS);
      i += 11;
    } else if (t.compare(i, 10, ",may-alias") == 0) {
      e->set_kind(xla::MAY_ALIAS);
      i += 10;
    } else {
      e->set_kind(xla::MAY_ALIAS);
    }
    if (i >= t.size() || t[i] != ')') return false;
    ++i;
    if (i < t.size() - 1 && t[i] == ',') ++i;
  }
  return true;
}

Status FillModuleProto(const Module& m, xla::HloModuleProto* p, bool unique_names = false) {
  OPPROBE_ASSIGN_OR_RETURN(Ids ids, AssignProtoIds(m));
  p->set_name(m.name());
  p->set_id(m.id);
  for (const Computation* c : ids.order) {
    auto* cp = p->add_computations();
    cp->set_name(c->name());
    cp->set_id(ids.comp.at(c));
    cp->set_is_fusion_computation(c->is_fusion_computation);
    cp->set_execution_thread(c->execution_thread);
    if (c->instructions().empty()) return InvalidInput(fmt::format("computation {} has no instructions", c->name()));
    for (const auto& i : c->instructions())
      OPPROBE_RETURN_IF_ERROR(
          WriteInstruction(*i, *c, ids, cp->add_instructions()).WithContext(fmt::format("computation {}", c->name())));
    const Instruction* root = c->root() ? c->root() : c->instructions().back().get();
    cp->set_root_id(ids.instr.at(root));
    OPPROBE_RETURN_IF_ERROR(WriteProgramShape(*c, cp->mutable_program_shape()));
  }
  // XLA requires instruction names to be unique across the module (HloModule::CreateFromProto rejects a
  // repeat); the IR keeps them unique per computation only, so with unique_names a later repeat gets a `.N` suffix.
  if (unique_names) {
    std::unordered_set<std::string> taken, seen;
    for (const auto& cp : p->computations())
      for (const auto& ip : cp.instructions()) taken.insert(ip.name());
    for (auto& cp : *p->mutable_computations())
      for (auto& ip : *cp.mutable_instructions()) {
        if (seen.insert(ip.name()).second) continue;
        for (int k = 1;; ++k) {
          std::string fresh = fmt::format("{}.{}", ip.name(), k);
          if (taken.insert(fresh).second) {
            seen.insert(fresh);
            ip.set_name(fresh);
            break;
          }
        }
      }
  }
  if (!m.entry()) return InvalidInput(fmt::format("module {} has no entry computation", support::Quote(m.name())));
  p->set_entry_computation_name(m.entry()->name());
  p->set_entry_computation_id(ids.comp.at(m.entry()));
  OPPROBE_RETURN_IF_ERROR(WriteProgramShape(*m.entry(), p->mutable_host_program_shape()));
  for (const auto& [k, v] : m.header_attributes) {
    auto* t = p->add_opprobe_header_attributes();
    t->set_key(k);
    t->set_value(v);
    if (k == "is_scheduled" && v == "true") {
      for (const Computation* c : ids.order) {
        auto& seq = (*p->mutable_schedule()->mutable_sequences())[ids.comp.at(c)];
        for (const auto& i : c->instructions()) seq.add_instruction_ids(ids.instr.at(i.get()));
      }
    } else if (k == "input_output_alias") {
      xla::HloInputOutputAliasProto alias;
      if (ParseInputOutputAlias(v, &alias)) *p->mutable_input_output_alias() = alias;
    } else if (k == "frontend_attributes") {
      // The module's frontend attributes have the instruction attribute's syntax.
      Instruction holder;
      if (ParseAttributeValue(holder, k, v, "header").ok())
        for (const auto& [key, value] : holder.rare().frontend_attributes)
          (*p->mutable_frontend_attributes()->mutable_map())[key] = value;
    }
  }
  return Status::Ok();
}

// The first string field (not bytes) of `m` or a message inside it that is not valid UTF-8, as a path
// (`computations[0].instructions[3].custom_call_target`); empty when there is none. Protobuf refuses to write such a
// field (it logs an error and writes a message a reader rejects), and HLO text or StableHLO can carry any bytes in
// a quoted string.
std::string InvalidUtf8Field(const google::protobuf::Message& m) {
  using google::protobuf::FieldDescriptor;
  const auto* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  std::string scratch;
  for (int f = 0; f < d->field_count(); ++f) {
    const FieldDescriptor* fd = d->field(f);
    const bool str = fd->type() == FieldDescriptor::TYPE_STRING;
    const bool msg = fd->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!str && !msg) continue;
    auto check = [&](int index) -> std::string {
      std::string where = index < 0 ? fd->name() : fmt::format("{}[{}]", fd->name(), index);
      if (str) {
        const std::string& v =
            index < 0 ? r->GetStringReference(m, fd, &scratch) : r->GetRepeatedStringReference(m, fd, index, &scratch);
        return support::IsValidUtf8(v) ? std::string() : where;
      }
      if (fd->is_map()) return std::string();  // map entries: walked below as repeated messages
      std::string inner = InvalidUtf8Field(index < 0 ? r->GetMessage(m, fd) : r->GetRepeatedMessage(m, fd, index));
      return inner.empty() ? inner : std::string(where).append(".").append(inner);
    };
    if (fd->is_repeated()) {
      for (int k = 0; k < r->FieldSize(m, fd); ++k) {
        if (fd->is_map()) {
          std::string inner = InvalidUtf8Field(r->GetRepeatedMessage(m, fd, k));
          if (!inner.empty()) return fmt::format("{}[{}].{}", fd->name(), k, inner);
          continue;
        }
        if (std::string bad = check(k); !bad.empty()) return bad;
      }
    } else if (!msg || r->HasField(m, fd)) {
      if (std::string bad = check(-1); !bad.empty()) return bad;
    }
  }
  return std::string();
}

Status Serialize(const google::protobuf::Message& p, const Module& module, std::string* out) {
  if (std::string bad = InvalidUtf8Field(p); !bad.empty())
    return InvalidInput(fmt::format("module {}: {} is not valid UTF-8, which an HloModuleProto string must be",
                                    support::Quote(module.name()), bad));
  if (!p.SerializeToString(out))
    return Internal(fmt::format("module {}: proto serialization failed", support::Quote(module.name())));
  return Status::Ok();
}

}  // namespace

Expected<std::string> ModuleToProtoBytes(const Module& module, bool unique_names) {
  xla::HloModuleProto p;
  OPPROBE_RETURN_IF_ERROR(
      FillModuleProto(module, &p, unique_names).WithContext(fmt::format("module {}", support::Quote(module.name()))));
  std::string out;
  OPPROBE_RETURN_IF_ERROR(Serialize(p, module, &out));
  return out;
}

Expected<std::string> ModuleToHloProtoBytes(const Module& module) {
  xla::HloProto p;
  OPPROBE_RETURN_IF_ERROR(FillModuleProto(module, p.mutable_hlo_module())
                              .WithContext(fmt::format("module {}", support::Quote(module.name()))));
  std::string out;
  OPPROBE_RETURN_IF_ERROR(Serialize(p, module, &out));
  return out;
}

}  // namespace opprobe::hlo
