#include "compiler_probe/worker/run_backend.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>

#include "compiler_probe/batch.h"
#include "compiler_probe/subprocess.h"
#include "compiler_probe/worker/compare.h"
#include "compiler_probe/worker/compile_options.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/fingerprint.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/proto_io.h"

namespace opprobe::compiler_probe::worker {

namespace {

using hlo::PrimitiveType;

void Flatten(const hlo::Literal& l, std::vector<const hlo::Literal*>& out) {
  if (l.shape().IsTuple()) {
    for (const auto& e : l.tuple_elements()) Flatten(e, out);
  } else {
    out.push_back(&l);
  }
}

// The host's physical memory: what a CPU device has.
int64_t HostMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

// How the inputs a unit is executed with are chosen (RandomArguments, then UseIdentityInitValues and
// UseValidDynamicSizes below): part of the backend's version, so that cached verdicts made with other inputs are
// not reused. inputs-2: integer maximum/minimum and (value, index) reducers get identity inits; dynamic sizes
// are valid. inputs-3: a verdict carries its comparison with interp as Verdict::interp, which the caches keep (the
// entries of earlier revisions have it only in their text).
constexpr std::string_view kInputsRevision = "inputs-3";

// Outputs that differ from interp's: an unsupported verdict that says so.
Verdict Differ(const std::string& what) {
  Verdict v = Verdict::Unsupported(std::string(kNumericsPrefix) + what);
  v.interp = Verdict::Interp::kDiffer;
  return v;
}

// The largest (or lowest) value of an integer type, as a scalar literal.
hlo::Literal IntegerBound(PrimitiveType t, bool largest) {
  const int bits = hlo::BitWidth(t);
  hlo::Literal l = hlo::Literal::ScalarF64(t, 0);
  if (hlo::IsUnsignedInteger(t))
    l.SetFromInt64(0, largest ? (bits >= 64 ? -1 : static_cast<int64_t>((uint64_t{1} << bits) - 1)) : 0);
  else
    l.SetFromInt64(0, largest ? static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1)
                              : static_cast<int64_t>(~((uint64_t{1} << (bits - 1)) - 1)));
  return l;
}

// The identity of maximum (largest = false) or minimum for type t: -inf/+inf, or the integer's bounds.
std::optional<hlo::Literal> ExtremeOf(PrimitiveType t, bool largest) {
  if (hlo::IsFloatingPoint(t)) return hlo::Literal::ScalarF64(t, largest ? INFINITY : -INFINITY);
  if (hlo::IsInteger(t) && hlo::BitWidth(t) <= 64) return IntegerBound(t, largest);
  return std::nullopt;
}

// A (value, index) reducer (argmax, argmin, max-pool indices: parameters v1, i1, v2, i2) compares v1 with v2:
// true for a maximum (kGt/kGe), false for a minimum (kLt/kLe), nullopt for anything else.
std::optional<bool> ArgReducerIsMax(const hlo::Computation& reducer) {
  for (const auto& in : reducer.instructions()) {
    if (in->opcode != hlo::Opcode::kCompare || in->operand_count() != 2) continue;
    const hlo::Instruction *a = in->operand(0), *b = in->operand(1);
    if (a->opcode != hlo::Opcode::kParameter || b->opcode != hlo::Opcode::kParameter || a->parameter_number != 0 ||
        b->parameter_number != 2)
      continue;
    switch (in->comparison_direction) {
      case hlo::ComparisonDirection::kGt:
      case hlo::ComparisonDirection::kGe: return true;
      case hlo::ComparisonDirection::kLt:
      case hlo::ComparisonDirection::kLe: return false;
      default: break;
    }
  }
  return std::nullopt;
}

// XLA only defines a reduction whose init value is an identity of its reducer (it may apply the init
// value any number of times, or drop it: a reduction over one element becomes a reshape), and a padded
// reduce-window pads with the init, so a random init makes the result depend on the compiler's reduction
// tree. Init operands that are parameters get the identity of a recognised reducer instead of random values,
// so the comparison with interp is meaningful: add, or (0); multiply, and (1); maximum and minimum (-inf/+inf,
// or the integer type's lowest/largest value); and a (value, index) reducer of argmax/argmin form ((lowest or
// largest value, index 0), what the lowerings pass).
void UseIdentityInitValues(const hlo::Computation& entry, std::vector<hlo::Literal>& args) {
  for (const auto& inst : entry.instructions()) {
    std::vector<std::pair<int, const hlo::Computation*>> inits;  // (operand index, reducer)
    int n = 1;                                                   // operands per init group (a variadic reduce's inputs)
    if (inst->opcode == hlo::Opcode::kReduce || inst->opcode == hlo::Opcode::kReduceWindow) {
      n = inst->operand_count() / 2;
      for (int i = n; i < inst->operand_count(); ++i) inits.push_back({i, inst->to_apply()});
    } else if (inst->opcode == hlo::Opcode::kSelectAndScatter && inst->called_computations.size() == 2) {
      inits.push_back({2, inst->called_computations[1]});
    }
    auto settable = [&](const hlo::Instruction* init) {
      return init->opcode == hlo::Opcode::kParameter && init->shape.IsArray() && init->shape.dimensions().size() == 0 &&
             static_cast<size_t>(init->parameter_number) < args.size();
    };
    if (n == 2 && inits.size() == 2 && inits[0].second) {  // (value, index)
      const hlo::Instruction *v = inst->operand(inits[0].first), *i = inst->operand(inits[1].first);
      std::optional<bool> is_max = ArgReducerIsMax(*inits[0].second);
      if (is_max && settable(v) && settable(i) && hlo::IsInteger(i->shape.element_type())) {
        if (auto id = ExtremeOf(v->shape.element_type(), !*is_max)) {
          args[static_cast<size_t>(v->parameter_number)] = std::move(*id);
          args[static_cast<size_t>(i->parameter_number)] = hlo::Literal::ScalarF64(i->shape.element_type(), 0);
        }
      }
      continue;
    }
    for (auto [i, reducer] : inits) {
      const hlo::Instruction* init = inst->operand(i);
      if (!reducer || !reducer->root() || !settable(init)) continue;
      const PrimitiveType t = init->shape.element_type();
      std::optional<hlo::Literal> id;
      switch (reducer->root()->opcode) {
        case hlo::Opcode::kAdd:
        case hlo::Opcode::kOr: id = hlo::Literal::ScalarF64(t, 0); break;
        case hlo::Opcode::kMultiply:
        case hlo::Opcode::kAnd: id = hlo::Literal::ScalarF64(t, 1); break;
        case hlo::Opcode::kMaximum: id = ExtremeOf(t, false); break;
        case hlo::Opcode::kMinimum: id = ExtremeOf(t, true); break;
        default: break;
      }
      if (id) args[static_cast<size_t>(init->parameter_number)] = std::move(*id);
    }
  }
}

// A set-dimension-size's size must lie in [0, bound]: XLA's CPU runtime dies with SIGSEGV on a negative one
// (reproduced with jaxlib 0.10.2: `f32[<=100] set-dimension-size(f32[100], s32[])` runs with sizes 0..150 and
// crashes at execution with -1 or -6), and elements past the dynamic size are undefined (XLA leaves them as
// they are, IREE returns the output at its dynamic size). A size that is a parameter gets the bound itself: the
// one valid size whose every output element is defined, so XLA, IREE and interp can be compared exactly.
void UseValidDynamicSizes(const hlo::Computation& entry, std::vector<hlo::Literal>& args) {
  for (const auto& inst : entry.instructions()) {
    if (inst->opcode != hlo::Opcode::kSetDimensionSize || inst->operand_count() != 2 || inst->dimensions.size() != 1)
      continue;
    const hlo::Instruction* x = inst->operand(0);
    const hlo::Instruction* size = inst->operand(1);
    const int64_t d = inst->dimensions[0];
    if (size->opcode != hlo::Opcode::kParameter || !size->shape.IsArray() || !x->shape.IsArray() ||
        size->shape.dimensions().size() != 0 || d < 0 || d >= static_cast<int64_t>(x->shape.dimensions().size()) ||
        static_cast<size_t>(size->parameter_number) >= args.size())
      continue;
    args[static_cast<size_t>(size->parameter_number)] = hlo::Literal::ScalarF64(
        size->shape.element_type(), static_cast<double>(x->shape.dimensions()[static_cast<size_t>(d)]));
  }
}

class RunBackend : public Backend {
 public:
  RunBackend(RunBackendSpec spec, std::unique_ptr<WorkerProcess> worker, BackendOptions options)
      : spec_(std::move(spec)),
        worker_(std::move(worker)),
        options_(std::move(options)),
        info_(worker_->info()),
        what_(spec_.what),
        version_(spec_.version(info_)),
        compiler_(spec_.compiler(info_)) {}

