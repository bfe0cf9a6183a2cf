// Helpers for the lowering tests: aten nodes built by hand, literals for their inputs, and
// lower-then-evaluate with the built-in table and the HLO evaluator.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/lowering/lowering.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/literal.h"
#include "hlo/printer.h"

namespace opprobe::analyzer::testing {

inline Value T(hlo::PrimitiveType t, std::vector<int64_t> sizes) {
  TensorMeta m;
  m.dtype = t;
  m.sizes = std::move(sizes);
  return Value::Tensor(m);
}
inline Value Ints(std::vector<int64_t> v) { return Value::IntList(std::move(v)); }
inline Value Bools(std::vector<bool> v) {
  Value x;
  x.kind = Value::Kind::kBoolList;
  x.bools = std::move(v);
  return x;
}
inline Value TList(std::vector<Value> ts) {
  Value x;
  x.kind = Value::Kind::kTensorList;
  for (auto& t : ts) x.tensors.push_back(t.is_none() ? std::nullopt : std::optional<TensorMeta>(t.tensor));
  return x;
}

inline Node MakeNode(std::string op, std::string overload, std::vector<Argument> args, std::vector<Value> outputs) {
  Node n;
  n.op = std::move(op);
  n.overload = std::move(overload);
  n.args = std::move(args);
  n.outputs = std::move(outputs);
  return n;
}

// A literal of type t and dims holding v (row-major; integers converted exactly).
inline hlo::Literal Lit(hlo::PrimitiveType t, std::vector<int64_t> dims, const std::vector<double>& v) {
  hlo::Literal l(hlo::Shape::Array(t, std::move(dims)));
  for (size_t i = 0; i < v.size(); ++i) {
    if (hlo::IsInteger(t)) l.SetFromInt64(static_cast<int64_t>(i), static_cast<int64_t>(v[i]));
    else l.SetFromDouble(static_cast<int64_t>(i), v[i]);
  }
  return l;
}

// Lowers `n`, evaluates it on `args` and returns the outputs (one literal per output); `hlo_text`
// and `dynamic` receive the lowered module's text and dynamic-shape mark when given.
inline std::vector<hlo::Literal> LowerAndRun(const Node& n, const std::vector<hlo::Literal>& args,
                                             std::string* hlo_text = nullptr, bool* dynamic = nullptr) {
  auto m = Lower(n, LoweringTable::Builtin());
  EXPECT_TRUE(m.ok()) << n.op << ": " << m.status().message();
  if (!m.ok()) return {};
  if (hlo_text) *hlo_text = hlo::ToString(*m->module);
  if (dynamic) *dynamic = m->dynamic_shape;
  auto r = hlo::Evaluate(*m->module, args);
  EXPECT_TRUE(r.ok()) << n.op << ": " << r.status().message();
  if (!r.ok()) return {};
  if (r->shape().IsTuple()) return r->tuple_elements();
  std::vector<hlo::Literal> out;
  out.push_back(std::move(*r));
  return out;
}

// Each element within `tol` of `want` (NaN matching NaN, infinities exactly).
inline void ExpectValues(const hlo::Literal& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.element_count(), static_cast<int64_t>(want.size())) << got.shape().ToString(false);
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.GetAsDouble(static_cast<int64_t>(i));
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g;
    else if (std::isinf(want[i])) EXPECT_EQ(g, want[i]) << "element " << i;
    else EXPECT_NEAR(g, want[i], tol) << "element " << i;
  }
}

}  // namespace opprobe::analyzer::testing
