// `opprobe cache stats|clear [--cache DIR]`: inspect or empty the persistent probe cache (compiler_probe/disk_cache.h),
// or a cache server.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "compiler_probe/disk_cache.h"
#include "compiler_probe/remote/store.h"

namespace opprobe::cli {

namespace {

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024 * 1024));
}

// `cache stats --cache redis://...|http(s)://...`: the server's entries per backend and its hit counters.
int RemoteStats(const std::string& url) {
  auto store = compiler_probe::OpenRemoteStore(url);
  if (!store.ok()) return ReportError(store.status().WithContext("--cache"));
  auto s = (*store)->Stats();
  if (!s.ok()) return ReportError(s.status());
  std::printf("cache: %s\n", s->where.c_str());
  if (s->listed) {
    std::printf("entries: %lld (%s)\n", static_cast<long long>(s->entries), HumanBytes(s->bytes).c_str());
  } else {
    std::printf(
        "entries: unknown (the server does not list its folders; nginx: autoindex on; autoindex_format json;)\n");
  }
  for (const auto& b : s->backends)
    std::printf("  %lld  %s  [%s]\n", static_cast<long long>(b.entries), b.id.c_str(), b.version.c_str());
  std::printf("hits: %lld, misses: %lld, stores: %lld (all runs)\n", static_cast<long long>(s->hits),
              static_cast<long long>(s->misses), static_cast<long long>(s->stores));
  return 0;
}

int RemoteClear(const std::string& url) {
  auto store = compiler_probe::OpenRemoteStore(url);
  if (!store.ok()) return ReportError(store.status().WithContext("--cache"));
  auto n = (*store)->Clear();
  if (!n.ok()) return ReportError(n.status());
  std::printf("removed %lld entries from %s\n", static_cast<long long>(*n), (*store)->Where().c_str());
  return 0;
}

}  // namespace

void RegisterCache(CLI::App& app, int& exit_code) {
  auto* cache = app.add_subcommand("cache", "Inspect or clear the persistent probe cache");
  cache->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  auto* stats = cache->add_subcommand(
      "stats",
      "Show the cache folder's database (verdicts.sqlite3): its entries and size, per backend, and files of "
      "the old one-file-per-verdict layout that the next analysis moves into it");
  stats->add_option("--cache", *dir,
                    "Cache directory (default: $XDG_CACHE_HOME/opprobe or ~/.cache/opprobe), or a cache server: "
                    "redis://HOST:PORT[/DB], http(s)://HOST[:PORT]/PATH");
  stats->callback([dir, &exit_code] {
    if (compiler_probe::IsRemoteCacheUrl(*dir)) {
      exit_code = RemoteStats(*dir);
      return;
    }
    const bool named = !dir->empty();
    std::string d = named ? *dir : compiler_probe::DefaultCacheDir();
    auto s = compiler_probe::GetDiskCacheStats(d);
    if (!s.ok()) {
      exit_code = ReportError(s.status());
      return;
    }
    if (!s->unusable.empty()) {
      // As `analyze` treats it: a folder the user named is refused; the default one starts afresh next time.
      std::string what = fmt::format("{}: not a usable probe cache ({})", s->file, s->unusable);
      if (named) {
        exit_code = ReportError(InvalidInput(what + ": move it away or clear the cache"));
        return;
      }
      std::fprintf(stderr, "opprobe: warning: %s: the next analysis sets it aside and starts a fresh cache\n",
                   what.c_str());
    }
    std::printf("cache: %s\n", d.c_str());
    std::printf("entries: %lld (%s)\n", static_cast<long long>(s->entries), HumanBytes(s->bytes).c_str());
    for (const auto& b : s->backends)
      std::printf("  %lld  %s  [%s]\n", static_cast<long long>(b.entries), b.id.c_str(), b.version.c_str());
    if (s->old_layout_entries > 0)
      std::printf("old layout (v1/, one file per verdict): %lld entries, moved into %s by the next analysis\n",
                  static_cast<long long>(s->old_layout_entries), compiler_probe::kCacheStoreFile);
    exit_code = 0;
  });
  auto* clear = cache->add_subcommand("clear", "Remove every cached verdict");
  clear->add_option("--cache", *dir,
                    "Cache directory (default: $XDG_CACHE_HOME/opprobe or ~/.cache/opprobe), or a cache server: "
                    "redis://HOST:PORT[/DB], http(s)://HOST[:PORT]/PATH");
  clear->callback([dir, &exit_code] {
    if (compiler_probe::IsRemoteCacheUrl(*dir)) {
      exit_code = RemoteClear(*dir);
      return;
    }
    std::string d = dir->empty() ? compiler_probe::DefaultCacheDir() : *dir;
    auto n = compiler_probe::ClearDiskCache(d);
    if (!n.ok()) {
      exit_code = ReportError(n.status());
      return;
    }
    if (!n->removed_file.empty())
      std::printf("removed %s, which was not a usable probe cache (%s)\n", n->removed_file.c_str(), n->why.c_str());
    std::printf("removed %lld entries from %s\n", static_cast<long long>(n->removed), d.c_str());
    exit_code = 0;
  });
}

}  // namespace opprobe::cli
