// Issue 12's report side: custom ops, a failed script (partial analysis), lowering gaps apart from the backend's
// verdicts, derived instructions, grouping by source line and reason, ignored ops, and gates that never pass on an
// incomplete analysis. Every format is checked from the same hand-built result (tests/reports/fixtures.h Honest()).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "analyzer/lowering/lowering.h"
#include "analyzer/pipeline/pipeline.h"
#include "reports/gates.h"
#include "reports/report.h"
#include "reports/view.h"
#include "tests/reports/fixtures.h"
#include "tests/reports/report_test_util.h"

namespace opprobe::reports {
namespace {

using analyzer::AnalysisResult;
using analyzer::OpRecord;
namespace t = testing;

std::string Render(const AnalysisResult& r, std::string_view format, int verbosity = 2) {
  RenderOptions o;
  o.verbosity = verbosity;
  o.cwd = "/work/demo";
  return FindFormat(format)->render(r, o);
}

TEST(Honest, ResultKnowsWhatWasLeftOut) {
  AnalysisResult r = t::Honest();
  EXPECT_TRUE(r.partial());
  EXPECT_TRUE(r.incomplete());
  auto reasons = r.IncompleteReasons();
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(
      reasons[0],
      "partial analysis: the script failed at /work/demo/detect.py:41 (RuntimeError: boxes must be 2-D); only the "
      "calls before that were analyzed");
  EXPECT_EQ(reasons[1],
            "incomplete: opprobe cannot analyze 2 of 19 aten calls yet (1 call site without a lowering); they count as "
            "unsupported");
  // 2 of the 13 aten calls (custom ops and the derived record left out) could not be lowered.
  EXPECT_NEAR(r.AnalyzedPercentage(), 100.0 * 11 / 13, 1e-9);
  EXPECT_EQ(r.FailureAt(r.ops[4]), "custom_op");
  EXPECT_EQ(r.FailureAt(r.ops[6]), "lowering");
  EXPECT_EQ(r.summary.custom_op_calls, 6);
  EXPECT_EQ(r.summary.aten_calls, 19);
  EXPECT_EQ(r.summary.aten_nodes, 6);
}

TEST(Honest, NothingIsOneHundredPercentWhenSomethingWasLeftOut) {
  AnalysisResult r = t::Empty();
  EXPECT_TRUE(r.incomplete());
  EXPECT_EQ(PercentLabel(r, r.SupportPercentage()), "0.00% (incomplete)");
  for (const auto& f : Formats()) {
    std::string out = Render(r, f.name);
    EXPECT_EQ(out.find("100.00%"), std::string::npos) << f.name << "\n" << out;
    EXPECT_NE(out.find("nothing analyzed"), std::string::npos) << f.name << "\n" << out;
  }
  EXPECT_EQ(RenderSummary(r, false).find("100.00%"), std::string::npos);
  EXPECT_NE(RenderSummary(r, false).find("0.00% (incomplete)"), std::string::npos);
}

TEST(Honest, EveryFormatShowsThePartialBannerBeforeThePercentage) {
  AnalysisResult r = t::Honest();
  const std::string banner = "partial analysis: the script failed at /work/demo/detect.py:41";
  for (const auto& f : Formats()) {
    std::string out = Render(r, f.name);
    size_t b = out.find(banner);
    ASSERT_NE(b, std::string::npos) << f.name << "\n" << out;
    size_t pct = out.find(FormatPercent(r.SupportPercentage()));
    ASSERT_NE(pct, std::string::npos) << f.name;
    if (f.name != "html") EXPECT_LT(b, pct) << f.name << "\n" << out;  // html: <title> comes first
    else EXPECT_LT(b, out.find("id=\"support-percentage\"")) << out;
  }
  std::string summary = RenderSummary(r, false);
  EXPECT_LT(summary.find(banner), summary.find("% of HLO instructions"));
  // JUnit: a failing test case of its own, so a CI's test view is red for a partial analysis.
  EXPECT_NE(Render(r, "junit").find("type=\"partial-analysis\""), std::string::npos);
}

TEST(Honest, CustomOpsAreUnsupportedEntriesWithTheirReasonAndCallSite) {
  AnalysisResult r = t::Honest();
  auto json = nlohmann::json::parse(Render(r, "json"));
  bool found = false;
  for (const auto& e : json["unsupported_operators"]["aten"]) {
    if (e["kind"] != "torchvision::nms") continue;
    found = true;
    EXPECT_EQ(e["failureAt"], "custom_op");
    EXPECT_EQ(e["call"], "detect.py 35");
    EXPECT_EQ(e["count"], 1);
    EXPECT_EQ(
        e["reason"].get<std::string>().rfind("torchvision::nms has no XLA lowering: an XLA backend needs a custom "
                                             "call or a CPU fallback for it",
                                             0),
        0u);
  }
  EXPECT_TRUE(found) << json.dump(2);
  for (const auto& f : Formats()) {
    std::string out = Render(r, f.name);
    EXPECT_NE(out.find("torchvision::nms"), std::string::npos) << f.name;
    EXPECT_NE(out.find("mylib::my_op"), std::string::npos) << f.name;
  }
}

TEST(Honest, LoweringGapsAreASeparateSectionEverywhere) {
  AnalysisResult r = t::Honest();
  for (const auto& f : Formats()) {
    if (f.name == "json") continue;
    std::string out = Render(r, f.name);
    EXPECT_NE(out.find(kLoweringGapTitle), std::string::npos) << f.name << "\n" << out;
  }
  auto json = nlohmann::json::parse(Render(r, "json"));
  EXPECT_EQ(json["complete"], false);
  EXPECT_EQ(json["analyzed_percentage"], "84.62%");
  EXPECT_EQ(json["summary"]["lowering_gap_calls"], 2);
  std::string text = Render(r, "text");
  // The gap sits after the backend's verdicts, under its own heading, not in the first table.
  size_t gaps = text.find(kLoweringGapTitle);
  EXPECT_LT(text.find("aten::exp"), gaps);
  EXPECT_GT(text.find("aten::_fft_c2c"), gaps);
  std::string summary = RenderSummary(r, false);
  EXPECT_GT(summary.find("aten::_fft_c2c"), summary.find(kLoweringGapTitle));
  // JUnit: the gap is an error in its own suite, not a failure of the backend.
  std::string junit = Render(r, "junit");
  EXPECT_NE(junit.find("opprobe: opprobe cannot analyze these yet"), std::string::npos);
  EXPECT_NE(junit.find("<error message=\"opprobe cannot analyze these yet: no lowering"), std::string::npos) << junit;
}

TEST(Honest, DerivedInstructionsAreMarkedWhereverListed) {
  AnalysisResult r = t::Honest();
  for (const auto& f : Formats()) {
    std::string out = Render(r, f.name, 1);
    EXPECT_NE(out.find(f.name == "json" ? "\"part_of\"" : "part of"), std::string::npos) << f.name;
    EXPECT_NE(out.find("aten::add.Tensor"), std::string::npos) << f.name;
  }
  auto json = nlohmann::json::parse(Render(r, "json", 1));
  bool derived = false;
  for (const auto& e : json["unsupported_operators"]["aten"])
    if (e["kind"] == "aten::mul") derived = e.value("part_of", "") == "aten::add.Tensor";
  EXPECT_TRUE(derived) << json.dump(2);
}

TEST(Honest, UnsupportedEntriesGroupBySourceLineAndReasonMostFirst) {
  AnalysisResult r = t::Honest();
  auto [unsupported, gaps] = SplitLoweringGaps(UnsupportedOps(r));
  ASSERT_EQ(gaps.size(), 1u);
  auto groups = GroupUnsupported(unsupported);
  // head.py:12 has two ops with one reason (9 calls), then mylib (5), detect.py:30 (2 + derived 2), nms (1).
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].place, "models/head.py:12");
  EXPECT_EQ(groups[0].count, 9);
  EXPECT_EQ(groups[0].entries.size(), 2u);
  EXPECT_EQ(groups[0].entries[0].kind, "aten::_to_copy");
  EXPECT_EQ(groups[1].entries[0].kind, "mylib::my_op");
  EXPECT_EQ(groups[1].place, "");
  EXPECT_EQ(groups[3].place, "detect.py:35");
  std::string text = Render(r, "text");
  EXPECT_LT(text.find("models/head.py:12"), text.find("detect.py:35"));
}

