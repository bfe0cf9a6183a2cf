#include <gtest/gtest.h>

#include "compiler_probe/registry.h"
#include "compiler_probe/rules/rules_backend.h"
#include "hlo/builder.h"
#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe {
namespace {

using hlo::PrimitiveType;

std::unique_ptr<Backend> Make(const std::string& spec) {
  auto b = Registry::Builtin().Create(spec);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return std::move(b).value();
}

// A probe unit around the instruction `make` builds from two f32[4] parameters.
template <typename F>
std::unique_ptr<hlo::Module> Unit(F make, PrimitiveType t = PrimitiveType::F32) {
  hlo::Builder b("m");
  auto* x = b.NextParameter(hlo::Shape::Array(t, {4}));
  auto* y = b.NextParameter(hlo::Shape::Array(t, {4}));
  hlo::Instruction* root = make(b, x, y);
  auto m = b.Build(root);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return hlo::MakeProbeModule(*m->entry()->root());
}

TEST(RulesBackend, NeuronRejectsComplexWithTheDocumentedReason) {
  auto backend = Make("rules:neuron-trn1");
  EXPECT_EQ(backend->id(), "rules:neuron-trn1");
  auto convert = Unit([](hlo::Builder& b, auto* x, auto*) { return b.Convert(x, PrimitiveType::C64); });
  Verdict v = backend->probe(*convert);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("NCC_EVRF004"), std::string::npos) << v.reason;
  auto mul = Unit([](hlo::Builder& b, auto* x, auto* y) { return b.Binary(hlo::Opcode::kMultiply, x, y); },
                  PrimitiveType::C64);
  EXPECT_EQ(backend->probe(*mul).kind, Verdict::Kind::kUnsupported);
  auto add = Unit([](hlo::Builder& b, auto* x, auto* y) { return b.Binary(hlo::Opcode::kAdd, x, y); });
  EXPECT_TRUE(backend->probe(*add).supported());
}

TEST(RulesBackend, IntegerDotDependsOnTheGeneration) {
  auto dot = Unit(
      [](hlo::Builder& b, auto* x, auto* y) {
        hlo::DotDimensionNumbers d;
        d.lhs_contracting_dimensions = {0};
        d.rhs_contracting_dimensions = {0};
        return b.Dot(x, y, d);
      },
      PrimitiveType::S32);
  EXPECT_TRUE(Make("rules:neuron-trn1")->probe(*dot).supported());
  Verdict v = Make("rules:neuron-trn2")->probe(*dot);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("EVRF035"), std::string::npos);
}

TEST(RulesBackend, CalledComputationsAreChecked) {
  // An integer scatter whose combiner adds is a scatter-reduce, rejected on Neuron.
  hlo::Builder b("m");
  auto* operand = b.NextParameter(hlo::Shape::Array(PrimitiveType::S32, {8}));
  auto* idx = b.NextParameter(hlo::Shape::Array(PrimitiveType::S32, {2, 1}));
  auto* upd = b.NextParameter(hlo::Shape::Array(PrimitiveType::S32, {2}));
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  auto* s = b.Scatter({operand}, idx, {upd}, dn, b.ScalarBinaryComputation(hlo::Opcode::kAdd, PrimitiveType::S32));
  auto m = b.Build(s);
  auto unit = hlo::MakeProbeModule(*m->entry()->root());
  Verdict v = Make("rules:neuron-trn1")->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("EVRF016"), std::string::npos);
  EXPECT_TRUE(Make("rules:cpu")->probe(*unit).supported());
}

TEST(RulesBackend, CustomCallsAndDynamicShapes) {
  hlo::Builder b("m");
  auto* x = b.NextParameter(hlo::Shape::Array(PrimitiveType::F32, {4}));
  auto* cc = b.CustomCall({x}, "my_kernel", x->shape);
  auto m = b.Build(cc);
  auto unit = hlo::MakeProbeModule(*m->entry()->root());
  for (const char* spec : {"rules:cpu", "rules:gpu", "rules:tpu", "rules:neuron-trn1"})
    EXPECT_EQ(Make(spec)->probe(*unit).kind, Verdict::Kind::kUnsupported) << spec;

  hlo::Builder b2("m");
  auto* y = b2.NextParameter(hlo::Shape::Array(PrimitiveType::F32, {4}));
  auto* n = b2.ConstantScalar(PrimitiveType::S32, 2);
  auto* dyn = b2.SetDimensionSize(y, n, 0);
  auto m2 = b2.Build(b2.Unary(hlo::Opcode::kNegate, dyn));
  auto unit2 = hlo::MakeProbeModule(*m2->entry()->root());
  Verdict v = Make("rules:neuron-trn1")->probe(*unit2);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("EMOD025"), std::string::npos);
  EXPECT_TRUE(Make("rules:cpu")->probe(*unit2).supported());
}

TEST(RulesBackend, VersionChangesWithTheProfile) {
  EXPECT_NE(Make("rules:neuron-trn1")->version(), Make("rules:neuron-trn2")->version());
  EXPECT_EQ(Make("rules:cpu")->version(), Make("rules:cpu")->version());
}

TEST(RulesProfile, ErrorsNameTheJsonPath) {
  auto bad = rules::ParseProfile(
      R"({"name":"x","rules":[{"verdict":"unsupported","reason":"r","match":{"opcodes":["ad"]}}]})", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "p.json: rules[0].match.opcodes[0]: unknown opcode 'ad'");
  auto no_reason = rules::ParseProfile(R"({"name":"x","rules":[{"verdict":"unsupported","match":{}}]})", "p.json");
  ASSERT_FALSE(no_reason.ok());
  EXPECT_EQ(no_reason.status().message(), "p.json: rules[0].reason: an unsupported rule must say why");
  auto not_json = rules::ParseProfile("{", "p.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("p.json: not valid JSON"), std::string::npos);
  auto bad_type = rules::ParseProfile(
      R"({"name":"x","rules":[{"verdict":"supported","match":{"element_types":["f33"]}}]})", "p.json");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.status().message(), "p.json: rules[0].match.element_types[0]: unknown element type 'f33'");
}

TEST(RulesProfile, EveryBuiltinProfileParses) {
  auto names = rules::BuiltinProfileNames();
  EXPECT_GE(names.size(), 5u);
  for (const auto& n : names) {
    auto p = rules::ParseProfile(rules::BuiltinProfileText(n), n);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->name, n);
    for (const auto& r : p->rules)
      if (!r.supported) { EXPECT_FALSE(r.source.empty()) << n << " rule " << r.id << " has no source"; }
  }
}

TEST(Registry, UnknownBackendSuggestsTheClosestName) {
  auto b = Registry::Builtin().Create("rulez:cpu");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(b.status().message().find("did you mean 'rules'?"), std::string::npos) << b.status().message();
  auto missing = Registry::Builtin().Create("rules:no-such-profile");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("neither a built-in profile"), std::string::npos);
}

}  // namespace
}  // namespace opprobe::compiler_probe
