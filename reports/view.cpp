#include "reports/view.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "reports/report.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;
using analyzer::OpRecord;

namespace {

auto OpKey(const UnsupportedOp& u) {
  return std::tie(u.kind, u.file, u.line, u.signature, u.module_path, u.program, u.phase, u.reason, u.failure_at,
                  u.dynamic_shape, u.error, u.part_of, u.lib_place, u.forward_op, u.forward_place, u.forward_lib_place,
                  u.forward_module_path);
}

void SetOrigin(const OpRecord& op, const std::string& source_dir, UnsupportedOp& u) {
  u.lib_place = SourcePlace(op.lib_loc, "");
  if (op.forward.empty()) return;
  const analyzer::ForwardCall& f = op.forward;
  u.forward_op = f.op;
  u.forward_place = SourcePlace(f.loc, source_dir);
  u.forward_lib_place = SourcePlace(f.lib_loc, "");
  u.forward_module_path = f.module_path;
}

}  // namespace

std::vector<UnsupportedOp> UnsupportedOps(const AnalysisResult& result) {
  std::vector<UnsupportedOp> out;
  for (const OpRecord& op : result.ops) {
    if (result.OpSupported(op)) continue;
    UnsupportedOp u;
    u.kind = op.op;
    u.failure_at = result.FailureAt(op);
    u.internal_error = op.lowering == OpRecord::Lowering::kInternalError;
    u.call = op.loc.ToString();
    u.file = op.loc.file;
    u.line = op.loc.line;
    u.reason = result.FailureReason(op);
    u.signature = op.signature;
    u.module_path = op.module_path;
    u.program = op.program;
    u.phase = op.phase;
    u.count = op.count;
    u.dynamic_shape = op.dynamic_shape;
    u.part_of = PartOfName(result, op);
    u.place = SourcePlace(op.loc, result.source_dir);
    SetOrigin(op, result.source_dir, u);
    u.suggestions = op.suggestions;
    u.instructions =
        op.lowering != OpRecord::Lowering::kOk ? op.count : op.count * static_cast<int64_t>(op.probes.size());
    if (op.lowering != OpRecord::Lowering::kOk) {
      u.failed_instructions = op.count;
    } else {
      bool first = true;
      for (size_t p : op.probes) {
        if (p >= result.probes.size() || result.probes[p].verdict.supported()) continue;
        if (first) u.error = !result.probes[p].verdict.judged();
        first = false;
        u.failed_instructions += op.count;
        u.failing_probes.push_back(p);
      }
    }
    out.push_back(std::move(u));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const UnsupportedOp& a, const UnsupportedOp& b) { return OpKey(a) < OpKey(b); });
  // Merge entries that print identically (e.g. the same op at the same line with different scalar arguments).
  std::vector<UnsupportedOp> merged;
  for (auto& u : out) {
    if (!merged.empty() && OpKey(merged.back()) == OpKey(u)) {
      merged.back().count += u.count;
      merged.back().failed_instructions += u.failed_instructions;
      merged.back().instructions += u.instructions;
      merged.back().failing_probes.insert(merged.back().failing_probes.end(), u.failing_probes.begin(),
                                          u.failing_probes.end());
      for (auto& sg : u.suggestions)
        if (std::none_of(merged.back().suggestions.begin(), merged.back().suggestions.end(),
                         [&](const analyzer::Suggestion& x) { return x.rewrite == sg.rewrite; }))
          merged.back().suggestions.push_back(std::move(sg));
      continue;
    }
    merged.push_back(std::move(u));
  }
  for (auto& u : merged) {
    std::sort(u.failing_probes.begin(), u.failing_probes.end());
    u.failing_probes.erase(std::unique(u.failing_probes.begin(), u.failing_probes.end()), u.failing_probes.end());
  }
  return merged;
}

std::vector<UnsupportedGroup> GroupUnsupported(const std::vector<UnsupportedOp>& ops) {
  std::vector<UnsupportedGroup> groups;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  for (const auto& u : ops) {
    auto [it, inserted] = index.try_emplace({u.place, u.reason, u.failure_at}, groups.size());
    if (inserted) groups.push_back(UnsupportedGroup{u.place, u.reason, u.failure_at, 0, {}});
    UnsupportedGroup& g = groups[it->second];
    g.count += u.count;
    g.entries.push_back(u);
  }
  for (auto& g : groups)
    std::stable_sort(g.entries.begin(), g.entries.end(),
                     [](const UnsupportedOp& a, const UnsupportedOp& b) { return a.count > b.count; });
  std::stable_sort(groups.begin(), groups.end(), [](const UnsupportedGroup& a, const UnsupportedGroup& b) {
    if (a.count != b.count) return a.count > b.count;
    return std::tie(a.place, a.reason, a.failure_at) < std::tie(b.place, b.reason, b.failure_at);
  });
  return groups;
}

