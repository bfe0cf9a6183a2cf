// Lower checks every lowering's outputs against the dtype and shape PyTorch recorded (issue #12.6): a mismatch is
// an internal lowering error naming both shapes, never a module that disagrees with the trace. Also: in-place view
// ops whose self was recorded after the call, outputs an output_mask turned off, and sparse-layout calls.
#include <gtest/gtest.h>

#include "tests/analyzer/lowering_test_util.h"

namespace opprobe::analyzer {
namespace {

using hlo::PrimitiveType;
using testing::MakeNode;
using testing::T;
constexpr auto F32 = PrimitiveType::F32;
constexpr auto C64 = PrimitiveType::C64;

const LoweringTable& Table() { return LoweringTable::Builtin(); }

TEST(LoweringShapeCheckTest, AMismatchWithTheRecordedOutputIsAnInternalErrorNamingBothShapes) {
  // A trace that says relu of f32[2,3] returned f32[3,2]: the lowering's f32[2,3] disagrees.
  Node n = MakeNode("aten::relu", "default", {{"self", T(F32, {2, 3})}}, {T(F32, {3, 2})});
  auto r = Lower(n, Table());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_NE(r.status().message().find("lowering of aten::relu produced f32[2,3] but PyTorch returned f32[3,2]"),
            std::string::npos)
      << r.status().message();
}

TEST(LoweringShapeCheckTest, ALoweringThatBuildsInvalidHloIsAnInternalErrorNamingTheInstruction) {
  // Every lowering result passes the verifier (hlo/verifier.h) with XLA's strict element types.
  LoweringTable table;
  ASSERT_TRUE(table
                  .Register("aten::bad", "test",
                            [](const Node&, hlo::Builder& b) -> Expected<LoweredOp> {
                              hlo::Instruction* x = b.NextParameter(hlo::Shape::Array(F32, {2}));
                              hlo::Instruction* y = b.Unary(hlo::Opcode::kNegate, x);
                              y->shape = hlo::Shape::Array(F32, {5});  // what no operand gives
                              return LoweredOp{{y}, false, ""};
                            })
                  .ok());
  Node n = MakeNode("aten::bad", "default", {{"self", T(F32, {2})}}, {});
  auto r = Lower(n, table);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_NE(r.status().message().find("lowering of aten::bad produced invalid HLO: computation "), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("negate has shape f32[5], its operands and attributes give f32[2]"),
            std::string::npos)
      << r.status().message();
}

TEST(LoweringShapeCheckTest, ADtypeMismatchIsReportedToo) {
  hlo::Builder b("t");
  hlo::Instruction* p = b.NextParameter(hlo::Shape::Array(C64, {4}));
  Node n = MakeNode("aten::abs", "default", {{"self", T(C64, {4})}}, {T(F32, {4})});
  Status st = CheckLoweredOutputs(n, {p}, false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "lowering of aten::abs produced c64[4] but PyTorch returned f32[4]");
}

TEST(LoweringShapeCheckTest, CheckLoweredOutputsComparesEveryLoweringNotOnlyThoseUsingDone) {
  hlo::Builder b("t");
  hlo::Instruction* p = b.NextParameter(hlo::Shape::Array(C64, {1, 63, 129}));
  Node n = MakeNode("aten::transpose_", "default", {{"self", T(C64, {1, 129, 63})}}, {T(C64, {1, 129, 63})});
  Status st = CheckLoweredOutputs(n, {p}, false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "lowering of aten::transpose_ produced c64[1,63,129] but PyTorch returned c64[1,129,63]");
  // A bounded dynamic-shape result compares dtype and rank only.
  Node dyn = MakeNode("aten::nonzero", "default", {{"self", T(F32, {1, 63, 129})}}, {T(C64, {1, 5, 7})});
  EXPECT_TRUE(CheckLoweredOutputs(dyn, {p}, true).ok());
  // Nothing recorded (a hand-built graph): nothing to compare.
  Node bare = MakeNode("aten::relu", "default", {{"self", T(F32, {2})}}, {});
  EXPECT_TRUE(CheckLoweredOutputs(bare, {p}, false).ok());
}

TEST(LoweringShapeCheckTest, TransposeInPlaceOnComplexRecordedAfterTheCallLowersToPyTorchsShape) {
  // stft's transpose_(1, 2) on c64[1,63,129]: the capture shim encodes self after the call, so self and the output
  // both read c64[1,129,63]. The parameter is self before the call.
  Node n = MakeNode("aten::transpose_", "default",
                    {{"self", T(C64, {1, 129, 63})}, {"dim0", Value::Int(1)}, {"dim1", Value::Int(2)}},
                    {T(C64, {1, 129, 63})});
  auto r = Lower(n, Table());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto* root = r->module->entry()->root();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->shape.dimensions(), (std::vector<int64_t>{1, 129, 63}));
  EXPECT_EQ(root->operand(0)->shape.dimensions(), (std::vector<int64_t>{1, 63, 129}));
}

TEST(LoweringShapeCheckTest, TransposeInPlaceRecordedBeforeTheCallStaysAsRecorded) {
  Node n = MakeNode("aten::transpose_", "default",
                    {{"self", T(C64, {1, 63, 129})}, {"dim0", Value::Int(1)}, {"dim1", Value::Int(2)}},
                    {T(C64, {1, 129, 63})});
  auto r = Lower(n, Table());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->module->entry()->root()->shape.dimensions(), (std::vector<int64_t>{1, 129, 63}));
}

