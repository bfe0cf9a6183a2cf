// Evaluator benchmarks: GFLOP/s of dot and convolution on model-sized shapes next to a naive loop, and
// the wall time of probing every unique instruction of a resnet50 training step (batch 8, NCHW) with
// the `interp` backend. Run: ./tests/bench/opprobe_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "compiler_probe/interp/interp_backend.h"
#include "hlo/builder.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"

namespace opprobe::hlo {
namespace {

using PT = PrimitiveType;

ConvolutionDimensionNumbers Nchw(bool grad_input = false, bool grad_weight = false) {
  ConvolutionDimensionNumbers d;
  d.input_batch_dimension = 0, d.input_feature_dimension = 1, d.input_spatial_dimensions = {2, 3};
  d.kernel_output_feature_dimension = 0, d.kernel_input_feature_dimension = 1, d.kernel_spatial_dimensions = {2, 3};
  d.output_batch_dimension = 0, d.output_feature_dimension = 1, d.output_spatial_dimensions = {2, 3};
  if (grad_input) d.kernel_output_feature_dimension = 1, d.kernel_input_feature_dimension = 0;  // bf01_io01->bf01
  if (grad_weight) {                                                                            // fb01_io01->fb01
    d.input_batch_dimension = 1, d.input_feature_dimension = 0;
    d.kernel_input_feature_dimension = 0, d.kernel_output_feature_dimension = 1;
    d.output_batch_dimension = 1, d.output_feature_dimension = 0;
  }
  return d;
}

Window Win2(int64_t k, int64_t stride, int64_t plo, int64_t phi, int64_t lhs_dil = 1, int64_t rhs_dil = 1,
            bool reverse = false) {
  Window w;
  for (int i = 0; i < 2; ++i) w.dimensions.push_back({k, stride, plo, phi, rhs_dil, lhs_dil, reverse});
  return w;
}

std::unique_ptr<Module> ConvModule(int64_t n, int64_t c, int64_t h, int64_t o, int64_t k, int64_t s, int64_t pad) {
  Builder b("conv");
  auto* x = b.Parameter(0, Shape::Array(PT::F32, {n, c, h, h}));
  auto* w = b.Parameter(1, Shape::Array(PT::F32, {o, c, k, k}));
  return b.Build(b.Convolution(x, w, Win2(k, s, pad, pad), Nchw()));
}

std::unique_ptr<Module> DotModule(int64_t m, int64_t k, int64_t n) {
  Builder b("dot");
  auto* x = b.Parameter(0, Shape::Array(PT::F32, {m, k}));
  auto* y = b.Parameter(1, Shape::Array(PT::F32, {k, n}));
  DotDimensionNumbers d;
  d.lhs_contracting_dimensions = {1}, d.rhs_contracting_dimensions = {0};
  return b.Build(b.Dot(x, y, d));
}

void SetFlops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DotEvaluator(benchmark::State& state) {
  int64_t s = state.range(0);
  auto m = DotModule(s, s, s);
  auto args = RandomArguments(*m->entry(), 1);
  for (auto _ : state) {
    auto r = Evaluate(*m, args);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  SetFlops(state, 2.0 * s * s * s);
}
BENCHMARK(BM_DotEvaluator)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_DotNaive(benchmark::State& state) {
  int64_t s = state.range(0);
  std::vector<float> a(static_cast<size_t>(s * s), 0.5f), b(static_cast<size_t>(s * s), 0.25f),
      c(static_cast<size_t>(s * s));
  for (auto _ : state) {
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < s; ++j) {
        float acc = 0;
        for (int64_t k = 0; k < s; ++k) acc += a[static_cast<size_t>(i * s + k)] * b[static_cast<size_t>(k * s + j)];
        c[static_cast<size_t>(i * s + j)] = acc;
      }
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * s * s * s);
}
BENCHMARK(BM_DotNaive)->Arg(512)->Unit(benchmark::kMillisecond)->Iterations(1);

// resnet 3x3 conv: 8x64x56x56 (*) 64x64x3x3, pad 1.
void BM_ConvEvaluator(benchmark::State& state) {
  auto m = ConvModule(8, 64, 56, 64, 3, 1, 1);
  auto args = RandomArguments(*m->entry(), 1);
  for (auto _ : state) {
    auto r = Evaluate(*m, args);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  SetFlops(state, 2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_ConvEvaluator)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ConvNaive(benchmark::State& state) {
  const int64_t N = 8, C = 64, H = 56, O = 64, K = 3;
  std::vector<float> in(static_cast<size_t>(N * C * H * H), 0.5f), w(static_cast<size_t>(O * C * K * K), 0.25f),
      out(static_cast<size_t>(N * O * H * H));
  for (auto _ : state) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < H; ++x) {
            float acc = 0;
            for (int64_t c = 0; c < C; ++c)
              for (int64_t ky = 0; ky < K; ++ky)
                for (int64_t kx = 0; kx < K; ++kx) {
                  int64_t iy = y + ky - 1, ix = x + kx - 1;
                  if (iy < 0 || ix < 0 || iy >= H || ix >= H) continue;
                  acc += in[static_cast<size_t>(((n * C + c) * H + iy) * H + ix)] *
                         w[static_cast<size_t>(((o * C + c) * K + ky) * K + kx)];
                }
            out[static_cast<size_t>(((n * O + o) * H + y) * H + x)] = acc;
          }
    benchmark::DoNotOptimize(out.data());
  }
  SetFlops(state, 2.0 * N * C * H * H * O * K * K);
}
BENCHMARK(BM_ConvNaive)->Unit(benchmark::kMillisecond)->Iterations(1);

// ---- resnet50 training step (batch 8): the instructions its forward, backward and SGD update emit ----

struct Resnet50Units {
  Builder b{"resnet50_step"};
  std::vector<Instruction*> roots;

