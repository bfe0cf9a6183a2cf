#include "compiler_probe/worker/python.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "compiler_probe/subprocess.h"
#include "compiler_probe/worker/run_backend.h"
#include "support/runtime_files.h"

#ifndef OPPROBE_SOURCE_ROOT
#define OPPROBE_SOURCE_ROOT ""
#endif

namespace opprobe::compiler_probe::worker {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Where the default Python would be, and which rule chose it (for messages).
std::pair<std::string, std::string> DefaultPython(const PythonEnvironment& env) {
  if (std::string p = Env(env.env_var); !p.empty()) return {p, env.env_var};
  auto [venv, rule] = VenvFolder(env.venv);
  return {(std::filesystem::path(venv) / "bin" / "python").string(), rule};
}

std::string InstallHint(const PythonEnvironment& env, const std::string& python) {
  std::filesystem::path venv = std::filesystem::path(python).parent_path().parent_path();
  return fmt::format(
      "create it with: /usr/bin/python3 -m venv {0} && {0}/bin/python -m pip install -r {1} (scripts/test does "
      "this), or name a Python that has it with {2} or {3}:{4},python=PATH",
      venv.string(), env.requirements, env.env_var, env.backend, env.platform);
}

}  // namespace

std::pair<std::string, std::string> VenvFolder(const std::string& venv) {
  if (std::string root = Env("OPPROBE_VENV_ROOT"); !root.empty())
    return {(std::filesystem::path(root) / venv).string(), "OPPROBE_VENV_ROOT"};
  return {(std::filesystem::path(OPPROBE_SOURCE_ROOT) / ".venv" / venv).string(), "the scripts' default environment"};
}

Expected<PythonWorkerSpec> ParsePythonWorkerSpec(const PythonEnvironment& env, const std::string& arg) {
  PythonWorkerSpec spec;
  size_t start = 0;
  bool first = true;
  while (true) {
    size_t comma = arg.find(',', start);
    std::string part = arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (first) {
      if (part != env.platform)
        return InvalidInput(
            fmt::format("{0} backend: unknown platform '{1}' in '{0}:{2}' (expected {0}:{3}[,python=PATH])",
                        env.backend, part, arg, env.platform));
      spec.platform = part;
      first = false;
    } else if (part.rfind("python=", 0) == 0 && part.size() > 7) {
      spec.python = part.substr(7);
    } else {
      return InvalidInput(
          fmt::format("{0} backend: unknown option '{1}' in '{0}:{2}' (expected python=PATH)", env.backend, part, arg));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return spec;
}

Expected<std::string> FindPython(const PythonEnvironment& env, const PythonWorkerSpec& spec) {
  std::string python = spec.python;
  std::string rule = "python=";
  if (python.empty()) std::tie(python, rule) = DefaultPython(env);
  if (auto p = FindProgram(python)) return *p;
  return Unavailable(fmt::format("{} backend: no Python at '{}' (from {}); {}", env.backend, python, rule,
                                 InstallHint(env, python.find('/') == std::string::npos ? "venv/bin/python" : python)));
}

Expected<std::string> FindWorkerScript() {
  namespace fs = std::filesystem;
  if (std::string env = Env("OPPROBE_XLA_WORKER"); !env.empty()) {
    if (fs::is_regular_file(env)) return env;
    return Unavailable(fmt::format("OPPROBE_XLA_WORKER='{}' is not a file", env));
  }
  const auto places = io::HelperPlaces(kWorkerScript);
  if (std::string found = io::FirstFile(places); !found.empty()) return found;
  return Unavailable(fmt::format("the worker script {} was not found at {} (set OPPROBE_XLA_WORKER)", kWorkerScript,
                                 io::DescribePlaces(places)));
}

Expected<std::unique_ptr<Backend>> CreatePythonWorkerBackend(const PythonEnvironment& env, const std::string& arg,
                                                             const BackendOptions& options) {
  OPPROBE_ASSIGN_OR_RETURN(PythonWorkerSpec spec, ParsePythonWorkerSpec(env, arg));
  OPPROBE_ASSIGN_OR_RETURN(std::string python, FindPython(env, spec));
  auto script = FindWorkerScript();
  if (!script.ok()) return Unavailable(fmt::format("{} backend: {}", env.backend, script.status().message()));
  RunBackendSpec w;
  w.id = fmt::format("{}:{}", env.backend, spec.platform);
  w.what = env.what;
  // -I: the worker ignores PYTHONPATH and the user's site folder, so only the environment's packages count.
  w.launch.launcher = {python, "-I", *script};
  w.launch.plugin_path = w.id;
  // How long the worker lets a compiler it runs itself (iree-compile) take: past the probe timeout, which ends the
  // whole worker first while opprobe is there; a backstop for when it is not.
  PluginOption compile_timeout;
  compile_timeout.name = "compile_timeout";
  compile_timeout.string_value = fmt::format("{:g}", options.probe_timeout_seconds + 30);
  w.launch.options.push_back(std::move(compile_timeout));
  w.version = [](const SessionInfo& info) { return info.platform_version; };
  w.compiler = [](const SessionInfo& info) { return info.platform_version; };
  return CreateRunBackend(std::move(w), options);
}

std::string DescribePythonInstallation(const PythonEnvironment& env) {
  auto python = FindPython(env, PythonWorkerSpec{});
  if (!python.ok()) return "unavailable: " + python.status().message();
  SubprocessOptions o;
  o.argv = {*python, "-I", "-c", env.version_code};
  o.timeout_seconds = 60;
  auto r = RunSubprocess(o);
  if (!r.ok() || !r->exited_ok())
    return fmt::format("unavailable: {} is not installed in {}; install it with: {} -m pip install -r {}", env.packages,
                       *python, *python, env.requirements);
  std::string v = r->stdout_tail;
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return fmt::format("{} ({})", SanitizeOutput(v), *python);
}

}  // namespace opprobe::compiler_probe::worker
