// The reference of `scripts/bench batch`: one whole program compiled once by a backend's compiler, as the target
// receives it (Backend::compile: no run), in a process of its own as opprobe is one. `opprobe_compile_whole SPEC
// FILE` compiles the largest module of FILE (HLO text or proto: torch_xla's dump of a training step) and prints
// `opprobe-bench compile_s=X instructions=N verdict=V` (X: the compile alone, the backend's start not counted);
// exit 2 on bad input, 3 when the backend is not installed.
#include <chrono>
#include <cstdio>
#include <string>

#include "analyzer/loaders/hlo_loader.h"
#include "analyzer/pipeline/pipeline.h"

int main(int argc, char** argv) {
  using namespace opprobe;
  if (argc != 3) {
    std::fprintf(stderr, "usage: opprobe_compile_whole BACKEND_SPEC FILE.hlo\n");
    return 2;
  }
  auto loaded = analyzer::LoadHlo(argv[2]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "opprobe_compile_whole: %s\n", loaded.status().message().c_str());
    return 2;
  }
  const hlo::Module* program = nullptr;
  size_t instructions = 0;
  for (const auto& m : *loaded) {
    size_t n = 0;
    for (const auto& c : m.module->computations()) n += c->instructions().size();
    if (n > instructions) instructions = n, program = m.module.get();
  }
  if (!program) {
    std::fprintf(stderr, "opprobe_compile_whole: %s holds no module\n", argv[2]);
    return 2;
  }
  auto backend = analyzer::CreateBackend(argv[1], 600);
  if (!backend.ok()) {
    std::fprintf(stderr, "opprobe_compile_whole: %s\n", backend.status().message().c_str());
    return backend.status().code() == ErrorCode::kUnavailable ? 3 : 2;
  }
  auto start = std::chrono::steady_clock::now();
  compiler_probe::Verdict v = (*backend)->compile(*program);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("opprobe-bench compile_s=%.3f instructions=%zu verdict=%s\n", seconds, instructions,
              std::string(compiler_probe::VerdictKindName(v.kind)).c_str());
  if (!v.supported()) std::fprintf(stderr, "opprobe_compile_whole: %s\n", v.reason.c_str());
  return 0;
}