std::vector<analyzer::Suggestion> GroupSuggestions(const UnsupportedGroup& g) {
  std::vector<analyzer::Suggestion> out;
  for (const auto& e : g.entries)
    for (const auto& sg : e.suggestions)
      if (std::none_of(out.begin(), out.end(),
                       [&](const analyzer::Suggestion& x) { return x.rewrite == sg.rewrite && x.python == sg.python; }))
        out.push_back(sg);
  std::stable_partition(out.begin(), out.end(), [](const analyzer::Suggestion& s) { return s.verified; });
  return out;
}

double GroupShareWith(const UnsupportedGroup& g, const analyzer::Suggestion& s) {
  double total = 0, pass = 0;
  for (const auto& e : g.entries) {
    const bool has = std::any_of(e.suggestions.begin(), e.suggestions.end(),
                                 [&](const analyzer::Suggestion& x) { return x.rewrite == s.rewrite; });
    if (has) {
      const double n = static_cast<double>(e.count * s.instructions);
      total += n;
      pass += n * s.supported_fraction;
    } else {
      total += static_cast<double>(e.instructions);
      pass += static_cast<double>(e.instructions - e.failed_instructions);
    }
  }
  return total == 0 ? 1.0 : pass / total;
}

std::string VerifiedSuggestionText(const UnsupportedOp& u) {
  for (const auto& sg : u.suggestions)
    if (sg.verified)
      return fmt::format("suggested rewrite, verified on {}: {} ({}: {})\n{}", sg.backend, sg.title,
                         sg.exact ? "exact" : "differs", sg.changes, sg.python);
  return "";
}

std::string FractionLabel(double fraction) { return fmt::format("{:.0f}%", fraction * 100.0); }

std::string WhatIfLine(const AnalysisResult& result) {
  if (!result.summary.suggest) return "";
  int64_t verified = 0;
  for (const OpRecord& op : result.ops)
    if (op.part_of < 0 && !op.suggestions.empty() && op.suggestions.front().verified) ++verified;
  if (verified == 0) {
    const bool any_unsupported =
        std::any_of(result.ops.begin(), result.ops.end(), [&](const OpRecord& op) { return !result.OpSupported(op); });
    return any_unsupported ? "what-if: no verified suggestion to apply" : "";
  }
  return fmt::format(
      "what-if: {} with the verified suggestions of {} call site{} applied (not this analysis's verdict)",
      PercentLabel(result, result.WhatIfPercentage()), verified, verified == 1 ? "" : "s");
}

std::pair<std::vector<UnsupportedOp>, std::vector<UnsupportedOp>> SplitLoweringGaps(std::vector<UnsupportedOp> ops) {
  std::pair<std::vector<UnsupportedOp>, std::vector<UnsupportedOp>> out;
  for (auto& u : ops) (u.lowering_gap() ? out.second : out.first).push_back(std::move(u));
  return out;
}

std::vector<UnsupportedOp> TakeInternalErrors(std::vector<UnsupportedOp>& ops) {
  std::vector<UnsupportedOp> internal, rest;
  for (auto& u : ops) (u.internal_error ? internal : rest).push_back(std::move(u));
  ops = std::move(rest);
  return internal;
}

std::string DisplayKind(const UnsupportedOp& u) {
  return u.part_of.empty() ? u.kind : u.kind + " (part of " + u.part_of + ")";
}

std::string SourcePlace(const analyzer::SourceLoc& loc, const std::string& dir) {
  if (loc.empty()) return "";
  std::string file = loc.file;
  if (!dir.empty() && dir != "." && file.size() > dir.size() + 1 && file.compare(0, dir.size(), dir) == 0 &&
      file[dir.size()] == '/')
    file = file.substr(dir.size() + 1);
  if (file.empty()) file = "?";
  return loc.line > 0 ? file + ":" + std::to_string(loc.line) : file;
}

