// Helpers for the evaluator tests: parse a module from HLO text and evaluate it.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hlo/evaluator/evaluator.h"
#include "hlo/parser.h"

namespace opprobe::hlo::testing {

// Evaluates `text` (an HLO module) on `args`; the Expected carries the evaluator's error.
inline Expected<Literal> EvalText(const std::string& text, const std::vector<Literal>& args = {}) {
  auto m = ParseModule(text, "test.hlo");
  if (!m.ok()) return Status(ErrorCode::kInternal, "test module does not parse: " + m.status().message());
  return Evaluate(**m, args);
}

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
