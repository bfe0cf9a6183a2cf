// `opprobe profile record`'s synthesis (cli/profile_record.h): real verdicts -> a rules profile that
// the rules backend reads back and that reproduces them.
#include "cli/profile_record.h"

#include <gtest/gtest.h>

#include "compiler_probe/rules/rules_backend.h"
#include "hlo/builder.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"

namespace opprobe::cli {
namespace {

using compiler_probe::Verdict;
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

void AddProbe(analyzer::AnalysisResult& r, const hlo::Module& unit, Verdict v) {
  analyzer::ProbeRecord p;
  p.fingerprint = hlo::Fingerprint(unit);
  p.opcode = std::string(hlo::OpcodeName(unit.entry()->root()->opcode));
  p.signature = hlo::InstructionSignature(*unit.entry()->root());
  p.module_text = hlo::ToString(unit, hlo::PrintOptions::Short());
  p.verdict = std::move(v);
  r.probes.push_back(std::move(p));
}

analyzer::AnalysisResult Recorded() {
  analyzer::AnalysisResult r;
  r.model = "model.json";
  r.backend_id = "cmd:mycc {hlo_pb}";
  r.backend_version = "mycc 1.2";
  AddProbe(r, *BinaryUnit(Opcode::kAdd, PrimitiveType::F32), Verdict::Supported());
  AddProbe(r, *BinaryUnit(Opcode::kAdd, PrimitiveType::C64), Verdict::Unsupported("exit status 1: complex add"));
  AddProbe(r, *BinaryUnit(Opcode::kMultiply, PrimitiveType::F32), Verdict::Unsupported("exit status 1: no multiply"));
  AddProbe(r, *BinaryUnit(Opcode::kMultiply, PrimitiveType::S32), Verdict::Unsupported("exit status 1: no multiply"));
  AddProbe(r, *BinaryUnit(Opcode::kSubtract, PrimitiveType::F32), Verdict::Supported());
  AddProbe(r, *ConvertUnit(PrimitiveType::F32, PrimitiveType::S32), Verdict::Supported());
  AddProbe(r, *ConvertUnit(PrimitiveType::S64, PrimitiveType::S32), Verdict::Unsupported("no s64 input"));
  AddProbe(r, *BinaryUnit(Opcode::kDivide, PrimitiveType::F32), Verdict::Error("compiler killed by signal 11 (SIGSEGV)"));
  return r;
}

compiler_probe::rules::RulesBackend Load(const nlohmann::json& profile) {
  auto parsed = compiler_probe::rules::ParseProfile(profile.dump(), "recorded");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << profile.dump(2);
  return compiler_probe::rules::RulesBackend(parsed.ok() ? *parsed : compiler_probe::rules::Profile{});
}

TEST(ProfileRecordTest, RulesReproduceTheRecordedVerdicts) {
  auto result = Recorded();
  nlohmann::json p = RecordProfile(result, "mycc");
  EXPECT_EQ(p["name"], "mycc");
  EXPECT_EQ(p["default"]["verdict"], "supported");
  EXPECT_EQ(p["description"],
            "recorded from cmd:mycc {hlo_pb}: 8 unique units, 5 unsupported; the rules reproduce 8 of 8 checked verdicts");
  EXPECT_NE(p["source"].get<std::string>().find("backend version mycc 1.2"), std::string::npos);
  auto backend = Load(p);
  for (const auto& probe : result.probes) {
    auto unit = hlo::ParseModule(probe.module_text, probe.fingerprint);
    ASSERT_TRUE(unit.ok()) << unit.status().message();
    EXPECT_EQ(backend.probe(**unit).supported(), probe.verdict.supported()) << probe.signature;
  }
}

TEST(ProfileRecordTest, RulesAreAsGeneralAsTheVerdictsAllow) {
  nlohmann::json p = RecordProfile(Recorded(), "mycc");
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

TEST(ProfileRecordTest, OneRejectedConvertDoesNotRejectEveryConvert) {
  analyzer::AnalysisResult r;
  r.backend_id = "cmd:x {hlo_txt}";
  AddProbe(r, *ConvertUnit(PrimitiveType::C64, PrimitiveType::F32), Verdict::Unsupported("no complex input"));
  nlohmann::json p = RecordProfile(r, "x");
  ASSERT_EQ(p["rules"].size(), 1u) << p.dump(2);
  EXPECT_EQ(p["rules"][0]["match"],
            nlohmann::json({{"opcodes", {"convert"}}, {"result_types", {"f32"}}, {"operand_types", {"c64"}}}));
  auto backend = Load(p);
  EXPECT_FALSE(backend.probe(*ConvertUnit(PrimitiveType::C64, PrimitiveType::F32)).supported());
  EXPECT_TRUE(backend.probe(*ConvertUnit(PrimitiveType::F32, PrimitiveType::S32)).supported());
  EXPECT_TRUE(backend.probe(*ConvertUnit(PrimitiveType::S32, PrimitiveType::F32)).supported());
}

TEST(ProfileRecordTest, ConflictingVerdictsTakeTheMajorityAndSaySo) {
  analyzer::AnalysisResult r;
  r.backend_id = "cmd:x {hlo_txt}";
  AddProbe(r, *BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {4}), Verdict::Supported());
  AddProbe(r, *BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {8}), Verdict::Supported());
  AddProbe(r, *BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {1 << 20}), Verdict::Unsupported("too large"));
  AddProbe(r, *BinaryUnit(Opcode::kAdd, PrimitiveType::S32), Verdict::Unsupported("no int add"));
  nlohmann::json p = RecordProfile(r, "x");
  EXPECT_NE(p["description"].get<std::string>().find("reproduce 3 of 4 checked verdicts"), std::string::npos)
      << p.dump(2);
  Load(p);
}

TEST(ProfileRecordTest, MergesResultsAndIsDeterministic) {
  auto a = Recorded();
  analyzer::AnalysisResult b;
  b.model = "other.json";
  b.backend_id = a.backend_id;
  b.backend_version = a.backend_version;
  AddProbe(b, *BinaryUnit(Opcode::kMaximum, PrimitiveType::F32), Verdict::Unsupported("no max"));
  AddProbe(b, *BinaryUnit(Opcode::kAdd, PrimitiveType::F32), Verdict::Supported());  // also in `a`
  nlohmann::json p1 = RecordProfile({&a, &b}, "m");
  nlohmann::json p2 = RecordProfile({&a, &b}, "m");
  EXPECT_EQ(p1.dump(), p2.dump());
  EXPECT_NE(p1["description"].get<std::string>().find("9 unique units"), std::string::npos) << p1["description"];
  EXPECT_NE(p1["source"].get<std::string>().find("model.json, other.json"), std::string::npos);
}

TEST(ProfileRecordTest, EmptyResultGivesAnEmptyProfile) {
  analyzer::AnalysisResult r;
  nlohmann::json p = RecordProfile(r, "empty");
  EXPECT_TRUE(p["rules"].empty());
  Load(p);
}

}  // namespace
}  // namespace opprobe::cli
