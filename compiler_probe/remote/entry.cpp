#include "compiler_probe/remote/entry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "hlo/fingerprint.h"
#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe {

using nlohmann::json;

namespace {
constexpr std::string_view kMagic = "opprobe-cache-entry";
}

std::string BackendKeyHash(const std::string& backend_id, const std::string& backend_version) {
  std::string key(hlo::kFingerprintScheme);
  key += '\0';
  key += backend_id;
  key += '\0';
  key += backend_version;
  return hlo::Fnv1a64Hex(key);
}

std::string SafeFingerprint(const std::string& fp) {
  bool safe = !fp.empty() && fp.size() <= 128 && std::all_of(fp.begin(), fp.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  return safe ? fp : "h" + hlo::Fnv1a64Hex(fp);
}

std::string EncodeCacheEntry(const CacheKey& key, const Verdict& v) {
  json j = {{"backend_id", key.backend_id},
            {"backend_version", key.backend_version},
            {"fingerprint", key.fingerprint},
            {"verdict", std::string(VerdictKindName(v.kind))},
            {"reason", v.reason},
            {"seconds", v.seconds},
            {"output_tail", v.output_tail}};
  if (v.interp != Verdict::Interp::kNone) j["interp"] = std::string(InterpName(v.interp));
  std::string payload = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return fmt::format("{} {} {} {}\n{}", kMagic, kCacheEntryFormat, payload.size(), hlo::Fnv1a64Hex(payload), payload);
}

std::optional<Verdict> DecodeCacheEntry(std::string_view bytes, const CacheKey& key) {
  size_t nl = bytes.find('\n');
  if (nl == std::string_view::npos || nl > 200) return std::nullopt;
  std::string header(bytes.substr(0, nl));
  std::string_view payload = bytes.substr(nl + 1);
  std::string want_prefix = fmt::format("{} {} {} ", kMagic, kCacheEntryFormat, payload.size());
  if (header.compare(0, want_prefix.size(), want_prefix) != 0) return std::nullopt;
  if (header.substr(want_prefix.size()) != hlo::Fnv1a64Hex(std::string(payload))) return std::nullopt;
  json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto str = [&](const char* k) -> std::optional<std::string> {
    auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  if (str("backend_id") != key.backend_id || str("backend_version") != key.backend_version ||
      str("fingerprint") != key.fingerprint)
    return std::nullopt;
  Verdict v;
  auto kind = str("verdict");
  if (kind == "supported") v.kind = Verdict::Kind::kSupported;
  else if (kind == "unsupported") v.kind = Verdict::Kind::kUnsupported;
  else return std::nullopt;
  v.reason = str("reason").value_or("");
  v.output_tail = str("output_tail").value_or("");
  if (auto interp = str("interp")) {  // absent: no comparison; a word this build does not know: not an entry of ours
    if (*interp == "agree" && v.kind == Verdict::Kind::kSupported) v.interp = Verdict::Interp::kAgree;
    else if (*interp == "not_compared" && v.kind == Verdict::Kind::kSupported) v.interp = Verdict::Interp::kNotCompared;
    else if (*interp == "differ" && v.kind == Verdict::Kind::kUnsupported) v.interp = Verdict::Interp::kDiffer;
    else return std::nullopt;
  }
  if (auto it = j.find("seconds"); it != j.end() && it->is_number()) v.seconds = it->get<double>();
  return v;
}

}  // namespace opprobe::compiler_probe
