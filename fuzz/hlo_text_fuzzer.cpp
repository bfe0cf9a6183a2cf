// HLO text: parse every module of the input, then print it and serialize it to HloModuleProto (the
// layout-suffix overflow of fuzz-findings/hlo_text was only reached there).
#include "fuzz/fuzz_common.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  auto modules = hlo::ParseModules(fuzz::AsText(data, size), "fuzz.hlo");
  fuzz::CheckResult(modules);
  if (!modules.ok()) return 0;
  for (const auto& m : *modules) {
    std::string text = hlo::ToString(*m);
    fuzz::CheckResult(hlo::ParseModule(text, "printed.hlo"));
    fuzz::CheckResult(hlo::ModuleToProtoBytes(*m));
  }
  return 0;
}
