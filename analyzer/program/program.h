// analyzer/program: a captured training step built as one HLO program (issue #30, `--fit`). The capture records the
// step's data flow (Graph::program, capture/opprobe_capture/program.py); each call is lowered by opprobe's own lowering
// (analyzer/lowering, the lowering every probe uses) into a computation of its own, and the step's entry computation
// calls them in order with the values the capture saw flow between them. The step's inputs (parameters, buffers,
// optimizer state, the batch) are the program's parameters, its outputs one tuple, and each output that updates an
// input in place is aliased to it (donated, as torch_xla does), so a compiler lays the step out as the target would
// run it. XLA inlines the calls before it optimizes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/graph/graph.h"
#include "analyzer/lowering/lowering.h"
#include "compiler_probe/backend.h"
#include "hlo/instruction.h"
#include "support/status.h"

namespace opprobe::analyzer {

// One input or output of a built step program.
struct ProgramValue {
  std::string
      kind;  // StepDataFlow::Value::kind: `parameter`, `buffer`, `optimizer_state`, `gradient`, `data`, `output`
  std::string name;
  TensorMeta meta;
  int64_t bytes = 0;
  int64_t aliases = -1;  // outputs: the program parameter whose buffer it reuses (the input it updates)
};

// Calls of the step the program cannot hold, by op and place: opprobe has no lowering for them (the report's
// unsupported or unlowered entries say more), or the recorded data flow does not fit what the lowering reads.
struct ProgramGap {
  std::string op;  // `aten::nonzero`
  SourceLoc loc;
  std::string reason;
  int64_t calls = 0;
};

// Values the forward made and the backward read (what autograd keeps alive between them), summed by the line that
// made them.
struct ProgramActivation {
  std::string op;  // the call that made the largest of them
  SourceLoc loc;
  int64_t bytes = 0;
  int64_t values = 0;
  int64_t largest = 0;
};

struct BuiltStep {
  std::shared_ptr<hlo::Module> module;  // null when there are gaps
  std::string scope;                    // StepDataFlow's
  SourceLoc begin, end;
  std::string end_kind;
  int64_t calls = 0;
  int64_t untracked_writes = 0;
  std::vector<ProgramValue> inputs;
  std::vector<ProgramValue> outputs;
  std::vector<ProgramGap> gaps;                // by calls, then place
  std::vector<ProgramActivation> activations;  // the largest first
  // opprobe's own liveness analysis of the step as recorded (each buffer alive from the call that makes it to its last
  // reader; views make none, and neither does an elementwise call whose only reader is one elementwise or reducing
  // call, which XLA fuses into it, unless it is returned or kept for the backward; no rematerialisation, no padding):
  // the most bytes of intermediate values alive at once, and with the program's arguments and outputs (less the
  // aliased ones) what one device would hold.
  compiler_probe::DeviceMemory estimate;  // no generated code
};

// `--fit`: a whole program compiled for the target, and whether it fits one device's memory.
struct ProgramFit {
  std::string what;       // `the first training step` / `module jit_train_step`
  bool built = false;     // a program was there to compile
  std::string not_built;  // why not (no data flow recorded, calls it cannot hold: step.gaps)
  BuiltStep step;         // a captured step (its module dropped once compiled); empty for an HLO input
  int64_t instructions = 0;
  compiler_probe::ProgramCompile compile;  // outcome kUnsupported when nothing was compiled
  std::optional<bool> fits;                // nullopt: not known (not compiled, or no figure to hold it against)
  // What one device holds: the compiler's figure when it gave one, else opprobe's estimate (`estimated`).
  int64_t required_bytes = 0;
  bool estimated = false;
  int64_t device_memory_bytes = 0;
  std::string warning;  // a problem that did not stop the fit (the program could not be written to --dump-program)
};

// Compiles `module` (the program of `what`) with `backend` and judges whether it fits.
ProgramFit FitProgram(const std::shared_ptr<const hlo::Module>& module, std::string what,
                      compiler_probe::Backend& backend, const compiler_probe::ProgramOptions& options);
// The same for a built step (a step with gaps is not compiled: not_built says why).
ProgramFit FitStep(BuiltStep step, compiler_probe::Backend& backend, const compiler_probe::ProgramOptions& options);

// Builds the step of `graph` (which must hold every node of the trace and Graph::program). kInvalidInput when the
// graph has no program or names a call it does not hold; gaps are a result, not an error.
Expected<BuiltStep> BuildStepProgram(const Graph& graph, const LoweringTable& table = LoweringTable::Builtin());

}  // namespace opprobe::analyzer
