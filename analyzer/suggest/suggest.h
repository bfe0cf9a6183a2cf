// `--suggest` (issue #31): for every unsupported call of an analysis, the rewrites of the table (rewrites.h) that
// apply to it, each lowered by the same lowering table and probed on the same backend as the analysis (through the
// same probe cache). A rewrite whose every instruction the backend accepts is `verified`; one that does not help is
// kept as tried, with the share of its instructions that pass and the first refusal.
#pragma once

#include <span>

#include "analyzer/driver/result.h"
#include "analyzer/lowering/lowering.h"
#include "analyzer/suggest/rewrites.h"
#include "compiler_probe/backend.h"
#include "compiler_probe/cache.h"

namespace opprobe::analyzer::suggest {

struct SuggestOptions {
  std::span<const Rewrite> rewrites = BuiltinRewrites();
  compiler_probe::ProbeCache* cache = nullptr;  // optional: verdicts of the rewrites' units are looked up and stored
};

// Fills OpRecord::suggestions of every unsupported record whose call `result.calls` holds (DriverOptions::keep_calls),
// and Summary's what-if figures. Records of one signature share the work.
void Suggest(AnalysisResult& result, compiler_probe::Backend& backend, const LoweringTable& table,
             const SuggestOptions& options = {});

}  // namespace opprobe::analyzer::suggest
