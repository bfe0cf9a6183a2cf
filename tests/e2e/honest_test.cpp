// Issue 12 with the real binary: custom ops and a failed script in every format, --ignore-op, nothing captured,
// gates on incomplete analyses, a cmd: backend whose compiler cannot be started, and quiet output off a terminal.
// Hand-written traces (tests/fixtures/traces/honest/) stand for what the capture shim records.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;

constexpr const char* kFailed = "tests/fixtures/traces/honest/failed_detection.json";
constexpr const char* kGap = "tests/fixtures/traces/honest/lowering_gap.json";
constexpr const char* kNothing = "tests/fixtures/traces/honest/nothing.json";
constexpr const char* kOrigins = "tests/fixtures/traces/honest/origins.json";

class HonestE2E : public testing::TempDirTest {};

TEST_F(HonestE2E, CustomOpsAndAFailedScriptInEveryFormat) {
  const std::vector<std::pair<std::string, std::string>> formats = {
      {"json", "r.json"},   {"text", "r.txt"},  {"markdown", "r.md"}, {"junit", "r.xml"},
      {"sarif", "r.sarif"}, {"github", "r.gh"}, {"html", "r.html"}};
  std::vector<std::string> args = {"analyze", kFailed, "--no-cache", "--backend", "rules:neuron-trn1"};
  for (const auto& [f, file] : formats) args.push_back("--format=" + f + "=" + Path(file));
  auto r = RunOpprobe(args);
  // A failed script is bad input: exit 2, but every report is written, marked partial.
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.out.find("partial analysis: the script failed at tests/fixtures/traces/honest/detect.py:15"),
            std::string::npos)
      << r.out;
  for (const auto& [f, file] : formats) {
    std::string text = ReadWholeFile(Path(file));
    ASSERT_FALSE(text.empty()) << f;
    EXPECT_NE(text.find("partial analysis: the script failed at tests/fixtures/traces/honest/detect.py:15"),
              std::string::npos)
        << f << "\n"
        << text;
    EXPECT_NE(text.find("torchvision::nms"), std::string::npos) << f;
    EXPECT_NE(text.find("mylib::my_op"), std::string::npos) << f;
    EXPECT_NE(text.find("quantized::linear_prepack"), std::string::npos) << f;  // only in the old skipped_ops
    EXPECT_EQ(text.find("profiler::"), std::string::npos) << f;                 // bookkeeping stays out
    // A 100% shows only marked incomplete (the JSON marks the whole report with "complete": false instead).
    // (HTML: the summary cards; its per-module bars may show a module's own 100%. GitHub escapes % as %25.)
    std::string shown = f == "html" ? text.substr(0, text.find("<section id=\"unsupported\"")) : text;
    std::string hundred = f == "github" ? "100.00%25" : "100.00%";
    if (f != "json") {
      for (size_t pos = shown.find(hundred); pos != std::string::npos; pos = shown.find(hundred, pos + 1)) {
        EXPECT_EQ(shown.substr(pos, hundred.size() + 13), hundred + " (incomplete)") << f;
      }
    }
  }
  json j = json::parse(ReadWholeFile(Path("r.json")));
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["capture"]["status"], "error");
  EXPECT_EQ(j["capture"]["exit_status"], 1);
  EXPECT_EQ(j["capture"]["exception_type"], "RuntimeError");
  EXPECT_EQ(j["capture"]["exception_message"], "boxes must be 2-D");
  EXPECT_EQ(j["capture"]["line"], 15);
  bool nms = false, prepack = false;
  for (const auto& e : j["unsupported_operators"]["aten"]) {
    if (e["kind"] == "torchvision::nms") {
      nms = true;
      EXPECT_EQ(e["failureAt"], "custom_op");
      EXPECT_EQ(e["count"], 2);
      EXPECT_EQ(e["call"], "detect.py 12");
      EXPECT_EQ(
          e["reason"].get<std::string>().rfind(
              "torchvision::nms has no XLA lowering: an XLA backend needs a custom call or a CPU fallback for it", 0),
          0u);
    }
    if (e["kind"] == "quantized::linear_prepack") {
      prepack = true;
      EXPECT_EQ(e["failureAt"], "custom_op");
      EXPECT_EQ(e["call"], "");
    }
  }
  EXPECT_TRUE(nms && prepack) << j.dump(2);
  // 3 add + 1 relu + 2 nms + 1 my_op + 1 prepack; custom ops count as unsupported.
  EXPECT_EQ(j["summary"]["aten_calls"], 8);
  EXPECT_EQ(j["summary"]["custom_op_calls"], 4);
  EXPECT_EQ(j["aten_support_percentage"], "50.00%");
  EXPECT_GT(j["summary"]["wall_seconds"].get<double>(), 0.0);
}