TEST(Honest, IgnoredOpsAreListed) {
  AnalysisResult r = t::Honest();
  for (const auto& f : {"json", "text", "markdown", "html"}) {
    std::string out = Render(r, f);
    EXPECT_NE(out.find("torchvision::roi_align"), std::string::npos) << f;
  }
  EXPECT_NE(RenderSummary(r, false).find("ignored (--ignore-op): 4 calls of torchvision::roi_align (4)"),
            std::string::npos);
}

TEST(Honest, CountsAgreeAcrossSummaryAndFormats) {
  AnalysisResult r = t::Honest();
  auto json = nlohmann::json::parse(Render(r, "json"));
  EXPECT_EQ(json["summary"]["aten_calls"], 19);
  EXPECT_EQ(json["summary"]["aten_nodes"], 6);
  size_t entries = json["unsupported_operators"]["aten"].size();
  auto [unsupported, gaps] = SplitLoweringGaps(UnsupportedOps(r));
  EXPECT_EQ(entries, unsupported.size() + gaps.size());
  std::string summary = RenderSummary(r, false);
  EXPECT_NE(summary.find("19 aten calls at 6 call sites"), std::string::npos) << summary;
  EXPECT_NE(summary.find(std::to_string(unsupported.size()) + " unsupported entries"), std::string::npos) << summary;
  EXPECT_NE(Render(r, "text").find("19 aten calls at 6 call sites"), std::string::npos);
  EXPECT_NE(Render(r, "text").find(std::to_string(unsupported.size()) + " entries"), std::string::npos);
  // markdown's table: aten calls and call sites as in the JSON.
  EXPECT_NE(Render(r, "markdown").find("| 19 | "), std::string::npos);
  EXPECT_NE(Render(r, "html").find("19 aten calls at 6 call sites"), std::string::npos);
}

