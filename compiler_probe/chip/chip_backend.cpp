#include "compiler_probe/chip/chip_backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <regex>

#include "compiler_probe/batch.h"
#include "compiler_probe/subprocess.h"
#include "compiler_probe/worker/compile_options.h"
#include "compiler_probe/worker/process.h"
#include "compiler_probe/worker/python.h"
#include "hlo/fingerprint.h"
#include "hlo/probe_unit.h"
#include "hlo/proto_io.h"
#include "support/numbers.h"

namespace opprobe::compiler_probe::chip {

namespace {

using worker::CompileConfig;
using worker::CompileConfigFor;
using worker::SerializeCompileOptions;

namespace fs = std::filesystem;

struct EmbeddedTarget {
  const char* name;
  const char* text;
};
constexpr EmbeddedTarget kGpuTargets[] = {
#include "builtin_gpu_targets.inc"
};

// What each kind of chip needs: its compiler's name in verdicts, the package that brings the plugin, where the
// plugin lies inside the environment's site-packages, the variable that names it, the environment's name under
// $OPPROBE_VENV_ROOT, its requirements file, and what the worker's environment must hold.
struct KindFacts {
  const char* prefix;   // `tpu`
  const char* what;     // `TPU compiler`
  const char* package;  // `libtpu`
  const char* plugin_in_site_packages;
  const char* env_var;       // `OPPROBE_LIBTPU`
  const char* venv;          // `tpu`
  const char* requirements;  // `requirements/tpu.txt`
  std::vector<std::string> worker_env;
};

const KindFacts& Facts(ChipKind kind) {
  // libtpu queries Google Cloud's metadata server at initialization for over 10 minutes unless told not to, and
  // refuses a second process's load through /tmp/libtpu_lockfile (research/deviceless-compilers.md).
  static const KindFacts kTpu = {"tpu",
                                 "TPU compiler",
                                 "libtpu",
                                 "libtpu/libtpu.so",
                                 "OPPROBE_LIBTPU",
                                 "tpu",
                                 "requirements/tpu.txt",
                                 {"TPU_SKIP_MDS_QUERY=1", "ALLOW_MULTIPLE_LIBTPU_LOAD=1"}};
  static const KindFacts kGpu = {"gpu",
                                 "GPU compiler",
                                 "jax_cuda12_pjrt",
                                 "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
                                 "OPPROBE_CUDA_PLUGIN",
                                 "gpu",
                                 "requirements/gpu.txt",
                                 {}};
  return kind == ChipKind::kTpu ? kTpu : kGpu;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// `2x4`, `2x2x2`: positive integers joined by 'x'.
bool IsLayout(std::string_view s) { return std::regex_match(std::string(s), std::regex("[1-9][0-9]*(x[1-9][0-9]*)+")); }

std::string GpuNames() {
  std::vector<std::string> names;
  for (const auto& d : GpuDevices()) names.push_back(d.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string TpuNames() {
  std::vector<std::string> names;
  for (const auto& g : TpuGenerations()) names.emplace_back(g.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// The site-packages of the environment the scripts make for this kind, and which rule chose it.
std::pair<fs::path, std::string> DefaultSitePackages(const KindFacts& f) {
  const auto [folder, rule] = worker::VenvFolder(f.venv);
  const fs::path venv = folder;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(venv / "lib", ec))
    if (entry.path().filename().string().rfind("python3", 0) == 0) return {entry.path() / "site-packages", rule};
  return {venv / "lib" / "python3" / "site-packages", rule};
}

class ChipBackend : public Backend {
 public:
  ChipBackend(ChipSpec spec, worker::WorkerLaunch launch, std::unique_ptr<worker::WorkerProcess> worker,
              BackendOptions options, std::string package)
      : spec_(std::move(spec)),
        launch_(std::move(launch)),
        worker_(std::move(worker)),
        options_(std::move(options)),
        info_(worker_->info()),
        package_(std::move(package)) {}

  std::string id() const override { return spec_.id; }
  std::string version() const override {
    // Everything that changes a verdict: the compiler (its package and the plugin's own version string), the
    // topology and the device description, and how opprobe serializes units and options.
    std::string device;
    if (spec_.kind == ChipKind::kGpu)
      for (const auto& d : GpuDevices())
        if (d.name == spec_.target)
          device = fmt::format("; {} (sm_{}{}, target config {})", d.description, d.compute_major, d.compute_minor,
                               fmt::format("{:016x}", hlo::HashBytes(d.target_config)));
    // libtpu's platform version runs over two lines ("TFRT TPU v5 lite\nBuilt on ..."): one line here.
    std::string platform_version = info_.platform_version;
    std::replace(platform_version.begin(), platform_version.end(), '\n', ' ');
    return fmt::format("{}{}{}; topology {} ({} devices){}; PJRT API {}.{}; {}; {}",
                       package_.empty() ? "" : package_ + "; ", info_.platform_name,
                       platform_version.empty() ? "" : " " + platform_version, spec_.topology, info_.num_devices,
                       device, info_.api_major, info_.api_minor, hlo::kProtoWriterRevision, kOptionsRevision);
  }
  bool thread_safe() const override { return false; }  // one worker, one request at a time

  // Many units to a program (compiler_probe/batch.h): each compile pays the compiler's fixed cost (its pass
  // pipeline; on GPU a ptxas run) once. Units that MayShareAProgram refuses, and units that need other compile
  // options (collectives over several replicas), are compiled alone.
  size_t batch_limit() const override { return kBatchLimit; }
  bool batchable(const hlo::Module& unit) const override {
    return MayShareAProgram(unit) && CompileConfigFor(unit) == CompileConfig{};
  }

  Verdict probe(const hlo::Module& unit) override {
    std::lock_guard<std::mutex> lock(mu_);
    const KindFacts& f = Facts(spec_.kind);
    CompileConfig config = CompileConfigFor(unit);
    if (info_.num_devices > 0 && config.devices() > info_.num_devices)
      return Verdict::Error(fmt::format(
          "not probed: the unit needs {} devices ({} replicas x {} partitions) and the topology {} has {}; name a "
          "larger one ({}:{}:...)",
          config.devices(), config.replicas, config.partitions, spec_.topology, info_.num_devices, f.prefix,
          spec_.target));
    worker::WorkerProcess::Outcome o;
    if (auto failed = Compile(unit, config, o)) return *failed;
    return worker::OutcomeVerdict(o, f.what, options_.probe_timeout_seconds, [&](const worker::RunResult& r) {
      return JudgeCompile(spec_.kind, f.what, unit, r);
    });
  }

  ProgramCompile compile_program(const hlo::Module& program, const ProgramOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    const KindFacts& f = Facts(spec_.kind);
    ProgramCompile c;
    c.compiler = fmt::format("{} ({}, PJRT C API {}.{})", package_.empty() ? info_.plugin_path : package_, f.what,
                             info_.api_major, info_.api_minor);
    CompileConfig config = CompileConfigFor(program, options.partitions);
    c.devices = config.devices();
    c.device_memory_bytes = DeviceMemoryBytes();
    if (c.device_memory_bytes > 0)
      c.device_memory_source = spec_.kind == ChipKind::kGpu ? "the GPU target config's device_memory_size"
                                                            : "the generation's published HBM per chip";
    if (info_.num_devices > 0 && options.partitions > 1 && options.partitions != info_.num_devices) {
      c.outcome = ProgramCompile::Outcome::kError;
      c.message = fmt::format(
          "the strategy splits the program over {} devices and the topology {} has {}; name a "
          "topology of that many ({}:{}:...) or change the strategy",
          options.partitions, spec_.topology, info_.num_devices, f.prefix, spec_.target);
      return c;
    }
    if (info_.num_devices > 0 && config.devices() > info_.num_devices) {
      c.outcome = ProgramCompile::Outcome::kError;
      c.message = fmt::format("the program needs {} devices and the topology {} has {}; name a larger one",
                              config.devices(), spec_.topology, info_.num_devices);
      return c;
    }
    worker::WorkerProcess::Outcome o;
    // A whole step takes the compiler longer than a unit: at least ten minutes before it counts as hung.
    if (auto failed = Compile(program, config, o, std::max(600.0, options_.probe_timeout_seconds))) {
      c.outcome = ProgramCompile::Outcome::kError;
      c.message = failed->reason;
      return c;
    }
    c.seconds = o.seconds;
    Verdict v = worker::OutcomeVerdict(o, f.what, std::max(600.0, options_.probe_timeout_seconds),
                                       [](const worker::RunResult&) { return Verdict::Supported(); });
    if (o.kind != worker::WorkerProcess::Outcome::Kind::kDone) {
      c.outcome = ProgramCompile::Outcome::kError;
      c.message = v.reason;
      return c;
    }
    const worker::RunResult& r = o.result;
    if (r.stage != worker::RunResult::Stage::kOk) {
      c.message = FirstLine(r.message, 2000);
      Verdict judged = JudgeCompile(spec_.kind, f.what, program, r);
      c.outcome =
          judged.kind == Verdict::Kind::kError ? ProgramCompile::Outcome::kError : ProgramCompile::Outcome::kRefused;
      if (auto m = ParseMemoryRefusal(r.message)) {
        c.outcome = ProgramCompile::Outcome::kRefused;
        c.memory_refusal = true;
        c.required_bytes = m->required_bytes;
        c.required_what = m->what;
        if (m->available_bytes > 0) {
          c.device_memory_bytes = m->available_bytes;
          c.device_memory_source = "the compiler's figure in its refusal";
        }
      }
      return c;
    }
    c.outcome = ProgramCompile::Outcome::kCompiled;
    const worker::CompileStats& st = r.stats;
    c.has_memory = st.has_memory;
    c.memory = st.memory;
    c.required_bytes = st.has_memory ? c.memory.total_bytes() : 0;
    return c;
  }

  // The batch compiled as one program; a supported verdict per unit when it compiled, each with the library calls
  // its own instructions became (told apart by hlo::BatchUnitMarker), as a compile of that unit alone names them.
  std::optional<std::vector<Verdict>> probe_batch(const std::vector<const hlo::Module*>& units) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto batch = hlo::MakeBatchModule(units);
    worker::WorkerProcess::Outcome o;
    if (Compile(*batch, CompileConfig{}, o) || o.kind != worker::WorkerProcess::Outcome::Kind::kDone ||
        o.result.stage != worker::RunResult::Stage::kOk)
      return std::nullopt;
    std::vector<std::vector<std::string>> calls(units.size());
    for (const auto& site : o.result.stats.library_call_sites) {
      std::optional<size_t> k = hlo::BatchUnitOf(site.op_name);
      if (!k || *k >= calls.size()) return std::nullopt;  // a call no unit can be named for: each compiles alone
      if (std::find(calls[*k].begin(), calls[*k].end(), site.target) == calls[*k].end())
        calls[*k].push_back(site.target);
    }
    // Every call the program names must have been found with its unit.
    size_t named = 0;
    for (auto& c : calls) std::sort(c.begin(), c.end()), named += c.size();
    if (named < o.result.stats.library_calls.size()) return std::nullopt;
    std::vector<Verdict> verdicts;
    for (size_t k = 0; k < units.size(); ++k) {
      worker::RunResult own;
      own.stats.library_calls = calls[k];
      verdicts.push_back(JudgeCompile(spec_.kind, Facts(spec_.kind).what, *units[k], own));
    }
    return verdicts;
  }

 private:
  // Compiles `module` with `config` into `o`; an error verdict when the worker will not start or the module will not
  // serialize.
  // What one device of the target has: a GPU target config's device_memory_size, a TPU generation's published HBM.
  int64_t DeviceMemoryBytes() const {
    if (spec_.kind == ChipKind::kGpu) {
      for (const auto& d : GpuDevices())
        if (d.name == spec_.target) return d.device_memory_bytes;
      return 0;
    }
    for (const auto& g : TpuGenerations())
      if (g.name == spec_.target) return g.device_memory_bytes;
    return 0;
  }

  std::optional<Verdict> Compile(const hlo::Module& module, const CompileConfig& config,
                                 worker::WorkerProcess::Outcome& o, double timeout_seconds = 0) {
    const KindFacts& f = Facts(spec_.kind);
    if (!worker_ || !worker_->alive()) {
      auto w = worker::WorkerProcess::Start(launch_, LoadTimeout());
      if (!w.ok()) return Verdict::Error(fmt::format("{} could not be restarted: {}", f.what, w.status().message()));
      worker_ = std::move(w).value();
    }
    auto bytes = hlo::ModuleToProtoBytes(module, /*unique_names=*/true);
    if (!bytes.ok()) return Verdict::Error("cannot serialize the unit as HloModuleProto: " + bytes.status().message());
    o = worker_->CompileProgram(*bytes, SerializeCompileOptions(config),
                                timeout_seconds > 0 ? timeout_seconds : options_.probe_timeout_seconds);
    return std::nullopt;
  }

  // How units become compile options (compile_options.h): part of version(), so verdicts made with other options
  // are not reused from a cache.
  static constexpr std::string_view kOptionsRevision = "options-1";
  // Units to a program: bigger programs take the TPU compiler more than their share (the resnet50 step's 347
  // batchable units: 10.4 s in batches of 64, 14.7 s in batches of 256; scripts/bench batch).
  static constexpr size_t kBatchLimit = 64;
  double LoadTimeout() const { return std::max(120.0, options_.probe_timeout_seconds); }

  std::mutex mu_;
  ChipSpec spec_;
  worker::WorkerLaunch launch_;
  std::unique_ptr<worker::WorkerProcess> worker_;
  BackendOptions options_;
  worker::SessionInfo info_;
  std::string package_;
};

std::string DescribeInstalled(ChipKind kind) {
  ChipSpec probe_spec;
  probe_spec.kind = kind;
  auto plugin = FindPlugin(probe_spec);
  std::string targets;
  if (kind == ChipKind::kTpu) {
    std::vector<std::string> gens;
    for (const auto& g : TpuGenerations()) gens.push_back(fmt::format("{} ({})", g.name, g.default_topology));
    targets = fmt::format("generations (default topology): {}", fmt::join(gens, ", "));
  } else {
    std::vector<std::string> devs;
    for (const auto& d : GpuDevices())
      devs.push_back(fmt::format("{} ({}, sm_{}{}, {:.1f} GiB)", d.name, d.description, d.compute_major,
                                 d.compute_minor, static_cast<double>(d.device_memory_bytes) / (1 << 30)));
    targets = fmt::format("devices: {}; default topology 1x1x8", fmt::join(devs, ", "));
  }
  if (!plugin.ok()) return fmt::format("not installed ({}); {}", FirstLine(plugin.status().message(), 300), targets);
  std::string package = PluginPackage(*plugin);
  return fmt::format("{} ({}); {}", package.empty() ? "plugin" : package, *plugin, targets);
}

}  // namespace

const std::vector<TpuGeneration>& TpuGenerations() {
  // Topology names as libtpu's PJRT_TopologyDescription_Create takes them; the defaults are 8-chip slices (a
  // collective over up to 8 devices is judged as it would be on them): v2-8 and v3-8 are 4 chips of two cores.
  static const std::vector<TpuGeneration> kGenerations = {
      {"v2", "v2:2x2", "TPU v2", int64_t{8} << 30},   // 16 GiB a chip, two cores
      {"v3", "v3:2x2", "TPU v3", int64_t{16} << 30},  // 32 GiB a chip, two cores
      {"v4", "v4:2x2x2", "TPU v4", int64_t{32} << 30},    {"v5e", "v5e:2x4", "TPU v5e (v5 lite)", int64_t{16} << 30},
      {"v5p", "v5p:2x2x2", "TPU v5p", int64_t{95} << 30}, {"v6e", "v6e:2x4", "TPU v6e (Trillium)", int64_t{32} << 30},
  };
  return kGenerations;
}

std::optional<MemoryRefusal> ParseMemoryRefusal(std::string_view message) {
  // XLA writes sizes as HumanReadableNumBytes does: a number and B, K, M, G, T or P, in powers of 1024.
  static const std::regex kRefusal(
      R"(memory required([^(]*)\(([0-9.]+)([BKMGTP])\)[^(]*exceeds available[^(]*\(([0-9.]+)([BKMGTP])\))");
  std::string text(message.substr(0, 8192));
  std::smatch m;
  if (!std::regex_search(text, m, kRefusal)) return std::nullopt;
  auto bytes = [](const std::string& number, const std::string& unit) {
    static constexpr std::string_view kUnits = "BKMGTP";
    double v = std::strtod(number.c_str(), nullptr);
    for (size_t k = 0; k < kUnits.find(unit[0]); ++k) v *= 1024.0;
    return static_cast<int64_t>(v);
  };
  std::string what = m[1].str();
  while (!what.empty() && what.back() == ' ') what.pop_back();
  while (!what.empty() && what.front() == ' ') what.erase(0, 1);
  return MemoryRefusal{bytes(m[2].str(), m[3].str()), bytes(m[4].str(), m[5].str()), what};
}

const std::vector<GpuDevice>& GpuDevices() {
  static const std::vector<GpuDevice> kDevices = [] {
    std::vector<GpuDevice> out;
    auto field = [](const std::string& text, const char* re) -> std::string {
      std::smatch m;
      return std::regex_search(text, m, std::regex(re)) ? m[1].str() : "";
    };
    for (const auto& t : kGpuTargets) {
      GpuDevice d;
      d.file = t.name;
      d.name = d.file.substr(0, d.file.find('_'));
      d.target_config = t.text;
      d.description = field(d.target_config, "device_description_str: \"([^\"]*)\"");
      // 0 where the config has no such field.
      d.compute_major =
          support::ParseInteger<int>(field(d.target_config, "cuda_compute_capability \\{\\s*major: ([0-9]+)"))
              .value_or(0);
      d.compute_minor =
          support::ParseInteger<int>(field(d.target_config, "cuda_compute_capability \\{[^}]*minor: ([0-9]+)"))
              .value_or(0);
      d.device_memory_bytes = support::ParseInteger(field(d.target_config, "device_memory_size: ([0-9]+)")).value_or(0);
      out.push_back(std::move(d));
    }
    return out;
  }();
  return kDevices;
}

Expected<ChipSpec> ParseChipSpec(ChipKind kind, const std::string& arg) {
  const KindFacts& f = Facts(kind);
  ChipSpec spec;
  spec.kind = kind;
  std::string head = arg.substr(0, arg.find(','));
  for (size_t start = head.size(); start < arg.size();) {
    size_t comma = arg.find(',', start + 1);
    std::string part = arg.substr(start + 1, comma == std::string::npos ? std::string::npos : comma - start - 1);
    if (part.rfind("plugin=", 0) == 0 && part.size() > 7) spec.plugin = part.substr(7);
    else
      return InvalidInput(
          fmt::format("{0} backend: unknown option '{1}' in '{0}:{2}' (expected plugin=PATH)", f.prefix, part, arg));
    start = comma == std::string::npos ? arg.size() : comma;
  }
  size_t colon = head.find(':');
  spec.target = head.substr(0, colon);
  std::string layout = colon == std::string::npos ? "" : head.substr(colon + 1);
  if (colon != std::string::npos && !IsLayout(layout))
    return InvalidInput(fmt::format("{0} backend: '{1}' in '{0}:{2}' is not a topology such as {3}", f.prefix, layout,
                                    arg, kind == ChipKind::kTpu ? "2x4 or 2x2x2" : "1x1x8"));
  if (kind == ChipKind::kTpu) {
    const auto& gens = TpuGenerations();
    auto it = std::find_if(gens.begin(), gens.end(), [&](const TpuGeneration& g) { return g.name == spec.target; });
    if (it == gens.end())
      return InvalidInput(fmt::format("tpu backend: unknown TPU generation '{}' in 'tpu:{}' (known: {})", spec.target,
                                      arg, TpuNames()));
    spec.topology = layout.empty() ? std::string(it->default_topology) : spec.target + ":" + layout;
  } else {
    const auto& devs = GpuDevices();
    auto it = std::find_if(devs.begin(), devs.end(), [&](const GpuDevice& d) { return d.name == spec.target; });
    if (it == devs.end())
      return InvalidInput(
          fmt::format("gpu backend: unknown GPU '{}' in 'gpu:{}' (known: {})", spec.target, arg, GpuNames()));
    spec.topology = layout.empty() ? "1x1x8" : layout;
  }
  spec.id = fmt::format("{}:{}", f.prefix, head);
  return spec;
}

Expected<std::string> FindPlugin(const ChipSpec& spec) {
  const KindFacts& f = Facts(spec.kind);
  auto usable = [](const std::string& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
  };
  if (!spec.plugin.empty()) {
    if (usable(spec.plugin)) return spec.plugin;
    return Unavailable(fmt::format("{} backend: plugin '{}' (plugin=) is not a file", f.prefix, spec.plugin));
  }
  if (std::string p = Env(f.env_var); !p.empty()) {
    if (usable(p)) return p;
    return Unavailable(fmt::format("{} backend: {}='{}' is not a file", f.prefix, f.env_var, p));
  }
  auto [site, rule] = DefaultSitePackages(Facts(spec.kind));
  fs::path plugin = site / f.plugin_in_site_packages;
  if (usable(plugin.string())) return plugin.string();
  fs::path venv = site.parent_path().parent_path().parent_path();
  return Unavailable(fmt::format(
      "{0} backend: the {1} is not installed (looked for {2}, from {3}); install it with: /usr/bin/python3 -m venv {4} "
      "&& {4}/bin/python -m pip install -r {5} (scripts/test does this), or name the plugin with {6} or "
      "{0}:TARGET,plugin=PATH",
      f.prefix, f.what, plugin.string(), rule, venv.string(), f.requirements, f.env_var));
}

std::string PluginPackage(const std::string& plugin_path) {
  // site-packages/libtpu/libtpu.so -> site-packages/libtpu-0.0.42.1.dist-info; the CUDA plugin sits two folders
  // down (jax_plugins/xla_cuda12/) and its package is jax_cuda12_pjrt.
  static const std::regex kDistInfo("(libtpu|jax_cuda12_pjrt)-(.+)\\.dist-info");
  fs::path dir = fs::path(plugin_path).parent_path();
  for (int up = 0; up < 3 && !dir.empty(); ++up, dir = dir.parent_path()) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::smatch m;
      std::string name = e.path().filename().string();
      if (std::regex_match(name, m, kDistInfo)) found.push_back(fmt::format("{} {}", m[1].str(), m[2].str()));
    }
    std::sort(found.begin(), found.end());
    if (!found.empty()) return found.front();
  }
  return "";
}

Verdict JudgeCompile(ChipKind kind, std::string_view what, const hlo::Module& unit, const worker::RunResult& r) {
  if (r.stage != worker::RunResult::Stage::kOk) {
    const std::string code = worker::ErrorCodeName(r.code);
    const std::string line = FirstLine(r.message);
    Verdict v;
    // An internal check failing on a module that passed opprobe's verifier, or an INTERNAL status, says that
    // opprobe handed the compiler something wrong (a configuration, a module form): not the device's verdict.
    // So is PJRT's refusal of a program result that is a nested tuple, which no frontend hands a chip.
    if (r.code == 13 || r.message.find("RET_CHECK") != std::string::npos ||
        r.message.find("LayoutModeToXlaShape must be passed array shapes") != std::string::npos)
      v = Verdict::Error(fmt::format("{} internal error (opprobe's module or options, not a verdict on the op): {}: {}",
                                     what, code, line));
    else v = Verdict::Unsupported(fmt::format("compile: {}: {}", code, line));
    v.output_tail = SanitizeOutput(r.message.size() > 4096 ? r.message.substr(0, 4096) : r.message);
    return v;
  }
  Verdict ok = Verdict::Supported();
  if (kind == ChipKind::kGpu) {
    std::vector<std::string> notes;
    if (!r.stats.library_calls.empty())
      notes.push_back(fmt::format("a vendor library call ({})", fmt::join(r.stats.library_calls, ", ")));
    // XLA's GPU backend runs an FFT as a cuFFT plan: the compile emitted a call, not a kernel.
    for (const auto& comp : unit.computations())
      for (const auto& in : comp->instructions())
        if (in->opcode == hlo::Opcode::kFft && notes.size() < 2 &&
            std::none_of(notes.begin(), notes.end(), [](const std::string& n) { return n.find("cuFFT") != n.npos; }))
          notes.push_back("a cuFFT call (fft)");
    if (!notes.empty())
      ok.output_tail = fmt::format("compiled to {}: whether the library is present at run time is not checked",
                                   fmt::join(notes, " and "));
  }
  return ok;
}

Expected<std::unique_ptr<Backend>> CreateChipBackend(ChipKind kind, const std::string& arg,
                                                     const BackendOptions& options) {
  OPPROBE_ASSIGN_OR_RETURN(ChipSpec spec, ParseChipSpec(kind, arg));
  OPPROBE_ASSIGN_OR_RETURN(std::string plugin, FindPlugin(spec));
  const KindFacts& f = Facts(kind);
  worker::WorkerLaunch launch;
  launch.plugin_path = plugin;
  launch.env = f.worker_env;
  if (kind == ChipKind::kTpu) {
    launch.topology = spec.topology;
  } else {
    launch.topology = std::string();  // the GPU plugin takes its device from the options
    for (const auto& d : GpuDevices())
      if (d.name == spec.target)
        launch.options.push_back(worker::PluginOption::Parse("target_config", d.target_config));
    launch.options.push_back(worker::PluginOption::Parse("topology", spec.topology));
  }
  auto worker = worker::WorkerProcess::Start(launch, std::max(120.0, options.probe_timeout_seconds));
  if (!worker.ok()) {
    if (worker.status().code() == ErrorCode::kUnavailable)
      return Unavailable(fmt::format("{} backend: {} for {} cannot be used: {}", f.prefix, f.what, spec.topology,
                                     worker.status().message()));
    return worker.status();
  }
  std::string package = PluginPackage(plugin);
  return std::unique_ptr<Backend>(std::make_unique<ChipBackend>(
      std::move(spec), std::move(launch), std::move(worker).value(), options, std::move(package)));
}

void Register(Registry& registry) {
  registry.Register({"tpu", "tpu:GEN[:TOPOLOGY][,plugin=PATH]",
                     "compiles each unit with XLA's TPU compiler (libtpu) for a TPU slice, with no TPU present",
                     [](const std::string& arg, const BackendOptions& options) {
                       return CreateChipBackend(ChipKind::kTpu, arg, options);
                     }});
  registry.SetInstalled("tpu", [] { return DescribeInstalled(ChipKind::kTpu); });
  registry.Register({"gpu", "gpu:DEVICE[:TOPOLOGY][,plugin=PATH]",
                     "compiles each unit with XLA's NVIDIA GPU compiler (jax-cuda12-pjrt, ptxas) for a GPU target "
                     "config, with no GPU present",
                     [](const std::string& arg, const BackendOptions& options) {
                       return CreateChipBackend(ChipKind::kGpu, arg, options);
                     }});
  registry.SetInstalled("gpu", [] { return DescribeInstalled(ChipKind::kGpu); });
}

}  // namespace opprobe::compiler_probe::chip
