// `tpu:GEN[:TOPOLOGY]` and `gpu:DEVICE[:TOPOLOGY]`: every probe unit compiled by the chip's own compiler on a
// machine without the chip (research/deviceless-compilers.md). libtpu (XLA's TPU compiler) and XLA's CUDA plugin
// (jax-cuda12-pjrt, with ptxas and libdevice from nvidia-cuda-nvcc-cu12) are PJRT C API plugins from PyPI; a worker
// process (compiler_probe/worker/process.h: the native worker program, opprobe-pjrt-worker, in topology mode) loads
// one once, describes the topology (PJRT_TopologyDescription_Create: a TPU generation's slice, or a GPU target config
// of gpu_targets/ and a host x device layout) and answers each unit with the client-less PJRT_Compile, so a compiler
// that crashes, aborts or hangs costs one `error` verdict.
//
// Verdicts: a compile is `supported` (on GPU, a unit compiled to a vendor library call says which, its availability
// at run time unchecked); a refusal is `unsupported` with the compiler's status code and first line; a refusal that
// can only be opprobe's doing (an INTERNAL status or a RET_CHECK on a module that passed opprobe's verifier, a unit
// needing more devices than the topology has) is an `error`, never a device verdict.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler_probe/backend.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/worker/protocol.h"
#include "support/status.h"

namespace opprobe::compiler_probe::chip {

// One TPU generation libtpu compiles for: its name in `tpu:GEN`, the topology used when none is given, and its
// HBM per chip as Google publishes it (what --fit compares with when the compiler gives no figure).
struct TpuGeneration {
  std::string_view name;              // `v5e`
  std::string_view default_topology;  // `v5e:2x4`
  std::string_view description;       // `TPU v5e (v5 lite)`
  int64_t device_memory_bytes = 0;    // HBM per PJRT device (a chip; a core on v2 and v3), as Google publishes it
};
const std::vector<TpuGeneration>& TpuGenerations();

// One GPU target config shipped in gpu_targets/ (embedded at build time).
struct GpuDevice {
  std::string name;           // `h100` (the file's stem up to its first '_')
  std::string file;           // `h100_sxm`
  std::string target_config;  // the text-format GpuTargetConfigProto
  std::string description;    // device_description_str: `NVIDIA H100 80GB HBM3`
  int compute_major = 0, compute_minor = 0;
  int64_t device_memory_bytes = 0;
};
const std::vector<GpuDevice>& GpuDevices();

enum class ChipKind { kTpu, kGpu };

// A parsed spec: `tpu:v5e`, `tpu:v5p:2x2x2`, `gpu:h100`, `gpu:a100:1x1x4`, each optionally followed by
// `,plugin=PATH`.
struct ChipSpec {
  ChipKind kind = ChipKind::kTpu;
  std::string target;    // `v5e` / `h100`
  std::string topology;  // `v5e:2x4` (TPU: the full name libtpu takes) / `1x1x8` (GPU: hosts x ... x devices)
  std::string plugin;    // from `plugin=PATH`; empty: the default lookup
  std::string id;        // `tpu:v5e` / `tpu:v5p:2x2x2` as the user names it (the default topology left out)
};
// What follows `tpu:` or `gpu:`; an unknown generation or device, a bad topology or option is a usage error
// (kInvalidInput) naming what there is.
Expected<ChipSpec> ParseChipSpec(ChipKind kind, const std::string& arg);

// The compiler plugin the spec uses: `plugin=PATH`, else $OPPROBE_LIBTPU / $OPPROBE_CUDA_PLUGIN, else the package
// in $OPPROBE_VENV_ROOT/{tpu,gpu}, else in the source tree's .venv/{tpu,gpu} (what scripts/test makes). Absent:
// kUnavailable (exit 3) with the command that installs it.
Expected<std::string> FindPlugin(const ChipSpec& spec);

// The PyPI package and version a plugin file comes from (`libtpu 0.0.42.1`), read from the `.dist-info` folder
// beside it; empty when there is none.
std::string PluginPackage(const std::string& plugin_path);

// A compiler's refusal of a program for want of memory (libtpu: "... the total memory required ... (243.99G) exceeds
// available HBM (15.75G)"): the bytes it says are required and available; nullopt for any other message.
struct MemoryRefusal {
  int64_t required_bytes = 0;
  int64_t available_bytes = 0;
  std::string what;  // what the required figure counts, in the compiler's words: `for HLO temporaries`; may be empty
};
std::optional<MemoryRefusal> ParseMemoryRefusal(std::string_view message);

// How the compile of `unit` went, as a verdict (see above). `what` names the compiler (`TPU compiler`).
Verdict JudgeCompile(ChipKind kind, std::string_view what, const hlo::Module& unit, const worker::RunResult& result);

Expected<std::unique_ptr<Backend>> CreateChipBackend(ChipKind kind, const std::string& arg,
                                                     const BackendOptions& options);

// Registers `tpu` and `gpu` (one line in compiler_probe/builtin.cpp).
void Register(Registry& registry);

}  // namespace opprobe::compiler_probe::chip
