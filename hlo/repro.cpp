#include "hlo/repro.h"

#include <fmt/format.h>

#include <filesystem>

#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "support/file_io.h"

namespace opprobe::hlo {
namespace {

std::string SafeName(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

}  // namespace

Expected<std::string> WriteRepro(const Module& unit, const std::string& dir, const std::string& opcode,
                                 const std::string& fingerprint) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidInput(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  const std::string stem = (std::filesystem::path(dir) / (SafeName(opcode) + "_" + SafeName(fingerprint))).string();
  OPPROBE_ASSIGN_OR_RETURN(std::string bytes, ModuleToHloProtoBytes(unit));
  const std::string text = ToString(unit, PrintOptions::Long());
  OPPROBE_RETURN_IF_ERROR(io::WriteFileAtomically(stem + ".hlo.pb", bytes));
  OPPROBE_RETURN_IF_ERROR(io::WriteFileAtomically(stem + ".hlo", text));
  return stem + ".hlo";
}

}  // namespace opprobe::hlo