// Issue 12.9: a call made inside a library names the library's frame beside the user's line, and a backward op the
// forward call whose autograd node made it beside the .backward() line, in every format; places relative to the
// script's folder (the trace's lib_loc and forward, as the capture records them).
TEST_F(HonestE2E, LibraryFramesAndForwardCallsInEveryFormat) {
  const std::vector<std::pair<std::string, std::string>> formats = {
      {"json", "r.json"},   {"text", "r.txt"},  {"markdown", "r.md"}, {"junit", "r.xml"},
      {"sarif", "r.sarif"}, {"github", "r.gh"}, {"html", "r.html"}};
  std::vector<std::string> args = {"analyze", kOrigins, "--no-cache", "--backend", "rules:neuron-trn1"};
  for (const auto& [f, file] : formats) args.push_back("--format=" + f + "=" + Path(file));
  auto r = RunOpprobe(args);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string library = "via fakevision/ops/spectral.py:41";
  const std::string forward =
      "backward of aten::mul.Tensor at models/head.py:12 via fakevision/ops/spectral.py:41 in head";
  for (const auto& [f, file] : formats) {
    std::string text = ReadWholeFile(Path(file));
    ASSERT_FALSE(text.empty()) << f;
    if (f == "json") continue;  // structured below
    EXPECT_NE(text.find(library), std::string::npos) << f << "\n" << text;
    EXPECT_NE(text.find(forward), std::string::npos) << f << "\n" << text;
  }
  // The text report puts the origin under its entry, below the op column.
  std::string txt = ReadWholeFile(Path("r.txt"));
  EXPECT_NE(txt.find("aten::mul  c64[4], c64[4]"), std::string::npos) << txt;
  json j = json::parse(ReadWholeFile(Path("r.json")));
  int forward_entries = 0, backward_entries = 0;
  for (const auto& e : j["unsupported_operators"]["aten"]) {
    if (e["phase"] == "forward") {
      ++forward_entries;
      EXPECT_EQ(e["call"], "head.py 12");
      EXPECT_EQ(e["library_place"], "fakevision/ops/spectral.py:41");
      EXPECT_FALSE(e.contains("forward_call")) << e.dump();
    } else {
      ++backward_entries;
      EXPECT_EQ(e["call"], "train.py 30");
      EXPECT_FALSE(e.contains("library_place")) << e.dump();
      EXPECT_EQ(e["forward_call"], json({{"op", "aten::mul.Tensor"},
                                         {"place", "models/head.py:12"},
                                         {"library_place", "fakevision/ops/spectral.py:41"},
                                         {"module_path", "head"}}));
    }
  }
  EXPECT_EQ(forward_entries, 1) << j.dump(2);
  EXPECT_EQ(backward_entries, 1) << j.dump(2);
  // The backward add without a forward call (a gradient accumulation) is supported and stays out of the lists.
  EXPECT_EQ(j["summary"]["aten_calls"], 4);
}

