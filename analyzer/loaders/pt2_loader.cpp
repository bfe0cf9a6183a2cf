// Container handling for torch.export saved programs: which zip members hold ExportedProgram JSON
// (research/formats.md A.1-A.4). Only those members are read, each through ZipReader's size caps.
#include "analyzer/loaders/pt2_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "analyzer/loaders/pt2_program.h"
#include "analyzer/loaders/zip_reader.h"
#include "support/file_io.h"

namespace opprobe::analyzer {

namespace {

std::string BaseName(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Stem(const std::string& name) {
  std::string base = BaseName(name);
  auto dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

struct ProgramEntry {
  const ZipReader::Entry* entry;
  std::string program;
};

// ETRecord members that are not programs.
bool IsEtRecordNonProgram(const std::string& name) {
  static const char* kOther[] = {"ETRECORD_V0",       "debug_handle_map",      "delegate_map",   "etrecord_version",
                                 "reference_outputs", "representative_inputs", "export_graph_id"};
  for (const char* o : kOther)
    if (name == o) return true;
  return name.ends_with("_state_dict") || name.ends_with("_constants") || name.ends_with("_example_inputs") ||
         name.ends_with(".pt") || name.ends_with(".bin");
}

Expected<std::vector<ProgramEntry>> FindPrograms(const ZipReader& zip, const std::string& path) {
  std::vector<ProgramEntry> programs;
  const auto& entries = zip.entries();
  if (entries.empty()) return InvalidInput(fmt::format("{}: zip archive has no entries (no program)", path));

  // Legacy ExportedProgram zip (torch 2.1-2.7).
  if (const auto* e = zip.Find("serialized_exported_program.json")) {
    programs.push_back({e, "model"});
    return programs;
  }

  // ExecuTorch ETRecord.
  if (zip.Find("ETRECORD_V0")) {
    for (const auto& e : entries) {
      if (e.name.ends_with("/") || IsEtRecordNonProgram(e.name)) continue;
      if (e.name.starts_with("aten_dialect_output/") || e.name == "edge_dialect_exported_program" ||
          e.name == "et_dialect_exported_program" || e.name.starts_with("extra_export_modules/") ||
          e.name == "exported_program" || e.name.starts_with("edge_dialect_exported_program/"))
        programs.push_back({&e, e.name});
    }
    if (programs.empty())
      return InvalidInput(
          fmt::format("{}: ETRecord without a program (no aten_dialect_output/<method> or "
                      "edge_dialect_exported_program entry)",
                      path));
    return programs;
  }

  // PT2 archive (torch 2.8+): every entry under one root folder.
  const std::string& first = entries.front().name;
  auto slash = first.find('/');
  if (slash != std::string::npos) {
    std::string root = first.substr(0, slash + 1);
    if (const auto* fmt_entry = zip.Find(root + "archive_format")) {
      ZipReader::Limits small;
      small.max_entry_size = 64;
      OPPROBE_ASSIGN_OR_RETURN(std::string format, zip.Read(*fmt_entry, small));
      while (!format.empty() && (format.back() == '\n' || format.back() == '\r')) format.pop_back();
      if (format != "pt2")
        return InvalidInput(
            fmt::format("{}: entry '{}': archive format '{}' is not 'pt2'", path, fmt_entry->name, format));
      const std::string models = root + "models/";
      for (const auto& e : entries) {
        if (!e.name.starts_with(models) || !e.name.ends_with(".json")) continue;
        std::string rel = e.name.substr(models.size());
        if (rel.find('/') != std::string::npos) continue;
        programs.push_back({&e, Stem(rel)});
      }
      if (programs.empty())  // an AOTInductor package of torch 2.8+: compiled code only
        for (const auto& e : entries)
          if (e.name.starts_with(root + "data/aotinductor/"))
            return InvalidInput(
                fmt::format("{}: an AOTInductor package (compiled code in '{}data/aotinductor/', no '{}<name>.json' "
                            "program): nothing to analyze; save the torch.export program itself (torch.export.save)",
                            path, root, models));
      if (programs.empty())
        return InvalidInput(fmt::format("{}: PT2 archive without a program (no '{}<name>.json' entry)", path, models));
      return programs;
    }
    // A legacy zip that was repacked under a folder.
    if (const auto* e = zip.Find(root + "serialized_exported_program.json")) {
      programs.push_back({e, "model"});
      return programs;
    }
  }
  // An AOTInductor package (torch._inductor.aoti_compile_and_package before torch 2.8): compiled C++ and a
  // shared library under data/aotinductor/, no ExportedProgram to read.
  for (const auto& e : entries)
    if (e.name.starts_with("data/aotinductor/") || e.name.find("/data/aotinductor/") != std::string::npos)
      return InvalidInput(fmt::format(
          "{}: an AOTInductor package (compiled code in '{}', no ExportedProgram JSON): nothing to analyze; "
          "save the torch.export program itself (torch.export.save)",
          path, e.name.substr(0, e.name.find("aotinductor/") + std::string_view("aotinductor/").size())));
  return InvalidInput(fmt::format(
      "{}: zip archive without a program (no serialized_exported_program.json, <root>/models/<name>.json, or "
      "ETRecord entries)",
      path));
}

}  // namespace

Expected<Graph> LoadPt2(const std::string& path) {
  Graph graph;
  graph.model = BaseName(path);
  graph.input_kind = "pt2";

  auto head = io::ReadFileHead(path, 16);
  if (!head.ok()) return head.status();
  std::string_view magic(*head);
  if (magic.starts_with("PYTORCH1"))
    return InvalidInput(
        fmt::format("{}: legacy pre-zip PyTorch format (PYTORCH1) is not a torch.export program", path));
  size_t first = magic.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && magic[first] == '{') {
    // A bare ExportedProgram JSON (e.g. a member extracted from an archive).
    OPPROBE_ASSIGN_OR_RETURN(std::string text, io::ReadFile(path, ZipReader::Limits{}.max_entry_size));
    std::string program = Stem(path);
    graph.programs.push_back(program);
    OPPROBE_RETURN_IF_ERROR(DecodeExportedProgram(text, program, path, graph));
    return graph;
  }
  OPPROBE_ASSIGN_OR_RETURN(auto zip, ZipReader::Open(path));
  OPPROBE_ASSIGN_OR_RETURN(auto programs, FindPrograms(*zip, path));
  for (const auto& p : programs) {
    OPPROBE_ASSIGN_OR_RETURN(std::string text, zip->Read(*p.entry));
    graph.programs.push_back(p.program);
    OPPROBE_RETURN_IF_ERROR(
        DecodeExportedProgram(text, p.program, fmt::format("{}: entry '{}'", path, p.entry->name), graph));
  }
  return graph;
}

}  // namespace opprobe::analyzer
