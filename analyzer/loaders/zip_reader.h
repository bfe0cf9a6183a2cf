// A read-only zip archive (libzip) that never trusts the archive: entry names are checked for
// path traversal, sizes come from the central directory and are enforced while reading, and every read
// has a caller-given cap, so a hostile or corrupt archive costs bounded memory and gives a Status.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

struct zip;  // libzip

namespace opprobe::analyzer {

class ZipReader {
 public:
  struct Entry {
    std::string name;
    uint64_t size = 0;             // uncompressed size (central directory)
    uint64_t compressed_size = 0;  // central directory
    uint16_t method = 0;           // 0 STORED, 8 DEFLATE, ...
    uint64_t index = 0;
  };

  // A reader's limits for Read(): the largest uncompressed entry and the largest compression ratio
  // (uncompressed / compressed) accepted for entries bigger than `ratio_floor` bytes.
  struct Limits {
    uint64_t max_entry_size = 512ull << 20;
    uint64_t max_ratio = 500;  // deflate tops out near 1032:1; real program JSON compresses far less than 100:1
    uint64_t ratio_floor = 1ull << 20;
  };

  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  // Opens `path` and reads its central directory. Fails (kInvalidInput) when the file is not a zip
  // archive, is damaged, or holds an entry whose name is absolute or contains a `..` component.
  static Expected<std::unique_ptr<ZipReader>> Open(const std::string& path);

  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* Find(std::string_view name) const;

  // Reads one entry whole. Fails when the entry is larger than `limits.max_entry_size`, looks like a
  // zip bomb (ratio), or holds a different number of bytes than its declared size.
  Expected<std::string> Read(const Entry& entry, const Limits& limits) const;
  Expected<std::string> Read(const Entry& entry) const { return Read(entry, Limits{}); }

  // True for names that would escape an extraction folder: empty, absolute (`/x`, `\x`, `C:x`),
  // or with a `..` path component.
  static bool IsUnsafeName(std::string_view name);

 private:
  ZipReader() = default;
  ::zip* zip_ = nullptr;
  std::string path_;
  std::vector<Entry> entries_;
};

}  // namespace opprobe::analyzer
