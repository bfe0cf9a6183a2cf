// Decoding of one torch.export ExportedProgram JSON (schema majors 1 to 8; research/formats.md A.6-A.8) into
// analyzer::Graph nodes: the program's graph, its nodes and subgraphs, op targets and node metadata. The arguments
// of each node are decoded by analyzer/loaders/pt2_arguments.h; the archive around the JSON by pt2_loader.h.
#pragma once

#include <string>
#include <string_view>

#include "analyzer/graph/graph.h"
#include "support/status.h"

namespace opprobe::analyzer {

// Decodes one ExportedProgram JSON text and appends its nodes (named `program`) to `graph`.
// `where` prefixes error messages (e.g. `model.pt2: entry 'm/models/model.json'`); bad input gives kInvalidInput with
// one line naming the JSON path.
Status DecodeExportedProgram(std::string_view json_text, const std::string& program, const std::string& where,
                             Graph& graph);

// Node metadata readers (shared with tests).
// The innermost frame of a Python `stack_trace` that is not inside torch/ (empty when none).
SourceLoc InnermostUserFrame(std::string_view stack_trace);
// The module path (`layer1.0.conv1`) of the innermost entry of an `nn_module_stack` metadata string.
std::string ModulePathFromNnModuleStack(std::string_view nn_module_stack);

}  // namespace opprobe::analyzer