std::string CallOrigin(const UnsupportedOp& u) {
  std::string out;
  if (!u.lib_place.empty()) out = "via " + u.lib_place;
  if (!u.forward_op.empty()) {
    if (!out.empty()) out += "; ";
    out += "backward of " + u.forward_op;
    if (!u.forward_place.empty()) out += " at " + u.forward_place;
    if (!u.forward_lib_place.empty()) out += " via " + u.forward_lib_place;
    if (!u.forward_module_path.empty()) out += " in " + u.forward_module_path;
  }
  return out;
}

std::string CallOrigin(const OpRecord& op, const std::string& source_dir) {
  UnsupportedOp u;
  SetOrigin(op, source_dir, u);
  return CallOrigin(u);
}

std::string PercentLabel(const AnalysisResult& result, double pct) {
  std::string s = FormatPercent(pct);
  return result.incomplete() ? s + " (incomplete)" : s;
}

SupportedAtenTally TallySupportedAten(const AnalysisResult& result) {
  // The records are tallied first by the strings they share (the call sites of one signature share their op's; a
  // derived record's call has its op and overload), then each group is looked up by its text once, not each record.
  struct Group {
    const void* op;
    const void* parent_op;  // a derived record's call's op and overload (PartOfName); null for a call's own record
    const void* parent_overload;
    bool operator==(const Group&) const = default;
  };
  struct GroupHash {
    size_t operator()(const Group& g) const {
      size_t h = std::hash<const void*>{}(g.op);
      for (const void* p : {g.parent_op, g.parent_overload})
        h ^= std::hash<const void*>{}(p) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      return h;
    }
  };
  struct Count {
    size_t record;  // the group's first record
    int64_t count;
  };
  std::unordered_map<Group, Count, GroupHash> groups;
  for (size_t i = 0; i < result.ops.size(); ++i) {
    const OpRecord& op = result.ops[i];
    if (!result.OpSupported(op)) continue;
    Group g{op.op.storage(), nullptr, nullptr};
    if (op.part_of >= 0 && static_cast<size_t>(op.part_of) < result.ops.size()) {
      const OpRecord& parent = result.ops[static_cast<size_t>(op.part_of)];
      g.parent_op = parent.op.storage();
      g.parent_overload = parent.overload.storage();
    }
    auto [it, inserted] = groups.try_emplace(g, Count{i, 0});
    it->second.count += op.count;
  }
  SupportedAtenTally out;
  for (const auto& [g, c] : groups) {
    const OpRecord& op = result.ops[c.record];
    out.calls[op.op.str()] += c.count;
    if (std::string parent = PartOfName(result, op); !parent.empty())
      out.marked[op.op + " (part of " + parent + ")"] += c.count;
    else out.marked[op.op.str()] += c.count;
  }
  return out;
}

std::map<std::string, int64_t> SupportedAtenCounts(const AnalysisResult& result, bool mark_derived) {
  SupportedAtenTally t = TallySupportedAten(result);
  return mark_derived ? std::move(t.marked) : std::move(t.calls);
}

std::vector<std::string> SupportedSignatures(const AnalysisResult& result) {
  std::set<std::string> sigs;
  for (const OpRecord& op : result.ops) {
    if (op.lowering != OpRecord::Lowering::kOk) continue;
    for (size_t p : op.probes)
      if (p < result.probes.size() && result.probes[p].verdict.supported()) sigs.insert(result.probes[p].signature);
  }
  return {sigs.begin(), sigs.end()};
}

