// The trace loader alone, for `scripts/bench trace`: reads a trace into an analyzer::Graph (LoadTrace) and prints what
// it holds. Run: ./tests/bench/opprobe_trace_load TRACE.json (time it with /usr/bin/time).
#include <cstdio>

#include "analyzer/loaders/trace_loader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
    return 2;
  }
  auto graph = opprobe::analyzer::LoadTrace(argv[1]);
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", graph.status().message().c_str());
    return 2;
  }
  long long calls = 0;
  for (const auto& n : graph->nodes) calls += n.count;
  std::printf("%zu call records, %lld calls\n", graph->nodes.size(), calls);
  return 0;
}
