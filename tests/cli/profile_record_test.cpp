// `opprobe profile record`'s input (cli/profile_record.h): the unique probe units of several analyses, taken once
// per fingerprint and read back into the IR, reach the synthesis.
#include "cli/profile_record.h"

#include <gtest/gtest.h>

#include "hlo/builder.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"

namespace opprobe::cli {
namespace {

using compiler_probe::Verdict;
using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;

void AddProbe(analyzer::AnalysisResult& r, Opcode op, PrimitiveType type, Verdict v) {
  hlo::Builder b("m");
  auto* x = b.Parameter(0, Shape::Array(type, {4}));
  auto* y = b.Parameter(1, Shape::Array(type, {4}));
  auto module = b.Build(b.Binary(op, x, y));
  auto unit = hlo::MakeProbeModule(*module->entry()->root());
  analyzer::ProbeRecord p;
  p.fingerprint = hlo::Fingerprint(*unit);
  p.opcode = std::string(hlo::OpcodeName(op));
  p.signature = hlo::InstructionSignature(*unit->entry()->root());
  p.module_text = hlo::ToString(*unit, hlo::PrintOptions::Short());
  p.verdict = std::move(v);
  r.probes.push_back(std::move(p));
}

analyzer::AnalysisResult Result(const std::string& model) {
  analyzer::AnalysisResult r;
  r.model = model;
  r.backend_id = "cmd:mycc {hlo_pb}";
  r.backend_version = "mycc 1.2";
  return r;
}

TEST(ProfileRecordTest, MergesResultsOncePerFingerprint) {
  auto a = Result("model.json");
  AddProbe(a, Opcode::kAdd, PrimitiveType::F32, Verdict::Supported());
  AddProbe(a, Opcode::kMultiply, PrimitiveType::F32, Verdict::Unsupported("no multiply"));
  auto b = Result("other.json");
  AddProbe(b, Opcode::kMaximum, PrimitiveType::F32, Verdict::Unsupported("no max"));
  AddProbe(b, Opcode::kAdd, PrimitiveType::F32, Verdict::Supported());  // also in `a`
  nlohmann::json p1 = RecordProfile({&a, &b}, "m");
  nlohmann::json p2 = RecordProfile({&b, &a}, "m");
  EXPECT_EQ(p1["rules"], p2["rules"]);  // fingerprint order, whichever result came first
  EXPECT_EQ(
      p1["description"],
      "recorded from cmd:mycc {hlo_pb}: 3 unique units, 2 unsupported; the rules reproduce 3 of 3 checked verdicts");
  EXPECT_NE(p1["source"].get<std::string>().find("backend version mycc 1.2"), std::string::npos) << p1["source"];
  EXPECT_NE(p1["source"].get<std::string>().find("model.json, other.json"), std::string::npos) << p1["source"];
}

TEST(ProfileRecordTest, AUnitThatDoesNotReadBackIsNoEvidence) {
  auto a = Result("model.json");
  AddProbe(a, Opcode::kAdd, PrimitiveType::F32, Verdict::Unsupported("no add"));
  a.probes.front().module_text = "HloModule broken\nENTRY e {";
  nlohmann::json p = RecordProfile(a, "m");
  EXPECT_TRUE(p["rules"].empty()) << p.dump(2);
  EXPECT_NE(p["description"].get<std::string>().find("0 unique units"), std::string::npos) << p["description"];
}

}  // namespace
}  // namespace opprobe::cli
