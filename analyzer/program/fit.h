// `--fit` for an analysis's inputs (analyzer/pipeline): a trace's recorded step or a .pt2's exported program (its
// graph signature's inputs and outputs) built as one program (analyzer/program/program.h), or the largest module of HLO
// or StableHLO input (a whole program already), compiled for the target by its backend.
#pragma once

#include <string>
#include <vector>

#include "analyzer/driver/driver.h"
#include "analyzer/program/parallel.h"
#include "analyzer/program/program.h"
#include "compiler_probe/backend.h"

namespace opprobe::analyzer {

// `dump_program`: where to write the program's HLO text (empty: nowhere); a write that fails is said in not_built's
// stead only when there is no program, else as the result's message.
// A trace's step (or a .pt2's program) is split as `parallel` says (parallel.h); an HLO program is compiled with its
// own shardings.
ProgramFit FitTraceInput(const std::vector<std::string>& paths, compiler_probe::Backend& backend,
                         const Parallelism& parallel, const std::string& dump_program);
ProgramFit FitHloInput(const std::vector<NamedModule>& modules, compiler_probe::Backend& backend,
                       const std::string& dump_program);

}  // namespace opprobe::analyzer
