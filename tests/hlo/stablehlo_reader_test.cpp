// The StableHLO reader (hlo/stablehlo): hand-written modules in the pretty and the generic form, locations and
// their metadata, the HLO each op becomes, the corpus file, and bad input (one located line, never a crash).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "hlo/printer.h"
#include "hlo/stablehlo/stablehlo.h"
#include "hlo_test_files.h"

namespace opprobe::hlo {
namespace {

std::unique_ptr<Module> Read(const std::string& text) {
  auto m = ParseStableHlo(text, "test.mlir");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::string ReadError(const std::string& text) {
  auto m = ParseStableHlo(text, "test.mlir");
  EXPECT_FALSE(m.ok()) << "accepted:\n" << text;
  return m.ok() ? "" : m.status().message();
}

std::string Canonical(const Module& m) { return ToString(m, PrintOptions::Canonical()); }

void ExpectOneLocatedLine(const std::string& message, const std::string& where);

const Instruction* Find(const Module& m, Opcode op, int nth = 0) {
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions())
      if (i->opcode == op && i->unknown_opcode.empty() && nth-- == 0) return i.get();
  return nullptr;
}

std::map<std::string, int> Opcodes(const Computation& c) {
  std::map<std::string, int> out;
  for (const auto& i : c.instructions())
    ++out[i->unknown_opcode.empty() ? std::string(OpcodeName(i->opcode)) : i->unknown_opcode];
  return out;
}

constexpr char kPretty[] = R"(module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>) -> (tensor<2x4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<2x3xf32>
    %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, HIGHEST] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %3 = stablehlo.add %1, %2 : tensor<2x4xf32>
    %4 = stablehlo.compare GT, %3, %2, FLOAT : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %5 = stablehlo.select %4, %3, %2 : tensor<2x4xi1>, tensor<2x4xf32>
    return %5 : tensor<2x4xf32>
  }
}
)";

constexpr char kGeneric[] = R"("builtin.module"() <{sym_name = "jit_f"}> ({
  "func.func"() <{function_type = (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>):
    %0 = "stablehlo.sine"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = "stablehlo.dot_general"(%0, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %2 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %3 = "stablehlo.broadcast_in_dim"(%2) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x4xf32>
    %4 = "stablehlo.add"(%1, %3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %5 = "stablehlo.compare"(%4, %3) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %6 = "stablehlo.select"(%5, %4, %3) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%6) : (tensor<2x4xf32>) -> ()
  }) {jax.result_info = "result"} : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
)";

TEST(StableHloReader, PrettyFormBecomesHloInstructions) {
  auto m = Read(kPretty);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "jit_f");
  ASSERT_TRUE(m->entry());
  const Computation& e = *m->entry();
  EXPECT_EQ(e.parameters().size(), 2u);
  EXPECT_EQ(e.root()->opcode, Opcode::kSelect);
  EXPECT_EQ(e.root()->shape.ToString(), "f32[2,4]{1,0}");
  const Instruction* dot = Find(*m, Opcode::kDot);
  ASSERT_TRUE(dot);
  EXPECT_EQ(dot->dot_dimension_numbers->lhs_contracting_dimensions, std::vector<int64_t>{1});
  EXPECT_EQ(dot->dot_dimension_numbers->rhs_contracting_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(dot->rare().operand_precision,
            (std::vector<PrecisionLevel>{PrecisionLevel::kDefault, PrecisionLevel::kHighest}));
  const Instruction* cmp = Find(*m, Opcode::kCompare);
  ASSERT_TRUE(cmp);
  EXPECT_EQ(cmp->comparison_direction, ComparisonDirection::kGt);
  EXPECT_EQ(cmp->rare().comparison_type, "FLOAT");
  EXPECT_EQ(cmp->shape.ToString(), "pred[2,4]{1,0}");
  const Instruction* b = Find(*m, Opcode::kBroadcast);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->dimensions.empty());
  EXPECT_EQ(b->operand(0)->opcode, Opcode::kConstant);
  EXPECT_EQ(b->operand(0)->literal->ValueToString(), "1");
}

