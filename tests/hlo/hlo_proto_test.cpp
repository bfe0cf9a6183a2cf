// HloModuleProto / HloProto: bytes written by hand from XLA's field numbers decode into the right IR,
// protoc decodes what opprobe writes, and bad bytes are clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "hlo/stablehlo/stablehlo.h"
#include "hlo_test_files.h"
#include "support/file_io.h"
#include "support/quote.h"

namespace opprobe::hlo {
namespace {

// A minimal protobuf wire writer: varints, length-delimited fields, fixed32.
class Msg {
 public:
  Msg& Varint(int field, uint64_t v) {
    Key(field, 0);
    PutVarint(v);
    return *this;
  }
  Msg& Bytes(int field, const std::string& v) {
    Key(field, 2);
    PutVarint(v.size());
    out_ += v;
    return *this;
  }
  Msg& Sub(int field, const Msg& m) { return Bytes(field, m.out_); }
  Msg& Float(int field, float f) {
    Key(field, 5);
    char b[4];
    std::memcpy(b, &f, 4);
    out_.append(b, 4);
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  void Key(int field, int wire) { PutVarint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire)); }
  void PutVarint(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  std::string out_;
};

// ShapeProto: element_type=2, dimensions=3, layout=5 (LayoutProto minor_to_major=1).
Msg ShapeMsg(int type, std::vector<int64_t> dims) {
  Msg s;
  s.Varint(2, static_cast<uint64_t>(type));
  for (int64_t d : dims) s.Varint(3, static_cast<uint64_t>(d));
  Msg layout;
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) layout.Varint(1, static_cast<uint64_t>(i));
  s.Sub(5, layout);
  return s;
}
constexpr int kF32 = 11;

Msg Instr(const std::string& name, const std::string& opcode, int64_t id, const Msg& shape) {
  Msg m;
  m.Bytes(1, name).Bytes(2, opcode).Sub(3, shape).Varint(35, static_cast<uint64_t>(id));
  return m;
}

// HloModuleProto `hand`: computation `add_comp` (id 10) adds two f32 scalars; `main` (id 11) reduces
// a parameter f32[4] with it from a constant 2.5, with torch_xla metadata.
std::string HandWrittenModule(bool cycle = false, int64_t called_id = 10) {
  Msg p0 = Instr("lhs", "parameter", 1, ShapeMsg(kF32, {}));
  p0.Varint(9, 0);
  Msg p1 = Instr("rhs", "parameter", 2, ShapeMsg(kF32, {}));
  p1.Varint(9, 1);
  Msg add = Instr("add", "add", 3, ShapeMsg(kF32, {}));
  add.Varint(36, 1).Varint(36, 2);
  Msg add_comp;
  add_comp.Bytes(1, "add_comp").Sub(2, p0).Sub(2, p1).Sub(2, add).Varint(5, 10).Varint(6, 3);

  Msg param = Instr("x", "parameter", 4, ShapeMsg(kF32, {4}));
  param.Varint(9, 0);
  Msg literal;
  literal.Sub(1, ShapeMsg(kF32, {})).Float(8, 2.5f);  // LiteralProto shape=1, f32s=8
  Msg constant = Instr("init", "constant", 5, ShapeMsg(kF32, {}));
  constant.Sub(8, literal);
  if (cycle) constant.Varint(36, 6);  // not an operand a constant has: makes init <-> sum a cycle
  Msg metadata;
  metadata.Bytes(1, "aten__sum").Bytes(2, "aten__sum").Bytes(3, "model.py").Varint(4, 42);
  Msg reduce = Instr("sum", "reduce", 6, ShapeMsg(kF32, {}));
  reduce.Varint(36, 4).Varint(36, 5).Varint(14, 0).Varint(38, static_cast<uint64_t>(called_id)).Sub(7, metadata);
  Msg main;
  main.Bytes(1, "main").Sub(2, param).Sub(2, constant).Sub(2, reduce).Varint(5, 11).Varint(6, 6);

  Msg module;
  module.Bytes(1, "hand").Bytes(2, "main").Sub(3, add_comp).Sub(3, main).Varint(6, 11);
  return module.str();
}

TEST(HloProtoTest, HandWrittenBytesDecodeIntoTheRightIr) {
  auto m = ModuleFromProtoBytes(HandWrittenModule(), "hand.pb");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Module& mod = **m;
  EXPECT_EQ(mod.name(), "hand");
  ASSERT_EQ(mod.computations().size(), 2u);
  EXPECT_EQ(mod.entry()->name(), "main");
  const Instruction* sum = mod.entry()->root();
  EXPECT_EQ(sum->opcode, Opcode::kReduce);
  EXPECT_EQ(sum->dimensions, std::vector<int64_t>({0}));
  ASSERT_EQ(sum->called_computations.size(), 1u);
  EXPECT_EQ(sum->called_computations[0]->name(), "add_comp");
  ASSERT_EQ(sum->operand_count(), 2);
  EXPECT_EQ(sum->operand(0)->shape.ToString(), "f32[4]{0}");
  EXPECT_EQ(sum->operand(1)->literal->GetAsDouble(0), 2.5);
  EXPECT_EQ(sum->metadata->op_type, "aten__sum");
  EXPECT_EQ(sum->metadata->source_file, "model.py");
  EXPECT_EQ(sum->metadata->source_line, 42);
  EXPECT_EQ(
      ToString(mod, PrintOptions::Short()),
      "HloModule hand\n\n"
      "add_comp {\n  lhs = f32[] parameter(0)\n  rhs = f32[] parameter(1)\n  ROOT add = f32[] add(lhs, rhs)\n}\n\n"
      "ENTRY main {\n  x = f32[4]{0} parameter(0)\n  init = f32[] constant(2.5)\n"
      "  ROOT sum = f32[] reduce(x, init), dimensions={0}, to_apply=add_comp, "
      "metadata={op_type=\"aten__sum\" op_name=\"aten__sum\" source_file=\"model.py\" source_line=42}\n}\n\n");
  // The same module inside an HloProto (hlo_module = 1).
  Msg wrapper;
  wrapper.Bytes(1, HandWrittenModule());
  auto w = ModuleFromProtoBytes(wrapper.str(), "hand.hlo.pb");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(ToString(**w), ToString(mod));
}

TEST(HloProtoTest, XlaFieldsWithoutOpprobeTextBecomeXlaAttributes) {
  // A custom-call as XLA writes it: api_version in field 77, frontend attributes in 68, sharding in 40.
  Msg p = Instr("p", "parameter", 1, ShapeMsg(kF32, {2}));
  Msg fa_entry;
  fa_entry.Bytes(1, "neff_input_names").Bytes(2, "input0");
  Msg fa;
  fa.Sub(1, fa_entry);
  Msg sharding;
  sharding.Varint(1, 0);
  p.Varint(9, 0).Sub(68, fa).Sub(40, sharding);
  Msg cc = Instr("cc", "custom-call", 2, ShapeMsg(kF32, {2}));
  cc.Varint(36, 1).Bytes(28, "AwsNeuronTransferWithStaticRing").Varint(77, 0);
  Msg comp;
  comp.Bytes(1, "e").Sub(2, p).Sub(2, cc).Varint(5, 1).Varint(6, 2);
  Msg module;
  module.Bytes(1, "x").Sub(3, comp).Varint(6, 1);
  auto m = ModuleFromProtoBytes(module.str(), "x.pb");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(ToString(**m, PrintOptions::Short()),
            "HloModule x\n\nENTRY e {\n  p = f32[2]{0} parameter(0), sharding={replicated}, "
            "frontend_attributes={neff_input_names=\"input0\"}\n"
            "  ROOT cc = f32[2]{0} custom-call(p), custom_call_target=\"AwsNeuronTransferWithStaticRing\", "
            "api_version=API_VERSION_UNSPECIFIED\n}\n\n");
}

TEST(HloProtoTest, LiteralInANonDefaultLayoutIsReadRowMajor) {
  Msg shape;
  shape.Varint(2, kF32).Varint(3, 2).Varint(3, 3);
  Msg layout;
  layout.Varint(1, 0).Varint(1, 1);  // column-major {0,1}
  shape.Sub(5, layout);
  Msg literal;
  literal.Sub(1, shape);
  for (float v : {1.f, 4.f, 2.f, 5.f, 3.f, 6.f}) literal.Float(8, v);  // column-major data of {{1,2,3},{4,5,6}}
  Msg c = Instr("c", "constant", 1, shape);
  c.Sub(8, literal);
  Msg comp;
  comp.Bytes(1, "e").Sub(2, c).Varint(5, 1).Varint(6, 1);
  Msg module;
  module.Bytes(1, "lit").Sub(3, comp).Varint(6, 1);
  auto m = ModuleFromProtoBytes(module.str(), "lit.pb");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(LiteralToString(*(*m)->entry()->root()->literal), "{ { 1, 2, 3 }, { 4, 5, 6 } }");
}

TEST(HloProtoTest, WrittenModuleHasXlaIdsAndProgramShapes) {
  auto m = ParseModule(testing::ReadTestFile(testing::GoldenPath("attributes.long.hlo")), "a.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto bytes = ModuleToProtoBytes(**m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ModuleFromProtoBytes(*bytes, "a.pb");
  ASSERT_TRUE(back.ok()) << back.status().message();
  // Instruction ids 1..N module-wide, computation ids in callee-first order, the entry last.
  std::set<int64_t> ids;
  size_t n = 0;
  for (const auto& c : (*back)->computations())
    for (const auto& i : c->instructions()) {
      ids.insert(i->id);
      ++n;
    }
  EXPECT_EQ(ids.size(), n);
  EXPECT_EQ(*ids.begin(), 1);
  EXPECT_EQ(*ids.rbegin(), static_cast<int64_t>(n));
  EXPECT_EQ((*back)->entry()->name(), "main");
  EXPECT_EQ((*back)->computations().back()->name(), "main");
}

TEST(HloProtoTest, ProtocDecodesWhatOpprobeWrites) {
  if (std::system("command -v protoc >/dev/null 2>&1") != 0) GTEST_SKIP() << "protoc is not installed";
  auto m = ParseModule(
      "HloModule dec\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  c = f32[] constant(1.5)\n"
      "  b = f32[2]{0} broadcast(c), dimensions={}\n  ROOT a = f32[2]{0} add(p, b), "
      "metadata={op_type=\"aten__add\"}\n}\n",
      "dec.hlo");
  ASSERT_TRUE(m.ok());
  auto bytes = ModuleToProtoBytes(**m);
  ASSERT_TRUE(bytes.ok());
  const auto dir = std::filesystem::temp_directory_path() / ("opprobe_hlo_proto_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string pb = (dir / "dec.pb").string(), txt = (dir / "dec.txt").string();
  testing::WriteTestFile(pb, *bytes);
  const std::string src = OPPROBE_SOURCE_DIR;
  const std::string cmd = "protoc --decode=xla.HloModuleProto -I " + src + "/hlo/proto " + src +
                          "/hlo/proto/hlo.proto < " + pb + " > " + txt + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::ReadTestFile(txt);
  const std::string decoded = testing::ReadTestFile(txt);
  std::filesystem::remove_all(dir);
  for (const char* want :
       {"name: \"dec\"", "entry_computation_name: \"e\"", "entry_computation_id: 1", "opcode: \"broadcast\"",
        "opcode: \"add\"", "operand_ids: 1", "operand_ids: 3", "root_id: 4", "f32s: 1.5", "op_type: \"aten__add\"",
        "element_type: F32", "host_program_shape {", "parameter_names: \"p\""})
    EXPECT_NE(decoded.find(want), std::string::npos) << "missing `" << want << "` in\n" << decoded;
}

TEST(HloProtoTest, TruncatedOrGarbageBytesAreErrors) {
  const std::string good = HandWrittenModule();
  ASSERT_TRUE(ModuleFromProtoBytes(good, "g.pb").ok());
  auto half = ModuleFromProtoBytes(good.substr(0, good.size() / 2), "half.pb");
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(half.status().message().rfind("half.pb: ", 0), 0u) << half.status().message();
  for (size_t n = 0; n < good.size(); ++n) (void)ModuleFromProtoBytes(good.substr(0, n), "t.pb");  // never crashes
  EXPECT_FALSE(ModuleFromProtoBytes("", "empty.pb").ok());
  EXPECT_FALSE(ModuleFromProtoBytes("HloModule m\nENTRY e {}\n", "text.pb").ok());
  std::mt19937 rng(3);
  for (int k = 0; k < 200; ++k) {
    std::string junk(64 + rng() % 256, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    auto r = ModuleFromProtoBytes(junk, "junk.pb");
    if (r.ok()) (void)ToString(**r);
    std::string flipped = good;
    flipped[rng() % flipped.size()] = static_cast<char>(rng());
    auto f = ModuleFromProtoBytes(flipped, "flip.pb");
    if (f.ok()) (void)ToString(**f);
  }
}

TEST(HloProtoTest, DanglingIdsAndCyclesAreErrors) {
  auto dangling = ModuleFromProtoBytes(HandWrittenModule(false, 99), "d.pb");
  ASSERT_FALSE(dangling.ok());
  EXPECT_EQ(dangling.status().message(),
            "d.pb: computation 'main', instruction 'sum' (id 6): called computation id 99 does not exist");
  auto cycle = ModuleFromProtoBytes(HandWrittenModule(true), "c.pb");
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.status().message().find("operand ids form a cycle"), std::string::npos) << cycle.status().message();
  EXPECT_NE(cycle.status().message().find("computation 'main' (id 11)"), std::string::npos);

  Msg p = Instr("p", "parameter", 1, ShapeMsg(kF32, {2}));
  Msg n = Instr("n", "negate", 2, ShapeMsg(kF32, {2}));
  n.Varint(36, 7);
  Msg comp;
  comp.Bytes(1, "e").Sub(2, p).Sub(2, n).Varint(5, 1).Varint(6, 2);
  Msg module;
  module.Bytes(1, "x").Sub(3, comp).Varint(6, 1);
  auto op = ModuleFromProtoBytes(module.str(), "op.pb");
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(
      op.status().message(),
      "op.pb: computation 'e' (id 1), instruction 'n' (id 2): operand id 7 is not an instruction of this computation");
}

TEST(HloProtoTest, ElementCountOverflowIsAnError) {
  Msg p = Instr("p", "parameter", 1, ShapeMsg(kF32, {int64_t{1} << 40, int64_t{1} << 40}));
  Msg comp;
  comp.Bytes(1, "e").Sub(2, p).Varint(5, 1).Varint(6, 1);
  Msg module;
  module.Bytes(1, "x").Sub(3, comp).Varint(6, 1);
  auto m = ModuleFromProtoBytes(module.str(), "big.pb");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("instruction 'p' (id 1)"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("more than 2^63 elements"), std::string::npos) << m.status().message();
}

TEST(HloProtoTest, UnknownOpcodeInAProtoIsKept) {
  Msg p = Instr("p", "parameter", 1, ShapeMsg(kF32, {2}));
  Msg x = Instr("x", "quantum-fold", 2, ShapeMsg(kF32, {2}));
  x.Varint(36, 1);
  Msg comp;
  comp.Bytes(1, "e").Sub(2, p).Sub(2, x).Varint(5, 1).Varint(6, 2);
  Msg module;
  module.Bytes(1, "x").Sub(3, comp).Varint(6, 1);
  auto m = ModuleFromProtoBytes(module.str(), "u.pb");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->entry()->root()->unknown_opcode, "quantum-fold");
  auto again = ModuleToProtoBytes(**m);
  ASSERT_TRUE(again.ok());
  auto back = ModuleFromProtoBytes(*again, "u2.pb");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->entry()->root()->unknown_opcode, "quantum-fold");
}

}  // namespace
}  // namespace opprobe::hlo

