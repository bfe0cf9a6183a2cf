#include "hlo/stablehlo/stablehlo.h"

#include "hlo/stablehlo/convert.h"
#include "hlo/stablehlo/mlir_parser.h"
#include "hlo/verifier.h"

namespace opprobe::hlo {

Expected<std::unique_ptr<Module>> ParseStableHlo(std::string_view text, const std::string& source_name) {
  OPPROBE_ASSIGN_OR_RETURN(stablehlo::ParsedModule parsed, stablehlo::ParseMlir(text, source_name));
  OPPROBE_ASSIGN_OR_RETURN(auto module, stablehlo::ConvertToHlo(parsed));
  // The converted module is verified (hlo/verifier.h) as every loaded module is.
  OPPROBE_RETURN_IF_ERROR(VerifyModule(*module, source_name));
  return module;
}

bool IsMlirBytecode(std::string_view head) { return head.substr(0, 4) == std::string_view("ML\xEFR", 4); }

bool LooksLikeStableHlo(std::string_view head) {
  size_t p = 0;
  while (p < head.size()) {
    char c = head[p];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++p;
      continue;
    }
    std::string_view rest = head.substr(p);
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    if (rest.substr(0, 2) == "//" || (c == '#' && line.find(" = ") != std::string_view::npos)) {
      if (eol == std::string_view::npos) return false;
      p += eol + 1;
      continue;
    }
    for (std::string_view start : {"module", "builtin.module", "func.func"}) {
      if (rest.substr(0, start.size()) == start && rest.size() > start.size() &&
          (rest[start.size()] == ' ' || rest[start.size()] == '{' || rest[start.size()] == '\n' ||
           rest[start.size()] == '@'))
        return true;
    }
    return rest.substr(0, 16) == "\"builtin.module\"" || rest.substr(0, 11) == "\"func.func\"";
  }
  return false;
}

}  // namespace opprobe::hlo