TEST(Honest, GatesNeverPassOnAPartialEmptyOrIncompleteAnalysis) {
  GateOptions go;
  go.fail_under = 0;
  for (auto make : {t::Honest, t::Empty}) {
    GateResult g = EvaluateGates(make(), go);
    EXPECT_TRUE(g.failed);
    ASSERT_FALSE(g.messages.empty());
    EXPECT_EQ(g.messages[0].rfind("no gate passes on this analysis: ", 0), 0u) << g.messages[0];
  }
  // Complete analyses are judged on their percentage.
  EXPECT_FALSE(EvaluateGates(t::AllSupported(), go).failed);
  // A lowering gap of an --allow'ed op no longer blocks; a failed script always does.
  AnalysisResult r = t::Honest();
  r.capture.reset();
  go.allow = {"aten::_fft_c2c"};
  EXPECT_TRUE(GateBlockers(r, go.allow).empty());
  EXPECT_FALSE(EvaluateGates(r, go).failed);
  go.allow.clear();
  EXPECT_TRUE(EvaluateGates(r, go).failed);
  // No gate requested: nothing fails.
  EXPECT_FALSE(EvaluateGates(t::Honest(), GateOptions{}).failed);
}

// An internal error (a lowering that threw: opprobe's own bug) is its own kind in every format, apart from the gaps
// ("opprobe cannot analyze these yet") and the device's verdicts, and no gate passes on it, whatever --allow says.
TEST(Honest, AnInternalErrorIsItsOwnKindAndNoGatePassesOnIt) {
  AnalysisResult r = t::InternalError();
  ASSERT_TRUE(r.incomplete());
  EXPECT_EQ(r.FailureAt(r.ops[1]), "internal_error");
  EXPECT_EQ(r.FailureAt(r.ops[2]), "lowering");
  const std::string line =
      "internal error: opprobe failed on 2 of 7 aten calls (1 call site, failureAt internal_error): a bug in opprobe, "
      "not a gap and not the backend's verdict; please report it";
  ASSERT_EQ(r.IncompleteReasons().size(), 2u);
  EXPECT_EQ(r.IncompleteReasons()[0], line);

  nlohmann::json j = nlohmann::json::parse(Render(r, "json"));
  EXPECT_EQ(j["summary"]["internal_error_calls"], 2);
  EXPECT_EQ(j["summary"]["lowering_gap_calls"], 1);
  EXPECT_EQ(j["complete"], false);
  std::map<std::string, std::string> failure_at;
  for (const auto& e : j["unsupported_operators"]["aten"]) failure_at[e["kind"]] = e["failureAt"];
  EXPECT_EQ(failure_at["aten::cumsum"], "internal_error");
  EXPECT_EQ(failure_at["aten::_fft_r2c"], "lowering");
  EXPECT_FALSE(nlohmann::json::parse(Render(t::Honest(), "json"))["summary"].contains("internal_error_calls"));

  nlohmann::json sarif = nlohmann::json::parse(Render(r, "sarif"));
  std::map<std::string, std::string> rule_of;
  for (const auto& res : sarif["runs"][0]["results"])
    if (res.contains("properties") && res["properties"].contains("aten_op"))
      rule_of[res["properties"]["aten_op"]] = res["ruleId"];
  EXPECT_EQ(rule_of["aten::cumsum"], "opprobe/internal-error");
  EXPECT_EQ(rule_of["aten::_fft_r2c"], "opprobe/no-lowering");
  EXPECT_NE(Render(r, "junit").find("type=\"internal-error\""), std::string::npos);
  EXPECT_NE(Render(r, "github").find("title=opprobe internal error on aten%3A%3Acumsum::"), std::string::npos);
  for (const auto& f : Formats()) {
    const std::string out = Render(r, f.name);
    EXPECT_NE(out.find("internal error: opprobe failed on 2 of 7 aten calls"), std::string::npos) << f.name << "\n"
                                                                                                  << out;
    EXPECT_NE(out.find("internal_error"), std::string::npos) << f.name << "\n" << out;
  }

  // The gates: --allow excuses the gap of an allowed op, never the internal error, and says why.
  GateOptions go;
  go.fail_under = 0;
  go.allow = {"aten::_fft_r2c", "aten::cumsum"};
  GateResult g = EvaluateGates(r, go);
  EXPECT_TRUE(g.failed);
  ASSERT_EQ(g.messages.size(), 1u);
  EXPECT_EQ(g.messages[0], "no gate passes on this analysis: " + line +
                               " (--allow excuses opprobe's lowering gaps, never its internal errors)");
  std::vector<std::string> blockers = GateBlockers(r, go.allow);
  ASSERT_EQ(blockers.size(), 1u);
  // The same result without the internal error passes with the gap allowed.
  r.ops.erase(r.ops.begin() + 1);
  t::FillSummary(r, 0.0, 0.1, 1);
  EXPECT_FALSE(EvaluateGates(r, go).failed) << EvaluateGates(r, go).messages.front();
}

