// How a worker's results are compared with the built-in evaluator's (`interp`): every backend that runs units
// (`pjrt:`, `xla:cpu`, `iree:llvm-cpu`: run_backend.h) judges numerics with these tolerances.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "compiler_probe/worker/protocol.h"
#include "hlo/literal.h"
#include "hlo/types.h"

namespace opprobe::compiler_probe::worker {

// Relative and absolute tolerance for comparing a compiler's results with the evaluator's.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance ToleranceFor(hlo::PrimitiveType type);

// Compares one output read back from the worker with the evaluator's value; nullopt when they agree,
// else a one-line description of the first difference (`output 0 element [1,2]: got 1.5, expected 0.5 ...`).
// `accumulated` (dot, convolution, reductions): floating-point elements are compared with an absolute
// tolerance of at least rtol times the output's largest magnitude, since summation order is free.
std::optional<std::string> CompareOutput(const hlo::Literal& expected, const HostArray& got, size_t output_index,
                                         bool accumulated = false);

}  // namespace opprobe::compiler_probe::worker