  Instruction* P(std::vector<int64_t> dims) { return b.NextParameter(Shape::Array(PT::F32, std::move(dims))); }

  void Conv(int64_t c, int64_t hw, int64_t o, int64_t k, int64_t s) {
    const int64_t N = 8, pad = k / 2;
    int64_t ho = (hw + 2 * pad - k) / s + 1;
    // forward
    roots.push_back(b.Convolution(P({N, c, hw, hw}), P({o, c, k, k}), Win2(k, s, pad, pad), Nchw()));
    // grad input: dilate grad_out by the stride, reversed kernel with in/out features swapped
    int64_t dil = (ho - 1) * s + 1, plo = k - 1 - pad, phi = hw + k - 1 - dil - plo;
    roots.push_back(b.Convolution(P({N, o, ho, ho}), P({o, c, k, k}), Win2(k, 1, plo, phi, s, 1, true), Nchw(true)));
    // grad weight: input (C as batch) against grad_out (N as input feature) as the window
    int64_t wphi = k - 1 - hw - pad + dil;
    roots.push_back(
        b.Convolution(P({N, c, hw, hw}), P({N, o, ho, ho}), Win2(ho, 1, pad, wphi, 1, s), Nchw(false, true)));
    // SGD update of the weight
    auto* w = P({o, c, k, k});
    auto* g = P({o, c, k, k});
    auto* lr = b.Full(PT::F32, 0.1, {o, c, k, k});
    roots.push_back(b.Binary(Opcode::kSubtract, w, b.Binary(Opcode::kMultiply, g, lr)));
  }

  void BatchNormRelu(int64_t c, int64_t hw) {
    const int64_t N = 8;
    std::vector<int64_t> d{N, c, hw, hw};
    auto* x = P(d);
    auto* bn = b.Add([&] {
      auto i = std::make_unique<Instruction>();
      i->opcode = Opcode::kBatchNormTraining;
      i->shape = Shape::Tuple({Shape::Array(PT::F32, d), Shape::Array(PT::F32, {c}), Shape::Array(PT::F32, {c})});
      i->operands = {x, P({c}), P({c})};
      i->epsilon = 1e-5f;
      i->feature_index = 1;
      return i;
    }());
    roots.push_back(bn);
    roots.push_back(b.Add([&] {
      auto i = std::make_unique<Instruction>();
      i->opcode = Opcode::kBatchNormGrad;
      i->shape = Shape::Tuple({Shape::Array(PT::F32, d), Shape::Array(PT::F32, {c}), Shape::Array(PT::F32, {c})});
      i->operands = {P(d), P({c}), P({c}), P({c}), P(d)};
      i->epsilon = 1e-5f;
      i->feature_index = 1;
      return i;
    }()));
    auto* zero = b.Full(PT::F32, 0.0, d);
    auto* y = P(d);
    roots.push_back(b.Binary(Opcode::kMaximum, y, zero));  // relu
    auto* mask = b.Compare(y, zero, ComparisonDirection::kGt);
    roots.push_back(mask);
    roots.push_back(b.Select(mask, P(d), zero));          // relu backward
    roots.push_back(b.Binary(Opcode::kAdd, P(d), P(d)));  // residual / grad accumulation
  }

