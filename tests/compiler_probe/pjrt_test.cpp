#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "compiler_probe/pjrt/pjrt_abi.h"
#include "compiler_probe/pjrt/pjrt_backend.h"
#include "compiler_probe/registry.h"
#include "hlo/builder.h"
#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe::pjrt {
namespace {

using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;
using worker::PluginOption;

const char* kPlugin = OPPROBE_TEST_PJRT_PLUGIN;

// Sets the test plugin's environment for the workers started while it lives (a worker is forked and
// reads the variables when it loads the plugin).
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [k, v] : vars) {
      const char* old = std::getenv(k);
      saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(k, v, 1);
    }
  }
  ~ScopedEnv() {
    for (auto& [k, v] : saved_) {
      if (v) ::setenv(k.c_str(), v->c_str(), 1);
      else ::unsetenv(k.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::unique_ptr<hlo::Module> BinaryUnit(Opcode op, PrimitiveType type = PrimitiveType::F32,
                                        std::vector<int64_t> dims = {2, 3}) {
  hlo::Builder b("m");
  auto* x = b.Parameter(0, Shape::Array(type, dims));
  auto* y = b.Parameter(1, Shape::Array(type, dims));
  auto module = b.Build(b.Binary(op, x, y));
  return hlo::MakeProbeModule(*module->entry()->root());
}

std::unique_ptr<hlo::Module> ReduceUnit() {
  hlo::Builder b("m");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {4, 5}));
  auto* init = b.ConstantScalar(PrimitiveType::F32, 0);
  auto* sum = b.ScalarBinaryComputation(Opcode::kAdd, PrimitiveType::F32);
  auto module = b.Build(b.Reduce({x}, {init}, {1}, sum));
  return hlo::MakeProbeModule(*module->entry()->root());
}

std::unique_ptr<Backend> Make(const std::string& arg, double timeout = 30.0) {
  BackendOptions o;
  o.probe_timeout_seconds = timeout;
  auto b = CreatePjrtBackend(arg, o);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? std::move(b).value() : nullptr;
}

TEST(PjrtBackendTest, RunsUnitsAndNamesThePluginAndItsApiVersion) {
  auto b = Make(kPlugin);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id(), std::string("pjrt:") + kPlugin);
  EXPECT_NE(b->version().find("opprobe-test"), std::string::npos) << b->version();
  EXPECT_NE(b->version().find("PJRT API 0.94"), std::string::npos) << b->version();
  EXPECT_NE(b->version().find("libopprobe_test_pjrt_plugin.so"), std::string::npos) << b->version();
  EXPECT_TRUE(b->thread_safe());  // probe threads share the one worker, one request at a time
  for (auto type : {PrimitiveType::F32, PrimitiveType::F64, PrimitiveType::S32, PrimitiveType::BF16, PrimitiveType::F16,
                    PrimitiveType::U8, PrimitiveType::C64}) {
    Verdict v = b->probe(*BinaryUnit(Opcode::kAdd, type));
    EXPECT_EQ(v.kind, Verdict::Kind::kSupported) << hlo::PrimitiveTypeName(type) << ": " << v.reason;
  }
  Verdict r = b->probe(*ReduceUnit());
  EXPECT_EQ(r.kind, Verdict::Kind::kSupported) << r.reason;
  Verdict scalar = b->probe(*BinaryUnit(Opcode::kMultiply, PrimitiveType::F32, {}));
  EXPECT_EQ(scalar.kind, Verdict::Kind::kSupported) << scalar.reason;
}

TEST(PjrtBackendTest, CreatedThroughTheBuiltinRegistryWithCreateOptions) {
  auto b = Registry::Builtin().Create(std::string("pjrt:") + kPlugin + ",label=ci,device_count=2");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE((*b)->probe(*BinaryUnit(Opcode::kAdd)).supported());
  // Plugins reject create options they do not know; that makes the backend unusable.
  auto bad = Registry::Builtin().Create(std::string("pjrt:") + kPlugin + ",bogus_option=1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(bad.status().message().find("Unexpected option name passed to PJRT_Client_Create: bogus_option"),
            std::string::npos)
      << bad.status().message();
  auto malformed = Registry::Builtin().Create(std::string("pjrt:") + kPlugin + ",novalue");
  EXPECT_EQ(malformed.status().code(), ErrorCode::kInvalidInput);
}

TEST(PjrtBackendTest, CompileFailureIsUnsupportedWithThePluginsMessage) {
  ScopedEnv env({{"OPPROBE_TEST_PJRT_FAIL_COMPILE_OPCODE", "multiply"}});
  auto b = Make(kPlugin);
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kMultiply));
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(v.reason, "compile: UNIMPLEMENTED: PJRT_Client_Compile: test plugin: opcode multiply is not supported");
  EXPECT_NE(v.output_tail.find("more detail on a second line"), std::string::npos);
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd)).supported());
}

TEST(PjrtBackendTest, ExecutionFailureIsUnsupported) {
  ScopedEnv env({{"OPPROBE_TEST_PJRT_FAIL_EXECUTE_OPCODE", "add"}});
  auto b = Make(kPlugin);
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kAdd));
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(v.reason, "execute: INTERNAL: PJRT_Event_Await: test plugin: execution of add failed");
}

