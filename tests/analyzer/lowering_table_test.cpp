// The lowering table itself (issue #13.4/#13.6): what can go wrong with a table of ~800 names is a name listed
// twice, a name Find can never reach, an in-place form listed by hand next to (and drifting from) its functional
// entry, and a family that is not where the lowering lives. Each test here fails on one of those.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "analyzer/lowering/families.h"
#include "hlo/printer.h"
#include "opprobe_version.h"
#include "tests/analyzer/lowering_test_util.h"

namespace opprobe::analyzer {
namespace {

using hlo::PrimitiveType;
using testing::MakeNode;
using testing::T;
constexpr auto F32 = PrimitiveType::F32;
constexpr auto F64 = PrimitiveType::F64;

LoweringFn Identity() {
  return [](const Node& n, hlo::Builder& b) -> Expected<LoweredOp> {
    lowering::LoweringContext ctx(n, b);
    OPPROBE_ASSIGN_OR_RETURN(hlo::Instruction * x, ctx.RequiredTensor("self", 0));
    return ctx.Finish({x});
  };
}

// `aten::max.dim` -> ("aten::max", "dim"); `aten::relu` -> ("aten::relu", "").
std::pair<std::string, std::string> SplitName(const std::string& name) {
  size_t ns = name.find("::");
  size_t dot = name.find('.', ns == std::string::npos ? 0 : ns);
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

std::string ReadSource(const std::string& family) {
  std::ifstream in(std::filesystem::path(OPPROBE_SOURCE_DIR) / "analyzer/lowering" / (family + ".cpp"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LoweringTableTest, RegisterRejectsANameListedTwiceAndKeepsTheFirst) {
  LoweringTable t;
  ASSERT_TRUE(t.Register("test::neg", "first", Identity()).ok());
  Status st = t.Register("test::neg", "second", Identity());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_EQ(st.message(), "test::neg is listed twice: by the first family and by the second family");
  ASSERT_NE(t.Find("test::neg", ""), nullptr);
  EXPECT_EQ(t.Find("test::neg", "")->family, "first");
  EXPECT_EQ(t.entries().size(), 1u);
}

TEST(LoweringTableTest, TheBuiltinTableRegistersEveryListedNameOnce) {
  const LoweringTable& t = LoweringTable::Builtin();
  for (const Status& st : t.rejected()) ADD_FAILURE() << st.message();
  // Every name of every list, and each in-place form the lists ask for, is an entry: nothing overwrote another.
  size_t listed = 0;
  std::set<std::string> families;
  for (const lowering::LoweringFamily* f : lowering::BuiltinFamilies()) {
    EXPECT_TRUE(families.insert(f->name).second) << "family " << f->name << " registered twice";
    for (const lowering::Lowering& l : f->lowerings) listed += l.in_place.listed ? 2 : 1;
  }
  EXPECT_EQ(t.entries().size(), listed);
}

TEST(LoweringTableTest, EveryEntryIsFoundByItsOwnName) {
  // An entry Find cannot reach is dead: a `.default` overload (Find reads it as the overload-less name), a name
  // without a namespace, or one that a differently spelled entry shadows.
  for (const LoweringTable::Entry* e : LoweringTable::Builtin().entries()) {
    auto [op, overload] = SplitName(e->name);
    EXPECT_NE(op.find("::"), std::string::npos) << e->name << " has no namespace";
    EXPECT_NE(overload, "default") << e->name << ": the default overload is the name without one";
    const LoweringTable::Entry* found = LoweringTable::Builtin().Find(op, overload);
    EXPECT_EQ(found, e) << e->name << " is not what Find(" << op << ", " << overload << ") returns";
  }
}

TEST(LoweringTableTest, OverloadsFallBackToTheOpAndOutOverloadsToTheirFunctionalOverload) {
  const LoweringTable& t = LoweringTable::Builtin();
  ASSERT_NE(t.Find("aten::max", "dim"), nullptr);
  EXPECT_EQ(t.Find("aten::max", "dim")->name, "aten::max.dim");
  EXPECT_EQ(t.Find("aten::max", "default")->name, "aten::max");
  EXPECT_EQ(t.Find("aten::add", "Tensor")->name, "aten::add");
  EXPECT_EQ(t.Find("aten::add", "out")->name, "aten::add");
  ASSERT_NE(t.Find("aten::where", "self_out"), nullptr);
  EXPECT_EQ(t.Find("aten::where", "self_out")->name, "aten::where.self");
  ASSERT_NE(t.Find("aten::index", "Tensor_out"), nullptr);
  EXPECT_EQ(t.Find("aten::index", "Tensor_out")->name, "aten::index.Tensor");
  EXPECT_EQ(t.Find("aten::where", "ScalarOther"), t.Find("aten::where", "ScalarOther_out"));
  EXPECT_EQ(t.Find("aten::where", "nonsense"), nullptr);
}

TEST(LoweringTableTest, InPlaceFormsAreDerivedFromTheirFunctionalEntryNeverListedBesideIt) {
  const LoweringTable& t = LoweringTable::Builtin();
  size_t derived = 0;
  for (const LoweringTable::Entry* e : t.entries()) {
    auto [op, overload] = SplitName(e->name);
    if (!e->in_place_of.empty()) {
      ++derived;
      auto [fop, foverload] = SplitName(e->in_place_of);
      const LoweringTable::Entry* functional = t.Find(fop, foverload);
      ASSERT_NE(functional, nullptr) << e->name;
      EXPECT_EQ(functional->name, e->in_place_of);
      EXPECT_EQ(lowering::InPlaceName(functional->name), e->name);
      EXPECT_EQ(functional->family, e->family) << e->name;
      continue;
    }
    // An in-place name listed by hand must have no functional entry (random_, resize_, _foreach_zero_, ...).
    bool in_place_name = op.size() > 1 && op.back() == '_' && op.substr(op.size() - 2) != "__";
    if (!in_place_name) continue;
    std::string functional = op.substr(0, op.size() - 1) + (overload.empty() ? "" : "." + overload);
    const LoweringTable::Entry* twin = t.Find(op.substr(0, op.size() - 1), overload);
    EXPECT_FALSE(twin && twin->name == functional)
        << e->name << " is listed by hand next to its functional entry " << functional
        << ": list the functional one with kInPlaceForm instead";
  }
  EXPECT_GT(derived, 100u);
  EXPECT_EQ(lowering::InPlaceName("aten::add"), "aten::add_");
  EXPECT_EQ(lowering::InPlaceName("aten::where.self"), "aten::where_.self");
}

TEST(LoweringTableTest, AnInPlaceFormLowersToTheFunctionalResultInSelfsType) {
  // add_ on f32 self with an f64 other: the in-place op keeps self's dtype (its recorded output).
  Node functional = MakeNode("aten::add", "Tensor", {{"self", T(F32, {3})}, {"other", T(F64, {3})}}, {T(F64, {3})});
  Node in_place = MakeNode("aten::add_", "Tensor", {{"self", T(F32, {3})}, {"other", T(F64, {3})}}, {T(F32, {3})});
  auto f = Lower(functional, LoweringTable::Builtin());
  auto i = Lower(in_place, LoweringTable::Builtin());
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_TRUE(i.ok()) << i.status().message();
  EXPECT_EQ(f->module->entry()->root()->shape.element_type(), F64);
  EXPECT_EQ(i->module->entry()->root()->shape.element_type(), F32);
  EXPECT_EQ(LoweringTable::Builtin().Find("aten::add_", "Tensor")->in_place_of, "aten::add");
}

TEST(LoweringTableTest, EachFamilyIsTheFileItsLoweringsAreListedIn) {
  // The family `opprobe ops` prints is the stem of the file whose list names the lowering (and whose anonymous
  // namespace holds its function): elementwise for elementwise.cpp. A list in one file cannot claim another's.
  std::map<std::string, std::string> sources;
  for (const LoweringTable::Entry* e : LoweringTable::Builtin().entries()) {
    auto [it, fresh] = sources.try_emplace(e->family);
    if (fresh) it->second = ReadSource(e->family);
    ASSERT_FALSE(it->second.empty()) << e->name << ": no analyzer/lowering/" << e->family << ".cpp";
    const std::string& listed = e->in_place_of.empty() ? e->name : e->in_place_of;
    EXPECT_NE(it->second.find("{\"" + listed + "\","), std::string::npos)
        << e->name << " says family " << e->family << " but " << e->family << ".cpp does not list " << listed;
  }
  EXPECT_EQ(lowering::FamilyOf("/src/analyzer/lowering/elementwise.cpp"), "elementwise");
  EXPECT_EQ(lowering::FamilyOf("..\\analyzer\\lowering\\conv.cpp"), "conv");
  EXPECT_EQ(LoweringTable::Builtin().Find("aten::cholesky", "")->family, "factorization");
  EXPECT_EQ(LoweringTable::Builtin().Find("aten::relu", "")->family, "activation");
}

}  // namespace
}  // namespace opprobe::analyzer
