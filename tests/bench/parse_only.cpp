// The reference of `scripts/bench warm`: what `opprobe analyze INPUT` does before it lowers or probes anything,
// and nothing else. One process per call, as opprobe is one: start (the same libraries), tell the input's kind
// (analyzer::DetectInput), load it as AnalyzeInputs does (its format's loader for HLO and StableHLO, LoadGraph for
// traces and .pt2), and exit without freeing it, as `opprobe analyze` leaves its result to the exit.
// `opprobe_parse_only INPUT...` prints what it loaded; exit 2 with the loader's message on bad input.
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/pipeline/pipeline.h"

int main(int argc, char** argv) {
  using namespace opprobe::analyzer;
  std::vector<Input> inputs;
  for (int i = 1; i < argc; ++i) {
    auto in = DetectInput(argv[i]);
    if (!in.ok()) {
      std::fprintf(stderr, "opprobe_parse_only: %s\n", in.status().message().c_str());
      return 2;
    }
    inputs.push_back(*in);
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: opprobe_parse_only INPUT...\n");
    return 2;
  }
  if (FormatOf(inputs[0].kind).level == InputLevel::kHlo) {
    size_t modules = 0, instructions = 0;
    for (const auto& in : inputs) {
      if (FormatOf(in.kind).level != InputLevel::kHlo) {
        std::fprintf(stderr, "opprobe_parse_only: %s: aten inputs cannot be mixed with HLO inputs\n", in.path.c_str());
        return 2;
      }
      auto loaded = FormatOf(in.kind).load_modules(in.path);
      if (!loaded.ok()) {
        std::fprintf(stderr, "opprobe_parse_only: %s\n", loaded.status().message().c_str());
        return 2;
      }
      for (const auto& m : *loaded) {
        ++modules;
        if (m.module->entry()) instructions += m.module->entry()->instructions().size();
      }
      [[maybe_unused]] auto* left_to_exit = new auto(std::move(*loaded));
    }
    std::printf("hlo: %zu modules, %zu entry instructions\n", modules, instructions);
    return 0;
  }
  auto graph = LoadGraph(inputs);
  if (!graph.ok()) {
    std::fprintf(stderr, "opprobe_parse_only: %s\n", graph.status().message().c_str());
    return 2;
  }
  std::printf("%s: %zu aten nodes\n", graph->input_kind.c_str(), graph->nodes.size());
  [[maybe_unused]] auto* left_to_exit = new auto(std::move(*graph));
  return 0;
}
