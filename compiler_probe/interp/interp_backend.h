// `interp`: opprobe's own executing runtime (in the spirit of XLA's Interpreter platform). Each probe
// unit is evaluated by hlo::Evaluate on deterministic random inputs seeded from its fingerprint:
// supported when it evaluates, unsupported (with the reason) when the evaluator does not implement it
// or its shapes are inconsistent, error on an internal fault. Never throws, never crashes the process.
#pragma once

#include <memory>
#include <string>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"
#include "hlo/evaluator/evaluator.h"

namespace opprobe::compiler_probe::interp {

class InterpBackend : public Backend {
 public:
  explicit InterpBackend(hlo::EvaluatorOptions options = {}) : options_(options) {}
  std::string id() const override { return "interp"; }
  // opprobe's version + the evaluator revision, e.g. `0.1.0+eval-1`.
  std::string version() const override;
  Verdict probe(const hlo::Module& unit) override;

 private:
  hlo::EvaluatorOptions options_;
};

// The seed of a unit's random inputs: its fingerprint read as a 64-bit number.
uint64_t SeedFor(const hlo::Module& unit);

// Registers `interp` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

}  // namespace opprobe::compiler_probe::interp
