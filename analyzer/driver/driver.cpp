#include "analyzer/driver/driver.h"

#include <fmt/format.h>

#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "analyzer/loaders/trace_loader.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/repro.h"

namespace opprobe::analyzer {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Collects unique probe units by fingerprint; owns their modules until they are probed.
class ProbeSet {
 public:
  // Returns the index of the unit in AnalysisResult::probes.
  size_t Add(const hlo::Instruction& instr, std::vector<ProbeRecord>& probes) {
    std::unique_ptr<hlo::Module> unit = hlo::MakeProbeModule(instr, std::string(hlo::OpcodeName(instr.opcode)));
    std::string fp = hlo::Fingerprint(*unit);
    if (auto it = index_.find(fp); it != index_.end()) return it->second;
    ProbeRecord rec;
    rec.fingerprint = fp;
    rec.opcode = instr.unknown_opcode.empty() ? std::string(hlo::OpcodeName(instr.opcode)) : instr.unknown_opcode;
    rec.signature = hlo::InstructionSignature(instr);
    rec.module_text = hlo::ToString(*unit, hlo::PrintOptions::Short());
    size_t idx = probes.size();
    probes.push_back(std::move(rec));
    modules_.push_back(std::move(unit));
    index_.emplace(std::move(fp), idx);
    return idx;
  }
  const std::vector<std::unique_ptr<hlo::Module>>& modules() const { return modules_; }

