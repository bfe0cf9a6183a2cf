// The Backend interface: a compiler (or runtime) that is asked whether it accepts one probe unit.
// A backend sees only an HLO module; it never hears of aten ops or reports (DESIGN.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hlo/instruction.h"
#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe {

struct Verdict {
  // kNotProbed: nobody judged the unit (a `--shard` run leaves it to another shard, a target of a run with several
  // never saw it): no verdict at all, never cached, and not the backend's error either.
  enum class Kind { kSupported, kUnsupported, kError, kNotProbed };
  // Backends that run a unit and compare its results with interp's (pjrt, xla, iree) say how the comparison went:
  // kAgree and kNotCompared with a supported verdict, kDiffer with an unsupported one (the results differ). kNone:
  // no comparison was made (every other backend, and a unit that did not get as far as running). Reports count them
  // (Summary::interp_agree, ...); the words are in reason and output_tail, and no code reads meaning from them.
  enum class Interp : uint8_t { kNone, kAgree, kDiffer, kNotCompared };
  Kind kind = Kind::kSupported;
  std::string reason;       // why unsupported / what failed / why not probed; empty when supported
  double seconds = 0.0;     // time the probe took
  std::string output_tail;  // the tail of the compiler's output, when there is one
  Interp interp = Interp::kNone;

  static Verdict Supported() { return {}; }
  static Verdict Unsupported(std::string reason) { return {Kind::kUnsupported, std::move(reason), 0.0, {}}; }
  static Verdict Error(std::string reason) { return {Kind::kError, std::move(reason), 0.0, {}}; }
  static Verdict NotProbed(std::string reason) { return {Kind::kNotProbed, std::move(reason), 0.0, {}}; }
  bool supported() const { return kind == Kind::kSupported; }
  // Whether the backend judged the unit (supported or unsupported): only such a verdict says something stable about
  // the unit and may be cached; an error (crash, timeout) or a unit not probed does not.
  bool judged() const { return kind == Kind::kSupported || kind == Kind::kUnsupported; }
};

// `supported`, `unsupported`, `error`, `not_probed` (the reports' words).
std::string_view VerdictKindName(Verdict::Kind k);
// `agree`, `differ`, `not_compared`; empty for kNone.
std::string_view InterpName(Verdict::Interp i);

// The words pjrt-style backends put before a comparison's outcome (in an unsupported verdict's reason, in a
// supported verdict's output_tail). What the comparison found is Verdict::interp; these are only its text.
inline constexpr std::string_view kNumericsPrefix = "numerics: ";
inline constexpr std::string_view kInterpAgreePrefix = "compared with interp: ";
inline constexpr std::string_view kInterpNotComparedPrefix = "not compared with interp: ";

// Options every backend may honour; each backend documents which it uses.
struct BackendOptions {
  double probe_timeout_seconds = 60.0;
  std::string work_dir;  // scratch space for backends that write files (cmd, pjrt)
};

// What one device holds while a compiled program runs, as a compiler lays it out (PJRT's compiled memory statistics),
// or as opprobe estimates it (no generated code then).
struct DeviceMemory {
  int64_t generated_code_bytes = 0;
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;  // outputs that reuse an argument's buffer (donated)
  int64_t temp_bytes = 0;
  int64_t total_bytes() const {
    return generated_code_bytes + argument_bytes + output_bytes - alias_bytes + temp_bytes;
  }
  bool operator==(const DeviceMemory&) const = default;
};

// A whole program compiled for the target (`--fit`): what the compiler said of it and, per device, the memory it laid
// out (PJRT_Executable_GetCompiledMemoryStats for the TPU and GPU compilers).
struct ProgramCompile {
  enum class Outcome {
    kCompiled,     // the compiler accepted it
    kRefused,      // the compiler refused it (message: its words); memory_refusal when for want of memory
    kError,        // the compiler could not be asked, crashed or timed out: no verdict on the program
    kUnsupported,  // this backend compiles no whole programs
  };
  Outcome outcome = Outcome::kUnsupported;
  std::string message;   // the compiler's words (refused), or why there is no verdict
  std::string compiler;  // what compiled it, with its version: `libtpu 0.0.42.1 (TPU compiler), PJRT C API 0.112`
  int64_t devices = 1;   // the devices the program was compiled for (partitions)
  bool memory_refusal = false;
  bool has_memory = false;           // the compiler gave `memory`
  DeviceMemory memory;               // per device
  int64_t required_bytes = 0;        // what one device needs: the compiler's figure in a refusal, else total_bytes()
  std::string required_what;         // what the refusal's figure counts (`for HLO temporaries`); empty: everything
  int64_t device_memory_bytes = 0;   // what one device has (the compiler's figure in a refusal, else the target's
                                     // published one); 0: unknown
  std::string device_memory_source;  // where that figure comes from, in a few words
  double seconds = 0;
};

// How to compile a whole program: over how many devices its SPMD partitioner splits it (its shardings annotated by
// the caller's strategy, which must use every device of the target's topology); 1: as the program's own shardings
// and collectives say (one device when it has none).
struct ProgramOptions {
  int64_t partitions = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The spec-like identity shown in reports and used in cache keys, e.g. `rules:neuron-trn1`.
  virtual std::string id() const = 0;
  // Anything that changes verdicts when it changes (profile hash, compiler --version, plugin API).
  virtual std::string version() const = 0;
  // Never throws; faults become Verdict::Error.
  virtual Verdict probe(const hlo::Module& unit) = 0;
  // Whether probe() may be called from several threads at once.
  virtual bool thread_safe() const { return true; }

  // Batching (compiler_probe/batch.h): a backend whose compiler can judge many units with one program says how
  // many units one program may hold (0 or 1: one unit per compile) and which units may share one. probe_batch
  // judges such units with one program (hlo::MakeBatchModule): one verdict per unit when the program compiled (and,
  // for a backend that runs units, ran) as a whole and each unit's verdict is the one probe() would give it alone;
  // nullopt otherwise, and the batch is split until each refusal is judged alone by probe(). The default compiles
  // the batch with probe() and speaks for its units only when that is supported with nothing to say (an empty
  // output_tail).
  virtual size_t batch_limit() const { return 0; }
  virtual bool batchable(const hlo::Module& unit) const {
    (void)unit;
    return false;
  }
  virtual std::optional<std::vector<Verdict>> probe_batch(const std::vector<const hlo::Module*>& units) {
    Verdict v = probe(*hlo::MakeBatchModule(units));
    if (!v.supported() || !v.output_tail.empty()) return std::nullopt;
    return std::vector<Verdict>(units.size(), Verdict::Supported());
  }

  // Compiles a whole program (not a probe unit) as the target would receive it, without running it: what
  // `scripts/bench batch` sets the probing of a step's units against. Default: probe().
  virtual Verdict compile(const hlo::Module& program) { return probe(program); }

  // Compiles a whole program for the target and says what it lays out per device (`--fit`). Default: kUnsupported.
  virtual ProgramCompile compile_program(const hlo::Module& program, const ProgramOptions& options) {
    (void)program;
    (void)options;
    ProgramCompile c;
    c.message = "the " + id() + " backend compiles no whole programs (tpu:, gpu:, xla:cpu, iree:llvm-cpu and pjrt: do)";
    return c;
  }
};

}  // namespace opprobe::compiler_probe