std::vector<UnsupportedInstruction> UnsupportedInstructions(const AnalysisResult& result) {
  std::map<std::tuple<std::string, std::string, std::string, size_t>, UnsupportedInstruction> by_key;
  for (const OpRecord& op : result.ops) {
    if (op.lowering != OpRecord::Lowering::kOk) continue;
    std::string call = op.loc.ToString();
    for (size_t p : op.probes) {
      if (p >= result.probes.size()) continue;
      const auto& probe = result.probes[p];
      if (probe.verdict.supported()) continue;
      const std::string part_of = PartOfName(result, op);
      auto [it, inserted] = by_key.try_emplace({probe.signature, op.op + "|" + part_of, call, p});
      auto& u = it->second;
      if (inserted) {
        u.signature = probe.signature;
        u.aten_op = op.op;
        u.part_of = part_of;
        u.reason = probe.verdict.reason;
        u.call = call;
        u.repro = probe.repro_path;
        u.probe = p;
        u.error = !probe.verdict.judged();
      }
      u.count += op.count;
    }
  }
  // Distinct probes with the same signature (different attributes) stay separate entries only when they differ
  // in what is printed; otherwise they merge.
  std::vector<UnsupportedInstruction> out;
  for (auto& [key, u] : by_key) {
    if (!out.empty()) {
      auto& last = out.back();
      if (last.signature == u.signature && last.aten_op == u.aten_op && last.part_of == u.part_of &&
          last.call == u.call && last.reason == u.reason && last.repro == u.repro) {
        last.count += u.count;
        continue;
      }
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<ProbeUse> ProbeUses(const AnalysisResult& result) {
  std::vector<ProbeUse> uses(result.probes.size());
  std::vector<std::set<std::string>> ops(result.probes.size());
  for (const OpRecord& op : result.ops) {
    if (op.lowering != OpRecord::Lowering::kOk) continue;
    for (size_t p : op.probes) {
      if (p >= result.probes.size()) continue;
      ops[p].insert(op.op);
      uses[p].instances += op.count;
    }
  }
  for (size_t i = 0; i < uses.size(); ++i) uses[i].aten_ops.assign(ops[i].begin(), ops[i].end());
  return uses;
}

std::vector<size_t> SortedProbeOrder(const AnalysisResult& result) {
  std::vector<size_t> order(result.probes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& pa = result.probes[a];
    const auto& pb = result.probes[b];
    return std::tie(pa.signature, pa.fingerprint) < std::tie(pb.signature, pb.fingerprint);
  });
  return order;
}

std::string PartOfName(const AnalysisResult& result, const OpRecord& op) {
  if (op.part_of < 0 || static_cast<size_t>(op.part_of) >= result.ops.size()) return "";
  const OpRecord& parent = result.ops[static_cast<size_t>(op.part_of)];
  return analyzer::QualifiedOpName(parent.op.str(), parent.overload.str());
}

std::vector<bool> UnsupportedDerived(const AnalysisResult& result) {
  std::vector<bool> out(result.ops.size(), false);
  for (const OpRecord& d : result.ops)
    if (d.part_of >= 0 && static_cast<size_t>(d.part_of) < out.size() && !result.OpSupported(d))
      out[static_cast<size_t>(d.part_of)] = true;
  return out;
}

void Tally::Add(const AnalysisResult& result, const OpRecord& op, bool derived_unsupported) {
  // Calls are the program's own (derived records add instructions only), and a call is supported when its own
  // instructions and those attributed to other ops from its lowering all are (AtenSupportPercentage's definition).
  if (op.part_of < 0) {
    calls += op.count;
    if (result.OpSupported(op) && !derived_unsupported) supported_calls += op.count;
  }
  if (op.lowering != OpRecord::Lowering::kOk) {
    instructions += op.count;
    return;
  }
  for (size_t p : op.probes) {
    instructions += op.count;
    if (p < result.probes.size() && result.probes[p].verdict.supported()) supported_instructions += op.count;
  }
}

Tally TallyAll(const AnalysisResult& result) {
  Tally t;
  const std::vector<bool> derived_unsupported = UnsupportedDerived(result);
  for (size_t i = 0; i < result.ops.size(); ++i) t.Add(result, result.ops[i], derived_unsupported[i]);
  return t;
}

double Tally::Percentage() const {
  return instructions == 0 ? 100.0
                           : 100.0 * static_cast<double>(supported_instructions) / static_cast<double>(instructions);
}

double Tally::AtenPercentage() const {
  return calls == 0 ? 100.0 : 100.0 * static_cast<double>(supported_calls) / static_cast<double>(calls);
}

std::vector<Group> GroupBy(const AnalysisResult& result, std::string (*key)(const OpRecord& op)) {
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> index;
  const std::vector<bool> derived_unsupported = UnsupportedDerived(result);
  for (size_t i = 0; i < result.ops.size(); ++i) {
    std::string k = key(result.ops[i]);
    auto [it, inserted] = index.try_emplace(k, groups.size());
    if (inserted) groups.push_back(Group{k, {}, {}});
    Group& g = groups[it->second];
    g.tally.Add(result, result.ops[i], derived_unsupported[i]);
    g.ops.push_back(i);
  }
  return groups;
}

std::string RelativeToCwd(const std::string& file, const std::string& cwd) {
  if (cwd.empty() || file.empty() || file[0] != '/') return file;
  std::string base = cwd;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base == "/") return file.substr(1);
  if (file.size() > base.size() + 1 && file.compare(0, base.size(), base) == 0 && file[base.size()] == '/')
    return file.substr(base.size() + 1);
  return file;
}

std::string TailLines(const std::string& text, size_t max_lines) {
  if (text.empty() || max_lines == 0) return "";
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  size_t lines = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++lines == max_lines) break;
    --pos;
  }
  return text.substr(pos, end - pos);
}

