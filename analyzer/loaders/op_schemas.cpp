#include "analyzer/loaders/op_schemas.h"

#include <map>
#include <memory>
#include <mutex>

namespace opprobe::analyzer {

namespace {

struct RawSchema {
  const char* name;
  const char* overload;
  const char* args_json;
};

constexpr RawSchema kRawSchemas[] = {
#define OPPROBE_OP_SCHEMA(name, overload, args) {name, overload, args},
#include "analyzer/loaders/op_schemas.inc"
#undef OPPROBE_OP_SCHEMA
};

// Parsed on first use, one entry at a time (the table has a few thousand schemas; a run needs dozens).
struct Cache {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<OpSchema>, std::less<>> parsed;
};

Cache& GetCache() {
  static Cache* cache = new Cache();
  return *cache;
}

const RawSchema* FindRaw(std::string_view name, std::string_view overload) {
  // kRawSchemas is sorted by (name, overload) by the generator.
  size_t lo = 0, hi = std::size(kRawSchemas);
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    std::string_view n = kRawSchemas[mid].name, o = kRawSchemas[mid].overload;
    if (n < name || (n == name && o < overload)) lo = mid + 1;
    else hi = mid;
  }
  if (lo < std::size(kRawSchemas) && kRawSchemas[lo].name == name && kRawSchemas[lo].overload == overload)
    return &kRawSchemas[lo];
  return nullptr;
}

}  // namespace

const OpSchema* FindAtenSchema(std::string_view name, std::string_view overload) {
  if (overload.empty()) overload = "default";
  const RawSchema* raw = FindRaw(name, overload);
  if (!raw) return nullptr;
  Cache& cache = GetCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto key = std::make_pair(std::string(name), std::string(overload));
  auto it = cache.parsed.find(key);
  if (it != cache.parsed.end()) return it->second.get();
  auto schema = std::make_unique<OpSchema>();
  schema->name = raw->name;
  schema->overload = raw->overload;
  nlohmann::json args = nlohmann::json::parse(raw->args_json, nullptr, /*allow_exceptions=*/false);
  if (args.is_array()) {
    for (const auto& a : args) {
      if (!a.is_array() || a.size() < 3) continue;
      OpSchemaArg arg;
      arg.name = a[0].get<std::string>();
      arg.type = a[1].get<std::string>();
      arg.kwarg_only = a[2].get<int>() != 0;
      if (a.size() >= 4) {
        arg.has_default = true;
        arg.default_value = a[3];
      }
      schema->args.push_back(std::move(arg));
    }
  }
  const OpSchema* out = schema.get();
  cache.parsed.emplace(std::move(key), std::move(schema));
  return out;
}

std::string_view OpSchemaTableTorchVersion() { return "1.13"; }

}  // namespace opprobe::analyzer
