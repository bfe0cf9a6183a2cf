// compiler_probe/worker: the protocol every worker speaks, the native worker program's place, and the comparison
// of a worker's results with interp's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "compiler_probe/worker/compare.h"
#include "compiler_probe/worker/process.h"
#include "compiler_probe/worker/protocol.h"
#include "hlo/literal.h"

namespace opprobe::compiler_probe::worker {
namespace {

using hlo::PrimitiveType;
using hlo::Shape;

TEST(WorkerTest, TheWorkerProgramIsFoundBesideTheBuild) {
  auto w = FindWorkerProgram();
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_NE(w->find("opprobe-pjrt-worker"), std::string::npos);
}

TEST(WorkerTest, TypeMappingDiffersFromXlaNumbering) {
  EXPECT_EQ(PjrtBufferType(PrimitiveType::BF16), 13);
  EXPECT_EQ(PjrtBufferType(PrimitiveType::C64), 14);
  EXPECT_EQ(PjrtBufferType(PrimitiveType::C128), 15);
  EXPECT_EQ(PjrtBufferType(PrimitiveType::F32), 11);
  EXPECT_FALSE(PjrtBufferType(PrimitiveType::TUPLE).has_value());
  EXPECT_EQ(PrimitiveTypeFromPjrt(13), PrimitiveType::BF16);
  EXPECT_EQ(PjrtTypeByteSize(15), 16);
  EXPECT_EQ(ErrorCodeName(12), "UNIMPLEMENTED");
}

TEST(WorkerTest, CompareOutputUsesTheTypesTolerance) {
  hlo::Literal want(Shape::Array(PrimitiveType::F32, {2}));
  want.Set<float>(0, 1.0f);
  want.Set<float>(1, 100.0f);
  auto host = [](std::vector<float> v, int type = 11, std::vector<int64_t> dims = {2}) {
    HostArray h;
    h.type = type;
    h.dims = std::move(dims);
    h.data.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    return h;
  };
  EXPECT_FALSE(CompareOutput(want, host({1.0f, 100.0f}), 0).has_value());
  EXPECT_FALSE(CompareOutput(want, host({1.000001f, 100.005f}), 0).has_value());  // within rtol 1e-4
  auto diff = CompareOutput(want, host({1.0f, 100.5f}), 3);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff,
            "output 3 element [1]: got 100.5, interp 100 (1 of 2 elements differ beyond the f32 tolerance: "
            "rtol 0.0001, atol 1e-05)");
  EXPECT_EQ(*CompareOutput(want, host({1.0f, 100.0f}, 12), 0), "output 0 has element type f64, interp f32");
  EXPECT_EQ(*CompareOutput(want, host({1.0f, 100.0f}, 11, {1, 2}), 0), "output 0 has dims [1,2], interp [2]");
  hlo::Literal nan(Shape::Array(PrimitiveType::F32, {1}));
  nan.Set<float>(0, std::nanf(""));
  EXPECT_FALSE(CompareOutput(nan, host({std::nanf("")}, 11, {1}), 0).has_value());
  EXPECT_TRUE(CompareOutput(nan, host({0.0f}, 11, {1}), 0).has_value());
  // A sum's absolute tolerance follows the output's largest magnitude (f32 and f64 alike).
  hlo::Literal sum(Shape::Array(PrimitiveType::F64, {2}));
  sum.Set<double>(0, 1000.0);
  sum.Set<double>(1, 0.0);
  HostArray close_sum;
  close_sum.type = 12;
  close_sum.dims = {2};
  const double got_sum[2] = {1000.0, 1e-10};
  close_sum.data.assign(reinterpret_cast<const char*>(got_sum), sizeof got_sum);
  EXPECT_FALSE(CompareOutput(sum, close_sum, 0, /*accumulated=*/true).has_value());
  auto exact = CompareOutput(sum, close_sum, 0, /*accumulated=*/false);
  ASSERT_TRUE(exact.has_value());
  EXPECT_EQ(*exact,
            "output 0 element [1]: got 1e-10, interp 0 (1 of 2 elements differ beyond the f64 tolerance: "
            "rtol 1e-09, atol 1e-12)");
  EXPECT_EQ(ToleranceFor(PrimitiveType::S32).rtol, 0.0);
  EXPECT_GT(ToleranceFor(PrimitiveType::BF16).rtol, ToleranceFor(PrimitiveType::F16).rtol);
}

// The body of an encoded message: what follows its u64 length, which says the body's size.
std::string Body(const std::string& message) {
  uint64_t n = 0;
  std::memcpy(&n, message.data(), sizeof n);
  EXPECT_EQ(n, message.size() - sizeof n);
  return message.substr(sizeof n);
}

TEST(WorkerTest, RequestsRepliesAndGreetingsRoundTrip) {
  HostArray a;
  a.type = kArrayF32;
  a.dims = {2, 1};
  a.data = std::string(8, '\x01');
  auto q = DecodeRequest(Body(EncodeRequest(kRequestExecute, "proto", {a}, nullptr)));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->flags, kRequestExecute);
  EXPECT_EQ(q->hlo_module_proto, "proto");
  ASSERT_EQ(q->inputs.size(), 1u);
  EXPECT_EQ(q->inputs[0].dims, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(q->inputs[0].data, a.data);
  EXPECT_TRUE(q->compile_options.empty());
  const std::string options = "\x1a\x04\x20\x01\x28\x01";
  q = DecodeRequest(Body(EncodeRequest(kRequestCompileProgram, "p", {}, &options)));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->compile_options, options);
  // A request cut short is malformed, not a shorter request.
  std::string cut = Body(EncodeRequest(kRequestExecute, "proto", {a}, nullptr));
  EXPECT_FALSE(DecodeRequest(cut.substr(0, cut.size() - 1)).has_value());

