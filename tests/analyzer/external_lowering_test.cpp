// Another library's lowering as a lowering table (analyzer/lowering/external_lowering.h, `--lowering torchax`): each
// call's StableHLO found by its signature and copied into the call's module, a call the library could not lower an
// error with the library's reason, and the file torchax_lower.py writes read or refused with its name.
#include "analyzer/lowering/external_lowering.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analyzer/loaders/trace_loader.h"

namespace opprobe::analyzer {
namespace {

constexpr const char* kTrace = R"({"format":"opprobe-trace","version":1,"script":"t.py","calls":[
  {"op":"aten::relu","overload":"default","args":[{"name":"self","value":{"kind":"tensor","dtype":"float32","shape":[4]}}],
   "outputs":[{"kind":"tensor","dtype":"float32","shape":[4]}],"loc":{"file":"t.py","line":3},"count":1},
  {"op":"aten::relu","overload":"default","args":[{"name":"self","value":{"kind":"tensor","dtype":"float32","shape":[4]}}],
   "outputs":[{"kind":"tensor","dtype":"float32","shape":[4]}],"loc":{"file":"t.py","line":7},"count":1},
  {"op":"aten::poisson","overload":"default","args":[{"name":"self","value":{"kind":"tensor","dtype":"float32","shape":[4]}},
   {"name":"generator","value":{"kind":"none"}}],
   "outputs":[{"kind":"tensor","dtype":"float32","shape":[4]}],"loc":{"file":"t.py","line":5},"count":1}]})";

constexpr const char* kRelu = R"(module @jit_run attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result[0]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
})";

ExternalLowerings Lowerings() {
  ExternalLowerings l;
  l.library = "torchax";
  l.version = "0.0.13";
  l.calls = {{"aten::relu", "default", kRelu, ""},
             {"aten::relu", "default", kRelu, ""},
             {"aten::poisson", "default", "", "torchax 0.0.13 has no lowering for aten::poisson (OperatorNotFound)"}};
  return l;
}

TEST(ExternalLowering, EachCallLowersToTheLibrarysModuleOrItsReason) {
  auto g = ParseTrace(kTrace, "t.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto table = ExternalLoweringTable(*g, Lowerings());
  ASSERT_TRUE(table.ok()) << table.status().message();

  auto relu = Lower(g->nodes[0], *table);
  ASSERT_TRUE(relu.ok()) << relu.status().message();
  const hlo::Computation* entry = relu->module->entry();
  ASSERT_EQ(entry->parameters().size(), 1u);
  EXPECT_EQ(entry->root()->opcode, hlo::Opcode::kMaximum);
  EXPECT_EQ(entry->root()->shape.ToString(false), "f32[4]");
  // The units are the module's instructions, attributed to the call (its metadata, not the library's).
  ASSERT_FALSE(relu->units.empty());
  for (const hlo::Instruction* u : relu->units) EXPECT_EQ(u->metadata->op_type, "aten__relu");

  auto poisson = Lower(g->nodes[2], *table);
  ASSERT_FALSE(poisson.ok());
  EXPECT_EQ(poisson.status().code(), ErrorCode::kUnimplemented);
  EXPECT_EQ(poisson.status().message(), "torchax 0.0.13 has no lowering for aten::poisson (OperatorNotFound)");
}

TEST(ExternalLowering, AModuleThatDoesNotFitTheCallIsTheCallsLoweringError) {
  auto g = ParseTrace(kTrace, "t.json");
  ASSERT_TRUE(g.ok());
  ExternalLowerings l = Lowerings();
  // A module whose result is not what PyTorch recorded: the shape check of every lowering rejects it.
  std::string wrong = kRelu;
  for (size_t at; (at = wrong.find("tensor<4xf32>")) != std::string::npos;) wrong.replace(at, 13, "tensor<5xf32>");
  l.calls[0].mlir = l.calls[1].mlir = wrong;
  auto table = ExternalLoweringTable(*g, l);
  ASSERT_TRUE(table.ok());
  auto relu = Lower(g->nodes[0], *table);
  ASSERT_FALSE(relu.ok());
  EXPECT_NE(relu.status().message().find("f32[5]"), std::string::npos) << relu.status().message();
  // Text that is not StableHLO: the call's error names the library and the op.
  l.calls[0].mlir = l.calls[1].mlir = "module @m { func.func public @main( }";
  auto bad = ExternalLoweringTable(*g, l);
  ASSERT_TRUE(bad.ok());
  auto r = Lower(g->nodes[0], *bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("torchax 0.0.13's StableHLO for aten::relu does not convert"), std::string::npos)
      << r.status().message();
}

TEST(ExternalLowering, ReadsTorchaxLowerPyOutputAndRefusesAMalformedOne) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/torchax_lowerings_ok.json", bad = dir + "/torchax_lowerings_bad.json";
  std::ofstream(good)
      << R"({"torchax":"0.0.13","jax":"0.10.2","calls":[{"op":"aten::relu","overload":"default","mlir":"m"},
    {"op":"aten::poisson","error":"no lowering"}]})";
  std::ofstream(bad) << R"({"torchax":"0.0.13","calls":[{"op":"aten::relu"}]})";
  auto l = ReadTorchaxLowerings(good);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->library, "torchax");
  EXPECT_EQ(l->version, "0.0.13");
  ASSERT_EQ(l->calls.size(), 2u);
  EXPECT_EQ(l->calls[1].overload, "default");
  EXPECT_EQ(l->calls[1].error, "no lowering");
  auto b = ReadTorchaxLowerings(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(b.status().message().find("calls[0]"), std::string::npos) << b.status().message();
}

}  // namespace
}  // namespace opprobe::analyzer
