// hlo/literal_io.h: `opprobe run`'s input and output literals (.npy and JSON). The binary's end-to-end tests are in
// tests/e2e/run_cmd_test.cpp; these check the parsers' edges.
#include "hlo/literal_io.h"

#include <gtest/gtest.h>

#include <cmath>

namespace opprobe::hlo {
namespace {

std::string Npy(const std::string& header, const std::string& data) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

TEST(LiteralIoTest, NpyLittleEndianCOrder) {
  int32_t v[3] = {1, -2, 3};
  auto l = ParseNpy(Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
                        std::string(reinterpret_cast<char*>(v), sizeof v)),
                    "x.npy");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->shape().ToString(false), "s32[3]");
  EXPECT_EQ(l->GetAsInt64(1), -2);
}

TEST(LiteralIoTest, NpyErrorsQuoteWhatTheyEcho) {
  auto bad = ParseNpy(Npy("{'descr': '<x\n9', 'fortran_order': False, 'shape': (3,), }", ""), "x.npy");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "x.npy: .npy dtype '<x\\n9' is not supported");
  auto fortran = ParseNpy(Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", "abcd"), "x.npy");
  ASSERT_FALSE(fortran.ok());
  EXPECT_EQ(fortran.status().message(), "x.npy: Fortran-order .npy is not supported");
  auto short_data = ParseNpy(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "abcd"), "x.npy");
  ASSERT_FALSE(short_data.ok());
  EXPECT_EQ(short_data.status().message(), "x.npy: .npy holds 4 data bytes, shape f32[2] needs 8");
}

TEST(LiteralIoTest, JsonNestedListsAndObjects) {
  auto nested = ParseJsonLiteral("[[1, 2], [3, 4]]", "x.json", PrimitiveType::F32);
  ASSERT_TRUE(nested.ok()) << nested.status().message();
  EXPECT_EQ(nested->shape().ToString(false), "f32[2,2]");
  EXPECT_EQ(nested->GetAsDouble(3), 4.0);
  auto complex = ParseJsonLiteral("[[1, 2], [3, 4]]", "x.json", PrimitiveType::C64);
  ASSERT_TRUE(complex.ok()) << complex.status().message();
  EXPECT_EQ(complex->shape().ToString(false), "c64[2]");
  EXPECT_EQ(complex->GetAsComplex(1).imag(), 4.0);
  auto object = ParseJsonLiteral(R"({"shape": [2], "dtype": "s8", "data": [1, "one"]})", "x.json", PrimitiveType::F32);
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.status().message(), "x.json: element 1 is not a number");
  auto f = ParseJsonLiteral(R"({"shape": [2], "data": ["-inf", 2.5]})", "x.json", PrimitiveType::F64);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(std::isinf(f->GetAsDouble(0)));
  auto ragged = ParseJsonLiteral("[[1, 2], [3]]", "x.json", PrimitiveType::F32);
  ASSERT_FALSE(ragged.ok());
  EXPECT_EQ(ragged.status().message(), "x.json: ragged nested lists");
  auto dtype = ParseJsonLiteral(R"({"shape": [1], "dtype": "f\u0001", "data": [1]})", "x.json", PrimitiveType::F32);
  ASSERT_FALSE(dtype.ok());
  EXPECT_EQ(dtype.status().message(), "x.json: unknown dtype 'f\\x01'");
}

TEST(LiteralIoTest, ToJsonRoundTripsThroughTheObjectForm) {
  Literal l(Shape::Array(PrimitiveType::F32, {3}));
  l.SetFromDouble(0, 1.5);
  l.SetFromDouble(1, NAN);
  l.SetFromDouble(2, -INFINITY);
  nlohmann::json j = LiteralToJson(l);
  EXPECT_EQ(j.dump(), R"({"data":[1.5,"nan","-inf"],"dtype":"f32","shape":[3]})");
  auto back = ParseJsonLiteral(j.dump(), "out.json", PrimitiveType::F32);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->GetAsDouble(0), 1.5);
  EXPECT_TRUE(std::isnan(back->GetAsDouble(1)));
}

}  // namespace
}  // namespace opprobe::hlo
