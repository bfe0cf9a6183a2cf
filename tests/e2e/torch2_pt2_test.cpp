// Real torch.export programs made by PyTorch 2.x (tests/torch2/make_pt2.py with the torch2 virtual
// environment, OPPROBE_TORCH2_PYTHON, which scripts/test creates): what opprobe's reader loads is checked
// node by node against each program's own node list, and `opprobe analyze` runs on each file.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "analyzer/loaders/pt2_loader.h"
#include "opprobe_version.h"
#include "testing/run_binary.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::ReadWholeFile;
using testing::RunOpprobe;

class Torch2Pt2 : public ::testing::Test {
 protected:
  // Generates the programs once for the suite.
  static void SetUpTestSuite() {
    const char* py = std::getenv("OPPROBE_TORCH2_PYTHON");
    if (!py || !*py) {
      setup_error_ = "OPPROBE_TORCH2_PYTHON is not set (scripts/test creates the torch2 environment and sets it)";
      return;
    }
    // ctest runs each test in its own process: the programs are made once per (python, make_pt2.py version)
    // into a shared folder, under a lock, and reused by the other tests.
    const std::string script = std::string(OPPROBE_SOURCE_DIR) + "/tests/torch2/make_pt2.py";
    std::error_code ec;
    auto stamp = fs::last_write_time(script, ec).time_since_epoch().count();
    dir_ = fs::temp_directory_path() /
           ("opprobe_torch2_pt2_" +
            std::to_string(std::hash<std::string>{}(std::string(py) + "|" + script + "|" + std::to_string(stamp))));
    fs::create_directories(dir_, ec);
    int lock = open((dir_.string() + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (lock >= 0) flock(lock, LOCK_EX);
    if (!fs::exists(dir_ / "manifest.json")) {
      std::string cmd = std::string("cd '") + OPPROBE_SOURCE_DIR + "' && '" + py + "' tests/torch2/make_pt2.py '" +
                        dir_.string() + "' >'" + (dir_ / "make.log").string() + "' 2>&1";
      if (std::system(cmd.c_str()) != 0) {
        setup_error_ = "tests/torch2/make_pt2.py failed: " + ReadWholeFile((dir_ / "make.log").string());
        fs::remove(dir_ / "manifest.json", ec);
      }
    }
    if (lock >= 0) close(lock);
    if (setup_error_.empty()) manifest_ = json::parse(ReadWholeFile((dir_ / "manifest.json").string()));
  }
  void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }

  static const json& Program(const std::string& name) {
    for (const auto& p : manifest_["programs"])
      if (p["name"] == name) return p;
    static const json none;
    ADD_FAILURE() << "no program " << name << " in the manifest";
    return none;
  }
  static std::string File(const std::string& name) {
    return (dir_ / Program(name)["file"].get<std::string>()).string();
  }

  // The program's own aten/custom-op nodes ("ns::name.overload", program), in graph order; Python-number
  // arithmetic (`_operator.mul` on symbolic sizes) is not an op node.
  static std::vector<std::pair<std::string, std::string>> Expected(const std::string& name) {
    json nodes = json::parse(ReadWholeFile((dir_ / Program(name)["nodes"].get<std::string>()).string()));
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& n : nodes) {
      std::string t = n["target"];
      if (t.find("::") == std::string::npos) continue;
      out.emplace_back(t, n["program"]);
    }
    return out;
  }

  // Loads with the reader and compares node by node; returns the graph.
  static analyzer::Graph LoadAndCompare(const std::string& name) {
    auto g = analyzer::LoadPt2(File(name));
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (!g.ok()) return {};
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& n : g->nodes) got.emplace_back(n.op + "." + n.overload, n.program);
    auto want = Expected(name);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(got, want) << name;
    EXPECT_EQ(g->torch_version, manifest_["torch_version"].get<std::string>());
    return *g;
  }

  // `opprobe analyze FILE` with a rules backend; returns the report.
  static json Analyze(const std::string& name, const std::string& backend = "rules:cpu") {
    std::string out = (dir_ / (name + ".report.json")).string();
    auto r = RunOpprobe({"analyze", "--no-cache", "--no-progress", "-q", "--backend", backend, "-o", out, File(name)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(ReadWholeFile(out), nullptr, false);
  }

  static json AllOps(const json& report) {
    json ops = json::object();
    for (const auto& [cat, m] : report["supported_operators"].items())
      for (const auto& [k, v] : m.items()) ops[k] = "supported";
    for (const auto& [cat, l] : report["unsupported_operators"].items())
      for (const auto& e : l) ops[e.value("kind", "?")] = "unsupported";
    return ops;
  }

  static inline fs::path dir_;
  static inline json manifest_;
  static inline std::string setup_error_;
};

TEST_F(Torch2Pt2, TorchvisionCnn) {
  auto g = LoadAndCompare("resnet18");
  json r = Analyze("resnet18");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["input_kind"], "pt2");
  json ops = AllOps(r);
  for (const char* op : {"aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::max_pool2d",
                         "aten::adaptive_avg_pool2d", "aten::linear"})
    EXPECT_EQ(ops.value(op, ""), "supported") << op << "\n" << r.dump(1);
  EXPECT_EQ(r["summary"]["lowering_failures"], 0) << r.dump(1);
}

