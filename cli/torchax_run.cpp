#include "cli/torchax_run.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/capture_run.h"
#include "compiler_probe/subprocess.h"

namespace opprobe::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kInstall =
    "install it into that Python environment: pip install torchax==0.0.13 jax==0.10.2 jaxlib==0.10.2 "
    "(requirements/torchax.txt), or analyze with opprobe's own lowering (drop --lowering)";

}  // namespace

Status CheckTorchax(const std::string& python) {
  compiler_probe::SubprocessOptions o;
  o.argv = {python, "-c", "import torchax"};
  o.timeout_seconds = 300;
  auto r = compiler_probe::RunSubprocess(o);
  if (!r.ok()) return InvalidInput(fmt::format("--lowering torchax: cannot run the Python interpreter {}", python));
  if (!r->exited_ok())
    return Unavailable(fmt::format("--lowering torchax: the Python interpreter {} cannot import torchax ({}); {}",
                                   python, compiler_probe::FirstLine(compiler_probe::LastLines(r->stderr_tail, 1)),
                                   kInstall));
  return Status::Ok();
}

std::string TorchaxPlatformFor(const std::string& backend_id) {
  auto has = [&](const char* word) { return backend_id.find(word) != std::string::npos; };
  if (has("tpu")) return "tpu";
  if (has("gpu") || has("cuda")) return "cuda";
  return "cpu";
}

Expected<analyzer::ExternalLowerings> LowerWithTorchax(const std::string& python, const std::string& trace,
                                                       const std::string& out_json, const std::string& platform) {
  OPPROBE_ASSIGN_OR_RETURN(std::string shim, FindCaptureShim());
  compiler_probe::SubprocessOptions o;
  // python CAPTURE_PACKAGE torchax-lower ... (capture/opprobe_capture/torchax_lower.py)
  o.argv = {python, shim, "torchax-lower", "--platform", platform, trace, out_json};
  o.timeout_seconds = 0;  // a model's every distinct call: as long as JAX takes to lower them
  auto r = compiler_probe::RunSubprocess(o);
  if (!r.ok()) return r.status();
  if (!r->exited_ok())
    return InvalidInput(fmt::format("--lowering torchax: lowering the calls with torchax failed ({}): {}",
                                    r->Describe(), compiler_probe::LastLines(r->stderr_tail)));
  return analyzer::ReadTorchaxLowerings(out_json);
}

}  // namespace opprobe::cli
