// The Backend interface: a compiler (or runtime) that is asked whether it accepts one probe unit.
// A backend sees only an HLO module; it never hears of aten ops or reports (DESIGN.md).
#pragma once

#include <memory>
#include <string>

#include "hlo/instruction.h"

namespace opprobe::compiler_probe {

struct Verdict {
  enum class Kind { kSupported, kUnsupported, kError };
  Kind kind = Kind::kSupported;
  std::string reason;       // why unsupported / what failed; empty when supported
  double seconds = 0.0;     // time the probe took
  std::string output_tail;  // the tail of the compiler's output, when there is one

  static Verdict Supported() { return {}; }
  static Verdict Unsupported(std::string reason) { return {Kind::kUnsupported, std::move(reason), 0.0, {}}; }
  static Verdict Error(std::string reason) { return {Kind::kError, std::move(reason), 0.0, {}}; }
  bool supported() const { return kind == Kind::kSupported; }
};

std::string_view VerdictKindName(Verdict::Kind k);

// Backends that run a unit and compare its results with interp (pjrt, xla) say how the comparison went:
// an unsupported reason starting with kNumericsPrefix (the results differ), or a supported verdict's
// output_tail starting with kInterpAgreePrefix or kInterpNotComparedPrefix. Reports count them.
inline constexpr std::string_view kNumericsPrefix = "numerics: ";
inline constexpr std::string_view kInterpAgreePrefix = "compared with interp: ";
inline constexpr std::string_view kInterpNotComparedPrefix = "not compared with interp: ";  // "supported" | "unsupported" | "error"

// Options every backend may honour; each backend documents which it uses.
struct BackendOptions {
  double probe_timeout_seconds = 60.0;
  std::string work_dir;  // scratch space for backends that write files (cmd, pjrt)
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
};

}  // namespace opprobe::compiler_probe
