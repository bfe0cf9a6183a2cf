#include "analyzer/driver/lowering_memo.h"

#include <gtest/gtest.h>

#include "analyzer/driver/build_id.h"

namespace opprobe::analyzer {
namespace {

LoweringOutcome Sample() {
  LoweringOutcome o;
  o.kind = LoweringOutcome::Kind::kOk;
  o.dynamic_shape = true;
  o.note = "bounded by the input size 16";
  o.units = {MemoUnit{0x0123456789abcdefULL, "multiply", "f32[4]{0} multiply(f32[4]{0}, f32[4]{0})", "multiply.3",
                      "aten::mul"},
             MemoUnit{0xffffffffffffffffULL, "add", std::string("odd\0bytes\xff", 10), "add.1", ""}};
  return o;
}

void ExpectSame(const LoweringOutcome& a, const LoweringOutcome& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.dynamic_shape, b.dynamic_shape);
  EXPECT_EQ(a.note, b.note);
  ASSERT_EQ(a.units.size(), b.units.size());
  for (size_t i = 0; i < a.units.size(); ++i) {
    EXPECT_EQ(a.units[i].hash, b.units[i].hash);
    EXPECT_EQ(a.units[i].opcode, b.units[i].opcode);
    EXPECT_EQ(a.units[i].signature, b.units[i].signature);
    EXPECT_EQ(a.units[i].name, b.units[i].name);
    EXPECT_EQ(a.units[i].attributed_to, b.units[i].attributed_to);
  }
}

TEST(LoweringMemo, EveryOutcomeReadsBackAsWritten) {
  ExpectSame(*DecodeLoweringOutcome(EncodeLoweringOutcome(Sample())), Sample());
  LoweringOutcome failed;
  failed.kind = LoweringOutcome::Kind::kFailed;
  failed.error = "no lowering for aten::foo.bar";
  ExpectSame(*DecodeLoweringOutcome(EncodeLoweringOutcome(failed)), failed);
  LoweringOutcome custom;
  custom.kind = LoweringOutcome::Kind::kCustomOp;
  ExpectSame(*DecodeLoweringOutcome(EncodeLoweringOutcome(custom)), custom);
  // A lowering that failed by opprobe's own bug stays that on a warm run: not read back as a gap.
  LoweringOutcome internal;
  internal.kind = LoweringOutcome::Kind::kInternalError;
  internal.error = "lowering aten::foo.bar threw: boom";
  ExpectSame(*DecodeLoweringOutcome(EncodeLoweringOutcome(internal)), internal);
}

TEST(LoweringMemo, TheViewReadsWhatTheCopyReads) {
  const std::string whole = EncodeLoweringOutcome(Sample());
  std::optional<LoweringOutcomeView> v = DecodeLoweringOutcomeView(whole);
  ASSERT_TRUE(v.has_value());
  LoweringOutcome o;
  o.kind = v->kind;
  o.error = v->error;
  o.dynamic_shape = v->dynamic_shape;
  o.note = v->note;
  for (const MemoUnitView& u : v->units) {
    // Views into the memo itself, not copies.
    EXPECT_TRUE(u.signature.empty() || (u.signature.data() >= whole.data() &&
                                        u.signature.data() + u.signature.size() <= whole.data() + whole.size()));
    o.units.push_back(MemoUnit{u.hash, std::string(u.opcode), std::string(u.signature), std::string(u.name),
                               std::string(u.attributed_to)});
  }
  ExpectSame(o, Sample());
  for (size_t n = 0; n < whole.size(); ++n)
    EXPECT_FALSE(DecodeLoweringOutcomeView(whole.substr(0, n)).has_value()) << "cut at " << n;
}

TEST(LoweringMemo, AnythingButAWholeMemoIsAMiss) {
  const std::string whole = EncodeLoweringOutcome(Sample());
  for (size_t n = 0; n < whole.size(); ++n)
    EXPECT_FALSE(DecodeLoweringOutcome(whole.substr(0, n)).has_value()) << "cut at " << n;
  EXPECT_FALSE(DecodeLoweringOutcome(whole + "x").has_value());
  std::string other_format = whole;
  other_format[0] = '9';
  EXPECT_FALSE(DecodeLoweringOutcome(other_format).has_value());
  std::string bad_kind = whole;
  bad_kind[1] = 'z';
  EXPECT_FALSE(DecodeLoweringOutcome(bad_kind).has_value());
}

TEST(LoweringMemo, KeysNameTheBuildAndTheSignature) {
  // Debian's toolchain links a build ID into every binary; without one nothing would be memoized.
  ASSERT_EQ(BuildId().size(), 40u);
  EXPECT_EQ(BuildId().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(LoweringMemoKey("aten::add.Tensor(f32[4], f32[4])"), 0u);
  EXPECT_EQ(LoweringMemoKey("aten::add.Tensor(f32[4], f32[4])"), LoweringMemoKey("aten::add.Tensor(f32[4], f32[4])"));
  EXPECT_NE(LoweringMemoKey("aten::add.Tensor(f32[4], f32[4])"), LoweringMemoKey("aten::add.Tensor(f32[4], f32[5])"));
}

}  // namespace
}  // namespace opprobe::analyzer