TEST(PjrtBackendTest, WrongNumericsAreUnsupported) {
  ScopedEnv env({{"OPPROBE_TEST_PJRT_WRONG_NUMERICS_OPCODE", "subtract"}});
  auto b = Make(kPlugin);
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kSubtract));
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(v.reason.rfind("numerics: output 0 element [0,0]: got ", 0), 0u) << v.reason;
  EXPECT_NE(v.reason.find("(1 of 6 elements differ beyond the f32 tolerance: rtol 0.0001, atol 1e-05)"),
            std::string::npos)
      << v.reason;
  Verdict i = b->probe(*BinaryUnit(Opcode::kSubtract, PrimitiveType::S32));
  EXPECT_EQ(i.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(i.reason.find("beyond the s32 tolerance: exact"), std::string::npos) << i.reason;
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd)).supported());
}

TEST(PjrtBackendTest, PluginCrashIsAnErrorAndTheWorkerIsRestarted) {
  ScopedEnv env({{"OPPROBE_TEST_PJRT_CRASH_OPCODE", "divide"}});
  auto b = Make(kPlugin);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd)).supported());
  Verdict v = b->probe(*BinaryUnit(Opcode::kDivide));
  EXPECT_EQ(v.kind, Verdict::Kind::kError);
  EXPECT_EQ(v.reason,
            "PJRT plugin crashed: the worker was killed by signal 11 (SIGSEGV): test_plugin: segmentation fault while "
            "compiling divide");
  // The analysis goes on: the next unit gets a fresh worker.
  Verdict after = b->probe(*BinaryUnit(Opcode::kAdd));
  EXPECT_EQ(after.kind, Verdict::Kind::kSupported) << after.reason;
  EXPECT_EQ(b->probe(*BinaryUnit(Opcode::kDivide)).kind, Verdict::Kind::kError);
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kMaximum)).supported());
}

TEST(PjrtBackendTest, ThreadsShareTheWorkerAndACrashRestartsItForAll) {
  // Probe threads make their requests and judge the replies on their own; only the worker's round trip is one at a
  // time. A crash in one thread's unit is that unit's error verdict; the other threads' units still get theirs.
  ScopedEnv env({{"OPPROBE_TEST_PJRT_CRASH_OPCODE", "divide"}});
  auto b = Make(kPlugin);
  ASSERT_TRUE(b);
  const std::vector<Opcode> ops = {Opcode::kAdd, Opcode::kDivide, Opcode::kMaximum, Opcode::kMultiply};
  std::vector<std::vector<Verdict>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (Opcode op : ops) got[t].push_back(b->probe(*BinaryUnit(op)));
    });
  for (auto& t : threads) t.join();
  for (const auto& verdicts : got) {
    ASSERT_EQ(verdicts.size(), 12u);
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (ops[i % ops.size()] == Opcode::kDivide) {
        EXPECT_EQ(verdicts[i].kind, Verdict::Kind::kError) << verdicts[i].reason;
        EXPECT_NE(verdicts[i].reason.find("segmentation fault while compiling divide"), std::string::npos)
            << verdicts[i].reason;
      } else {
        EXPECT_EQ(verdicts[i].kind, Verdict::Kind::kSupported) << verdicts[i].reason;
      }
    }
  }
}

TEST(PjrtBackendTest, AForkedChildStartsItsOwnWorker) {
  // Workers start from one long-lived thread, which a fork (a Python user's multiprocessing) does not copy: the
  // child starts its workers itself instead of waiting for a thread it does not have.
  auto b = Make(kPlugin);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd)).supported());  // the starting thread exists now
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    BackendOptions o;
    auto child = CreatePjrtBackend(kPlugin, o);
    _exit(child.ok() && (*child)->probe(*BinaryUnit(Opcode::kMultiply)).supported() ? 0 : 1);
  }
  int status = 0;
  for (int i = 0; i < 600 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(50 * 1000);
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the forked child hung starting its worker";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(PjrtBackendTest, PluginHangIsAnErrorAfterTheTimeout) {
  ScopedEnv env({{"OPPROBE_TEST_PJRT_HANG_OPCODE", "maximum"}});
  auto b = Make(kPlugin, 1.0);
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kMaximum));
  EXPECT_EQ(v.kind, Verdict::Kind::kError);
  EXPECT_NE(v.reason.find("PJRT plugin timed out after"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("(probe timeout 1 s)"), std::string::npos) << v.reason;
  EXPECT_NE(v.output_tail.find("compiling maximum forever"), std::string::npos) << v.output_tail;
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd)).supported());
}

