// An opprobe report JSON as `opprobe diff` and `analyze --baseline` read it; a report that passes the
// checks is also diffed against itself.
#include "fuzz/fuzz_common.h"
#include "reports/diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  static opprobe::fuzz::TempFile file(".json");
  auto report = reports::LoadReport(file.Write(data, size));
  opprobe::fuzz::CheckResult(report);
  if (report.ok()) (void)reports::DiffReports(*report, *report, {});
  return 0;
}
