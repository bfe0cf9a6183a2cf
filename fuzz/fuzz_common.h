// Shared by the libFuzzer targets (fuzz/*_fuzzer.cpp): the contract every loader keeps for bad input.
// A rejected input must come back as a Status whose message is one line of printable text of bounded
// length; anything else (an exception, an abort, a sanitizer report, a multi-line message) is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hlo/status.h"

namespace opprobe::fuzz {

inline void CheckMessage(const Status& s) {
  if (s.ok()) return;
  const std::string& m = s.message();
  bool bad = m.empty() || m.size() > 4096;
  for (char ch : m) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) bad = true;
  }
  if (bad) {
    std::fprintf(stderr, "contract: error message is not one printable line (%zu bytes)\n", m.size());
    std::abort();
  }
}

template <typename E>
void CheckResult(const E& e) {
  if (!e.ok()) CheckMessage(e.status());
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Loaders that take a path get the input through a file of this process (its name ends in `suffix`).
class TempFile {
 public:
  explicit TempFile(const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/opprobe-fuzz-" + std::to_string(getpid()) + suffix;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& Write(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) std::abort();
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace opprobe::fuzz
