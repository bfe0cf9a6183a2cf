#include "analyzer/program/fit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>

#include "analyzer/loaders/pt2_loader.h"
#include "analyzer/loaders/trace_loader.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "support/file_io.h"

namespace opprobe::analyzer {
namespace {

void Dump(const hlo::Module& module, const std::string& path, ProgramFit& fit) {
  if (path.empty()) return;
  // `.pb`: the serialized HloModuleProto exactly as the compiler receives it; else HLO text.
  std::string contents;
  if (path.ends_with(".pb")) {
    Expected<std::string> bytes = hlo::ModuleToProtoBytes(module, /*unique_names=*/true);
    if (!bytes.ok()) {
      fit.warning = "--dump-program: " + bytes.status().message();
      return;
    }
    contents = std::move(*bytes);
  } else {
    contents = hlo::ToString(module);
  }
  Status st = io::WriteFileAtomically(path, contents);
  if (!st.ok()) fit.warning = "--dump-program: " + st.message();
}

ProgramFit NotBuilt(std::string what, std::string why) {
  ProgramFit fit;
  fit.what = std::move(what);
  fit.not_built = std::move(why);
  return fit;
}

}  // namespace

ProgramFit FitTraceInput(const std::vector<std::string>& paths, compiler_probe::Backend& backend,
                         const Parallelism& parallel, const std::string& dump_program) {
  if (paths.size() != 1) return NotBuilt("the step", "--fit builds the step of one input; this analysis has several");
  // A .pt2 (a zip) is a whole program already: its first exported program, with its graph signature's inputs and
  // outputs. A trace, whole this time: the program names its calls by their index.
  char magic[2] = {0, 0};
  std::ifstream(paths[0], std::ios::binary).read(magic, 2);
  const bool pt2 = magic[0] == 'P' && magic[1] == 'K';
  Expected<Graph> graph = pt2 ? LoadPt2(paths[0]) : LoadTrace(paths[0]);
  if (!graph.ok()) return NotBuilt(pt2 ? "the program" : "the step", graph.status().message());
  if (!graph->program)
    return NotBuilt(pt2 ? "the program" : "the step",
                    pt2 ? "the archive's program has no graph signature (its inputs and outputs)"
                        : "the trace holds no data flow of a step: capture it with `opprobe capture --program` "
                          "(`opprobe analyze --fit -- SCRIPT` does)");
  if (graph->program->calls.empty())
    return NotBuilt("the step", graph->program->scope.empty() ? "the capture found no step" : graph->program->scope);
  Expected<BuiltStep> step = BuildStepProgram(*graph, LoweringTable::Builtin());
  if (!step.ok()) return NotBuilt("the step", step.status().message());
  // --parallel when given; else the script's own shardings (xs.mark_sharding), when it marked any.
  const StepDataFlow::Mesh& mesh = graph->program->mesh;
  const bool marked = parallel.devices() == 1 && !mesh.shape.empty();
  compiler_probe::ProgramOptions options;
  options.partitions = marked ? static_cast<int64_t>(mesh.devices.size()) : parallel.devices();
  if (Status st = marked ? ShardStepAsMarked(*step, *graph->program) : ShardStep(*step, parallel); !st.ok())
    return NotBuilt("the step", st.message());
  std::shared_ptr<hlo::Module> module = step->module;
  ProgramFit fit = FitStep(std::move(*step), backend, options);
  if (parallel.devices() > 1) fit.what += " split " + parallel.ToString();
  if (marked)
    fit.what +=
        fmt::format(" split as the script marks it (xs.mark_sharding over a {} mesh)", fmt::join(mesh.shape, "x"));
  if (module) Dump(*module, dump_program, fit);
  return fit;
}

ProgramFit FitHloInput(const std::vector<NamedModule>& modules, compiler_probe::Backend& backend,
                       const std::string& dump_program) {
  const compiler_probe::ProgramOptions options;
  // The largest module: a dump of a training step holds the step and small helpers (torch_xla's data transfers).
  const NamedModule* best = nullptr;
  size_t most = 0;
  for (const auto& m : modules) {
    size_t n = 0;
    for (const auto& c : m.module->computations()) n += c->instructions().size();
    if (!best || n > most) best = &m, most = n;
  }
  if (!best) return NotBuilt("the program", "the input holds no module");
  std::shared_ptr<const hlo::Module> module =
      best->owner ? best->owner : std::shared_ptr<const hlo::Module>(best->module, [](const hlo::Module*) {});
  ProgramFit fit = FitProgram(module, fmt::format("module {}", best->name), backend, options);
  Dump(*module, dump_program, fit);
  return fit;
}

}  // namespace opprobe::analyzer
