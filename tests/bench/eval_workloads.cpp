// opprobe_eval_bench: the wall time of hlo::Evaluate on aten ops exactly as opprobe lowers them (the
// built-in lowering table), for scripts/bench's `evaluator` section, which times PyTorch on the same
// workloads (tests/bench/evaluator_torch.py) and prints the ratios.
//
//   opprobe_eval_bench [--min-time SECONDS] [--emit-hlo DIR] [--generic-regions] WORKLOAD...
//
// WORKLOAD (the same spelling as evaluator_torch.py):
//   max_pool2d_with_indices:N,C,H,W           3x3 window, stride 2, padding 1 (resnet's stem pool)
//   max_pool2d_with_indices_backward:N,C,H,W  its gradient (select-and-scatter)
//   mm:M,K,N                                  f32 [M,K] x [K,N]
//   conv2d:N,C,H,W,O                          f32 3x3 convolution, stride 1, padding 1, no bias
// Each workload runs on deterministic random f32 inputs, at least once and until --min-time (default 1 s)
// has passed (at most 50 runs); the line printed is `WORKLOAD BEST_SECONDS RUNS`. Seconds are the CPU time
// of the process (the evaluator runs on the calling thread; on a shared machine, wall time also counts
// the time other processes hold the core). --emit-hlo writes each
// lowered module to DIR/WORKLOAD.hlo; --generic-regions evaluates every called computation per element
// (EvaluatorOptions::compiled_regions off, the evaluator before the compiled loops). A bad workload is
// one line on stderr and exit 2.
#include <fmt/format.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "analyzer/lowering/lowering.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/printer.h"
#include "support/file_io.h"
#include "support/quote.h"

