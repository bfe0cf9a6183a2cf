// The analyze pipeline as a library call: load the inputs (trace JSON, .pt2, HLO text/proto or a dump
// folder), create the backend, run the driver. Used by `analyze` and `profile record`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analyzer/driver/result.h"
#include "analyzer/graph/graph.h"
#include "compiler_probe/backend.h"
#include "hlo/status.h"

namespace opprobe::cli {

struct AnalyzeRunOptions {
  std::string backend_spec = "interp";
  int jobs = 0;                // 0: the number of cores
  bool use_cache = true;
  std::string cache_dir;       // empty: the default under $XDG_CACHE_HOME
  std::string remote_cache;    // redis://... or http(s)://...: a shared cache behind the local one
  int shard_index = 0;         // --shard K/N: probe only shard K of N (0: everything)
  int shard_count = 0;
  double probe_timeout_seconds = 60;
  std::string dump_dir;        // repro files of unsupported units
  // Progress on stderr: kAuto shows a bar on a terminal and nothing otherwise; kOn (--progress) also prints plain
  // lines without a terminal; kOff (--no-progress, -q) prints nothing.
  enum class Progress { kAuto, kOn, kOff };
  Progress progress = Progress::kAuto;
  std::vector<std::string> ignore_ops;  // --ignore-op PATTERN
};

// What kind of input a path is: "trace" (opprobe trace JSON), "pt2" (zip archive / ETRecord), "hlo"
// (HLO text, HloProto/HloModuleProto binary, or a folder of dumps). Errors name the path.
Expected<std::string> DetectInputKind(const std::string& path);

// Loads trace and .pt2 inputs into one aten Graph (nodes of several inputs are concatenated).
Expected<analyzer::Graph> LoadGraph(const std::vector<std::string>& inputs);

Expected<std::unique_ptr<compiler_probe::Backend>> CreateBackend(const AnalyzeRunOptions& options);

// Loads `inputs` (all aten inputs, or all HLO inputs) and analyzes them with `backend`. An aten input without a
// single aten call is an input error (`no aten calls were captured from SCRIPT`), never an empty 100% report.
Expected<analyzer::AnalysisResult> AnalyzeInputs(const std::vector<std::string>& inputs,
                                                 compiler_probe::Backend& backend,
                                                 const AnalyzeRunOptions& options);

}  // namespace opprobe::cli