TEST(StableHloReader, GenericFormConvertsAsThePrettyForm) {
  auto pretty = Read(kPretty);
  auto generic = Read(kGeneric);
  ASSERT_TRUE(pretty && generic);
  EXPECT_EQ(Canonical(*pretty), Canonical(*generic));
}

TEST(StableHloReader, LocationsBecomeMetadata) {
  // JAX: `#loc` aliases after the module, a name around a call site whose callee is the user's line.
  auto m = Read(R"(#loc1 = loc("x")
module @jit_f {
  func.func public @main(%arg0: tensor<3xf32> loc("x")) -> tensor<3xf32> {
    %0 = stablehlo.sine %arg0 : tensor<3xf32> loc(#loc6)
    %1 = stablehlo.cosine %0 : tensor<3xf32> loc(fused["aten__cos", "model.py":12:3])
    %2 = stablehlo.negate %1 : tensor<3xf32> loc("neg:"("lib.py":7:1 to :9))
    return %2 : tensor<3xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("/home/me/f.py":4:11 to :21)
#loc3 = loc("/home/me/f.py":9:10)
#loc4 = loc("f"(#loc2))
#loc5 = loc("<module>"(#loc3))
#loc6 = loc("jit(f)/sin"(callsite(#loc4 at #loc5)))
)");
  ASSERT_TRUE(m);
  const Instruction* sin = Find(*m, Opcode::kSin);
  ASSERT_TRUE(sin);
  EXPECT_EQ(sin->metadata->op_name, "jit(f)/sin");
  EXPECT_EQ(sin->metadata->op_type, "");
  EXPECT_EQ(sin->metadata->source_file, "/home/me/f.py");
  EXPECT_EQ(sin->metadata->source_line, 4);  // the callee, the innermost frame
  const Instruction* cos = Find(*m, Opcode::kCos);
  ASSERT_TRUE(cos);
  EXPECT_EQ(cos->metadata->op_type, "aten__cos");  // torch_xla's op name is its op type
  EXPECT_EQ(cos->metadata->source_file, "model.py");
  EXPECT_EQ(cos->metadata->source_line, 12);
  const Instruction* neg = Find(*m, Opcode::kNegate);
  ASSERT_TRUE(neg);
  EXPECT_EQ(neg->metadata->op_type, "neg");  // a name ending in ':' is XLA's op_type
  EXPECT_EQ(neg->metadata->op_name, "");
  EXPECT_EQ(neg->metadata->source_line, 7);
}

TEST(StableHloReader, TorchXlaPrettyDebugInfoNamesAtenOpsAndTheScriptLine) {
  // What torch_xla's exported_program_to_stablehlo wrote with XLA_HLO_DEBUG=1 (tests/fixtures/stablehlo).
  auto m = Read(testing::ReadTestFile("tests/fixtures/stablehlo/torch_xla_mlp.stablehlo.mlir"));
  ASSERT_TRUE(m);
  std::map<std::string, int> by_type;
  for (const auto& i : m->entry()->instructions()) {
    if (i->opcode == Opcode::kParameter) continue;
    ++by_type[i->metadata->op_type];
    if (!i->metadata->op_type.empty()) {
      // The innermost frame outside the installed packages: the script's call of the exporter.
      EXPECT_EQ(i->metadata->source_file, "torch_xla_mlp.py") << ToString(*i);
      EXPECT_GT(i->metadata->source_line, 0);
    }
  }
  EXPECT_GT(by_type["aten__addmm"], 0);
  EXPECT_GT(by_type["aten__relu"], 0);
  EXPECT_GT(by_type["aten__softmax"], 0);
  EXPECT_GT(by_type["aten__permute"], 0);
  // The transposes keep the layout torch_xla's HLO gave them (xla_shape).
  const Instruction* t = Find(*m, Opcode::kTranspose);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->shape.ToString(), "f32[8,16]{0,1}");
}

TEST(StableHloReader, MultiResultOpsAreTuplesUnpackedByGetTupleElement) {
  auto m = Read(R"(module @m {
  func.func @main(%arg0: tensor<3x7xf32>, %arg1: tensor<3x7xi32>) -> (tensor<3xf32>, tensor<3xi32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.reduce(%arg0 init: %cst), (%arg1 init: %c) across dimensions = [1] : (tensor<3x7xf32>, tensor<3x7xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
     reducer(%a: tensor<f32>, %b: tensor<f32>) (%x: tensor<i32>, %y: tensor<i32>)  {
      %1 = stablehlo.maximum %a, %b : tensor<f32>
      %2 = stablehlo.add %x, %y : tensor<i32>
      stablehlo.return %1, %2 : tensor<f32>, tensor<i32>
    }
    return %0#0, %0#1 : tensor<3xf32>, tensor<3xi32>
  }
}
)");
  ASSERT_TRUE(m);
  const Instruction* r = Find(*m, Opcode::kReduce);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape.ToString(), "(f32[3]{0}, s32[3]{0})");
  EXPECT_EQ(r->dimensions, std::vector<int64_t>{1});
  ASSERT_EQ(r->operand_count(), 4);
  EXPECT_EQ(r->operand(1)->shape.ToString(), "s32[3,7]{1,0}");  // inputs first, then the init values
  // The reducer's parameters: both accumulators, then both values (XLA's order).
  const Computation* body = r->to_apply();
  ASSERT_TRUE(body);
  auto params = body->parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[1]->shape.ToString(), "s32[]");
  EXPECT_EQ(body->root()->opcode, Opcode::kTuple);
  const Computation& e = *m->entry();
  EXPECT_EQ(Opcodes(e)["get-tuple-element"], 2);
  EXPECT_EQ(e.root()->opcode, Opcode::kTuple);  // several results: one tuple
}

