#include "compiler_probe/iree/iree_backend.h"

namespace opprobe::compiler_probe::iree {

const worker::PythonEnvironment kIreeEnvironment = {
    "iree",
    "llvm-cpu",
    "IREE",
    "iree-base-compiler, iree-base-runtime and jaxlib",
    "OPPROBE_IREE_PYTHON",
    "iree",
    "requirements/xla.txt -r requirements/iree.txt",
    "from importlib.metadata import version as v; import jaxlib, iree.compiler, iree.runtime; "
    "print('iree-base-compiler', v('iree-base-compiler') + ', iree-base-runtime', v('iree-base-runtime') + ', jaxlib', "
    "v('jaxlib'))"};

Expected<std::unique_ptr<Backend>> CreateIreeBackend(const std::string& arg, const BackendOptions& options) {
  return worker::CreatePythonWorkerBackend(kIreeEnvironment, arg, options);
}

std::string DescribeInstallation() { return worker::DescribePythonInstallation(kIreeEnvironment); }

void Register(Registry& registry) {
  registry.Register(
      {"iree", "iree:llvm-cpu[,python=PATH]",
       "compiles each unit with IREE (iree-compile, llvm-cpu), runs it with IREE's runtime and compares the "
       "results with interp",
       [](const std::string& arg, const BackendOptions& options) { return CreateIreeBackend(arg, options); }});
  registry.SetInstalled("iree", DescribeInstallation);
}

}  // namespace opprobe::compiler_probe::iree
