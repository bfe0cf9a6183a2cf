// `opprobe analyze MODEL... | -- <python> script.py args`: the whole pipeline, then reports and gates.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include "analyzer/loaders/torch_xla_steps.h"
#include "analyzer/lowering/external_lowering.h"
#include "analyzer/pipeline/pipeline.h"
#include "cli/capture_run.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/report_options.h"
#include "cli/torch_xla_run.h"
#include "cli/torchax_run.h"
#include "compiler_probe/remote/shared_cache.h"
#include "support/temp_folder.h"

namespace opprobe::cli {
namespace {

struct AnalyzeArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> backend_specs;  // --backend, repeatable; none: interp
  analyzer::AnalysisOptions run;
  ReportOptions report;
  bool no_cache = false;
  std::vector<std::string> caches;  // --cache DIR and/or --cache redis://... | http(s)://...
  std::string shard;
  bool no_progress = false;
  bool progress = false;
  std::string save_trace;
  // or torch_xla: analyze the HLO the real torch_xla emits (-- script); or torchax: each captured call lowered by
  // torchax's own op table (-- script)
  std::string lowering = "opprobe";
  bool fake = false;     // -- script: captured on fake tensors
  std::string parallel;  // --parallel dp=N,fsdp=N,tp=N
};

// Captures the script after `--` into a temporary trace in `temp` (or --save-trace FILE); returns its path and
// the script's exit status.
Expected<std::pair<std::string, int>> CaptureScript(const std::vector<std::string>& command,
                                                    const std::string& save_trace, std::optional<io::TempFolder>& temp,
                                                    CaptureProgress progress, CaptureFlags flags) {
  std::string trace = save_trace;
  if (trace.empty()) {
    OPPROBE_ASSIGN_OR_RETURN(temp, io::TempFolder::Create());
    trace = *temp / "trace.json";
  }
  OPPROBE_ASSIGN_OR_RETURN(int status, RunCapture(command, trace, /*quiet=*/true, progress, flags));
  return std::make_pair(trace, status);
}

// A backend that rejects every one of many units is more likely misconfigured than that strict.
void WarnIfBackendRejectsEverything(const analyzer::AnalysisResult& r) {
  constexpr size_t kMinUnits = 10;
  if (r.probes.size() < kMinUnits) return;
  for (const auto& p : r.probes)
    if (p.verdict.supported()) return;
  std::fprintf(stderr,
               "opprobe: warning: the backend %s rejected all %zu probe units; check its configuration (run "
               "`opprobe backends` and try one unit with `opprobe lower`)\n",
               r.backend_id.c_str(), r.probes.size());
}

int RunAnalyze(AnalyzeArgs& a) {
  const std::vector<std::string>& command = ArgsAfterDoubleDash();
  std::vector<std::string> inputs = a.inputs;
  if (!command.empty()) inputs.resize(inputs.size() >= command.size() ? inputs.size() - command.size() : 0);
  if (!command.empty() && !inputs.empty())
    return ReportError(InvalidInput("give either model files or `-- <python> script.py ...`, not both"));
  if (command.empty() && inputs.empty())
    return ReportError(InvalidInput("nothing to analyze: give a trace, a .pt2, HLO, or `-- <python> script.py ...`"));
  if (Status st = CheckReportOptions(a.report); !st.ok()) return ReportError(st);
  if (a.progress && a.no_progress)
    return ReportError(InvalidInput("--progress and --no-progress contradict each other"));
  a.run.use_cache = !a.no_cache;
  for (const auto& c : a.caches) {
    std::string& slot = compiler_probe::IsRemoteCacheUrl(c) ? a.run.remote_cache : a.run.cache_dir;
    if (!slot.empty()) return ReportError(InvalidInput("--cache: give at most one folder and one server"));
    slot = c;
  }
  if (!a.shard.empty()) {
    auto shard = compiler_probe::ParseShard(a.shard);
    if (!shard.ok()) return ReportError(shard.status().WithContext("--shard"));
    if (a.no_cache) return ReportError(InvalidInput("--shard needs the probe cache (drop --no-cache)"));
    a.run.shard_index = shard->index;
    a.run.shard_count = shard->count;
  }
  if (a.report.require_fit) a.run.fit = true;
  if (!a.parallel.empty()) {
    if (!a.run.fit) return ReportError(InvalidInput("--parallel needs --fit"));
    auto p = analyzer::ParseParallelism(a.parallel);
    if (!p.ok()) return ReportError(p.status());
    a.run.parallel = *p;
  }
  if (!a.run.dump_program.empty() && !a.run.fit) return ReportError(InvalidInput("--dump-program needs --fit"));
  const ProgressMode progress_mode = a.no_progress || a.report.quiet ? ProgressMode::kOff
                                     : a.progress                    ? ProgressMode::kOn
                                                                     : ProgressMode::kAuto;
  a.run.on_progress = ProgressFor(progress_mode);
  // A shared cache that stops answering is worth a line even with -q: the run is slower than the user expects.
  a.run.on_warning = PrintWarning;
  const auto start = std::chrono::steady_clock::now();

  if (a.backend_specs.empty()) a.backend_specs.push_back("interp");
  // Several targets: each probes every unit, all at once; the same target twice would only probe twice.
  std::vector<std::unique_ptr<compiler_probe::Backend>> backends;
  std::vector<compiler_probe::Backend*> targets;
  for (const auto& spec : a.backend_specs) {
    auto backend = analyzer::CreateBackend(spec, a.run.probe_timeout_seconds);
    if (!backend.ok()) return ReportError(backend.status().WithContext("--backend " + spec));
    for (const auto* t : targets)
      if (t->id() == (*backend)->id())
        return ReportError(InvalidInput(fmt::format("--backend {} is given twice", (*backend)->id())));
    targets.push_back(backend->get());
    backends.push_back(std::move(backend).value());
  }

  // The captured trace's or torch_xla's dump folder, removed when the analysis has read it (or on any way out).
  std::optional<io::TempFolder> temp;
  int script_status = 0;
  std::optional<analyzer::StepGraphs> torch_xla_steps;
  if (a.lowering == "torch_xla") {
    if (command.empty())
      return ReportError(InvalidInput("--lowering torch_xla runs a script: give `-- <python> script.py args...`"));
    auto folder = io::TempFolder::Create();
    if (!folder.ok()) return ReportError(folder.status().WithContext("the HLO dump"));
    temp = std::move(folder).value();
    auto ran = RunWithTorchXla(command, temp->path());
    if (!ran.ok()) return ReportError(ran.status());
    inputs = ran->hlo_files;
    a.run.host_fallbacks = ran->fallbacks;
    // The steps from torch_xla's own graphs (the first process's dump), read before the folder goes.
    std::ifstream dump(ran->hlo_files.front(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(dump)), std::istreambuf_iterator<char>());
    torch_xla_steps = analyzer::TorchXlaDumpSteps(text, ran->fallbacks, ran->torch_xla_version);
    script_status = ran->script_status;
    if (script_status != 0 && !a.report.quiet)
      std::fprintf(stderr,
                   "opprobe: warning: the script exited with status %d; analyzing the HLO emitted before that\n",
                   script_status);
  } else if (!command.empty()) {
    const bool torchax = a.lowering == "torchax";
    if (torchax) {
      if (a.run.fit) return ReportError(InvalidInput("--lowering torchax: --fit is not built for torchax's lowering"));
      if (Status st = CheckTorchax(command[0]); !st.ok()) return ReportError(st);
    }
    auto captured =
        CaptureScript(command, a.save_trace, temp, CaptureProgressFor(progress_mode, ::isatty(STDERR_FILENO) == 1),
                      CaptureFlags{a.fake, a.run.fit, /*torchax_standin=*/torchax});
    if (!captured.ok()) return ReportError(captured.status());
    inputs = {captured->first};
    script_status = captured->second;
  } else if (a.lowering == "torchax") {
    return ReportError(InvalidInput("--lowering torchax runs a script: give `-- <python> script.py args...`"));
  }
  // --lowering torchax: every captured call lowered by torchax in the script's Python, as a lowering table.
  std::optional<analyzer::LoweringTable> torchax_table;
  if (a.lowering == "torchax") {
    if (!temp) {
      auto folder = io::TempFolder::Create();
      if (!folder.ok()) return ReportError(folder.status().WithContext("torchax's lowerings"));
      temp = std::move(folder).value();
    }
    auto lowered = LowerWithTorchax(command[0], inputs.front(), *temp / "torchax_lowerings.json",
                                    TorchaxPlatformFor(targets.front()->id()));
    if (!lowered.ok()) return ReportError(lowered.status());
    auto trace = analyzer::LoadGraph(inputs);
    if (!trace.ok()) return ReportError(trace.status());
    auto table = analyzer::ExternalLoweringTable(*trace, *lowered);
    if (!table.ok()) return ReportError(table.status());
    torchax_table = std::move(table).value();
    a.run.lowering_table = &*torchax_table;
    a.run.lowering_library = "torchax";
  }
  auto result = analyzer::AnalyzeInputs(inputs, targets, a.run);
  temp.reset();
  if (!result.ok()) return ReportError(result.status());
  if (a.lowering != "torch_xla" && !command.empty() && script_status != 0 && !a.report.quiet) {
    const auto& c = result->capture;
    if (c && !c->location.empty())
      std::fprintf(stderr, "opprobe: warning: the script %s; analyzing the calls recorded before that\n",
                   c->Failure().c_str());
    else
      std::fprintf(stderr,
                   "opprobe: warning: the script exited with status %d; analyzing the calls recorded before that\n",
                   script_status);
  }
  if (a.lowering == "torch_xla") {
    result->model = command.size() > 1 ? command[1] : command[0];  // not the temp dump
    result->steps = torch_xla_steps;
  }
  // The analysis's real wall time: capture, loading, lowering and probing.
  result->summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!a.report.quiet)
    for (const auto& w : result->warnings) PrintWarning(w);
  if (!a.report.quiet)
    for (size_t k = 0; k < result->target_count(); ++k)
      WarnIfBackendRejectsEverything(result->target_count() > 1 ? result->ForTarget(k) : *result);
  int code = FinishReports(*result, a.report);
  // The process exits when this returns, and the exit takes the result's memory back at once: freeing it piece by
  // piece (a large HLO input's instructions, a trace's records) cost a sixth of analyzing a 35 MB module (issue
  // #17.3). It holds plain data only (no file, cache or child process is closed by its destructors).
  [[maybe_unused]] auto* left_to_exit = new analyzer::AnalysisResult(std::move(*result));
  // A script that failed is an input problem even when its partial analysis passed the gates: its reports are
  // written (marked partial), and the exit code says the input was bad.
  if ((script_status != 0 || result->partial()) && code != kExitBadInput) return kExitBadInput;
  return code;
}

}  // namespace

