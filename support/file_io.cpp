#include "support/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <utility>

#include "support/exit_cleanup.h"
#include "support/quote.h"

namespace opprobe::io {

namespace fs = std::filesystem;

namespace {

Status ReadError(const std::string& path, const std::string& why) {
  return InvalidInput(fmt::format("{}: cannot read: {}", path, why));
}

Status WriteError(const std::string& path, int err) {
  return InvalidInput(fmt::format("{}: cannot write: {}", path, std::strerror(err)));
}

// A fresh name beside `target`: `.NAME.KIND.PID.N` (hidden, so a folder listing does not show it mid-write).
std::string SiblingName(const std::string& target, const char* kind) {
  static std::atomic<uint64_t> counter{0};
  fs::path t(target);
  fs::path dir = t.parent_path();
  std::string name =
      fmt::format(".{}.{}.{}.{}", t.filename().string(), kind, static_cast<long>(::getpid()), counter.fetch_add(1));
  return dir.empty() ? name : (dir / name).string();
}

// Reads from an open descriptor into `out` until EOF or `limit` bytes.
bool ReadAll(int fd, std::string& out, uint64_t limit) {
  char buf[1 << 16];
  while (out.size() < limit) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buf, limit - out.size()));
    ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return true;
}

struct OpenFile {
  int fd;
  struct stat st;
};

// Opens `path` for reading; a folder is an error.
Expected<OpenFile> OpenForReading(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return InvalidInput(fmt::format("{}: no such file", path));
    return ReadError(path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ReadError(path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidInput(fmt::format("{}: is a folder, not a file", path));
  }
  return OpenFile{fd, st};
}

// Reads the open `file` (named `path` in errors) and closes it.
Expected<std::string> ReadOpen(const OpenFile& file, const std::string& path, uint64_t max_bytes, bool whole) {
  const int fd = file.fd;
  const struct stat& st = file.st;
  const bool regular = S_ISREG(st.st_mode);
  const uint64_t size = regular ? static_cast<uint64_t>(st.st_size) : 0;
  if (whole && regular && size > max_bytes) {
    ::close(fd);
    return InvalidInput(
        fmt::format("{}: the file has {} bytes, more than the {} this input may have", path, size, max_bytes));
  }
  std::string data;
  if (regular) data.reserve(static_cast<size_t>(std::min(size, max_bytes)));
  // A pipe or device has no size: read one byte past the cap to tell "exactly at the cap" from "over it".
  const uint64_t limit = whole ? max_bytes + 1 : max_bytes;
  bool ok = ReadAll(fd, data, limit);
  int err = errno;
  ::close(fd);
  if (!ok) return ReadError(path, std::strerror(err));
  if (whole && data.size() > max_bytes)
    return InvalidInput(fmt::format("{}: more than the {} bytes this input may have", path, max_bytes));
  if (whole && regular && data.size() != size)
    return ReadError(path, fmt::format("it changed while being read ({} of {} bytes)", data.size(), size));
  return data;
}

Expected<std::string> Read(const std::string& path, uint64_t max_bytes, bool whole) {
  OPPROBE_ASSIGN_OR_RETURN(OpenFile file, OpenForReading(path));
  return ReadOpen(file, path, max_bytes, whole);
}

// Writes `contents` to a new file `temp` (0666 less the umask) and flushes it to disk.
Status WriteTemp(const std::string& target, const std::string& temp, std::string_view contents, Durability durability) {
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return WriteError(target, errno);
  auto fail = [&](int err) {
    ::close(fd);
    ::unlink(temp.c_str());
    return WriteError(target, err);
  };
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno);
    }
    done += static_cast<size_t>(n);
  }
  // Some file systems (tmpfs in a few kernels, read-only overlays) do not support fsync: not an error.
  if (durability == Durability::kSync && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) return fail(errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return WriteError(target, err);
  }
  return Status::Ok();
}

