#include "support/temp_folder.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "support/exit_cleanup.h"

namespace opprobe::io {

Expected<TempFolder> TempFolder::Create(std::string_view prefix) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::filesystem::path dir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(dir, ec);  // a relative $TMPDIR: the path stays valid
  if (!ec) dir = absolute;
  std::string pattern = (dir / (std::string(prefix) + "XXXXXX")).string();
  // Made and registered under the guard: an exit cleanup that has begun is not raced by a folder it cannot see.
  exit_cleanup::StartGuard guard;
  std::string path = pattern;  // mkdtemp fills in the Xs even when it fails: the message names the pattern
  if (::mkdtemp(path.data()) == nullptr)
    return Internal(fmt::format("cannot create a temporary folder '{}': {}", pattern, std::strerror(errno)));
  exit_cleanup::AddFolder(path);
  return TempFolder(std::move(path));
}

TempFolder& TempFolder::operator=(TempFolder&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

void TempFolder::Remove() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  exit_cleanup::ForgetFolder(path_);  // after the removal: a signal meanwhile removes it as well
  path_.clear();
}

}  // namespace opprobe::io
