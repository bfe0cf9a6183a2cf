// Loader for opprobe's own trace JSON, written by `opprobe capture` (capture/opprobe_capture).
// The format is documented by schemas/trace.schema.json (format "opprobe-trace", version 1).
//
// The trace is read as a stream (analyzer/loaders/json_stream.h): the file once, front to back, in pieces; each call
// record is checked and handed on as soon as it is read, so a trace of any size is never held whole. Calls with the
// same argument and output text share one parsed copy of them (Node::args and Node::outputs), so memory grows with
// the distinct records, not with the file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "analyzer/graph/graph.h"
#include "support/status.h"

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

// The same, handing each node to `sink` as soon as it is read instead of collecting them: the returned Graph has
// every field but `nodes`. On an error the sink has seen some nodes (never one after the first bad call): whatever
// it made of them is to be dropped.
// LoadTrace reads the file in pieces of `read_bytes` (tests make them tiny, so that values straddle every boundary).
inline constexpr size_t kTraceReadBytes = size_t{1} << 20;
Expected<Graph> LoadTrace(const std::string& path, NodeSink& sink, size_t read_bytes = kTraceReadBytes);
Expected<Graph> ParseTrace(std::string_view json_text, const std::string& source_name, NodeSink& sink);

}  // namespace opprobe::analyzer
