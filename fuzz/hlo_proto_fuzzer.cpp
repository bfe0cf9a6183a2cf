// HLO proto (HloProto or HloModuleProto bytes): read, print, and write back.
#include "fuzz/fuzz_common.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  auto module = hlo::ModuleFromProtoBytes(fuzz::AsText(data, size), "fuzz.pb");
  fuzz::CheckResult(module);
  if (!module.ok()) return 0;
  (void)hlo::ToString(**module);
  fuzz::CheckResult(hlo::ModuleToProtoBytes(**module));
  return 0;
}
