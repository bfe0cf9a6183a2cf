// The xla:cpu backend against XLA's real CPU compiler and runtime (jaxlib in the environment scripts/test
// makes from requirements/xla.txt and names with OPPROBE_XLA_PYTHON), plus fake workers for the paths
// XLA itself does not take on demand (a crash, wrong numbers).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "compiler_probe/xla/xla_backend.h"
#include "hlo/builder.h"
#include "hlo/parser.h"
#include "hlo/probe_unit.h"
#include "testing/probe_units.h"
#include "testing/scoped_env.h"

namespace opprobe::compiler_probe::xla {
namespace {

using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;
using testing::ScopedEnv;

using testing::BinaryUnit;
using testing::MustCreateBackend;
using testing::ParseUnit;

TEST(XlaSpec, ParsesPlatformAndPython) {
  auto s = ParseXlaSpec("cpu,python=/opt/py/bin/python");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->platform, "cpu");
  EXPECT_EQ(s->python, "/opt/py/bin/python");
  auto bad = ParseXlaSpec("tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidInput);
  auto bad_opt = ParseXlaSpec("cpu,jobs=2");
  ASSERT_FALSE(bad_opt.ok());
  EXPECT_NE(bad_opt.status().message().find("unknown option 'jobs=2'"), std::string::npos);
}

TEST(XlaBackend, MissingPythonIsUnavailableWithTheInstallCommand) {
  auto b = Registry::Builtin().Create("xla:cpu,python=/nonexistent/venv/bin/python");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("-m venv /nonexistent/venv && /nonexistent/venv/bin/python -m pip install -r "
                                      "requirements/xla.txt"),
            std::string::npos)
      << b.status().message();
}

TEST(XlaBackend, PythonWithoutJaxlibIsUnavailableWithTheInstallCommand) {
  // Debian's Python has no jaxlib (-I keeps user site folders out).
  auto b = Registry::Builtin().Create("xla:cpu,python=/usr/bin/python3");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("jaxlib is not usable in /usr/bin/python3"), std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("/usr/bin/python3 -m pip install -r requirements/xla.txt"), std::string::npos);
}

TEST(XlaBackend, VersionNamesJaxlibAndInstallationIsDescribed) {
  auto b = MustCreateBackend("xla:cpu");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id(), "xla:cpu");
  EXPECT_EQ(b->version().rfind("jaxlib 0.10.2 (XLA cpu", 0), 0u) << b->version();
  EXPECT_EQ(DescribeInstallation().rfind("jaxlib 0.10.2 (", 0), 0u) << DescribeInstallation();
}

TEST(XlaBackend, CompilesRunsAndAgreesWithInterp) {
  auto b = MustCreateBackend("xla:cpu");
  ASSERT_TRUE(b);
  for (PrimitiveType t : {PrimitiveType::F32, PrimitiveType::F64, PrimitiveType::S64, PrimitiveType::BF16}) {
    Verdict v = b->probe(*BinaryUnit(Opcode::kMultiply, t, {2, 3}));
    EXPECT_TRUE(v.supported()) << v.reason;
    EXPECT_EQ(v.output_tail, "compared with interp: 1 output agree");
    EXPECT_EQ(v.interp, Verdict::Interp::kAgree);
  }
  Verdict scalar = b->probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::S64, {}));
  EXPECT_TRUE(scalar.supported()) << scalar.reason;
  // A reduction with a random init value: the backend feeds the reducer's identity so XLA and interp agree.
  Verdict reduce = b->probe(*ParseUnit(R"(HloModule r
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e { p0 = f32[2,1000] parameter(0)  p1 = f32[] parameter(1)
  ROOT r = f32[2] reduce(p0, p1), dimensions={1}, to_apply=add })"));
  EXPECT_TRUE(reduce.supported()) << reduce.reason;
}

