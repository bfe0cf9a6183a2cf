#include "hlo/repro.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hlo/printer.h"
#include "hlo/proto_io.h"

namespace opprobe::hlo {
namespace {

std::string SafeName(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return InvalidInput(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return InvalidInput(fmt::format("{}: write failed", tmp));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return InvalidInput(fmt::format("{}: cannot rename into place: {}", path, ec.message()));
  }
  return Status::Ok();
}

Expected<std::string> WriteRepro(const Module& unit, const std::string& dir, const std::string& opcode,
                                 const std::string& fingerprint) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidInput(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  const std::string stem = (std::filesystem::path(dir) / (SafeName(opcode) + "_" + SafeName(fingerprint))).string();
  OPPROBE_ASSIGN_OR_RETURN(std::string bytes, ModuleToHloProtoBytes(unit));
  const std::string text = ToString(unit, PrintOptions::Long());
  OPPROBE_RETURN_IF_ERROR(WriteFileAtomically(stem + ".hlo.pb", bytes));
  OPPROBE_RETURN_IF_ERROR(WriteFileAtomically(stem + ".hlo", text));
  return stem + ".hlo";
}

}  // namespace opprobe::hlo