// The live mappings of FileBytes, for the SIGBUS handler: a read of a mapped file that shrank faults with an
// address inside one of them. The handler reads the table with atomics only (async-signal-safe); a mapping that
// finds no free slot is not made (the file is read instead).
struct MappedGuard {
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<const std::string*> message{nullptr};  // "PATH: cannot read: it changed while being read\n"
};
std::array<MappedGuard, 16> g_mapped;
std::mutex g_mapped_mutex;  // taken to claim and free slots, never by the handler
struct sigaction g_previous_sigbus {};
std::atomic<int> g_changed_exit_status{-1};  // SetChangedInputExitStatus; -1: none set

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const MappedGuard& g : g_mapped) {
    const uintptr_t begin = g.begin.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin || addr >= g.end.load(std::memory_order_acquire)) continue;
    if (const std::string* m = g.message.load(std::memory_order_acquire)) {
      ssize_t ignored = ::write(2, m->data(), m->size());
      (void)ignored;
    }
    if (const int status = g_changed_exit_status.load(std::memory_order_acquire); status >= 0) {
      exit_cleanup::CleanUpNow();  // _exit runs no destructor: the children and temporary folders go here
      ::_exit(status);
    }
    break;  // no status set: the fault goes on as below
  }
  // Not a mapped input (or no exit status set): the action SIGBUS had before, as if this handler were not there.
  if (g_previous_sigbus.sa_flags & SA_SIGINFO) {
    g_previous_sigbus.sa_sigaction(sig, info, context);
  } else if (g_previous_sigbus.sa_handler != SIG_IGN && g_previous_sigbus.sa_handler != SIG_DFL) {
    g_previous_sigbus.sa_handler(sig);
  } else {
    ::sigaction(SIGBUS, &g_previous_sigbus, nullptr);  // returning re-runs the faulting read under it
  }
}

}  // namespace

void SetChangedInputExitStatus(int status) { g_changed_exit_status.store(status, std::memory_order_release); }

namespace {

void InstallSigbusHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

// A free slot for [begin, begin + size) with `message`, or -1.
int ClaimGuard(const void* begin, size_t size, const std::string* message) {
  std::lock_guard<std::mutex> lock(g_mapped_mutex);
  for (size_t i = 0; i < g_mapped.size(); ++i) {
    MappedGuard& g = g_mapped[i];
    if (g.begin.load(std::memory_order_relaxed) != 0) continue;
    g.message.store(message, std::memory_order_release);
    g.end.store(reinterpret_cast<uintptr_t>(begin) + size, std::memory_order_release);
    g.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1;
}

void FreeGuard(int slot) {
  std::lock_guard<std::mutex> lock(g_mapped_mutex);
  MappedGuard& g = g_mapped[static_cast<size_t>(slot)];
  g.begin.store(0, std::memory_order_release);
  g.end.store(0, std::memory_order_release);
  g.message.store(nullptr, std::memory_order_release);
}

}  // namespace

Expected<std::string> ReadFile(const std::string& path, uint64_t max_bytes) { return Read(path, max_bytes, true); }

Expected<std::string> ReadFileHead(const std::string& path, size_t max_bytes) { return Read(path, max_bytes, false); }

Expected<FileBytes> FileBytes::Open(const std::string& path, uint64_t max_bytes) {
  OPPROBE_ASSIGN_OR_RETURN(OpenFile file, OpenForReading(path));
  const auto size = static_cast<uint64_t>(file.st.st_size);
  FileBytes out;
  if (S_ISREG(file.st.st_mode) && size > 0 && size <= max_bytes) {
    void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, file.fd, 0);
    if (map != MAP_FAILED) {
      // The message the SIGBUS handler writes lives in the heap, where a move of this object leaves it.
      auto message = std::make_unique<std::string>(
          support::OneLine(fmt::format("{}: cannot read: it changed while being read", path), 1000) + "\n");
      InstallSigbusHandler();
      const int slot = ClaimGuard(map, static_cast<size_t>(size), message.get());
      if (slot >= 0) {
        ::close(file.fd);
        out.map_ = map;
        out.size_ = static_cast<size_t>(size);
        out.guard_ = slot;
        out.message_ = std::move(message);
        return out;
      }
      ::munmap(map, static_cast<size_t>(size));
    }
  }
  // Not mapped (a pipe, an empty file, one over the cap, a failed mapping): read as ReadFile reads, errors alike.
  OPPROBE_ASSIGN_OR_RETURN(out.data_, ReadOpen(file, path, max_bytes, true));
  return out;
}

