// Loader for torch.export saved programs (research/formats.md Part A):
//   - the legacy ExportedProgram zip of torch 2.1-2.7 (`serialized_exported_program.json` at the top),
//   - the PT2 archive of torch 2.8+ (`<root>/archive_format` = `pt2`, programs in `<root>/models/*.json`),
//   - ExecuTorch ETRecords (`ETRECORD_V0`; programs `aten_dialect_output/<method>`,
//     `edge_dialect_exported_program`, ...),
//   - and a bare ExportedProgram JSON file (an extracted member).
// Schema majors 1 to 8 are read (early files write every union key with the unused ones null, later ones one key).
// Only the program JSON entries are read (each capped, see ZipReader::Limits); weights never are. Each program is
// decoded by analyzer/loaders/pt2_program.h.
#pragma once

#include <string>

#include "analyzer/graph/graph.h"
#include "support/status.h"

namespace opprobe::analyzer {

// Loads every program of the archive at `path` into one Graph (input_kind `pt2`); each node's
// `program` names the program it came from, and Graph::programs lists them in archive order.
// Bad input gives kInvalidInput with a one-line message naming the file, entry and JSON path.
Expected<Graph> LoadPt2(const std::string& path);

}  // namespace opprobe::analyzer
