// StableHLO input through the real binary (issue #16.5): the corpus file of torch_xla's StableHLO export on
// rules:tpu, torch_xla's text with its aten metadata (the committed fixture and a fresh export with the torch_xla
// environment, OPPROBE_TORCH_XLA_PYTHON), JAX's text compiled by XLA itself (xla:cpu, OPPROBE_XLA_PYTHON), and bad
// input: one line naming the place, exit 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::ReadWholeFile;
using testing::RunOpprobe;
using testing::RunProgram;

constexpr char kCorpus[] = "../shared/corpus/hlo/torch_xla_resnet18_qdq.stablehlo.mlir";
constexpr char kFixture[] = "tests/fixtures/stablehlo/torch_xla_mlp.stablehlo.mlir";

class StableHloE2E : public testing::TempDirTest {
 protected:
  std::string Write(const std::string& name, const std::string& contents) {
    std::ofstream(Path(name), std::ios::binary) << contents;
    return Path(name);
  }
  // Every aten op of a report, supported or not.
  static json AtenOps(const json& report) {
    json ops = report["supported_operators"]["aten"];
    for (const auto& e : report["unsupported_operators"]["aten"]) ops[e.value("kind", "?")] = 0;
    return ops;
  }
  // A bad input exits 2 with one line on stderr that starts with `where`.
  void ExpectBadInput(const std::string& path, const std::string& where, const std::string& what) {
    auto r =
        RunOpprobe({"analyze", path, "--backend", "rules:tpu", "--no-cache", "--no-progress", "-o", Path("r.json")});
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(where)) << r.err;
    EXPECT_THAT(r.err, HasSubstr(what)) << r.err;
    for (char c : r.err) {
      unsigned char u = static_cast<unsigned char>(c);
      EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f)) << "control byte in: " << r.err;
    }
    EXPECT_FALSE(std::filesystem::exists(Path("r.json")));  // nothing half-written
  }
};

// The issue's acceptance: the corpus file on rules:tpu reports its ops.
TEST_F(StableHloE2E, CorpusFileOnRulesTpuReportsItsOps) {
  std::string out = Path("report.json");
  auto r =
      RunOpprobe({"analyze", kCorpus, "--backend", "rules:tpu", "--no-cache", "--no-progress", "-v", "0", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["input_kind"], "stablehlo");
  EXPECT_EQ(report["model"], kCorpus);
  const json& s = report["summary"];
  EXPECT_EQ(s["hlo_instructions"], 225);  // every op's instructions; splat constants are a constant and a broadcast
  // XLA cannot translate uniform_quantize/uniform_dequantize: unknown to its opcode table, so not on a TPU either.
  std::map<std::string, std::string> verdicts;
  for (const auto& u : report["instructions"]) verdicts[u["opcode"]] = u["verdict"];
  EXPECT_EQ(verdicts["stablehlo.uniform_quantize"], "unsupported");
  EXPECT_EQ(verdicts["stablehlo.uniform_dequantize"], "unsupported");
  for (const char* op : {"convolution", "reduce-window", "dot", "transpose", "reduce", "maximum", "pad"})
    EXPECT_EQ(verdicts[op], "supported") << op;
  // The file has no loc(...) metadata, so nothing is attributed to an aten op.
  EXPECT_EQ(AtenOps(report).size(), 1u) << report["supported_operators"].dump();
  EXPECT_TRUE(AtenOps(report).contains("unattributed"));
  const json& unsupported = report["unsupported_operators"]["xla"];
  ASSERT_FALSE(unsupported.empty());
  EXPECT_THAT(unsupported.dump(), HasSubstr("opcode unknown to XLA's HLO opcode table"));
}

// Where the file says so (torch_xla's export with XLA_HLO_DEBUG=1), instructions belong to aten ops and lines.
TEST_F(StableHloE2E, TorchXlaMetadataAttributesInstructionsToAtenOpsAndLines) {
  // A profile that refuses `exponential` makes softmax's instruction show where it came from.
  std::string profile = Write("no-exp.json", R"({"name": "no-exp", "description": "test", "source": "test",
    "default": {"verdict": "supported"},
    "rules": [{"id": "exp", "verdict": "unsupported", "match": {"opcodes": ["exponential"]}, "reason": "no exp", "source": "test"}]})");
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", kFixture, "--backend", "rules:" + profile, "--no-cache", "--no-progress", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  json ops = AtenOps(report);
  for (const char* op : {"aten::addmm", "aten::relu", "aten::softmax", "aten::permute"})
    EXPECT_TRUE(ops.contains(op)) << op << "\n" << ops.dump();
  const json& bad = report["unsupported_operators"]["aten"];
  ASSERT_EQ(bad.size(), 1u) << bad.dump();
  EXPECT_EQ(bad[0]["kind"], "aten::softmax");
  EXPECT_EQ(bad[0]["call"], "torch_xla_mlp.py 37");  // the script's line, not torch's own frames
  EXPECT_THAT(r.out, HasSubstr("at torch_xla_mlp.py:37: aten::softmax"));
}