TEST(PjrtBackendTest, StructSizesAreNegotiatedByApiVersion) {
  // Exact-size plugins at versions where Client_Create (72 before 0.61) and ExecuteOptions (52, 72,
  // 80, 88, 112) had other sizes.
  for (const char* version : {"0.30", "0.40", "0.54", "0.61", "0.70", "0.77", "0.94", "0.112"}) {
    ScopedEnv env({{"OPPROBE_TEST_PJRT_API_VERSION", version}, {"OPPROBE_TEST_PJRT_STRUCT_CHECK", "exact"}});
    auto b = Make(kPlugin);
    ASSERT_TRUE(b) << version;
    EXPECT_NE(b->version().find(std::string("PJRT API ") + version), std::string::npos) << b->version();
    Verdict v = b->probe(*BinaryUnit(Opcode::kAdd));
    EXPECT_EQ(v.kind, Verdict::Kind::kSupported) << version << ": " << v.reason;
  }
}

TEST(PjrtBackendTest, UnsupportedApiVersionIsBackendUnavailable) {
  for (const char* version : {"1.0", "0.20"}) {
    ScopedEnv env({{"OPPROBE_TEST_PJRT_API_VERSION", version}});
    auto b = CreatePjrtBackend(kPlugin, {});
    ASSERT_FALSE(b.ok()) << version;
    EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
    EXPECT_NE(b.status().message().find(std::string("unsupported PJRT API version ") + version), std::string::npos)
        << b.status().message();
  }
}

TEST(PjrtBackendTest, NotAPluginIsBackendUnavailable) {
  auto missing = CreatePjrtBackend("/nonexistent/plugin.so", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("not found"), std::string::npos);

  auto empty = CreatePjrtBackend("", {});
  EXPECT_EQ(empty.status().code(), ErrorCode::kUnavailable);

  auto text = std::filesystem::temp_directory_path() / ("opprobe-not-a-plugin-" + std::to_string(::getpid()) + ".so");
  std::ofstream(text) << "this is not a shared library\n";
  auto not_elf = CreatePjrtBackend(text.string(), {});
  std::filesystem::remove(text);
  ASSERT_FALSE(not_elf.ok());
  EXPECT_EQ(not_elf.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(not_elf.status().message().find("is not a loadable PJRT plugin"), std::string::npos)
      << not_elf.status().message();

  // A real shared library without GetPjrtApi.
  for (const char* lib : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"}) {
    if (!std::filesystem::exists(lib)) continue;
    auto no_symbol = CreatePjrtBackend(lib, {});
    ASSERT_FALSE(no_symbol.ok());
    EXPECT_EQ(no_symbol.status().code(), ErrorCode::kUnavailable);
    EXPECT_NE(no_symbol.status().message().find("is not a PJRT plugin: it has no GetPjrtApi symbol"), std::string::npos)
        << no_symbol.status().message();
    break;
  }
}

TEST(PjrtBackendTest, MissingWorkerProgramIsBackendUnavailable) {
  ScopedEnv env({{"OPPROBE_PJRT_WORKER", "/nonexistent/opprobe-pjrt-worker"}});
  auto b = CreatePjrtBackend(kPlugin, {});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("OPPROBE_PJRT_WORKER"), std::string::npos) << b.status().message();
}

TEST(PjrtBackendTest, ParseSpecAndOptions) {
  auto s = ParsePjrtSpec("/p/x.so,a=1,b=true,c=0.5,d=text,e=");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->plugin_path, "/p/x.so");
  ASSERT_EQ(s->options.size(), 5u);
  EXPECT_EQ(s->options[0].type, PluginOption::Type::kInt64);
  EXPECT_EQ(s->options[0].int_value, 1);
  EXPECT_EQ(s->options[1].type, PluginOption::Type::kBool);
  EXPECT_TRUE(s->options[1].bool_value);
  EXPECT_EQ(s->options[2].type, PluginOption::Type::kFloat);
  EXPECT_FLOAT_EQ(s->options[2].float_value, 0.5f);
  EXPECT_EQ(s->options[3].type, PluginOption::Type::kString);
  EXPECT_EQ(s->options[3].string_value, "text");
  EXPECT_EQ(s->options[4].type, PluginOption::Type::kString);
  EXPECT_FALSE(ParsePjrtSpec("/p/x.so,=1").ok());
}

TEST(PjrtBackendTest, StructSizeTable) {
  auto s94 = pjrt_abi::StructSizesForMinor(94);
  EXPECT_EQ(s94.client_create, 88u);
  EXPECT_EQ(s94.execute_options, 112u);
  EXPECT_EQ(s94.error_getcode, 28u);
  EXPECT_EQ(s94.buffer_from_host, 120u);
  EXPECT_EQ(s94.execute, 80u);
  EXPECT_EQ(s94.to_host_buffer, 56u);
  auto s54 = pjrt_abi::StructSizesForMinor(54);
  EXPECT_EQ(s54.client_create, 72u);
  EXPECT_EQ(s54.execute_options, 72u);
  EXPECT_EQ(pjrt_abi::StructSizesForMinor(30).execute_options, 52u);
  EXPECT_EQ(pjrt_abi::StructSizesForMinor(70).execute_options, 80u);
  EXPECT_EQ(pjrt_abi::StructSizesForMinor(76).execute_options, 88u);
}

}  // namespace
}  // namespace opprobe::compiler_probe::pjrt
