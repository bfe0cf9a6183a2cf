// The iree:llvm-cpu backend against IREE's real compiler and runtime (iree-base-compiler and iree-base-runtime in the
// environment scripts/test makes from requirements/iree.txt, layered on requirements/xla.txt's jaxlib, and names with
// OPPROBE_IREE_PYTHON), plus a fake iree-compile (IREE_TOOL_PATH, IREE's own override) for a compiler crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler_probe/iree/iree_backend.h"
#include "hlo/builder.h"
#include "hlo/parser.h"
#include "hlo/probe_unit.h"
#include "testing/probe_units.h"
#include "testing/scoped_env.h"
#include "testing/temp_dir_test.h"

namespace opprobe::compiler_probe::iree {
namespace {

using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;
using testing::ScopedEnv;

using testing::BinaryUnit;
using testing::MustCreateBackend;
using testing::ParseUnit;

TEST(IreeSpec, ParsesPlatformAndPython) {
  auto s = worker::ParsePythonWorkerSpec(kIreeEnvironment, "llvm-cpu,python=/opt/py/bin/python");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->platform, "llvm-cpu");
  EXPECT_EQ(s->python, "/opt/py/bin/python");
  auto bad = Registry::Builtin().Create("iree:vulkan-spirv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(bad.status().message(),
            "iree backend: unknown platform 'vulkan-spirv' in 'iree:vulkan-spirv' (expected "
            "iree:llvm-cpu[,python=PATH])");
  auto bad_opt = Registry::Builtin().Create("iree:llvm-cpu,cpu=host");
  ASSERT_FALSE(bad_opt.ok());
  EXPECT_NE(bad_opt.status().message().find("unknown option 'cpu=host'"), std::string::npos);
}

TEST(IreeBackend, MissingPythonIsUnavailableWithTheInstallCommand) {
  auto b = Registry::Builtin().Create("iree:llvm-cpu,python=/nonexistent/venv/bin/python");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("-m venv /nonexistent/venv && /nonexistent/venv/bin/python -m pip install -r "
                                      "requirements/xla.txt -r requirements/iree.txt"),
            std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("OPPROBE_IREE_PYTHON"), std::string::npos) << b.status().message();
}

TEST(IreeBackend, PythonWithoutIreeIsUnavailableWithTheInstallCommand) {
  // Debian's Python has neither jaxlib nor IREE (-I keeps user site folders out).
  auto b = Registry::Builtin().Create("iree:llvm-cpu,python=/usr/bin/python3");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("iree backend: IREE is not usable in /usr/bin/python3"), std::string::npos)
      << b.status().message();
  EXPECT_NE(
      b.status().message().find("/usr/bin/python3 -m pip install -r requirements/xla.txt -r requirements/iree.txt"),
      std::string::npos);
}

TEST(IreeBackend, VersionNamesIreeAndJaxlibAndInstallationIsDescribed) {
  auto b = MustCreateBackend("iree:llvm-cpu");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id(), "iree:llvm-cpu");
  EXPECT_EQ(b->version().rfind("IREE 3.13.0 (", 0), 0u) << b->version();
  EXPECT_NE(b->version().find("llvm-cpu, host CPU; StableHLO from jaxlib 0.10.2); evaluator "), std::string::npos)
      << b->version();
  EXPECT_EQ(DescribeInstallation().rfind("iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jaxlib 0.10.2 (", 0), 0u)
      << DescribeInstallation();
}

