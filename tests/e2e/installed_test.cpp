// An install that works (issue #29.5): `cmake --install BUILD --prefix PREFIX` into a fresh folder, then the installed
// opprobe run from a folder outside the checkout, with none of the variables that point opprobe at its own files
// (OPPROBE_PJRT_WORKER, OPPROBE_XLA_WORKER, OPPROBE_CAPTURE_SHIM) nor PYTHONPATH: each worker backend compiles an HLO
// file (xla:cpu and iree:llvm-cpu through the installed Python worker, pjrt: with the CPU plugin, tpu:v5e and gpu:h100
// through the installed pjrt worker), and `capture` and `analyze -- script` run a script with Debian's Python through
// the installed shim. The Python environments and plugins are the user's, named as scripts/test names them.
// An installed binary never falls back to the checkout it was built from (support/runtime_files.h): a moved prefix
// still works, and one without its helpers says where they should be.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "opprobe_version.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunProgram;
using testing::RunResult;

std::string RequiredEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

class InstalledE2E : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    prefix_ = Path("prefix");
    work_ = Path("work");
    fs::create_directories(work_);
    const std::string build = fs::path(OPPROBE_BIN).parent_path().string();
    auto install = RunProgram({"cmake", "--install", build, "--prefix", prefix_});
    ASSERT_EQ(install.exit_code, 0) << install.err << install.out;
    fs::copy_file(std::string(OPPROBE_SOURCE_DIR) + "/tests/fixtures/hlo/while_with_constants.hlo",
                  work_ + "/module.hlo");
    std::ofstream(work_ + "/model.py") << "import torch\n"
                                          "x = torch.ones(2, 3)\n"
                                          "y = (x * 2).relu().sum()\n";
  }

  // PREFIX/bin/opprobe ARGS, in the work folder, without the variables that would point it at the build or source
  // tree's copies of its files.
  RunResult Installed(const std::vector<std::string>& args, const std::string& prefix = "") {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-C",
                                     work_,
                                     "-u",
                                     "OPPROBE_PJRT_WORKER",
                                     "-u",
                                     "OPPROBE_XLA_WORKER",
                                     "-u",
                                     "OPPROBE_CAPTURE_SHIM",
                                     "-u",
                                     "OPPROBE_BIN",
                                     "-u",
                                     "PYTHONPATH",
                                     (prefix.empty() ? prefix_ : prefix) + "/bin/opprobe"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv);
  }

  // Analyzes module.hlo with `backend` through the installed binary: every instruction judged, all supported.
  void ExpectAllSupported(const std::string& backend, const std::string& id) {
    SCOPED_TRACE(backend);
    auto r =
        Installed({"analyze", "module.hlo", "--backend", backend, "--no-cache", "--no-progress", "-o", "report.json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    json report = json::parse(ReadWholeFile(work_ + "/report.json"));
    EXPECT_EQ(report["backend"], id);
    const json& s = report["summary"];
    EXPECT_GT(s["hlo_instructions"].get<int>(), 0);
    EXPECT_EQ(s["supported_instructions"], s["hlo_instructions"]) << report.dump();
  }

  std::string prefix_, work_;
};

TEST_F(InstalledE2E, OpprobeInBinItsHelpersInLibexecTheCaptureShimInShare) {
  std::vector<std::string> bin;
  for (const auto& e : fs::directory_iterator(prefix_ + "/bin")) bin.push_back(e.path().filename().string());
  EXPECT_EQ(bin, std::vector<std::string>{"opprobe"});  // helpers are not commands: none of them on PATH
  const fs::path libexec = fs::path(prefix_) / "libexec/opprobe";
  EXPECT_TRUE(fs::is_regular_file(libexec / "opprobe-xla-worker.py"));
  EXPECT_TRUE(ReadWholeFile((libexec / "opprobe-xla-worker.py").string()) ==
              ReadWholeFile(std::string(OPPROBE_SOURCE_DIR) + "/compiler_probe/worker/python_worker.py"))
      << "the installed opprobe-xla-worker.py is not compiler_probe/worker/python_worker.py";
  ASSERT_TRUE(fs::is_regular_file(libexec / "opprobe-pjrt-worker"));
  EXPECT_NE(fs::status(libexec / "opprobe-pjrt-worker").permissions() & fs::perms::owner_exec, fs::perms::none);
  // Every file of the capture package, so that no module it imports is left behind (Python's own caches aside).
  const fs::path source = fs::path(OPPROBE_SOURCE_DIR) / "capture";
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(source / "opprobe_capture"); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->path().filename() == "__pycache__") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    ++files;
    const fs::path rel = fs::relative(it->path(), source);
    EXPECT_TRUE(fs::is_regular_file(fs::path(prefix_) / "share/opprobe/capture" / rel)) << rel;
  }
  EXPECT_GT(files, 10);
  EXPECT_TRUE(fs::is_regular_file(fs::path(prefix_) / "share/opprobe/capture/opprobe_capture/__main__.py"));
}

TEST_F(InstalledE2E, XlaCpuThroughTheInstalledPythonWorker) {
  ASSERT_FALSE(RequiredEnv("OPPROBE_XLA_PYTHON").empty()) << "OPPROBE_XLA_PYTHON is not set (scripts/test sets it)";
  ExpectAllSupported("xla:cpu", "xla:cpu");
}

TEST_F(InstalledE2E, IreeThroughTheInstalledPythonWorker) {
  ASSERT_FALSE(RequiredEnv("OPPROBE_IREE_PYTHON").empty()) << "OPPROBE_IREE_PYTHON is not set (scripts/test sets it)";
  ExpectAllSupported("iree:llvm-cpu", "iree:llvm-cpu");
}

