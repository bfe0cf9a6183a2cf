#include "analyzer/suggest/suggest.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "hlo/fingerprint.h"
#include "hlo/probe_unit.h"

namespace opprobe::analyzer::suggest {
namespace {

using Clock = std::chrono::steady_clock;

// The backend's verdicts on the rewrites' units, each unit probed once (cache first).
class Judge {
 public:
  Judge(compiler_probe::Backend& backend, compiler_probe::ProbeCache* cache)
      : backend_(backend), cache_(cache), id_(backend.id()), version_(backend.version()) {}

  const compiler_probe::Verdict& Of(const hlo::Instruction& unit) {
    const uint64_t hash = hlo::UnitHash(unit);
    auto [it, inserted] = verdicts_.try_emplace(hash);
    if (!inserted) return it->second;
    const std::string fingerprint = hlo::HashHex(hash);
    if (cache_) {
      if (auto v = cache_->Lookup(id_, version_, fingerprint)) return it->second = std::move(*v);
    }
    compiler_probe::Verdict v;
    try {
      std::unique_ptr<hlo::Module> m = hlo::MakeProbeModule(unit, std::string(hlo::OpcodeName(unit.opcode)));
      v = backend_.probe(*m);
    } catch (const std::exception& e) {
      v = compiler_probe::Verdict::Error(fmt::format("backend threw: {}", e.what()));
    }
    if (cache_ && v.judged()) cache_->Store(id_, version_, fingerprint, v);
    return it->second = std::move(v);
  }

 private:
  compiler_probe::Backend& backend_;
  compiler_probe::ProbeCache* cache_;
  std::string id_, version_;
  std::unordered_map<uint64_t, compiler_probe::Verdict> verdicts_;
};

// Every applicable rewrite of `call`, lowered and judged; verified ones first.
std::vector<Suggestion> SuggestionsFor(const Node& call, std::span<const Rewrite> rewrites, const LoweringTable& table,
                                       Judge& judge, const std::string& backend_id) {
  std::vector<Suggestion> out;
  for (const Rewrite& rw : rewrites) {
    if (!rw.applies || !rw.plan || !rw.applies(call)) continue;
    Expected<RewritePlan> plan = rw.plan(call);
    if (!plan.ok()) continue;  // beyond this rewrite: not a suggestion at all
    Suggestion s;
    s.rewrite = rw.id;
    s.title = rw.title;
    s.python = plan->python;
    s.changes = plan->changes;
    s.exact = plan->exact;
    s.library_python = plan->override_python;
    s.backend = backend_id;
    int64_t units = 0, ok = 0;
    for (const Node& c : plan->calls) {
      Expected<LoweredModule> m = Lower(c, table);
      if (!m.ok()) {  // opprobe's own gap: the rewrite cannot be judged, so it is not verified
        ++units;
        if (s.refusal.empty())
          s.refusal =
              fmt::format("opprobe cannot lower {} of the rewrite: {}", c.qualified_name(), m.status().message());
        continue;
      }
      for (const hlo::Instruction* u : m->units) {
        ++units;
        const compiler_probe::Verdict& v = judge.Of(*u);
        if (v.supported()) {
          ++ok;
        } else if (s.refusal.empty()) {
          s.refusal = fmt::format("{} ({}): {}", c.qualified_name(), hlo::OpcodeName(u->opcode), v.reason);
        }
      }
    }
    s.instructions = units;
    s.supported_fraction = units == 0 ? 1.0 : static_cast<double>(ok) / static_cast<double>(units);
    s.verified = ok == units;
    out.push_back(std::move(s));
  }
  std::stable_partition(out.begin(), out.end(), [](const Suggestion& s) { return s.verified; });
  return out;
}

// A suggestion's Python for a call a library made at `lib` (inside the user's call at `loc`): the registration that
// puts the rewrite in the call's place for the device, or, where the rewrite changes the call's types, where to edit.
std::string InLibrary(const Suggestion& s, const SourceLoc& lib, const SourceLoc& loc) {
  const std::string where = fmt::format("{}:{}", lib.file, lib.line);
  if (!s.library_python.empty())
    return fmt::format(
        "# the call is made inside a library ({}, from your line {}:{}): register the rewrite in its "
        "place for the device, before the model runs\n{}\n# or, where you can edit the call:\n{}",
        where, loc.file, loc.line, s.library_python, s.python);
  return fmt::format(
      "# the call is made inside a library ({}, from your line {}:{}); this rewrite changes the types "
      "the call takes or returns, so no torch.library registration can stand in its place: apply it "
      "to a copy of the library's function there (or subclass the module that calls it)\n{}",
      where, loc.file, loc.line, s.python);
}

}  // namespace

void Suggest(AnalysisResult& r, compiler_probe::Backend& backend, const LoweringTable& table,
             const SuggestOptions& options) {
  const auto start = Clock::now();
  r.summary.suggest = true;
  Judge judge(backend, options.cache);
  std::unordered_map<const Node*, SharedVector<Suggestion>> by_call;  // records of one signature share one call
  const std::string backend_id = backend.id();
  for (size_t i = 0; i < r.ops.size() && i < r.calls.size(); ++i) {
    if (!r.calls[i]) continue;
    auto [it, inserted] = by_call.try_emplace(r.calls[i].get());
    if (inserted) it->second = SuggestionsFor(*r.calls[i], options.rewrites, table, judge, backend_id);
    r.ops[i].suggestions = it->second;
    if (!r.ops[i].lib_loc.empty()) {  // a library made the call: the user edits their code, not the library's
      std::vector<Suggestion> own = it->second;
      for (Suggestion& s : own) s.python = InLibrary(s, r.ops[i].lib_loc, r.ops[i].loc);
      r.ops[i].suggestions = std::move(own);
    }
  }
  // A record attributed to another op's lowering is replaced along with that call.
  for (OpRecord& op : r.ops)
    if (op.part_of >= 0 && op.suggestions.empty() && !r.OpSupported(op))
      op.suggestions = r.ops[static_cast<size_t>(op.part_of)].suggestions;

  // What-if: every call with a verified suggestion replaced by its (first verified) rewrite.
  std::vector<const Suggestion*> applied(r.ops.size(), nullptr);
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (r.ops[i].part_of < 0 && !r.ops[i].suggestions.empty() && r.ops[i].suggestions.front().verified)
      applied[i] = &r.ops[i].suggestions.front();
  int64_t total = 0, supported = 0;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const OpRecord& op = r.ops[i];
    if (applied[i]) {
      total += op.count * applied[i]->instructions;
      supported += op.count * applied[i]->instructions;
      continue;
    }
    if (op.part_of >= 0 && applied[static_cast<size_t>(op.part_of)]) continue;
    if (op.lowering != OpRecord::Lowering::kOk) {
      total += op.count;
      continue;
    }
    for (size_t p : op.probes) {
      total += op.count;
      if (r.probes[p].verdict.supported()) supported += op.count;
    }
  }
  r.summary.what_if_instructions = total;
  r.summary.what_if_supported = supported;
  r.summary.suggest_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace opprobe::analyzer::suggest