TEST(IreeBackend, CompilesRunsAndAgreesWithInterp) {
  auto b = MustCreateBackend("iree:llvm-cpu");
  ASSERT_TRUE(b);
  // f64 stays f64 (IREE would demote it to f32 by default: the worker turns that off).
  for (PrimitiveType t :
       {PrimitiveType::F32, PrimitiveType::F64, PrimitiveType::S64, PrimitiveType::BF16, PrimitiveType::C64}) {
    Verdict v = b->probe(*BinaryUnit(Opcode::kMultiply, t, {2, 3}));
    EXPECT_TRUE(v.supported()) << hlo::PrimitiveTypeName(t) << ": " << v.reason;
    EXPECT_EQ(v.output_tail, "compared with interp: 1 output agree") << hlo::PrimitiveTypeName(t);
  }
  Verdict compare = b->probe(*ParseUnit(R"(HloModule c
ENTRY e { p0 = f32[3] parameter(0)  p1 = f32[3] parameter(1)  ROOT r = pred[3] compare(p0, p1), direction=LT })"));
  EXPECT_TRUE(compare.supported()) << compare.reason;
  EXPECT_EQ(compare.output_tail, "compared with interp: 1 output agree");
  Verdict reduce = b->probe(*ParseUnit(R"(HloModule r
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e { p0 = f32[2,1000] parameter(0)  p1 = f32[] parameter(1)
  ROOT r = f32[2] reduce(p0, p1), dimensions={1}, to_apply=add })"));
  EXPECT_TRUE(reduce.supported()) << reduce.reason;
  EXPECT_EQ(reduce.output_tail, "compared with interp: 1 output agree");
  // A padded integer reduce-window pads with its init, which the backend makes the reducer's identity (a random
  // init is implementation-defined: IREE gave 8 where interp gave 2); a set-dimension-size gets its bound as the
  // size, so IREE's output (returned at its dynamic size) has interp's shape.
  for (const char* text : {R"(HloModule rw
max_s64 { a = s64[] parameter(0)  b = s64[] parameter(1)  ROOT m = s64[] maximum(a, b) }
ENTRY e { p0 = s64[5,5,5] parameter(0)  p1 = s64[] parameter(1)
  ROOT r = s64[5,5,5] reduce-window(p0, p1), window={size=1x1x5 pad=0_0x0_0x4_0}, to_apply=max_s64 })",
                           R"(HloModule sds
ENTRY e { p0 = s64[25,2] parameter(0)  p1 = s32[] parameter(1)
  ROOT s = s64[<=25,2] set-dimension-size(p0, p1), dimensions={0} })"}) {
    Verdict v = b->probe(*ParseUnit(text));
    EXPECT_TRUE(v.supported()) << text << "\n" << v.reason;
    EXPECT_EQ(v.output_tail, "compared with interp: 1 output agree") << text;
  }
}

TEST(IreeBackend, UnitIreeRefusesIsUnsupportedWithIreesMessage) {
  auto b = MustCreateBackend("iree:llvm-cpu");
  ASSERT_TRUE(b);
  Verdict v = b->probe(*ParseUnit(R"(HloModule c
ENTRY e { p0 = f32[4] parameter(0)
  ROOT r = f32[4] custom-call(p0), custom_call_target="opprobe_no_such_target" })"));
  ASSERT_EQ(v.kind, Verdict::Kind::kUnsupported) << v.reason;
  EXPECT_EQ(v.reason.rfind("compile: INVALID_ARGUMENT: iree-compile: failed to legalize operation "
                           "'stablehlo.custom_call'",
                           0),
            0u)
      << v.reason;
  EXPECT_NE(v.reason.find("opprobe_no_such_target"), std::string::npos) << v.reason;
}

class IreeCrash : public testing::TempDirTest {};

// iree-compile runs in a child process of the worker; when it crashes, the worker ends with the same signal, so the
// unit is an `error` verdict (unknown, not unsupported) naming the signal and the compiler's last words, and the next
// unit gets a new worker.
TEST_F(IreeCrash, CompilerCrashIsAnErrorVerdict) {
  {
    std::ofstream f(Path("iree-compile"));
    f << "#!/bin/sh\necho 'fake iree-compile: assertion failed in the llvm-cpu backend' >&2\nkill -SEGV $$\n";
  }
  std::filesystem::permissions(Path("iree-compile"), std::filesystem::perms::owner_all);
  ScopedEnv tools("IREE_TOOL_PATH", dir_.string());
  auto b = MustCreateBackend("iree:llvm-cpu");
  ASSERT_TRUE(b);
  auto unit = BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {2, 2});
  for (int i = 0; i < 2; ++i) {
    Verdict v = b->probe(*unit);
    ASSERT_EQ(v.kind, Verdict::Kind::kError) << v.reason;
    EXPECT_EQ(v.reason.rfind("IREE crashed: the worker was killed by signal 11 (SIGSEGV)", 0), 0u) << v.reason;
    EXPECT_NE(v.reason.find("fake iree-compile: assertion failed"), std::string::npos) << v.reason;
  }
}

}  // namespace
}  // namespace opprobe::compiler_probe::iree
