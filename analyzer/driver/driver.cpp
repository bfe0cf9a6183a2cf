#include "analyzer/driver/driver.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analyzer/driver/build_id.h"
#include "analyzer/driver/lowering_memo.h"
#include "analyzer/loaders/trace_loader.h"
#include "compiler_probe/batch.h"
#include "hlo/fingerprint.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/repro.h"

namespace opprobe::analyzer {
namespace {

// One SharedString per distinct text, for records that share their strings. The keys are views: the texts must
// outlive it.
class SharedStrings {
 public:
  const SharedString& Of(std::string_view text) {
    auto [it, inserted] = map_.try_emplace(text);
    if (inserted) it->second = std::string(text);
    return it->second;
  }

 private:
  std::unordered_map<std::string_view, SharedString> map_;
};

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The units a run knows only from their lowering memos (ProbeRecord::relower): unit i is unit `k` of signature
// `sig`'s lowering, whose structural hash was `hash`. It holds the distinct signatures' nodes while a record needs
// them.
class MemoUnits final : public UnitSource {
 public:
  MemoUnits(std::vector<Node> nodes, const LoweringTable& table) : nodes_(std::move(nodes)), table_(table) {}
  const Node& node(uint32_t sig) const { return nodes_[sig]; }
  size_t signatures() const { return nodes_.size(); }
  size_t Add(uint32_t sig, uint32_t k, uint64_t hash) {
    units_.push_back({sig, k, hash});
    return units_.size() - 1;
  }
  std::pair<std::shared_ptr<const hlo::Module>, const hlo::Instruction*> Relower(size_t index) const override {
    const Unit& u = units_[index];
    std::pair<std::shared_ptr<const hlo::Module>, const hlo::Instruction*> out{nullptr, nullptr};
    Expected<LoweredModule> m = Lower(nodes_[u.sig], table_);
    if (m.ok() && u.k < m->units.size() && hlo::UnitHash(*m->units[u.k]) == u.hash) {
      out.second = m->units[u.k];
      out.first = std::move(m->module);
    }
    return out;
  }

 private:
  struct Unit {
    uint32_t sig, k;
    uint64_t hash;
  };
  std::vector<Node> nodes_;
  const LoweringTable& table_;
  std::vector<Unit> units_;
};

// Collects unique probe units by their structural fingerprint (hlo/fingerprint.h): only the first instruction with
// a fingerprint becomes a probe module, when it is probed (a cache hit never builds one) or when the module `source`
// does not outlive the analysis; the text of a unit is printed only if a report asks (ProbeRecord::ModuleText).
class ProbeSet {
 public:
  // Returns the index of the unit in AnalysisResult::probes. `source`, when given, owns `instr`'s module.
  size_t Add(const hlo::Instruction& instr, std::vector<ProbeRecord>& probes,
             const std::shared_ptr<const hlo::Module>& source = nullptr) {
    const uint64_t hash = hlo::UnitHash(instr);
    auto [it, inserted] = index_.try_emplace(hash, probes.size());  // no node made for a known unit
    if (!inserted) {
      ProbeRecord& known = probes[it->second];
      if (known.relower && source) {  // known from a memo so far: this lowering has the unit at hand
        known.relower.reset();
        known.source = source;
        known.source_instruction = &instr;
      }
      return it->second;
    }
    hashes_.push_back(hash);
    ProbeRecord& rec = probes.emplace_back();
    rec.fingerprint = hlo::HashHex(hash);
    rec.opcode = instr.unknown_opcode.empty() ? std::string(hlo::OpcodeName(instr.opcode)) : instr.unknown_opcode;
    rec.signature = hlo::InstructionSignature(instr);
    if (source) {
      rec.source = source;
      rec.source_instruction = &instr;
    } else {
      rec.unit = hlo::MakeProbeModule(instr, std::string(hlo::OpcodeName(instr.opcode)));
    }
    return it->second;
  }

  // A unit known from a lowering memo: by its fingerprint and what the report shows (taken from `u`); `relower`
  // gives the unit itself when it is needed (unit `k` of signature `sig`'s lowering).
  size_t AddKnown(const MemoUnitView& u, std::vector<ProbeRecord>& probes, const std::shared_ptr<MemoUnits>& relower,
                  uint32_t sig, uint32_t k) {
    auto [it, inserted] = index_.emplace(u.hash, probes.size());
    if (!inserted) return it->second;
    hashes_.push_back(u.hash);
    ProbeRecord& rec = probes.emplace_back();
    rec.fingerprint = hlo::HashHex(u.hash);
    rec.opcode = u.opcode;
    rec.signature = u.signature;
    rec.relower_index = relower->Add(sig, k, u.hash);
    rec.relower = relower;
    return it->second;
  }

  // The structural hash of unit `index` (an index Add or AddKnown returned).
  uint64_t hash(size_t index) const { return hashes_[index]; }