// The same through the library pipeline the CLI shares (analyzer::AnalyzeInputs on a real trace, a lowering table
// whose aten::tanh throws, the rules backend), then the JSON report and the gates as `analyze` runs them.
TEST(Honest, ALoweringThatThrowsInTheRealPipelineFailsTheGateWhateverAllowSays) {
  analyzer::LoweringTable table;
  for (const analyzer::LoweringTable::Entry* e : analyzer::LoweringTable::Builtin().entries()) {
    analyzer::LoweringTable::Entry copy = *e;
    if (copy.name == "aten::tanh")
      copy.fn = [](const analyzer::Node&, hlo::Builder&) -> Expected<analyzer::LoweredOp> {
        throw std::out_of_range("vector::_M_range_check");
      };
    ASSERT_TRUE(table.Register(std::move(copy)).ok()) << e->name;
  }
  auto backend = analyzer::CreateBackend("rules:neuron-trn1", 60);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  analyzer::AnalysisOptions o;
  o.jobs = 1;
  o.use_cache = false;
  o.lowering_table = &table;
  auto r = analyzer::AnalyzeInputs({(t::SourceDir() / "samples" / "traces" / "supported.json").string()}, **backend, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->summary.internal_error_calls, 0);
  EXPECT_EQ(r->summary.lowering_gap_calls, 0);
  nlohmann::json j = nlohmann::json::parse(Render(*r, "json"));
  bool found = false;
  for (const auto& e : j["unsupported_operators"]["aten"]) {
    if (e["kind"] != "aten::tanh") continue;
    found = true;
    EXPECT_EQ(e["failureAt"], "internal_error");
    EXPECT_EQ(e["reason"], "lowering aten::tanh threw: vector::_M_range_check");
  }
  EXPECT_TRUE(found) << j["unsupported_operators"].dump();
  EXPECT_EQ(j["summary"]["internal_error_calls"], r->summary.internal_error_calls);
  GateOptions go;
  go.fail_under = 0;
  go.allow = {"aten::tanh"};
  GateResult g = EvaluateGates(*r, go);
  EXPECT_TRUE(g.failed);
  ASSERT_FALSE(g.messages.empty());
  EXPECT_NE(g.messages[0].find("internal error: opprobe failed on"), std::string::npos) << g.messages[0];
  EXPECT_NE(g.messages[0].find("never its internal errors"), std::string::npos) << g.messages[0];
  // The same trace with opprobe's own lowering passes that gate.
  o.lowering_table = nullptr;
  auto fine =
      analyzer::AnalyzeInputs({(t::SourceDir() / "samples" / "traces" / "supported.json").string()}, **backend, o);
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->summary.internal_error_calls, 0);
  EXPECT_FALSE(EvaluateGates(*fine, go).failed) << EvaluateGates(*fine, go).messages.front();
}

}  // namespace
}  // namespace opprobe::reports
