// opprobe's trace JSON (what `opprobe capture` writes).
#include "analyzer/loaders/trace_loader.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  opprobe::fuzz::CheckResult(analyzer::ParseTrace(opprobe::fuzz::AsText(data, size), "fuzz.json"));
  return 0;
}
