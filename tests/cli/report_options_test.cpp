// FinishReports / CheckReportOptions: which report goes where, the summary, the gates and exit codes.
#include "cli/report_options.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "reports/diff.h"
#include "reports/gates.h"
#include "reports/report.h"
#include "tests/reports/fixtures.h"
#include "tests/reports/report_test_util.h"

namespace opprobe::cli {
namespace {

namespace fs = std::filesystem;
namespace t = reports::testing;

struct Outcome {
  int code;
  std::string out, err;
};

Outcome Finish(const analyzer::AnalysisResult& result, const ReportOptions& options) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = FinishReports(result, options);
  Outcome o{code, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  return o;
}

TEST(ReportOptions, ParsesEveryOption) {
  CLI::App app;
  ReportOptions o;
  AddReportOptions(&app, o);
  app.parse(
      "-o r.json -v 0 --format text --format html=r.html --fail-under 90.5 --baseline b.json "
      "--allow aten::mul --allow aten::fft -q",
      false);
  EXPECT_EQ(o.output, "r.json");
  EXPECT_EQ(o.verbosity, 0);
  EXPECT_EQ(o.formats, (std::vector<std::string>{"text", "html=r.html"}));
  EXPECT_EQ(o.fail_under, (std::vector<std::string>{"90.5"}));
  EXPECT_DOUBLE_EQ(*FailUnderFor(o, "rules:neuron-trn1"), 90.5);
  EXPECT_EQ(o.baseline, "b.json");
  EXPECT_EQ(o.allow, (std::vector<std::string>{"aten::mul", "aten::fft"}));
  EXPECT_TRUE(o.quiet);
}

TEST(ReportOptions, FailUnderTakesATargetAndTheTargetsOwnThresholdWins) {
  ReportOptions o;
  o.fail_under = {"80", "tpu:v5e=95", "pjrt:/p.so,k=v=70"};
  EXPECT_DOUBLE_EQ(*FailUnderFor(o, "tpu:v5e"), 95);
  EXPECT_DOUBLE_EQ(*FailUnderFor(o, "gpu:h100"), 80);
  EXPECT_DOUBLE_EQ(*FailUnderFor(o, "pjrt:/p.so,k=v"), 70);
  o.fail_under = {"tpu:v5e=95"};
  EXPECT_LT(*FailUnderFor(o, "gpu:h100"), 0);
  auto unknown = FailUnderFor(o, "gpu:h100", {"gpu:h100", "rules:cpu"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("tpu:v5e is not a target of this run (its targets: gpu:h100, rules:cpu)"),
            std::string::npos)
      << unknown.status().message();
  for (const char* bad : {"", "=90", "tpu:v5e=", "tpu:v5e=x", "101", "-1"}) {
    o.fail_under = {bad};
    EXPECT_FALSE(FailUnderFor(o, "tpu:v5e").ok()) << bad;
    EXPECT_FALSE(CheckReportOptions(o).ok()) << bad;
  }
}

TEST(ReportOptions, RejectsBadValuesAtParseTime) {
  for (const char* line : {"--verbosity 3", "--format pdf", "--fail-under 101"}) {
    CLI::App app;
    ReportOptions o;
    AddReportOptions(&app, o);
    EXPECT_THROW(app.parse(line, false), CLI::ParseError) << line;
  }
}

TEST(FinishReports, WritesEachFormatToItsFile) {
  t::TempDir dir;
  ReportOptions o;
  o.output = dir / "result.json";
  o.formats = {"html=" + (dir / "r.html"), "junit=" + (dir / "r.xml"), "sarif=" + (dir / "r.sarif")};
  auto r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* name : {"result.json", "r.html", "r.xml", "r.sarif"}) EXPECT_TRUE(fs::exists(dir / name)) << name;
  auto j = nlohmann::json::parse(t::ReadText(dir / "result.json"));
  EXPECT_EQ(j["support_percentage"], "42.86%");
  EXPECT_FALSE(j["supported_operators"].contains("xla")) << "default verbosity 2";
  // The summary: percentage, top unsupported ops with call sites, where the reports went.
  EXPECT_NE(r.out.find("42.86% of HLO instructions supported on rules:neuron-trn1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1x at /work/demo/unsupported.py:12: aten::mul (f32[4], c64[4])"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("json report: " + (dir / "result.json")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("html report: " + (dir / "r.html")), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << "no colour off a terminal";
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(FinishReports, WithoutOutputPrintsOnlyTheSummaryAndHowToWriteTheReport) {
  auto r = Finish(t::NeuronUnsupported(), ReportOptions{});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("-o result.json"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"support_percentage\""), std::string::npos) << "no JSON on stdout";
}

TEST(FinishReports, FormatWithoutFileGoesToStdoutAndTheSummaryToStderr) {
  ReportOptions o;
  o.formats = {"json"};
  o.verbosity = 1;
  auto r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 0);
  auto j = nlohmann::json::parse(r.out);  // stdout is exactly the report
  EXPECT_TRUE(j["supported_operators"].contains("xla"));
  EXPECT_NE(r.err.find("42.86%"), std::string::npos) << r.err;
}

TEST(FinishReports, OutputIsTheFileOfALoneFormat) {
  t::TempDir dir;
  ReportOptions o;
  o.formats = {"markdown"};
  o.output = dir / "pr.md";
  auto r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(t::ReadText(dir / "pr.md").rfind("## :x: opprobe", 0), 0u);
  // With several formats, -o is the JSON report's and formats without a file go to stdout.
  o.formats = {"github", "sarif=" + (dir / "r.sarif")};
  o.output = dir / "r.json";
  r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 0);
  EXPECT_NO_THROW({
    nlohmann::json parsed = nlohmann::json::parse(t::ReadText(dir / "r.json"));
    EXPECT_TRUE(parsed.is_object());
  });
  EXPECT_EQ(r.out.rfind("::error file=", 0), 0u) << r.out;
}

TEST(FinishReports, BadTargetsAreExit2WithNothingWritten) {
  t::TempDir dir;
  ReportOptions o;
  o.formats = {"html=" + (dir / "same"), "json=" + (dir / "same")};
  auto r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("two reports would be written to"), std::string::npos) << r.err;
  o.formats = {"pdf=" + (dir / "x.pdf")};
  r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown report format 'pdf'"), std::string::npos) << r.err;
  o.formats = {"html="};
  r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(fs::is_empty(dir.path()));
  o.formats = {};
  o.output = (dir.path() / "missing" / "r.json").string();
  r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(FinishReports, QuietPrintsNothingButGateFailures) {
  ReportOptions o;
  o.quiet = true;
  auto r = Finish(t::AllSupported(), o);
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(r.out.empty() && r.err.empty()) << r.out << r.err;
  o.fail_under = {"50"};
  r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("gate failed: support 42.86% is below --fail-under 50.00%"), std::string::npos) << r.err;
}

TEST(FinishReports, BaselineGate) {
  t::TempDir dir;
  ReportOptions base;
  base.output = dir / "base.json";
  base.verbosity = 1;
  base.quiet = true;
  // Baseline: the all-supported model with aten::mul f32 added (as supported).
  auto old_result = t::NeuronUnsupported();
  old_result.ops.erase(old_result.ops.begin() + 2);  // no c64 mul
  old_result.ops.erase(old_result.ops.begin());      // no fft
  ASSERT_EQ(Finish(old_result, base).code, 0);

  ReportOptions o;
  o.baseline = base.output;
  auto r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("aten::mul (f32[4], c64[4]) was supported, now unsupported"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("aten::_fft_r2c (f32[4]) newly unsupported"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HLO instruction `c64[4]{0} convert(f32[4]{0})`"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("support percentage dropped from 100.00% to 42.86%"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("gates: FAILED"), std::string::npos) << r.out;

  // Allowing both ops: the percentage used by the gates counts them as supported.
  o.allow = {"aten::mul", "_fft_r2c"};
  r = Finish(t::NeuronUnsupported(), o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gates use 100.00% (allowed ops counted as supported)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gates: passed"), std::string::npos) << r.out;

  // The unchanged model passes.
  o.allow.clear();
  r = Finish(old_result, o);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(CheckReportOptions, BadBaselineFailsBeforeAnyAnalysis) {
  t::TempDir dir;
  t::WriteText(dir / "b.json", R"({"schema_version": 7, "opprobe_version": "9.0"})");
  ReportOptions o;
  o.baseline = dir / "b.json";
  Status st = CheckReportOptions(o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(st.message(),
            "--baseline: " + (dir / "b.json") + ": /: missing \"support_percentage\" (a schema_version 7 report)");
  o.baseline.clear();
  EXPECT_TRUE(CheckReportOptions(o).ok());
}

}  // namespace
}  // namespace opprobe::cli
