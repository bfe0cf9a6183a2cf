// Recognising called computations by structure (see region.h): binary reducers and selections.
#include "hlo/evaluator/region.h"

#include <algorithm>
#include <unordered_map>

#include "hlo/evaluator/scalar_ops.h"

namespace opprobe::hlo::eval {
namespace {

bool IsScalar(const Shape& s) { return s.IsArray() && s.rank() == 0; }
bool IsScalarOf(const Shape& s, PrimitiveType t) { return IsScalar(s) && s.element_type() == t; }

// maximum / minimum of these types return one of their operands unchanged (the f16 / bf16 kernels
// re-encode a NaN through f32, so those are left to the generic path).
bool ChoosingMinMax(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::S8:
    case PrimitiveType::S16:
    case PrimitiveType::S32:
    case PrimitiveType::S64:
    case PrimitiveType::U8:
    case PrimitiveType::U16:
    case PrimitiveType::U32:
    case PrimitiveType::U64:
    case PrimitiveType::F32:
    case PrimitiveType::F64: return true;
    default: return false;
  }
}

// One instruction of the computation as the table builder evaluates it.
struct Step {
  enum class Op { kSlot, kBool, kAtom, kNot, kAnd, kOr, kXor, kCompareBools, kSelect, kMinMax, kTuple };
  Op op = Op::kSlot;
  bool pred = false;                                   // the value is a pred (else a slot)
  int slot = 0;                                        // kSlot
  bool value = false;                                  // kBool
  int atom = 0;                                        // kAtom
  std::vector<int> args;                               // indices of earlier steps
  ComparisonDirection dir = ComparisonDirection::kEq;  // kCompareBools
  // kMinMax over slots a, b: a when atom nan_a, else b when atom nan_b, else a when atom pick (a>b / a<b),
  // else b. nan atoms are -1 for integers.
  int a = 0, b = 0, nan_a = -1, nan_b = -1, pick = 0;
};

}  // namespace

