// End to end: `opprobe run FILE.hlo [--inputs ...] [-o OUT.json]` as a child process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace opprobe {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

constexpr const char* kModule =
    "HloModule m\n\n"
    "ENTRY main {\n"
    "  x = f32[2,2]{1,0} parameter(0)\n"
    "  y = s32[3]{0} parameter(1)\n"
    "  two = f32[] constant(2)\n"
    "  b = f32[2,2]{1,0} broadcast(two), dimensions={}\n"
    "  m = f32[2,2]{1,0} multiply(x, b)\n"
    "  n = s32[3]{0} negate(y)\n"
    "  ROOT t = (f32[2,2]{1,0}, s32[3]{0}) tuple(m, n)\n"
    "}\n";

class RunCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opprobe_run_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("m.hlo", kModule);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path Write(const std::string& name, const std::string& content) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  Result Run(const std::string& args) {
    std::string cmd = std::string(OPPROBE_BIN) + " " + args + " >" + Quote((dir_ / "out.txt").string()) + " 2>" +
                      Quote((dir_ / "err.txt").string());
    int st = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = Slurp(dir_ / "out.txt");
    r.err = Slurp(dir_ / "err.txt");
    return r;
  }
  std::string P(const std::string& name) { return Quote((dir_ / name).string()); }
  fs::path dir_;
};

TEST_F(RunCmdTest, JsonInputsPrintOutputs) {
  Write("x.json", "[[1, 2], [3, -4.5]]");
  Write("y.json", R"({"shape": [3], "dtype": "s32", "data": [1, -2, 2147483647]})");
  Result r = Run("run " + P("m.hlo") + " --inputs " + P("x.json") + " " + P("y.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "[0] f32[2,2] { {2, 4}, {6, -9} }\n[1] s32[3] {-1, 2, -2147483647}\n");
}

TEST_F(RunCmdTest, NpyInputsAndJsonOutput) {
  auto npy = [](const std::string& descr, const std::string& shape, const std::string& data) {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
  };
  float xs[4] = {0.5f, 1.0f, -1.0f, 8.0f};
  int32_t ys[3] = {7, 0, -7};
  Write("x.npy", npy("<f4", "(2, 2)", std::string(reinterpret_cast<char*>(xs), sizeof xs)));
  Write("y.npy", npy("<i4", "(3,)", std::string(reinterpret_cast<char*>(ys), sizeof ys)));
  Result r = Run("run " + P("m.hlo") + " --inputs " + P("x.npy") + " " + P("y.npy") + " -o " + P("o.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(Slurp(dir_ / "o.json"));
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["dtype"], "f32");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::array({2, 2}));
  EXPECT_EQ(j["outputs"][0]["data"], nlohmann::json::array({1.0, 2.0, -2.0, 16.0}));
  EXPECT_EQ(j["outputs"][1]["data"], nlohmann::json::array({-7, 0, 7}));
}

TEST_F(RunCmdTest, RandomInputsWhenNoneGiven) {
  Result r = Run("run " + P("m.hlo"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[0] f32[2,2] {"), std::string::npos);
  Result again = Run("run " + P("m.hlo"));
  EXPECT_EQ(r.out, again.out);
}

TEST_F(RunCmdTest, WrongInputCountIsExit2) {
  Write("x.json", "[[1, 2], [3, 4]]");
  Result r = Run("run " + P("m.hlo") + " --inputs " + P("x.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("takes 2 inputs, 1 given"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(RunCmdTest, WrongShapeIsExit2NamingTheInput) {
  Write("x.json", "[[1, 2, 3], [3, 4, 5]]");
  Write("y.json", "[1, 2, 3]");
  Result r = Run("run " + P("m.hlo") + " --inputs " + P("x.json") + " " + P("y.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input 0 (x"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("shape f32[2,3]"), std::string::npos) << r.err;
}

TEST_F(RunCmdTest, WrongDtypeIsExit2NamingTheInput) {
  Write("x.json", "[[1, 2], [3, 4]]");
  Write("y.json", R"({"shape": [3], "dtype": "f32", "data": [1, 2, 3]})");
  Result r = Run("run " + P("m.hlo") + " --inputs " + P("x.json") + " " + P("y.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input 1 (y"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dtype f32 where s32 is expected"), std::string::npos) << r.err;
}

TEST_F(RunCmdTest, UnreadableFilesAreExit2) {
  EXPECT_EQ(Run("run " + P("missing.hlo")).code, 2);
  Write("bad.hlo", "HloModule m\nENTRY main {\n  ROOT x = f32[ parameter(0)\n}\n");
  EXPECT_EQ(Run("run " + P("bad.hlo")).code, 2);
  Write("x.json", "[[1, 2], [3");
  Write("y.json", "[1, 2, 3]");
  EXPECT_EQ(Run("run " + P("m.hlo") + " --inputs " + P("x.json") + " " + P("y.json")).code, 2);
}

TEST_F(RunCmdTest, CustomCallIsExit3) {
  Write("cc.hlo",
        "HloModule m\n\nENTRY main {\n  x = f32[2]{0} parameter(0)\n"
        "  ROOT c = f32[2]{0} custom-call(x), custom_call_target=\"my_unknown_kernel\"\n}\n");
  Result r = Run("run " + P("cc.hlo"));
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("my_unknown_kernel"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace opprobe
