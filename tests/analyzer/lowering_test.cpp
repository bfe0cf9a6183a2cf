// Lowering tests: representative aten ops built by hand, lowered, and compared with golden HLO text
// in tests/golden/lowering/<name>.hlo. Regenerate the golden files after an intended change with
//   OPPROBE_UPDATE_GOLDEN=1 ./build/tests/analyzer_tests --gtest_filter='Lowering*'
// (run from the repo root). Also: error values for bad arguments and ops without a lowering, the
// core-op list, and every node of the bundled sample traces lowering without error.
#include "analyzer/lowering/lowering.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analyzer/loaders/trace_loader.h"
#include "analyzer/lowering/core_ops.h"
#include "hlo/printer.h"
#include "opprobe_version.h"
#include "tests/analyzer/lowering_test_util.h"

namespace opprobe::analyzer {
namespace {

using hlo::PrimitiveType;
constexpr auto F32 = PrimitiveType::F32;
constexpr auto C64 = PrimitiveType::C64;
constexpr auto S64 = PrimitiveType::S64;

using testing::Bools;
using testing::Ints;
using testing::MakeNode;
using testing::T;
using testing::TList;

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  std::filesystem::path path = std::filesystem::path(OPPROBE_SOURCE_DIR) / "tests/golden/lowering" / (name + ".hlo");
  const char* update = std::getenv("OPPROBE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing; run with OPPROBE_UPDATE_GOLDEN=1";
  EXPECT_EQ(ReadFile(path), actual) << "golden " << path << " differs (OPPROBE_UPDATE_GOLDEN=1 rewrites it)";
}

std::string LowerToText(const Node& n) {
  auto m = Lower(n, LoweringTable::Builtin());
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  return hlo::ToString(*m->module);
}

struct GoldenCase {
  std::string name;
  Node node;
};

std::vector<GoldenCase> GoldenCases() {
  std::vector<GoldenCase> v;
  // The Neuron tutorial's `x * y` with x real and y complex: convert to c64, then multiply.
  v.push_back(
      {"mul_f32_c64", MakeNode("aten::mul", "Tensor", {{"self", T(F32, {4})}, {"other", T(C64, {4})}}, {T(C64, {4})})});
  v.push_back({"add_scalar",
               MakeNode("aten::add", "Tensor",
                        {{"self", T(F32, {4})}, {"other", Value::Int(10)}, {"alpha", Value::Int(1)}}, {T(F32, {4})})});
  v.push_back(
      {"add_broadcast_alpha",
       MakeNode("aten::add", "Tensor", {{"self", T(F32, {2, 3})}, {"other", T(F32, {3})}, {"alpha", Value::Float(0.5)}},
                {T(F32, {2, 3})})});
  v.push_back({"fft_r2c_full", MakeNode("aten::_fft_r2c", "default",
                                        {{"self", T(F32, {4})},
                                         {"dim", Ints({0})},
                                         {"normalization", Value::Int(0)},
                                         {"onesided", Value::Bool(false)}},
                                        {T(C64, {4})})});
  v.push_back(
      {"mm", MakeNode("aten::mm", "default", {{"self", T(F32, {2, 3})}, {"mat2", T(F32, {3, 4})}}, {T(F32, {2, 4})})});
  v.push_back({"addmm", MakeNode("aten::addmm", "default",
                                 {{"self", T(F32, {4})},
                                  {"mat1", T(F32, {2, 3})},
                                  {"mat2", T(F32, {3, 4})},
                                  {"beta", Value::Int(1)},
                                  {"alpha", Value::Int(1)}},
                                 {T(F32, {2, 4})})});
  v.push_back({"bmm", MakeNode("aten::bmm", "default", {{"self", T(F32, {5, 2, 3})}, {"mat2", T(F32, {5, 3, 4})}},
                               {T(F32, {5, 2, 4})})});
  v.push_back({"convolution_2d", MakeNode("aten::convolution", "default",
                                          {{"input", T(F32, {1, 4, 8, 8})},
                                           {"weight", T(F32, {6, 2, 3, 3})},
                                           {"bias", T(F32, {6})},
                                           {"stride", Ints({2, 2})},
                                           {"padding", Ints({1, 1})},
                                           {"dilation", Ints({1, 1})},
                                           {"transposed", Value::Bool(false)},
                                           {"output_padding", Ints({0, 0})},
                                           {"groups", Value::Int(2)}},
                                          {T(F32, {1, 6, 4, 4})})});
  v.push_back({"convolution_backward", MakeNode("aten::convolution_backward", "default",
                                                {{"grad_output", T(F32, {2, 4, 4, 4})},
                                                 {"input", T(F32, {2, 3, 8, 8})},
                                                 {"weight", T(F32, {4, 3, 3, 3})},
                                                 {"bias_sizes", Ints({4})},
                                                 {"stride", Ints({2, 2})},
                                                 {"padding", Ints({1, 1})},
                                                 {"dilation", Ints({1, 1})},
                                                 {"transposed", Value::Bool(false)},
                                                 {"output_padding", Ints({0, 0})},
                                                 {"groups", Value::Int(1)},
                                                 {"output_mask", Bools({true, true, true})}},
                                                {T(F32, {2, 3, 8, 8}), T(F32, {4, 3, 3, 3}), T(F32, {4})})});
  v.push_back({"max_pool2d_with_indices", MakeNode("aten::max_pool2d_with_indices", "default",
                                                   {{"self", T(F32, {1, 1, 4, 4})},
                                                    {"kernel_size", Ints({3, 3})},
                                                    {"stride", Ints({2, 2})},
                                                    {"padding", Ints({1, 1})},
                                                    {"dilation", Ints({1, 1})},
                                                    {"ceil_mode", Value::Bool(false)}},
                                                   {T(F32, {1, 1, 2, 2}), T(S64, {1, 1, 2, 2})})});
  v.push_back({"max_pool2d_with_indices_backward", MakeNode("aten::max_pool2d_with_indices_backward", "default",
                                                            {{"grad_output", T(F32, {1, 1, 2, 2})},
                                                             {"self", T(F32, {1, 1, 4, 4})},
                                                             {"kernel_size", Ints({3, 3})},
                                                             {"stride", Ints({2, 2})},
                                                             {"padding", Ints({1, 1})},
                                                             {"dilation", Ints({1, 1})},
                                                             {"ceil_mode", Value::Bool(false)},
                                                             {"indices", T(S64, {1, 1, 2, 2})}},
                                                            {T(F32, {1, 1, 4, 4})})});
  v.push_back({"native_batch_norm_training", MakeNode("aten::native_batch_norm", "default",
                                                      {{"input", T(F32, {2, 3, 4, 4})},
                                                       {"weight", T(F32, {3})},
                                                       {"bias", T(F32, {3})},
                                                       {"running_mean", T(F32, {3})},
                                                       {"running_var", T(F32, {3})},
                                                       {"training", Value::Bool(true)},
                                                       {"momentum", Value::Float(0.1)},
                                                       {"eps", Value::Float(1e-5)}},
                                                      {T(F32, {2, 3, 4, 4}), T(F32, {3}), T(F32, {3})})});
  v.push_back(
      {"sum_dim",
       MakeNode(
           "aten::sum", "dim_IntList",
           {{"self", T(F32, {2, 3})}, {"dim", Ints({0})}, {"keepdim", Value::Bool(true)}, {"dtype", Value::None()}},
           {T(F32, {1, 3})})});
  v.push_back({"argmax", MakeNode("aten::argmax", "default",
                                  {{"self", T(F32, {2, 3})}, {"dim", Value::Int(1)}, {"keepdim", Value::Bool(false)}},
                                  {T(S64, {2})})});
  v.push_back(
      {"cumsum", MakeNode("aten::cumsum", "default",
                          {{"self", T(F32, {5})}, {"dim", Value::Int(0)}, {"dtype", Value::None()}}, {T(F32, {5})})});
  v.push_back({"topk", MakeNode("aten::topk", "default",
                                {{"self", T(F32, {6})},
                                 {"k", Value::Int(2)},
                                 {"dim", Value::Int(-1)},
                                 {"largest", Value::Bool(true)},
                                 {"sorted", Value::Bool(true)}},
                                {T(F32, {2}), T(S64, {2})})});
  v.push_back({"embedding", MakeNode("aten::embedding", "default",
                                     {{"weight", T(F32, {10, 4})},
                                      {"indices", T(S64, {2, 3})},
                                      {"padding_idx", Value::Int(-1)},
                                      {"scale_grad_by_freq", Value::Bool(false)},
                                      {"sparse", Value::Bool(false)}},
                                     {T(F32, {2, 3, 4})})});
  v.push_back({"index_put_accumulate", MakeNode("aten::index_put", "default",
                                                {{"self", T(F32, {5, 3})},
                                                 {"indices", TList({T(S64, {4})})},
                                                 {"values", T(F32, {4, 3})},
                                                 {"accumulate", Value::Bool(true)}},
                                                {T(F32, {5, 3})})});
  v.push_back({"where_self",
               MakeNode("aten::where", "self",
                        {{"condition", T(PrimitiveType::PRED, {3})}, {"self", T(F32, {3})}, {"other", T(F32, {3})}},
                        {T(F32, {3})})});
  v.push_back({"nonzero", MakeNode("aten::nonzero", "default", {{"self", T(F32, {2, 3})}}, {T(S64, {4, 2})})});
  v.push_back({"log_softmax",
               MakeNode("aten::_log_softmax", "default",
                        {{"self", T(F32, {2, 5})}, {"dim", Value::Int(1)}, {"half_to_float", Value::Bool(false)}},
                        {T(F32, {2, 5})})});
  v.push_back({"view", MakeNode("aten::view", "default", {{"self", T(F32, {2, 6})}, {"size", Ints({3, -1})}},
                                {T(F32, {3, 4})})});
  v.push_back({"detach", MakeNode("aten::detach", "default", {{"self", T(F32, {3})}}, {T(F32, {3})})});
  return v;
}

TEST(LoweringGoldenTest, RepresentativeOps) {
  for (const auto& c : GoldenCases()) {
    SCOPED_TRACE(c.name);
    ExpectGolden(c.name, LowerToText(c.node));
  }
}

TEST(LoweringTest, ComplexMultiplyConvertsTheRealOperand) {
  Node n = MakeNode("aten::mul", "Tensor", {{"self", T(F32, {4})}, {"other", T(C64, {4})}}, {T(C64, {4})});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<std::string> ops;
  for (const auto* u : m->units)
    ops.push_back(std::string(hlo::OpcodeName(u->opcode)) + " " + u->shape.ToString(false));
  EXPECT_EQ(ops, (std::vector<std::string>{"convert c64[4]", "multiply c64[4]"}));
}

TEST(LoweringTest, MetadataOpsEmitNothing) {
  for (const char* op : {"aten::detach", "aten::alias", "aten::lift_fresh", "aten::clone"}) {
    Node n = MakeNode(op, "default", {{"self", T(F32, {3})}}, {T(F32, {3})});
    auto m = Lower(n, LoweringTable::Builtin());
    ASSERT_TRUE(m.ok()) << op << ": " << m.status().message();
    EXPECT_TRUE(m->units.empty()) << op;
  }
}

TEST(LoweringTest, NoLoweringIsUnimplemented) {
  Node n = MakeNode("aten::frobnicate", "default", {{"self", T(F32, {3})}}, {T(F32, {3})});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("no lowering for aten::frobnicate"), std::string::npos) << m.status().message();
}

TEST(LoweringTest, BadArgumentsAreErrorValues) {
  // mm of a 1-d operand.
  Node mm = MakeNode("aten::mm", "default", {{"self", T(F32, {3})}, {"mat2", T(F32, {3, 4})}}, {T(F32, {4})});
  EXPECT_FALSE(Lower(mm, LoweringTable::Builtin()).ok());
  // A missing tensor argument.
  Node relu = MakeNode("aten::relu", "default", {}, {T(F32, {3})});
  auto r = Lower(relu, LoweringTable::Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("self"), std::string::npos) << r.status().message();
  // Out-of-range dimension.
  Node sum = MakeNode("aten::sum", "dim_IntList",
                      {{"self", T(F32, {2, 3})}, {"dim", Ints({5})}, {"keepdim", Value::Bool(false)}}, {T(F32, {2})});
  EXPECT_FALSE(Lower(sum, LoweringTable::Builtin()).ok());
  // Incompatible broadcast.
  Node add = MakeNode("aten::add", "Tensor", {{"self", T(F32, {2})}, {"other", T(F32, {3})}}, {T(F32, {3})});
  EXPECT_FALSE(Lower(add, LoweringTable::Builtin()).ok());
}

TEST(LoweringTest, OutputShapeMismatchIsAnError) {
  // The recorded output says [5] but the op produces [4]: the lowering must not claim success.
  Node n = MakeNode("aten::relu", "default", {{"self", T(F32, {4})}}, {T(F32, {5})});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("produced f32[4] but PyTorch returned f32[5]"), std::string::npos)
      << m.status().message();
}

