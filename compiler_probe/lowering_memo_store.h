// The lowering memo store interface: the analyzer's memoized lowering outcomes (analyzer/driver/lowering_memo.h:
// each distinct call's lowering, keyed by a hash of opprobe's build and the call's signature), kept across runs so
// that a warm run lowers nothing. It sits beside the probe cache (cache.h), which is about verdicts only; the local
// disk cache implements both (disk_cache.h), in one database. Memos stay on this machine: a shared cache
// (remote/) holds verdicts only, since a memo is cheaper to derive again than to fetch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace opprobe::compiler_probe {

class LoweringMemoStore {
 public:
  virtual ~LoweringMemoStore() = default;
  // One answer per key, in order. The key says everything the value depends on; a value that does not check out
  // (damaged, edited) reads as a miss.
  virtual std::vector<std::optional<std::string>> LookupMemos(const std::vector<uint64_t>& keys) = 0;
  // A key stored again is replaced.
  virtual void StoreMemos(const std::vector<std::pair<uint64_t, std::string>>& entries) = 0;
};

}  // namespace opprobe::compiler_probe