  std::string id() const override { return spec_.id; }
  std::string version() const override {
    return fmt::format("{}; evaluator {}; {}; {}", version_, hlo::kEvaluatorRevision, hlo::kProtoWriterRevision,
                       kInputsRevision);
  }
  // One worker, one request at a time: only the worker's round trip holds the lock, so that one thread makes the
  // next request (inputs, proto bytes) and judges the last reply (interp's reference, the comparison) while another
  // thread's request is in the worker.
  bool thread_safe() const override { return true; }

  Verdict probe(const hlo::Module& unit) override { return Probe(unit, /*run=*/true); }
  Verdict compile(const hlo::Module& program) override { return Probe(program, /*run=*/false); }

  // The whole program compiled with the client's devices, not run: the plugin's own memory statistics per device.
  // A CPU client's device memory is the host's (neither XLA's CPU client nor jaxlib reports a limit for it).
  ProgramCompile compile_program(const hlo::Module& program, const ProgramOptions& options) override {
    ProgramCompile c;
    c.compiler = compiler_;
    CompileConfig config = CompileConfigFor(program, options.partitions);
    c.devices = config.devices();
    if (info_.platform_name == "cpu") {
      c.device_memory_bytes = HostMemoryBytes();
      c.device_memory_source = "the host's physical memory, a CPU device's";
    }
    if (info_.num_devices > 0 && config.devices() > info_.num_devices) {
      c.outcome = ProgramCompile::Outcome::kError;
      c.message = fmt::format("the program needs {} devices ({} replicas x {} partitions) and {} has {}",
                              config.devices(), config.replicas, config.partitions, id(), info_.num_devices);
      return c;
    }
    auto bytes = hlo::ModuleToProtoBytes(program, /*unique_names=*/true);
    if (!bytes.ok()) {
      c.outcome = ProgramCompile::Outcome::kError;
      c.message = "cannot serialize the program as HloModuleProto: " + bytes.status().message();
      return c;
    }
    // A whole step takes the compiler longer than a unit: at least ten minutes before it counts as hung.
    const double timeout = std::max(600.0, options_.probe_timeout_seconds);
    WorkerProcess::Outcome o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto failed = EnsureWorker()) {
        c.outcome = ProgramCompile::Outcome::kError;
        c.message = failed->reason;
        return c;
      }
      o = worker_->CompileProgram(*bytes, SerializeCompileOptions(config), timeout);
    }
    c.seconds = o.seconds;
    if (o.kind != WorkerProcess::Outcome::Kind::kDone) {
      c.outcome = ProgramCompile::Outcome::kError;
      c.message = OutcomeVerdict(o, what_, timeout, [](const RunResult&) { return Verdict::Supported(); }).reason;
      return c;
    }
    const RunResult& r = o.result;
    if (r.stage != RunResult::Stage::kOk) {
      c.outcome = ProgramCompile::Outcome::kRefused;
      c.message = FirstLine(fmt::format("{}: {}", ErrorCodeName(r.code), r.message), 2000);
      return c;
    }
    c.outcome = ProgramCompile::Outcome::kCompiled;
    c.has_memory = r.stats.has_memory;
    c.memory = r.stats.memory;
    c.required_bytes = c.has_memory ? c.memory.total_bytes() : 0;
    if (!c.has_memory) c.message = what_ + " compiled the program and reports no memory statistics";
    return c;
  }

  // Many units to a program (compiler_probe/batch.h): the units run together, each on the inputs it runs with
  // alone, and each unit's outputs (the program's flat root holds them one unit after the other) are compared with
  // interp's as alone. The batch speaks for its units only when every one agrees; a unit MayShareAProgram refuses,
  // or with a collective, a token or a parameter that cannot be transferred, runs alone.
  size_t batch_limit() const override { return kBatchLimit; }
  bool batchable(const hlo::Module& unit) const override {
    if (!MayShareAProgram(unit)) return false;
    for (const auto* p : unit.entry()->parameters())
      if (!PjrtBufferType(p->shape.element_type())) return false;
    for (const auto& comp : unit.computations())
      for (const auto& in : comp->instructions()) {
        if (in->shape.IsToken()) return false;
        // Collectives and async pairs (`all-reduce`, `collective-permute-start`, `copy-done`, ...) by name.
        const std::string_view name = hlo::OpcodeName(in->opcode);
        if (name.find("all-") != name.npos || name.find("collective") != name.npos ||
            name.find("-start") != name.npos || name.find("-done") != name.npos)
          return false;
        switch (in->opcode) {
          case hlo::Opcode::kReduceScatter:
          case hlo::Opcode::kReplicaId:
          case hlo::Opcode::kPartitionId:
          case hlo::Opcode::kAfterAll: return false;
          default: break;
        }
      }
    return true;
  }
  std::optional<std::vector<Verdict>> probe_batch(const std::vector<const hlo::Module*>& units) override {
    std::vector<UnitInputs> inputs;
    std::vector<HostArray> host;
    for (const auto* u : units) {
      inputs.push_back(InputsFor(*u));
      if (!inputs.back().transferable) return std::nullopt;
      for (auto& h : inputs.back().host) host.push_back(std::move(h));
    }
    auto batch = hlo::MakeBatchModule(units);
    auto bytes = hlo::ModuleToProtoBytes(*batch, /*unique_names=*/true);
    if (!bytes.ok()) return std::nullopt;
    // interp's results are computed on this side while the worker compiles and runs the batch.
    std::vector<std::optional<Expected<hlo::Literal>>> references(units.size());
    auto evaluated = std::async(std::launch::async, [&] {
      for (size_t k = 0; k < units.size(); ++k) references[k].emplace(hlo::Evaluate(*units[k], inputs[k].args));
    });
    std::optional<WorkerProcess::Outcome> outcome;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!EnsureWorker()) outcome = worker_->Run(*bytes, host, /*execute=*/true, options_.probe_timeout_seconds);
    }
    evaluated.wait();
    if (!outcome) return std::nullopt;
    WorkerProcess::Outcome& o = *outcome;
    if (o.kind != WorkerProcess::Outcome::Kind::kDone || o.result.stage != RunResult::Stage::kOk) return std::nullopt;
    std::vector<Verdict> verdicts;
    size_t next = 0;
    for (size_t k = 0; k < units.size(); ++k) {
      const size_t n = LeafCount(units[k]->entry()->root()->shape);
      if (next + n > o.result.outputs.size()) return std::nullopt;
      RunResult own;
      own.stage = RunResult::Stage::kOk;
      own.outputs.assign(std::make_move_iterator(o.result.outputs.begin() + static_cast<std::ptrdiff_t>(next)),
                         std::make_move_iterator(o.result.outputs.begin() + static_cast<std::ptrdiff_t>(next + n)));
      next += n;
      Verdict v = Judge(*units[k], inputs[k].args, /*executed=*/true, "", own, std::move(references[k]));
      if (!v.supported()) return std::nullopt;  // judged alone, where its verdict is its own
      verdicts.push_back(std::move(v));
    }
    if (next != o.result.outputs.size()) return std::nullopt;
    return verdicts;
  }

 private:
  double LoadTimeout() const { return std::max(60.0, options_.probe_timeout_seconds); }
  // Units to a program: a CPU compile's fixed cost is small, a big program's compile and run are not.
  static constexpr size_t kBatchLimit = 64;
  static size_t LeafCount(const hlo::Shape& s) {
    if (!s.IsTuple()) return 1;
    size_t n = 0;
    for (const auto& e : s.tuple_shapes()) n += LeafCount(e);
    return n;
  }

  // The inputs a unit runs with: deterministic, seeded from its fingerprint; `transferable` false (and `reason`
  // set) when a parameter's type cannot be handed to the plugin, and the unit is compiled only.
  struct UnitInputs {
    std::vector<hlo::Literal> args;
    std::vector<HostArray> host;
    bool transferable = true;
    std::string reason;
  };
  static UnitInputs InputsFor(const hlo::Module& unit) {
    UnitInputs in;
    const hlo::Computation& entry = *unit.entry();
    std::string fp = hlo::Fingerprint(unit);
    uint64_t seed = std::strtoull(fp.c_str(), nullptr, 16);
    in.args = hlo::RandomArguments(entry, seed);
    UseIdentityInitValues(entry, in.args);
    UseValidDynamicSizes(entry, in.args);
    for (size_t i = 0; i < in.args.size(); ++i) {
      const hlo::Literal& a = in.args[i];
      auto t = a.shape().IsArray() ? PjrtBufferType(a.shape().element_type()) : std::nullopt;
      if (!t) {
        in.transferable = false;
        in.reason = fmt::format("parameter {} of type {} cannot be transferred", i, a.shape().ToString());
        in.host.clear();
        break;
      }
      HostArray h;
      h.type = *t;
      h.dims = a.shape().dimensions();
      h.data.assign(reinterpret_cast<const char*>(a.data().data()), a.data().size());
      in.host.push_back(std::move(h));
    }
    return in;
  }

  // The worker, started again after a crash; an error verdict when it will not start. Called with mu_ held.
  std::optional<Verdict> EnsureWorker() {
    if (worker_ && worker_->alive()) return std::nullopt;
    auto w = WorkerProcess::Start(spec_.launch, LoadTimeout());
    if (!w.ok()) return Verdict::Error(what_ + " could not be restarted: " + w.status().message());
    worker_ = std::move(w).value();
    ++restarts_;
    return std::nullopt;
  }

  // Compiles `unit`, and with `run` also runs it and compares its results with interp's.
  Verdict Probe(const hlo::Module& unit, bool run) {
    auto bytes = hlo::ModuleToProtoBytes(unit, /*unique_names=*/true);  // a bare HloModuleProto, as format "hlo" wants
    if (!bytes.ok()) return Verdict::Error("cannot serialize the unit as HloModuleProto: " + bytes.status().message());
    const std::string& proto = *bytes;
    if (!unit.entry()) return Verdict::Error("probe unit has no entry computation");

    UnitInputs in;
    if (run) in = InputsFor(unit);
    else in = {{}, {}, false, "a whole program, compiled only"};
    const bool execute = in.transferable;

    WorkerProcess::Outcome o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto failed = EnsureWorker()) return *failed;
      o = worker_->Run(proto, in.host, execute, options_.probe_timeout_seconds);
    }
    return OutcomeVerdict(o, what_, options_.probe_timeout_seconds,
                          [&](const RunResult& r) { return Judge(unit, in.args, execute, in.reason, r); });
  }

  // `reference`: interp's result on `args`, when it was computed already (a batch evaluates while the worker
  // compiles); otherwise it is computed here.
  Verdict Judge(const hlo::Module& unit, const std::vector<hlo::Literal>& args, bool executed,
                const std::string& no_execute_reason, const RunResult& r,
                std::optional<Expected<hlo::Literal>> reference = std::nullopt) {
    auto failure = [&](const char* stage) {
      Verdict v = Verdict::Unsupported(fmt::format("{}: {}: {}", stage, ErrorCodeName(r.code), FirstLine(r.message)));
      v.output_tail = SanitizeOutput(r.message.size() > 4096 ? r.message.substr(0, 4096) : r.message);
      return v;
    };
    switch (r.stage) {
      case RunResult::Stage::kCompile: return failure("compile");
      case RunResult::Stage::kExecute: return failure("execute");
      case RunResult::Stage::kTransfer: return failure("transfer");
      case RunResult::Stage::kOk: break;
    }
    Verdict ok = Verdict::Supported();
    if (!executed) {
      ok.output_tail = std::string(kInterpNotComparedPrefix) + "compiled only: " + no_execute_reason;
      ok.interp = Verdict::Interp::kNotCompared;
      return ok;
    }
    for (const auto& inst : unit.entry()->instructions())
      if (inst->opcode == hlo::Opcode::kRng || inst->opcode == hlo::Opcode::kRngBitGenerator) {
        // Which numbers a generator draws is the implementation's choice (XLA's Philox/ThreeFry streams are
        // not interp's): only the outputs' count is checked.
        if (r.outputs.empty())
          return Differ(fmt::format("{} returned no outputs for a random number generator", what_));
        ok.output_tail = std::string(kInterpNotComparedPrefix) + "random numbers are implementation-defined";
        ok.interp = Verdict::Interp::kNotCompared;
        return ok;
      }
    Expected<hlo::Literal> expected = reference ? std::move(*reference) : hlo::Evaluate(unit, args);
    if (!expected.ok()) {
      // The reference cannot say; the plugin compiled and ran the unit.
      ok.output_tail = std::string(kInterpNotComparedPrefix) + expected.status().message();
      ok.interp = Verdict::Interp::kNotCompared;
      return ok;
    }
    std::vector<const hlo::Literal*> want;
    Flatten(*expected, want);
    if (want.size() != r.outputs.size())
      return Differ(fmt::format("{} returned {} outputs, interp {}", what_, r.outputs.size(), want.size()));
    const hlo::Opcode root = unit.entry()->root() ? unit.entry()->root()->opcode : hlo::Opcode::kParameter;
    const bool accumulated = root == hlo::Opcode::kDot || root == hlo::Opcode::kConvolution ||
                             root == hlo::Opcode::kReduce || root == hlo::Opcode::kReduceWindow ||
                             root == hlo::Opcode::kSelectAndScatter;
    for (size_t i = 0; i < want.size(); ++i)
      if (auto diff = CompareOutput(*want[i], r.outputs[i], i, accumulated)) return Differ(*diff);
    ok.output_tail = fmt::format("{}{} output{} agree", kInterpAgreePrefix, want.size(), want.size() == 1 ? "" : "s");
    ok.interp = Verdict::Interp::kAgree;
    return ok;
  }

  std::mutex mu_;
  RunBackendSpec spec_;
  std::unique_ptr<WorkerProcess> worker_;
  BackendOptions options_;
  SessionInfo info_;      // the first worker's greeting
  std::string what_;      // names the compiler in reasons
  std::string version_;   // spec_.version(info_)
  std::string compiler_;  // spec_.compiler(info_)
  int restarts_ = 0;
};

}  // namespace

Expected<std::unique_ptr<Backend>> CreateRunBackend(RunBackendSpec spec, const BackendOptions& options) {
  auto worker = WorkerProcess::Start(spec.launch, std::max(60.0, options.probe_timeout_seconds));
  if (!worker.ok()) return worker.status();
  return std::unique_ptr<Backend>(std::make_unique<RunBackend>(std::move(spec), std::move(worker).value(), options));
}

}  // namespace opprobe::compiler_probe::worker
