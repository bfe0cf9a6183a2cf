#include "cli/analyze_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "analyzer/driver/driver.h"
#include "analyzer/loaders/hlo_loader.h"
#include "analyzer/loaders/pt2_loader.h"
#include "analyzer/loaders/trace_loader.h"
#include "cli/progress.h"
#include "compiler_probe/disk_cache.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/remote/shared_cache.h"

namespace opprobe::cli {

namespace fs = std::filesystem;

Expected<std::string> DetectInputKind(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return InvalidInput(fmt::format("{}: no such file or directory", path));
  if (fs::is_directory(path, ec)) return std::string("hlo");
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput(fmt::format("{}: cannot open for reading", path));
  char head[4096] = {};
  in.read(head, sizeof head);
  std::string_view h(head, static_cast<size_t>(in.gcount()));
  if (h.size() >= 4 && h.substr(0, 4) == std::string_view("PK\x03\x04", 4)) return std::string("pt2");
  auto first = h.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && h[first] == '{') {
    // An opprobe trace names its format near the top; anything else in braces is taken for an
    // ExportedProgram JSON (a program extracted from a .pt2), whose loader reports what is wrong.
    if (h.find("\"opprobe-trace\"") != std::string_view::npos) return std::string("trace");
    std::ifstream whole(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
    return std::string(text.find("\"opprobe-trace\"") != std::string::npos ? "trace" : "pt2");
  }
  if (analyzer::LooksLikeHlo(path)) return std::string("hlo");
  return InvalidInput(fmt::format(
      "{}: not a recognised input (expected an opprobe trace .json, a torch.export .pt2 archive, "
      "an ExecuTorch ETRecord, HLO text, an .hlo.pb proto, or a folder of HLO dumps)",
      path));
}

Expected<analyzer::Graph> LoadGraph(const std::vector<std::string>& inputs) {
  analyzer::Graph merged;
  std::vector<std::string> models;
  for (const auto& path : inputs) {
    OPPROBE_ASSIGN_OR_RETURN(std::string kind, DetectInputKind(path));
    Expected<analyzer::Graph> g = kind == "trace" ? analyzer::LoadTrace(path)
                                  : kind == "pt2"  ? analyzer::LoadPt2(path)
                                                   : Expected<analyzer::Graph>(UsageError(fmt::format(
                                                         "{}: HLO input cannot be mixed with aten inputs", path)));
    if (!g.ok()) return g.status();
    if (inputs.size() == 1) return g;
    models.push_back(g->model.empty() ? path : g->model);
    merged.input_kind = merged.input_kind.empty() || merged.input_kind == g->input_kind ? g->input_kind : "mixed";
    if (merged.torch_version.empty()) merged.torch_version = g->torch_version;
    // One failed capture makes the merged analysis partial too.
    if (g->capture && (!merged.capture || (g->capture->failed() && !merged.capture->failed()))) merged.capture = g->capture;
    for (auto& p : g->programs) merged.programs.push_back(p);
    for (auto& n : g->nodes) merged.nodes.push_back(std::move(n));
  }
  merged.model = fmt::format("{}", fmt::join(models, ", "));
  return merged;
}

Expected<std::unique_ptr<compiler_probe::Backend>> CreateBackend(const AnalyzeRunOptions& options) {
  compiler_probe::BackendOptions bo;
  bo.probe_timeout_seconds = options.probe_timeout_seconds;
  return compiler_probe::Registry::Builtin().Create(options.backend_spec, bo);
}

Expected<analyzer::AnalysisResult> AnalyzeInputs(const std::vector<std::string>& inputs,
                                                 compiler_probe::Backend& backend,
                                                 const AnalyzeRunOptions& options) {
  if (inputs.empty()) return UsageError("no input: give a trace, a .pt2, HLO, or `-- python script.py`");
  std::vector<std::string> kinds;
  for (const auto& in : inputs) {
    OPPROBE_ASSIGN_OR_RETURN(std::string kind, DetectInputKind(in));
    kinds.push_back(kind);
  }
  analyzer::DriverOptions d;
  d.jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  d.dump_dir = options.dump_dir;
  std::unique_ptr<compiler_probe::ProbeCache> cache;
  compiler_probe::SharedProbeCache* shared = nullptr;
  if (options.use_cache) {
    std::string dir = options.cache_dir.empty() ? compiler_probe::DefaultCacheDir() : options.cache_dir;
    auto opened = compiler_probe::OpenDiskCache(dir);
    if (!opened.ok()) return opened.status().WithContext("--cache");
    cache = std::move(opened).value();
    if (!options.remote_cache.empty()) {
      auto store = compiler_probe::OpenRemoteStore(options.remote_cache);
      if (!store.ok()) return store.status().WithContext("--cache");
      auto s = std::make_unique<compiler_probe::SharedProbeCache>(std::move(cache), std::move(store).value(), [](const std::string& w) {
        std::fprintf(stderr, "opprobe: warning: %s\n", w.c_str());
      });
      shared = s.get();
      cache = std::move(s);
    }
    d.cache = cache.get();
  }
  d.ignore_ops = options.ignore_ops;
  bool tty = isatty(STDERR_FILENO) == 1;
  if (options.progress == AnalyzeRunOptions::Progress::kOn ||
      (options.progress == AnalyzeRunOptions::Progress::kAuto && tty))
    d.on_progress = MakeProgressReporter(tty);
  // Shards and per-unit leases on a shared cache; a lease outlives the longest probe.
  compiler_probe::FleetBackend fleet(backend, shared, {options.shard_index, options.shard_count},
                                     options.probe_timeout_seconds + 30);
  auto mark_shard = [&](analyzer::AnalysisResult r) {
    r.summary.shard_index = options.shard_index;
    r.summary.shard_count = options.shard_count;
    r.summary.shard_skipped = fleet.skipped();
    return r;
  };

  bool any_hlo = std::find(kinds.begin(), kinds.end(), "hlo") != kinds.end();
  if (any_hlo) {
    std::vector<analyzer::LoadedHloModule> loaded;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (kinds[i] != "hlo")
        return UsageError(fmt::format("{}: aten inputs cannot be mixed with HLO inputs", inputs[i]));
      OPPROBE_ASSIGN_OR_RETURN(auto modules, analyzer::LoadHlo(inputs[i]));
      for (auto& m : modules) loaded.push_back(std::move(m));
    }
    std::vector<analyzer::NamedModule> named;
    for (const auto& m : loaded) named.push_back({m.name, m.module.get()});
    std::string model = fmt::format("{}", fmt::join(inputs, ", "));
    return mark_shard(analyzer::AnalyzeHlo(model, named, fleet, d));
  }
  OPPROBE_ASSIGN_OR_RETURN(analyzer::Graph graph, LoadGraph(inputs));
  bool any_aten = false;
  for (const auto& n : graph.nodes)
    any_aten = any_aten || n.op.rfind("aten::", 0) == 0 || n.op.rfind("prims::", 0) == 0;
  if (!any_aten) {
    std::string what = graph.model.empty() ? fmt::format("{}", fmt::join(inputs, ", ")) : graph.model;
    if (graph.input_kind == "trace") {
      std::string why = graph.capture && graph.capture->failed()
                            ? fmt::format(" (the script failed{} before its first aten call)",
                                          graph.capture->location.empty()
                                              ? std::string()
                                              : fmt::format(" at {}:{}", graph.capture->location.file,
                                                            graph.capture->location.line))
                            : std::string(" (does it run a PyTorch model?)");
      return InvalidInput(fmt::format("no aten calls were captured from {}{}", what, why));
    }
    return InvalidInput(fmt::format("no aten calls in {}: nothing to analyze", what));
  }
  return mark_shard(analyzer::Analyze(graph, fleet, analyzer::LoweringTable::Builtin(), d));
}

}  // namespace opprobe::cli