TEST(LoweringShapeCheckTest, UnsqueezeInPlaceRecordedAfterTheCall) {
  Node n = MakeNode("aten::unsqueeze_", "default", {{"self", T(F32, {3, 1, 2})}, {"dim", Value::Int(1)}},
                    {T(F32, {3, 1, 2})});
  auto r = Lower(n, Table());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->module->entry()->root()->operand(0)->shape.dimensions(), (std::vector<int64_t>{3, 2}));
}

TEST(LoweringShapeCheckTest, OutputsTurnedOffByTheMaskAreNoneAndNotCompared) {
  // convolution_backward with output_mask [True, True, False]: PyTorch returns (grad_input, grad_weight, None).
  Value none;
  Node n = MakeNode("aten::convolution_backward", "default",
                    {{"grad_output", T(F32, {1, 2, 3, 3})},
                     {"input", T(F32, {1, 1, 5, 5})},
                     {"weight", T(F32, {2, 1, 3, 3})},
                     {"bias_sizes", testing::Ints({2})},
                     {"stride", testing::Ints({1, 1})},
                     {"padding", testing::Ints({0, 0})},
                     {"dilation", testing::Ints({1, 1})},
                     {"transposed", Value::Bool(false)},
                     {"output_padding", testing::Ints({0, 0})},
                     {"groups", Value::Int(1)},
                     {"output_mask", testing::Bools({true, true, false})}},
                    {T(F32, {1, 1, 5, 5}), T(F32, {2, 1, 3, 3}), none});
  auto r = Lower(n, Table());
  EXPECT_TRUE(r.ok()) << r.status().message();
}

TEST(LoweringShapeCheckTest, SparseLayoutCallsSaySoInsteadOfNoLowering) {
  Node n = MakeNode("aten::to_sparse", "default", {{"self", T(F32, {3, 3})}}, {T(F32, {3, 3})});
  auto r = Lower(n, Table());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sparse layouts are not supported by XLA"), std::string::npos)
      << r.status().message();
  Value layout;
  layout.kind = Value::Kind::kLayout;
  layout.s = "sparse_coo";
  Node f = MakeNode("aten::zeros", "default", {{"size", testing::Ints({2, 2})}, {"layout", layout}}, {T(F32, {2, 2})});
  EXPECT_TRUE(IsSparseLayoutCall(f));
  Node dense = MakeNode("aten::zeros", "default", {{"size", testing::Ints({2, 2})}}, {T(F32, {2, 2})});
  EXPECT_FALSE(IsSparseLayoutCall(dense));
}

}  // namespace
}  // namespace opprobe::analyzer