// Inputs the backend chooses so that XLA's answer is defined: a set-dimension-size's size within [0, bound]
// (XLA's runtime dies with SIGSEGV on a negative one: this unit's random size was -6), an integer minimum's
// identity as the init of a padded reduce-window (the padding is the init), and (+-inf, 0) as the init of a
// (value, index) argmax reduction (XLA drops the init of a one-element reduction).
TEST(XlaBackend, DynamicSizesAndInitValuesAreValidInputs) {
  auto b = MustCreateBackend("xla:cpu");
  ASSERT_TRUE(b);
  EXPECT_NE(b->version().find("; inputs-3"), std::string::npos) << b->version();
  const char* units[] = {
      R"(HloModule sds
ENTRY e { p0 = f32[100] parameter(0)  p1 = s32[] parameter(1)
  ROOT s = f32[<=100] set-dimension-size(p0, p1), dimensions={0} })",
      R"(HloModule rw
min_s32 { a = s32[] parameter(0)  b = s32[] parameter(1)  ROOT m = s32[] minimum(a, b) }
ENTRY e { p0 = s32[4,5] parameter(0)  p1 = s32[] parameter(1)
  ROOT r = s32[4,5] reduce-window(p0, p1), window={size=1x5 pad=0_0x4_0}, to_apply=min_s32 })",
      R"(HloModule am
argmax { v1 = f32[] parameter(0)  i1 = s64[] parameter(1)  v2 = f32[] parameter(2)  i2 = s64[] parameter(3)
  gt = pred[] compare(v1, v2), direction=GT  eq = pred[] compare(v1, v2), direction=EQ
  lt = pred[] compare(i1, i2), direction=LT  a = pred[] and(eq, lt)  pick = pred[] or(gt, a)
  v = f32[] select(pick, v1, v2)  i = s64[] select(pick, i1, i2)  ROOT t = (f32[], s64[]) tuple(v, i) }
ENTRY e { p0 = f32[2,3,1,1,3] parameter(0)  p1 = s64[2,3,1,1,3] parameter(1)  p2 = f32[] parameter(2)
  p3 = s64[] parameter(3)
  ROOT r = (f32[2,3,1,3], s64[2,3,1,3]) reduce(p0, p1, p2, p3), dimensions={3}, to_apply=argmax })"};
  for (const char* text : units) {
    Verdict v = b->probe(*ParseUnit(text));
    EXPECT_TRUE(v.supported()) << text << "\n" << v.reason;
    EXPECT_EQ(v.output_tail.rfind("compared with interp: ", 0), 0u) << text << "\n" << v.output_tail;
  }
}

