// Functions XLA has no opcode for, built from HLO instructions the way XLA's own builders expand them: used by
// opprobe's lowerings (analyzer/lowering) and by the StableHLO reader for the CHLO ops XLA's translation expands.
#pragma once

#include "hlo/builder.h"

namespace opprobe::hlo::math {

// erfinv(x), elementwise, in x's floating type: Giles' single-precision approximation (XLA's ErfInv32), w =
// -log((1-x)(1+x)) and one of two polynomials in w; +-inf at |x| == 1.
Instruction* ErfInv(Builder& b, Instruction* x);

}  // namespace opprobe::hlo::math