bool Selection::Compile(const Computation& comp, const std::vector<PrimitiveType>& param_types,
                        const std::vector<PrimitiveType>& result_types, bool tuple_root_ok) {
  *this = Selection();
  const Instruction* root = comp.root();
  auto params = comp.parameters();
  if (!root || params.size() != param_types.size() || param_types.size() > static_cast<size_t>(kMaxSlots)) return false;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i]->parameter_number != static_cast<int64_t>(i) || !IsScalarOf(params[i]->shape, param_types[i]) ||
        !params[i]->unknown_opcode.empty())
      return false;
  num_params_ = static_cast<int>(params.size());
  num_results_ = static_cast<int>(result_types.size());

  // Instructions reachable from the root, operands first.
  std::vector<const Instruction*> order;
  std::unordered_map<const Instruction*, int> index;  // into order / steps
  {
    std::unordered_map<const Instruction*, int> state;
    std::vector<std::pair<const Instruction*, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [ins, next] = stack.back();
      if (next < ins->operands.size()) {
        const Instruction* op = ins->operands[next++];
        if (!op) return false;
        int& s = state[op];
        if (s == 1) return false;  // a cycle: the generic path reports it
        if (s == 0) {
          s = 1;
          stack.emplace_back(op, 0);
        }
      } else {
        state[ins] = 2;
        index[ins] = static_cast<int>(order.size());
        order.push_back(ins);
        stack.pop_back();
      }
    }
    if (order.size() > 64) return false;
  }
  // Every instruction must belong to the computation (the generic path rejects strays).
  {
    std::unordered_map<const Instruction*, bool> mine;
    for (const auto& i : comp.instructions()) mine[i.get()] = true;
    for (const Instruction* i : order)
      if (!mine.count(i)) return false;
  }

  std::unordered_map<const Instruction*, int> slot_of;  // parameters and constants
  for (size_t i = 0; i < params.size(); ++i) slot_of[params[i]] = static_cast<int>(i);
  auto leaf_slot = [&](const Instruction* ins) -> int {
    auto it = slot_of.find(ins);
    return it == slot_of.end() ? -1 : it->second;
  };
  // Atoms, deduplicated.
  slot_types_ = param_types;
  auto add_atom = [&](int a, int b, ComparisonDirection dir, bool total) -> int {
    PrimitiveType t = slot_types_[static_cast<size_t>(a)];
    CompareKernel cmp = a == b && t == PrimitiveType::PRED ? nullptr : GetCompareKernel(dir, total, t);
    for (size_t j = 0; j < atoms_.size(); ++j)
      if (atoms_[j].a == a && atoms_[j].b == b && atoms_[j].cmp == cmp) return static_cast<int>(j);
    atoms_.push_back({a, b, cmp, t, dir, total});
    return static_cast<int>(atoms_.size()) - 1;
  };

  std::vector<Step> steps(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const Instruction& ins = *order[k];
    Step& st = steps[k];
    if (!ins.unknown_opcode.empty()) return false;
    if ((ins.opcode == Opcode::kParameter || ins.opcode == Opcode::kConstant) && !ins.operands.empty()) return false;
    auto arg = [&](int i) { return index.at(ins.operand(i)); };
    auto operand_type = [&](int i) { return ins.operand(i)->shape.element_type(); };
    bool out_pred = IsScalarOf(ins.shape, PrimitiveType::PRED);
    if (ins.opcode != Opcode::kTuple && !IsScalar(ins.shape)) return false;
    for (const Instruction* op : ins.operands)
      if (!IsScalar(op->shape)) return false;
    switch (ins.opcode) {
      case Opcode::kParameter: {
        int s = leaf_slot(&ins);
        if (s < 0) return false;
        st.pred = out_pred;
        if (st.pred) st.op = Step::Op::kAtom, st.atom = add_atom(s, s, ComparisonDirection::kNe, false);
        else st.op = Step::Op::kSlot, st.slot = s;
        break;
      }
      case Opcode::kConstant: {
        if (!ins.literal || ins.literal->elided() || !IsScalar(ins.literal->shape()) ||
            ins.literal->shape().element_type() != ins.shape.element_type() ||
            static_cast<int64_t>(ins.literal->data().size()) != ByteWidth(ins.shape.element_type()))
          return false;
        if (out_pred) {
          st.op = Step::Op::kBool, st.pred = true, st.value = ins.literal->data()[0] != 0;
        } else {
          if (num_params_ + static_cast<int>(constants_.size()) >= kMaxSlots) return false;
          int s = num_params_ + static_cast<int>(constants_.size());
          constants_.push_back(ins.literal->data());
          slot_types_.push_back(ins.shape.element_type());
          slot_of[&ins] = s;
          st.op = Step::Op::kSlot, st.slot = s;
        }
        break;
      }
      case Opcode::kCompare: {
        if (ins.operand_count() != 2 || !out_pred || operand_type(0) != operand_type(1)) return false;
        PrimitiveType t = operand_type(0);
        CompareKernel cmp = GetCompareKernel(ins.comparison_direction, ins.rare().comparison_type == "TOTALORDER", t);
        if (!cmp) return false;
        st.pred = true;
        if (t == PrimitiveType::PRED) {
          st.op = Step::Op::kCompareBools, st.dir = ins.comparison_direction, st.args = {arg(0), arg(1)};
        } else {
          int a = leaf_slot(ins.operand(0)), b = leaf_slot(ins.operand(1));
          if (a < 0 || b < 0) return false;
          st.op = Step::Op::kAtom,
          st.atom = add_atom(a, b, ins.comparison_direction, ins.rare().comparison_type == "TOTALORDER");
        }
        break;
      }
      case Opcode::kNot:
        if (ins.operand_count() != 1 || !out_pred || operand_type(0) != PrimitiveType::PRED) return false;
        st.op = Step::Op::kNot, st.pred = true, st.args = {arg(0)};
        break;
      case Opcode::kAnd:
      case Opcode::kOr:
      case Opcode::kXor:
      case Opcode::kMaximum:
      case Opcode::kMinimum: {
        if (ins.operand_count() != 2 || operand_type(0) != ins.shape.element_type() ||
            operand_type(1) != ins.shape.element_type())
          return false;
        bool minmax = ins.opcode == Opcode::kMaximum || ins.opcode == Opcode::kMinimum;
        if (out_pred) {  // pred maximum is or, minimum is and
          st.pred = true;
          st.op = ins.opcode == Opcode::kAnd || ins.opcode == Opcode::kMinimum ? Step::Op::kAnd
                  : ins.opcode == Opcode::kXor                                 ? Step::Op::kXor
                                                                               : Step::Op::kOr;
          st.args = {arg(0), arg(1)};
          break;
        }
        PrimitiveType t = ins.shape.element_type();
        if (!minmax || !ChoosingMinMax(t)) return false;
        int a = leaf_slot(ins.operand(0)), b = leaf_slot(ins.operand(1));
        if (a < 0 || b < 0) return false;
        bool is_max = ins.opcode == Opcode::kMaximum;
        st.op = Step::Op::kMinMax, st.a = a, st.b = b;
        if (IsFloatingPoint(t)) {
          st.nan_a = add_atom(a, a, ComparisonDirection::kNe, false);
          st.nan_b = add_atom(b, b, ComparisonDirection::kNe, false);
        }
        st.pick = add_atom(a, b, is_max ? ComparisonDirection::kGt : ComparisonDirection::kLt, false);
        break;
      }
      case Opcode::kSelect: {
        if (ins.operand_count() != 3 || operand_type(0) != PrimitiveType::PRED ||
            operand_type(1) != ins.shape.element_type() || operand_type(2) != ins.shape.element_type())
          return false;
        st.op = Step::Op::kSelect, st.pred = out_pred, st.args = {arg(0), arg(1), arg(2)};
        break;
      }
      case Opcode::kTuple: {
        if (&ins != root || !ins.shape.IsTuple()) return false;
        const auto& shapes = ins.shape.tuple_shapes();
        if (shapes.size() != static_cast<size_t>(ins.operand_count())) return false;
        for (int i = 0; i < ins.operand_count(); ++i)
          if (!shapes[static_cast<size_t>(i)].Compatible(ins.operand(i)->shape)) return false;
        st.op = Step::Op::kTuple;
        for (int i = 0; i < ins.operand_count(); ++i) st.args.push_back(arg(i));
        break;
      }
      default: return false;
    }
    if (atoms_.size() > static_cast<size_t>(kMaxAtoms)) return false;
  }

  // The results: the root's tuple elements, or the root itself.
  std::vector<int> results;
  if (root->opcode == Opcode::kTuple) {
    if (!tuple_root_ok) return false;
    results = steps[static_cast<size_t>(index.at(root))].args;
  } else {
    results = {index.at(root)};
  }
  if (results.size() != result_types.size()) return false;
  for (size_t k = 0; k < results.size(); ++k)
    if (!IsScalarOf(order[static_cast<size_t>(results[k])]->shape, result_types[k])) return false;

  // Tabulate: every outcome of the atoms, every step in order.
  size_t combos = size_t{1} << atoms_.size();
  table_.assign(results.size() * combos, kFalse);
  std::vector<int> val(steps.size());  // slot index, or 0/1 for preds
  for (size_t bits = 0; bits < combos; ++bits) {
    auto atom = [&](int j) { return static_cast<int>((bits >> j) & 1); };
    for (size_t k = 0; k < steps.size(); ++k) {
      const Step& st = steps[k];
      auto v = [&](int i) { return val[static_cast<size_t>(st.args[static_cast<size_t>(i)])]; };
      int& out = val[k];
      switch (st.op) {
        case Step::Op::kSlot: out = st.slot; break;
        case Step::Op::kBool: out = st.value; break;
        case Step::Op::kAtom: out = atom(st.atom); break;
        case Step::Op::kNot: out = !v(0); break;
        case Step::Op::kAnd: out = v(0) && v(1); break;
        case Step::Op::kOr: out = v(0) || v(1); break;
        case Step::Op::kXor: out = v(0) != v(1); break;
        case Step::Op::kCompareBools: out = CompareApply(st.dir, v(0) != 0, v(1) != 0); break;
        case Step::Op::kSelect: out = v(0) ? v(1) : v(2); break;
        case Step::Op::kMinMax:
          if (st.nan_a >= 0 && atom(st.nan_a)) out = st.a;
          else if (st.nan_b >= 0 && atom(st.nan_b)) out = st.b;
          else out = atom(st.pick) ? st.a : st.b;
          break;
        case Step::Op::kTuple: out = 0; break;
      }
    }
    for (size_t k = 0; k < results.size(); ++k) {
      int r = val[static_cast<size_t>(results[k])];
      int8_t e = steps[static_cast<size_t>(results[k])].pred ? (r ? kTrue : kFalse) : static_cast<int8_t>(r);
      table_[(k << atoms_.size()) + bits] = e;
      if (e >= 0 && e < num_results_ && static_cast<size_t>(e) != k) crosses_ = true;
    }
  }
  return true;
}

