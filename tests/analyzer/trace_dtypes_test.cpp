// Every torch dtype loads from a trace (quantized, complex32, float8, bits, sub-byte ints), those without an XLA
// element type become a lowering error naming the dtype, and the trace's step, lib_loc and capture status load.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "analyzer/graph/graph.h"
#include "analyzer/loaders/trace_loader.h"
#include "analyzer/lowering/lowering.h"
#include "opprobe_version.h"

namespace opprobe::analyzer {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

std::string ReadSource(const std::string& rel) {
  std::ifstream in(std::string(OPPROBE_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json TraceWith(const json& calls, const json& extra = json::object()) {
  json doc = {{"format", "opprobe-trace"}, {"version", 1}, {"script", "t.py"}, {"calls", calls}};
  for (const auto& [k, v] : extra.items()) doc[k] = v;
  return doc;
}

json Tensor(const std::string& dtype, json shape) {
  return {{"kind", "tensor"}, {"dtype", dtype}, {"shape", std::move(shape)}};
}

TEST(TraceDtypes, EveryDtypeOfTheSchemaLoads) {
  json schema = json::parse(ReadSource("schemas/trace.schema.json"));
  const json& names = schema["$defs"]["dtype"]["enum"];
  ASSERT_GE(names.size(), 40u);
  for (const auto& n : names) {
    std::string name = n.get<std::string>();
    json call = {{"op", "aten::clone"},
                 {"overload", "default"},
                 {"args", {{{"name", "self"}, {"value", Tensor(name, {2, 3})}}}},
                 {"outputs", {Tensor(name, {2, 3})}}};
    auto g = ParseTrace(TraceWith(json::array({call})).dump(), "t.json");
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().message();
    const TensorMeta& m = g->nodes[0].outputs[0].tensor;
    EXPECT_TRUE(hlo::IsArrayType(m.dtype)) << name;
    // The report shows the torch name where XLA has no such type, the XLA name otherwise.
    if (m.torch_dtype.empty()) EXPECT_EQ(m.ToString(), std::string(hlo::PrimitiveTypeName(m.dtype)) + "[2,3]") << name;
    else EXPECT_EQ(m.ToString(), m.torch_dtype + "[2,3]") << name;
  }
}

TEST(TraceDtypes, XlaTypesWhereXlaHasThem) {
  EXPECT_EQ(DtypeFromTorchName("float8_e4m3fnuz"), hlo::PrimitiveType::F8E4M3FNUZ);
  EXPECT_EQ(DtypeFromTorchName("float8_e5m2fnuz"), hlo::PrimitiveType::F8E5M2FNUZ);
  EXPECT_EQ(DtypeFromTorchName("torch.float8_e8m0fnu"), hlo::PrimitiveType::F8E8M0FNU);
  EXPECT_EQ(DtypeFromTorchName("uint64"), hlo::PrimitiveType::U64);
  EXPECT_EQ(DtypeFromTorchName("int4"), hlo::PrimitiveType::S4);
  EXPECT_EQ(hlo::PrimitiveTypeName(hlo::PrimitiveType::F8E8M0FNU), "f8e8m0fnu");
  EXPECT_EQ(hlo::PrimitiveTypeFromName("f8e8m0fnu"), hlo::PrimitiveType::F8E8M0FNU);
  EXPECT_EQ(TorchDtypeWithoutXlaType("float8_e4m3fn"), "");
  EXPECT_EQ(TorchDtypeWithoutXlaType("qint8"), "qint8");
  EXPECT_EQ(TorchDtypeWithoutXlaType("chalf"), "complex32");
  EXPECT_EQ(DtypeFromTorchName("qint8"), hlo::PrimitiveType::S8);  // storage type
  EXPECT_EQ(DtypeFromTorchName("float128"), std::nullopt);
}

TEST(TraceDtypes, UnknownDtypeIsStillAnError) {
  json call = {{"op", "aten::clone"}, {"args", json::array()}, {"outputs", {Tensor("float128", {1})}}};
  auto g = ParseTrace(TraceWith(json::array({call})).dump(), "t.json");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("unknown dtype 'float128'"));
}

TEST(TraceDtypes, QuantizedCallsDoNotLowerAndSayWhy) {
  json quantize = {{"op", "aten::quantize_per_tensor"},
                   {"overload", "default"},
                   {"args",
                    {{{"name", "self"}, {"value", Tensor("float32", {3, 4})}},
                     {{"name", "scale"}, {"value", {{"kind", "float"}, {"value", 0.01}}}},
                     {{"name", "zero_point"}, {"value", {{"kind", "int"}, {"value", 0}}}},
                     {{"name", "dtype"}, {"value", {{"kind", "dtype"}, {"value", "qint8"}}}}}},
                   {"outputs", {Tensor("qint8", {3, 4})}}};
  json half_complex = {{"op", "aten::mul"},
                       {"overload", "Tensor"},
                       {"args",
                        {{{"name", "self"}, {"value", Tensor("complex32", {2})}},
                         {{"name", "other"}, {"value", Tensor("complex32", {2})}}}},
                       {"outputs", {Tensor("complex32", {2})}}};
  auto g = ParseTrace(TraceWith(json::array({quantize, half_complex})).dump(), "t.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->nodes[0].args[3].value.ToString(), "qint8");
  EXPECT_EQ(FirstDtypeWithoutXlaType(g->nodes[0]), "qint8");
  auto q = Lower(g->nodes[0], LoweringTable::Builtin());
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(), HasSubstr("aten::quantize_per_tensor uses torch.qint8, a quantized dtype"));
  auto c = Lower(g->nodes[1], LoweringTable::Builtin());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("torch.complex32"));
  EXPECT_THAT(c.status().message(), HasSubstr("no 32-bit complex element type"));
}

TEST(TraceDtypes, StepLibLocAndCaptureStatusLoad) {
  json call = {{"op", "torchvision::nms"},
               {"overload", "default"},
               {"args", {{{"name", "dets"}, {"value", Tensor("float32", {3, 4})}}}},
               {"outputs", {Tensor("int64", {2})}},
               {"loc", {{"file", "detect.py"}, {"line", 7}}},
               {"lib_loc", {{"file", "torchvision/ops/boxes.py"}, {"line", 41}}},
               {"step", 2}};
  json extra = {{"status", "error"},
                {"exit_status", 1},
                {"steps", 3},
                {"error",
                 {{"type", "ValueError"},
                  {"message", "bad box\nsecond line"},
                  {"exit_status", 1},
                  {"loc", {{"file", "detect.py"}, {"line", 9}}}}}};
  auto g = ParseTrace(TraceWith(json::array({call}), extra).dump(), "t.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->nodes[0].op, "torchvision::nms");
  EXPECT_EQ(g->nodes[0].step, 2);
  EXPECT_EQ(g->nodes[0].lib_loc.file, "torchvision/ops/boxes.py");
  EXPECT_EQ(g->nodes[0].lib_loc.line, 41);
  ASSERT_TRUE(g->capture.has_value());
  EXPECT_TRUE(g->capture->failed());
  EXPECT_EQ(g->capture->exit_code, 1);
  EXPECT_EQ(g->capture->exception_type, "ValueError");
  EXPECT_EQ(g->capture->exception_message, "bad box");
  EXPECT_EQ(g->capture->location.ToString(), "detect.py 9");

  auto ok = ParseTrace(TraceWith(json::array(), {{"status", "ok"}, {"exit_status", 0}}).dump(), "t.json");
  ASSERT_TRUE(ok.ok());
  ASSERT_TRUE(ok->capture.has_value());
  EXPECT_FALSE(ok->capture->failed());

  auto negative =
      ParseTrace(TraceWith(json::array({{{"op", "aten::relu"}, {"args", json::array()}, {"step", -1}}})).dump(), "t");
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("step"));
}

}  // namespace
}  // namespace opprobe::analyzer
