// Result shapes XLA's parser infers when the text leaves them out (`t = tuple(a, b)`,
// `gte = get-tuple-element(t), index=1`, `n = negate(x)`): the instruction's operands (and called
// computations) must already have their shapes. Opcodes whose shape cannot be derived from operands and
// attributes alone (broadcast, reshape, convert, custom-call, ...) are an error asking for the shape.
#pragma once

#include "hlo/instruction.h"
#include "hlo/status.h"

namespace opprobe::hlo {

Expected<Shape> InferShape(const Instruction& instr);

}  // namespace opprobe::hlo
