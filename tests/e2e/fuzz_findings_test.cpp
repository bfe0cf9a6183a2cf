// Regression tests for ../shared/fuzz-findings/: every input found by fuzzing the loaders gets a normal
// result or ONE line of error with exit code 2 — no abort, no undefined behaviour, no raw control bytes or
// newlines from the input in the message. Each folder is run the way its README says.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "opprobe_version.h"
#include "testing/run_binary.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using opprobe::testing::RunOpprobe;
using opprobe::testing::RunResult;

const std::string kFindings = std::string(OPPROBE_SOURCE_DIR) + "/../shared/fuzz-findings";

std::vector<fs::path> Findings(const std::string& folder) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kFindings + "/" + folder))
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// A copy of `src` under a name ending in `ext` (the CLI picks the loader by extension).
std::string CopyAs(const fs::path& src, const std::string& ext) {
  if (src.extension() == ext) return src.string();
  fs::path dir = fs::temp_directory_path() / "opprobe-fuzz-findings";
  fs::create_directories(dir);
  fs::path dst = dir / (src.filename().string() + ext);
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
  return dst.string();
}

// Exit 0 (valid input) or exit 2 with exactly one line of printable text on stderr.
void ExpectOneLineOrSuccess(const RunResult& r, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << "exit " << r.exit_code << "\n" << r.err;
  if (r.exit_code != 2) return;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "error spans several lines:\n" << r.err;
  for (size_t i = 0; i + 1 < r.err.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(r.err[i]);
    EXPECT_FALSE(c < 0x20 || c == 0x7f) << "control byte " << int(c) << " at " << i << " in: " << r.err;
  }
  EXPECT_LT(r.err.size(), 2000u) << r.err;
}

TEST(FuzzFindings, FoldersAreThere) {
  for (const char* f : {"hlo_text", "hlo_proto", "pt2_json", "report_json", "rules_profile"})
    EXPECT_FALSE(Findings(f).empty()) << f;
}

TEST(FuzzFindings, HloText) {
  for (const auto& f : Findings("hlo_text")) {
    std::string path = CopyAs(f, ".hlo");
    ExpectOneLineOrSuccess(RunOpprobe({"analyze", path, "--backend", "rules:tpu"}), path);
    // The layout overflow needed serialization to HloModuleProto: a cmd backend writes {hlo_pb}.
    ExpectOneLineOrSuccess(RunOpprobe({"analyze", path, "--backend", "cmd:true {hlo_pb}"}), path + " (hlo_pb)");
  }
}

TEST(FuzzFindings, LayoutOverflowIsALocatedInputError) {
  RunResult r = RunOpprobe({"analyze", kFindings + "/hlo_text/layout_tile_overflow.hlo", "--backend", "rules:tpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("layout_tile_overflow.hlo:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of the 64-bit range"), std::string::npos) << r.err;
}

TEST(FuzzFindings, MultiLineValuesAreEscapedInTheMessage) {
  RunResult r = RunOpprobe({"analyze", kFindings + "/hlo_text/compare_direction_multiline.hlo"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown comparison direction"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\\n"), std::string::npos) << r.err;
}

TEST(FuzzFindings, HloProto) {
  for (const auto& f : Findings("hlo_proto"))
    ExpectOneLineOrSuccess(RunOpprobe({"analyze", CopyAs(f, f.extension() == ".textproto" ? ".textproto" : ".pb"),
                                       "--backend", "rules:tpu"}),
                           f.string());
  RunResult r = RunOpprobe({"analyze", kFindings + "/hlo_proto/multiline_name.pb"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'evil\\nsecond line'"), std::string::npos) << r.err;
}

TEST(FuzzFindings, Pt2Json) {
  for (const auto& f : Findings("pt2_json"))
    ExpectOneLineOrSuccess(RunOpprobe({"analyze", CopyAs(f, ".pt2"), "--backend", "rules:tpu"}), f.string());
}

TEST(FuzzFindings, ReportJson) {
  for (const auto& f : Findings("report_json")) {
    RunResult r = RunOpprobe({"diff", f.string(), f.string()});
    EXPECT_EQ(r.exit_code, 2) << f;
    ExpectOneLineOrSuccess(r, f.string());
  }
}

TEST(FuzzFindings, RulesProfile) {
  for (const auto& f : Findings("rules_profile")) {
    RunResult r = RunOpprobe({"analyze", "samples/traces/unsupported.json", "--backend", "rules:" + f.string()});
    EXPECT_EQ(r.exit_code, 2) << f;
    ExpectOneLineOrSuccess(r, f.string());
  }
}

}  // namespace
}  // namespace opprobe