namespace opprobe::hlo {
namespace {

std::string ReadFixture(const std::string& name) {
  auto text = io::ReadFile(std::string(OPPROBE_SOURCE_DIR) + "/tests/fixtures/fuzz/" + name);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : std::string();
}

// The fuzz targets' finding (tests/fixtures/fuzz/README.md): a quoted string that is not UTF-8 reached a proto3
// string field, which libprotobuf refuses to write properly (it logged an error and wrote bytes a reader rejects).
// Writing such a module is now an input error that names the field, in one printable line.
TEST(HloProtoWriter, AStringThatIsNotUtf8IsAnInputErrorNamingTheField) {
  struct Case {
    std::string file, field;
    bool stablehlo;
  };
  for (const Case& c : {Case{"invalid_utf8_custom_call_target.hlo", "custom_call_target", false},
                        Case{"invalid_utf8_frontend_attribute.hlo", "frontend_attributes", false},
                        Case{"invalid_utf8_location.stablehlo.mlir", "metadata.source_file", true}}) {
    std::string text = ReadFixture(c.file);
    auto m = c.stablehlo ? ParseStableHlo(text, c.file) : ParseModule(text, c.file);
    ASSERT_TRUE(m.ok()) << c.file << ": " << m.status().message();
    for (auto bytes : {ModuleToProtoBytes(**m), ModuleToHloProtoBytes(**m)}) {
      ASSERT_FALSE(bytes.ok()) << c.file;
      EXPECT_EQ(bytes.status().code(), ErrorCode::kInvalidInput) << c.file;
      const std::string& msg = bytes.status().message();
      EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
      EXPECT_NE(msg.find("is not valid UTF-8"), std::string::npos) << msg;
      EXPECT_TRUE(support::IsValidUtf8(msg)) << c.file;
      for (char ch : msg) EXPECT_GE(static_cast<unsigned char>(ch), 0x20) << c.file << ": a control byte in " << msg;
    }
  }
  EXPECT_TRUE(support::IsValidUtf8("plain ascii, \xC3\xA9t\xC3\xA9, \xF0\x9F\x98\x80"));
  EXPECT_FALSE(support::IsValidUtf8("\xC3"));          // cut short
  EXPECT_FALSE(support::IsValidUtf8("\xC0\xAF"));      // overlong
  EXPECT_FALSE(support::IsValidUtf8("\xED\xA0\x80"));  // a surrogate
}

}  // namespace
}  // namespace opprobe::hlo

namespace opprobe::hlo {
namespace {

// hlo_text_fuzzer (10-minute run, 2026-11-25): a module name holding NUL bytes parsed, and the proto writer's error
// about another part of that module echoed the name raw. The name is now refused where it is read, and the writer
// quotes a module's name in every message.
TEST(HloProtoWriter, AModuleNameIsNeverEchoedRaw) {
  const std::string text =
      std::string("HloModule bad") + '\0' + "name\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n";
  auto parsed = ParseModule(text, "n.hlo");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "n.hlo:1:14: a module name cannot hold the control byte '\\x00'");
  Module m(std::string("bad") + '\0' + "name");  // built, not parsed: no entry computation
  auto bytes = ModuleToProtoBytes(m);
  ASSERT_FALSE(bytes.ok());
  for (char ch : bytes.status().message())
    EXPECT_GE(static_cast<unsigned char>(ch), 0x20) << "a control byte in: " << bytes.status().message();
  EXPECT_NE(bytes.status().message().find("'bad\\x00name'"), std::string::npos) << bytes.status().message();
}

}  // namespace
}  // namespace opprobe::hlo