void Selection::BindConstants(const uint8_t** slot) const {
  for (size_t i = 0; i < constants_.size(); ++i) slot[static_cast<size_t>(num_params_) + i] = constants_[i].data();
}

RegionPlan PlanReducer(const Computation* comp, const std::vector<PrimitiveType>& types) {
  RegionPlan plan;
  if (!comp || !comp->root() || types.empty()) return plan;
  auto params = comp->parameters();
  size_t n = types.size();
  if (params.size() != 2 * n) return plan;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i]->parameter_number != static_cast<int64_t>(i) || !IsScalarOf(params[i]->shape, types[i % n]) ||
        !params[i]->unknown_opcode.empty())
      return plan;
  const Instruction* root = comp->root();
  if (n == 1) {
    const Instruction *p0 = params[0], *p1 = params[1];
    if (root == p0) {
      plan.kind = RegionPlan::Kind::kTakeFirst;
      return plan;
    }
    if (root == p1) {
      plan.kind = RegionPlan::Kind::kTakeSecond;
      return plan;
    }
    if (root->unknown_opcode.empty() && root->operand_count() == 2 && IsScalarOf(root->shape, types[0]) &&
        GetBinaryKernel(root->opcode, types[0]) != nullptr) {
      switch (root->opcode) {
        case Opcode::kAdd:
        case Opcode::kMultiply:
        case Opcode::kMaximum:
        case Opcode::kMinimum:
        case Opcode::kAnd:
        case Opcode::kOr:
        case Opcode::kXor:
          if (root->operand(0) == p0 && root->operand(1) == p1) {
            plan.kind = RegionPlan::Kind::kBinary, plan.op = root->opcode;
            return plan;
          }
          if (root->operand(0) == p1 && root->operand(1) == p0) {
            plan.kind = RegionPlan::Kind::kBinary, plan.op = root->opcode, plan.swap = true;
            return plan;
          }
          break;
        default: break;
      }
    }
  }
  std::vector<PrimitiveType> param_types = types;
  param_types.insert(param_types.end(), types.begin(), types.end());
  if (plan.selection.Compile(*comp, param_types, types, /*tuple_root_ok=*/true))
    plan.kind = RegionPlan::Kind::kSelection;
  return plan;
}

RegionPlan PlanSelect(const Computation* comp, PrimitiveType type) {
  RegionPlan plan;
  if (comp && plan.selection.Compile(*comp, {type, type}, {PrimitiveType::PRED}, /*tuple_root_ok=*/false))
    plan.kind = RegionPlan::Kind::kSelection;
  return plan;
}

}  // namespace opprobe::hlo::eval
