#include "compiler_probe/xla/xla_backend.h"

namespace opprobe::compiler_probe::xla {

const worker::PythonEnvironment kXlaEnvironment = {"xla",
                                                   "cpu",
                                                   "XLA",
                                                   "jaxlib",
                                                   "OPPROBE_XLA_PYTHON",
                                                   "xla",
                                                   "requirements/xla.txt",
                                                   "import jaxlib.version as v; print('jaxlib', v.__version__)"};

Expected<XlaSpec> ParseXlaSpec(const std::string& arg) { return worker::ParsePythonWorkerSpec(kXlaEnvironment, arg); }

Expected<std::unique_ptr<Backend>> CreateXlaBackend(const std::string& arg, const BackendOptions& options) {
  return worker::CreatePythonWorkerBackend(kXlaEnvironment, arg, options);
}

std::string DescribeInstallation() { return worker::DescribePythonInstallation(kXlaEnvironment); }

void Register(Registry& registry) {
  registry.Register(
      {"xla", "xla:cpu[,python=PATH]",
       "compiles and runs each unit with XLA's CPU compiler (jaxlib) and compares the results with interp",
       [](const std::string& arg, const BackendOptions& options) { return CreateXlaBackend(arg, options); }});
  registry.SetInstalled("xla", DescribeInstallation);
}

}  // namespace opprobe::compiler_probe::xla
