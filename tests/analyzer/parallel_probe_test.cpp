// Parallel probing against one shared cache: the same verdicts with any number of probe threads, each unit probed
// once, and a second run answered by the cache alone. scripts/check tsan runs these under ThreadSanitizer (the probe
// threads, the progress callback and the SQLite cache are what it watches).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>

#include "analyzer/driver/driver.h"
#include "compiler_probe/disk_cache.h"
#include "hlo/builder.h"
#include "tests/testing/temp_dir_test.h"

namespace opprobe::analyzer {
namespace {

using hlo::PrimitiveType;

// Refuses a negate of an odd length; counts the probes of each unit (by its root's shape).
class CountingBackend : public compiler_probe::Backend {
 public:
  std::string id() const override { return "counting"; }
  std::string version() const override { return "1"; }
  compiler_probe::Verdict probe(const hlo::Module& unit) override {
    const int64_t n = unit.entry()->root()->shape.dimensions(0);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!seen_.insert(n).second) ++repeats;
    }
    ++probes;
    if (n % 2) return compiler_probe::Verdict::Unsupported("odd length " + std::to_string(n));
    return compiler_probe::Verdict::Supported();
  }
  std::atomic<int> probes{0};
  std::atomic<int> repeats{0};

 private:
  std::mutex mu_;
  std::set<int64_t> seen_;
};

LoweringTable NegTable() {
  LoweringTable t;
  t.Register("test::neg", "toy", [](const Node& n, hlo::Builder& b) -> Expected<LoweredOp> {
    auto* x = b.NextParameter(hlo::Shape::Array(PrimitiveType::F32, n.args[0].value.tensor.sizes));
    return LoweredOp{{b.Unary(hlo::Opcode::kNegate, x)}, false, ""};
  });
  return t;
}

// 64 distinct units (negates of lengths 1..64), each called from two lines.
Graph ManyUnits() {
  Graph g;
  g.model = "model.py";
  for (int64_t len = 1; len <= 64; ++len)
    for (int line : {10, 20}) {
      Node n;
      n.op = "test::neg";
      n.overload = "default";
      TensorMeta t{PrimitiveType::F32, {len}, {}, {}};
      n.args = {{"self", Value::Tensor(t)}};
      n.outputs = {Value::Tensor(t)};
      n.loc = {"model.py", line + static_cast<int>(len)};
      g.nodes.push_back(n);
    }
  return g;
}

class ParallelProbe : public testing::TempDirTest {};

TEST_F(ParallelProbe, AnyNumberOfThreadsGivesTheSameVerdictsOnceEachThroughOneCache) {
  const Graph g = ManyUnits();
  std::string serial_unsupported;
  for (int jobs : {1, 4, 8}) {
    SCOPED_TRACE(jobs);
    auto cache = compiler_probe::OpenDiskCache(Path("cache" + std::to_string(jobs)));
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    CountingBackend backend;
    std::atomic<int64_t> last_done{0};
    DriverOptions opts;
    opts.jobs = jobs;
    opts.cache = cache->get();
    opts.on_progress = [&](int64_t done, int64_t total) {
      EXPECT_LE(done, total);
      last_done = done;
    };
    AnalysisResult r = Analyze(g, backend, NegTable(), opts);
    EXPECT_EQ(r.summary.unique_probes, 64);
    EXPECT_EQ(backend.probes.load(), 64);
    EXPECT_EQ(backend.repeats.load(), 0) << "a unit probed twice";
    EXPECT_EQ(last_done.load(), 64);
    std::string unsupported;
    for (const auto& op : r.ops)
      if (!r.OpSupported(op)) unsupported += r.FailureReason(op) + ";";
    if (jobs == 1) serial_unsupported = unsupported;
    EXPECT_EQ(unsupported, serial_unsupported);
    EXPECT_EQ(r.SupportPercentage(), 50.0);

    // The second run, on as many threads, takes every verdict from the cache the first one filled.
    CountingBackend again;
    AnalysisResult warm = Analyze(g, again, NegTable(), opts);
    EXPECT_EQ(again.probes.load(), 0);
    EXPECT_EQ(warm.SupportPercentage(), 50.0);
  }
}

}  // namespace
}  // namespace opprobe::analyzer