// The same from what torch_xla writes today (the torch_xla environment scripts/test makes).
TEST_F(StableHloE2E, FreshTorchXlaExportIsReadAndAttributed) {
  const char* py = std::getenv("OPPROBE_TORCH_XLA_PYTHON");
  ASSERT_TRUE(py && *py) << "OPPROBE_TORCH_XLA_PYTHON is not set (scripts/test creates the torch_xla environment)";
  std::string mlir = Path("mlp.mlir");
  auto gen =
      RunProgram({"env", "PJRT_DEVICE=CPU", "XLA_HLO_DEBUG=1", py, "tests/fixtures/stablehlo/torch_xla_mlp.py", mlir});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", mlir, "--backend", "rules:tpu", "--no-cache", "--no-progress", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out << "\n" << ReadWholeFile(mlir).substr(0, 4000);
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["input_kind"], "stablehlo");
  json ops = AtenOps(report);
  for (const char* op : {"aten::addmm", "aten::relu", "aten::softmax"})
    EXPECT_TRUE(ops.contains(op)) << op << ops.dump();
  EXPECT_EQ(report["support_percentage"], "100.00%");
}

// JAX's StableHLO (with locations) compiled and run by XLA's own CPU compiler, unit by unit.
TEST_F(StableHloE2E, JaxTextIsCompiledByXlaItself) {
  const char* py = std::getenv("OPPROBE_XLA_PYTHON");
  ASSERT_TRUE(py && *py) << "OPPROBE_XLA_PYTHON is not set (scripts/test creates the xla environment)";
  auto gen = RunProgram({py, "tests/stablehlo/jax_programs.py", dir_.string(), "train_step", "conv_nchw"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", Path("train_step.debug.mlir"), Path("conv_nchw.export.mlir"), "--backend", "xla:cpu",
                       "--no-cache", "--no-progress", "-v", "0", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  const json& s = report["summary"];
  EXPECT_GT(s["unique_probes"].get<int>(), 10);
  EXPECT_EQ(s["supported_instructions"], s["hlo_instructions"]) << report["unsupported_operators"].dump();
  EXPECT_EQ(s["interp_differ"], 0);
  // JAX names no aten ops, but its locations carry the program's source lines.
  EXPECT_THAT(report.dump(), HasSubstr("jax_programs.py\\\" source_line="));
}

TEST_F(StableHloE2E, TruncatedFileIsOneLocatedLine) {
  std::string text = ReadWholeFile(kCorpus);
  ASSERT_FALSE(text.empty()) << "needs " << kCorpus;
  std::string cut = Write("cut.mlir", text.substr(0, text.size() / 2));
  ExpectBadInput(cut, cut + ":", "expected");
  ExpectBadInput(Write("empty.mlir", ""), "empty.mlir:1:1: no functions", "module");
}

TEST_F(StableHloE2E, UnknownDialectIsOneLocatedLine) {
  std::string p = Write("tosa.mlir", R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = tosa.abs %arg0 : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)");
  ExpectBadInput(p, p + ":3:10: operation 'tosa.abs' is from dialect 'tosa'", "stablehlo, chlo, mhlo, func and sdy");
}

TEST_F(StableHloE2E, GarbageBytesAreOneLineWithoutTheBytes) {
  std::string garbage("module {\n\x01\x02\xff\xfe\x1b[2J\x80garbage\n", 23);
  ExpectBadInput(Write("garbage.mlir", garbage), "garbage.mlir:2:1:", "expected");
  ExpectBadInput(Write("bytecode.mlirbc", std::string("ML\xEFR\x01\x05\x00\x00junk", 12)),
                 "bytecode.mlirbc: MLIR bytecode", "as text");
}

TEST_F(StableHloE2E, StableHloCannotBeMixedWithAtenInputs) {
  auto r = RunOpprobe({"analyze", kFixture, "samples/traces/supported.json", "--no-progress", "--no-cache"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("aten inputs cannot be mixed with HLO inputs"));
}

}  // namespace
}  // namespace opprobe
