// `opprobe analyze --lowering torchax -- <python> script.py args`: the script is captured with the torchax stand-in
// (so it runs to its end on the CPU, whatever torchax lacks), then every call of the trace is lowered by torchax's
// own op table in that Python (capture/opprobe_capture/torchax_lower.py), and the analysis probes torchax's StableHLO.
#pragma once

#include <string>
#include <vector>

#include "analyzer/lowering/external_lowering.h"
#include "support/status.h"

namespace opprobe::cli {

// Whether `python` (command[0] of `-- <python> script.py`) can import torchax: kUnavailable (exit 3) saying how to
// install it when it cannot; kInvalidInput for a missing interpreter.
Status CheckTorchax(const std::string& python);

// The JAX platform torchax's modules are exported for, from the first backend's id: `tpu` for a TPU target (tpu:,
// rules:tpu), `cuda` for a GPU one (gpu:, rules:gpu), else `cpu` (JAX lowers linear algebra per platform).
std::string TorchaxPlatformFor(const std::string& backend_id);

// Lowers each call of `trace` with torchax in `python` for `platform`: runs `python CAPTURE_PACKAGE torchax-lower
// --platform P TRACE OUT` (the capture package, FindCaptureShim) with OUT = `out_json`, and reads what it wrote.
// Errors: the helper's own failure (its message), kInvalidInput; a malformed OUT, kInvalidInput.
Expected<analyzer::ExternalLowerings> LowerWithTorchax(const std::string& python, const std::string& trace,
                                                       const std::string& out_json, const std::string& platform);

}  // namespace opprobe::cli
