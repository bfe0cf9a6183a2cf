// The tpu: and gpu: backends: spec parsing, compile options from a unit, the worker's fault handling against the
// test PJRT plugin (a crash, a hang, an internal error), and the real compilers (libtpu and XLA's CUDA plugin from
// PyPI, in the environments scripts/test makes from requirements/tpu.txt and requirements/gpu.txt) on units whose
// verdicts were read off those compilers (research/deviceless-compilers.md).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "compiler_probe/chip/chip_backend.h"
#include "compiler_probe/worker/compile_options.h"
#include "testing/probe_units.h"
#include "testing/scoped_env.h"

namespace opprobe::compiler_probe::chip {
namespace {

using worker::CompileConfig;
using worker::CompileConfigFor;
using worker::SerializeCompileOptions;

using hlo::Opcode;
using hlo::PrimitiveType;
using testing::BinaryUnit;
using testing::MustCreateBackend;
using testing::ParseUnit;
using testing::ScopedEnv;

std::string Hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x} ", c);
  if (!out.empty()) out.pop_back();
  return out;
}

TEST(ChipCompileOptions, OneReplicaOnePartitionIsTheSixBytesXlaTakes) {
  EXPECT_EQ(Hex(SerializeCompileOptions({})), "1a 04 20 01 28 01");
  EXPECT_EQ(Hex(SerializeCompileOptions({4, 1, false, false})), "1a 04 20 04 28 01");
}

TEST(ChipCompileOptions, EightPartitionsSpmdCarryADeviceAssignment) {
  // research/deviceless-compilers.md: 1 replica x 8 partitions with SPMD and a 1x8 device assignment, 54 bytes.
  std::string want = "1a 34 20 01 28 08 30 01 4a 2c 08 01 10 08";
  for (int n = 0; n < 8; ++n) want += fmt::format(" 1a 03 0a 01 {:02x}", n);
  EXPECT_EQ(Hex(SerializeCompileOptions({1, 8, true, false})), want);
}

TEST(ChipCompileOptions, ReplicasAndPartitionsComeFromTheUnit) {
  auto all_reduce = ParseUnit(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add
})");
  ASSERT_TRUE(all_reduce);
  EXPECT_EQ(CompileConfigFor(*all_reduce), (CompileConfig{4, 1, false, false}));
  auto permute = ParseUnit(R"(HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] collective-permute(p), source_target_pairs={{0,5},{5,0}}
})");
  ASSERT_TRUE(permute);
  EXPECT_EQ(CompileConfigFor(*permute).replicas, 6);
  auto sharded = ParseUnit(R"(HloModule m
ENTRY e {
  p = f32[8,4] parameter(0), sharding={devices=[4,1]0,1,2,3}
  ROOT r = f32[8,4] negate(p), sharding={devices=[4,1]0,1,2,3}
})");
  ASSERT_TRUE(sharded);
  EXPECT_EQ(CompileConfigFor(*sharded), (CompileConfig{1, 4, true, false}));
  EXPECT_EQ(CompileConfigFor(*BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {2})), CompileConfig{});
}

TEST(ChipSpec, TpuGenerationsTakeADefaultTopologyOrTheGivenOne) {
  auto v5e = ParseChipSpec(ChipKind::kTpu, "v5e");
  ASSERT_TRUE(v5e.ok()) << v5e.status().message();
  EXPECT_EQ(v5e->topology, "v5e:2x4");
  EXPECT_EQ(v5e->id, "tpu:v5e");
  auto v5p = ParseChipSpec(ChipKind::kTpu, "v5p:2x2x2,plugin=/opt/libtpu.so");
  ASSERT_TRUE(v5p.ok()) << v5p.status().message();
  EXPECT_EQ(v5p->topology, "v5p:2x2x2");
  EXPECT_EQ(v5p->id, "tpu:v5p:2x2x2");
  EXPECT_EQ(v5p->plugin, "/opt/libtpu.so");
  for (const auto& g : TpuGenerations()) EXPECT_TRUE(ParseChipSpec(ChipKind::kTpu, std::string(g.name)).ok()) << g.name;
}