FileBytes::FileBytes(FileBytes&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      guard_(std::exchange(other.guard_, -1)),
      message_(std::move(other.message_)),
      data_(std::move(other.data_)) {}

FileBytes& FileBytes::operator=(FileBytes&& other) noexcept {
  if (this != &other) {
    Release();
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
    guard_ = std::exchange(other.guard_, -1);
    message_ = std::move(other.message_);
    data_ = std::move(other.data_);
  }
  return *this;
}

FileBytes::~FileBytes() { Release(); }

void FileBytes::Release() {
  if (!map_) return;
  if (guard_ >= 0) FreeGuard(guard_);
  ::munmap(map_, size_);
  map_ = nullptr;
  guard_ = -1;
}

Expected<FileReader> FileReader::Open(const std::string& path) {
  OPPROBE_ASSIGN_OR_RETURN(OpenFile file, OpenForReading(path));
  const bool regular = S_ISREG(file.st.st_mode);
  return FileReader(file.fd, path, regular, regular ? static_cast<uint64_t>(file.st.st_size) : 0);
}

FileReader::FileReader(FileReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      regular_(other.regular_),
      size_(other.size_),
      done_(other.done_) {}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    regular_ = other.regular_;
    size_ = other.size_;
    done_ = other.done_;
  }
  return *this;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<size_t> FileReader::Read(char* dst, size_t size) {
  if (fd_ < 0 || size == 0) return size_t{0};
  for (;;) {
    ssize_t n = ::read(fd_, dst, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(path_, std::strerror(errno));
    }
    done_ += static_cast<uint64_t>(n);
    if (n == 0 && regular_ && done_ != size_)
      return ReadError(path_, fmt::format("it changed while being read ({} of {} bytes)", done_, size_));
    return static_cast<size_t>(n);
  }
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, Durability durability) {
  FileSet set;
  OPPROBE_RETURN_IF_ERROR(set.Stage(path, contents, durability));
  return set.Commit();
}

FileSet::~FileSet() {
  for (const auto& s : staged_) ::unlink(s.temp.c_str());
}

Status FileSet::Stage(const std::string& path, std::string_view contents, Durability durability) {
  if (path.empty()) return InvalidInput("an output file name is empty");
  std::string temp = SiblingName(path, "tmp");
  OPPROBE_RETURN_IF_ERROR(WriteTemp(path, temp, contents, durability));
  staged_.push_back({path, std::move(temp)});
  return Status::Ok();
}

Status FileSet::Commit() {
  // Before each rename, the file it replaces (if any) gets a second name, so a failure part way can put it back.
  // (A file system without hard links cannot give that second name; such a file stays replaced.)
  struct Done {
    const Staged* s;
    bool existed;        // a file was at the target before
    std::string backup;  // its second name; empty when it could not be made
  };
  std::vector<Done> done;
  Status failure;
  for (const auto& s : staged_) {
    std::string backup = SiblingName(s.target, "old");
    bool existed = true;
    if (::link(s.target.c_str(), backup.c_str()) != 0) {
      existed = errno != ENOENT;
      backup.clear();
    }
    if (::rename(s.temp.c_str(), s.target.c_str()) != 0) {
      failure = WriteError(s.target, errno);
      if (!backup.empty()) ::unlink(backup.c_str());
      break;
    }
    done.push_back({&s, existed, std::move(backup)});
  }
  if (failure.ok()) {
    for (const auto& d : done)
      if (!d.backup.empty()) ::unlink(d.backup.c_str());
    staged_.clear();
    return failure;
  }
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    if (!it->backup.empty()) {
      ::rename(it->backup.c_str(), it->s->target.c_str());
    } else if (!it->existed) {
      ::unlink(it->s->target.c_str());
    }
  }
  // The destructor removes the temporary files that were not renamed (the renamed ones are gone already).
  return failure;
}

}  // namespace opprobe::io
