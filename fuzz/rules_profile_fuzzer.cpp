// A rules-backend profile JSON (`--backend rules:FILE`, docs/profiles.md).
#include "compiler_probe/rules/rules_backend.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opprobe;
  std::string text(reinterpret_cast<const char*>(data), size);
  opprobe::fuzz::CheckResult(compiler_probe::rules::ParseProfile(text, "fuzz-profile.json"));
  return 0;
}