TEST_F(Torch2Pt2, TransformerEncoderWithDynamicBatch) {
  auto g = LoadAndCompare("encoder_dynamic");
  // The batch dimension is symbolic (Dim, 2..64): a bounded dynamic dimension at the example's size 4.
  bool bounded = false;
  for (const auto& n : g.nodes)
    if (n.op == "aten::layer_norm") bounded |= n.TensorSignature().starts_with("f32[<=4,10,32]");
  EXPECT_TRUE(bounded);
  json r = Analyze("encoder_dynamic");
  ASSERT_TRUE(r.is_object());
  json ops = AllOps(r);
  for (const char* op : {"aten::scaled_dot_product_attention", "aten::layer_norm", "aten::linear", "aten::dropout"})
    EXPECT_EQ(ops.value(op, ""), "supported") << op << "\n" << r.dump(1);
  EXPECT_EQ(r["summary"]["lowering_failures"], 0) << r.dump(1);
}

TEST_F(Torch2Pt2, CustomLibraryOp) {
  auto g = LoadAndCompare("custom_op");
  bool custom = false;
  for (const auto& n : g.nodes) custom |= n.op == "opprobe_test::scaled_tanh";
  EXPECT_TRUE(custom);
  json r = Analyze("custom_op");
  ASSERT_TRUE(r.is_object());
  EXPECT_THAT(r.dump(), HasSubstr("opprobe_test::scaled_tanh"));  // reported, not dropped
  EXPECT_NE(r["support_percentage"], "100.00%");                  // opprobe cannot lower a user's own op
}

TEST_F(Torch2Pt2, QuantizedModel) {
  auto g = LoadAndCompare("quantized");
  size_t q = 0;
  for (const auto& n : g.nodes) q += n.op.starts_with("quantized_decomposed::");
  EXPECT_GE(q, 4u);
  json r = Analyze("quantized");
  ASSERT_TRUE(r.is_object());
  json ops = AllOps(r);
  for (const char* op : {"quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_tensor"})
    EXPECT_EQ(ops.value(op, ""), "supported") << op << "\n" << r.dump(1);
  EXPECT_EQ(r["summary"]["lowering_failures"], 0) << r.dump(1);
}

TEST_F(Torch2Pt2, JointForwardBackwardGraph) {
  auto g = LoadAndCompare("joint_train");
  std::set<std::string> ops;
  for (const auto& n : g.nodes) ops.insert(n.op);
  // Forward (addmm, log_softmax) and backward (mm of the gradients, the scatter of nll_loss' gradient).
  for (const char* op : {"aten::addmm", "aten::mm", "aten::_log_softmax", "aten::scatter"})
    EXPECT_TRUE(ops.count(op)) << op;
  json r = Analyze("joint_train", "interp");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["summary"]["lowering_failures"], 0) << r.dump(1);
  EXPECT_EQ(r["support_percentage"], "100.00%") << r.dump(1);
}

TEST_F(Torch2Pt2, ArchiveWithSeveralPrograms) {
  auto g = LoadAndCompare("multi");
  EXPECT_EQ(g.programs, (std::vector<std::string>{"model", "head"}));
  json r = Analyze("multi");
  ASSERT_TRUE(r.is_object());
  std::vector<std::string> names;
  for (const auto& p : r["programs"]) names.push_back(p.value("name", ""));
  EXPECT_EQ(names, (std::vector<std::string>{"model", "head"}));
}

TEST_F(Torch2Pt2, AnExportedProgramIsCompiledWholeForFit) {
  // `--fit` on a .pt2: the exported program is a whole program already; built from its graph signature (parameters,
  // buffers, user inputs in; the loss and each parameter's gradient out) and compiled by XLA's CPU compiler, whose
  // arguments are the program's inputs byte for byte: 163 f32 parameters, x f32[5,6] and y s64[5].
  const std::string out = (dir_ / "joint_fit.json").string();
  auto r = RunOpprobe({"analyze", "--no-cache", "--no-progress", "-q", "--fit", "--backend", "xla:cpu", "-o", out,
                       File("joint_train")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json p = json::parse(ReadWholeFile(out))["program"];
  ASSERT_EQ(p["outcome"], "compiled") << p.dump(1);
  EXPECT_EQ(p["what"], "the exported program model");
  EXPECT_EQ(p["step"]["end_kind"], "program_end");
  EXPECT_TRUE(p["step"]["gaps"].empty()) << p.dump(1);
  EXPECT_EQ(p["step"]["inputs"], 6);
  EXPECT_EQ(p["step"]["outputs"], 5);
  EXPECT_EQ(p["memory"]["argument_bytes"], 163 * 4 + 30 * 4 + 5 * 8);
  EXPECT_EQ(p["estimate"]["argument_bytes"], p["memory"]["argument_bytes"]);
  EXPECT_EQ(p["fits"], true);
  std::string contributors = p["contributors"].dump();
  EXPECT_THAT(contributors, ::testing::HasSubstr("\"parameters\""));
  EXPECT_THAT(contributors, ::testing::HasSubstr("\"gradients\""));

  // An inference program with its buffers (resnet18's batch-norm statistics), compiled for one v5e chip.
  const std::string cnn = (dir_ / "resnet_fit.json").string();
  r = RunOpprobe({"analyze", "--no-cache", "--no-progress", "-q", "--fit", "--require-fit", "--backend", "tpu:v5e",
                  "-o", cnn, File("resnet18")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json q = json::parse(ReadWholeFile(cnn))["program"];
  ASSERT_EQ(q["outcome"], "compiled") << q.dump(1);
  EXPECT_TRUE(q["step"]["gaps"].empty()) << q.dump(1);
  EXPECT_EQ(q["fits"], true);
  EXPECT_THAT(q["contributors"].dump(), ::testing::HasSubstr("\"buffers\""));
}

TEST_F(Torch2Pt2, BareProgramJson) {
  LoadAndCompare("bare");
  json r = Analyze("bare");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(AllOps(r).value("aten::gelu", ""), "supported") << r.dump(1);
}

}  // namespace
}  // namespace opprobe