TEST(ChipSpec, UnknownTargetsTopologiesAndOptionsAreUsageErrors) {
  auto gen = ParseChipSpec(ChipKind::kTpu, "v9");
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(gen.status().message().find("unknown TPU generation 'v9'"), std::string::npos);
  EXPECT_NE(gen.status().message().find("v5e"), std::string::npos) << gen.status().message();
  auto layout = ParseChipSpec(ChipKind::kTpu, "v5e:big");
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), ErrorCode::kInvalidInput);
  auto dev = ParseChipSpec(ChipKind::kGpu, "rtx9090");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("known: a100, b200, h100, h200, v100"), std::string::npos)
      << dev.status().message();
  auto opt = ParseChipSpec(ChipKind::kGpu, "h100,jobs=2");
  ASSERT_FALSE(opt.ok());
  EXPECT_NE(opt.status().message().find("unknown option 'jobs=2'"), std::string::npos);
}

TEST(ChipSpec, GpuDevicesAreTheShippedTargetConfigs) {
  ASSERT_EQ(GpuDevices().size(), 5u);
  auto find = [](const std::string& name) -> const GpuDevice* {
    for (const auto& d : GpuDevices())
      if (d.name == name) return &d;
    return nullptr;
  };
  const GpuDevice* h200 = find("h200");
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200->compute_major, 9);
  EXPECT_EQ(h200->device_memory_bytes, 151397597184);
  EXPECT_EQ(h200->description, "NVIDIA H200 141GB HBM3e");
  ASSERT_TRUE(find("v100"));
  EXPECT_EQ(find("v100")->compute_major, 7);
  ASSERT_TRUE(find("b200"));
  EXPECT_EQ(find("b200")->compute_major, 10);
  auto spec = ParseChipSpec(ChipKind::kGpu, "h100:1x1x4");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->topology, "1x1x4");
  EXPECT_EQ(spec->id, "gpu:h100:1x1x4");
}

TEST(ChipBackend, AMissingPluginIsUnavailableWithTheInstallCommand) {
  ScopedEnv root("OPPROBE_VENV_ROOT", "/nonexistent/venvs");
  ScopedEnv tpu("OPPROBE_LIBTPU", "");
  auto b = Registry::Builtin().Create("tpu:v5e");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.status().message().find("pip install -r requirements/tpu.txt"), std::string::npos)
      << b.status().message();
  auto g = Registry::Builtin().Create("gpu:h100,plugin=/nonexistent/plugin.so");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kUnavailable);
}

// The worker's faults, against the test plugin's client-less compile.
class ChipFaults : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> Create(const std::string& spec = "tpu:v5e") {
    return MustCreateBackend(spec + ",plugin=" + OPPROBE_TEST_PJRT_PLUGIN);
  }
};

TEST_F(ChipFaults, ACompileIsSupportedAndARefusalCarriesTheCompilersCode) {
  ScopedEnv fail("OPPROBE_TEST_PJRT_FAIL_COMPILE_OPCODE", "multiply");
  auto b = Create();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id(), "tpu:v5e");
  EXPECT_NE(b->version().find("topology v5e:2x4 (8 devices)"), std::string::npos) << b->version();
  EXPECT_NE(b->version().find("test test-compiler 1.0"), std::string::npos) << b->version();
  EXPECT_TRUE(b->probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {4})).supported());
  Verdict v = b->probe(*BinaryUnit(Opcode::kMultiply, PrimitiveType::F32, {4}));
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(v.reason, "compile: UNIMPLEMENTED: test plugin: opcode multiply is not supported");
}

