#include "analyzer/pipeline/pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "analyzer/driver/driver.h"
#include "analyzer/loaders/hlo_loader.h"
#include "analyzer/loaders/pt2_loader.h"
#include "analyzer/loaders/stablehlo_loader.h"
#include "analyzer/loaders/trace_loader.h"
#include "analyzer/program/fit.h"
#include "analyzer/suggest/suggest.h"
#include "compiler_probe/disk_cache.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/remote/shared_cache.h"
#include "support/file_io.h"

namespace opprobe::analyzer {

namespace fs = std::filesystem;

namespace {

bool StartsWithJsonObject(std::string_view bytes) {
  size_t first = bytes.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && bytes[first] == '{';
}

bool IsZip(std::string_view bytes) { return bytes.starts_with(std::string_view("PK\x03\x04", 4)); }

std::string_view SkipSpace(std::string_view s) {
  size_t n = s.find_first_not_of(" \t\r\n");
  return n == std::string_view::npos ? std::string_view() : s.substr(n);
}

// Whether a JSON object's first bytes mark it as an opprobe trace: the member `"format": "opprobe-trace"` (which
// opprobe writes first), or a first member `calls` (a trace written again with its keys sorted, its format after
// its calls). The marker inside a string (an ExportedProgram's metadata quoting it) does not count: its quotes are
// escaped there.
bool MarkedAsTrace(std::string_view bytes) {
  constexpr std::string_view kFormat = "\"format\"";
  for (size_t at = bytes.find(kFormat); at != std::string_view::npos; at = bytes.find(kFormat, at + 1)) {
    std::string_view rest = SkipSpace(bytes.substr(at + kFormat.size()));
    if (rest.starts_with(':') && SkipSpace(rest.substr(1)).starts_with("\"opprobe-trace\"")) return true;
  }
  std::string_view body = SkipSpace(bytes);
  return body.starts_with('{') && SkipSpace(body.substr(1)).starts_with("\"calls\"");
}

// A trace and a .pt2 are a zip archive or a JSON object; the text and binary formats are neither, whatever their name.
bool ZipOrJsonObject(const InputHead& h) { return IsZip(h.bytes) || StartsWithJsonObject(h.bytes); }

// The sniffs accept disjoint sets of paths, so that no format is taken for another by the order they are tried in.
// A trace is a JSON object marked as one. A .pt2 is a zip archive (a torch.export archive or an ETRecord), whatever
// its entries say, or any other JSON object (a bare ExportedProgram, whose loader says what is wrong with it).
// StableHLO is a .mlir/.mlirbc file or MLIR text or bytecode; HLO a folder (of dumps: LoadHlo says when it holds
// none), or a .hlo/.pb file or .txt file with an HloModule line that is not MLIR (JAX's MLIR text saved as
// `model.hlo` is StableHLO).
bool SniffTrace(const InputHead& h) { return !h.folder && StartsWithJsonObject(h.bytes) && MarkedAsTrace(h.bytes); }
bool SniffPt2(const InputHead& h) {
  return !h.folder && (IsZip(h.bytes) || (StartsWithJsonObject(h.bytes) && !MarkedAsTrace(h.bytes)));
}
bool IsMlir(const InputHead& h) { return LooksLikeStableHlo(std::string(h.path), h.bytes); }
bool SniffStableHlo(const InputHead& h) { return !h.folder && !ZipOrJsonObject(h) && IsMlir(h); }
bool SniffHlo(const InputHead& h) {
  return h.folder || (!ZipOrJsonObject(h) && !IsMlir(h) && LooksLikeHloFile(std::string(h.path), h.bytes));
}

Expected<Graph> LoadTraceInto(const std::string& path, NodeSink& sink) { return LoadTrace(path, sink); }
Expected<Graph> LoadPt2Graph(const std::string& path, NodeSink&) { return LoadPt2(path); }

// One row per InputKind. A new format is one more row (and its kind): its sniff, level and loader, nothing else.
constexpr InputFormat kFormats[] = {
    {InputKind::kTrace, "trace", "trace", "an opprobe trace .json", InputLevel::kAten, SniffTrace, LoadTraceInto,
     nullptr},
    {InputKind::kPt2, "pt2", ".pt2", "a torch.export .pt2 archive, an ExecuTorch ETRecord", InputLevel::kAten, SniffPt2,
     LoadPt2Graph, nullptr},
    {InputKind::kHlo, "hlo", "HLO", "HLO text, an .hlo.pb proto, a folder of HLO dumps", InputLevel::kHlo, SniffHlo,
     nullptr, LoadHlo},
    {InputKind::kStableHlo, "stablehlo", "StableHLO", "StableHLO .mlir text", InputLevel::kHlo, SniffStableHlo, nullptr,
     LoadStableHlo},
};

}  // namespace

std::span<const InputFormat> InputFormats() { return kFormats; }

const InputFormat& FormatOf(InputKind kind) {
  for (const auto& f : kFormats)
    if (f.kind == kind) return f;
  std::abort();  // every InputKind has its row (a test checks)
}

std::string_view InputKindName(InputKind kind) { return FormatOf(kind).name; }

Expected<InputKind> SniffInput(const InputHead& head) {
  for (const auto& f : kFormats)
    if (f.sniff(head)) return f.kind;
  // Every format's kinds of file in one list: "A, B, or C".
  std::string expected;
  for (const auto& f : kFormats) expected += fmt::format("{}{}", expected.empty() ? "" : ", ", f.expected);
  if (size_t last = expected.rfind(", "); last != std::string::npos) expected.insert(last + 2, "or ");
  return InvalidInput(fmt::format("{}: not a recognised input (expected {})", head.path, expected));
}

Expected<Input> DetectInput(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return InvalidInput(fmt::format("{}: no such file or directory", path));
  InputHead head{path, fs::is_directory(path, ec), {}};
  std::string bytes;
  if (!head.folder) {
    OPPROBE_ASSIGN_OR_RETURN(bytes, io::ReadFileHead(path, kInputSniffBytes));
    head.bytes = bytes;
  }
  OPPROBE_ASSIGN_OR_RETURN(InputKind kind, SniffInput(head));
  return Input{path, kind};
}

namespace {

// Loads trace and .pt2 inputs, handing their nodes to `sink` in order (a trace as it is read); returns the merged
// graph without nodes.
Expected<Graph> LoadInto(const std::vector<Input>& inputs, NodeSink& sink) {
  Graph merged;
  std::vector<std::string> models;
  for (const auto& in : inputs) {
    const InputFormat& format = FormatOf(in.kind);
    if (format.level != InputLevel::kAten)
      return InvalidInput(fmt::format("{}: {} input cannot be mixed with aten inputs", in.path, format.label));
    Expected<Graph> g = format.load_graph(in.path, sink);
    if (!g.ok()) return g.status();
    for (auto& n : g->nodes) sink.Add(std::move(n));
    g->nodes.clear();
    if (inputs.size() == 1) return g;
    models.push_back(g->model.empty() ? in.path : g->model);
    merged.input_kind = merged.input_kind.empty() || merged.input_kind == g->input_kind ? g->input_kind : "mixed";
    if (merged.torch_version.empty()) merged.torch_version = g->torch_version;
    // One failed capture makes the merged analysis partial too.
    if (g->capture && (!merged.capture || (g->capture->failed() && !merged.capture->failed())))
      merged.capture = g->capture;
    for (auto& p : g->programs) merged.programs.push_back(p);
  }
  merged.model = fmt::format("{}", fmt::join(models, ", "));
  return merged;
}

}  // namespace

Expected<Graph> LoadGraph(const std::vector<Input>& inputs) {
  Graph nodes;
  GraphNodes sink(nodes);
  OPPROBE_ASSIGN_OR_RETURN(Graph graph, LoadInto(inputs, sink));
  graph.nodes = std::move(nodes.nodes);
  return graph;
}

Expected<Graph> LoadGraph(const std::vector<std::string>& paths) {
  std::vector<Input> inputs;
  for (const auto& p : paths) {
    OPPROBE_ASSIGN_OR_RETURN(Input in, DetectInput(p));
    inputs.push_back(std::move(in));
  }
  return LoadGraph(inputs);
}

Expected<std::unique_ptr<compiler_probe::Backend>> CreateBackend(const std::string& spec,
                                                                 double probe_timeout_seconds) {
  compiler_probe::BackendOptions bo;
  bo.probe_timeout_seconds = probe_timeout_seconds;
  return compiler_probe::Registry::Builtin().Create(spec, bo);
}

namespace {

// The local cache, with the shared one behind it when there is one; `shared` and `memos` (the local cache's lowering
// memos, which stay on this machine) point into the result.
Expected<std::unique_ptr<compiler_probe::ProbeCache>> OpenCaches(const AnalysisOptions& options,
                                                                 compiler_probe::SharedProbeCache*& shared,
                                                                 compiler_probe::LoweringMemoStore*& memos) {
  std::string dir = options.cache_dir.empty() ? compiler_probe::DefaultCacheDir() : options.cache_dir;
  auto warn = options.on_warning ? options.on_warning : [](const std::string&) {};
  // A cache folder the caller named that holds no usable cache is refused; the default one starts afresh.
  auto opened = compiler_probe::OpenDiskCache(dir, {!options.cache_dir.empty(), warn});
  if (!opened.ok()) return opened.status().WithContext("probe cache");
  std::unique_ptr<compiler_probe::LocalProbeCache> local = std::move(opened).value();
  memos = local.get();
  std::unique_ptr<compiler_probe::ProbeCache> cache = std::move(local);
  if (options.remote_cache.empty()) return cache;
  auto store = compiler_probe::OpenRemoteStore(options.remote_cache);
  if (!store.ok()) return store.status().WithContext("shared probe cache");
  auto s = std::make_unique<compiler_probe::SharedProbeCache>(std::move(cache), std::move(store).value(), warn);
  shared = s.get();
  return std::unique_ptr<compiler_probe::ProbeCache>(std::move(s));
}

// Why a graph without aten calls cannot be analyzed: a script that captured nothing, or an empty program.
Status NothingToAnalyze(const Graph& graph, const std::vector<std::string>& paths) {
  std::string what = graph.model.empty() ? fmt::format("{}", fmt::join(paths, ", ")) : graph.model;
  if (graph.input_kind != "trace") return InvalidInput(fmt::format("no aten calls in {}: nothing to analyze", what));
  std::string why = " (does it run a PyTorch model?)";
  if (graph.capture && graph.capture->failed()) {
    std::string at = graph.capture->location.empty()
                         ? std::string()
                         : fmt::format(" at {}:{}", graph.capture->location.file, graph.capture->location.line);
    why = fmt::format(" (the script failed{} before its first aten call)", at);
  }
  return InvalidInput(fmt::format("no aten calls were captured from {}{}", what, why));
}

}  // namespace

Expected<AnalysisResult> AnalyzeInputs(const std::vector<std::string>& paths, compiler_probe::Backend& backend,
                                       const AnalysisOptions& options) {
  if (paths.empty()) return InvalidInput("no input: give a trace, a .pt2, HLO, StableHLO, or a script to capture");
  std::vector<Input> inputs;
  for (const auto& p : paths) {
    OPPROBE_ASSIGN_OR_RETURN(Input in, DetectInput(p));
    inputs.push_back(std::move(in));
  }
  DriverOptions d;
  d.jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  d.probe_batch = options.probe_batch;
  d.dump_dir = options.dump_dir;
  d.ignore_ops = options.ignore_ops;
  d.host_fallbacks = options.host_fallbacks;
  d.on_progress = options.on_progress;
  d.keep_calls = options.suggest;
  // The caches open once the inputs have loaded: a bad input is one line, with no word about the cache before it.
  // Then shards and per-unit leases on a shared cache; a lease outlives the longest probe.
  auto probe = [&](auto&& analyze) -> Expected<AnalysisResult> {
    std::unique_ptr<compiler_probe::ProbeCache> cache;
    compiler_probe::SharedProbeCache* shared = nullptr;
    if (options.use_cache) {
      OPPROBE_ASSIGN_OR_RETURN(cache, OpenCaches(options, shared, d.memos));
      d.cache = cache.get();
    }
    compiler_probe::FleetBackend fleet(backend, shared, {options.shard_index, options.shard_count},
                                       options.probe_timeout_seconds + 30);
    AnalysisResult r = analyze(fleet);
    r.summary.shard_index = options.shard_index;
    r.summary.shard_count = options.shard_count;
    r.summary.shard_skipped = fleet.skipped();
    return r;
  };

  auto is_hlo = [](const Input& in) { return FormatOf(in.kind).level == InputLevel::kHlo; };
  if (std::any_of(inputs.begin(), inputs.end(), is_hlo)) {
    std::vector<LoadedHloModule> loaded;
    for (const auto& in : inputs) {
      if (!is_hlo(in)) return InvalidInput(fmt::format("{}: aten inputs cannot be mixed with HLO inputs", in.path));
      OPPROBE_ASSIGN_OR_RETURN(auto modules, FormatOf(in.kind).load_modules(in.path));
      for (auto& m : modules) loaded.push_back(std::move(m));
    }
    std::vector<NamedModule> named;
    for (auto& m : loaded) {  // the result keeps the modules (input_modules), which its units refer into
      std::shared_ptr<const hlo::Module> owner = std::move(m.module);
      named.push_back({m.name, owner.get(), owner});
    }
    return probe([&](compiler_probe::Backend& fleet) {
      AnalysisResult r = AnalyzeHlo(fmt::format("{}", fmt::join(paths, ", ")), named, fleet, d);
      if (options.fit) {
        r.program = FitHloInput(named, backend, options.dump_program);
        if (!r.program->warning.empty()) r.warnings.push_back(r.program->warning);
      }
      // Every HLO-level format is analyzed as the HLO it is or converts to; the report says which the input was when
      // all inputs are of one format (StableHLO: "stablehlo"), and "hlo" for a mix.
      if (options.suggest)
        r.warnings.push_back("--suggest: HLO input holds no aten calls to rewrite; no suggestions were made");
      const InputKind first = inputs.front().kind;
      if (std::all_of(inputs.begin(), inputs.end(), [&](const Input& in) { return in.kind == first; }))
        r.input_kind = std::string(FormatOf(first).name);
      return r;
    });
  }
  // The calls go into the analysis as they are read: a large trace is never held whole.
  GraphAnalysis analysis(d);
  OPPROBE_ASSIGN_OR_RETURN(Graph graph, LoadInto(inputs, analysis));
  if (!analysis.any_aten_call()) return NothingToAnalyze(graph, paths);
  return probe([&](compiler_probe::Backend& fleet) {
    analysis.set_caches(d.cache, d.memos);
    const LoweringTable& table = options.lowering_table ? *options.lowering_table : LoweringTable::Builtin();
    AnalysisResult r = analysis.Finish(graph, fleet, table);
    r.lowering_library = options.lowering_library;
    if (options.suggest) {
      // Rewrites are plans of aten calls opprobe lowers itself, whichever lowering judged the recorded calls.
      suggest::Suggest(r, backend, LoweringTable::Builtin(), {suggest::BuiltinRewrites(), d.cache});
      r.summary.wall_seconds += r.summary.suggest_seconds;
    }
    if (options.fit) {
      r.program = FitTraceInput(paths, backend, options.parallel, options.dump_program);
      if (!r.program->warning.empty()) r.warnings.push_back(r.program->warning);
    }
    return r;
  });
}

Expected<AnalysisResult> AnalyzeInputs(const std::vector<std::string>& paths,
                                       const std::vector<compiler_probe::Backend*>& backends,
                                       const AnalysisOptions& options) {
  if (backends.empty()) return InvalidInput("no backend");
  if (backends.size() == 1) return AnalyzeInputs(paths, *backends[0], options);
  // Each target's progress, added up: (done, total) of all targets' units.
  std::mutex progress_mu;
  std::vector<std::pair<int64_t, int64_t>> progress(backends.size());
  std::vector<std::optional<Expected<AnalysisResult>>> results(backends.size());
  std::vector<std::thread> threads;
  threads.reserve(backends.size());
  for (size_t k = 0; k < backends.size(); ++k)
    threads.emplace_back([&, k] {
      AnalysisOptions o = options;
      if (options.on_progress)
        o.on_progress = [&, k](int64_t done, int64_t total) {
          std::lock_guard<std::mutex> lock(progress_mu);
          progress[k] = {done, total};
          int64_t d = 0, t = 0;
          for (const auto& [pd, pt] : progress) d += pd, t += pt;
          options.on_progress(d, t);
        };
      results[k] = AnalyzeInputs(paths, *backends[k], o);
    });
  for (auto& t : threads) t.join();
  for (auto& r : results)
    if (!r->ok()) return r->status();
  AnalysisResult first = std::move(**results[0]);
  std::unordered_map<std::string, size_t> index_of;
  for (size_t i = 0; i < first.probes.size(); ++i) index_of.emplace(first.probes[i].fingerprint, i);
  for (size_t k = 1; k < backends.size(); ++k) {
    AnalysisResult& other = **results[k];
    TargetResult t;
    t.backend_id = other.backend_id;
    t.backend_version = other.backend_version;
    t.summary = other.summary;
    t.program = std::move(other.program);
    if (other.ops.size() == first.ops.size())  // the same inputs give the same records, in the same order
      for (const OpRecord& op : other.ops) t.suggestions.push_back(op.suggestions);
    // Every target lowered the same inputs into the same units; the verdicts are matched by fingerprint all the same.
    t.verdicts.assign(first.probes.size(), compiler_probe::Verdict::NotProbed("not probed by this target"));
    t.cache_hits.assign(first.probes.size(), 0);
    t.repro_paths.assign(first.probes.size(), "");
    for (const ProbeRecord& p : other.probes) {
      auto it = index_of.find(p.fingerprint);
      if (it == index_of.end()) continue;
      t.verdicts[it->second] = p.verdict;
      t.cache_hits[it->second] = p.cache_hit;
      t.repro_paths[it->second] = p.repro_path;
    }
    for (const auto& w : other.warnings)
      if (std::find(first.warnings.begin(), first.warnings.end(), w) == first.warnings.end())
        first.warnings.push_back(w);
    first.other_targets.push_back(std::move(t));
  }
  return first;
}

}  // namespace opprobe::analyzer
