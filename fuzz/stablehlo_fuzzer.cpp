// StableHLO text: read and convert the input (hlo::ParseStableHlo), then print what it made, write it as
// HloModuleProto and make every instruction's probe unit, as `opprobe analyze` does with it.
#include "fuzz/fuzz_common.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/proto_io.h"
#include "hlo/stablehlo/stablehlo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  auto module = hlo::ParseStableHlo(fuzz::AsText(data, size), "fuzz.mlir");
  fuzz::CheckResult(module);
  if (!module.ok()) return 0;
  const hlo::Module& m = **module;
  (void)hlo::ToString(m);
  fuzz::CheckResult(hlo::ModuleToProtoBytes(m));
  if (m.entry())
    for (const auto& i : m.entry()->instructions()) (void)hlo::Fingerprint(*hlo::MakeProbeModule(*i));
  return 0;
}
