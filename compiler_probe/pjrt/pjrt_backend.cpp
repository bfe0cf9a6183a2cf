#include "compiler_probe/pjrt/pjrt_backend.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>

#include "compiler_probe/worker/run_backend.h"

namespace opprobe::compiler_probe::pjrt {

using worker::PluginOption;

Expected<PjrtSpec> ParsePjrtSpec(const std::string& arg) {
  PjrtSpec spec;
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = arg.find(',', start);
    parts.push_back(arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  spec.plugin_path = parts[0];
  if (spec.plugin_path.empty())
    return Unavailable("pjrt backend: missing plugin path (expected pjrt:PLUGIN.so[,key=value...])");
  for (size_t i = 1; i < parts.size(); ++i) {
    size_t eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidInput(fmt::format("pjrt backend: option '{}' in '{}' is not key=value", parts[i], arg));
    spec.options.push_back(PluginOption::Parse(parts[i].substr(0, eq), parts[i].substr(eq + 1)));
  }
  return spec;
}

Expected<std::unique_ptr<Backend>> CreatePjrtBackend(const std::string& arg, const BackendOptions& options) {
  OPPROBE_ASSIGN_OR_RETURN(PjrtSpec spec, ParsePjrtSpec(arg));
  struct stat st;
  if (::stat(spec.plugin_path.c_str(), &st) != 0)
    return Unavailable(fmt::format("pjrt backend: plugin '{}' not found", spec.plugin_path));
  if (!S_ISREG(st.st_mode))
    return Unavailable(fmt::format("pjrt backend: plugin '{}' is not a file", spec.plugin_path));
  std::string identity = fmt::format("{} size={} mtime={}", std::filesystem::path(spec.plugin_path).filename().string(),
                                     static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtime));
  worker::RunBackendSpec run;
  run.id = "pjrt:" + arg;
  run.what = "PJRT plugin";
  run.launch.plugin_path = spec.plugin_path;
  run.launch.options = spec.options;
  run.version = [identity](const worker::SessionInfo& info) {
    return fmt::format("{} {}; PJRT API {}.{}; plugin {}", info.platform_name, info.platform_version, info.api_major,
                       info.api_minor, identity);
  };
  run.compiler = [plugin = spec.plugin_path](const worker::SessionInfo& info) {
    const std::string platform =
        info.platform_name + (info.platform_version.empty() ? "" : " " + info.platform_version);
    return fmt::format("{} ({}, PJRT C API {}.{})", plugin, platform, info.api_major, info.api_minor);
  };
  return worker::CreateRunBackend(std::move(run), options);
}

void Register(Registry& registry) {
  registry.Register(
      {"pjrt", "pjrt:PLUGIN.so[,key=value...]",
       "compiles and runs each unit with a PJRT plugin and compares the results with interp",
       [](const std::string& arg, const BackendOptions& options) { return CreatePjrtBackend(arg, options); }});
}

}  // namespace opprobe::compiler_probe::pjrt