 private:
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::unique_ptr<hlo::Module>> modules_;
};

// Probes every unit (cache first), in parallel when the backend allows it, then writes repro files.
Status ProbeAll(const ProbeSet& set, std::vector<ProbeRecord>& probes, compiler_probe::Backend& backend,
                const DriverOptions& options, Summary& summary) {
  Status dump_error;
  const std::string id = backend.id();
  const std::string version = backend.version();
  const int64_t total = static_cast<int64_t>(probes.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < probes.size(); ++i) {
    if (options.cache) {
      if (auto v = options.cache->Lookup(id, version, probes[i].fingerprint)) {
        probes[i].verdict = *v;
        probes[i].cache_hit = true;
        continue;
      }
    }
    todo.push_back(i);
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{total - static_cast<int64_t>(todo.size())};
  std::mutex progress_mu;
  if (options.on_progress && done > 0) options.on_progress(done, total);
  auto worker = [&] {
    for (;;) {
      size_t k = next.fetch_add(1);
      if (k >= todo.size()) return;
      size_t i = todo[k];
      auto start = Clock::now();
      compiler_probe::Verdict v;
      try {
        v = backend.probe(*set.modules()[i]);
      } catch (const std::exception& e) {
        v = compiler_probe::Verdict::Error(fmt::format("backend threw: {}", e.what()));
      } catch (...) {
        v = compiler_probe::Verdict::Error("backend threw an unknown exception");
      }
      if (v.seconds == 0) v.seconds = SecondsSince(start);
      probes[i].verdict = v;
      // Errors (crash, timeout) are not cached: they say nothing stable about the unit.
      if (options.cache && v.kind != compiler_probe::Verdict::Kind::kError)
        options.cache->Store(id, version, probes[i].fingerprint, v);
      int64_t d = ++done;
      if (options.on_progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        options.on_progress(d, total);
      }
    }
  };
  int jobs = backend.thread_safe() ? std::max(1, options.jobs) : 1;
  jobs = static_cast<int>(std::min<size_t>(static_cast<size_t>(jobs), std::max<size_t>(todo.size(), 1)));
  summary.jobs = jobs;
  if (jobs <= 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < jobs; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }
  for (size_t i = 0; i < probes.size(); ++i) {
    if (probes[i].cache_hit) {
      ++summary.cache_hits;
    } else {
      ++summary.probes_run;
      summary.probe_seconds += probes[i].verdict.seconds;
    }
    const compiler_probe::Verdict& v = probes[i].verdict;
    if (v.supported() && v.output_tail.rfind(compiler_probe::kInterpAgreePrefix, 0) == 0) ++summary.interp_agree;
    if (!v.supported() && v.reason.rfind(compiler_probe::kNumericsPrefix, 0) == 0) ++summary.interp_differ;
    if (v.supported() && v.output_tail.rfind(compiler_probe::kInterpNotComparedPrefix, 0) == 0)
      ++summary.interp_not_compared;
    if (!options.dump_dir.empty() && !probes[i].verdict.supported()) {
      auto path = hlo::WriteRepro(*set.modules()[i], options.dump_dir, probes[i].opcode, probes[i].fingerprint);
      if (path.ok()) probes[i].repro_path = *path;
      else if (dump_error.ok()) dump_error = path.status();
    }
  }
  summary.unique_probes = total;
  return dump_error;
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
    if (op.lowering == OpRecord::Lowering::kFailed && op.part_of < 0) s.lowering_gap_calls += op.count;
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

}  // namespace

std::string MatchIgnorePattern(const std::string& op, const std::string& overload,
                               const std::vector<std::string>& patterns) {
  std::string qualified = overload.empty() || overload == "default" ? op : op + "." + overload;
  for (const auto& p : patterns)
    if (::fnmatch(p.c_str(), op.c_str(), 0) == 0 || ::fnmatch(p.c_str(), qualified.c_str(), 0) == 0) return p;
  return "";
}

std::string CustomOpReason(const std::string& op) {
  std::string ns = op.substr(0, op.find("::"));
  std::string what = ns == "torchvision"   ? "a torchvision operator"
                     : ns == "torchaudio"  ? "a torchaudio operator"
                     : ns == "quantized"   ? "a quantized-engine (fbgemm/qnnpack) operator"
                     : ns == "_quantized"  ? "a quantized-engine operator"
                     : ns == "sparse"      ? "a sparse-layout operator"
                                           : "an operator registered outside aten (torch.library or a C++ extension)";
  return fmt::format("{} has no XLA lowering: an XLA backend needs a custom call or a CPU fallback for it ({})", op,
                     what);
}

AnalysisResult Analyze(const Graph& graph, compiler_probe::Backend& backend, const LoweringTable& table,
                       const DriverOptions& options) {
  auto start = Clock::now();
  AnalysisResult r;
  r.model = graph.model;
  r.input_kind = graph.input_kind;
  r.torch_version = graph.torch_version;
  r.backend_id = backend.id();
  r.backend_version = backend.version();
  r.programs = graph.programs;
  r.capture = graph.capture;
  if (graph.input_kind == "trace") r.source_dir = Dirname(graph.model);

  // 1. Merge identical calls at the same place: memory grows with distinct calls, not total calls.
  std::unordered_map<std::string, size_t> op_index;
  std::vector<const Node*> representative;
  std::map<std::string, IgnoredOp> ignored;
  for (const Node& n : graph.nodes) {
    if (IsBookkeepingOp(n.op)) continue;  // never reaches a device
    if (!options.ignore_ops.empty()) {
      std::string pattern = MatchIgnorePattern(n.op, n.overload, options.ignore_ops);
      if (!pattern.empty()) {
        IgnoredOp& ig = ignored[n.op];
        if (ig.op.empty()) ig = IgnoredOp{n.op, pattern, 0};
        ig.count += n.count;
        r.summary.ignored_calls += n.count;
        continue;
      }
    }
    std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", n.SignatureKey(), n.loc.file, n.loc.line,
                                  n.module_path, n.program, n.phase, n.dynamic_shape, n.lib_loc.file, n.lib_loc.line,
                                  n.forward.op, n.forward.loc.file, n.forward.loc.line, n.forward.lib_loc.file,
                                  n.forward.lib_loc.line, n.forward.module_path);
    auto [it, inserted] = op_index.emplace(std::move(key), r.ops.size());
    if (!inserted) {
      r.ops[it->second].count += n.count;
      continue;
    }
    OpRecord op;
    op.op = n.op;
    op.overload = n.overload;
    op.signature = n.TensorSignature();
    op.loc = n.loc;
    op.lib_loc = n.lib_loc;
    op.forward = n.forward;
    op.module_path = n.module_path;
    op.program = n.program;
    op.phase = n.phase;
    op.count = n.count;
    op.dynamic_shape = n.dynamic_shape;
    op.note = n.note;
    r.ops.push_back(std::move(op));
    representative.push_back(&n);
  }
  for (auto& [name, ig] : ignored) r.ignored.push_back(std::move(ig));

  // 2. Lower each distinct signature once; 3. dedup probe units by fingerprint.
  struct Lowered {
    bool ok = false;
    std::string error;
    bool dynamic = false;
    std::string note;
    std::vector<size_t> probes;
    std::vector<std::string> names;
    std::vector<std::string> attributed_to;  // per unit: empty = this node's op, else another aten op
  };
  std::unordered_map<std::string, Lowered> lowered;
  std::unordered_map<std::string, size_t> derived;
  std::vector<OpRecord> derived_ops;
  ProbeSet set;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const Node& n = *representative[i];
    if (!IsAtenNamespace(n.op) && table.Find(n.op, n.overload) == nullptr) {
      // Not opprobe's gap and not the backend's verdict: XLA has no lowering for it at all.
      r.ops[i].lowering = OpRecord::Lowering::kCustomOp;
      r.ops[i].lowering_error = CustomOpReason(n.op);
      continue;
    }
    std::string key = n.SignatureKey();
    auto it = lowered.find(key);
    if (it == lowered.end()) {
      Lowered l;
      Expected<LoweredModule> m = Lower(n, table);
      if (!m.ok()) {
        l.error = m.status().message();
      } else {
        l.ok = true;
        l.dynamic = m->dynamic_shape;
        l.note = m->note;
        for (const hlo::Instruction* u : m->units) {
          l.probes.push_back(set.Add(*u, r.probes));
          l.names.push_back(u->name);
          std::string other = AtenOpFromOpType(u->metadata.op_type);
          l.attributed_to.push_back(other == n.op ? "" : other);
        }
      }
      it = lowered.emplace(key, std::move(l)).first;
      ++r.summary.distinct_signatures;
    }
    OpRecord& op = r.ops[i];
    const Lowered& l = it->second;
    if (!l.ok) {
      op.lowering = OpRecord::Lowering::kFailed;
      op.lowering_error = l.error;
    }
    for (size_t k = 0; k < l.probes.size(); ++k) {
      if (l.attributed_to[k].empty()) {
        op.probes.push_back(l.probes[k]);
        op.instruction_names.push_back(l.names[k]);
        continue;
      }
      // An instruction the lowering attributes to another aten op gets that op's record at this place.
      auto [jt, inserted] = derived.emplace(fmt::format("{}|via {}", l.attributed_to[k], i), 0);
      if (inserted) {
        OpRecord d;
        d.op = l.attributed_to[k];
        d.overload = "";
        d.signature = op.signature;
        d.loc = op.loc;
        d.lib_loc = op.lib_loc;
        d.forward = op.forward;
        d.module_path = op.module_path;
        d.program = op.program;
        d.phase = op.phase;
        d.count = op.count;
        d.note = fmt::format("part of the lowering of {}", n.qualified_name());
        d.part_of = static_cast<int64_t>(i);
        jt->second = derived_ops.size();
        derived_ops.push_back(std::move(d));
      }
      derived_ops[jt->second].probes.push_back(l.probes[k]);
      derived_ops[jt->second].instruction_names.push_back(l.names[k]);
    }
    if (l.dynamic) {
      op.dynamic_shape = true;
      if (op.note.empty()) op.note = l.note;
    }
  }

