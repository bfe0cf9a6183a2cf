#include "compiler_probe/interp/interp_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <new>

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
  // Refuse inputs too large to materialise before allocating them. A probe answers whether the op runs, so
  // one unit's inputs together get at most kProbeInputBudget (256 MiB): real tensors of billions of elements
  // (`f32[20000,20000]`) get an unsupported verdict that says so at once instead of minutes of evaluation.
  constexpr int64_t kProbeInputBudget = int64_t{256} << 20;
  int64_t total_bytes = 0;
  for (const hlo::Instruction* p : entry->parameters()) {
    std::vector<const hlo::Shape*> shapes{&p->shape};
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
        return Verdict::Unsupported(fmt::format("input {} of shape {} is too large for the interpreter", p->name,
                                                s->ToString(false)));
      if (width && *n > (kProbeInputBudget - total_bytes) / width)
        return Verdict::Unsupported(fmt::format(
            "inputs too large for the interpreter: more than its {} MiB budget for one probe (at {} of shape {})",
            kProbeInputBudget >> 20, p->name, s->ToString(false)));
      total_bytes += *n * width;
    }
  }
  hlo::EvaluatorOptions o = options;
  o.max_literal_bytes = std::min(o.max_literal_bytes, kProbeInputBudget);
  o.seed = SeedFor(unit);
  std::vector<hlo::Literal> args = hlo::RandomArguments(*entry, o.seed);
  auto result = hlo::Evaluate(unit, args, o);
  if (result.ok()) return Verdict::Supported();
  const Status& st = result.status();
  switch (st.code()) {
    case ErrorCode::kUnimplemented: case ErrorCode::kInvalidInput:
      return Verdict::Unsupported(st.message());
    default:
      return Verdict::Error(st.message());
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
  } catch (...) {
    v = Verdict::Error("internal fault in the evaluator");
  }
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return v;
}

void Register(Registry& registry) {
  registry.Register({"interp", "interp",
                     "built-in executing runtime: evaluates each unit on random inputs (XLA semantics, Eigen dot/conv)",
                     [](const std::string& arg, const BackendOptions&) -> Expected<std::unique_ptr<Backend>> {
                       if (!arg.empty()) return InvalidInput(fmt::format("interp takes no argument (got 'interp:{}')", arg));
                       return std::unique_ptr<Backend>(std::make_unique<InterpBackend>());
                     }});
}

}  // namespace opprobe::compiler_probe::interp
