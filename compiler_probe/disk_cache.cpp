#include "compiler_probe/disk_cache.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "hlo/file_io.h"
#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kLayout = "v1";
constexpr const char* kBackendFile = "backend.json";

bool IsSafeName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

// A cache entry or backend description; anything larger is not one of ours.
constexpr uint64_t kMaxEntryBytes = 16 << 20;

std::optional<std::string> ReadSmallFile(const fs::path& p) {
  auto text = io::ReadFile(p.string(), kMaxEntryBytes);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

// A lost entry is probed again, so entries skip the fsync; the rename still keeps them whole.
bool WriteAtomically(const fs::path& path, const std::string& data) {
  return io::WriteFileAtomically(path.string(), data, io::Durability::kNoSync).ok();
}

std::string KindName(Verdict::Kind k) { return std::string(VerdictKindName(k)); }

std::optional<Verdict::Kind> KindFromName(const std::string& s) {
  if (s == "supported") return Verdict::Kind::kSupported;
  if (s == "unsupported") return Verdict::Kind::kUnsupported;
  if (s == "error") return Verdict::Kind::kError;
  return std::nullopt;
}

class DiskCache : public ProbeCache {
 public:
  explicit DiskCache(fs::path root) : root_(std::move(root)) {}

  std::optional<Verdict> Lookup(const std::string& backend_id, const std::string& backend_version,
                                const std::string& fingerprint) override {
    auto text = ReadSmallFile(EntryPath(backend_id, backend_version, fingerprint));
    if (!text) return std::nullopt;
    json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt;
    auto str = [&](const char* key) -> std::optional<std::string> {
      auto it = j.find(key);
      if (it == j.end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    // Guard against hash collisions and hand-edited files: every key must match.
    if (str("backend_id") != backend_id || str("backend_version") != backend_version ||
        str("fingerprint") != fingerprint)
      return std::nullopt;
    auto kind_name = str("verdict");
    if (!kind_name) return std::nullopt;
    auto kind = KindFromName(*kind_name);
    if (!kind) return std::nullopt;
    Verdict v;
    v.kind = *kind;
    v.reason = str("reason").value_or("");
    v.output_tail = str("output_tail").value_or("");
    if (auto it = j.find("seconds"); it != j.end() && it->is_number()) v.seconds = it->get<double>();
    return v;
  }

  void Store(const std::string& backend_id, const std::string& backend_version, const std::string& fingerprint,
             const Verdict& verdict) override {
    if (verdict.kind == Verdict::Kind::kError) return;
    fs::path dir = BackendDir(backend_id, backend_version);
    std::error_code ec;
    if (!fs::exists(dir / kBackendFile, ec)) {
      fs::create_directories(dir, ec);
      json b = {{"backend_id", backend_id}, {"backend_version", backend_version}};
      WriteAtomically(dir / kBackendFile, b.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
    }
    json j = {{"backend_id", backend_id},       {"backend_version", backend_version},
              {"fingerprint", fingerprint},     {"verdict", KindName(verdict.kind)},
              {"reason", verdict.reason},       {"seconds", verdict.seconds},
              {"output_tail", verdict.output_tail}};
    // A failed write only costs a future probe; the cache never fails an analysis.
    WriteAtomically(EntryPath(backend_id, backend_version, fingerprint),
                    j.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  }

 private:
  fs::path BackendDir(const std::string& id, const std::string& version) const {
    return root_ / kLayout / hlo::Fnv1a64Hex(id + '\0' + version);
  }
  fs::path EntryPath(const std::string& id, const std::string& version, const std::string& fingerprint) const {
    std::string name = IsSafeName(fingerprint) ? fingerprint : "h" + hlo::Fnv1a64Hex(fingerprint);
    return BackendDir(id, version) / (name + ".json");
  }

  fs::path root_;
};

bool IsEntryFile(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  return e.is_regular_file() && name != kBackendFile && name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

bool IsTempFile(const fs::directory_entry& e) {
  return e.is_regular_file() && e.path().filename().string().find(".json.tmp.") != std::string::npos;
}

}  // namespace

std::string DefaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/opprobe";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/opprobe";
  return fmt::format("/tmp/opprobe-cache-{}", ::getuid());
}

Expected<std::unique_ptr<ProbeCache>> OpenDiskCache(const std::string& dir) {
  if (dir.empty()) return InvalidInput("cache directory is empty");
  std::error_code ec;
  fs::path root(dir);
  fs::create_directories(root / kLayout, ec);
  if (ec) return InvalidInput(fmt::format("cannot use cache directory '{}': {}", dir, ec.message()));
  if (::access((root / kLayout).c_str(), W_OK | X_OK) != 0)
    return InvalidInput(fmt::format("cannot use cache directory '{}': not writable", dir));
  return std::unique_ptr<ProbeCache>(std::make_unique<DiskCache>(root));
}

Expected<DiskCacheStats> GetDiskCacheStats(const std::string& dir) {
  DiskCacheStats stats;
  stats.dir = dir;
  fs::path layout = fs::path(dir) / kLayout;
  std::error_code ec;
  if (!fs::exists(layout, ec)) return stats;
  fs::directory_iterator it(layout, ec);
  if (ec) return InvalidInput(fmt::format("cannot read cache directory '{}': {}", layout.string(), ec.message()));
  for (const auto& bdir : it) {
    if (!bdir.is_directory(ec)) continue;
    DiskCacheStats::Backend b;
    if (auto text = ReadSmallFile(bdir.path() / kBackendFile)) {
      json j = json::parse(*text, nullptr, false);
      if (j.is_object() && j.contains("backend_id") && j["backend_id"].is_string()) b.id = j["backend_id"];
      if (j.is_object() && j.contains("backend_version") && j["backend_version"].is_string())
        b.version = j["backend_version"];
    }
    if (b.id.empty()) b.id = "(unknown backend " + bdir.path().filename().string() + ")";
    for (const auto& e : fs::directory_iterator(bdir.path(), ec)) {
      if (!IsEntryFile(e)) continue;
      ++b.entries;
      b.bytes += static_cast<int64_t>(e.file_size(ec));
    }
    stats.entries += b.entries;
    stats.bytes += b.bytes;
    stats.backends.push_back(std::move(b));
  }
  std::sort(stats.backends.begin(), stats.backends.end(),
            [](const auto& a, const auto& b) { return std::tie(a.id, a.version) < std::tie(b.id, b.version); });
  return stats;
}

Expected<int64_t> ClearDiskCache(const std::string& dir) {
  fs::path layout = fs::path(dir) / kLayout;
  std::error_code ec;
  if (!fs::exists(layout, ec)) return int64_t{0};
  int64_t removed = 0;
  fs::directory_iterator it(layout, ec);
  if (ec) return InvalidInput(fmt::format("cannot read cache directory '{}': {}", layout.string(), ec.message()));
  for (const auto& bdir : it) {
    if (!bdir.is_directory(ec)) continue;
    for (const auto& e : fs::directory_iterator(bdir.path(), ec)) {
      bool entry = IsEntryFile(e);
      if (entry || IsTempFile(e) || e.path().filename() == kBackendFile) {
        if (fs::remove(e.path(), ec) && entry) ++removed;
      }
    }
    fs::remove(bdir.path(), ec);  // only when empty
  }
  return removed;
}

}  // namespace opprobe::compiler_probe
