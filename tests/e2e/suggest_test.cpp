// Issue 31 with the real binary: `analyze --suggest` on real scripts. The seed's unsupported.py (AWS Neuron's tutorial
// example: an FFT and a complex multiply) gets a verified rewrite for both groups on rules:neuron-trn1, and the script
// rewritten as suggested analyzes at 100% there; each rewrite family on a backend that refuses the original call and
// accepts the rewrite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/json_schema.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;

constexpr const char* kPython = "/usr/bin/python3";  // Debian's PyTorch 1.13
constexpr const char* kFamilies = "tests/e2e/scripts/suggest/families.py";

class SuggestE2E : public testing::TempDirTest {
 protected:
  // `opprobe analyze --suggest` with `args` (backend, input); the JSON report.
  json Analyze(std::vector<std::string> args, bool suggest = true, int expected_exit = 0) {
    std::vector<std::string> all = {"analyze", "--no-cache", "--no-progress", "-o", Path("r.json")};
    if (suggest) all.push_back("--suggest");
    for (const auto& f : formats_) all.push_back(f);
    all.insert(all.end(), args.begin(), args.end());
    last_ = RunOpprobe(all);
    EXPECT_EQ(last_.exit_code, expected_exit) << last_.err << last_.out;
    std::string text = ReadWholeFile(Path("r.json"));
    return text.empty() ? json() : json::parse(text);
  }
  json Family(const std::string& backend, const std::string& family) {
    return Analyze({"--backend", backend, "--", kPython, kFamilies, family});
  }
  // The numerics of every verified suggestion of the last report against PyTorch (numerics.py, with PyTorch 2.x:
  // torch.nonzero_static is 2.1's), at the conformance suite's tolerances; `checked` of them compared.
  void ExpectNumerics(int checked) {
    const char* python = std::getenv("OPPROBE_TORCH2_PYTHON");
    ASSERT_TRUE(python && *python) << "OPPROBE_TORCH2_PYTHON is not set (scripts/test creates the torch2 environment)";
    auto r = testing::RunProgram({python, "tests/e2e/scripts/suggest/numerics.py", Path("r.json")});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(std::to_string(checked) + " checked, 0 mismatched"), std::string::npos) << r.out << r.err;
  }
  // The unsupported entries of `kind` (a derived entry, `part_of`, left out).
  static std::vector<json> Entries(const json& r, const std::string& kind) {
    std::vector<json> out;
    for (const auto& e : r["unsupported_operators"]["aten"])
      if (e["kind"] == kind && !e.contains("part_of")) out.push_back(e);
    return out;
  }
  // The entry's suggestion of rewrite `id`, null when there is none.
  static json Suggestion(const json& entry, const std::string& id) {
    if (!entry.contains("suggestions")) return json();
    for (const auto& s : entry["suggestions"])
      if (s["rewrite"] == id) return s;
    return json();
  }
  // Every unsupported entry of `kind` carries rewrite `id`, verified on `backend`, listed before any unverified one.
  void ExpectVerified(const json& r, const std::string& kind, const std::string& id, const std::string& backend) {
    auto entries = Entries(r, kind);
    ASSERT_FALSE(entries.empty()) << kind << " is not unsupported: " << r["unsupported_operators"].dump(1);
    for (const auto& e : entries) {
      json s = Suggestion(e, id);
      ASSERT_TRUE(s.is_object()) << kind << " has no " << id << ": " << e.dump(1);
      EXPECT_EQ(s["verified"], true) << e.dump(1);
      EXPECT_EQ(s["backend"], backend);
      EXPECT_EQ(s["supported_fraction"], 1.0);
      EXPECT_FALSE(s["python"].get<std::string>().empty());
      EXPECT_FALSE(s["title"].get<std::string>().empty());
      EXPECT_FALSE(s["changes"].get<std::string>().empty());
      EXPECT_EQ(e["suggestions"][0]["verified"], true) << "verified ones come first: " << e.dump(1);
    }
  }
  std::vector<std::string> formats_;
  testing::RunResult last_;
};

