// Loader for opprobe's own trace JSON, written by `opprobe capture` (cli/capture/opprobe_capture.py).
// The format is documented by schemas/trace.schema.json (format "opprobe-trace", version 1).
#pragma once

#include <string>
#include <string_view>

#include "analyzer/graph/graph.h"
#include "hlo/status.h"

namespace opprobe::analyzer {

// The trace format version this build reads; a newer version is rejected with a clear message.
inline constexpr int kTraceFormatVersion = 1;

// Calls that never reach a device and stay out of every analysis: the namespaces profiler:: (record-function
// ranges), prims:: (seen inside an aten call that is already recorded), prim:: and debugprims:: (TorchScript
// bookkeeping), and import-time version queries such as torchvision::_cuda_version. Other calls outside aten (in a
// trace's `calls`, or only in an older trace's `skipped_ops`) are analyzed as custom ops.
bool IsBookkeepingOp(const std::string& op);

// Reads and parses the trace file at `path`. Errors are kInvalidInput with a one-line message that names
// the file and the place: `trace.json: calls[3].args[1].value.dtype: unknown dtype 'quint8'`.
Expected<Graph> LoadTrace(const std::string& path);

// Parses trace JSON text; `source_name` prefixes every error message (a file name). Never throws.
// The Graph has input_kind "trace", model = the recorded script, torch_version, and one Node per recorded
// (already deduplicated) call with its count, source location, module path and phase. Unknown members
// are ignored (readers of version 1 accept additions); unknown value kinds and dtypes are errors.
Expected<Graph> ParseTrace(std::string_view json_text, const std::string& source_name);

}  // namespace opprobe::analyzer
