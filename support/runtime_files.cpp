#include "support/runtime_files.h"

#include <algorithm>
#include <system_error>

// Set for this file alone by hlo/CMakeLists.txt: the folders this build was configured with.
#ifndef OPPROBE_BUILD_ROOT
#define OPPROBE_BUILD_ROOT ""
#endif
#ifndef OPPROBE_SOURCE_ROOT
#define OPPROBE_SOURCE_ROOT ""
#endif

namespace opprobe::io {

namespace {

namespace fs = std::filesystem;

// The running program, symbolic links resolved (the kernel's own answer); empty when it cannot be read.
fs::path Self() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self;
}

// PREFIX of PREFIX/bin/opprobe: the folder above the program's.
fs::path Prefix(const fs::path& self) { return self.parent_path().parent_path(); }

bool Within(const fs::path& path, const fs::path& folder) {
  if (folder.empty() || path.empty()) return false;
  auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  // A trailing separator of `folder` is one empty last element.
  return f == folder.end() || (std::next(f) == folder.end() && f->empty());
}

bool InBuildTree(const fs::path& self) {
  if (std::string_view(OPPROBE_BUILD_ROOT).empty()) return false;
  std::error_code ec;
  fs::path build = fs::weakly_canonical(OPPROBE_BUILD_ROOT, ec);
  return !ec && Within(self, build);
}

}  // namespace

bool RunningFromBuildTree() { return InBuildTree(Self()); }

std::vector<fs::path> HelperPlaces(std::string_view name) {
  std::vector<fs::path> places;
  fs::path self = Self();
  if (self.empty()) return places;
  places.push_back(Prefix(self) / kInstalledHelperDir / name);
  if (InBuildTree(self)) places.push_back(fs::path(OPPROBE_BUILD_ROOT) / name);
  return places;
}

std::vector<fs::path> DataPlaces(std::string_view installed_name, std::string_view source_name) {
  std::vector<fs::path> places;
  fs::path self = Self();
  if (self.empty()) return places;
  places.push_back(Prefix(self) / kInstalledDataDir / installed_name);
  if (InBuildTree(self)) places.push_back(fs::path(OPPROBE_SOURCE_ROOT) / source_name);
  return places;
}

std::string FirstFile(const std::vector<fs::path>& places, std::string_view file) {
  for (const auto& p : places) {
    fs::path candidate = file.empty() ? p : p / file;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
  }
  return "";
}

std::string DescribePlaces(const std::vector<fs::path>& places, std::string_view file) {
  if (places.empty()) return "(the running program's path cannot be read from /proc/self/exe)";
  std::string out;
  for (size_t i = 0; i < places.size(); ++i) {
    if (i > 0) out += i + 1 == places.size() ? " or " : ", ";
    out += (file.empty() ? places[i] : places[i] / file).lexically_normal().string();
  }
  return out;
}

}  // namespace opprobe::io