TEST(XlaBackend, ModuleWithRepeatedInstructionNamesCompiles) {
  // Two computations both have a `p.0`: XLA wants module-wide unique names; the serializer renames.
  auto b = MustCreateBackend("xla:cpu");
  ASSERT_TRUE(b);
  Verdict v = b->probe(*ParseUnit(R"(HloModule s
ge { p.0 = f32[] parameter(0)  p.1 = f32[] parameter(1)  ROOT c = pred[] compare(p.0, p.1), direction=GE }
add { p.0 = f32[] parameter(0)  p.1 = f32[] parameter(1)  ROOT s = f32[] add(p.0, p.1) }
ENTRY e { x = f32[4,4] parameter(0)  g = f32[2,2] parameter(1)  i = f32[] parameter(2)
  ROOT r = f32[4,4] select-and-scatter(x, g, i), window={size=2x2 stride=2x2}, select=ge, scatter=add })"));
  EXPECT_TRUE(v.supported()) << v.reason;
}

TEST(XlaBackend, UnitXlaRefusesIsUnsupportedWithXlasMessage) {
  auto b = MustCreateBackend("xla:cpu");
  ASSERT_TRUE(b);
  Verdict v = b->probe(*ParseUnit(R"(HloModule c
ENTRY e { p0 = f32[4] parameter(0)
  ROOT r = f32[4] custom-call(p0), custom_call_target="opprobe_no_such_target" })"));
  ASSERT_EQ(v.kind, Verdict::Kind::kUnsupported) << v.reason;
  EXPECT_EQ(v.reason.rfind("compile: ", 0), 0u) << v.reason;
  EXPECT_NE(v.reason.find("opprobe_no_such_target"), std::string::npos) << v.reason;
}

TEST(XlaBackend, RandomNumbersAreRunButNotCompared) {
  auto b = MustCreateBackend("xla:cpu");
  ASSERT_TRUE(b);
  Verdict v = b->probe(*ParseUnit(R"(HloModule g
ENTRY e { p0 = f32[] parameter(0)  p1 = f32[] parameter(1)
  ROOT r = f32[8,8] rng(p0, p1), distribution=rng_uniform })"));
  EXPECT_TRUE(v.supported()) << v.reason;
  EXPECT_EQ(v.output_tail, "not compared with interp: random numbers are implementation-defined");
  EXPECT_EQ(v.interp, Verdict::Interp::kNotCompared);
}

// A worker speaking the protocol that crashes on request, or answers zeros: the crash is an error
// verdict (and the next unit gets a new worker), wrong numbers are `numerics: ...`.
std::string FakeWorker() {
  auto dir = std::filesystem::temp_directory_path() / ("opprobe-xla-fake-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "fake_worker.py").string();
  std::ofstream(path) << R"(import os, struct, sys
def rd(n):
    b = b""
    while len(b) < n:
        c = os.read(3, n - len(b))
        if not c: sys.exit(0)
        b += c
    return b
def send(body): os.write(3, struct.pack("<Q", len(body)) + body)
def s(b): return struct.pack("<Q", len(b)) + b
send(struct.pack("<BiiQ", 1, 0, 0, 0) + s(b"cpu") + s(b"fake 1") + struct.pack("<q", 1))
while True:
    (n,) = struct.unpack("<Q", rd(8)); req = rd(n)
    if os.environ.get("FAKE_MODE") == "crash":
        sys.stdout.write("fake worker: giving up\n"); sys.stdout.flush(); os.abort()
    pos = 1; (pl,) = struct.unpack_from("<Q", req, pos); pos += 8 + pl; pos += 4
    t, rank = struct.unpack_from("<iI", req, pos); pos += 8
    dims = struct.unpack_from("<%dq" % rank, req, pos); pos += 8 * rank
    (dl,) = struct.unpack_from("<Q", req, pos)
    out = struct.pack("<iI", t, rank) + b"".join(struct.pack("<q", d) for d in dims) + s(b"\0" * dl)
    send(struct.pack("<ii", 0, 0) + s(b"") + struct.pack("<I", 1) + out)
)";
  return path;
}

TEST(XlaBackend, WorkerCrashIsAnErrorVerdictAndWrongNumbersAreReported) {
  ScopedEnv worker("OPPROBE_XLA_WORKER", FakeWorker());
  {
    ScopedEnv mode("FAKE_MODE", "crash");
    auto b = MustCreateBackend("xla:cpu,python=/usr/bin/python3");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->version().rfind("fake 1; evaluator ", 0), 0u) << b->version();
    auto unit = BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {2, 2});
    for (int i = 0; i < 2; ++i) {  // the second probe restarts the worker
      Verdict v = b->probe(*unit);
      ASSERT_EQ(v.kind, Verdict::Kind::kError) << v.reason;
      EXPECT_EQ(v.reason.rfind("XLA crashed: the worker was killed by signal 6 (SIGABRT)", 0), 0u) << v.reason;
      EXPECT_NE(v.reason.find("fake worker: giving up"), std::string::npos) << v.reason;
    }
  }
  auto b = MustCreateBackend("xla:cpu,python=/usr/bin/python3");
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {2, 2}));
  ASSERT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(v.reason.rfind("numerics: output 0 element [", 0), 0u) << v.reason;
  EXPECT_EQ(v.interp, Verdict::Interp::kDiffer);
}

}  // namespace
}  // namespace opprobe::compiler_probe::xla
