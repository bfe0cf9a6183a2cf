#include "hlo/verifier.h"

#include <fmt/format.h>

#include <type_traits>

#include "hlo/attributes.h"
#include "support/quote.h"

namespace opprobe::hlo {
namespace {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsOptional<support::HeapOptional<T>> : std::true_type {};

std::string Str(const Shape& s) { return s.ToString(false); }

// The operand counts of variadic opcodes (hlo/opcode.h's arity -1): at least `min`, and even or odd where the
// operands come in groups. Empty for opcodes that take any number.
struct VariadicRule {
  int min = 0;
  int parity = -1;  // 0: even, 1: odd, -1: any
};
VariadicRule VariadicOperands(Opcode op) {
  switch (op) {
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllToAll:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kConcatenate:
    case Opcode::kConditional:
    case Opcode::kDynamicReshape:
    case Opcode::kMap:
    case Opcode::kReduceScatter:
    case Opcode::kSort: return {1, -1};
    case Opcode::kDynamicSlice: return {2, -1};
    case Opcode::kDynamicUpdateSlice: return {3, -1};
    case Opcode::kReduce:
    case Opcode::kReduceWindow: return {2, 0};
    case Opcode::kScatter: return {3, 1};
    case Opcode::kRng: return {2, -1};
    default: return {};
  }
}

std::optional<std::string> CheckOperandCount(const Instruction& in) {
  const int n = in.operand_count();
  const int arity = OpcodeArity(in.opcode);
  // async-update and async-done pass on every operand of the wrapped computation, as XLA writes them.
  if (in.opcode == Opcode::kAsyncUpdate || in.opcode == Opcode::kAsyncDone) {
    if (n < 1) return fmt::format("{} needs its async-start as operand 0", OpcodeName(in.opcode));
    return std::nullopt;
  }
  if (arity >= 0) {
    if (n != arity) return fmt::format("{} takes {} operand(s), has {}", OpcodeName(in.opcode), arity, n);
    return std::nullopt;
  }
  const VariadicRule rule = VariadicOperands(in.opcode);
  if (n < rule.min || (rule.parity >= 0 && n % 2 != rule.parity))
    return fmt::format("{} cannot take {} operand(s)", OpcodeName(in.opcode), n);
  return std::nullopt;
}

// A required attribute whose value can be missing (an optional struct, a called computation) is there.
std::optional<std::string> CheckRequiredAttributes(const Instruction& in) {
  for (const AttrSpec& spec : OpcodeAttributes(in.opcode)) {
    if (spec.need != AttrNeed::kRequired) continue;
    bool present = true;
    if (spec.kind() == AttrKind::kComputation) {
      present = spec.slot >= 0 && static_cast<size_t>(spec.slot) < in.called_computations.size() &&
                in.called_computations[static_cast<size_t>(spec.slot)] != nullptr;
    } else {
      present = VisitField(spec.field, in, [](auto, const auto& value) {
        if constexpr (IsOptional<std::decay_t<decltype(value)>>::value) return value.has_value();
        return true;
      });
    }
    if (!present) return fmt::format("{} needs {}=", OpcodeName(in.opcode), spec.key);
  }
  for (const Computation* c : in.called_computations)
    if (!c && in.opcode != Opcode::kCustomCall)
      return fmt::format("{} calls a computation that is missing", OpcodeName(in.opcode));
  return std::nullopt;
}

const Shape* TupleElement(const Shape& s, size_t i) {
  return s.IsTuple() && s.tuple_shapes().size() > i ? &s.tuple_shapes()[i] : nullptr;
}

// Asynchronous pairs: the state an async op carries, and the shapes a *-done passes on.
std::optional<std::string> CheckAsync(const Instruction& in, const ShapeCheckOptions& o) {
  auto mismatch = [&](const Shape& want) -> std::optional<std::string> {
    if (ShapesAgree(in.shape, want, o)) return std::nullopt;
    return fmt::format("{} has shape {}, its operand {} gives {}", OpcodeName(in.opcode), Str(in.shape),
                       support::Quote(in.operand(0)->name), Str(want));
  };
  switch (in.opcode) {
    // XLA binds an async op's operands and results late (async-start's `()` result, async-update adding operands,
    // a loop carrying the async state through a get-tuple-element): what stays fixed is the state's form, a
    // tuple of at least (operands, result).
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
    case Opcode::kAsyncStart: {
      const Shape& state = in.opcode == Opcode::kAsyncStart ? in.shape : in.operand(0)->shape;
      if (!state.IsTuple() || state.tuple_shapes().size() < 2)
        return fmt::format("{} needs an async state, a tuple of at least (operands, result); {} is {}",
                           OpcodeName(in.opcode), in.opcode == Opcode::kAsyncStart ? "its shape" : "its operand",
                           Str(state));
      if (in.opcode == Opcode::kAsyncUpdate && !(in.shape.IsTuple() && in.shape.tuple_shapes().size() >= 2))
        return fmt::format("async-update has shape {}, not an async state", Str(in.shape));
      return std::nullopt;
    }
    case Opcode::kCopyStart: {
      const Shape* target = TupleElement(in.shape, 0);
      const Shape* source = TupleElement(in.shape, 1);
      if (!target || !source)
        return fmt::format("copy-start has shape {}, not a tuple of (target, source, context)", Str(in.shape));
      if (!ShapesAgree(*target, in.operand(0)->shape, o) || !ShapesAgree(*source, in.operand(0)->shape, o))
        return fmt::format("copy-start has shape {}, its operand is {}", Str(in.shape), Str(in.operand(0)->shape));
      return std::nullopt;
    }
    case Opcode::kCopyDone:
      if (const Shape* target = TupleElement(in.operand(0)->shape, 0)) return mismatch(*target);
      return fmt::format("copy-done's operand {} is {}, not copy-start's tuple", support::Quote(in.operand(0)->name),
                         Str(in.operand(0)->shape));
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone: {
      const Shape& s = in.operand(0)->shape;
      // The start's tuple (operands, results[, contexts]); a start written with its result shape alone passes it on.
      if (const Shape* result = TupleElement(s, 1)) return mismatch(*result);
      return mismatch(s);
    }
    case Opcode::kRecvDone: {
      const Shape* data = TupleElement(in.operand(0)->shape, 0);
      const Shape* data_out = TupleElement(in.shape, 0);
      if (data && data_out && !ShapesAgree(*data_out, *data, o))
        return fmt::format("recv-done has shape {}, its recv receives {}", Str(in.shape), Str(*data));
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

std::optional<Violation> CheckInstruction(const Computation& comp, const Instruction& in, const VerifyOptions& o) {
  auto at = [&](std::string message) { return Violation{&comp, &in, std::move(message)}; };
  if (!in.unknown_opcode.empty()) return std::nullopt;  // an opcode this IR does not know: nothing to check
  for (const Instruction* operand : in.operands)
    if (!operand) return at(fmt::format("{} has a missing operand", OpcodeName(in.opcode)));
  if (auto m = CheckOperandCount(in)) return at(std::move(*m));
  if (auto m = CheckRequiredAttributes(in)) return at(std::move(*m));
  if (in.opcode == Opcode::kConstant && in.literal && !in.literal->elided() &&
      !ShapesAgree(in.literal->shape(), in.shape, ShapeCheckOptions{false}))
    return at(fmt::format("constant has shape {}, its literal {}", Str(in.shape), Str(in.literal->shape())));
  if (Status st = CheckShape(in, o.shapes); !st.ok()) return at(st.message());
  if (auto m = CheckAsync(in, o.shapes)) return at(std::move(*m));
  return std::nullopt;
}

std::optional<Violation> CheckComputation(const Computation& comp, const VerifyOptions& o) {
  if (!comp.root()) return Violation{&comp, nullptr, "the computation has no root instruction"};
  // One pass over the instructions (each is touched once: a module holds hundreds of thousands), collecting the
  // parameters; then their numbers must be 0..N-1, each once.
  std::vector<const Instruction*> params;
  const auto& instrs = comp.instructions();
  for (size_t k = 0; k < instrs.size(); ++k) {
    PrefetchAhead(instrs, k);
    const Instruction* i = instrs[k].get();
    if (i->opcode == Opcode::kParameter) params.push_back(i);
    if (auto v = CheckInstruction(comp, *i, o)) return v;
  }
  std::vector<const Instruction*> by_number(params.size(), nullptr);
  for (const Instruction* p : params) {
    const int64_t k = p->parameter_number;
    if (k < 0 || static_cast<size_t>(k) >= params.size())
      return Violation{&comp, p,
                       fmt::format("parameter number {} outside 0..{} (the computation has {} parameters)", k,
                                   static_cast<int64_t>(params.size()) - 1, params.size())};
    if (by_number[static_cast<size_t>(k)])
      return Violation{
          &comp, p,
          fmt::format("parameter number {} is also {}'s", k, support::Quote(by_number[static_cast<size_t>(k)]->name))};
    by_number[static_cast<size_t>(k)] = p;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Violation> FindViolation(const Module& module, const VerifyOptions& options) {
  if (!module.entry()) return Violation{nullptr, nullptr, "the module has no entry computation"};
  for (const auto& c : module.computations())
    if (auto v = CheckComputation(*c, options)) return v;
  return std::nullopt;
}

std::string DescribeViolation(const Violation& v) {
  std::string where;
  if (v.computation) where = fmt::format("computation {}", support::Quote(v.computation->name()));
  if (v.instruction)
    where += fmt::format("{}instruction {}", where.empty() ? "" : ", ", support::Quote(v.instruction->name));
  return where.empty() ? v.message : where + ": " + v.message;
}

Status VerifyModule(const Module& module, std::string_view source, const VerifyOptions& options) {
  auto v = FindViolation(module, options);
  if (!v) return Status::Ok();
  return InvalidInput(support::OneLine(
      fmt::format("{}: module {}, {}", source, support::Quote(module.name()), DescribeViolation(*v)), 1000));
}

}  // namespace opprobe::hlo
