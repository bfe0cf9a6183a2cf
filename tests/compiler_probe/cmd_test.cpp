#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "compiler_probe/cmd/cmd_backend.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/subprocess.h"
#include "hlo/builder.h"
#include "hlo/probe_unit.h"
#include "hlo/proto_io.h"

namespace opprobe::compiler_probe::cmd {
namespace {

namespace fs = std::filesystem;
using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;

std::unique_ptr<hlo::Module> BinaryUnit(Opcode op, PrimitiveType type = PrimitiveType::F32) {
  hlo::Builder b("m");
  auto* x = b.Parameter(0, Shape::Array(type, {4}));
  auto* y = b.Parameter(1, Shape::Array(type, {4}));
  auto module = b.Build(b.Binary(op, x, y));
  return hlo::MakeProbeModule(*module->entry()->root());
}

std::string Fake(const std::string& flags) { return std::string(OPPROBE_FAKE_COMPILER) + " " + flags; }

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("opprobe-cmd-test-" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::unique_ptr<Backend> Make(const std::string& tmpl, double timeout = 30.0, const std::string& work_dir = "") {
  BackendOptions o;
  o.probe_timeout_seconds = timeout;
  o.work_dir = work_dir;
  auto b = CreateCmdBackend(tmpl, o);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? std::move(b).value() : nullptr;
}

TEST(SplitCommandLineTest, QuotingRules) {
  auto w = SplitCommandLine(R"(cc  -x 'a b' "c \"d\" \$e" f\ g '' "{hlo_txt}"x)");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(*w, (std::vector<std::string>{"cc", "-x", "a b", "c \"d\" $e", "f g", "", "{hlo_txt}x"}));
  EXPECT_EQ(*SplitCommandLine("  "), std::vector<std::string>{});
  EXPECT_EQ(*SplitCommandLine(R"('a\b')"), std::vector<std::string>{"a\\b"});
  EXPECT_EQ(*SplitCommandLine(R"("a\b")"), std::vector<std::string>{"a\\b"});
  EXPECT_FALSE(SplitCommandLine("cc 'open").ok());
  EXPECT_FALSE(SplitCommandLine("cc \"open").ok());
  EXPECT_FALSE(SplitCommandLine("cc \\").ok());
}

TEST(CmdBackendTest, TemplateWithoutPlaceholderIsBackendUnavailable) {
  auto b = CreateCmdBackend(Fake("--sleep=0"), {});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("no placeholder"), std::string::npos) << b.status().message();
}

TEST(CmdBackendTest, MissingCompilerIsBackendUnavailable) {
  auto b = CreateCmdBackend("opprobe-no-such-compiler {hlo_txt}", {});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("'opprobe-no-such-compiler' not found on PATH"), std::string::npos)
      << b.status().message();
  auto c = CreateCmdBackend("/nonexistent/cc {hlo_txt}", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kUnavailable);
  auto d = CreateCmdBackend("", {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kUnavailable);
  auto e = CreateCmdBackend("cc 'unterminated {hlo_txt}", {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kUnavailable);
}

TEST(CmdBackendTest, CreatedThroughTheBuiltinRegistry) {
  auto b = Registry::Builtin().Create("cmd:" + Fake("{hlo_txt}"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*b)->id(), "cmd:" + Fake("{hlo_txt}"));
  auto missing = Registry::Builtin().Create("cmd:opprobe-no-such-compiler {hlo_txt}");
  EXPECT_EQ(missing.status().code(), ErrorCode::kUnavailable);
}

TEST(CmdBackendTest, VersionUsesTheCompilersVersionLineAndTheTemplate) {
  auto a = Make(Fake("{hlo_txt}"));
  auto b = Make(Fake("--reject-opcode=add {hlo_txt}"));
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->version().find("fake_compiler 1.0 (opprobe test program)"), std::string::npos) << a->version();
  EXPECT_EQ(a->version().find("second line"), std::string::npos);
  EXPECT_NE(a->version(), b->version());
  // A program without a working --version is identified by its size and mtime.
  auto c = Make("false {hlo_txt}");
  ASSERT_TRUE(c);
  EXPECT_NE(c->version().find("size="), std::string::npos) << c->version();
}

TEST(CmdBackendTest, AcceptsAndRejectsByOpcode) {
  auto b = Make(Fake("--reject-opcode=multiply {hlo_txt}"));
  ASSERT_TRUE(b);
  Verdict add = b->probe(*BinaryUnit(Opcode::kAdd));
  EXPECT_EQ(add.kind, Verdict::Kind::kSupported) << add.reason;
  EXPECT_GT(add.seconds, 0.0);
  Verdict mul = b->probe(*BinaryUnit(Opcode::kMultiply));
  EXPECT_EQ(mul.kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(mul.reason, "exit status 1: compiling {workdir}/" + hlo::Fingerprint(*BinaryUnit(Opcode::kMultiply)) +
                            ".hlo | error: opcode multiply is not supported");
  EXPECT_NE(mul.output_tail.find("compiling "), std::string::npos);
}

TEST(CmdBackendTest, RejectsByElementType) {
  auto b = Make(Fake("--reject-type=f64 {hlo_txt}"));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::F32)).supported());
  Verdict v = b->probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::F64));
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("element type f64 is not supported"), std::string::npos) << v.reason;
}