TEST(StableHloReader, WhileCarriesCapturedValuesAndCaseBranchesTakeThem) {
  auto m = Read(R"(module @m {
  func.func @main(%arg0: tensor<f32>, %arg1: tensor<i32>, %arg2: tensor<f32>) -> tensor<f32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<f32>
    cond {
      %1 = stablehlo.compare LT, %iterArg, %arg1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_1 = stablehlo.constant dense<1> : tensor<i32>
      %1 = stablehlo.add %iterArg, %c_1 : tensor<i32>
      %2 = stablehlo.multiply %iterArg_0, %arg2 : tensor<f32>
      stablehlo.return %1, %2 : tensor<i32>, tensor<f32>
    }
    %3 = "stablehlo.case"(%arg1) ({
      %4 = stablehlo.sine %0#1 : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }, {
      %4 = stablehlo.add %0#1, %arg2 : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }) : (tensor<i32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}
)");
  ASSERT_TRUE(m);
  const Instruction* w = Find(*m, Opcode::kWhile);
  ASSERT_TRUE(w);
  // The operands, then the values the regions use from outside (%arg1 in cond, %arg2 in the body).
  EXPECT_EQ(w->shape.ToString(), "(s32[], f32[], s32[], f32[])");
  ASSERT_EQ(w->called_computations.size(), 2u);
  const Computation* body = w->called_computations[0];
  EXPECT_EQ(body->root()->shape, w->shape);
  EXPECT_EQ(body->root()->operand(2)->opcode, Opcode::kGetTupleElement);  // captured values pass through
  const Instruction* c = Find(*m, Opcode::kConditional);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->operand_count(), 3);
  EXPECT_EQ(c->operand(1)->shape.ToString(), "f32[]");           // one captured value: as it is
  EXPECT_EQ(c->operand(2)->shape.ToString(), "(f32[], f32[])");  // two: a tuple
}

TEST(StableHloReader, FunctionsCalledAreComputationsAndChloCompositesAreRecomposed) {
  auto m = Read(R"(module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<2xi32>) {
    %0 = call @inner(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.composite "chlo.erf" %0 {decomposition = @chlo.erf.impl, version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>
    %2:2 = chlo.top_k(%1, k = 2) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)
    return %1, %2#0, %2#1 : tensor<4xf32>, tensor<2xf32>, tensor<2xi32>
  }
  func.func private @inner(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.tanh %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @chlo.erf.impl(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.negate %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(m);
  const Instruction* call = Find(*m, Opcode::kCall);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->to_apply()->root()->opcode, Opcode::kTanh);
  EXPECT_TRUE(Find(*m, Opcode::kErf));      // the composite is erf again, as XLA recomposes it
  EXPECT_FALSE(Find(*m, Opcode::kNegate));  // and its decomposition is not used
  const Instruction* topk = Find(*m, Opcode::kTopK);
  ASSERT_TRUE(topk);
  EXPECT_EQ(topk->k, 2);
  EXPECT_EQ(topk->shape.ToString(), "(f32[2]{0}, s32[2]{0})");
}

TEST(StableHloReader, JaxRandomKeysShardingConstraintAndErfInvConvertAsXlaDoes) {
  // What torchax's random ops lower to through JAX (--lowering torchax): the key under Shardy's sharding constraint on
  // an empty mesh, and chlo.erf_inv (randn's inverse-CDF sampling).
  auto m = Read(R"(module @jit_run attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @empty_mesh = <[]>
  func.func public @main(%arg0: tensor<2xui32>, %arg1: tensor<4xf32>) -> (tensor<2xui32>, tensor<4xf32>) {
    %0 = sdy.sharding_constraint %arg0 <@empty_mesh, [{}]> : tensor<2xui32>
    %1 = chlo.erf_inv %arg1 : tensor<4xf32> -> tensor<4xf32>
    return %0, %1 : tensor<2xui32>, tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(m);
  const Instruction* sharding = Find(*m, Opcode::kCustomCall);
  ASSERT_TRUE(sharding);
  EXPECT_EQ(sharding->custom_call_target, "Sharding");
  ASSERT_TRUE(sharding->sharding.has_value());
  EXPECT_EQ(sharding->sharding->type, Sharding::Type::kReplicated);
  // erf_inv: no opcode of its own, Giles' polynomial in w = -log((1-x)(1+x)), with +-inf at |x| == 1.
  std::map<std::string, int> ops = Opcodes(*m->entry());
  EXPECT_EQ(ops.count("erf-inv"), 0u);
  EXPECT_GE(ops["log"], 1);
  EXPECT_GE(ops["sqrt"], 1);
  EXPECT_GE(ops["select"], 9);
  EXPECT_GE(ops["multiply"], 9);

  // A constraint that names a mesh axis needs the mesh: it stays unknown (unsupported everywhere), never a guess.
  auto named = Read(R"(module @m {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}]> : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(named);
  bool unknown = false;
  for (const auto& i : named->entry()->instructions()) unknown |= i->unknown_opcode == "sdy.sharding_constraint";
  EXPECT_TRUE(unknown);
}

TEST(StableHloReader, ConstantsOfEveryForm) {
  auto m = Read(R"(module @m {
  func.func @main() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<2xi1>, tensor<1xcomplex<f32>>, tensor<f32>, tensor<2xbf16>, tensor<4xui8>, tensor<2xf32>) {
    %0 = stablehlo.constant dense<[[1.5, -2.0], [0.0, 1.0e+30]]> : tensor<2x2xf32>
    %1 = stablehlo.constant dense<[1, -2, 9223372036854775807]> : tensor<3xi64>
    %2 = stablehlo.constant dense<[true, false]> : tensor<2xi1>
    %3 = stablehlo.constant dense<(1.000000e+00,2.000000e+00)> : tensor<1xcomplex<f32>>
    %4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %5 = stablehlo.constant dense<[1.0, 2.5]> : tensor<2xbf16>
    %6 = stablehlo.constant dense<"0x01020304"> : tensor<4xui8>
    %7 = stablehlo.constant dense_resource<__elided__> : tensor<2xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x2xf32>, tensor<3xi64>, tensor<2xi1>, tensor<1xcomplex<f32>>, tensor<f32>, tensor<2xbf16>, tensor<4xui8>, tensor<2xf32>
  }
}
)");
  ASSERT_TRUE(m);
  std::vector<std::string> values;
  for (const auto& i : m->entry()->instructions())
    if (i->opcode == Opcode::kConstant) values.push_back(i->literal->ValueToString());
  EXPECT_EQ(values,
            (std::vector<std::string>{"{ {1.5, -2}, {0, 1e+30} }", "{1, -2, 9223372036854775807}", "{true, false}",
                                      "{(1, 2)}", "-inf", "{1, 2.5}", "{1, 2, 3, 4}", "{...}"}));
}

TEST(StableHloReader, SplatConstantsAreAScalarBroadcastAndNeverAllocated) {
  // As XLA exports a splat: a scalar constant and a broadcast; a huge one takes no memory.
  auto m = Read(R"(module @m {
  func.func @main() -> tensor<100000x100000x100xf32> {
    %0 = stablehlo.constant dense<0.000000e+00> : tensor<100000x100000x100xf32>
    return %0 : tensor<100000x100000x100xf32>
  }
}
)");
  ASSERT_TRUE(m);
  const Instruction* root = m->entry()->root();
  EXPECT_EQ(root->opcode, Opcode::kBroadcast);
  EXPECT_EQ(root->operand(0)->shape.ToString(), "f32[]");
}

TEST(StableHloReader, BroadcastInDimOfUnitDimensionsIsXlaBuildersSequence) {
  // XlaBuilder::BroadcastInDim: the size-1 operand dimension that is expanded is reshaped away first.
  auto m = Read(R"(module @m {
  func.func @main(%arg0: tensor<2x1xf32>) -> tensor<2x4x5xf32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 2] : (tensor<2x1xf32>) -> tensor<2x4x5xf32>
    return %0 : tensor<2x4x5xf32>
  }
}
)");
  ASSERT_TRUE(m);
  std::string text = ToString(*m->entry(), PrintOptions::Canonical());
  EXPECT_NE(text.find("f32[2,4,1]{2,1,0} broadcast("), std::string::npos) << text;
  EXPECT_NE(text.find("f32[2,4]{1,0} reshape("), std::string::npos) << text;
  EXPECT_NE(text.find("f32[2,4,5]{2,1,0} broadcast("), std::string::npos) << text;
}