  for (auto& d : derived_ops) r.ops.push_back(std::move(d));

  // 4. Probe; 5. verdicts fan back out through the indices in OpRecord::probes.
  if (Status st = ProbeAll(set, r.probes, backend, options, r.summary); !st.ok())
    r.warnings.push_back("repro files: " + st.message());
  FillSummary(r);
  r.summary.wall_seconds = SecondsSince(start);
  return r;
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
  std::map<std::string, size_t> op_index;
  for (const auto& nm : modules) {
    r.programs.push_back(nm.name);
    const hlo::Computation* entry = nm.module->entry();
    if (!entry) continue;
    for (const auto& instr : entry->instructions()) {
      if (instr->opcode == hlo::Opcode::kParameter) continue;
      std::string op = AtenOpFromOpType(instr->metadata.op_type);
      if (op.empty()) op = "unattributed";
      SourceLoc loc{instr->metadata.source_file, instr->metadata.source_line};
      std::string key = fmt::format("{}|{}|{}|{}", nm.name, op, loc.file, loc.line);
      auto [it, inserted] = op_index.emplace(key, r.ops.size());
      if (inserted) {
        OpRecord rec;
        rec.op = op;
        rec.loc = loc;
        rec.program = nm.name;
        r.ops.push_back(std::move(rec));
      }
      OpRecord& rec = r.ops[it->second];
      rec.probes.push_back(set.Add(*instr, r.probes));
      rec.instruction_names.push_back(instr->name);
      if (instr->shape.is_dynamic()) {
        rec.dynamic_shape = true;
        rec.note = "bounded dynamic shape " + instr->shape.ToString();
      }
    }
  }
  if (Status st = ProbeAll(set, r.probes, backend, options, r.summary); !st.ok())
    r.warnings.push_back("repro files: " + st.message());
  r.summary.distinct_signatures = static_cast<int64_t>(r.ops.size());
  FillSummary(r);
  r.summary.wall_seconds = SecondsSince(start);
  return r;
}

}  // namespace opprobe::analyzer
