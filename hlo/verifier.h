// The HLO verifier (issue #16.2): the structural checks XLA's HloVerifier makes, run on every loaded module (the
// HLO text parser, the HloModuleProto reader and the StableHLO converter call it before they return one) and on
// every lowering result (analyzer/lowering's Lower).
//
// Per instruction: the operand count the opcode takes (hlo/opcode.h's arity, or the opcode's own rule), the
// attributes the schema (hlo/attributes.h) requires where a value can be missing (a window, dim_labels, a called
// computation), the result shape against the one hlo/shape_inference.h infers from the operands and attributes
// (or, for ops whose shape is given, the constraints between it and the operands), the signatures of called
// computations (a reducer takes 2N scalars, a while body maps its state to itself, ...), and what asynchronous
// pairs pass on (an async op's state is a tuple of at least (operands, result), whatever binds it late; a copy-done
// gives its copy-start's target, a recv-done its recv's data, an all-gather-done or collective-permute-done its
// start's result, an all-reduce-done its start's).
// Per computation: a root, parameter numbers 0..N-1 each once. Per module: an entry computation.
//
// The success path builds no strings; a violation's message is built once, when it is found.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hlo/instruction.h"
#include "hlo/shape_inference.h"
#include "support/status.h"

namespace opprobe::hlo {

struct VerifyOptions {
  ShapeCheckOptions shapes;
};

// The first violation found: where (the computation, and the instruction unless the violation is the
// computation's own), and what.
struct Violation {
  const Computation* computation = nullptr;
  const Instruction* instruction = nullptr;
  std::string message;
};

std::optional<Violation> FindViolation(const Module& module, const VerifyOptions& options = {});

// "computation C, instruction I: message" (names quoted as support/quote.h does), for callers that have no better
// place for it (the text parser gives the instruction's line and column instead).
std::string DescribeViolation(const Violation& violation);

// kInvalidInput "source: module M, computation C, instruction I: message" for the first violation; Ok when none.
Status VerifyModule(const Module& module, std::string_view source, const VerifyOptions& options = {});

}  // namespace opprobe::hlo
