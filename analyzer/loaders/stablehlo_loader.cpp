#include "analyzer/loaders/stablehlo_loader.h"

#include <fmt/format.h>

#include "hlo/stablehlo/stablehlo.h"
#include "support/file_io.h"

namespace opprobe::analyzer {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool LooksLikeStableHlo(const std::string& path, std::string_view head) {
  return EndsWith(path, ".mlir") || EndsWith(path, ".mlirbc") || hlo::IsMlirBytecode(head) ||
         hlo::LooksLikeStableHlo(head);
}

Expected<std::vector<LoadedHloModule>> LoadStableHlo(const std::string& path) {
  OPPROBE_ASSIGN_OR_RETURN(std::string text, io::ReadFile(path));
  if (hlo::IsMlirBytecode(text))
    return InvalidInput(
        fmt::format("{}: MLIR bytecode is not supported; write the module as text (for example "
                    "`stablehlo-translate --deserialize {}`, or `print(module)` in Python)",
                    path, path));
  OPPROBE_ASSIGN_OR_RETURN(auto module, hlo::ParseStableHlo(text, path));
  std::vector<LoadedHloModule> out;
  std::string name = module->name();
  out.push_back({std::move(name), std::move(module)});
  return out;
}

}  // namespace opprobe::analyzer
