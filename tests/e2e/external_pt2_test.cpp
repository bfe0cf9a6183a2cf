// Every file of ../shared/external/pt2 (real torch.export files other people committed; SOURCES.md there):
// the ones holding a program load with every ExportedProgram schema major they use (2, 7.3, 7.4) and are
// analyzed; the ones that legitimately hold no program (AOTInductor packages, an empty ETRecord) exit 2 with
// one line saying so. A file this test does not know fails it, so a new file gets classified here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/loaders/pt2_loader.h"
#include "opprobe_version.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::ReadWholeFile;
using testing::RunOpprobe;

const fs::path kExternal = fs::path(OPPROBE_SOURCE_DIR) / ".." / "shared" / "external" / "pt2";

struct Expect {
  bool program;      // holds an ExportedProgram
  size_t nodes = 0;  // aten nodes the program has (from SOURCES.md)
  std::string torch_version;
  std::string message;  // for the files without a program: what the one-line error says
};

const std::map<std::string, Expect>& Known() {
  static const std::map<std::string, Expect> known = {
      // Schema 2 (torch 2.3), every union member written; a training-mode MLP of 34 nodes.
      {"hades-pid_exported_program.schema2.pt2", {true, 34, "", ""}},
      // Schema 7.3 / 7.4 (torch 2.6 nightlies): one aten.add.Tensor.
      {"tensorrt_trt.schema7_3.ep", {true, 1, "2.6.0.dev20241001+cu124", ""}},
      {"tensorrt_trt.schema7_3b.ep", {true, 1, "", ""}},
      {"tensorrt_trt.schema7_4.ep", {true, 1, "2.6.0.dev20241014+cu124", ""}},
      // AOTInductor packages: compiled code only.
      {"executorch_preprocess_aoti_1102150.pt2", {false, 0, "", "an AOTInductor package"}},
      {"executorch_preprocess_aoti_b4277d6.pt2", {false, 0, "", "an AOTInductor package"}},
      {"aotinductor-rs_ep1_aoti.pt2", {false, 0, "", "an AOTInductor package"}},
      {"aotinductor-rs_ep2_aoti.pt2", {false, 0, "", "an AOTInductor package"}},
      // An ETRecord holding only its marker.
      {"kokoro-export_etrecord_empty.bin", {false, 0, "", "ETRecord without a program"}},
  };
  return known;
}

class ExternalPt2 : public testing::TempDirTest {};

TEST_F(ExternalPt2, EveryFileLoadsOrSaysWhyNot) {
  ASSERT_TRUE(fs::is_directory(kExternal)) << kExternal;
  size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(kExternal)) {
    const std::string name = entry.path().filename().string();
    if (name == "SOURCES.md") continue;
    ++seen;
    SCOPED_TRACE(name);
    auto it = Known().find(name);
    ASSERT_NE(it, Known().end()) << "unclassified file " << name << ": add it to this test";
    const Expect& want = it->second;
    const std::string path = entry.path().string();
    std::string out = Path(name + ".report.json");
    auto r = RunOpprobe({"analyze", "--no-cache", "--no-progress", "-q", "--backend", "interp", "-o", out, path});
    if (want.program) {
      EXPECT_EQ(r.exit_code, 0) << r.err;
      auto g = analyzer::LoadPt2(path);
      ASSERT_TRUE(g.ok()) << g.status().message();
      EXPECT_EQ(g->nodes.size(), want.nodes);
      if (!want.torch_version.empty()) { EXPECT_EQ(g->torch_version, want.torch_version); }
      json report = json::parse(ReadWholeFile(out), nullptr, false);
      ASSERT_TRUE(report.is_object()) << r.err;
      EXPECT_EQ(report["input_kind"], "pt2");
      EXPECT_EQ(report["summary"]["lowering_failures"], 0) << report.dump(1);
    } else {
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_THAT(r.err, HasSubstr(want.message));
      EXPECT_THAT(r.err, HasSubstr(name));
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
      EXPECT_FALSE(fs::exists(out)) << "nothing half-written";
    }
  }
  EXPECT_EQ(seen, Known().size()) << "a known file is missing from " << kExternal;
}

TEST_F(ExternalPt2, Schema2TrainingGraphOps) {
  auto g = analyzer::LoadPt2((kExternal / "hades-pid_exported_program.schema2.pt2").string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::map<std::string, int> count;
  for (const auto& n : g->nodes) ++count[n.op + "." + n.overload];
  EXPECT_EQ(count["aten::t.default"], 10);
  EXPECT_EQ(count["aten::addmm.default"], 10);
  EXPECT_EQ(count["aten::leaky_relu.default"], 7);
  EXPECT_EQ(count["aten::_native_batch_norm_legit_functional.default"], 2);
  EXPECT_EQ(count["aten::add.Tensor"], 2);
  EXPECT_EQ(count["aten::_log_softmax.default"], 1);
}

TEST_F(ExternalPt2, Schema7AddOnCudaInputs) {
  auto g = analyzer::LoadPt2((kExternal / "tensorrt_trt.schema7_4.ep").string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op, "aten::add");
  EXPECT_EQ(g->nodes[0].overload, "Tensor");
  EXPECT_EQ(g->nodes[0].TensorSignature(), "f32[2,3], f32[2,3]");
  EXPECT_EQ(g->nodes[0].loc.line, 24);
}

}  // namespace
}  // namespace opprobe
