// The analysis pipeline as one library call, shared by the CLI (`analyze`, `profile record`, `lower`), the tests
// and the Python API: tell each input's format once (one table of formats), load and merge the inputs, open the
// probe caches, run the driver. Options are plain values; nothing here prints or knows a command-line flag (callers
// give callbacks for progress and warnings, and put their flag names into error messages themselves).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/driver/result.h"
#include "analyzer/graph/graph.h"
#include "analyzer/loaders/hlo_loader.h"
#include "analyzer/lowering/lowering.h"
#include "analyzer/program/parallel.h"
#include "compiler_probe/backend.h"
#include "support/status.h"

namespace opprobe::analyzer {

// What a path holds: an opprobe trace JSON; a torch.export .pt2 archive, an ExecuTorch ETRecord or a bare
// ExportedProgram JSON; HLO (text, HloProto/HloModuleProto binary, or a folder of dumps); StableHLO (MLIR text).
// Everything the pipeline does with a kind is in its row of InputFormats().
enum class InputKind { kTrace, kPt2, kHlo, kStableHlo };
std::string_view InputKindName(InputKind kind);  // "trace", "pt2", "hlo", "stablehlo"

// What an input is analyzed as: aten calls, which opprobe lowers to HLO, or HLO modules, probed as they are. Inputs of
// the two levels cannot be mixed in one analysis.
enum class InputLevel { kAten, kHlo };

// All that telling a path's format may look at: its name, whether it is a folder, and its first bytes (at most
// kInputSniffBytes; none for a folder). A format is never told by reading a file further.
inline constexpr size_t kInputSniffBytes = size_t{1} << 16;
struct InputHead {
  std::string_view path;
  bool folder = false;
  std::string_view bytes;
};

// One input format: its name, how it is told from an InputHead, its level and its loader.
struct InputFormat {
  InputKind kind;
  std::string_view name;      // InputKindName; an analysis of inputs of this format alone reports it as input_kind
  std::string_view label;     // how messages name it: "HLO", "StableHLO"
  std::string_view expected;  // what the error for an unrecognised input lists for it
  InputLevel level;
  bool (*sniff)(const InputHead& head);
  // The loader, of the format's level (the other is null). kAten: the calls go to `sink` as they are read, or come
  // back in the Graph's nodes (the caller hands those to the sink); kHlo: the modules.
  Expected<Graph> (*load_graph)(const std::string& path, NodeSink& sink);
  Expected<std::vector<LoadedHloModule>> (*load_modules)(const std::string& path);
};

// Every format. No two sniffs accept the same head (tests/analyzer/input_formats_test.cpp holds them to it), so the
// order they are tried in decides nothing; it is the order the error for an unrecognised input lists them in.
std::span<const InputFormat> InputFormats();
const InputFormat& FormatOf(InputKind kind);

struct Input {
  std::string path;
  InputKind kind;
};

// The format of `head` (the format whose sniff accepts it); none is one error line naming the path and every format's
// kinds of file.
Expected<InputKind> SniffInput(const InputHead& head);
// Looks at `path` once (its first kInputSniffBytes bytes, or that it is a folder) and sniffs it. Errors name the path.
Expected<Input> DetectInput(const std::string& path);

// Loads trace and .pt2 inputs into one aten Graph: nodes of several inputs are concatenated, the model names
// joined, and one failed capture makes the whole graph's capture failed. HLO inputs are an error here.
Expected<Graph> LoadGraph(const std::vector<Input>& inputs);
// The same for paths not yet detected.
Expected<Graph> LoadGraph(const std::vector<std::string>& paths);

// A backend from its spec (`rules:neuron-trn1`, `cmd:...`, `pjrt:...`, `xla:cpu`, `interp`) through the built-in
// registry.
Expected<std::unique_ptr<compiler_probe::Backend>> CreateBackend(const std::string& spec, double probe_timeout_seconds);

struct AnalysisOptions {
  int jobs = 0;              // probe threads; 0: the number of cores
  int probe_batch = -1;      // units per compile (DriverOptions::probe_batch); -1: the backend's own
  bool use_cache = true;     // the local probe cache (a folder; see compiler_probe/disk_cache.h)
  std::string cache_dir;     // empty: compiler_probe::DefaultCacheDir()
  std::string remote_cache;  // redis://... or http(s)://...: a shared cache behind the local one
  int shard_index = 0;       // probe only shard K of N (0 of 0: everything)
  int shard_count = 0;
  double probe_timeout_seconds = 60;         // also how long a shared-cache lease lasts past one probe
  std::string dump_dir;                      // repro files of unsupported units
  std::vector<std::string> ignore_ops;       // calls left out (driver.h: MatchIgnorePattern)
  std::vector<HostFallback> host_fallbacks;  // calls torch_xla ran on the host (DriverOptions::host_fallbacks)
  // The lowering of aten inputs: null for opprobe's own (LoweringTable::Builtin()); another library's
  // (`--lowering torchax`, analyzer/lowering/external_lowering.h), named by lowering_library
  // (AnalysisResult::lowering_library).
  const LoweringTable* lowering_table = nullptr;
  std::string lowering_library;
  // `--fit`: the whole program (a trace's recorded step, an HLO input's largest module) compiled for the target
  // (analyzer/program): AnalysisResult::program.
  bool fit = false;
  Parallelism parallel;      // `--parallel`: how the step is split over the target's devices
  std::string dump_program;  // with fit: the built program's HLO text written here
  // `--suggest`: every unsupported call's rewrites (analyzer/suggest), lowered and probed on the same backend.
  bool suggest = false;
  // After each probe: (done, total); from probe threads, one at a time.
  std::function<void(int64_t, int64_t)> on_progress;
  // A shared cache that stops answering says so once, and the run goes on without it.
  std::function<void(const std::string&)> on_warning;
};

// Loads `paths` (all aten inputs, or all HLO and StableHLO inputs) and analyzes them with `backend`. An aten input
// without a single aten call is bad input ("no aten calls were captured from SCRIPT"), never an empty 100% report.
Expected<AnalysisResult> AnalyzeInputs(const std::vector<std::string>& paths, compiler_probe::Backend& backend,
                                       const AnalysisOptions& options);
// The same with several backends (targets), each probing every unit once, all at the same time (a thread per
// target): the result is the first backend's, with the others' verdicts and summaries in `other_targets`. Progress
// counts the units of all targets together.
Expected<AnalysisResult> AnalyzeInputs(const std::vector<std::string>& paths,
                                       const std::vector<compiler_probe::Backend*>& backends,
                                       const AnalysisOptions& options);

}  // namespace opprobe::analyzer
