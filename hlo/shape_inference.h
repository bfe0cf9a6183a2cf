// Shape inference per opcode, the one place that knows how an HLO instruction's result shape follows from its
// operands, attributes and called computations (the facts of XLA's ShapeInference and of its verifier's shape
// checks). The text parser uses it for a result shape the text leaves out (`t = tuple(a, b)`,
// `gte = get-tuple-element(t), index=1`); the verifier (hlo/verifier.h) uses it to check a shape the input
// gives.
//
// InferShape's errors: kInvalidInput when the operands and attributes are inconsistent (the message says how,
// without naming the instruction: callers add that); kUnimplemented when the opcode's result shape is not
// determined by them (broadcast, reshape, convert, iota, custom-call, ...): the text must give it, and
// CheckGivenShape checks it against the operands then.
#pragma once

#include "hlo/instruction.h"
#include "support/status.h"

namespace opprobe::hlo {

struct ShapeCheckOptions {
  // XLA's HloVerifier option of the same name (on in XLA's own tests): floating-point operands and results of
  // different precisions (bf16 operands, an f32 result) compare equal.
  bool allow_mixed_precision = true;
};

Expected<Shape> InferShape(const Instruction& instr, const ShapeCheckOptions& options = {});

// For an opcode whose result shape the text gives (InferShape says kUnimplemented), the constraints between that
// shape and the operands: broadcast's dimensions, reshape's element count, convert's dimensions, iota's
// dimension, ... Ok for opcodes without such constraints (custom-call) or whose shape InferShape derives.
Status CheckGivenShape(const Instruction& instr, const ShapeCheckOptions& options = {});

// The verifier's check of `instr.shape`: against InferShape's result, or CheckGivenShape where the shape is given;
// kInvalidInput "<opcode> has shape X, its operands and attributes give Y" or "<opcode>: <reason>". A dot's or a
// convolution's element type is its preferred one and is not compared. Builds no shape (and no string) when the
// result is an operand's and the check passes.
Status CheckShape(const Instruction& instr, const ShapeCheckOptions& options = {});

// Whether `got` (an instruction's shape) agrees with `want` (the inferred one) as XLA's verifier compares them:
// element types equal (any two floating-point types under allow_mixed_precision), dimensions equal (a bounded
// dynamic dimension compares by its bound, an unbounded `?` one matches any size), tuples element by element;
// layouts ignored.
bool ShapesAgree(const Shape& got, const Shape& want, const ShapeCheckOptions& options = {});

}  // namespace opprobe::hlo