TEST(StableHloReader, ConvolutionWindowAndDimensionNumbersBothForms) {
  const char* pretty = R"(module @m {
  func.func @main(%arg0: tensor<1x3x9x9xf32>, %arg1: tensor<4x3x3x3xf32>) -> tensor<1x4x5x5xf32> {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2], pad = [[1, 1], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [1, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x5xf32>
    return %0 : tensor<1x4x5x5xf32>
  }
}
)";
  const char* generic = R"(module @m {
  func.func @main(%arg0: tensor<1x3x9x9xf32>, %arg1: tensor<4x3x3x3xf32>) -> tensor<1x4x5x5xf32> {
    %0 = "stablehlo.convolution"(%arg0, %arg1) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[1, 1], [2, 2]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 1, 2>, window_reversal = array<i1: false, false>, window_strides = array<i64: 2, 2>}> : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x5xf32>
    return %0 : tensor<1x4x5x5xf32>
  }
}
)";
  auto a = Read(pretty), b = Read(generic);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(Canonical(*a), Canonical(*b));
  const Instruction* conv = a->entry()->root();
  EXPECT_EQ(WindowToString(*conv->window), "{size=3x3 stride=2x2 pad=1_1x2_2 rhs_dilate=1x2}");
  EXPECT_EQ(ConvolutionDimensionNumbersToString(*conv->convolution_dimension_numbers), "bf01_oi01->bf01");
}

