// A temporary folder owned by one object: made fresh and private (mkdtemp, mode 0700) in the temporary directory
// ($TMPDIR, else /tmp), removed with everything in it when the object goes, and registered meanwhile with the exit
// cleanup (support/exit_cleanup.h), so that a signal that ends opprobe removes it too. The one way opprobe makes a
// temporary folder.
#pragma once

#include <string>
#include <string_view>

#include "support/status.h"

namespace opprobe::io {

class TempFolder {
 public:
  // `<temp dir>/<prefix>XXXXXX`; kInternal (naming the pattern and why) when it cannot be made.
  static Expected<TempFolder> Create(std::string_view prefix = "opprobe-");

  TempFolder(TempFolder&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempFolder& operator=(TempFolder&& other) noexcept;
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() { Remove(); }

  // The folder's absolute path (empty once removed).
  const std::string& path() const { return path_; }
  // `path()/name`.
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }
  // Removes the folder now (idempotent).
  void Remove();

 private:
  explicit TempFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace opprobe::io
