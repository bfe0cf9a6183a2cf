// One torch.export ExportedProgram JSON (the program entry of a .pt2 archive).
#include "analyzer/loaders/pt2_program.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  analyzer::Graph graph;
  opprobe::fuzz::CheckMessage(analyzer::DecodeExportedProgram(opprobe::fuzz::AsText(data, size), "model",
                                                              "fuzz.pt2: entry 'model.json'", graph));
  return 0;
}
