#include "analyzer/loaders/hlo_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "hlo/parser.h"
#include "hlo/proto_io.h"
#include "support/file_io.h"

namespace opprobe::analyzer {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsBinaryName(const std::string& name) { return EndsWith(name, ".pb"); }
bool IsTextName(const std::string& name) { return EndsWith(name, ".hlo") || EndsWith(name, ".txt"); }

// Whether text holds HLO: a line that starts with `HloModule ` or torch_xla's `## BEGIN_GRAPH`.
bool TextLooksLikeHlo(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.substr(0, 10) == "HloModule " || line.substr(0, 14) == "## BEGIN_GRAPH") return true;
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return false;
}

bool FileLooksLikeHlo(const fs::path& p) {
  const std::string name = p.filename().string();
  if (EndsWith(name, ".hlo") || IsBinaryName(name)) return true;
  if (!EndsWith(name, ".txt")) return false;
  auto head = io::ReadFileHead(p.string(), kHloSniffBytes);
  return head.ok() && TextLooksLikeHlo(*head);
}

Expected<std::vector<LoadedHloModule>> LoadFile(const std::string& path, const std::string& suffix) {
  OPPROBE_ASSIGN_OR_RETURN(io::FileBytes bytes, io::FileBytes::Open(path));
  const std::string_view data = bytes.view();
  std::vector<LoadedHloModule> out;
  const std::string name = fs::path(path).filename().string();
  if (EndsWith(name, ".gz"))
    return InvalidInput(fmt::format("{}: compressed HLO is not supported; gunzip it first", path));
  if (IsBinaryName(name) || (!IsTextName(name) && data.find('\0') != std::string_view::npos)) {
    OPPROBE_ASSIGN_OR_RETURN(auto module, hlo::ModuleFromProtoBytes(data, path));
    std::string n = module->name();
    out.push_back({n + suffix, std::move(module)});
    return out;
  }
  OPPROBE_ASSIGN_OR_RETURN(auto modules, hlo::ParseModules(data, path));
  const bool several = modules.size() > 1;
  for (size_t i = 0; i < modules.size(); ++i) {
    std::string n = modules[i]->name();
    if (several) n += fmt::format("#{}", i + 1);
    out.push_back({n + suffix, std::move(modules[i])});
  }
  return out;
}

}  // namespace

bool LooksLikeHloFile(const std::string& path, std::string_view head) {
  const std::string name = fs::path(path).filename().string();
  if (EndsWith(name, ".hlo") || IsBinaryName(name)) return true;
  return EndsWith(name, ".txt") && TextLooksLikeHlo(head.substr(0, kHloSniffBytes));
}

bool LooksLikeHlo(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) {
    for (const auto& entry : fs::directory_iterator(p, ec)) {
      std::error_code fec;
      if (entry.is_regular_file(fec) && FileLooksLikeHlo(entry.path())) return true;
    }
    return false;
  }
  if (!fs::is_regular_file(p, ec)) return false;
  return FileLooksLikeHlo(p);
}

Expected<std::vector<LoadedHloModule>> LoadHlo(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (!fs::exists(p, ec)) return InvalidInput(fmt::format("{}: no such file or directory", path));
  if (!fs::is_directory(p, ec)) return LoadFile(path, "");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(p, ec)) {
    std::error_code fec;
    if (entry.is_regular_file(fec) && FileLooksLikeHlo(entry.path())) files.push_back(entry.path());
  }
  if (ec) return InvalidInput(fmt::format("{}: cannot list directory: {}", path, ec.message()));
  if (files.empty())
    return InvalidInput(fmt::format("{}: no HLO files (*.hlo, *.hlo.pb, *.pb, *.txt with HLO text)", path));
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  std::vector<LoadedHloModule> out;
  for (const auto& f : files) {
    OPPROBE_ASSIGN_OR_RETURN(auto modules, LoadFile(f.string(), fmt::format(" ({})", f.filename().string())));
    for (auto& m : modules) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace opprobe::analyzer