  RunResult r;
  r.stage = RunResult::Stage::kExecute;
  r.code = 12;
  r.message = "no";
  r.outputs = {a};
  auto back = DecodeReply(Body(EncodeReply(r)));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->stage, RunResult::Stage::kExecute);
  EXPECT_EQ(back->code, 12);
  EXPECT_EQ(back->message, "no");
  ASSERT_EQ(back->outputs.size(), 1u);
  EXPECT_FALSE(back->stats.present);
  // A whole program's statistics follow the outputs.
  r.stats.present = r.stats.has_memory = true;
  r.stats.memory.temp_bytes = 77;
  r.stats.library_calls = {"__cublas$gemm"};
  r.stats.library_call_sites = {{"__cublas$gemm", "unit_3/dot"}};
  back = DecodeReply(Body(EncodeReply(r)));
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->stats.present);
  EXPECT_EQ(back->stats.memory.temp_bytes, 77);
  ASSERT_EQ(back->stats.library_call_sites.size(), 1u);
  EXPECT_EQ(back->stats.library_call_sites[0].op_name, "unit_3/dot");
  // A stage past the last one is a broken reply.
  std::string bad = Body(EncodeReply(r));
  const int32_t stage = 9;
  std::memcpy(bad.data(), &stage, sizeof stage);
  EXPECT_FALSE(DecodeReply(bad).has_value());

  SessionInfo info;
  info.api_major = 0;
  info.api_minor = 94;
  info.platform_name = "cpu";
  info.platform_version = "v1";
  info.num_devices = 4;
  auto g = DecodeGreeting(Body(EncodeGreeting(info)));
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->loaded);
  EXPECT_EQ(g->info.api_minor, 94);
  EXPECT_EQ(g->info.platform_version, "v1");
  EXPECT_EQ(g->info.num_devices, 4);
  g = DecodeGreeting(Body(EncodeRefusal("not a PJRT plugin")));
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(g->loaded);
  EXPECT_EQ(g->refusal, "not a PJRT plugin");
  EXPECT_FALSE(DecodeGreeting("").has_value());
}

}  // namespace
}  // namespace opprobe::compiler_probe::worker