 private:
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<uint64_t> hashes_;  // by unit index
};

// Probes every unit (cache first), in parallel when the backend allows it, then writes repro files.
Status ProbeAll(std::vector<ProbeRecord>& probes, compiler_probe::Backend& backend, const DriverOptions& options,
                Summary& summary) {
  Status dump_error;
  const std::string id = backend.id();
  const std::string version = backend.version();
  const int64_t total = static_cast<int64_t>(probes.size());
  std::vector<size_t> todo;
  std::vector<std::optional<compiler_probe::Verdict>> cached;
  if (options.cache) {  // one batch: the disk cache answers it in one read transaction
    // The records lend the batch their fingerprints and get them back (a copy of each would be an allocation).
    std::vector<std::string> fingerprints;
    fingerprints.reserve(probes.size());
    for (auto& p : probes) fingerprints.push_back(std::move(p.fingerprint));
    struct GiveBack {
      std::vector<ProbeRecord>& probes;
      std::vector<std::string>& fingerprints;
      ~GiveBack() {
        for (size_t i = 0; i < probes.size(); ++i) probes[i].fingerprint = std::move(fingerprints[i]);
      }
    } give_back{probes, fingerprints};
    cached = options.cache->LookupMany(id, version, fingerprints);
  }
  for (size_t i = 0; i < probes.size(); ++i) {
    if (i < cached.size() && cached[i]) {
      probes[i].verdict = std::move(*cached[i]);
      probes[i].cache_hit = true;
      continue;
    }
    todo.push_back(i);
  }
  // Units known only from a lowering memo are lowered again here, before the probe threads start.
  for (size_t i : todo) probes[i].Unit();
  // Work items: one unit, or (a backend that batches) up to `limit` batchable units judged together.
  const size_t limit = options.probe_batch < 0 ? backend.batch_limit() : static_cast<size_t>(options.probe_batch);
  std::vector<std::vector<size_t>> items;
  {
    std::vector<size_t> batch;
    for (size_t i : todo) {
      const hlo::Module* unit = probes[i].Unit();
      if (limit > 1 && unit && backend.batchable(*unit)) {
        batch.push_back(i);
        if (batch.size() == limit) items.push_back(std::exchange(batch, {}));
      } else {
        items.push_back({i});
      }
    }
    if (!batch.empty()) items.push_back(std::move(batch));
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{total - static_cast<int64_t>(todo.size())};
  std::mutex progress_mu;
  compiler_probe::BatchStats batch_stats;
  if (options.on_progress && done > 0) options.on_progress(done, total);
  auto finish = [&](size_t i, compiler_probe::Verdict v) {
    probes[i].verdict = std::move(v);
    // Errors (crash, timeout) are not cached: they say nothing stable about the unit.
    if (options.cache && probes[i].verdict.judged())
      options.cache->Store(id, version, probes[i].fingerprint, probes[i].verdict);
    int64_t d = ++done;
    if (options.on_progress) {
      std::lock_guard<std::mutex> lock(progress_mu);
      options.on_progress(d, total);
    }
  };
  auto guarded = [](auto&& judge) -> std::optional<compiler_probe::Verdict> {
    try {
      judge();
      return std::nullopt;
    } catch (const std::exception& e) {
      return compiler_probe::Verdict::Error(fmt::format("backend threw: {}", e.what()));
    } catch (...) { return compiler_probe::Verdict::Error("backend threw an unknown exception"); }
  };
  auto worker = [&] {
    for (;;) {
      size_t k = next.fetch_add(1);
      if (k >= items.size()) return;
      const std::vector<size_t>& item = items[k];
      if (item.size() > 1) {
        std::vector<const hlo::Module*> units;
        units.reserve(item.size());
        for (size_t i : item) units.push_back(probes[i].Unit());
        std::vector<compiler_probe::Verdict> verdicts;
        compiler_probe::BatchStats stats;
        auto thrown = guarded([&] { verdicts = compiler_probe::ProbeBatched(backend, units, limit, &stats); });
        {
          std::lock_guard<std::mutex> lock(progress_mu);
          batch_stats += stats;
        }
        for (size_t j = 0; j < item.size(); ++j) finish(item[j], thrown ? *thrown : std::move(verdicts[j]));
        continue;
      }
      size_t i = item[0];
      auto start = Clock::now();
      compiler_probe::Verdict v;
      auto thrown = guarded([&] {
        const hlo::Module* unit = probes[i].Unit();
        v = unit ? backend.probe(*unit)
                 : compiler_probe::Verdict::Error(
                       "internal: this unit's call no longer lowers to it (a stale lowering memo); clear the cache");
      });
      if (thrown) v = std::move(*thrown);
      if (v.seconds == 0) v.seconds = SecondsSince(start);
      finish(i, std::move(v));
    }
  };
  for (const auto& item : items)
    if (item.size() > 1) summary.batched_units += static_cast<int64_t>(item.size());
  int jobs = backend.thread_safe() ? std::max(1, options.jobs) : 1;
  jobs = static_cast<int>(std::min<size_t>(static_cast<size_t>(jobs), std::max<size_t>(items.size(), 1)));
  summary.jobs = jobs;
  if (jobs <= 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(jobs));
    for (int t = 0; t < jobs; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }
  summary.batch_compiles = static_cast<int64_t>(batch_stats.compiles);
  summary.batches = static_cast<int64_t>(batch_stats.batched_compiles);
  summary.batch_splits = static_cast<int64_t>(batch_stats.splits);
  for (size_t i = 0; i < probes.size(); ++i) {
    if (probes[i].cache_hit) {
      ++summary.cache_hits;
    } else {
      ++summary.probes_run;
      summary.probe_seconds += probes[i].verdict.seconds;
    }
    const compiler_probe::Verdict& v = probes[i].verdict;
    switch (v.interp) {
      case compiler_probe::Verdict::Interp::kAgree: ++summary.interp_agree; break;
      case compiler_probe::Verdict::Interp::kDiffer: ++summary.interp_differ; break;
      case compiler_probe::Verdict::Interp::kNotCompared: ++summary.interp_not_compared; break;
      case compiler_probe::Verdict::Interp::kNone: break;
    }
    if (!options.dump_dir.empty() && !probes[i].verdict.supported() && probes[i].Unit()) {
      auto path = hlo::WriteRepro(*probes[i].Unit(), options.dump_dir, probes[i].opcode, probes[i].fingerprint);
      if (path.ok()) probes[i].repro_path = *path;
      else if (dump_error.ok()) dump_error = path.status();
    }
  }
  summary.unique_probes = total;
  return dump_error;
}

// One record per HostFallback, after the graph's own: a call at a place, with no probe (it never reached the device).
void AddHostFallbacks(AnalysisResult& r, const std::vector<HostFallback>& fallbacks) {
  for (const auto& f : fallbacks) {
    OpRecord rec;
    rec.op = f.op;
    rec.overload = f.overload;
    rec.loc = SharedSourceLoc(f.file, f.line);
    rec.count = f.count;
    rec.lowering = OpRecord::Lowering::kCpuFallback;
    rec.lowering_error = f.reason;
    r.ops.push_back(std::move(rec));
  }
}

void FillSummary(AnalysisResult& r) {
  Summary& s = r.summary;
  for (const auto& op : r.ops) {
    if (op.part_of < 0) {
      ++s.aten_nodes;
      s.aten_calls += op.count;
    }
    if (op.dynamic_shape) ++s.dynamic_shape_ops;
    if (op.lowering == OpRecord::Lowering::kCustomOp) s.custom_op_calls += op.count;
    if (op.lowering == OpRecord::Lowering::kCpuFallback) s.cpu_fallback_calls += op.count;
    if (op.lowering == OpRecord::Lowering::kFailed && op.part_of < 0) s.lowering_gap_calls += op.count;
    if (op.lowering == OpRecord::Lowering::kInternalError && op.part_of < 0) s.internal_error_calls += op.count;
    if (op.lowering != OpRecord::Lowering::kOk) {
      if (op.lowering == OpRecord::Lowering::kFailed) ++s.lowering_failures;
      s.hlo_instructions += op.count;
      continue;
    }
    for (size_t p : op.probes) {
      s.hlo_instructions += op.count;
      if (r.probes[p].verdict.supported()) s.supported_instructions += op.count;
    }
  }
}

// Namespaces the lowering table covers; a call elsewhere without a table entry is a custom op.
bool IsAtenNamespace(const std::string& op) {
  return op.rfind("aten::", 0) == 0 || op.rfind("prims::", 0) == 0 || op.rfind("prim::", 0) == 0;
}

std::string Dirname(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// What each distinct signature lowered to (from the memo, or lowered now: one form either way), the index in
// AnalysisResult::probes of each of its units, and what the records of its call sites share.
struct LoweredSignature {
  LoweringOutcome outcome;
  std::vector<size_t> probes;       // per outcome unit
  SharedVector<size_t> own_probes;  // the units of the call's own record, and their names
  SharedVector<std::string> own_names;
  // The units attributed to other ops (a record of their own at each call site), by op in order of first
  // appearance.
  struct Derived {
    SharedString op;
    std::vector<size_t> probes;
    std::vector<std::string> names;
    SharedVector<size_t> shared_probes;
    SharedVector<std::string> shared_names;
  };
  std::vector<Derived> derived;
  // What the records show, held once for all of them.
  SharedString op, overload, signature, error, note;
  SharedString derived_note;  // `part of the lowering of aten::add.Tensor`
};

// One signature's outcome: read from its memo `known` (its units added to `set` by fingerprint, to be lowered again
// only when needed), or lowered now (the units seen first here keep the lowered module until they are probed or
// printed). Lower keeps an error's kind: kInternal is opprobe's own bug (a lowering threw or built wrong HLO),
// anything else a call opprobe cannot lower yet.
void LowerOrRecall(LoweredSignature& l, const std::optional<LoweringOutcomeView>& known, const Node& n, uint32_t sig,
                   const LoweringTable& table, const std::shared_ptr<MemoUnits>& memo_units, ProbeSet& set,
                   std::vector<ProbeRecord>& probes) {
  LoweringOutcome& o = l.outcome;
  if (known) {
    o.kind = known->kind;
    o.error = known->error;
    o.dynamic_shape = known->dynamic_shape;
    o.note = known->note;
    l.probes.reserve(known->units.size());
    for (size_t k = 0; k < known->units.size(); ++k)
      l.probes.push_back(set.AddKnown(known->units[k], probes, memo_units, sig, static_cast<uint32_t>(k)));
    return;
  }
  if (!IsAtenNamespace(n.op) && table.Find(n.op, n.overload) == nullptr) {
    // Not opprobe's gap and not the backend's verdict: XLA has no lowering for it at all.
    o.kind = LoweringOutcome::Kind::kCustomOp;
  } else if (Expected<LoweredModule> m = Lower(n, table); !m.ok()) {
    o.kind = m.status().code() == ErrorCode::kInternal ? LoweringOutcome::Kind::kInternalError
                                                       : LoweringOutcome::Kind::kFailed;
    o.error = m.status().message();
  } else {
    o.dynamic_shape = m->dynamic_shape;
    o.note = m->note;
    const std::shared_ptr<const hlo::Module> source = std::move(m->module);
    for (const hlo::Instruction* u : m->units) {
      const size_t p = set.Add(*u, probes, source);
      l.probes.push_back(p);
      std::string other = AtenOpFromOpType(u->metadata->op_type);
      o.units.push_back(
          MemoUnit{set.hash(p), probes[p].opcode, probes[p].signature, u->name, other == n.op ? "" : std::move(other)});
    }
  }
}

// The records' share of a lowered signature: the units attributed to the call itself, and those attributed to other
// ops by op. `known`: the memo the outcome was read from, if it was.
void ShareUnits(LoweredSignature& l, const std::optional<LoweringOutcomeView>& known, const Node& n) {
  const LoweringOutcome& o = l.outcome;
  std::vector<size_t> own;
  std::vector<std::string> own_names;
  const size_t units = known ? known->units.size() : o.units.size();
  for (size_t k = 0; k < units; ++k) {
    const std::string_view unit_name = known ? known->units[k].name : std::string_view(o.units[k].name);
    const std::string_view attributed_to =
        known ? known->units[k].attributed_to : std::string_view(o.units[k].attributed_to);
    if (attributed_to.empty()) {
      own.push_back(l.probes[k]);
      own_names.emplace_back(unit_name);
      continue;
    }
    auto d = std::find_if(l.derived.begin(), l.derived.end(),
                          [&](const LoweredSignature::Derived& x) { return x.op == attributed_to; });
    if (d == l.derived.end())
      d = l.derived.insert(d, LoweredSignature::Derived{SharedString(std::string(attributed_to)), {}, {}, {}, {}});
    d->probes.push_back(l.probes[k]);
    d->names.emplace_back(unit_name);
  }
  l.own_probes = std::move(own);
  l.own_names = std::move(own_names);
  for (LoweredSignature::Derived& d : l.derived) {
    d.shared_probes = std::move(d.probes);
    d.shared_names = std::move(d.names);
  }
  if (!l.derived.empty()) l.derived_note = fmt::format("part of the lowering of {}", n.qualified_name());
}

// DriverOptions::keep_calls (`--suggest`): the calls of the unsupported records (record i is call site i, of signature
// site_signatures[i]), one copy per signature.
void KeepUnsupportedCalls(AnalysisResult& r, const std::vector<uint32_t>& site_signatures,
                          const std::vector<LoweredSignature>& lowered, const MemoUnits& nodes) {
  std::unordered_map<uint32_t, std::shared_ptr<const Node>> kept;
  r.calls.resize(r.ops.size());
  for (size_t i = 0; i < site_signatures.size(); ++i) {
    if (r.OpSupported(r.ops[i])) {
      bool derived_fails = false;  // (a record attributed to another op may fail where the call's own do not)
      for (const LoweredSignature::Derived& d : lowered[site_signatures[i]].derived)
        for (size_t p : d.shared_probes) derived_fails = derived_fails || !r.probes[p].verdict.supported();
      if (!derived_fails) continue;
    }
    auto [it, inserted] = kept.try_emplace(site_signatures[i]);
    if (inserted) it->second = std::make_shared<const Node>(nodes.node(site_signatures[i]));
    r.calls[i] = it->second;
  }
}

}  // namespace

std::string MatchIgnorePattern(const std::string& op, const std::string& overload,
                               const std::vector<std::string>& patterns) {
  const std::string qualified = QualifiedOpName(op, overload);
  for (const auto& p : patterns)
    if (::fnmatch(p.c_str(), op.c_str(), 0) == 0 || ::fnmatch(p.c_str(), qualified.c_str(), 0) == 0) return p;
  return "";
}

std::string CustomOpReason(const std::string& op) {
  std::string ns = op.substr(0, op.find("::"));
  std::string what = ns == "torchvision"  ? "a torchvision operator"
                     : ns == "torchaudio" ? "a torchaudio operator"
                     : ns == "quantized"  ? "a quantized-engine (fbgemm/qnnpack) operator"
                     : ns == "_quantized" ? "a quantized-engine operator"
                     : ns == "sparse"     ? "a sparse-layout operator"
                                          : "an operator registered outside aten (torch.library or a C++ extension)";
  return fmt::format("{} has no XLA lowering: an XLA backend needs a custom call or a CPU fallback for it ({})", op,
                     what);
}

// Everything a GraphAnalysis keeps between Add and Finish: per distinct call site a few numbers (its strings are held
// once in `strings`), per distinct signature one node.
struct GraphAnalysis::State {
  explicit State(const DriverOptions& o)
      : options(o), forward_index(0, ForwardHash{this}, ForwardEq{this}), site_index(0, SiteHash{this}, SiteEq{this}) {}

  DriverOptions options;
  Clock::time_point start = Clock::now();
  bool any_aten = false;
  std::map<std::string, IgnoredOp> ignored;

  // Distinct signatures (SignatureKey: op, overload, arguments, outputs), numbered in order of appearance, each with
  // the first node that had it: the one that is lowered.
  std::unordered_map<std::string, uint32_t> signature_ids;
  std::vector<const std::string*> signature_keys;  // keys of signature_ids, by signature
  std::vector<Node> signature_nodes;
  std::vector<std::string> tensor_signatures;
  // Nodes whose argument and output lists share a storage have the same signature when op and overload agree too:
  // (args storage, outputs storage) -> the signatures seen with them (compared by the op and overload of the
  // signature's node). An entry holds the storages, so that their addresses are not reused for other lists while it
  // stands.
  struct Seen {
    uint32_t signature;
    SharedVector<Argument> args;
    SharedVector<Value> outputs;
  };
  struct StoragePairHash {
    size_t operator()(const std::pair<const void*, const void*>& p) const {
      return std::hash<const void*>{}(p.first) * 31 + std::hash<const void*>{}(p.second);
    }
  };
  std::unordered_map<std::pair<const void*, const void*>, std::vector<Seen>, StoragePairHash> seen;

  // The strings of the call sites (file, module path, program, phase, note), each held once; id 0 is "".
  class Strings {
   public:
    Strings() { text_.push_back(&ids_.emplace(std::string(), 0).first->first); }
    uint32_t Id(const std::string& s) {
      if (s.empty()) return 0;
      if (auto known = ids_.find(s); known != ids_.end()) return known->second;  // (emplace would copy s first)
      auto [it, inserted] = ids_.emplace(s, static_cast<uint32_t>(text_.size()));
      if (inserted) text_.push_back(&it->first);
      return it->second;
    }
    // Id(s), where `last` is the id this field had in the call before: consecutive calls mostly share their file,
    // module and phase, and comparing with it is cheaper than hashing `s`.
    uint32_t Id(const std::string& s, uint32_t& last) {
      if (s.empty()) return 0;
      if (last != 0 && *text_[last] == s) return last;
      return last = Id(s);
    }
    const std::string& operator[](uint32_t id) const { return *text_[id]; }
    size_t size() const { return text_.size(); }

   private:
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<const std::string*> text_;  // keys of ids_ (their addresses do not move)
  } strings;

  // A backward call's forward call, each distinct one held once (shared by the records); id 0 is "none".
  std::vector<std::shared_ptr<const ForwardCall>> forwards{nullptr};
  struct ForwardHash {
    using is_transparent = void;
    const State* s;
    size_t operator()(const ForwardCall& f) const {
      std::hash<std::string_view> text;
      size_t h = text(f.op);
      for (size_t v : {text(f.loc.file), static_cast<size_t>(f.loc.line), text(f.lib_loc.file),
                       static_cast<size_t>(f.lib_loc.line), text(f.module_path)})
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      return h;
    }
    size_t operator()(uint32_t i) const { return (*this)(*s->forwards[i]); }
  };
  struct ForwardEq {
    using is_transparent = void;
    const State* s;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(const ForwardCall& f, uint32_t i) const { return f == *s->forwards[i]; }
    bool operator()(uint32_t i, const ForwardCall& f) const { return f == *s->forwards[i]; }
  };
  std::unordered_set<uint32_t, ForwardHash, ForwardEq> forward_index;  // indices into `forwards`
  uint32_t ForwardId(ForwardCall&& f);                                 // `f` is moved from when it is new
  uint32_t last_forward = 0;                                           // the id ForwardId gave last

  // One entry per distinct call site (signature, place, library frame, forward call, module, program, phase,
  // dynamic), in order of appearance.
  struct Site {
    uint32_t signature;
    uint32_t file, module_path, program, phase, note;  // in `strings`
    int line;
    bool dynamic;
    int64_t count;
    uint32_t lib_file = 0;  // in `strings`
    int lib_line = 0;
    uint32_t forward = 0;  // in `forwards`
  };
  std::vector<Site> sites;
  Site last_site{};  // the string ids of the call before (Strings::Id's `last`)
  struct SiteHash {
    using is_transparent = void;
    const State* s;
    size_t operator()(const Site& k) const {
      size_t h = k.signature;
      for (size_t v :
           {size_t{k.file}, static_cast<size_t>(k.line), size_t{k.module_path}, size_t{k.program}, size_t{k.phase},
            size_t{k.dynamic}, size_t{k.lib_file}, static_cast<size_t>(k.lib_line), size_t{k.forward}})
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      return h;
    }
    size_t operator()(uint32_t i) const { return (*this)(s->sites[i]); }
  };
  struct SiteEq {
    using is_transparent = void;
    const State* s;
    static bool Same(const Site& a, const Site& b) {
      return a.signature == b.signature && a.line == b.line && a.file == b.file && a.module_path == b.module_path &&
             a.program == b.program && a.phase == b.phase && a.dynamic == b.dynamic && a.lib_file == b.lib_file &&
             a.lib_line == b.lib_line && a.forward == b.forward;
    }
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(const Site& k, uint32_t i) const { return Same(k, s->sites[i]); }
    bool operator()(uint32_t i, const Site& k) const { return Same(k, s->sites[i]); }
  };
  std::unordered_set<uint32_t, SiteHash, SiteEq> site_index;  // indices into `sites`

  // The signature of `n`, and whether it is new (then `n` is to be added to signature_nodes, and `tensor_signature`,
  // its TensorSignature(), to tensor_signatures).
  std::pair<uint32_t, bool> SignatureOf(const Node& n, std::string& tensor_signature);

  // Finish's steps. The result with `graph`'s fields, the backend's names and the ignored calls.
  AnalysisResult NewResult(const Graph& graph, const compiler_probe::Backend& backend);
  // The distinct signatures in the order the call sites first need them.
  std::vector<uint32_t> SignatureOrder() const;
  // Each signature of `order` lowered once, or what its lowering gave taken from the memo (and new outcomes
  // memoized), its units deduplicated by fingerprint into r.probes; by signature. `memo_units` holds the nodes.
  std::vector<LoweredSignature> LowerSignatures(AnalysisResult& r, const std::vector<uint32_t>& order,
                                                const std::shared_ptr<MemoUnits>& memo_units,
                                                const LoweringTable& table);
  // The records: one per call site (record i is site i), then those of the instructions attributed to another op.
  void AddRecords(AnalysisResult& r, const std::vector<LoweredSignature>& lowered);
};

std::pair<uint32_t, bool> GraphAnalysis::State::SignatureOf(const Node& n, std::string& tensor_signature) {
  std::vector<Seen>& same_lists = seen[{n.args.storage(), n.outputs.storage()}];
  for (const Seen& s : same_lists) {
    // (Add stores a new signature's node right after this: every signature seen here has one)
    const Node& known = signature_nodes[s.signature];
    if (known.op == n.op && known.overload == n.overload) return {s.signature, false};
  }
  auto [it, inserted] =
      signature_ids.emplace(n.SignatureKey(&tensor_signature), static_cast<uint32_t>(signature_keys.size()));
  if (inserted) signature_keys.push_back(&it->first);
  same_lists.push_back(Seen{it->second, n.args, n.outputs});
  return {it->second, inserted};
}

uint32_t GraphAnalysis::State::ForwardId(ForwardCall&& f) {
  if (f.op.empty()) return 0;
  // The calls a forward call's backward makes mostly come one after another: the last one is compared first (cheaper
  // than hashing its four strings).
  if (last_forward != 0 && *forwards[last_forward] == f) return last_forward;
  if (auto known = forward_index.find(f); known != forward_index.end()) return last_forward = *known;
  forwards.push_back(std::make_shared<const ForwardCall>(std::move(f)));
  forward_index.insert(static_cast<uint32_t>(forwards.size() - 1));
  return last_forward = static_cast<uint32_t>(forwards.size() - 1);
}

GraphAnalysis::GraphAnalysis(const DriverOptions& options) : s_(std::make_unique<State>(options)) {}

GraphAnalysis::~GraphAnalysis() = default;

bool GraphAnalysis::any_aten_call() const { return s_->any_aten; }

void GraphAnalysis::set_caches(compiler_probe::ProbeCache* cache, compiler_probe::LoweringMemoStore* memos) {
  s_->options.cache = cache;
  s_->options.memos = memos;
}

void GraphAnalysis::Add(Node&& n) {
  State& s = *s_;
  s.any_aten = s.any_aten || n.op.starts_with("aten::") || n.op.starts_with("prims::");
  if (IsBookkeepingOp(n.op)) return;  // never reaches a device
  if (!s.options.ignore_ops.empty()) {
    std::string pattern = MatchIgnorePattern(n.op, n.overload, s.options.ignore_ops);
    if (!pattern.empty()) {
      IgnoredOp& ig = s.ignored[n.op];
      if (ig.op.empty()) ig = IgnoredOp{n.op, pattern, 0};
      ig.count += n.count;
      return;
    }
  }
  // 1. Merge identical calls at the same place: memory grows with distinct calls, not total calls.
  std::string tensor_signature;
  const auto [signature, new_signature] = s.SignatureOf(n, tensor_signature);
  State::Site& last = s.last_site;
  State::Site site{signature,
                   s.strings.Id(n.loc.file, last.file),
                   s.strings.Id(n.module_path, last.module_path),
                   s.strings.Id(n.program, last.program),
                   s.strings.Id(n.phase, last.phase),
                   0,
                   n.loc.line,
                   n.dynamic_shape,
                   n.count,
                   s.strings.Id(n.lib_loc.file, last.lib_file),
                   n.lib_loc.line,
                   s.ForwardId(std::move(n.forward))};  // (no lowering reads a node's forward call)
  if (!new_signature) {
    if (auto it = s.site_index.find(site); it != s.site_index.end()) {
      s.sites[*it].count += n.count;
      return;
    }
  }
  site.note = s.strings.Id(n.note);
  s.sites.push_back(site);
  s.site_index.insert(static_cast<uint32_t>(s.sites.size() - 1));
  if (new_signature) {  // the first node with it: the one that is lowered
    s.tensor_signatures.push_back(std::move(tensor_signature));
    s.signature_nodes.push_back(std::move(n));
  }
}

AnalysisResult GraphAnalysis::State::NewResult(const Graph& graph, const compiler_probe::Backend& backend) {
  AnalysisResult r;
  r.model = graph.model;
  r.input_kind = graph.input_kind;
  r.torch_version = graph.torch_version;
  r.backend_id = backend.id();
  r.backend_version = backend.version();
  r.programs = graph.programs;
  r.capture = graph.capture;
  r.steps = graph.steps;
  if (graph.input_kind == "trace") r.source_dir = Dirname(graph.model);
  for (auto& ig : ignored) {
    r.summary.ignored_calls += ig.second.count;
    r.ignored.push_back(std::move(ig.second));
  }
  return r;
}

std::vector<uint32_t> GraphAnalysis::State::SignatureOrder() const {
  std::vector<uint32_t> order;
  std::vector<bool> needed(signature_nodes.size());
  for (const Site& site : sites)
    if (!needed[site.signature]) {
      needed[site.signature] = true;
      order.push_back(site.signature);
    }
  return order;
}

std::vector<LoweredSignature> GraphAnalysis::State::LowerSignatures(AnalysisResult& r,
                                                                    const std::vector<uint32_t>& order,
                                                                    const std::shared_ptr<MemoUnits>& memo_units,
                                                                    const LoweringTable& table) {
  std::vector<LoweredSignature> lowered(memo_units->signatures());
  compiler_probe::LoweringMemoStore* memo_store = options.memos;
  const bool memo = memo_store && table.builtin() && !BuildId().empty();
  std::vector<uint64_t> memo_keys;
  std::vector<std::optional<std::string>> memos;
  if (memo) {
    memo_keys.reserve(order.size());
    for (uint32_t sig : order) memo_keys.push_back(LoweringMemoKey(*signature_keys[sig]));
    memos = memo_store->LookupMemos(memo_keys);
  }
  std::vector<std::pair<uint64_t, std::string>> new_memos;
  ProbeSet set;
  r.probes.reserve(order.size() + order.size() / 2);  // (a signature lowers to a unit or two, most of them shared)
  // The records' op and overload names, one SharedString per distinct name (a model calls a few dozen ops with
  // hundreds of signatures): the reports tally records by them (reports::TallySupportedAten) without a lookup each.
  SharedStrings names;  // of views into the nodes, which outlive it
  for (size_t j = 0; j < order.size(); ++j) {
    const uint32_t sig = order[j];
    LoweredSignature& l = lowered[sig];
    const Node& n = memo_units->node(sig);
    // A memo is read in place (views into memos[j], which stands until this signature is done): only what the
    // records keep is copied out of it.
    std::optional<LoweringOutcomeView> known;
    if (memo && memos[j]) known = DecodeLoweringOutcomeView(*memos[j]);
    LowerOrRecall(l, known, n, sig, table, memo_units, set, r.probes);
    if (memo && !known) new_memos.emplace_back(memo_keys[j], EncodeLoweringOutcome(l.outcome));
    l.op = names.Of(n.op);
    l.overload = names.Of(n.overload);
    l.signature = std::move(tensor_signatures[sig]);
    if (l.outcome.kind == LoweringOutcome::Kind::kCustomOp) {
      l.error = CustomOpReason(n.op);
      continue;
    }
    ++r.summary.distinct_signatures;
    l.error = l.outcome.error;
    l.note = l.outcome.note;
    ShareUnits(l, known, n);
    if (known) memos[j].reset();
  }
  if (!new_memos.empty()) memo_store->StoreMemos(new_memos);
  return lowered;
}

void GraphAnalysis::State::AddRecords(AnalysisResult& r, const std::vector<LoweredSignature>& lowered) {
  size_t derived_total = 0;
  for (const Site& site : sites) derived_total += lowered[site.signature].derived.size();
  // Their strings are shared: one SharedString per distinct string of the call sites.
  std::vector<SharedString> texts(strings.size());
  auto text = [&](uint32_t id) -> const SharedString& {
    if (texts[id].empty() && id != 0) texts[id] = strings[id];
    return texts[id];
  };
  r.ops.reserve(sites.size() + derived_total);
  for (const Site& site : sites) {
    const LoweredSignature& l = lowered[site.signature];
    const LoweringOutcome& o = l.outcome;
    OpRecord& op = r.ops.emplace_back();
    op.op = l.op;
    op.overload = l.overload;
    op.signature = l.signature;
    op.loc = {text(site.file), site.line};
    op.lib_loc = {text(site.lib_file), site.lib_line};
    op.forward = forwards[site.forward];
    op.module_path = text(site.module_path);
    op.program = text(site.program);
    op.phase = text(site.phase);
    op.count = site.count;
    op.dynamic_shape = site.dynamic;
    op.note = text(site.note);
    if (o.kind == LoweringOutcome::Kind::kCustomOp) {
      op.lowering = OpRecord::Lowering::kCustomOp;
      op.lowering_error = l.error;
      continue;
    }
    if (o.kind == LoweringOutcome::Kind::kFailed || o.kind == LoweringOutcome::Kind::kInternalError) {
      op.lowering =
          o.kind == LoweringOutcome::Kind::kFailed ? OpRecord::Lowering::kFailed : OpRecord::Lowering::kInternalError;
      op.lowering_error = l.error;
    }
    op.probes = l.own_probes;
    op.instruction_names = l.own_names;
    if (o.dynamic_shape) {
      op.dynamic_shape = true;
      if (op.note.empty()) op.note = l.note;
    }
  }
  // An instruction the lowering attributes to another aten op gets that op's record at its call's place.
  for (size_t i = 0; i < sites.size(); ++i) {
    const LoweredSignature& l = lowered[sites[i].signature];
    for (const LoweredSignature::Derived& d : l.derived) {
      OpRecord& rec = r.ops.emplace_back();
      const OpRecord& op = r.ops[i];  // (reserved: no reallocation)
      rec.op = d.op;
      rec.signature = op.signature;
      rec.loc = op.loc;
      rec.lib_loc = op.lib_loc;
      rec.forward = op.forward;
      rec.module_path = op.module_path;
      rec.program = op.program;
      rec.phase = op.phase;
      rec.count = op.count;
      rec.note = l.derived_note;
      rec.part_of = static_cast<int64_t>(i);
      rec.probes = d.shared_probes;
      rec.instruction_names = d.shared_names;
    }
  }
}

AnalysisResult GraphAnalysis::Finish(const Graph& graph, compiler_probe::Backend& backend, const LoweringTable& table) {
  State& s = *s_;
  s.site_index.clear();
  // 1. The result's own fields.
  AnalysisResult r = s.NewResult(graph, backend);
  // 2. Lower each distinct signature once (in the order the call sites first need it), or take what its lowering
  // gave from the memo; 3. dedup probe units by fingerprint. The nodes outlive the analysis in the units known from
  // the memo (they lower their call again when needed).
  const std::vector<uint32_t> order = s.SignatureOrder();
  const auto memo_units = std::make_shared<MemoUnits>(std::move(s.signature_nodes), table);
  const std::vector<LoweredSignature> lowered = s.LowerSignatures(r, order, memo_units, table);
  // The records: one per call site, then those of instructions attributed to another op, each at its call's place.
  s.AddRecords(r, lowered);
  std::vector<uint32_t> site_signatures;
  if (s.options.keep_calls) {
    site_signatures.reserve(s.sites.size());
    for (const State::Site& site : s.sites) site_signatures.push_back(site.signature);
  }
  std::vector<State::Site>().swap(s.sites);
  // 4. Probe; 5. verdicts fan back out through the indices in OpRecord::probes.
  if (Status st = ProbeAll(r.probes, backend, s.options, r.summary); !st.ok())
    r.warnings.push_back("repro files: " + st.message());
  if (s.options.keep_calls) KeepUnsupportedCalls(r, site_signatures, lowered, *memo_units);
  AddHostFallbacks(r, s.options.host_fallbacks);
  FillSummary(r);
  r.summary.wall_seconds = SecondsSince(s.start);
  return r;
}

AnalysisResult Analyze(const Graph& graph, compiler_probe::Backend& backend, const LoweringTable& table,
                       const DriverOptions& options) {
  GraphAnalysis analysis(options);
  for (const Node& n : graph.nodes) analysis.Add(Node(n));
  return analysis.Finish(graph, backend, table);
}

std::string AtenOpFromOpType(const std::string& op_type) {
  auto pos = op_type.find("__");
  if (pos == std::string::npos || pos == 0) return "";
  std::string ns = op_type.substr(0, pos);
  if (ns != "aten" && ns != "prim" && ns != "xla" && ns != "torch_xla") return "";
  return ns + "::" + op_type.substr(pos + 2);
}

AnalysisResult AnalyzeHlo(const std::string& model, const std::vector<NamedModule>& modules,
                          compiler_probe::Backend& backend, const DriverOptions& options) {
  auto start = Clock::now();
  AnalysisResult r;
  r.model = model;
  r.input_kind = "hlo";
  r.backend_id = backend.id();
  r.backend_version = backend.version();
  ProbeSet set;
  // A record per (module, attributed op, source file, line). The op an op_type names is worked out once per distinct
  // op_type; the keys are views into the modules' metadata, which outlive this function's maps.
  std::unordered_map<std::string_view, SharedString> op_of_type;
  SharedStrings files;  // the records' files
  struct RecordKey {
    size_t module;
    std::string_view op, file;
    int64_t line;
    bool operator==(const RecordKey&) const = default;
  };
  struct RecordKeyHash {
    size_t operator()(const RecordKey& k) const {
      size_t h = std::hash<std::string_view>{}(k.op);
      for (size_t v : {k.module, std::hash<std::string_view>{}(k.file), static_cast<size_t>(k.line)})
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      return h;
    }
  };
  std::unordered_map<RecordKey, size_t, RecordKeyHash> op_index;
  // A module's instructions with the same metadata share one OpMetadata (support::SharedValue; the text parser gives
  // each distinct text one): the record is worked out once per metadata, not once per instruction.
  std::unordered_map<const hlo::OpMetadata*, size_t> record_of_metadata;
  for (size_t mi = 0; mi < modules.size(); ++mi) {
    const NamedModule& nm = modules[mi];
    r.programs.push_back(nm.name);
    if (nm.owner) r.input_modules.push_back(nm.owner);
    const SharedString program = nm.name;  // shared by the module's records
    const hlo::Computation* entry = nm.module->entry();
    if (!entry) continue;
    record_of_metadata.clear();
    const auto& instrs = entry->instructions();
    for (size_t k = 0; k < instrs.size(); ++k) {
      if (const hlo::Instruction* ahead = hlo::PrefetchAhead(instrs, k)) support::PrefetchLine(&ahead->metadata);
      const hlo::Instruction* instr = instrs[k].get();
      if (instr->opcode == hlo::Opcode::kParameter) continue;
      const hlo::OpMetadata& md = *instr->metadata;
      auto [mt, new_metadata] = record_of_metadata.try_emplace(&md, 0);
      if (new_metadata) {
        auto [ot, new_type] = op_of_type.try_emplace(md.op_type);
        if (new_type) {
          std::string aten = AtenOpFromOpType(md.op_type);
          ot->second = aten.empty() ? "unattributed" : std::move(aten);
        }
        const SharedString& op = ot->second;
        auto [it, inserted] =
            op_index.try_emplace(RecordKey{mi, op.str(), md.source_file, md.source_line}, r.ops.size());
        if (inserted) {
          OpRecord rec;
          rec.op = op;
          rec.loc = {files.Of(md.source_file), static_cast<int>(md.source_line)};
          rec.program = program;
          r.ops.push_back(std::move(rec));
        }
        mt->second = it->second;
      }
      OpRecord& rec = r.ops[mt->second];
      rec.probes.push_back(set.Add(*instr, r.probes, nm.owner));
      rec.instruction_names.push_back(instr->name);
      if (instr->shape.is_dynamic()) {
        rec.dynamic_shape = true;
        rec.note = "bounded dynamic shape " + instr->shape.ToString();
      }
    }
  }
  if (Status st = ProbeAll(r.probes, backend, options, r.summary); !st.ok())
    r.warnings.push_back("repro files: " + st.message());
  r.summary.distinct_signatures = static_cast<int64_t>(r.ops.size());
  AddHostFallbacks(r, options.host_fallbacks);
  FillSummary(r);
  r.summary.wall_seconds = SecondsSince(start);
  return r;
}

}  // namespace opprobe::analyzer