void RegisterAnalyze(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand(
      "analyze",
      "Analyze a model: lower its aten ops to HLO, probe the backend with every unique instruction, report.\n"
      "Inputs: an opprobe trace (.json), a torch.export .pt2 archive or ExecuTorch ETRecord, HLO text (.hlo/.txt),\n"
      "an HloProto/HloModuleProto (.hlo.pb), a folder of HLO dumps, StableHLO MLIR text (.mlir: JAX's, torch_xla's),\n"
      "or `-- <python> script.py args...` to capture and analyze a script in one step.");
  cmd->add_option("inputs", args->inputs, "Model files (or, after `--`, the Python command to capture)");
  cmd->add_option("-b,--backend", args->backend_specs,
                  "Backend spec, repeatable (several targets in one report, each probing every unit): interp "
                  "(default), rules:NAME|FILE, cmd:TEMPLATE, pjrt:PLUGIN.so[,k=v...], xla:cpu, "
                  "iree:llvm-cpu, tpu:GEN[:TOPOLOGY] (the real TPU compiler), gpu:DEVICE[:TOPOLOGY] (the real GPU "
                  "compiler); see `opprobe backends`")
      ->allow_extra_args(false)  // one value an occurrence: `--backend A --backend B MODEL`
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("SPEC");
  cmd->add_option("-j,--jobs", args->run.jobs, "Probes run in parallel (default: the number of cores)");
  cmd->add_option("--probe-batch", args->run.probe_batch,
                  "Units one compile may hold, for the backends that compile many units as one program (tpu:, "
                  "gpu:; a refused program is split until each refusal is found, so verdicts do not change); 1: one "
                  "unit per compile (default: the backend's own)")
      ->check(CLI::Range(1, 100000))
      ->type_name("N");
  cmd->add_option("--cache", args->caches,
                  "Probe cache folder (default: $XDG_CACHE_HOME/opprobe), and/or a shared cache server behind it: "
                  "redis://HOST:PORT[/DB] or http(s)://HOST[:PORT]/PATH (secrets from $OPPROBE_CACHE_PASSWORD, "
                  "$OPPROBE_CACHE_TOKEN or their _FILE variants)");
  cmd->add_option("--shard", args->shard,
                  "Probe only the units of shard K of N (e.g. 2/4) and write a partial result; a final run with "
                  "the same cache finds every verdict");
  cmd->add_flag("--no-cache", args->no_cache, "Neither read nor write the probe cache");
  cmd->add_option("--probe-timeout", args->run.probe_timeout_seconds, "Seconds one probe may take (cmd, pjrt)")
      ->capture_default_str();
  cmd->add_option("--dump-dir", args->run.dump_dir,
                  "Write each unsupported probe unit as <opcode>_<fingerprint>.hlo and .hlo.pb here");
  cmd->add_flag("--no-progress", args->no_progress, "No progress output on stderr");
  cmd->add_flag("--progress", args->progress,
                "Progress on stderr even when it is not a terminal (plain lines; default: on a terminal only, the "
                "count of calls captured so far with `-- script`, then a bar of the probes)");
  cmd->add_option("--ignore-op", args->run.ignore_ops,
                  "Leave calls of this op out of the analysis (you handle it yourself); glob-like, repeatable: "
                  "torchvision::*, mylib::my_op, aten::add.Tensor. The report lists what was ignored")
      ->type_name("PATTERN");
  cmd->add_option("--save-trace", args->save_trace, "With `-- script`: keep the captured trace in this file");
  cmd->add_flag("--fake", args->fake, std::string("With `-- script`: ") + kFakeHelp);
  cmd->add_flag(
      "--fit", args->run.fit,
      "Will it fit: build the whole program (a script's or trace's first training step, recorded with its "
      "data flow; a .pt2's exported program; an HLO input's largest module), compile it for the target with the "
      "backend's real "
      "compiler (tpu:, gpu:, xla:cpu, pjrt:; iree:llvm-cpu compiles it and gives no memory figures) and "
      "report per-device memory against the device's (the report's `program`); a rules: backend gives "
      "opprobe's own estimate, labelled so, against the profile's device memory (neuron-trn1, neuron-trn2)");
  cmd->add_flag("--suggest", args->run.suggest,
                "For every unsupported call, try the known rewrites that apply (complex as real pairs, FFT as a "
                "DFT-matrix product, f64 as f32, s64 as s32, c128 FFT as c64, static-size forms of nonzero/"
                "masked_select/unique, linear algebra with matmuls, CPU fallback of ops outside aten), lower and "
                "probe each on the same backend, and report the Python to write: verified ones first, with the "
                "what-if percentage of every verified rewrite applied (docs/suggest.md)");
  cmd->add_option(
         "--parallel", args->parallel,
         "With --fit: split the step over the target topology's devices as a strategy does (their product "
         "equal to its devices): dp=N data parallel, fsdp=N parameters, gradients and optimizer state split, "
         "tp=N Megatron-style column/row splits of 2-D weights; e.g. --backend tpu:v5p:2x2x2 --parallel fsdp=8")
      ->type_name("dp=N,fsdp=N,tp=N");
  cmd->add_option("--dump-program", args->run.dump_program,
                  "With --fit: write the program built and compiled here (HLO text; a name ending in .pb: the "
                  "HloModuleProto the compiler receives)")
      ->type_name("FILE");
  cmd->add_option(
         "--lowering", args->lowering,
         "With `-- script`: `opprobe` (default) captures the aten calls and lowers them itself; `torch_xla` "
         "runs the script with the real PyTorch/XLA (CPU PJRT device) and analyzes the HLO it emits per step; the "
         "calls it ran on the host CPU are entries with failureAt cpu_fallback; `torchax` captures the "
         "script (torchax's stand-in, so it runs to its end) and lowers every call with torchax's own op "
         "table through JAX to StableHLO in the script's Python (exported for the first backend's JAX platform: tpu, "
         "cuda or cpu), then probes that: every op torchax cannot "
         "lower is an entry with failureAt torchax at its call sites, in one report")
      ->check(CLI::IsMember({"opprobe", "torch_xla", "torchax"}))
      ->capture_default_str();
  AddReportOptions(cmd, args->report);
  cmd->footer(
      "Examples:\n"
      "  opprobe analyze --backend rules:neuron-trn1 -- /usr/bin/python3 samples/scripts/unsupported.py\n"
      "  opprobe analyze samples/traces/resnet18_train.json --backend rules:cpu -o report.json\n"
      "  opprobe analyze model.pt2 --backend interp --verbosity 1 -o report.json\n"
      "  opprobe analyze dump.hlo --backend rules:neuron-trn1 --dump-dir repro/\n"
      "  opprobe analyze model.stablehlo.mlir --backend rules:tpu\n"
      "  opprobe analyze --lowering torch_xla --backend rules:neuron-trn1 -- venv/bin/python train_xla.py\n"
      "  opprobe analyze --lowering torchax --backend rules:tpu -- venv/bin/python train_torchax.py\n"
      "Exit codes: 0 analysis done and gates passed, 1 a gate failed, 2 bad usage or unreadable input\n"
      "(or the captured script failed: reports are written, marked partial; or no aten call was captured),\n"
      "3 the backend cannot be used. Gates never pass on a partial, empty or incomplete analysis.\n"
      "Ctrl-C, SIGTERM or SIGHUP stop the compilers and workers it started and remove its temporary folders\n"
      "(in $TMPDIR); it then ends by that signal (status 128+N, 130 for Ctrl-C).");
  cmd->callback([args, &exit_code] { exit_code = RunAnalyze(*args); });
}

}  // namespace opprobe::cli
