// A .pt2 file as the CLI opens it: a zip archive (legacy, PT2 archive, ETRecord) or a bare program JSON.
#include "analyzer/loaders/pt2_loader.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  static opprobe::fuzz::TempFile file(".pt2");
  opprobe::fuzz::CheckResult(analyzer::LoadPt2(file.Write(data, size)));
  return 0;
}
