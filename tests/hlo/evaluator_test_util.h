// Helpers for the evaluator tests: parse a module from HLO text and evaluate it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "hlo/attributes.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/parser.h"

namespace opprobe::hlo::testing {

// Evaluates `text` (an HLO module) on `args`; the Expected carries the evaluator's error.
inline Expected<Literal> EvalText(const std::string& text, const std::vector<Literal>& args = {}) {
  auto m = ParseModule(text, "test.hlo");
  if (!m.ok()) return Status(ErrorCode::kInternal, "test module does not parse: " + m.status().message());
  return Evaluate(**m, args);
}

// For the evaluator's own checks of modules the verifier rejects (hlo/verifier.h; other callers, such as a
// lowering's Builder, hand it modules that were never parsed): `text` is a valid module, `break_it` makes it
// inconsistent (a shape that no longer follows from the operands), then it is evaluated.
inline Expected<Literal> EvalBroken(const std::string& text, const std::function<void(hlo::Module&)>& break_it) {
  auto m = ParseModule(text, "test.hlo");
  if (!m.ok()) return Status(ErrorCode::kInternal, "test module does not parse: " + m.status().message());
  break_it(**m);
  return Evaluate(**m, {});
}
// The instruction of the entry computation named `name` (for EvalBroken).
inline Instruction& Named(hlo::Module& m, const std::string& name) { return *m.entry()->FindInstruction(name); }

// The printed value of the result, or "error: <message>".
inline std::string EvalStr(const std::string& text, const std::vector<Literal>& args = {}) {
  auto r = EvalText(text, args);
  if (!r.ok()) return "error: " + r.status().message();
  return r->ValueToString();
}

// A module whose ROOT is `root` over the given instruction lines.
inline std::string Module(const std::string& body) { return "HloModule t\n\nENTRY main {\n" + body + "\n}\n"; }

inline Literal R1F32(const std::vector<float>& v) {
  Literal l(Shape::Array(PrimitiveType::F32, {static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) l.Set<float>(static_cast<int64_t>(i), v[i]);
  return l;
}

}  // namespace opprobe::hlo::testing
