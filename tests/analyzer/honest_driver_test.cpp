// Issue 12 in the analyzer: how a captured script ended (trace `status`/`error`) reaches the result, calls outside
// aten are custom-op entries (not lowering gaps), old traces' `skipped_ops` are kept, and --ignore-op.
#include <gtest/gtest.h>

#include "analyzer/driver/driver.h"
#include "analyzer/loaders/trace_loader.h"

namespace opprobe::analyzer {
namespace {

// Accepts everything.
class YesBackend : public compiler_probe::Backend {
 public:
  std::string id() const override { return "yes"; }
  std::string version() const override { return "1"; }
  compiler_probe::Verdict probe(const hlo::Module&) override { return compiler_probe::Verdict::Supported(); }
};

constexpr const char* kTrace = R"({"format":"opprobe-trace","version":1,"script":"proj/detect.py",
  "status":"error","exit_status":1,
  "error":{"type":"RuntimeError","message":"boxes must be 2-D\nsecond line","exit_status":1,
           "loc":{"file":"proj/detect.py","line":15}},
  "calls":[
    {"op":"aten::relu","overload":"default","args":[{"name":"self","value":{"kind":"tensor","dtype":"float32","shape":[4]}}],
     "outputs":[{"kind":"tensor","dtype":"float32","shape":[4]}],"loc":{"file":"proj/detect.py","line":10},"count":3},
    {"op":"torchvision::nms","overload":"default","args":[
       {"name":"dets","value":{"kind":"tensor","dtype":"float32","shape":[10,4]}},
       {"name":"scores","value":{"kind":"tensor","dtype":"float32","shape":[10]}},
       {"name":"iou_threshold","value":{"kind":"float","value":0.5}}],
     "outputs":[{"kind":"tensor","dtype":"int64","shape":[3]}],"loc":{"file":"proj/models/head.py","line":12},"count":2},
    {"op":"aten::opprobe_test_no_such_op","overload":"default","args":[],"outputs":[],"loc":{"file":"proj/detect.py","line":11}}
  ],
  "skipped_ops":{"profiler::_record_function_enter_new":5,"prims::add":2,"quantized::linear_prepack":1,"torchvision::_cuda_version":2,"torchvision::nms":2}})";

TEST(HonestTrace, CaptureStatusAndOldSkippedOpsLoad) {
  auto g = ParseTrace(kTrace, "t.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_TRUE(g->capture.has_value());
  EXPECT_TRUE(g->capture->failed());
  EXPECT_EQ(g->capture->exit_code, 1);
  EXPECT_EQ(g->capture->exception_type, "RuntimeError");
  EXPECT_EQ(g->capture->exception_message, "boxes must be 2-D");
  EXPECT_EQ(g->capture->location, (SourceLoc{"proj/detect.py", 15}));
  // profiler/prims/_cuda_version stay out; nms is already in `calls`; quantized::linear_prepack (only in
  // skipped_ops) is kept.
  ASSERT_EQ(g->nodes.size(), 4u);
  EXPECT_EQ(g->nodes[3].op, "quantized::linear_prepack");
  EXPECT_TRUE(g->nodes[3].loc.empty());

  auto ok = ParseTrace(R"({"format":"opprobe-trace","version":1,"status":"ok","exit_status":0,"calls":[]})", "t.json");
  ASSERT_TRUE(ok.ok());
  ASSERT_TRUE(ok->capture.has_value());
  EXPECT_FALSE(ok->capture->failed());
  auto none = ParseTrace(R"({"format":"opprobe-trace","version":1,"calls":[]})", "t.json");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->capture.has_value());
  auto bad = ParseTrace(R"({"format":"opprobe-trace","version":1,"status":"maybe","calls":[]})", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.json: status: expected \"ok\" or \"error\""), std::string::npos)
      << bad.status().message();
}

TEST(HonestDriver, CustomOpsGapsCaptureAndIgnoredOps) {
  auto g = ParseTrace(kTrace, "t.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  YesBackend backend;
  AnalysisResult r = Analyze(*g, backend, LoweringTable::Builtin(), DriverOptions{});
  ASSERT_TRUE(r.capture.has_value());
  EXPECT_TRUE(r.partial());
  EXPECT_EQ(r.source_dir, "proj");
  const OpRecord* nms = nullptr;
  const OpRecord* gap = nullptr;
  for (const auto& op : r.ops) {
    if (op.op == "torchvision::nms") nms = &op;
    if (op.op == "aten::opprobe_test_no_such_op") gap = &op;
  }
  ASSERT_NE(nms, nullptr);
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(nms->lowering, OpRecord::Lowering::kCustomOp);
  EXPECT_EQ(r.FailureAt(*nms), "custom_op");
  EXPECT_EQ(r.FailureReason(*nms).rfind("torchvision::nms has no XLA lowering: an XLA backend needs a custom call or a "
                                        "CPU fallback for it",
                                        0),
            0u);
  EXPECT_EQ(gap->lowering, OpRecord::Lowering::kFailed);
  EXPECT_EQ(r.FailureAt(*gap), "lowering");
  EXPECT_EQ(r.summary.aten_calls, 3 + 2 + 1 + 1);
  EXPECT_EQ(r.summary.custom_op_calls, 3);
  EXPECT_EQ(r.summary.lowering_gap_calls, 1);
  EXPECT_EQ(r.summary.lowering_failures, 1);
  // relu's 3 calls of the 4 aten calls could be lowered; custom ops are not part of that figure.
  EXPECT_DOUBLE_EQ(r.AnalyzedPercentage(), 75.0);
  // Custom ops and the gap are unsupported: 3 of 7 calls supported.
  EXPECT_NEAR(r.AtenSupportPercentage(), 100.0 * 3 / 7, 1e-9);

  DriverOptions o;
  o.ignore_ops = {"torchvision::*", "quantized::linear_prepack", "aten::opprobe_test_*"};
  AnalysisResult ig = Analyze(*g, backend, LoweringTable::Builtin(), o);
  ASSERT_EQ(ig.ignored.size(), 3u);
  EXPECT_EQ(ig.ignored[0].op, "aten::opprobe_test_no_such_op");
  EXPECT_EQ(ig.ignored[2].op, "torchvision::nms");
  EXPECT_EQ(ig.ignored[2].pattern, "torchvision::*");
  EXPECT_EQ(ig.ignored[2].count, 2);
  EXPECT_EQ(ig.summary.ignored_calls, 4);
  EXPECT_EQ(ig.summary.aten_calls, 3);
  EXPECT_FALSE(ig.IncompleteReasons().empty());  // still a failed script
  EXPECT_DOUBLE_EQ(ig.AtenSupportPercentage(), 100.0);
}

TEST(HonestDriver, IgnorePatterns) {
  EXPECT_EQ(MatchIgnorePattern("torchvision::nms", "default", {"torchvision::*"}), "torchvision::*");
  EXPECT_EQ(MatchIgnorePattern("aten::add", "Tensor", {"aten::add.Tensor"}), "aten::add.Tensor");
  EXPECT_EQ(MatchIgnorePattern("aten::add", "Tensor", {"aten::add"}), "aten::add");
  EXPECT_EQ(MatchIgnorePattern("aten::addmm", "default", {"aten::add"}), "");
  EXPECT_EQ(MatchIgnorePattern("mylib::my_op", "default", {"mylib::my_o?"}), "mylib::my_o?");
}

}  // namespace
}  // namespace opprobe::analyzer