std::string ValidUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;
    if (ok && len == 3) {
      unsigned cp = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
      ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok && len == 4) {
      unsigned cp = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
      ok = cp >= 0x10000 && cp <= 0x10FFFF;
    }
    if (!ok) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(text, i, len);
    i += len;
  }
  return out;
}

std::string XmlEscape(const std::string& text) {
  std::string valid = ValidUtf8(text);
  std::string out;
  out.reserve(valid.size());
  for (char ch : valid) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) out += "\xEF\xBF\xBD";
        else out += ch;
    }
  }
  return out;
}

SupportMatrix BuildSupportMatrix(const analyzer::AnalysisResult& result) {
  SupportMatrix m;
  const size_t n = result.target_count();
  std::vector<analyzer::AnalysisResult> per_target;
  per_target.reserve(n);
  for (size_t k = 0; k < n; ++k) per_target.push_back(result.ForTarget(k));
  std::map<std::string, SupportMatrix::Row> rows;
  for (size_t k = 0; k < n; ++k) {
    const analyzer::AnalysisResult& t = per_target[k];
    m.targets.push_back({t.backend_id, t.backend_version, PercentLabel(t, t.SupportPercentage()),
                         PercentLabel(t, t.AtenSupportPercentage())});
    for (const analyzer::OpRecord& op : t.ops) {
      if (op.part_of >= 0) continue;  // a derived record counts with its call
      SupportMatrix::Row& r = rows[op.op.str()];
      if (r.supported.empty()) {
        r.op = op.op.str();
        r.supported.assign(n, true);
        r.reason.assign(n, "");
      }
      if (k == 0) r.calls += op.count;
      if (r.supported[k] && !t.OpSupported(op)) {
        r.supported[k] = false;
        r.reason[k] = t.FailureReason(op);
      }
    }
  }
  for (auto& [op, r] : rows) {
    if (std::all_of(r.supported.begin(), r.supported.end(), [](bool b) { return b; })) ++m.ops_supported_everywhere;
    else m.rows.push_back(std::move(r));
  }
  return m;
}

std::string StepsHeadline(const analyzer::StepGraphs& s) {
  return fmt::format("{} step{} ran {} graph{}, {} distinct (each compiled once; {} model of the captured calls)",
                     s.steps, s.steps == 1 ? "" : "s", s.executed_graphs, s.executed_graphs == 1 ? "" : "s",
                     s.distinct_graphs, s.model);
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes < 0 ? -bytes : bytes);
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(kUnits)) v /= 1024.0, ++u;
  std::string sign = bytes < 0 ? "-" : "";
  return u == 0 ? fmt::format("{}{} B", sign, static_cast<int64_t>(v)) : fmt::format("{}{:.2f} {}", sign, v, kUnits[u]);
}

std::string ProgramOutcome(const analyzer::ProgramFit& p) {
  using O = compiler_probe::ProgramCompile::Outcome;
  if (!p.built) return "not built";
  switch (p.compile.outcome) {
    case O::kCompiled: return "compiled";
    case O::kRefused: return "refused";
    case O::kError: return "error";
    case O::kUnsupported: return "not compiled";
  }
  return "not compiled";
}

