// The attribute schema (hlo/attributes.h, issue #16.1): the declaration is consistent with XLA's proto, the
// parser enforces required attributes, every modelled attribute survives text and proto round trips
// (tests/golden/hlo/xla_attributes.hlo), attributes reach probe units, fingerprints and repro files, and
// attributes the schema does not know round-trip verbatim and count in the fingerprint.
#include <gtest/gtest.h>

#include <set>

#include "hlo.pb.h"
#include "hlo/attributes.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/proto_io.h"
#include "hlo_test_files.h"
#include "testing/parse_module.h"

namespace opprobe::hlo {
namespace {

using ::opprobe::testing::ParseUnit;

std::string ErrorOf(const std::string& text) {
  auto m = ParseModule(text, "t.hlo");
  return m.ok() ? "ok" : m.status().message();
}

std::string Entry(const std::string& body) { return "HloModule m\n\nENTRY e {\n" + body + "}\n"; }

TEST(HloAttributeSchemaTest, EveryProtoPathNamesAnXlaField) {
  int with_path = 0;
  for (int i = 0; i < AttrFieldCount(); ++i) {
    const AttrFieldInfo& info = FieldInfo(static_cast<AttrField>(i));
    EXPECT_EQ(static_cast<int>(info.field), i) << info.name;
    std::string_view path = info.proto_path;
    if (path.empty()) continue;
    ++with_path;
    const google::protobuf::Descriptor* d = xla::HloInstructionProto::descriptor();
    while (!path.empty()) {
      size_t dot = path.find('.');
      std::string part(path.substr(0, dot));
      ASSERT_NE(d, nullptr) << info.name << ": " << info.proto_path;
      const auto* fd = d->FindFieldByName(part);
      ASSERT_NE(fd, nullptr) << info.name << ": no field " << part << " in " << d->full_name();
      d = fd->message_type();
      path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    }
  }
  EXPECT_GT(with_path, 70);
}

TEST(HloAttributeSchemaTest, KeysAreUniquePerOpcodeAndSlotsAreSet) {
  std::set<std::string_view> generic;
  for (const AttrSpec& s : GenericAttributes()) EXPECT_TRUE(generic.insert(s.key).second) << s.key;
  for (int i = 0; i < OpcodeCount(); ++i) {
    std::set<std::string_view> keys;
    for (const AttrSpec& s : OpcodeAttributes(OpcodeAt(i))) {
      EXPECT_TRUE(keys.insert(s.key).second) << OpcodeName(OpcodeAt(i)) << " " << s.key;
      EXPECT_FALSE(generic.count(s.key)) << OpcodeName(OpcodeAt(i)) << " " << s.key << " is generic";
      if (s.kind() == AttrKind::kComputation) { EXPECT_GE(s.slot, 0) << OpcodeName(OpcodeAt(i)) << " " << s.key; }
    }
  }
  // The declaration is what the parser knows: all-reduce's replica_groups is modelled, a made-up key is not.
  Instruction ar;
  ar.opcode = Opcode::kAllReduce;
  ASSERT_NE(FindAttribute(ar, "replica_groups"), nullptr);
  EXPECT_EQ(FindAttribute(ar, "replica_groups")->kind(), AttrKind::kReplicaGroups);
  EXPECT_EQ(FindAttribute(ar, "frobnicate"), nullptr);
  EXPECT_NE(FindAttribute(ar, "sharding"), nullptr);
}

TEST(HloAttributeSchemaTest, RequiredAttributesAreEnforcedWithALocation) {
  EXPECT_EQ(ErrorOf(Entry("  p = (f32[2], s32[]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p)\n")),
            "t.hlo:5:8: get-tuple-element g needs index=");
  EXPECT_EQ(ErrorOf(Entry("  p = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] transpose(p)\n")),
            "t.hlo:5:8: transpose t needs dimensions=");
  EXPECT_EQ(ErrorOf(Entry("  ROOT c = f32[2] custom-call()\n")), "t.hlo:4:8: custom-call c needs custom_call_target=");
  // broadcast's dimensions may be left out for a scalar operand only (XLA infers {}).
  EXPECT_EQ(ErrorOf(Entry("  p = f32[2] parameter(0)\n  ROOT b = f32[2,3] broadcast(p)\n")),
            "t.hlo:5:8: broadcast b needs dimensions= (its operand is not a scalar)");
  auto m = ParseUnit(Entry("  p = f32[] parameter(0)\n  ROOT b = f32[2,3] broadcast(p)\n"));
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->entry()->root()->dimensions.empty());
}

TEST(HloAttributeSchemaTest, BadValuesAreLocatedErrors) {
  EXPECT_EQ(ErrorOf(Entry("  p = f32[2] parameter(0), sharding={sideways}\n")),
            "t.hlo:4:38: unknown sharding attribute 'sideways'");
  EXPECT_EQ(ErrorOf(Entry("  p = f32[2] parameter(0)\n  ROOT r = f32[2] rng-bit-generator(p), algorithm=rng_dice\n")),
            "t.hlo:5:51: unknown algorithm 'rng_dice'");
  EXPECT_EQ(
      ErrorOf(Entry("  p = f32[2] parameter(0)\n  ROOT e = f32[2] exponential(p), result_accuracy={mode=high}\n")),
      "t.hlo:5:57: unknown result_accuracy mode 'high'");
  EXPECT_EQ(ErrorOf(Entry("  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p), control-predecessors={q}\n")),
            "t.hlo:5:51: instruction n names unknown control predecessor q");
}

TEST(HloAttributeSchemaTest, ValuesAreTyped) {
  auto m = ParseUnit(testing::ReadTestFile(testing::GoldenPath("xla_attributes.hlo")));
  ASSERT_TRUE(m);
  const Computation* e = m->entry();
  const Instruction* ar = e->FindInstruction("ar.groups");
  ASSERT_TRUE(ar->rare().channel_id.has_value());
  EXPECT_EQ(*ar->rare().channel_id, 5);
  EXPECT_EQ(ar->rare().replica_groups.groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(ar->use_global_device_ids);
  const Instruction* iota = e->FindInstruction("ar.iota");
  EXPECT_TRUE(iota->rare().replica_groups.iota);
  EXPECT_EQ(iota->rare().replica_groups.num_groups, 2);
  EXPECT_EQ(iota->rare().replica_groups.iota_transpose_perm, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(iota->rare().control_predecessors, std::vector<std::string>{"ar.groups"});
  const Instruction* idx = e->FindInstruction("idx");
  ASSERT_TRUE(idx->sharding);
  EXPECT_EQ(idx->sharding->type, Sharding::Type::kTiled);
  EXPECT_EQ(idx->sharding->devices, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_TRUE(idx->sharding->last_tile_dim_replicate);
  ASSERT_EQ(idx->sharding->metadata.size(), 1u);
  EXPECT_EQ(idx->sharding->metadata[0].op_name, "s");
  const Instruction* cc = e->FindInstruction("cc");
  EXPECT_EQ(cc->custom_call_target, "foo\"bar");
  EXPECT_EQ(cc->rare().custom_call_api_version, "API_VERSION_TYPED_FFI");
  EXPECT_EQ(cc->rare().custom_call_schedule, "SCHEDULE_LATEST");
  ASSERT_EQ(cc->rare().output_to_operand_aliasing.size(), 1u);
  EXPECT_EQ(cc->rare().backend_config, "{\"x\":[1,2]}");
  EXPECT_EQ(e->FindInstruction("start")->rare().async_execution_thread, "worker");
  const Instruction* exp = e->FindInstruction("exp");
  ASSERT_TRUE(exp->result_accuracy);
  EXPECT_EQ(exp->result_accuracy->ulps, 2);
  EXPECT_EQ(e->FindInstruction("dot")->rare().dot_algorithm, "dot_bf16_bf16_f32_x3");
  const Instruction* stats = e->FindInstruction("stats");
  ASSERT_EQ(stats->rare().unknown_attributes.size(), 1u);
  EXPECT_EQ(stats->rare().unknown_attributes[0].first, "vendor_hint");
  EXPECT_EQ(stats->metadata->scheduling_name, "n.1");
  EXPECT_EQ(e->root()->sharding->type, Sharding::Type::kNamed);
}

TEST(HloAttributeSchemaTest, EveryModelledAttributeRoundTripsThroughTextAndProto) {
  const std::string text = testing::ReadTestFile(testing::GoldenPath("xla_attributes.hlo"));
  auto m = ParseUnit(text);
  ASSERT_TRUE(m);
  EXPECT_EQ(ToString(*m, PrintOptions::Long()), text);
  auto bytes = ModuleToHloProtoBytes(*m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ModuleFromProtoBytes(*bytes, "a.pb");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToString(**back, PrintOptions::Long()), text);
  // The short style parses back to the same module.
  auto again = ParseUnit(ToString(*m, PrintOptions::Short()));
  ASSERT_TRUE(again);
  EXPECT_EQ(ToString(*again, PrintOptions::Long()), text);
}

TEST(HloAttributeSchemaTest, ModelledAttributesAreWrittenToXlasFields) {
  auto m = ParseUnit(testing::ReadTestFile(testing::GoldenPath("xla_attributes.hlo")));
  ASSERT_TRUE(m);
  auto bytes = ModuleToProtoBytes(*m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  xla::HloModuleProto p;
  ASSERT_TRUE(p.ParseFromString(*bytes));
  std::map<std::string, const xla::HloInstructionProto*> by_name;
  for (const auto& c : p.computations())
    for (const auto& i : c.instructions()) by_name[i.name()] = &i;
  const auto& ar = *by_name.at("ar.groups");
  EXPECT_EQ(ar.channel_id(), 5);
  ASSERT_EQ(ar.replica_groups_size(), 2);
  EXPECT_EQ(ar.replica_groups(1).replica_ids(0), 2);
  EXPECT_TRUE(ar.use_global_device_ids());
  const auto& iota = *by_name.at("ar.iota");
  EXPECT_EQ(iota.collective_device_list().iota_replica_group_list().num_replica_groups(), 2);
  // The iota groups spelled out for XLAs that read only replica_groups: [2,2]<=[2,2]T(1,0) is {{0,2},{1,3}}.
  ASSERT_EQ(iota.replica_groups_size(), 2);
  EXPECT_EQ(iota.replica_groups(0).replica_ids(1), 2);
  EXPECT_EQ(iota.replica_groups(1).replica_ids(0), 1);
  ASSERT_EQ(iota.control_predecessor_ids_size(), 1);
  EXPECT_EQ(iota.control_predecessor_ids(0), ar.id());
  EXPECT_EQ(by_name.at("idx")->sharding().type(), xla::OpSharding::OTHER);
  EXPECT_EQ(by_name.at("p1")->sharding().tuple_shardings(1).tile_assignment_devices(0), 1);
  EXPECT_EQ(by_name.at("p0")->frontend_attributes().map().at("_xla_buffer"), "a");
  const auto& cc = *by_name.at("cc");
  EXPECT_EQ(cc.custom_call_api_version(), xla::API_VERSION_TYPED_FFI);
  EXPECT_EQ(cc.custom_call_schedule(), xla::SCHEDULE_LATEST);
  EXPECT_TRUE(cc.constrain_layout());
  EXPECT_EQ(cc.operand_shapes_with_layout_size(), 1);
  EXPECT_EQ(cc.output_operand_aliasing_size(), 1);
  EXPECT_EQ(by_name.at("dot")->precision_config().algorithm(), xla::PrecisionConfig::ALG_DOT_BF16_BF16_F32_X3);
  EXPECT_EQ(by_name.at("exp")->result_accuracy().tolerance().ulps(), 2);
  EXPECT_EQ(by_name.at("start")->async_execution_thread(), "worker");
  EXPECT_EQ(by_name.at("cp")->source_target_pairs_size(), 2);
  // What XLA has no field for stays as opprobe text: the unknown attribute, the text-only ones, the mesh form.
  std::set<std::string> text_keys;
  for (const auto& [name, i] : by_name)
    for (const auto& t : i->opprobe_text_attributes()) text_keys.insert(name + ":" + t.key());
  EXPECT_TRUE(text_keys.count("stats:vendor_hint"));
  EXPECT_TRUE(text_keys.count("stats:statistics"));
  EXPECT_TRUE(text_keys.count("reshape:inferred_dimension"));
  EXPECT_TRUE(text_keys.count("root:sharding"));
  EXPECT_FALSE(text_keys.count("ar.groups:replica_groups"));
  EXPECT_FALSE(text_keys.count("idx:sharding"));
  // A proto without opprobe's text (as XLA writes it) reads its XLA fields back.
  for (auto& c : *p.mutable_computations())
    for (auto& i : *c.mutable_instructions()) i.clear_opprobe_text_attributes();
  auto xla_only = ModuleFromProtoBytes(p.SerializeAsString(), "xla.pb");
  ASSERT_TRUE(xla_only.ok()) << xla_only.status().message();
  const std::string printed = ToString(**xla_only, PrintOptions::Short());
  for (const char* want :
       {"channel_id=5, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add",
        "replica_groups=[2,2]<=[2,2]T(1,0), constrain_layout=true, to_apply=add, control-predecessors={ar.groups}",
        "sharding={devices=[2,2]0,2,1,3 last_tile_dim_replicate shard_as 3 metadata={op_name=\"s\"}}",
        "sharding={{replicated}, {maximal device=1}}", "api_version=API_VERSION_TYPED_FFI",
        "frontend_attributes={a=\"1\",b=\"2\"}", "algorithm=dot_bf16_bf16_f32_x3", "result_accuracy={mode=highest}",
        "async_execution_thread=\"worker\""})
    EXPECT_NE(printed.find(want), std::string::npos) << "missing `" << want << "` in\n" << printed;
}

const char* kTwoAllReduces =
    "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
    "ENTRY e {\n  p = f32[8] parameter(0)\n"
    "  x = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add\n"
    "  y = f32[8] all-reduce(p), replica_groups={{0,2},{1,3}}, to_apply=add\n"
    "  z = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add, metadata={op_name=\"other\"}\n"
    "  u = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add, vendor_hint=1\n"
    "  v = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add, vendor_hint=2\n"
    "  ROOT t = (f32[8], f32[8], f32[8], f32[8], f32[8]) tuple(x, y, z, u, v)\n}\n";

TEST(HloAttributeSchemaTest, EveryAttributeIsPartOfTheProbeUnitAndItsFingerprint) {
  auto m = ParseUnit(kTwoAllReduces);
  ASSERT_TRUE(m);
  auto fp = [&](const char* name) { return Fingerprint(*MakeProbeModule(*m->entry()->FindInstruction(name))); };
  // Different replica groups: two probe units; metadata alone does not make another unit.
  EXPECT_NE(fp("x"), fp("y"));
  EXPECT_EQ(fp("x"), fp("z"));
  // An attribute the schema does not know counts as well.
  EXPECT_NE(fp("x"), fp("u"));
  EXPECT_NE(fp("u"), fp("v"));
  // The unit carries the attributes, in its text and in the proto a backend or a repro file gets.
  auto unit = MakeProbeModule(*m->entry()->FindInstruction("y"));
  EXPECT_NE(ToString(*unit, PrintOptions::Long()).find("replica_groups={{0,2},{1,3}}"), std::string::npos);
  auto bytes = ModuleToHloProtoBytes(*unit);
  ASSERT_TRUE(bytes.ok());
  xla::HloProto p;
  ASSERT_TRUE(p.ParseFromString(*bytes));
  const auto& root = p.hlo_module().computations(p.hlo_module().computations_size() - 1).instructions(1);
  EXPECT_EQ(root.opcode(), "all-reduce");
  ASSERT_EQ(root.replica_groups_size(), 2);
  EXPECT_EQ(root.replica_groups(0).replica_ids(1), 2);
  auto unknown = MakeProbeModule(*m->entry()->FindInstruction("v"));
  EXPECT_NE(ToString(*unknown, PrintOptions::Canonical()).find("vendor_hint=2"), std::string::npos);
  // Control predecessors name instructions outside the unit: the unit has none.
  auto c = ParseUnit(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  a = f32[2] negate(p)\n"
      "  ROOT b = f32[2] negate(p), control-predecessors={a}\n}\n");
  ASSERT_TRUE(c);
  EXPECT_TRUE(MakeProbeModule(*c->entry()->root())->entry()->root()->rare().control_predecessors.empty());
}

TEST(HloAttributeSchemaTest, ConstantLiteralsHaveALayoutInTheProto) {
  auto m =
      ParseUnit(Entry("  a = f32[2,2] constant({ { 1, 2 }, { 3, 4 } })\n"
                      "  ROOT b = f32[2,2]{0,1} constant({ { 1, 2 }, { 3, 4 } })\n"));
  ASSERT_TRUE(m);
  auto bytes = ModuleToProtoBytes(*m);
  ASSERT_TRUE(bytes.ok());
  xla::HloModuleProto p;
  ASSERT_TRUE(p.ParseFromString(*bytes));
  const auto& a = p.computations(0).instructions(0);
  const auto& b = p.computations(0).instructions(1);
  // jaxlib's converter refuses a literal shape without a layout.
  ASSERT_TRUE(a.literal().shape().has_layout());
  EXPECT_EQ(a.literal().shape().layout().minor_to_major_size(), 2);
  EXPECT_EQ(a.literal().shape().layout().minor_to_major(0), 1);
  EXPECT_EQ(a.literal().f32s(1), 2.f);
  // Values follow the literal's layout: column-major {0,1} holds 1, 3, 2, 4.
  EXPECT_EQ(b.literal().shape().layout().minor_to_major(0), 0);
  EXPECT_EQ(b.literal().f32s(1), 3.f);
  // The instruction's shape carries the literal's layout: XLA's CreateFromProto requires the two to be equal,
  // layouts included (a scalar s32[] constant in a while body was refused: `s32[] vs s32[]`).
  ASSERT_TRUE(a.shape().has_layout());
  EXPECT_EQ(a.shape().layout().SerializeAsString(), a.literal().shape().layout().SerializeAsString());
  EXPECT_EQ(b.shape().layout().SerializeAsString(), b.literal().shape().layout().SerializeAsString());
  auto s = ParseUnit(Entry("  ROOT c = s32[] constant(1)\n"));
  ASSERT_TRUE(s);
  auto scalar = ModuleToProtoBytes(*s);
  ASSERT_TRUE(scalar.ok());
  xla::HloModuleProto sp;
  ASSERT_TRUE(sp.ParseFromString(*scalar));
  EXPECT_TRUE(sp.computations(0).instructions(0).shape().has_layout());
  EXPECT_TRUE(sp.computations(0).instructions(0).literal().shape().has_layout());
  // Read back, a constant written without a layout has the default one, as XLA's own parser gives it.
  auto back = ModuleFromProtoBytes(*bytes, "c.pb");
  ASSERT_TRUE(back.ok()) << back.status().message();
  std::string expected = ToString(*m);
  expected.replace(expected.find("%a = f32[2,2] "), std::string("%a = f32[2,2] ").size(), "%a = f32[2,2]{1,0} ");
  EXPECT_EQ(ToString(**back), expected);
}

}  // namespace
}  // namespace opprobe::hlo
