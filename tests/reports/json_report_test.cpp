#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "reports/report.h"
#include "reports/view.h"
#include "tests/reports/fixtures.h"

namespace opprobe::reports {
namespace {

using analyzer::AnalysisResult;
using testing::AllSupported;
using testing::Empty;
using testing::KitchenSink;
using testing::NeuronUnsupported;

std::vector<std::string> Keys(const Json& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

TEST(FormatPercent, TwoDecimalsAndPercentSign) {
  EXPECT_EQ(FormatPercent(60), "60.00%");
  EXPECT_EQ(FormatPercent(100), "100.00%");
  EXPECT_EQ(FormatPercent(0), "0.00%");
  EXPECT_EQ(FormatPercent(200.0 / 3.0), "66.67%");
  EXPECT_EQ(FormatPercent(100.0 / 3.0), "33.33%");
  EXPECT_EQ(FormatPercent(99.999), "100.00%");
  EXPECT_EQ(FormatPercent(std::nan("")), "0.00%");
  EXPECT_DOUBLE_EQ(RoundPercent(42.857142), 42.86);
}

TEST(ToJson, TopLevelKeysInFixedOrder) {
  Json j = ToJson(NeuronUnsupported(), 2);
  EXPECT_EQ(Keys(j),
            (std::vector<std::string>{"opprobe_version", "schema_version", "backend", "backend_version", "model",
                                      "input_kind", "torch_version", "verbosity", "complete", "incomplete_reasons",
                                      "support_percentage", "aten_support_percentage", "analyzed_percentage",
                                      "supported_operators", "unsupported_operators", "summary"}));
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["backend"], "rules:neuron-trn1");
  EXPECT_EQ(j["model"], "unsupported.py");
  EXPECT_EQ(Keys(j["summary"]),
            (std::vector<std::string>{"aten_calls", "aten_nodes", "custom_op_calls", "lowering_gap_calls",
                                      "ignored_calls", "distinct_signatures", "lowering_failures", "hlo_instructions",
                                      "supported_instructions", "unique_probes", "cache_hits", "probes_run",
                                      "dynamic_shape_ops", "probe_seconds", "wall_seconds", "jobs"}));
}

TEST(ToJson, NeuronShapeAtVerbosity2) {
  Json j = ToJson(NeuronUnsupported(), 2);
  // 3 of 7 instruction instances are supported (broadcast, add, f32 multiply); 2 of 4 aten calls.
  EXPECT_EQ(j["support_percentage"], "42.86%");
  EXPECT_EQ(j["aten_support_percentage"], "50.00%");
  EXPECT_EQ(j["supported_operators"]["aten"], (Json{{"aten::add", 1}, {"aten::mul", 1}}));
  EXPECT_FALSE(j["supported_operators"].contains("xla"));
  EXPECT_FALSE(j["unsupported_operators"].contains("xla"));
  const Json& uns = j["unsupported_operators"]["aten"];
  ASSERT_EQ(uns.size(), 2u);
  EXPECT_EQ(uns[0]["kind"], "aten::_fft_r2c");
  EXPECT_EQ(uns[1]["kind"], "aten::mul");
  EXPECT_EQ(uns[1]["failureAt"], "rules:neuron-trn1");
  EXPECT_EQ(uns[1]["call"], "unsupported.py 12");
  EXPECT_EQ(uns[1]["signature"], "f32[4], c64[4]");
  EXPECT_EQ(uns[1]["reason"], "element type c64 is not supported: Neuron has no complex types");
  EXPECT_EQ(uns[1]["count"], 1);
  EXPECT_EQ(Keys(uns[1]),
            (std::vector<std::string>{"kind", "failureAt", "call", "reason", "signature", "phase", "count"}));
  EXPECT_FALSE(j.contains("instructions"));
  EXPECT_FALSE(j.contains("programs"));
  EXPECT_FALSE(j.contains("dynamic_shape_operators"));
}

TEST(ToJson, XlaListsAtVerbosity1) {
  Json j = ToJson(NeuronUnsupported(), 1);
  EXPECT_EQ(j["supported_operators"]["xla"],
            (Json{"f32[4]{0} add(f32[4]{0}, f32[4]{0})", "f32[4]{0} broadcast(f32[]), dimensions={}",
                  "f32[4]{0} multiply(f32[4]{0}, f32[4]{0})"}));
  const Json& xla = j["unsupported_operators"]["xla"];
  // convert is used by both fft and mul: one entry per (instruction, aten op, call site), sorted by signature.
  ASSERT_EQ(xla.size(), 4u);
  EXPECT_EQ(xla[0]["hlo_instruction"], "c64[4]{0} convert(f32[4]{0})");
  EXPECT_EQ(xla[0]["aten_op"], "aten::_fft_r2c");
  EXPECT_EQ(xla[1]["hlo_instruction"], "c64[4]{0} convert(f32[4]{0})");
  EXPECT_EQ(xla[1]["aten_op"], "aten::mul");
  EXPECT_EQ(xla[1]["call"], "unsupported.py 12");
  EXPECT_EQ(xla[3]["hlo_instruction"], "c64[4]{0} multiply(c64[4]{0}, c64[4]{0})");
  EXPECT_EQ(xla[3]["aten_op"], "aten::mul");
  EXPECT_FALSE(j.contains("instructions"));
}

TEST(ToJson, PerInstructionDetailAtVerbosity0) {
  AnalysisResult r = KitchenSink();
  Json j = ToJson(r, 0);
  ASSERT_TRUE(j.contains("instructions"));
  const Json& ins = j["instructions"];
  ASSERT_EQ(ins.size(), r.probes.size());
  // Sorted by signature.
  for (size_t i = 1; i < ins.size(); ++i)
    EXPECT_LE(ins[i - 1]["signature"].get<std::string>(), ins[i]["signature"].get<std::string>());
  auto find = [&](const std::string& fp) {
    for (const auto& e : ins)
      if (e["fingerprint"] == fp) return e;
    return Json();
  };
  Json dot = find("a000000000000004");
  EXPECT_EQ(dot["verdict"], "error");
  EXPECT_EQ(dot["reason"], "neuronx-cc crashed (signal 11)");
  EXPECT_NE(dot["output_tail"].get<std::string>().find("internal compiler error"), std::string::npos);
  EXPECT_DOUBLE_EQ(dot["seconds"].get<double>(), 1.5);
  EXPECT_EQ(dot["aten_ops"], (Json{"aten::mm"}));
  EXPECT_EQ(dot["opcode"], "dot");
  EXPECT_EQ(find("a000000000000003")["repro"], "opprobe-repro/convert_a000000000000003.hlo.pb");
  Json add = find("a000000000000006");
  EXPECT_EQ(add["cache_hit"], true);
  EXPECT_EQ(add["aten_ops"], (Json{"aten::add", "aten::add_"}));
  EXPECT_EQ(add["instances"], 15);
  EXPECT_NE(add["hlo_module"].get<std::string>().find("HloModule"), std::string::npos);
}

TEST(ToJson, KitchenSinkExtras) {
  Json j = ToJson(KitchenSink(), 2);
  // Lowering failure: failureAt "lowering", counted as one unsupported instance per call.
  bool saw_lowering = false;
  for (const auto& e : j["unsupported_operators"]["aten"]) {
    if (e["kind"] == "aten::_weird_op") {
      saw_lowering = true;
      EXPECT_EQ(e["failureAt"], "lowering");
      EXPECT_EQ(e["reason"], "no lowering for aten::_weird_op");
      EXPECT_EQ(e["program"], "backward");
      EXPECT_EQ(e["module_path"], "layer1.0");
      EXPECT_EQ(e["count"], 4);
    }
    if (e["kind"] == "aten::_to_copy") { EXPECT_EQ(e["count"], 5) << "identical entries are merged"; }
    if (e["kind"] == "aten::mm") { EXPECT_EQ(e["error"], true); }
    if (e["kind"] == "aten::nonzero") { EXPECT_EQ(e["dynamic_shape"], true); }
  }
  EXPECT_TRUE(saw_lowering);
  ASSERT_TRUE(j.contains("dynamic_shape_operators"));
  EXPECT_EQ(j["dynamic_shape_operators"][0]["kind"], "aten::nonzero");
  EXPECT_EQ(j["dynamic_shape_operators"][0]["supported"], false);
  ASSERT_TRUE(j.contains("programs"));
  ASSERT_EQ(j["programs"].size(), 2u);
  EXPECT_EQ(j["programs"][0]["name"], "forward");
  EXPECT_EQ(j["programs"][1]["name"], "backward");
  // backward: weird (4 failed) + add (10 ok) + add_ (5 ok) = 15/19.
  EXPECT_EQ(j["programs"][1]["support_percentage"], "78.95%");
  EXPECT_EQ(j["summary"]["jobs"], 8);
  EXPECT_EQ(j["summary"]["lowering_failures"], 1);
}

TEST(ToJson, AllSupportedAndEmpty) {
  Json j = ToJson(AllSupported(), 1);
  EXPECT_EQ(j["support_percentage"], "100.00%");
  EXPECT_EQ(j["unsupported_operators"]["aten"], Json::array());
  EXPECT_EQ(j["unsupported_operators"]["xla"], Json::array());
  EXPECT_EQ(j["supported_operators"]["aten"]["aten::mm"], 4);
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["incomplete_reasons"], Json::array());
  // An analysis of nothing is never 100%: 0% and incomplete.
  Json e = ToJson(Empty(), 2);
  EXPECT_EQ(e["support_percentage"], "0.00%");
  EXPECT_EQ(e["complete"], false);
  EXPECT_TRUE(e["supported_operators"]["aten"].is_object());
  EXPECT_TRUE(e["unsupported_operators"]["aten"].is_array());
}

TEST(ToJson, DeterministicWhateverTheOpOrder) {
  for (int verbosity : {0, 1, 2}) {
    AnalysisResult r = KitchenSink();
    std::string expected = ToJson(r, verbosity).dump();
    std::mt19937 rng(42);
    for (int round = 0; round < 5; ++round) {
      std::shuffle(r.ops.begin(), r.ops.end(), rng);
      EXPECT_EQ(ToJson(r, verbosity).dump(), expected) << "verbosity " << verbosity;
    }
  }
}

TEST(ToJson, InvalidUtf8IsReplacedNotThrown) {
  AnalysisResult r = NeuronUnsupported();
  r.ops[2].loc.file = "/tmp/bad\xff\xfename.py";
  r.probes[2].verdict.output_tail = "compiler said \xc3";
  RenderOptions o;
  o.verbosity = 0;
  std::string text;
  ASSERT_NO_THROW(text = RenderJson(r, o));
  EXPECT_NO_THROW({
    Json parsed = Json::parse(text);
    EXPECT_TRUE(parsed.is_object());
  });
}

TEST(View, RelativeToCwd) {
  EXPECT_EQ(RelativeToCwd("/home/user/proj/model.py", "/home/user/proj"), "model.py");
  EXPECT_EQ(RelativeToCwd("/home/user/proj/a/b.py", "/home/user/proj/"), "a/b.py");
  EXPECT_EQ(RelativeToCwd("/home/user/project2/b.py", "/home/user/proj"), "/home/user/project2/b.py");
  EXPECT_EQ(RelativeToCwd("rel/x.py", "/home"), "rel/x.py");
  EXPECT_EQ(RelativeToCwd("/x.py", "/"), "x.py");
  EXPECT_EQ(RelativeToCwd("/x.py", ""), "/x.py");
}

TEST(View, TailLines) {
  EXPECT_EQ(TailLines("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(TailLines("a\nb\nc", 5), "a\nb\nc");
  EXPECT_EQ(TailLines("", 3), "");
}

}  // namespace
}  // namespace opprobe::reports