TEST_F(HonestE2E, ALibrarysOwnBookkeepingNeverCounts) {
  // Importing torchaudio (Debian's 0.13 with PyTorch 1.13) dispatches its own queries and configuration
  // (torchaudio::is_sox_available, ffmpeg_set_log_level, ...): no tensor in or out, no part of the model. A script
  // written as torchaudio's users write it analyzes at 100%, with none of them listed.
  const std::string trace = Path("t.json"), report = Path("r.json");
  auto r = RunOpprobe({"analyze", "--no-cache", "--backend", "rules:cpu", "-q", "-o", report, "--save-trace", trace,
                       "--", "/usr/bin/python3", "tests/fixtures/traces/scripts/torchaudio_mel.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json t = json::parse(ReadWholeFile(trace));
  ASSERT_TRUE(t.contains("host_only_ops")) << "torchaudio no longer configures itself at import?";
  EXPECT_TRUE(t["host_only_ops"].contains("torchaudio::ffmpeg_set_log_level")) << t["host_only_ops"].dump();
  EXPECT_FALSE(t.contains("skipped_ops"));
  json j = json::parse(ReadWholeFile(report));
  EXPECT_EQ(j["support_percentage"], "100.00%");
  for (const auto& e : j["unsupported_operators"]["aten"])
    EXPECT_EQ(e["kind"].get<std::string>().rfind("torchaudio::", 0), std::string::npos) << e.dump();
  EXPECT_GT(j["summary"]["aten_calls"].get<int>(), 10);  // the spectrogram's own calls are there
}

TEST_F(HonestE2E, AScriptThatRaisesMidwayIsAPartialAnalysis) {
  auto r = RunOpprobe({"analyze", "--no-cache", "--fail-under", "0", "-o", Path("r.json"), "--format",
                       "markdown=" + Path("r.md"), "--", "/usr/bin/python3",
                       "tests/fixtures/traces/scripts/raises_midway.py"});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  const std::string banner =
      "partial analysis: the script failed at tests/fixtures/traces/scripts/raises_midway.py:13 (ValueError: boom "
      "from the fixture)";
  EXPECT_NE(r.out.find(banner), std::string::npos) << r.out;
  // Markdown escapes `_`.
  EXPECT_NE(ReadWholeFile(Path("r.md"))
                .find("partial analysis: the script failed at "
                      "tests/fixtures/traces/scripts/raises\\_midway.py:13"),
            std::string::npos)
      << ReadWholeFile(Path("r.md"));
  json j = json::parse(ReadWholeFile(Path("r.json")));
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["capture"]["status"], "error");
  EXPECT_EQ(j["capture"]["exception_type"], "ValueError");
  EXPECT_EQ(j["capture"]["line"], 13);
  // Every call before the error is supported on interp, yet no gate passes.
  EXPECT_NE(r.err.find("opprobe: gate failed: no gate passes on this analysis: partial analysis"), std::string::npos)
      << r.err;
}

TEST_F(HonestE2E, OneFailedTraceAmongSeveralMakesThePartialBanner) {
  auto r = RunOpprobe({"analyze", "--no-cache", "samples/traces/supported.json", kFailed, "-o", Path("r.json")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  json j = json::parse(ReadWholeFile(Path("r.json")));
  EXPECT_EQ(j["capture"]["status"], "error");
  EXPECT_EQ(j["complete"], false);
}

TEST_F(HonestE2E, IgnoreOpLeavesOutWhatTheUserHandlesAndSaysSo) {
  auto r = RunOpprobe({"analyze", kFailed, "--no-cache", "--ignore-op", "torchvision::*", "--ignore-op", "mylib::my_op",
                       "-o", Path("r.json")});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // still a failed script
  EXPECT_NE(r.out.find("ignored (--ignore-op): 3 calls of mylib::my_op (1), torchvision::nms (2)"), std::string::npos)
      << r.out;
  json j = json::parse(ReadWholeFile(Path("r.json")));
  for (const auto& e : j["unsupported_operators"]["aten"]) {
    EXPECT_NE(e["kind"], "torchvision::nms");
    EXPECT_NE(e["kind"], "mylib::my_op");
  }
  ASSERT_EQ(j["ignored_operators"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["ignored_operators"][1]["kind"], "torchvision::nms");
  EXPECT_EQ(j["ignored_operators"][1]["pattern"], "torchvision::*");
  EXPECT_EQ(j["ignored_operators"][1]["count"], 2);
  EXPECT_EQ(j["summary"]["ignored_calls"], 3);
}

TEST_F(HonestE2E, NothingCapturedIsAnError) {
  auto r = RunOpprobe({"analyze", kNothing, "--no-cache", "--fail-under", "90", "-o", Path("r.json")});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("no aten calls were captured from tests/fixtures/traces/scripts/no_torch.py"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out.find("100.00%"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(Path("r.json")));
}

TEST_F(HonestE2E, AScriptWithoutTorchIsAnError) {
  auto r = RunOpprobe({"analyze", "--no-cache", "--fail-under", "90", "--", "/usr/bin/python3",
                       "tests/fixtures/traces/scripts/no_torch.py"});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("no aten calls were captured from"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no_torch.py"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("100.00%"), std::string::npos) << r.out;
}

TEST_F(HonestE2E, GatesNeverPassOnAnIncompleteAnalysis) {
  auto r = RunOpprobe({"analyze", kGap, "--no-cache", "--fail-under", "0", "--format", "text=" + Path("r.txt")});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("opprobe: gate failed: no gate passes on this analysis: incomplete: opprobe cannot analyze 1 "
                       "aten call yet"),
            std::string::npos)
      << r.err;
  std::string text = ReadWholeFile(Path("r.txt"));
  EXPECT_NE(text.find("opprobe cannot analyze these yet"), std::string::npos) << text;
  EXPECT_NE(text.find("(incomplete)"), std::string::npos) << text;
  // Accepting the gap with --allow lets the gate judge the rest.
  auto allowed = RunOpprobe(
      {"analyze", kGap, "--no-cache", "--fail-under", "0", "--allow", "aten::opprobe_test_no_such_op", "-q"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
}

TEST_F(HonestE2E, CmdBackendWhoseCompilerCannotStartExits3BeforeProbing) {
  auto missing = RunOpprobe({"analyze", kGap, "--no-cache", "--backend", "cmd:./no/such/cc {hlo_txt}"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  std::string resolved = (std::filesystem::current_path() / "no/such/cc").string();
  // The binary runs in the source tree: the message names where the relative path resolved.
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("/no/such/cc"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find("probed "), std::string::npos);
  auto not_exec = RunOpprobe({"analyze", kGap, "--no-cache", "--backend", "cmd:README.md {hlo_txt}"});
  EXPECT_EQ(not_exec.exit_code, 3) << not_exec.err;
  auto on_path = RunOpprobe({"analyze", kGap, "--no-cache", "--backend", "cmd:opprobe-no-such-cc {hlo_txt}"});
  EXPECT_EQ(on_path.exit_code, 3) << on_path.err;
  EXPECT_NE(on_path.err.find("'opprobe-no-such-cc' not found on PATH"), std::string::npos) << on_path.err;
}

TEST_F(HonestE2E, BackendRejectingEverythingWarnsToCheckItsConfiguration) {
  auto r = RunOpprobe({"analyze", "samples/traces/resnet18_train.json", "--no-cache", "-j", "2", "--backend",
                       "cmd:/bin/false {hlo_txt}"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rejected all"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("check its configuration"), std::string::npos) << r.err;
}

TEST_F(HonestE2E, QuietOffATerminal) {
  // Without a terminal: no progress lines unless --progress.
  auto plain = RunOpprobe({"analyze", "samples/traces/supported.json", "--no-cache"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("probed"), std::string::npos) << plain.err;
  auto progress = RunOpprobe({"analyze", "samples/traces/supported.json", "--no-cache", "--progress"});
  EXPECT_EQ(progress.exit_code, 0) << progress.err;
  EXPECT_NE(progress.err.find("opprobe: probed"), std::string::npos) << progress.err;
  // -q: only errors.
  auto quiet = RunOpprobe({"analyze", "samples/traces/supported.json", "--no-cache", "-q", "--progress"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(quiet.err, "");
  auto quiet_error = RunOpprobe({"analyze", kNothing, "--no-cache", "-q"});
  EXPECT_EQ(quiet_error.exit_code, 2);
  EXPECT_NE(quiet_error.err.find("no aten calls"), std::string::npos);
}

}  // namespace
}  // namespace opprobe