std::string ProgramHeadline(const analyzer::ProgramFit& p) {
  using O = compiler_probe::ProgramCompile::Outcome;
  if (!p.built) return fmt::format("{}: not built: {}", p.what, p.not_built);
  const auto& c = p.compile;
  std::string devices = fmt::format("{} device{}", c.devices, c.devices == 1 ? "" : "s");
  std::string verdict;
  if (p.fits) {
    int64_t diff = p.device_memory_bytes - p.required_bytes;
    verdict = *p.fits ? fmt::format(": fits ({} to spare)", FormatBytes(diff))
                      : fmt::format(": does not fit (short by {})", FormatBytes(-diff));
  }
  const std::string from = c.device_memory_source.empty() ? "" : " (" + c.device_memory_source + ")";
  std::string need = p.device_memory_bytes > 0
                         ? fmt::format("needs {} of the {} one device has{}", FormatBytes(p.required_bytes),
                                       FormatBytes(p.device_memory_bytes), from)
                         : fmt::format("needs {} per device", FormatBytes(p.required_bytes));
  switch (c.outcome) {
    case O::kCompiled:
      if (!c.has_memory)
        return fmt::format("{} compiled by {} for {}; the compiler gave no memory figures", p.what, c.compiler,
                           devices);
      return fmt::format("{} ({} HLO instructions) compiled by {} for {}: {}{}", p.what, p.instructions, c.compiler,
                         devices, need, verdict);
    case O::kRefused:
      if (c.memory_refusal) {
        std::string counts =
            c.required_what.empty() ? "" : fmt::format(" ({} alone, the compiler's figure)", c.required_what);
        if (p.device_memory_bytes > 0)
          need = fmt::format("needs {}{} of the {} one device has{}", FormatBytes(p.required_bytes), counts,
                             FormatBytes(p.device_memory_bytes), from);
        return fmt::format("{} refused by {} for {}: {}{}", p.what, c.compiler, devices, need, verdict);
      }
      return fmt::format("{} refused by {} for {}: {}", p.what, c.compiler, devices, c.message);
    case O::kError: return fmt::format("{} not compiled: {}", p.what, c.message);
    case O::kUnsupported:
      if (p.estimated && c.devices > 1)
        return fmt::format(
            "{}: {}; opprobe's estimate is of the whole step on one device ({}), not of one of the "
            "{} devices it is split over: whether it fits is not known",
            p.what, c.message, FormatBytes(p.required_bytes), c.devices);
      if (p.estimated)
        return fmt::format(
            "{}: {}; opprobe's estimate (the recorded step's liveness, elementwise chains fused as XLA fuses "
            "them, no rematerialisation) {}{}",
            p.what, c.message, need, verdict);
      return fmt::format("{}: {}", p.what, c.message);
  }
  return p.what;
}

std::vector<ProgramMemoryRow> ProgramMemoryRows(const analyzer::ProgramFit& p) {
  if (!p.compile.has_memory && !p.estimated) return {};
  const compiler_probe::DeviceMemory& m = p.compile.has_memory ? p.compile.memory : p.step.estimate;
  const std::string of = p.compile.has_memory ? "" : " (estimate)";
  std::vector<ProgramMemoryRow> rows = {{"arguments", m.argument_bytes},
                                        {"outputs", m.output_bytes},
                                        {"aliased with arguments", -m.alias_bytes},
                                        {"temporaries" + of, m.temp_bytes}};
  if (p.compile.has_memory) rows.push_back({"generated code", m.generated_code_bytes});
  rows.push_back({"total" + of, m.total_bytes()});
  return rows;
}

std::vector<ProgramContributor> ProgramContributors(const analyzer::ProgramFit& p, size_t max_lines) {
  std::map<std::string, int64_t> by_kind;
  auto name = [](const std::string& kind) -> std::string {
    if (kind == "parameter") return "parameters";
    if (kind == "gradient") return "gradients";
    if (kind == "optimizer_state") return "optimizer state";
    if (kind == "buffer") return "buffers";
    if (kind == "data") return "inputs (the batch, other tensors)";
    return "other outputs";
  };
  for (const auto& v : p.step.inputs) by_kind[name(v.kind)] += v.bytes;
  for (const auto& v : p.step.outputs)
    if (v.aliases < 0) by_kind[name(v.kind)] += v.bytes;
  std::vector<ProgramContributor> out;
  for (const auto& [what, bytes] : by_kind)
    if (bytes > 0) out.push_back({what, "", bytes});
  for (size_t i = 0; i < p.step.activations.size() && i < max_lines; ++i) {
    const auto& a = p.step.activations[i];
    out.push_back({"activations kept for backward (" + a.op + ")", a.loc.ToString(), a.bytes});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ProgramContributor& a, const ProgramContributor& b) { return a.bytes > b.bytes; });
  return out;
}

std::string CutKind(const analyzer::StepGraphs::Cut& c) {
  return c.kind == "value_read" ? "value read on the host" : "CPU fallback";
}

std::string StepsTrigger(const analyzer::StepGraphs::Recompilation& r) {
  std::string what = r.trigger_kind == "value_read"     ? "value read (" + r.trigger_op + ")"
                     : r.trigger_kind == "cpu_fallback" ? "CPU fallback (" + r.trigger_op + ")"
                                                        : r.trigger_op;
  return r.trigger_loc.empty() ? what : what + " at " + r.trigger_loc.ToString();
}

}  // namespace opprobe::reports