namespace opprobe {
namespace {

using analyzer::Node;
using analyzer::Value;
using hlo::PrimitiveType;

Value T(std::vector<int64_t> sizes, PrimitiveType t = PrimitiveType::F32) {
  analyzer::TensorMeta m;
  m.dtype = t;
  m.sizes = std::move(sizes);
  return Value::Tensor(m);
}

Node MakeNode(std::string op, std::vector<analyzer::Argument> args, std::vector<Value> outputs) {
  Node n;
  n.op = std::move(op);
  n.overload = "default";
  n.args = std::move(args);
  n.outputs = std::move(outputs);
  return n;
}

Expected<std::vector<int64_t>> Sizes(const std::string& spec, size_t colon, size_t count) {
  std::vector<int64_t> v;
  std::string rest = spec.substr(colon + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string part = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long long x = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || x < 1 || x > (1 << 20))
      return InvalidInput(fmt::format("workload {}: sizes must be positive integers", support::Quote(spec)));
    v.push_back(x);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (v.size() != count)
    return InvalidInput(fmt::format("workload {}: expected {} sizes, got {}", support::Quote(spec), count, v.size()));
  return v;
}

// The aten call a workload stands for.
Expected<Node> WorkloadNode(const std::string& spec) {
  size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  if (colon == std::string::npos)
    return InvalidInput(fmt::format("workload {}: expected KIND:SIZES", support::Quote(spec)));
  auto pool_out = [](int64_t in) { return (in + 2 - 3) / 2 + 1; };
  auto pool_args = [](Value self) -> std::vector<analyzer::Argument> {
    return {{"self", self},
            {"kernel_size", Value::IntList({3, 3})},
            {"stride", Value::IntList({2, 2})},
            {"padding", Value::IntList({1, 1})},
            {"dilation", Value::IntList({1, 1})},
            {"ceil_mode", Value::Bool(false)}};
  };
  if (kind == "max_pool2d_with_indices" || kind == "max_pool2d_with_indices_backward") {
    OPPROBE_ASSIGN_OR_RETURN(auto s, Sizes(spec, colon, 4));
    std::vector<int64_t> out = {s[0], s[1], pool_out(s[2]), pool_out(s[3])};
    if (kind == "max_pool2d_with_indices")
      return MakeNode("aten::max_pool2d_with_indices", pool_args(T(s)), {T(out), T(out, PrimitiveType::S64)});
    auto args = pool_args(T(s));
    args.insert(args.begin(), {"grad_output", T(out)});
    args.push_back({"indices", T(out, PrimitiveType::S64)});
    return MakeNode("aten::max_pool2d_with_indices_backward", std::move(args), {T(s)});
  }
  if (kind == "mm") {
    OPPROBE_ASSIGN_OR_RETURN(auto s, Sizes(spec, colon, 3));
    return MakeNode("aten::mm", {{"self", T({s[0], s[1]})}, {"mat2", T({s[1], s[2]})}}, {T({s[0], s[2]})});
  }
  if (kind == "conv2d") {
    OPPROBE_ASSIGN_OR_RETURN(auto s, Sizes(spec, colon, 5));
    return MakeNode("aten::convolution",
                    {{"input", T({s[0], s[1], s[2], s[3]})},
                     {"weight", T({s[4], s[1], 3, 3})},
                     {"bias", Value::None()},
                     {"stride", Value::IntList({1, 1})},
                     {"padding", Value::IntList({1, 1})},
                     {"dilation", Value::IntList({1, 1})},
                     {"transposed", Value::Bool(false)},
                     {"output_padding", Value::IntList({0, 0})},
                     {"groups", Value::Int(1)}},
                    {T({s[0], s[4], s[2], s[3]})});
  }
  return InvalidInput(
      fmt::format("workload {}: unknown kind (max_pool2d_with_indices, "
                  "max_pool2d_with_indices_backward, mm, conv2d)",
                  support::Quote(spec)));
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int Run(int argc, char** argv) {
  double min_time = 1.0;
  std::string emit_dir;
  hlo::EvaluatorOptions options;
  std::vector<std::string> workloads;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--min-time" || a == "--emit-hlo") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--emit-hlo") {
        emit_dir = v;
        continue;
      }
      char* end = nullptr;
      min_time = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(min_time >= 0)) {
        std::fprintf(stderr, "opprobe_eval_bench: --min-time %s: expected seconds\n", support::Quote(v).c_str());
        return 2;
      }
    } else if (a == "--generic-regions") {
      options.compiled_regions = false;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "opprobe_eval_bench: unknown option %s\n", support::Quote(a).c_str());
      return 2;
    } else {
      workloads.push_back(a);
    }
  }
  if (workloads.empty()) {
    std::fprintf(stderr,
                 "usage: opprobe_eval_bench [--min-time SECONDS] [--emit-hlo DIR] [--generic-regions] WORKLOAD...\n");
    return 2;
  }
  for (const std::string& w : workloads) {
    auto node = WorkloadNode(w);
    if (!node.ok()) {
      std::fprintf(stderr, "opprobe_eval_bench: %s\n", node.status().message().c_str());
      return 2;
    }
    auto lowered = analyzer::Lower(*node, analyzer::LoweringTable::Builtin());
    if (!lowered.ok()) {
      std::fprintf(stderr, "opprobe_eval_bench: %s: %s\n", w.c_str(), lowered.status().message().c_str());
      return 4;
    }
    const hlo::Module& module = *lowered->module;
    if (!emit_dir.empty()) {
      std::string name = w;
      for (char& c : name)
        if (c == ':' || c == ',') c = '_';
      Status st = io::WriteFileAtomically(emit_dir + "/" + name + ".hlo", hlo::ToString(module));
      if (!st.ok()) {
        std::fprintf(stderr, "opprobe_eval_bench: %s\n", st.message().c_str());
        return 2;
      }
    }
    auto args = hlo::RandomArguments(*module.entry(), 1);
    double best = 1e300, total = 0;
    int runs = 0;
    while (runs == 0 || (total < min_time && runs < 50)) {
      double t0 = CpuSeconds();
      auto r = hlo::Evaluate(module, args, options);
      double s = CpuSeconds() - t0;
      if (!r.ok()) {
        std::fprintf(stderr, "opprobe_eval_bench: %s: %s\n", w.c_str(), r.status().message().c_str());
        return 4;
      }
      best = std::min(best, s), total += s, ++runs;
    }
    std::printf("%s %.6f %d\n", w.c_str(), best, runs);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace opprobe

int main(int argc, char** argv) { return opprobe::Run(argc, argv); }
