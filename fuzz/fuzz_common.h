// Shared by the libFuzzer targets (fuzz/*_fuzzer.cpp): the contract every loader keeps for bad input.
// A rejected input must come back as a Status whose message is one line of printable text of bounded
// length; anything else (an exception, an abort, a sanitizer report, a multi-line message, a line libprotobuf
// logs to stderr) is a finding.
#pragma once

#include <google/protobuf/stubs/logging.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "support/status.h"

namespace opprobe::fuzz {

// libprotobuf writes its complaints (invalid UTF-8 in a string field, a message too deep) to stderr, past the
// loader's Status; the loaders silence it where they parse bytes (LogSilencer) and check what they write. Any
// line that still reaches the log handler breaks the one-line promise, so it aborts the run as a finding.
inline void TrapProtobufLog(google::protobuf::LogLevel level, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "contract: libprotobuf logged (level %d) at %s:%d: %s\n", static_cast<int>(level), file, line,
               msg.c_str());
  std::abort();
}
inline const bool kProtobufLogTrapped = (google::protobuf::SetLogHandler(&TrapProtobufLog), true);

inline void CheckMessage(const Status& s) {
  (void)kProtobufLogTrapped;  // used here so that every target that checks a message installs the trap
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

inline std::string_view AsText(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

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
