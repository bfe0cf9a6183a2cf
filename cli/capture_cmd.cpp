// `opprobe capture -o trace.json -- <python> script.py args...`: records the aten calls of a script.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/loaders/trace_loader.h"
#include "cli/capture_run.h"
#include "cli/commands.h"

namespace opprobe::cli {

namespace {

struct CaptureArgs {
  std::string output;
  std::vector<std::string> command;
  bool progress = false;
  bool no_progress = false;
  bool quiet = false;
  bool fake = false;
  bool program = false;
};

int RunCaptureCommand(const CaptureArgs& args) {
  if (args.progress && args.no_progress)
    return ReportError(InvalidInput("--progress and --no-progress contradict each other"));
  const ProgressMode mode = args.no_progress || args.quiet ? ProgressMode::kOff
                            : args.progress                ? ProgressMode::kOn
                                                           : ProgressMode::kAuto;
  auto status =
      RunCapture(args.command, args.output, /*quiet=*/true, CaptureProgressFor(mode, ::isatty(STDERR_FILENO) == 1),
                 CaptureFlags{args.fake, args.program});
  if (!status.ok()) return ReportError(status.status());
  // Summarise from the trace just written; a trace `analyze` could not read is worth knowing about now.
  auto graph = analyzer::LoadTrace(args.output);
  if (graph.ok() && !args.quiet) {
    int64_t total = 0;
    for (const auto& n : graph->nodes) total += n.count;
    std::fprintf(stderr, "opprobe: recorded %lld aten calls (%zu distinct) into %s\n", static_cast<long long>(total),
                 graph->nodes.size(), args.output.c_str());
  } else if (!graph.ok()) {
    std::fprintf(stderr, "opprobe: warning: the trace cannot be analyzed: %s\n", graph.status().message().c_str());
  }
  if (*status != 0) {
    const auto* c = graph.ok() && graph->capture ? &*graph->capture : nullptr;
    if (c && !c->location.empty())
      std::fprintf(stderr, "opprobe: the script %s; the trace holds the calls recorded before that\n",
                   c->Failure().c_str());
    else
      std::fprintf(stderr, "opprobe: script exited with status %d; the trace holds the calls recorded before that\n",
                   *status);
    return kExitBadInput;
  }
  return graph.ok() ? kExitOk : kExitBadInput;
}

}  // namespace

void RegisterCapture(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CaptureArgs>();
  auto* cmd = app.add_subcommand(
      "capture",
      "Run a PyTorch script and record every aten call it dispatches (forward, backward, optimizer) into a trace");
  cmd->description(
      "Run a PyTorch script and record every aten call it dispatches (forward, backward, optimizer) into a trace.\n\n"
      "The script runs unchanged as __main__ under the capture shim (capture/opprobe_capture), which\n"
      "records each call's op and overload, every schema argument (dtypes, shapes, scalar values), the outputs,\n"
      "the innermost source line outside torch, the nn.Module path and the phase. Identical calls are counted,\n"
      "not stored twice. Works with PyTorch 1.13 and 2.x; the trace format is schemas/trace.schema.json.\n"
      "The script's own output goes to the terminal as usual.\n\n"
      "Scripts written for an XLA device or for CUDA run unmodified: where torch_xla, torchax or torch_xla2 is not\n"
      "installed (or no GPU is present), the shim provides a stand-in (capture/opprobe_capture/standins.py) that maps\n"
      "the device to the CPU (xm.xla_device(), torch_xla.device(), env.to_xla(), .cuda(), device=\"cuda\", ...)\n"
      "and records xm.mark_step, torch_xla.sync/step/compile, xm.optimizer_step(barrier=True) and each\n"
      "MpDeviceLoader batch as step boundaries (each call's `step` in the trace). torch.compile runs eagerly.\n"
      "Where torchax is installed, a torchax script (or seed 001's torch_xla2 names) runs on the real torchax and\n"
      "its aten calls are recorded where torchax answers them (capture/opprobe_capture/real_torchax.py).\n"
      "Calls of every namespace are recorded (torchvision::nms, quantized::linear_dynamic, mylib::my_op), except\n"
      "the bookkeeping ones (profiler::*). Backward calls also name the forward call whose autograd node made them.\n"
      "On a terminal, a counter of the calls captured so far is redrawn on stderr while the script runs.");
  cmd->add_option("-o,--output", args->output, "Trace file to write (JSON; written atomically)")
      ->required()
      ->type_name("TRACE.json");
  cmd->add_option("command", args->command,
                  "After `--`: the Python interpreter, the script and its arguments, e.g. `/usr/bin/python3 train.py "
                  "--epochs 1`")
      ->required()
      ->expected(-1)
      ->type_name("PYTHON SCRIPT [ARGS...]");
  cmd->add_flag("--progress", args->progress,
                "Show the counter of calls captured so far even when stderr is not a terminal (a line every 5 s)");
  cmd->add_flag("--no-progress", args->no_progress, "No counter of calls captured so far");
  cmd->add_flag("-q,--quiet", args->quiet, "Neither the counter nor the summary line (errors are still printed)");
  cmd->add_flag("--fake", args->fake, kFakeHelp);
  cmd->add_flag("--program", args->program, kProgramHelp);
  cmd->footer(
      "Examples:\n"
      "  opprobe capture -o trace.json -- /usr/bin/python3 samples/scripts/supported.py\n"
      "  opprobe analyze trace.json --backend rules:neuron-trn1\n\n"
      "Exit status: 0 when the script succeeded; 2 when it failed (raised or exited non-zero: the trace still\n"
      "holds the calls recorded before that), for bad usage, or when no trace could be written.\n"
      "Environment: OPPROBE_CAPTURE_SHIM overrides the folder of the capture package (opprobe_capture).");
  cmd->callback([args, &exit_code] { exit_code = RunCaptureCommand(*args); });
}

}  // namespace opprobe::cli
