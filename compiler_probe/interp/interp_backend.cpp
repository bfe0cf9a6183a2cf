#include "compiler_probe/interp/interp_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <new>
#include <optional>
#include <string_view>

#include "hlo/probe_unit.h"
#include "opprobe_version.h"

namespace opprobe::compiler_probe::interp {

std::string InterpBackend::version() const { return fmt::format("{}+{}", OPPROBE_VERSION, hlo::kEvaluatorRevision); }

uint64_t SeedFor(const hlo::Module& unit) {
  std::string fp = hlo::Fingerprint(unit);
  uint64_t seed = 0;
  for (char c : fp) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 0;
    seed = seed * 16 + static_cast<uint64_t>(d);
  }
  return seed;
}

namespace {

Verdict ProbeUnit(const hlo::Module& unit, const hlo::EvaluatorOptions& options) {
  const hlo::Computation* entry = unit.entry();
  if (!entry) return Verdict::Unsupported("the module has no entry computation");
  // Refuse units too large to evaluate before allocating anything. A probe answers whether the op runs, so
  // one unit's inputs and its result together get at most kProbeBudget (64 MiB): real tensors (a batch of 96
  // images at 112x112, `f32[20000,20000]`) get an unsupported verdict that says so at once instead of seconds
  // to minutes of evaluation each. The bundled samples' largest unit takes 27 MiB.
  constexpr int64_t kProbeBudget = int64_t{64} << 20;
  int64_t total_bytes = 0;
  auto charge = [&](const hlo::Shape& shape, std::string_view what) -> std::optional<Verdict> {
    std::vector<const hlo::Shape*> shapes{&shape};
    while (!shapes.empty()) {
      const hlo::Shape* s = shapes.back();
      shapes.pop_back();
      if (s->IsTuple()) {
        for (const auto& t : s->tuple_shapes()) shapes.push_back(&t);
        continue;
      }
      if (!s->IsArray()) continue;
      auto n = s->ElementCount();
      if (!n.ok()) return Verdict::Unsupported(n.status().message());
      int64_t width = hlo::ByteWidth(s->element_type());
      if (width && *n > options.max_literal_bytes / width)
        return Verdict::Unsupported(
            fmt::format("{} of shape {} is too large for the interpreter", what, s->ToString(false)));
      if (width && *n > (kProbeBudget - total_bytes) / width)
        return Verdict::Unsupported(fmt::format(
            "too large for the interpreter: the unit's inputs and result exceed its {} MiB budget for one probe "
            "(at {} of shape {})",
            kProbeBudget >> 20, what, s->ToString(false)));
      total_bytes += *n * width;
    }
    return std::nullopt;
  };
  for (const hlo::Instruction* p : entry->parameters())
    if (auto refused = charge(p->shape, fmt::format("input {}", p->name))) return *refused;
  if (const hlo::Instruction* root = entry->root())
    if (auto refused = charge(root->shape, "the result")) return *refused;
  hlo::EvaluatorOptions o = options;
  o.max_literal_bytes = std::min(o.max_literal_bytes, kProbeBudget);
  o.seed = SeedFor(unit);
  std::vector<hlo::Literal> args = hlo::RandomArguments(*entry, o.seed);
  auto result = hlo::Evaluate(unit, args, o);
  if (result.ok()) return Verdict::Supported();
  const Status& st = result.status();
  switch (st.code()) {
    case ErrorCode::kUnimplemented:
    case ErrorCode::kInvalidInput: return Verdict::Unsupported(st.message());
    default: return Verdict::Error(st.message());
  }
}

}  // namespace

Verdict InterpBackend::probe(const hlo::Module& unit) {
  auto start = std::chrono::steady_clock::now();
  Verdict v;
  try {
    v = ProbeUnit(unit, options_);
  } catch (const std::bad_alloc&) {
    v = Verdict::Unsupported("out of memory while evaluating");
  } catch (const std::exception& e) {
    v = Verdict::Error(fmt::format("internal fault in the evaluator: {}", e.what()));
  } catch (...) { v = Verdict::Error("internal fault in the evaluator"); }
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return v;
}

void Register(Registry& registry) {
  registry.Register({"interp", "interp",
                     "built-in executing runtime: evaluates each unit on random inputs (XLA semantics, Eigen dot/conv)",
                     [](const std::string& arg, const BackendOptions&) -> Expected<std::unique_ptr<Backend>> {
                       if (!arg.empty())
                         return InvalidInput(fmt::format("interp takes no argument (got 'interp:{}')", arg));
                       return std::unique_ptr<Backend>(std::make_unique<InterpBackend>());
                     }});
}

}  // namespace opprobe::compiler_probe::interp
