// Profile synthesis (compiler_probe/rules/profile_synthesis.h): real verdicts -> a rules profile that the rules
// backend reads back and that reproduces them.
#include "compiler_probe/rules/profile_synthesis.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "compiler_probe/rules/rules_backend.h"
#include "hlo/builder.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe::rules {
namespace {
using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;

std::unique_ptr<hlo::Module> BinaryUnit(Opcode op, PrimitiveType type, std::vector<int64_t> dims = {4}) {
  hlo::Builder b("m");
  auto* x = b.Parameter(0, Shape::Array(type, dims));
  auto* y = b.Parameter(1, Shape::Array(type, dims));
  auto module = b.Build(b.Binary(op, x, y));
  return hlo::MakeProbeModule(*module->entry()->root());
}

std::unique_ptr<hlo::Module> ConvertUnit(PrimitiveType from, PrimitiveType to) {
  hlo::Builder b("m");
  auto* x = b.Parameter(0, Shape::Array(from, {4}));
  auto module = b.Build(b.Convert(x, to));
  return hlo::MakeProbeModule(*module->entry()->root());
}

// Units and their recorded verdicts; owns the modules the RecordedUnits point at.
struct Recording {
  std::vector<std::unique_ptr<hlo::Module>> modules;
  std::vector<RecordedUnit> units;
  RecordingSource source;

  void Add(std::unique_ptr<hlo::Module> unit, Verdict v) {
    units.push_back({unit.get(), std::move(v), hlo::InstructionSignature(*unit->entry()->root())});
    modules.push_back(std::move(unit));
  }
  nlohmann::json Synthesize(const std::string& name) const { return SynthesizeProfile(units, source, name); }
};

Recording Recorded() {
  Recording r;
  r.source = {{"cmd:mycc {hlo_pb}"}, {"mycc 1.2"}, {"model.json"}};
  r.Add(BinaryUnit(Opcode::kAdd, PrimitiveType::F32), Verdict::Supported());
  r.Add(BinaryUnit(Opcode::kAdd, PrimitiveType::C64), Verdict::Unsupported("exit status 1: complex add"));
  r.Add(BinaryUnit(Opcode::kMultiply, PrimitiveType::F32), Verdict::Unsupported("exit status 1: no multiply"));
  r.Add(BinaryUnit(Opcode::kMultiply, PrimitiveType::S32), Verdict::Unsupported("exit status 1: no multiply"));
  r.Add(BinaryUnit(Opcode::kSubtract, PrimitiveType::F32), Verdict::Supported());
  r.Add(ConvertUnit(PrimitiveType::F32, PrimitiveType::S32), Verdict::Supported());
  r.Add(ConvertUnit(PrimitiveType::S64, PrimitiveType::S32), Verdict::Unsupported("no s64 input"));
  r.Add(BinaryUnit(Opcode::kDivide, PrimitiveType::F32), Verdict::Error("compiler killed by signal 11 (SIGSEGV)"));
  return r;
}

RulesBackend Load(const nlohmann::json& profile) {
  auto parsed = ParseProfile(profile.dump(), "recorded");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << profile.dump(2);
  return RulesBackend(parsed.ok() ? *parsed : Profile{});
}

TEST(ProfileSynthesisTest, RulesReproduceTheRecordedVerdicts) {
  auto result = Recorded();
  nlohmann::json p = result.Synthesize("mycc");
  EXPECT_EQ(p["name"], "mycc");
  EXPECT_EQ(p["default"]["verdict"], "supported");
  EXPECT_EQ(
      p["description"],
      "recorded from cmd:mycc {hlo_pb}: 8 unique units, 5 unsupported; the rules reproduce 8 of 8 checked verdicts");
  EXPECT_NE(p["source"].get<std::string>().find("backend version mycc 1.2"), std::string::npos);
  auto backend = Load(p);
  for (const auto& u : result.units)
    EXPECT_EQ(backend.probe(*u.unit).supported(), u.verdict.supported()) << u.signature;
}

TEST(ProfileSynthesisTest, RulesAreAsGeneralAsTheVerdictsAllow) {
  nlohmann::json p = Recorded().Synthesize("mycc");
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& r : p["rules"]) by_id[r["id"]] = r;
  // multiply is unsupported for every type seen: one opcode-wide rule that also covers new types.
  ASSERT_TRUE(by_id.count("multiply")) << p.dump(2);
  EXPECT_EQ(by_id["multiply"]["match"], nlohmann::json({{"opcodes", {"multiply"}}}));
  EXPECT_EQ(by_id["multiply"]["reason"], "exit status 1: no multiply");
  EXPECT_EQ(by_id["multiply"]["verdict"], "unsupported");
  // add differs by result type; one c64 add is evidence for its own operand types only.
  ASSERT_TRUE(by_id.count("add-c64-from-c64")) << p.dump(2);
  EXPECT_EQ(by_id["add-c64-from-c64"]["match"],
            nlohmann::json({{"opcodes", {"add"}}, {"result_types", {"c64"}}, {"operand_types", {"c64"}}}));
  // convert's result types agree; its operand types decide.
  ASSERT_TRUE(by_id.count("convert-s32-from-s64")) << p.dump(2);
  EXPECT_EQ(by_id["convert-s32-from-s64"]["match"]["operand_types"], nlohmann::json({"s64"}));
  // A crash is recorded as unsupported; one unit is evidence for its own types only.
  ASSERT_TRUE(by_id.count("divide-f32-from-f32")) << p.dump(2);
  EXPECT_EQ(by_id["divide-f32-from-f32"]["reason"], "compiler error: compiler killed by signal 11 (SIGSEGV)");
  EXPECT_FALSE(by_id.count("divide"));
  EXPECT_FALSE(by_id.count("subtract"));
  auto backend = Load(p);
  EXPECT_FALSE(backend.probe(*BinaryUnit(Opcode::kMultiply, PrimitiveType::BF16)).supported());
  EXPECT_TRUE(backend.probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::F64)).supported());
  EXPECT_FALSE(backend.probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::C64, {2, 2})).supported());
}