TEST(StableHloReader, OpsWithoutHloTranslationAreUnknownInstructions) {
  // XLA cannot translate uniform_quantize; an op of a known dialect the reader does not know converts too.
  auto m = Read(R"(module @m {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.uniform_quantize %arg0 : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 1.000000e+00>>
    %1 = stablehlo.uniform_dequantize %0 : (tensor<4x!quant.uniform<i8:f32, 1.000000e+00>>) -> tensor<4xf32>
    %2 = stablehlo.some_future_op %1, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = chlo.lgamma %2 : tensor<4xf32> -> tensor<4xf32>
    %4 = sdy.sharding_constraint %3 <@mesh, [{"x"}]> : tensor<4xf32>
    return %4 : tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(m);
  std::vector<std::string> unknown;
  for (const auto& i : m->entry()->instructions())
    if (!i->unknown_opcode.empty()) unknown.push_back(i->unknown_opcode + " " + i->shape.ToString());
  EXPECT_EQ(unknown,
            (std::vector<std::string>{"stablehlo.uniform_quantize s8[4]{0}", "stablehlo.uniform_dequantize f32[4]{0}",
                                      "stablehlo.some_future_op f32[4]{0}", "chlo.lgamma f32[4]{0}",
                                      "sdy.sharding_constraint f32[4]{0}"}));
  // A known op with something its syntax does not have is an error, not a guess.
  ExpectOneLocatedLine(ReadError(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0, LT : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)"),
                       "test.mlir:3:38: unexpected 'LT' in operation 'stablehlo.add'");
}

TEST(StableHloReader, OldStyleDenseAttributesAsTheCorpusHas) {
  // torch_xla's 2023 export: reduce_window's window as dense<...> : tensor<Nxi64> (today array<i64: ...>).
  auto m = Read(testing::ReadTestFile("../shared/corpus/hlo/torch_xla_resnet18_qdq.stablehlo.mlir"));
  ASSERT_TRUE(m) << "needs ../shared/corpus";
  EXPECT_EQ(m->name(), "IrToHlo.462");
  std::map<std::string, int> ops = Opcodes(*m->entry());
  EXPECT_EQ(ops["convolution"], 20);
  EXPECT_EQ(ops["reduce-window"], 1);
  EXPECT_EQ(ops["dot"], 1);
  EXPECT_EQ(ops["stablehlo.uniform_quantize"], 54);  // as many as the file has (grep -c)
  EXPECT_EQ(ops["stablehlo.uniform_dequantize"], 62);
  const Instruction* rw = Find(*m, Opcode::kReduceWindow);
  ASSERT_TRUE(rw);
  EXPECT_EQ(WindowToString(*rw->window), "{size=1x1x3x3 stride=1x1x2x2}");
}

// The JAX programs of tests/fixtures/stablehlo/jax, in every form JAX writes, read; a program's forms agree.
TEST(StableHloReader, JaxFixturesInEveryForm) {
  std::map<std::string, std::string> by_program;
  int read = 0;
  for (const auto& e : std::filesystem::directory_iterator("tests/fixtures/stablehlo/jax")) {
    if (e.path().extension() != ".mlir") continue;
    auto m = ParseStableHlo(testing::ReadTestFile(e.path().string()), e.path().filename().string());
    ASSERT_TRUE(m.ok()) << m.status().message();
    ++read;
    std::string program = e.path().filename().string();
    program = program.substr(0, program.find('.'));
    std::string canonical = Canonical(**m);
    if (e.path().filename().string().find(".export.") != std::string::npos) continue;  // composites differ
    auto [it, first] = by_program.emplace(program, canonical);
    if (!first) { EXPECT_EQ(it->second, canonical) << e.path(); }
  }
  EXPECT_GE(read, 17);
}

// Bad input: one line naming source:line:col, whatever the bytes.
void ExpectOneLocatedLine(const std::string& message, const std::string& where) {
  EXPECT_EQ(message.rfind(where, 0), 0u) << message;
  for (char c : message) {
    unsigned char u = static_cast<unsigned char>(c);
    EXPECT_FALSE(u < 0x20 || u == 0x7f) << message;
  }
}

TEST(StableHloReader, TruncatedTextIsALocatedError) {
  std::string text = kPretty;
  std::string cut = text.substr(0, text.find("%3 = stablehlo.add") + 12);
  std::string e = ReadError(cut);
  ExpectOneLocatedLine(e, "test.mlir:");
  EXPECT_NE(e.find("expected"), std::string::npos) << e;
  ExpectOneLocatedLine(ReadError(text.substr(0, text.size() - 3)), "test.mlir:");
  ExpectOneLocatedLine(ReadError(""), "test.mlir:1:1: no functions");
}

TEST(StableHloReader, UnknownDialectNamesIt) {
  std::string e = ReadError(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = tosa.add %arg0, %arg0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)");
  ExpectOneLocatedLine(e, "test.mlir:3:10: operation 'tosa.add' is from dialect 'tosa'");
}

TEST(StableHloReader, GarbageBytesAreQuotedNotEchoed) {
  std::string garbage = "module {\n func.func @main() {\n %0 = \x01\xff\x80\n\"\x1b[31m";
  std::string e = ReadError(garbage);
  ExpectOneLocatedLine(e, "test.mlir:3:");
  EXPECT_EQ(e.find('\x1b'), std::string::npos);
  ExpectOneLocatedLine(ReadError(std::string("\xff\xfe\x00\x01garbage", 11)), "test.mlir:1:1:");
}

TEST(StableHloReader, SemanticErrorsAreLocatedToo) {
  ExpectOneLocatedLine(ReadError(R"(module {
  func.func @main(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %arg0 : tensor<?x4xf32>
  }
}
)"),
                       "test.mlir:2:3: tensor type 'tensor<?x4xf32>' has a dynamic dimension without a bound");
  ExpectOneLocatedLine(ReadError(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %nope : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)"),
                       "test.mlir:3:31: use of undefined value %nope");
  ExpectOneLocatedLine(ReadError(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)"),
                       "test.mlir:3:10: stablehlo.add: expected 2 operand(s), got 1");
  ExpectOneLocatedLine(ReadError(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)"),
                       "test.mlir:3:10: func.call: function @main calls itself");
  ExpectOneLocatedLine(ReadError(R"(module {
  func.func @main() -> tensor<2xf32> {
    %0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
)"),
                       "test.mlir:3:29: stablehlo.constant: the literal has 3 value(s), its type f32[2] needs 2");
}

TEST(StableHloReader, DeeplyNestedInputIsRefusedNotACrash) {
  std::string deep = "module {\n func.func @main() -> tensor<f32> {\n %0 = stablehlo.constant dense<" +
                     std::string(100000, '[') + "1.0" + std::string(100000, ']') + "> : tensor<f32>\n";
  ExpectOneLocatedLine(ReadError(deep), "test.mlir:3:");
  std::string types = "module {\n func.func @main(%a: " + std::string(5000, 't') + ") {}\n}";
  ExpectOneLocatedLine(ReadError(types), "test.mlir:2:");
  // A chain of 200 functions, each calling the next, converts recursively: refused past a depth, not a crash.
  std::string chain = "module {\n";
  for (int k = 0; k < 200; ++k)
    chain += "func.func @" + (k ? "f" + std::to_string(k) : std::string("main")) +
             "(%a: tensor<f32>) -> tensor<f32> {\n %0 = call @f" + std::to_string(k + 1) +
             "(%a) : (tensor<f32>) -> tensor<f32>\n return %0 : tensor<f32>\n}\n";
  chain += "func.func @f200(%a: tensor<f32>) -> tensor<f32> {\n return %a : tensor<f32>\n}\n}\n";
  std::string e = ReadError(chain);
  ExpectOneLocatedLine(e, "test.mlir:");
  EXPECT_NE(e.find("nested more than 64 deep"), std::string::npos) << e;
}

TEST(StableHloReader, ZeroSizedDimensionsAreDecimal) {
  auto m = Read(R"(module {
  func.func @main(%arg0: tensor<0x3xf32>) -> tensor<0x3xf32> {
    return %arg0 : tensor<0x3xf32>
  }
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->shape.ToString(), "f32[0,3]{1,0}");
}

TEST(StableHloReader, TellsMlirTextFromOtherInput) {
  EXPECT_TRUE(LooksLikeStableHlo("module @jit_f attributes {x = 1} {\n"));
  EXPECT_TRUE(LooksLikeStableHlo("#loc1 = loc(\"x\")\n// a comment\nmodule {\n"));
  EXPECT_TRUE(LooksLikeStableHlo("func.func @main() {\n"));
  EXPECT_TRUE(LooksLikeStableHlo("\"builtin.module\"() ({\n"));
  EXPECT_FALSE(LooksLikeStableHlo("HloModule m\n\nENTRY e {\n"));
  EXPECT_FALSE(LooksLikeStableHlo("{\"format\": \"opprobe-trace\"}"));
  EXPECT_FALSE(LooksLikeStableHlo("modules are fun\n"));
  EXPECT_TRUE(IsMlirBytecode(std::string("ML\xEFR\x01\x02", 6)));
}

}  // namespace
}  // namespace opprobe::hlo