TEST_F(ChipFaults, AnInternalErrorIsOpprobesNotTheDevicesVerdict) {
  ScopedEnv internal("OPPROBE_TEST_PJRT_INTERNAL_OPCODE", "subtract");
  auto b = Create();
  ASSERT_TRUE(b);
  Verdict v = b->probe(*BinaryUnit(Opcode::kSubtract, PrimitiveType::F32, {4}));
  EXPECT_EQ(v.kind, Verdict::Kind::kError);
  EXPECT_NE(v.reason.find("internal error (opprobe's module or options, not a verdict on the op): INTERNAL: RET_CHECK"),
            std::string::npos)
      << v.reason;
}

TEST_F(ChipFaults, ACrashAndAHangAreErrorsAndTheWorkerComesBack) {
  ScopedEnv crash("OPPROBE_TEST_PJRT_CRASH_OPCODE", "divide");
  ScopedEnv hang("OPPROBE_TEST_PJRT_HANG_OPCODE", "power");
  BackendOptions options;
  options.probe_timeout_seconds = 2;
  auto b = Registry::Builtin().Create(std::string("tpu:v4,plugin=") + OPPROBE_TEST_PJRT_PLUGIN, options);
  ASSERT_TRUE(b.ok()) << b.status().message();
  Verdict crashed = (*b)->probe(*BinaryUnit(Opcode::kDivide, PrimitiveType::F32, {4}));
  EXPECT_EQ(crashed.kind, Verdict::Kind::kError);
  EXPECT_NE(crashed.reason.find("TPU compiler crashed: the worker was killed by signal 11 (SIGSEGV)"),
            std::string::npos)
      << crashed.reason;
  EXPECT_TRUE((*b)->probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {4})).supported());
  Verdict hung = (*b)->probe(*BinaryUnit(Opcode::kPower, PrimitiveType::F32, {4}));
  EXPECT_EQ(hung.kind, Verdict::Kind::kError);
  EXPECT_NE(hung.reason.find("timed out"), std::string::npos) << hung.reason;
  EXPECT_TRUE((*b)->probe(*BinaryUnit(Opcode::kAdd, PrimitiveType::F32, {8})).supported());
}

TEST_F(ChipFaults, AUnitNeedingMoreDevicesThanTheTopologyIsNotProbed) {
  auto b = Create("gpu:h100:1x1x2");
  ASSERT_TRUE(b);
  auto all_reduce = ParseUnit(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(p), replica_groups={{0,1,2,3}}, to_apply=add
})");
  ASSERT_TRUE(all_reduce);
  Verdict v = b->probe(*all_reduce);
  EXPECT_EQ(v.kind, Verdict::Kind::kError);
  EXPECT_NE(v.reason.find("needs 4 devices (4 replicas x 1 partitions) and the topology 1x1x2 has 2"),
            std::string::npos)
      << v.reason;
}