TEST(ProfileSynthesisTest, OneRejectedConvertDoesNotRejectEveryConvert) {
  Recording r;
  r.Add(ConvertUnit(PrimitiveType::C64, PrimitiveType::F32), Verdict::Unsupported("no complex input"));
  nlohmann::json p = r.Synthesize("x");
  ASSERT_EQ(p["rules"].size(), 1u) << p.dump(2);
  EXPECT_EQ(p["rules"][0]["match"],
            nlohmann::json({{"opcodes", {"convert"}}, {"result_types", {"f32"}}, {"operand_types", {"c64"}}}));
  auto backend = Load(p);
  EXPECT_FALSE(backend.probe(*ConvertUnit(PrimitiveType::C64, PrimitiveType::F32)).supported());
  EXPECT_TRUE(backend.probe(*ConvertUnit(PrimitiveType::F32, PrimitiveType::S32)).supported());
  EXPECT_TRUE(backend.probe(*ConvertUnit(PrimitiveType::S32, PrimitiveType::F32)).supported());
}

TEST(ProfileSynthesisTest, ConflictingVerdictsTakeTheMajorityAndSaySo) {
  Recording r;
  r.Add(BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {4}), Verdict::Supported());
  r.Add(BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {8}), Verdict::Supported());
  r.Add(BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {1 << 20}), Verdict::Unsupported("too large"));
  r.Add(BinaryUnit(Opcode::kAdd, PrimitiveType::S32), Verdict::Unsupported("no int add"));
  nlohmann::json p = r.Synthesize("x");
  EXPECT_NE(p["description"].get<std::string>().find("reproduce 3 of 4 checked verdicts"), std::string::npos)
      << p.dump(2);
  Load(p);
}

TEST(ProfileSynthesisTest, UnknownOpcodesAndCustomCallTargetsAreKeys) {
  Recording r;
  auto custom = [](const std::string& target) {
    hlo::Builder b("m");
    auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {4}));
    auto module = b.Build(b.CustomCall({x}, target, Shape::Array(PrimitiveType::F32, {4})));
    return hlo::MakeProbeModule(*module->entry()->root());
  };
  r.Add(custom("Qr"), Verdict::Unsupported("no Qr"));
  r.Add(custom("Eigh"), Verdict::Supported());
  nlohmann::json p = r.Synthesize("x");
  ASSERT_EQ(p["rules"].size(), 1u) << p.dump(2);
  EXPECT_EQ(p["rules"][0]["match"]["custom_call_targets"], nlohmann::json({"Qr"}));
  auto backend = Load(p);
  EXPECT_FALSE(backend.probe(*custom("Qr")).supported());
  EXPECT_TRUE(backend.probe(*custom("Eigh")).supported());
}

TEST(ProfileSynthesisTest, IsDeterministicAndNamesItsSources) {
  Recording r = Recorded();
  r.source.models.push_back("other.json");
  nlohmann::json p1 = r.Synthesize("m");
  nlohmann::json p2 = r.Synthesize("m");
  EXPECT_EQ(p1.dump(), p2.dump());
  EXPECT_NE(p1["source"].get<std::string>().find("model.json, other.json"), std::string::npos);
}

TEST(ProfileSynthesisTest, NoUnitsGiveAnEmptyProfile) {
  Recording r;
  nlohmann::json p = r.Synthesize("empty");
  EXPECT_TRUE(p["rules"].empty());
  Load(p);
}

}  // namespace
}  // namespace opprobe::compiler_probe::rules
