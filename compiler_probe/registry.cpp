#include "compiler_probe/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace opprobe::compiler_probe {

std::string_view VerdictKindName(Verdict::Kind k) {
  switch (k) {
    case Verdict::Kind::kSupported: return "supported";
    case Verdict::Kind::kUnsupported: return "unsupported";
    case Verdict::Kind::kError: return "error";
    case Verdict::Kind::kNotProbed: return "not_probed";
  }
  return "error";
}

std::string_view InterpName(Verdict::Interp i) {
  switch (i) {
    case Verdict::Interp::kNone: return "";
    case Verdict::Interp::kAgree: return "agree";
    case Verdict::Interp::kDiffer: return "differ";
    case Verdict::Interp::kNotCompared: return "not_compared";
  }
  return "";
}

namespace {
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

void Registry::Register(Entry entry) { entries_.push_back(std::move(entry)); }

Expected<std::unique_ptr<Backend>> Registry::Create(const std::string& spec, const BackendOptions& options) const {
  auto colon = spec.find(':');
  std::string name = spec.substr(0, colon);
  std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  for (const auto& e : entries_)
    if (e.name == name) return e.factory(arg, options);
  std::string best;
  size_t best_d = 3;
  std::vector<std::string> names;
  for (const auto& e : entries_) {
    names.push_back(e.name);
    size_t d = EditDistance(name, e.name);
    if (d < best_d) best_d = d, best = e.name;
  }
  std::string msg = fmt::format("unknown backend '{}' in spec '{}'", name, spec);
  if (!best.empty()) msg += fmt::format("; did you mean '{}'?", best);
  msg += fmt::format(" (known: {})", fmt::join(names, ", "));
  return InvalidInput(msg);
}

}  // namespace opprobe::compiler_probe
