// The HLO evaluator: executes a module on the CPU with XLA's defined semantics (the engine of the
// `interp` backend, `opprobe run` and the conformance suite), on the calling thread. dot and convolution
// go through oneDNN when they accumulate in f32 (small ones, and cases oneDNN does not take, through
// Eigen, as all other types); reduce, reduce-window and select-and-scatter whose called computation is a
// recognised pattern run as typed loops (see compiled_regions).
//
// Errors are values: an opcode or custom-call the evaluator does not implement is kUnimplemented
// (naming it), shapes that do not fit together are kInvalidInput, and sizes beyond the options'
// limits are kUnimplemented ("too large") rather than an allocation of terabytes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "support/status.h"

namespace opprobe::hlo {

// Bumped whenever an evaluation result may change; part of the `interp` backend's version.
inline constexpr std::string_view kEvaluatorRevision = "eval-3";

struct EvaluatorOptions {
  // Largest single value (literal) the evaluator will allocate.
  int64_t max_literal_bytes = int64_t{2} << 30;
  // Largest multiply-add count of one dot or convolution.
  double max_flops = 2e11;
  // Largest number of instruction evaluations of one evaluation, called computations included (a sort's
  // comparator counts once per comparison): a sort of 400k elements through a 25-instruction comparator (200M) stops
  // in seconds with an error that says so, instead of minutes.
  int64_t max_instructions = 10'000'000;
  // Largest number of iterations of one while loop.
  int64_t max_while_iterations = 1'000'000;
  // Largest loop state one while loop may carry over all its iterations together (iterations x state bytes):
  // a loop that never ends over a large state stops in seconds, not after a million copies of it.
  int64_t max_while_state_bytes = int64_t{4} << 30;
  // Seed of rng / rng-bit-generator and of elided (`{...}`) constants.
  uint64_t seed = 0;
  // reduce, reduce-window and select-and-scatter whose called computation is a recognised pattern (one
  // binary op such as a sum or max, or a selection such as argmax or max-with-index) run as typed loops;
  // false evaluates the computation per element on every path (the same results; tests compare both).
  bool compiled_regions = true;
};

// Evaluates the module's entry computation on `arguments` (one per entry parameter, in order).
Expected<Literal> Evaluate(const Module& module, const std::vector<Literal>& arguments,
                           const EvaluatorOptions& options = {});
// Evaluates one computation; `arguments` are borrowed.
Expected<Literal> EvaluateComputation(const Computation& computation, const std::vector<const Literal*>& arguments,
                                      const EvaluatorOptions& options = {});

// kInvalidInput naming the parameter when the argument count, an element type or dims do not match.
Status CheckArguments(const Computation& entry, const std::vector<Literal>& arguments);

// A deterministic pseudo-random value of `shape` (tuples recursively): floats and complex parts in
// [-1, 1), signed integers in [-8, 8], unsigned in [0, 16), pred true/false.
Literal RandomLiteral(const Shape& shape, uint64_t seed);
// One random literal per parameter of `entry`, seeded from `seed` and the parameter number.
std::vector<Literal> RandomArguments(const Computation& entry, uint64_t seed);

}  // namespace opprobe::hlo