  void Build() {
    // stem
    Conv(3, 224, 64, 7, 2);
    BatchNormRelu(64, 112);
    // max pool 3x3/2 and its gradient
    Window pool;
    pool.dimensions = {
        {1, 1, 0, 0, 1, 1, false}, {1, 1, 0, 0, 1, 1, false}, {3, 2, 1, 1, 1, 1, false}, {3, 2, 1, 1, 1, 1, false}};
    auto* ninf = b.ConstantScalar(PT::F32, -INFINITY);
    auto* mx = b.ScalarBinaryComputation(Opcode::kMaximum, PT::F32);
    auto* add = b.ScalarBinaryComputation(Opcode::kAdd, PT::F32);
    roots.push_back(b.ReduceWindow({P({8, 64, 112, 112})}, {ninf}, pool, mx));
    Builder ge = b.CreateSubBuilder("ge");
    auto* ge_c = ge.Finish(ge.Compare(ge.Parameter(0, Shape::Scalar(PT::F32)), ge.Parameter(1, Shape::Scalar(PT::F32)),
                                      ComparisonDirection::kGe));
    roots.push_back(
        b.SelectAndScatter(P({8, 64, 112, 112}), ge_c, pool, P({8, 64, 56, 56}), b.ConstantScalar(PT::F32, 0), add));
    // bottleneck stages: (in, mid, out, spatial in, stride)
    struct Stage {
      int64_t in, mid, out, hw, stride;
    };
    for (Stage s : {Stage{64, 64, 256, 56, 1}, Stage{256, 128, 512, 56, 2}, Stage{512, 256, 1024, 28, 2},
                    Stage{1024, 512, 2048, 14, 2}}) {
      int64_t ho = s.hw / s.stride;
      Conv(s.in, s.hw, s.mid, 1, 1);          // first block 1x1
      Conv(s.mid, s.hw, s.mid, 3, s.stride);  // first block 3x3 (strided)
      Conv(s.mid, ho, s.out, 1, 1);           // 1x1 expand
      Conv(s.in, s.hw, s.out, 1, s.stride);   // downsample
      Conv(s.out, ho, s.mid, 1, 1);           // later blocks 1x1 reduce
      Conv(s.mid, ho, s.mid, 3, 1);           // later blocks 3x3
      if (s.stride != 1) BatchNormRelu(s.mid, s.hw);
      BatchNormRelu(s.mid, ho);
      BatchNormRelu(s.out, ho);
    }
    // global average pool, fc and its gradients
    roots.push_back(b.Reduce({P({8, 2048, 7, 7})}, {b.ConstantScalar(PT::F32, 0)}, {2, 3}, add));
    DotDimensionNumbers d;
    d.lhs_contracting_dimensions = {1}, d.rhs_contracting_dimensions = {0};
    roots.push_back(b.Dot(P({8, 2048}), P({2048, 1000}), d));
    DotDimensionNumbers gi;
    gi.lhs_contracting_dimensions = {1}, gi.rhs_contracting_dimensions = {1};
    roots.push_back(b.Dot(P({8, 1000}), P({2048, 1000}), gi));
    DotDimensionNumbers gw;
    gw.lhs_contracting_dimensions = {0}, gw.rhs_contracting_dimensions = {0};
    roots.push_back(b.Dot(P({8, 2048}), P({8, 1000}), gw));
    // log-softmax over 1000 classes
    roots.push_back(b.Reduce({P({8, 1000})}, {ninf}, {1}, mx));
    roots.push_back(b.Unary(Opcode::kExp, P({8, 1000})));
    roots.push_back(b.Unary(Opcode::kLog, P({8})));
  }
};

void BM_Resnet50TrainingStepUniqueInstructions(benchmark::State& state) {
  Resnet50Units net;
  net.Build();
  if (!net.b.ok()) {
    state.SkipWithError(net.b.status().message().c_str());
    return;
  }
  auto module = net.b.Build(net.b.Tuple(net.roots));
  // Unique probe units, as the driver dedups them.
  std::vector<std::unique_ptr<Module>> units;
  std::set<std::string> seen;
  for (const auto& ins : module->entry()->instructions()) {
    if (ins->opcode == Opcode::kParameter || ins->opcode == Opcode::kTuple) continue;
    auto unit = MakeProbeModule(*ins);
    if (seen.insert(Fingerprint(*unit)).second) units.push_back(std::move(unit));
  }
  compiler_probe::interp::InterpBackend interp;
  double slowest = 0;
  std::string slowest_name;
  int unsupported = 0;
  for (auto _ : state) {
    for (const auto& u : units) {
      auto v = interp.probe(*u);
      if (!v.supported()) {
        ++unsupported;
        std::fprintf(stderr, "unsupported: %s: %s\n", InstructionSignature(*u->entry()->root()).c_str(),
                     v.reason.c_str());
      }
      if (v.seconds > slowest) slowest = v.seconds, slowest_name = InstructionSignature(*u->entry()->root());
    }
  }
  state.counters["unique_instructions"] = static_cast<double>(units.size());
  state.counters["unsupported"] = unsupported;
  state.counters["slowest_s"] = slowest;
  std::fprintf(stderr, "slowest unit (%.2f s): %s\n", slowest, slowest_name.c_str());
}
BENCHMARK(BM_Resnet50TrainingStepUniqueInstructions)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace opprobe::hlo

BENCHMARK_MAIN();
