// `--fake` (issue #30.1): the unmodified script on PyTorch's fake tensors, every call recorded with its shapes and
// nothing allocated or computed; and a script that builds its model on the meta device keeps it there under the
// capture. tests/torch2/scripts/decoder_step.py on PyTorch 2.x (the torch2 environment scripts/test makes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/run_binary.h"
#include "testing/scoped_env.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::ReadWholeFile;
using testing::RunOpprobe;

constexpr const char* kDecoder = "tests/torch2/scripts/decoder_step.py";

class FakeE2E : public testing::TempDirTest {
 protected:
  std::string Torch2() {
    const char* p = std::getenv("OPPROBE_TORCH2_PYTHON");
    EXPECT_TRUE(p && *p) << "OPPROBE_TORCH2_PYTHON is not set (scripts/test creates the torch2 environment)";
    return p ? p : "";
  }
  json Capture(const std::string& name, std::vector<std::string> options, const std::string& size) {
    std::vector<std::string> args{"capture", "-q", "-o", Path(name)};
    args.insert(args.end(), options.begin(), options.end());
    for (const auto& a : {std::string("--"), Torch2(), std::string(kDecoder), size}) args.push_back(a);
    auto r = RunOpprobe(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(ReadWholeFile(Path(name)));
  }
  // What a trace says of the calls: everything but how the capture ran.
  static json Calls(const json& trace) { return trace["calls"]; }
};

TEST_F(FakeE2E, FakeTensorsGiveTheSameCallsAndShapesAsARealRun) {
  json real = Capture("real.json", {}, "tiny");
  json fake = Capture("fake.json", {"--fake"}, "tiny");
  EXPECT_FALSE(real.contains("fake"));
  EXPECT_EQ(fake["fake"], true);
  EXPECT_EQ(fake["status"], "ok");
  EXPECT_EQ(fake["total_calls"], real["total_calls"]);
  EXPECT_EQ(Calls(fake), Calls(real));  // op, arguments, output shapes, counts, places, phases
}

TEST_F(FakeE2E, ABillionParameterStepIsCapturedWithoutItsMemory) {
  // Weights, gradients and SGD's update of 1.07e9 parameters: 4.3 GB each for real; on fake tensors nothing.
  json fake = Capture("big.json", {"--fake"}, "1b");
  EXPECT_EQ(fake["status"], "ok");
  bool lm_head = false;
  for (const auto& c : fake["calls"])
    for (const auto& o : c["outputs"])
      if (o.value("kind", "") == "tensor" && o["shape"] == json::array({32000, 4096})) lm_head = true;
  EXPECT_TRUE(lm_head) << "the output layer's weight is recorded at its full size";
  // And the analysis takes --fake too.
  auto r = RunOpprobe({"analyze", "--fake", "--backend", "rules:cpu", "--no-progress", "-q", "-o", Path("r.json"), "--",
                       Torch2(), kDecoder, "1b"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(ReadWholeFile(Path("r.json")))["support_percentage"], "100.00%");
}

TEST_F(FakeE2E, AScriptThatNeedsAValueStopsAtItsLineInOneLine) {
  const std::string script = Path("needs_value.py");
  std::ofstream(script) << "import torch\n"
                           "x = torch.randn(4, 4)\n"
                           "loss = (x @ x).sum()\n"
                           "print('loss', loss.item())\n";
  auto r = RunOpprobe(
      {"analyze", "--fake", "--backend", "rules:cpu", "--no-progress", "-o", Path("r.json"), "--", Torch2(), script});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the script failed at " + script +
                               ":4 (NeedsAValue: --fake: the script needs a "
                               "tensor's value here (aten._local_scalar_dense"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("Traceback"))) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  json report = json::parse(ReadWholeFile(Path("r.json")));  // the partial analysis of the calls before it
  EXPECT_EQ(report["capture"]["line"], 4);
  EXPECT_EQ(report["capture"]["exception_type"], "NeedsAValue");
}

TEST_F(FakeE2E, PyTorch113SaysItNeeds2x) {
  auto r = RunOpprobe({"capture", "--fake", "-o", Path("t.json"), "--", "/usr/bin/python3", kDecoder});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--fake needs PyTorch 2.x"));
  EXPECT_FALSE(std::ifstream(Path("t.json")).good());
}

TEST_F(FakeE2E, AModelBuiltOnTheMetaDeviceStaysThereUnderTheCapture) {
  // torch.set_default_device("meta") builds the 1e9-parameter model without its memory; the capture's stand-ins used
  // to hide the default device from the factories, and the model was made for real (16 bytes a parameter).
  testing::ScopedEnv meta("META", "1");
  json t = Capture("meta.json", {}, "1b");
  EXPECT_EQ(t["status"], "ok");
  int meta_factories = 0;
  for (const auto& c : t["calls"])
    for (const auto& a : c["args"])
      if (a["value"].value("kind", "") == "device") {
        EXPECT_EQ(a["value"]["value"], "meta") << c.dump();
        ++meta_factories;
      }
  EXPECT_GT(meta_factories, 0);
}

}  // namespace
}  // namespace opprobe
