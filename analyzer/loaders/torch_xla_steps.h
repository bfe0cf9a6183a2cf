// The steps of a script run under the real torch_xla (`--lowering torch_xla`), read off torch_xla's own dump: with
// XLA_SAVE_TENSORS_FILE it writes every graph it runs, each after the Python frames of the sync that ran it
// (`TensorsGraphInfo:`) and before `Graph Hash: <hex>`, the key of its compile cache. The distinct hashes are the
// graphs torch_xla compiled; each new one after the first is explained by its first instruction that differs from the
// closest earlier graph (by opcode and shape, with the aten op and source line its metadata names) and by what ran it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyzer/driver/result.h"
#include "analyzer/graph/graph.h"

namespace opprobe::analyzer {

// `text`: one XLA_SAVE_TENSORS_FILE dump (XLA_SAVE_TENSORS_FMT=hlo, XLA_HLO_DEBUG=1). `fallbacks`: the calls torch_xla
// ran on the host (they name what a sync that is no step boundary was: a value read or a CPU fallback). `version`:
// torch_xla's, for the model's name. nullopt when the text holds no graph.
std::optional<StepGraphs> TorchXlaDumpSteps(const std::string& text, const std::vector<HostFallback>& fallbacks,
                                            const std::string& version);

}  // namespace opprobe::analyzer