TEST_F(ChipFaults, AGpuLibraryCallIsNamedInTheVerdict) {
  auto b = Create("gpu:a100");
  ASSERT_TRUE(b);
  auto conv = ParseUnit(R"(HloModule m
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  w = f32[3,3,4,4] parameter(1)
  ROOT c = f32[1,8,8,4] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  ASSERT_TRUE(conv);
  Verdict v = b->probe(*conv);
  EXPECT_TRUE(v.supported()) << v.reason;
  EXPECT_EQ(v.output_tail,
            "compiled to a vendor library call (__cudnn$convForward): whether the library is present at run time is "
            "not checked");
}

// The real compilers. Each unit's verdict is the one read off the compiler by hand (research/deviceless-compilers.md).
struct RealCase {
  const char* name;
  const char* hlo;
  bool tpu_compiles;
  const char* tpu_refusal;  // a substring of the TPU compiler's refusal
  bool gpu_compiles;
};

const RealCase kRealCases[] = {
    {"f32 dot", R"(HloModule m
ENTRY e {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
     true, "", true},
    {"s2 add, rank 1", R"(HloModule m
ENTRY e {
  a = s2[8] parameter(0)
  b = s2[8] parameter(1)
  ROOT s = s2[8] add(a, b)
})",
     false, "INT2 is not supported for rank 1", true},
    {"c128 dot", R"(HloModule m
ENTRY e {
  a = c128[4,4] parameter(0)
  b = c128[4,4] parameter(1)
  ROOT d = c128[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
     true, "", true},
    {"c128 multiply", R"(HloModule m
ENTRY e {
  a = c128[16] parameter(0)
  b = c128[16] parameter(1)
  ROOT m = c128[16] multiply(a, b)
})",
     true, "", true},
    {"c128 fft", R"(HloModule m
ENTRY e {
  a = c128[256] parameter(0)
  ROOT f = c128[256] fft(a), fft_type=FFT, fft_length={256}
})",
     false, "Unexpected operand type for FFT", true},
    {"bounded dynamic shape", R"(HloModule m
ENTRY e {
  a = f32[100] parameter(0)
  n = s32[] parameter(1)
  ROOT d = f32[<=100] set-dimension-size(a, n), dimensions={0}
})",
     true, "", true},
    {"f64 exponential", R"(HloModule m
ENTRY e {
  a = f64[32] parameter(0)
  ROOT x = f64[32] exponential(a)
})",
     true, "", true},
    {"all-reduce over 4 replicas", R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(p), replica_groups={{0,1,2,3}}, to_apply=add
})",
     true, "", true},
    {"unknown custom call", R"(HloModule m
ENTRY e {
  a = f32[8] parameter(0)
  ROOT c = f32[8] custom-call(a), custom_call_target="my_unknown_kernel"
})",
     false, "my_unknown_kernel", false},
};

TEST(RealTpuCompiler, EveryVerdictIsTheCompilersOwn) {
  auto b = MustCreateBackend("tpu:v5e");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->version().rfind("libtpu 0.0.42.1; ", 0), 0u) << b->version();
  EXPECT_NE(b->version().find("topology v5e:2x4 (8 devices)"), std::string::npos) << b->version();
  for (const RealCase& c : kRealCases) {
    auto unit = ParseUnit(c.hlo);
    ASSERT_TRUE(unit) << c.name;
    Verdict v = b->probe(*unit);
    EXPECT_EQ(v.kind, c.tpu_compiles ? Verdict::Kind::kSupported : Verdict::Kind::kUnsupported)
        << c.name << ": " << v.reason;
    if (!c.tpu_compiles) { EXPECT_NE(v.reason.find(c.tpu_refusal), std::string::npos) << c.name << ": " << v.reason; }
  }
}

TEST(RealGpuCompiler, EveryVerdictIsTheCompilersOwn) {
  auto b = MustCreateBackend("gpu:h100");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->version().rfind("jax_cuda12_pjrt 0.12.0.1; ", 0), 0u) << b->version();
  EXPECT_NE(b->version().find("NVIDIA H100 80GB HBM3 (sm_90"), std::string::npos) << b->version();
  for (const RealCase& c : kRealCases) {
    auto unit = ParseUnit(c.hlo);
    ASSERT_TRUE(unit) << c.name;
    Verdict v = b->probe(*unit);
    EXPECT_EQ(v.kind, c.gpu_compiles ? Verdict::Kind::kSupported : Verdict::Kind::kUnsupported)
        << c.name << ": " << v.reason;
    if (std::string(c.name) == "c128 fft") {
      EXPECT_NE(v.output_tail.find("cuFFT"), std::string::npos) << v.output_tail;
    }
  }
  // A convolution compiles to a cuDNN call on the GPU, and the verdict says so.
  auto conv = ParseUnit(R"(HloModule m
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  w = f32[3,3,4,4] parameter(1)
  ROOT c = f32[1,8,8,4] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  ASSERT_TRUE(conv);
  Verdict v = b->probe(*conv);
  EXPECT_TRUE(v.supported()) << v.reason;
  EXPECT_NE(v.output_tail.find("a vendor library call (__cudnn$conv"), std::string::npos) << v.output_tail;
}

}  // namespace
}  // namespace opprobe::compiler_probe::chip