TEST_F(InstalledE2E, PjrtCpuPluginThroughTheInstalledPjrtWorker) {
  const std::string plugin = RequiredEnv("OPPROBE_PJRT_CPU_PLUGIN");
  ASSERT_FALSE(plugin.empty()) << "OPPROBE_PJRT_CPU_PLUGIN is not set: scripts/test installs requirements/pjrt-cpu.txt";
  auto r = Installed(
      {"analyze", "module.hlo", "--backend", "pjrt:" + plugin, "--no-cache", "--no-progress", "-o", "report.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(work_ + "/report.json"));
  EXPECT_EQ(report["summary"]["supported_instructions"], report["summary"]["hlo_instructions"]) << report.dump();
}

TEST_F(InstalledE2E, TpuAndGpuCompilersThroughTheInstalledPjrtWorker) {
  ASSERT_FALSE(RequiredEnv("OPPROBE_LIBTPU").empty()) << "OPPROBE_LIBTPU is not set (scripts/test sets it)";
  ASSERT_FALSE(RequiredEnv("OPPROBE_CUDA_PLUGIN").empty()) << "OPPROBE_CUDA_PLUGIN is not set (scripts/test sets it)";
  ExpectAllSupported("tpu:v5e", "tpu:v5e");
  ExpectAllSupported("gpu:h100", "gpu:h100");
}

TEST_F(InstalledE2E, CaptureAndAnalyzeAScriptThroughTheInstalledShim) {
  auto c = Installed({"capture", "-o", "trace.json", "--", "/usr/bin/python3", "model.py"});
  ASSERT_EQ(c.exit_code, 0) << c.err << c.out;
  const std::string trace = ReadWholeFile(work_ + "/trace.json");
  EXPECT_NE(trace.find("\"op\":\"aten::mul"), std::string::npos) << trace;
  auto a =
      Installed({"analyze", "--no-cache", "--no-progress", "-o", "report.json", "--", "/usr/bin/python3", "model.py"});
  ASSERT_EQ(a.exit_code, 0) << a.err << a.out;
  json report = json::parse(ReadWholeFile(work_ + "/report.json"));
  EXPECT_EQ(report["summary"]["supported_instructions"], report["summary"]["hlo_instructions"]) << report.dump();
  EXPECT_GT(report["summary"]["hlo_instructions"].get<int>(), 0);
}

// The prefix moved whole still finds its files (they are looked up from the program, not from where it was
// installed); without them it says where each should be, and never takes the checkout's copy instead.
TEST_F(InstalledE2E, AMovedPrefixWorksAndOneMissingItsFilesNamesThemWithoutFallingBackToTheCheckout) {
  ASSERT_FALSE(RequiredEnv("OPPROBE_XLA_PYTHON").empty()) << "OPPROBE_XLA_PYTHON is not set (scripts/test sets it)";
  const std::string plugin = RequiredEnv("OPPROBE_PJRT_CPU_PLUGIN");
  ASSERT_FALSE(plugin.empty()) << "OPPROBE_PJRT_CPU_PLUGIN is not set: scripts/test installs requirements/pjrt-cpu.txt";
  const std::string moved = Path("moved");
  fs::rename(prefix_, moved);
  auto ok = Installed({"analyze", "module.hlo", "--backend", "xla:cpu", "--no-cache", "--no-progress"}, moved);
  ASSERT_EQ(ok.exit_code, 0) << ok.err << ok.out;
  auto captured = Installed({"capture", "-o", "trace.json", "--", "/usr/bin/python3", "model.py"}, moved);
  ASSERT_EQ(captured.exit_code, 0) << captured.err << captured.out;

  fs::remove(moved + "/libexec/opprobe/opprobe-xla-worker.py");
  fs::remove(moved + "/libexec/opprobe/opprobe-pjrt-worker");
  fs::remove_all(moved + "/share/opprobe/capture");
  const std::string source = OPPROBE_SOURCE_DIR;
  const std::string build = fs::path(OPPROBE_BIN).parent_path().string();

  auto xla = Installed({"analyze", "module.hlo", "--backend", "xla:cpu", "--no-cache", "--no-progress"}, moved);
  EXPECT_EQ(xla.exit_code, 3) << xla.err << xla.out;
  EXPECT_NE(xla.err.find("the worker script opprobe-xla-worker.py was not found at " + moved +
                         "/libexec/opprobe/opprobe-xla-worker.py (set OPPROBE_XLA_WORKER)"),
            std::string::npos)
      << xla.err;

  auto pjrt = Installed({"analyze", "module.hlo", "--backend", "pjrt:" + plugin, "--no-cache", "--no-progress"}, moved);
  EXPECT_EQ(pjrt.exit_code, 3) << pjrt.err << pjrt.out;
  EXPECT_NE(pjrt.err.find("the helper program opprobe-pjrt-worker was found neither at " + moved +
                          "/libexec/opprobe/opprobe-pjrt-worker nor on PATH"),
            std::string::npos)
      << pjrt.err;

  auto capture = Installed({"capture", "-o", "trace.json", "--", "/usr/bin/python3", "model.py"}, moved);
  EXPECT_EQ(capture.exit_code, 2) << capture.err << capture.out;
  EXPECT_NE(capture.err.find("cannot find the capture package opprobe_capture (looked for " + moved +
                             "/share/opprobe/capture/opprobe_capture/__main__.py); set OPPROBE_CAPTURE_SHIM"),
            std::string::npos)
      << capture.err;
  for (const auto* r : {&xla, &pjrt, &capture})
    for (const std::string& checkout :
         {source + "/cli/", source + "/capture/", source + "/compiler_probe/", build + "/opprobe-"})
      EXPECT_EQ(r->err.find(checkout), std::string::npos) << r->err;
}

}  // namespace
}  // namespace opprobe