TEST_F(SuggestE2E, SeedBothGroupsGetAVerifiedRewriteAndTheRewrittenScriptIsAt100) {
  formats_ = {"--format=text=" + Path("r.txt"), "--format=markdown=" + Path("r.md"), "--format=html=" + Path("r.html"),
              "--format=github=" + Path("r.gh"), "--format=sarif=" + Path("r.sarif")};
  json r = Analyze({"--backend", "rules:neuron-trn1", "--", kPython, "samples/scripts/unsupported.py"});
  ASSERT_TRUE(r.is_object());
  // The FFT (torch.fft.fft of a real tensor) and the complex multiply, each at its own line.
  ExpectVerified(r, "aten::_fft_r2c", "fft-as-dft-matmul", "rules:neuron-trn1");
  ExpectVerified(r, "aten::mul", "complex-as-real-pairs", "rules:neuron-trn1");
  // The same complex rewrite does not help an FFT (there is none for it), and an f64 rewrite does not apply.
  for (const auto& e : r["unsupported_operators"]["aten"]) {
    EXPECT_TRUE(e.contains("suggestions")) << e.dump(1);
    EXPECT_TRUE(Suggestion(e, "f64-as-f32").is_null()) << e.dump(1);
  }
  // The real percentage stays the analysis's; the what-if stands beside it, labelled.
  EXPECT_EQ(r["support_percentage"], "50.00%");
  EXPECT_EQ(r["what_if_support_percentage"], "100.00%") << r.dump(1);
  EXPECT_NE(r["what_if"].get<std::string>().find("what-if: 100.00%"), std::string::npos) << r["what_if"];
  EXPECT_TRUE(r["summary"]["suggest"].contains("seconds"));
  ExpectNumerics(2);
  opprobe::testing::JsonSchemaValidator schema(json::parse(ReadWholeFile("schemas/report.schema.json")));
  auto errors = schema.Validate(r);
  EXPECT_TRUE(errors.empty()) << errors.front();
  // Every format: the group's line, the title, the Python, what changes, the what-if.
  for (const char* file : {"r.txt", "r.md", "r.html"}) {
    std::string text = ReadWholeFile(Path(file));
    for (size_t at = text.find("\\_"); at != std::string::npos; at = text.find("\\_", at)) text.erase(at, 1);  // md
    EXPECT_NE(text.find("Suggested rewrites"), std::string::npos) << file << text;
    EXPECT_NE(text.find("unsupported.py:9"), std::string::npos) << file;
    EXPECT_NE(text.find("unsupported.py:11"), std::string::npos) << file;
    EXPECT_NE(text.find("FFT as a real DFT-matrix product"), std::string::npos) << file;
    EXPECT_NE(text.find("complex arithmetic as real arithmetic on view_as_real pairs"), std::string::npos) << file;
    EXPECT_NE(text.find("x.unsqueeze(-1) * y_ri"), std::string::npos) << file;
    EXPECT_NE(text.find("what-if: 100.00%"), std::string::npos) << file;
    EXPECT_NE(text.find("verified"), std::string::npos) << file;
  }

  // The formats with one message per entry carry its verified suggestion in it.
  for (const char* file : {"r.gh", "r.sarif"}) {
    std::string text = ReadWholeFile(Path(file));
    EXPECT_NE(text.find("suggested rewrite, verified on rules:neuron-trn1: FFT as a real DFT-matrix product"),
              std::string::npos)
        << file << text;
    EXPECT_NE(text.find("suggested rewrite, verified on rules:neuron-trn1: complex arithmetic"), std::string::npos)
        << file;
  }

  // The script rewritten as suggested: 100% on the same profile (and its values are the original's: it asserts so).
  formats_.clear();
  json rewritten = Analyze(
      {"--backend", "rules:neuron-trn1", "--", kPython, "tests/e2e/scripts/suggest/unsupported_rewritten.py"}, true, 0);
  ASSERT_TRUE(rewritten.is_object()) << last_.err;
  EXPECT_EQ(rewritten["support_percentage"], "100.00%") << rewritten["unsupported_operators"].dump(1);
  EXPECT_TRUE(rewritten["complete"]);
  EXPECT_TRUE(rewritten["unsupported_operators"]["aten"].empty());
  // Run without the capture, it checks its values against the original model's.
  auto check = testing::RunProgram({kPython, "tests/e2e/scripts/suggest/unsupported_rewritten.py", "--check"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("the rewritten model's values are the original's"), std::string::npos) << check.out;
}

TEST_F(SuggestE2E, EachTargetIsSuggestedForOnItsOwnBackend) {
  json r = Analyze(
      {"--backend", "rules:neuron-trn1", "--backend", "rules:tpu", "--", kPython, "samples/scripts/unsupported.py"});
  ASSERT_TRUE(r.is_object());
  ASSERT_EQ(r["targets"].size(), 2u);
  EXPECT_EQ(r["targets"][0]["what_if_support_percentage"], "100.00%");
  for (const auto& e : r["targets"][0]["unsupported_operators"]["aten"])
    EXPECT_EQ(e["suggestions"][0]["backend"], "rules:neuron-trn1") << e.dump(1);
  EXPECT_TRUE(r["targets"][1]["unsupported_operators"]["aten"].empty());  // TPU takes it as it is
  EXPECT_FALSE(r["targets"][1].contains("what_if"));
  opprobe::testing::JsonSchemaValidator schema(json::parse(ReadWholeFile("schemas/report.schema.json")));
  auto errors = schema.Validate(r);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(SuggestE2E, WithoutTheFlagNothingIsSuggested) {
  json r = Analyze({"--backend", "rules:neuron-trn1", "--", kPython, "samples/scripts/unsupported.py"}, false);
  ASSERT_TRUE(r.is_object());
  EXPECT_FALSE(r.contains("what_if_support_percentage"));
  EXPECT_FALSE(r["summary"].contains("suggest"));
  for (const auto& e : r["unsupported_operators"]["aten"]) EXPECT_FALSE(e.contains("suggestions")) << e.dump(1);
}

TEST_F(SuggestE2E, F64AsF32OnADeviceWithoutDoublePrecision) {
  json r = Family("rules:tests/e2e/scripts/suggest/no_f64.json", "f64");
  ASSERT_TRUE(r.is_object());
  ExpectVerified(r, "aten::exp", "f64-as-f32", "rules:no-f64");
  json s = Suggestion(Entries(r, "aten::exp")[0], "f64-as-f32");
  EXPECT_EQ(s["exact"], false);
  EXPECT_NE(s["changes"].get<std::string>().find("7 significant digits"), std::string::npos) << s.dump(1);
  ExpectNumerics(1);
}

TEST_F(SuggestE2E, S64AsS32ForAnIntegerMatmulOnTrn1) {
  json r = Family("rules:neuron-trn1", "s64");
  ASSERT_TRUE(r.is_object());
  auto entries = Entries(r, "aten::mm");
  if (entries.empty()) entries = Entries(r, "aten::matmul");
  ASSERT_FALSE(entries.empty()) << r["unsupported_operators"].dump(1);
  json s = Suggestion(entries[0], "s64-as-s32");
  ASSERT_TRUE(s.is_object()) << entries[0].dump(1);
  EXPECT_EQ(s["verified"], true) << s.dump(1);
  EXPECT_EQ(s["exact"], true);
  ExpectNumerics(1);
}

TEST_F(SuggestE2E, S64AsS32IsTriedAndRefusedWhereInt32DotsAreRefusedToo) {
  json r = Family("rules:neuron-trn2", "s64");  // trn2 refuses 32-bit integer dots as well
  ASSERT_TRUE(r.is_object());
  auto entries = Entries(r, "aten::mm");
  ASSERT_FALSE(entries.empty()) << r["unsupported_operators"].dump(1);
  json s = Suggestion(entries[0], "s64-as-s32");
  ASSERT_TRUE(s.is_object()) << entries[0].dump(1);
  EXPECT_EQ(s["verified"], false);
  EXPECT_LT(s["supported_fraction"].get<double>(), 1.0);
  EXPECT_NE(s["refusal"].get<std::string>().find("dot"), std::string::npos) << s.dump(1);
  EXPECT_EQ(r["what_if"], "what-if: no verified suggestion to apply");
}

TEST_F(SuggestE2E, C128FftAsC64OnTpu) {
  json r = Family("rules:tpu", "c128");
  ASSERT_TRUE(r.is_object());
  ExpectVerified(r, "aten::_fft_r2c", "c128-fft-as-c64", "rules:tpu");
  ExpectNumerics(2);  // and the DFT-matrix product in f64 pairs, which TPU's f64 dots accept too
}

// The real TPU compiler (libtpu, no chip: scripts/test sets OPPROBE_LIBTPU) judges the rewrites as it judged the call:
// its c128 FFT fails to compile, the c64 FFT and the DFT-matrix product in f64 pairs compile.
TEST_F(SuggestE2E, C128FftOnTheRealTpuCompiler) {
  const char* libtpu = std::getenv("OPPROBE_LIBTPU");
  ASSERT_TRUE(libtpu && *libtpu) << "OPPROBE_LIBTPU is not set: scripts/test installs requirements/tpu.txt";
  json r = Family("tpu:v5e", "c128");
  ASSERT_TRUE(r.is_object());
  ExpectVerified(r, "aten::_fft_r2c", "c128-fft-as-c64", "tpu:v5e");
  ExpectVerified(r, "aten::_fft_r2c", "fft-as-dft-matmul", "tpu:v5e");
}

TEST_F(SuggestE2E, DataDependentShapesAsStaticFormsOnTrn1) {
  json r = Family("rules:neuron-trn1", "dynamic");
  ASSERT_TRUE(r.is_object());
  ExpectVerified(r, "aten::nonzero", "static-shape", "rules:neuron-trn1");
  ExpectVerified(r, "aten::masked_select", "static-shape", "rules:neuron-trn1");
  ExpectVerified(r, "aten::_unique2", "static-shape", "rules:neuron-trn1");
  json s = Suggestion(Entries(r, "aten::nonzero")[0], "static-shape");
  EXPECT_NE(s["python"].get<std::string>().find("torch.nonzero_static(x, size=6, fill_value=-1)"), std::string::npos)
      << s.dump(1);
  ExpectNumerics(3);
}

TEST_F(SuggestE2E, LinearAlgebraWithoutCustomCallsOnTrn1) {
  json r = Family("rules:neuron-trn1", "linalg");
  ASSERT_TRUE(r.is_object());
  ExpectVerified(r, "aten::linalg_qr", "linalg-plain", "rules:neuron-trn1");
  ExpectVerified(r, "aten::_linalg_eigh", "linalg-plain", "rules:neuron-trn1");
  ExpectVerified(r, "aten::_linalg_svd", "linalg-plain", "rules:neuron-trn1");
  ExpectNumerics(3);
}

TEST_F(SuggestE2E, OpsOutsideAtenOnTheCpuWithTheirTransfers) {
  json r = Family("rules:neuron-trn1", "custom");
  ASSERT_TRUE(r.is_object());
  ExpectVerified(r, "torchvision::nms", "cpu-fallback", "rules:neuron-trn1");
  ExpectVerified(r, "mylib::my_op", "cpu-fallback", "rules:neuron-trn1");  // a torch.library op
  EXPECT_NE(Suggestion(Entries(r, "mylib::my_op")[0], "cpu-fallback")["python"].get<std::string>().find(
                "out = torch.ops.mylib.my_op.default(x.cpu()).to(x.device)"),
            std::string::npos);
  json s = Suggestion(Entries(r, "torchvision::nms")[0], "cpu-fallback");
  EXPECT_EQ(s["instructions"], 0);
  // 3x4 f32 boxes and 3 f32 scores to the host (60 B), the kept indices back.
  EXPECT_NE(s["changes"].get<std::string>().find("moves 60 B to the host"), std::string::npos) << s.dump(1);
  // torchvision.ops.nms calls the op inside torchvision: the registration for the device, then the user's own form.
  EXPECT_NE(s["python"].get<std::string>().find("torch.library.impl(\"torchvision::nms\", \"XLA\")"), std::string::npos)
      << s.dump(1);
  EXPECT_NE(s["python"].get<std::string>().find("out = torch.ops.torchvision.nms.default(x.cpu(), y.cpu(), 0.5)"),
            std::string::npos)
      << s.dump(1);
  ExpectNumerics(1);
}

TEST_F(SuggestE2E, ACallInsideALibraryGetsATorchLibraryRegistration) {
  json r = Analyze({"--backend", "rules:neuron-trn1", "--", kPython, "tests/e2e/scripts/suggest/library_call.py"});
  ASSERT_TRUE(r.is_object());
  ExpectVerified(r, "aten::linalg_qr", "linalg-plain", "rules:neuron-trn1");
  const json e = Entries(r, "aten::linalg_qr")[0];
  EXPECT_EQ(e["library_place"], "fakelinalg/__init__.py:7");
  const std::string python = Suggestion(e, "linalg-plain")["python"];
  EXPECT_NE(python.find("the call is made inside a library (fakelinalg/__init__.py:7"), std::string::npos) << python;
  EXPECT_NE(python.find("_lib.impl(\"linalg_qr\", lambda A, mode=\"reduced\": qr_gram_schmidt(A), \"XLA\")"),
            std::string::npos)
      << python;
  ExpectNumerics(1);  // and the registration, run for the CPU, stands in for torch.linalg.qr
}

}  // namespace
}  // namespace opprobe