TEST(CmdBackendTest, CrashIsAnErrorWithTheSignal) {
  auto b = Make(Fake("--crash-opcode=subtract {hlo_txt}"));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd)).supported());
  Verdict v = b->probe(*BinaryUnit(Opcode::kSubtract));
  EXPECT_EQ(v.kind, Verdict::Kind::kError);
  EXPECT_NE(v.reason.find("killed by signal 11 (SIGSEGV)"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("internal error while lowering subtract"), std::string::npos) << v.reason;
}

TEST(CmdBackendTest, HangIsAnErrorAfterTheTimeout) {
  auto b = Make(Fake("--hang-opcode=divide {hlo_txt}"), 0.5);
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kDivide));
  EXPECT_EQ(v.kind, Verdict::Kind::kError);
  EXPECT_NE(v.reason.find("timed out"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("probe timeout 0.5 s"), std::string::npos) << v.reason;
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd)).supported());
}

TEST(CmdBackendTest, GarbageOutputBecomesValidText) {
  auto b = Make(Fake("--garbage {hlo_txt}"));
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kAdd));
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(v.reason.rfind("exit status 2", 0), 0u) << v.reason;
  EXPECT_EQ(SanitizeOutput(v.reason), v.reason);
  EXPECT_EQ(SanitizeOutput(v.output_tail), v.output_tail);
  EXPECT_LE(v.reason.size(), 420u);
}

TEST(CmdBackendTest, MegabytesOfOutputAreBounded) {
  auto b = Make(Fake("--flood=8000000 --reject-opcode=add {hlo_txt}"));
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kAdd));
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("opcode add is not supported"), std::string::npos) << v.reason.substr(0, 200);
  EXPECT_LE(v.output_tail.size(), 4096u);
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kMultiply)).supported());
}

TEST(CmdBackendTest, PlaceholdersAreSubstitutedInsideWordsAndWorkdirsAreRemoved) {
  TempDir tmp;
  auto unit = BinaryUnit(Opcode::kAdd);
  std::string fp = hlo::Fingerprint(*unit);
  // The script checks that the text file is long-style HLO in the work dir named after the fingerprint.
  auto b = Make(
      "sh -c 'test \"$1\" = \"$2/$3.hlo\" && test -d \"$2\" && grep -q \"ROOT %add = \" \"$1\" && "
      "test \"$(pwd)\" = \"$2\" || { echo bad args \"$@\" >&2; exit 1; }' sh {hlo_txt} {workdir} "
      "--fp={fingerprint}",
      30.0, tmp.path.string());
  ASSERT_TRUE(b);
  Verdict v = b->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported) << "the --fp= prefix must stay: " << v.reason;
  EXPECT_NE(v.reason.find("--fp=" + fp), std::string::npos) << v.reason;
  auto ok = Make(
      "sh -c 'test \"$1\" = \"$2/$3.hlo\" && grep -q \"ROOT %add = \" \"$1\" && test \"$(pwd)\" = \"$2\"' "
      "sh {hlo_txt} {workdir} {fingerprint}",
      30.0, tmp.path.string());
  ASSERT_TRUE(ok);
  Verdict w = ok->probe(*unit);
  EXPECT_TRUE(w.supported()) << w.reason;
  EXPECT_TRUE(fs::is_empty(tmp.path));
}

TEST(CmdBackendTest, WritesTheHloProtoForHloPb) {
  auto b = Make(Fake("--pb={hlo_pb} {hlo_txt}"));
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kAdd));
  EXPECT_TRUE(v.supported()) << v.reason;
  // The file is an HloProto that the project's reader accepts.
  auto check = Make("sh -c 'cp \"$1\" \"$2\"' sh {hlo_pb} " +
                    (fs::temp_directory_path() / "opprobe-cmd-test-unit.hlo.pb").string());
  ASSERT_TRUE(check);
  ASSERT_TRUE(check->probe(*BinaryUnit(Opcode::kAdd)).supported());
  std::ifstream f(fs::temp_directory_path() / "opprobe-cmd-test-unit.hlo.pb", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  fs::remove(fs::temp_directory_path() / "opprobe-cmd-test-unit.hlo.pb");
  auto module = hlo::ModuleFromProtoBytes(bytes, "unit.hlo.pb");
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(hlo::Fingerprint(**module), hlo::Fingerprint(*BinaryUnit(Opcode::kAdd)));
}

TEST(CmdBackendTest, ProbesRunConcurrently) {
  auto b = Make(Fake("--reject-opcode=multiply {hlo_txt}"));
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->thread_safe());
  std::vector<std::thread> threads;
  std::vector<int> results(8, -1);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Verdict v = b->probe(*BinaryUnit(t % 2 ? Opcode::kMultiply : Opcode::kAdd));
      results[static_cast<size_t>(t)] = static_cast<int>(v.kind);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t)
    EXPECT_EQ(results[static_cast<size_t>(t)],
              static_cast<int>(t % 2 ? Verdict::Kind::kUnsupported : Verdict::Kind::kSupported));
}

}  // namespace
}  // namespace opprobe::compiler_probe::cmd