TEST(LoweringTest, DynamicShapeOpsAreMarked) {
  Node n = MakeNode("aten::nonzero", "default", {{"self", T(F32, {2, 3})}}, {T(S64, {4, 2})});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->dynamic_shape);
  EXPECT_FALSE(m->note.empty());
  EXPECT_TRUE(m->module->entry()->root()->shape.is_dynamic());
}

TEST(LoweringTest, CoreOpListMatchesTheTextFileAndIsFullyLowered) {
  std::ifstream in(std::filesystem::path(OPPROBE_SOURCE_DIR) / "analyzer/lowering/core_aten_ops.txt");
  std::vector<std::string> file;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) file.push_back(line);
  EXPECT_EQ(file, CoreAtenOps());
  EXPECT_EQ(CoreAtenOps().size(), 193u);
  std::vector<std::string> missing;
  for (const auto& op : CoreAtenOps())
    if (!FindLowering(LoweringTable::Builtin(), op)) missing.push_back(op);
  EXPECT_TRUE(missing.empty()) << "core ops without a lowering: " << ::testing::PrintToString(missing);
}

TEST(LoweringTest, SampleTracesLowerCompletely) {
  for (const char* name : {"supported.json", "unsupported.json", "resnet18_train.json"}) {
    auto path = std::filesystem::path(OPPROBE_SOURCE_DIR) / "samples/traces" / name;
    if (!std::filesystem::exists(path)) continue;
    auto g = LoadTrace(path.string());
    ASSERT_TRUE(g.ok()) << g.status().message();
    for (const auto& n : g->nodes) {
      auto m = Lower(n, LoweringTable::Builtin());
      EXPECT_TRUE(m.ok()) << name << ": " << n.qualified_name() << " " << n.TensorSignature() << ": "
                          << m.status().message();
    }
  }
}

}  // namespace
}  // namespace opprobe::analyzer
