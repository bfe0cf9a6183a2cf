// `opprobe analyze --lowering torch_xla -- <python> script.py args`: runs the script with the real
// PyTorch/XLA (CPU PJRT device) and collects the HLO that torch_xla itself emits for each step, so that
// the analysis probes torch_xla's own lowering instead of opprobe's.
#pragma once

#include <string>
#include <vector>

#include "analyzer/driver/result.h"
#include "support/status.h"

namespace opprobe::cli {

struct TorchXlaRun {
  std::vector<std::string> hlo_files;  // torch_xla's XLA_SAVE_TENSORS_FILE dumps (one per process ordinal)
  int script_status = 0;               // the script's exit status (128+N when killed by signal N)
  std::string torch_xla_version;       // as torch_xla names itself (`2.9.0`)
  // The calls torch_xla ran on the host CPU, by op and place (capture/opprobe_capture/torch_xla_watch.py).
  std::vector<analyzer::HostFallback> fallbacks;
};

// Runs `command` = {python, [options...], script.py, args...} unchanged (fork/exec, no shell, stdio
// inherited) with PJRT_DEVICE=CPU (unless set), XLA_HLO_DEBUG=1 and XLA_IR_DEBUG=1 (so every instruction's
// metadata names its aten op, op_type `aten__mul`, and the script's source line), and
// XLA_SAVE_TENSORS_FILE=<dump_dir>/torch_xla.hlo with XLA_SAVE_TENSORS_FMT=hlo (one HLO module per graph
// torch_xla compiles and runs: each mark_step/sync).
// Errors: a missing interpreter or script -> kInvalidInput; torch_xla not importable by that python ->
// kUnavailable (exit 3) with how to install it; a script that sent nothing to the XLA device
// (no HLO emitted) -> kInvalidInput. The script runs under the capture package's torch_xla_watch.py
// (`python CAPTURE_PACKAGE torch-xla-watch ...`, FindCaptureShim), which writes the calls torch_xla ran on the host
// CPU, with their places, into the dump folder.
Expected<TorchXlaRun> RunWithTorchXla(const std::vector<std::string>& command, const std::string& dump_dir);

}  // namespace opprobe::cli
