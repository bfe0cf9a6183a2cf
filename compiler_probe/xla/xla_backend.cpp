#include "compiler_probe/xla/xla_backend.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "compiler_probe/pjrt/pjrt_backend.h"
#include "compiler_probe/subprocess.h"

#ifndef OPPROBE_SOURCE_ROOT
#define OPPROBE_SOURCE_ROOT ""
#endif

namespace opprobe::compiler_probe::xla {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Where the default Python would be, and which rule chose it (for messages).
std::pair<std::string, std::string> DefaultPython() {
  if (std::string p = Env("OPPROBE_XLA_PYTHON"); !p.empty()) return {p, "OPPROBE_XLA_PYTHON"};
  if (std::string root = Env("OPPROBE_VENV_ROOT"); !root.empty())
    return {(std::filesystem::path(root) / "xla" / "bin" / "python").string(), "OPPROBE_VENV_ROOT"};
  return {(std::filesystem::path(OPPROBE_SOURCE_ROOT) / ".venv" / "xla" / "bin" / "python").string(),
          "the scripts' default environment"};
}

std::string InstallHint(const std::string& python) {
  std::filesystem::path venv = std::filesystem::path(python).parent_path().parent_path();
  return fmt::format(
      "create it with: /usr/bin/python3 -m venv {0} && {0}/bin/python -m pip install -r requirements/xla.txt "
      "(scripts/test does this), or name a Python that has jaxlib with OPPROBE_XLA_PYTHON or xla:cpu,python=PATH",
      venv.string());
}

}  // namespace

Expected<XlaSpec> ParseXlaSpec(const std::string& arg) {
  XlaSpec spec;
  size_t start = 0;
  bool first = true;
  while (true) {
    size_t comma = arg.find(',', start);
    std::string part = arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (first) {
      if (part != "cpu")
        return InvalidInput(fmt::format("xla backend: unknown platform '{}' in 'xla:{}' (expected xla:cpu[,python=PATH])",
                                      part, arg));
      spec.platform = part;
      first = false;
    } else if (part.rfind("python=", 0) == 0 && part.size() > 7) {
      spec.python = part.substr(7);
    } else {
      return InvalidInput(fmt::format("xla backend: unknown option '{}' in 'xla:{}' (expected python=PATH)", part, arg));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return spec;
}

Expected<std::string> FindPython(const XlaSpec& spec) {
  std::string python = spec.python;
  std::string rule = "python=";
  if (python.empty()) std::tie(python, rule) = DefaultPython();
  if (auto p = FindProgram(python)) return *p;
  return Unavailable(fmt::format("xla backend: no Python at '{}' (from {}); {}", python, rule,
                                        InstallHint(python.find('/') == std::string::npos ? "venv/bin/python" : python)));
}

Expected<std::string> FindWorkerScript() {
  namespace fs = std::filesystem;
  if (std::string env = Env("OPPROBE_XLA_WORKER"); !env.empty()) {
    if (fs::is_regular_file(env)) return env;
    return Unavailable(fmt::format("xla backend: OPPROBE_XLA_WORKER='{}' is not a file", env));
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const auto& dir : {self.parent_path(), self.parent_path().parent_path()})
      if (fs::is_regular_file(dir / kWorkerScript)) return (dir / kWorkerScript).string();
  fs::path source = fs::path(OPPROBE_SOURCE_ROOT) / "compiler_probe" / "xla" / "xla_worker.py";
  if (fs::is_regular_file(source)) return source.string();
  return Unavailable(fmt::format(
      "xla backend: the worker script {} was not found next to this program (set OPPROBE_XLA_WORKER)", kWorkerScript));
}

Expected<std::unique_ptr<Backend>> CreateXlaBackend(const std::string& arg, const BackendOptions& options) {
  OPPROBE_ASSIGN_OR_RETURN(XlaSpec spec, ParseXlaSpec(arg));
  OPPROBE_ASSIGN_OR_RETURN(std::string python, FindPython(spec));
  OPPROBE_ASSIGN_OR_RETURN(std::string script, FindWorkerScript());
  pjrt::WorkerBackendSpec w;
  w.id = "xla:" + spec.platform;
  w.what = "XLA";
  // -I: the worker ignores PYTHONPATH and the user's site folder, so only the environment's jaxlib counts.
  w.launcher = {python, "-I", script};
  w.target = spec.platform;
  return pjrt::CreateWorkerBackend(std::move(w), options);
}

std::string DescribeInstallation() {
  auto python = FindPython(XlaSpec{});
  if (!python.ok()) return "unavailable: " + python.status().message();
  SubprocessOptions o;
  o.argv = {*python, "-I", "-c", "import jaxlib.version as v; print(v.__version__)"};
  o.timeout_seconds = 60;
  auto r = RunSubprocess(o);
  if (!r.ok() || !r->exited_ok())
    return fmt::format("unavailable: jaxlib is not installed in {}; install it with: {} -m pip install -r "
                       "requirements/xla.txt",
                       *python, *python);
  std::string v = r->stdout_tail;
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return fmt::format("jaxlib {} ({})", SanitizeOutput(v), *python);
}

void Register(Registry& registry) {
  registry.Register({"xla", "xla:cpu[,python=PATH]",
                     "compiles and runs each unit with XLA's CPU compiler (jaxlib) and compares the results with interp",
                     [](const std::string& arg, const BackendOptions& options) { return CreateXlaBackend(arg, options); }});
  registry.SetInstalled("xla", DescribeInstallation);
}

}  // namespace opprobe::compiler_probe::xla
