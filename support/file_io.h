// Reading and writing whole files, the one way every folder does it: reads are size-capped and name the file in
// their errors; writes go to a temporary file beside the target, are flushed to disk (fsync) and renamed into
// place, so a reader sees the old file or the new one and never half of one. A FileSet replaces several files
// all together or not at all (a multi-format report run).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/status.h"

namespace opprobe::io {

// The default cap of ReadFile: larger inputs are refused with a located error instead of exhausting memory.
inline constexpr uint64_t kMaxReadBytes = uint64_t{2} << 30;  // 2 GiB

// The whole file. Errors (kInvalidInput) start with the path: missing, a folder, unreadable, larger than
// `max_bytes`, or shorter than its size said.
Expected<std::string> ReadFile(const std::string& path, uint64_t max_bytes = kMaxReadBytes);

// Up to `max_bytes` from the start of the file (for telling formats apart); errors as ReadFile.
Expected<std::string> ReadFileHead(const std::string& path, size_t max_bytes);

// The whole file as bytes to read once (a large HLO module): a regular, non-empty file is mapped, not copied (no
// copy and no zero-filled pages to fault in); anything else (a pipe, an empty file) is read as ReadFile reads it.
// Errors as ReadFile. A mapped file that shrinks while it is mapped would make a read past its new end raise
// SIGBUS: the handler installed with the first mapping turns that into one line on stderr,
// "PATH: cannot read: it changed while being read", and ends the process as SetChangedInputExitStatus says (a SIGBUS
// anywhere else keeps the action it had). The bytes stay valid as long as the object.
// How the process ends when a mapped input changed while being read (FileBytes), which is bad input
// (ErrorCode::kInvalidInput) found where no error value can be returned: after its line on stderr the SIGBUS handler
// runs the exit cleanup and calls `_exit(status)` with the status the program sets here (cli/ sets its exit code for
// bad input, cli::ExitCodeFor). Until a program sets one (status < 0), the process ends by the action SIGBUS had
// before the handler: this library never chooses a program's exit code.
void SetChangedInputExitStatus(int status);

class FileBytes {
 public:
  static Expected<FileBytes> Open(const std::string& path, uint64_t max_bytes = kMaxReadBytes);
  FileBytes(FileBytes&& other) noexcept;
  FileBytes& operator=(FileBytes&& other) noexcept;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();

  std::string_view view() const { return map_ ? std::string_view(static_cast<const char*>(map_), size_) : data_; }
  bool mapped() const { return map_ != nullptr; }

 private:
  FileBytes() = default;
  void Release();
  void* map_ = nullptr;  // null: the bytes are in data_
  size_t size_ = 0;
  int guard_ = -1;                        // this mapping's slot in the SIGBUS handler's table, or -1
  std::unique_ptr<std::string> message_;  // what the handler writes (in the heap: a move leaves it in place)
  std::string data_;
};

// A file read front to back in pieces, for an input that is parsed as it arrives and so is never held whole (a
// trace of any size). Open fails as ReadFile does (missing, a folder, unreadable); Read's errors name the file, and a
// file that changes size while it is read is an error at its end, as in ReadFile.
class FileReader {
 public:
  static Expected<FileReader> Open(const std::string& path);
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  // Up to `size` bytes into `dst`: how many were read; 0 at the end of the file.
  Expected<size_t> Read(char* dst, size_t size);
  const std::string& path() const { return path_; }

 private:
  FileReader(int fd, std::string path, bool regular, uint64_t size)
      : fd_(fd), path_(std::move(path)), regular_(regular), size_(size) {}
  int fd_ = -1;
  std::string path_;
  bool regular_ = false;
  uint64_t size_ = 0;  // of a regular file when opened
  uint64_t done_ = 0;  // bytes read so far
};

// Whether a write waits for the data to reach the disk before the rename. kNoSync is for files that are cheap to
// lose but must never be seen half-written (probe cache entries: a lost one is probed again).
enum class Durability { kSync, kNoSync };

// Replaces `path` with `contents` atomically (temporary file in the same folder, fsync, rename). The new file
// has the permissions of an ordinary new file (0666 less the umask). On error nothing at `path` has changed and
// no temporary file is left; the message names `path`.
Status WriteFileAtomically(const std::string& path, std::string_view contents,
                           Durability durability = Durability::kSync);

// Several files replaced together: Stage writes each one's full contents to a temporary file beside its target
// (fsync'd); Commit renames them all into place, putting back the earlier files if a rename fails part way. A
// FileSet destroyed without a successful Commit removes its temporary files and leaves every target as it was.
class FileSet {
 public:
  FileSet() = default;
  FileSet(const FileSet&) = delete;
  FileSet& operator=(const FileSet&) = delete;
  ~FileSet();

  Status Stage(const std::string& path, std::string_view contents, Durability durability = Durability::kSync);
  Status Commit();

 private:
  struct Staged {
    std::string target;
    std::string temp;
  };
  std::vector<Staged> staged_;
};

}  // namespace opprobe::io
