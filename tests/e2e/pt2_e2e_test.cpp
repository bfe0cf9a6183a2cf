// `opprobe analyze model.pt2` as a user runs it: the real corpus archives (../shared/corpus/pt2), the
// fixtures written by tests/tools/write_pt2.py, and bad archives (exit 2, one-line reason naming the entry).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "opprobe_version.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;

const std::string kCorpus = std::string(OPPROBE_SOURCE_DIR) + "/../shared/corpus/pt2";

class Pt2E2E : public testing::TempDirTest {
 protected:
  json Analyze(const std::string& input, int expected_exit, std::string* err = nullptr) {
    std::string out = Path("report.json");
    auto r = RunOpprobe({"analyze", "--no-cache", "--no-progress", "--backend", "interp", "-o", out, input});
    EXPECT_EQ(r.exit_code, expected_exit) << r.err << r.out;
    if (err) *err = r.err;
    std::string text = ReadWholeFile(out);
    if (text.empty()) return json();
    return json::parse(text, nullptr, false);
  }
};

TEST_F(Pt2E2E, ExecutorchLinearArchive) {
  const std::string path = kCorpus + "/executorch_linear.pt2";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent";
  json r = Analyze(path, 0);
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["input_kind"], "pt2");
  EXPECT_TRUE(r["supported_operators"]["aten"].contains("aten::linear")) << r.dump(2);
}

TEST_F(Pt2E2E, EtRecordReportsMulPerProgram) {
  const std::string path = kCorpus + "/executorch_etrecord_schema_v1.bin";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent";
  json r = Analyze(path, 0);
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(r["supported_operators"]["aten"].contains("aten::mul")) << r.dump(2);
  ASSERT_TRUE(r.contains("programs")) << r.dump(2);
  std::vector<std::string> names;
  for (const auto& p : r["programs"]) names.push_back(p.value("name", ""));
  EXPECT_EQ(names, (std::vector<std::string>{"aten_dialect_output/forward", "edge_dialect_exported_program"}));
}

TEST_F(Pt2E2E, Resnet18Fixture) {
  json r = Analyze(std::string(OPPROBE_SOURCE_DIR) + "/tests/fixtures/pt2/resnet18.pt2", 0);
  ASSERT_TRUE(r.is_object());
  json ops = r["supported_operators"]["aten"];
  for (const auto& e : r["unsupported_operators"]["aten"]) ops[e.value("kind", "?")] = 0;
  for (const char* op : {"aten::convolution", "aten::native_batch_norm", "aten::relu_", "aten::addmm",
                         "aten::max_pool2d_with_indices", "aten::mean"})
    EXPECT_TRUE(ops.contains(op)) << op << "\n" << r.dump(2);
}

TEST_F(Pt2E2E, ZipWithoutProgramExits2) {
  // A stored zip holding one `readme.txt` (written byte by byte: no zip tool needed).
  std::string zip;
  auto put16 = [&](uint16_t v) { zip += static_cast<char>(v & 0xFF), zip += static_cast<char>(v >> 8); };
  auto put32 = [&](uint32_t v) { put16(v & 0xFFFF), put16(v >> 16); };
  const std::string name = "readme.txt";
  put32(0x04034b50), put16(20), put16(0), put16(0), put16(0), put16(0), put32(0), put32(0), put32(0);
  put16(static_cast<uint16_t>(name.size())), put16(0);
  zip += name;
  uint32_t cd = static_cast<uint32_t>(zip.size());
  put32(0x02014b50), put16(20), put16(20), put16(0), put16(0), put16(0), put16(0), put32(0), put32(0), put32(0);
  put16(static_cast<uint16_t>(name.size())), put16(0), put16(0), put16(0), put16(0), put32(0), put32(0);
  zip += name;
  uint32_t cd_size = static_cast<uint32_t>(zip.size()) - cd;
  put32(0x06054b50), put16(0), put16(0), put16(1), put16(1), put32(cd_size), put32(cd), put16(0);
  std::string path = Path("empty.pt2");
  std::ofstream(path, std::ios::binary) << zip;
  std::string err;
  Analyze(path, 2, &err);
  EXPECT_NE(err.find("without a program"), std::string::npos) << err;
  EXPECT_NE(err.find("empty.pt2"), std::string::npos) << err;
}

}  // namespace
}  // namespace opprobe
