#include "compiler_probe/cmd/cmd_backend.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "compiler_probe/subprocess.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/proto_io.h"
#include "support/file_io.h"
#include "support/temp_folder.h"

namespace opprobe::compiler_probe::cmd {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPlaceholders[] = {"{hlo_pb}", "{hlo_txt}", "{workdir}", "{fingerprint}"};

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

// The first line of `<program> --version` when it exits 0 within 5 s, else the program's size and mtime.
std::string ProgramVersion(const std::string& program_path) {
  SubprocessOptions o;
  o.argv = {program_path, "--version"};
  o.timeout_seconds = 5.0;
  o.max_output_bytes = 4096;
  auto r = RunSubprocess(o);
  if (r.ok() && r->exited_ok()) {
    std::string text = r->stdout_tail.empty() ? r->stderr_tail : r->stdout_tail;
    std::string first = SanitizeOutput(text.substr(0, text.find('\n')));
    if (!first.empty()) return first;
  }
  struct stat st;
  if (::stat(program_path.c_str(), &st) == 0)
    return fmt::format("size={} mtime={}", static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtime));
  return "unknown";
}

class CmdBackend : public Backend {
 public:
  // `own_base_dir`: the temporary folder `base_dir` is, removed with the backend (none: the user's --work-dir).
  CmdBackend(std::string tmpl, std::vector<std::string> words, std::string program_path, std::string version,
             std::string base_dir, std::optional<io::TempFolder> own_base_dir, double timeout)
      : template_(std::move(tmpl)),
        words_(std::move(words)),
        program_path_(std::move(program_path)),
        version_(std::move(version)),
        base_dir_(std::move(base_dir)),
        own_base_dir_(std::move(own_base_dir)),
        timeout_(timeout) {}

  std::string id() const override { return "cmd:" + template_; }
  std::string version() const override { return version_; }

  Verdict probe(const hlo::Module& unit) override {
    std::string fingerprint = hlo::Fingerprint(unit);
    std::string workdir = fmt::format("{}/{}-{}", base_dir_, fingerprint, counter_.fetch_add(1));
    std::error_code ec;
    // Not create_directories: a base folder the exit cleanup removed is not made again behind its back.
    fs::create_directory(workdir, ec);
    if (ec) return Verdict::Error(fmt::format("cannot create work directory '{}': {}", workdir, ec.message()));
    struct Cleanup {
      std::string dir;
      ~Cleanup() {
        std::error_code e;
        fs::remove_all(dir, e);
      }
    } cleanup{workdir};

    std::string txt_path = workdir + "/" + fingerprint + ".hlo";
    std::string pb_path = workdir + "/" + fingerprint + ".hlo.pb";
    // The unit's files live in a private folder removed after the probe: no need to reach the disk.
    if (Status st =
            io::WriteFileAtomically(txt_path, hlo::ToString(unit, hlo::PrintOptions::Long()), io::Durability::kNoSync);
        !st.ok())
      return Verdict::Error(st.message());
    auto bytes = hlo::ModuleToHloProtoBytes(unit);
    if (!bytes.ok()) {
      // A unit the proto writer cannot express cannot be handed to the compiler as a proto.
      if (needs_pb_) return Verdict::Error("cannot serialize the unit as HloProto: " + bytes.status().message());
    } else if (Status st = io::WriteFileAtomically(pb_path, *bytes, io::Durability::kNoSync); !st.ok()) {
      return Verdict::Error(st.message());
    }

    SubprocessOptions o;
    for (const auto& w : words_) {
      std::string a = ReplaceAll(w, "{hlo_pb}", pb_path);
      a = ReplaceAll(a, "{hlo_txt}", txt_path);
      a = ReplaceAll(a, "{workdir}", workdir);
      a = ReplaceAll(a, "{fingerprint}", fingerprint);
      o.argv.push_back(std::move(a));
    }
    o.argv[0] = program_path_;
    o.cwd = workdir;
    o.timeout_seconds = timeout_;
    auto r = RunSubprocess(o);
    if (!r.ok()) return Verdict::Error(r.status().message());
    const SubprocessResult& res = *r;
    // The work directory's name is random: hide it so that reasons (and reports) are deterministic.
    std::string out = ReplaceAll(res.stderr_tail.empty() ? res.stdout_tail : res.stderr_tail, workdir, "{workdir}");
    Verdict v;
    if (res.timed_out) {
      v = Verdict::Error(
          fmt::format("compiler timed out after {:.1f} s (probe timeout {:g} s)", res.wall_seconds, timeout_));
    } else if (res.signal != 0) {
      std::string last = LastLines(ReplaceAll(res.stderr_tail, workdir, "{workdir}"));
      v = Verdict::Error(fmt::format("compiler killed by signal {} ({}){}", res.signal, SignalName(res.signal),
                                     last.empty() ? "" : ": " + last));
    } else if (res.exit_code == 0) {
      v = Verdict::Supported();
    } else {
      std::string last = LastLines(out);
      v = Verdict::Unsupported(last.empty() ? fmt::format("compiler exit status {}", res.exit_code)
                                            : fmt::format("exit status {}: {}", res.exit_code, last));
    }
    v.seconds = res.wall_seconds;
    constexpr size_t kTail = 4096;
    std::string tail = out.size() > kTail ? out.substr(out.size() - kTail) : out;
    if (!v.supported()) v.output_tail = SanitizeOutput(tail);
    return v;
  }

  bool thread_safe() const override { return true; }

  void set_needs_pb(bool b) { needs_pb_ = b; }

 private:
  std::string template_;
  std::vector<std::string> words_;
  std::string program_path_;
  std::string version_;
  std::string base_dir_;
  std::optional<io::TempFolder> own_base_dir_;
  double timeout_;
  bool needs_pb_ = false;
  std::atomic<int64_t> counter_{0};
};

}  // namespace

Expected<std::vector<std::string>> SplitCommandLine(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(cur)), cur.clear(), in_word = false;
      ++i;
    } else if (c == '\'') {
      size_t end = text.find('\'', i + 1);
      if (end == std::string::npos)
        return InvalidInput(fmt::format("unterminated ' at column {} in '{}'", i + 1, text));
      cur.append(text, i + 1, end - i - 1);
      in_word = true;
      i = end + 1;
    } else if (c == '"') {
      size_t j = i + 1;
      bool closed = false;
      while (j < text.size()) {
        char d = text[j];
        if (d == '"') {
          closed = true;
          break;
        }
        if (d == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`\n").find(text[j + 1]) != std::string_view::npos) {
          if (text[j + 1] != '\n') cur.push_back(text[j + 1]);
          j += 2;
          continue;
        }
        cur.push_back(d);
        ++j;
      }
      if (!closed) return InvalidInput(fmt::format("unterminated \" at column {} in '{}'", i + 1, text));
      in_word = true;
      i = j + 1;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return InvalidInput(fmt::format("trailing backslash in '{}'", text));
      if (text[i + 1] != '\n') cur.push_back(text[i + 1]), in_word = true;
      i += 2;
    } else {
      cur.push_back(c);
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

Expected<std::unique_ptr<Backend>> CreateCmdBackend(const std::string& command_template,
                                                    const BackendOptions& options) {
  auto split = SplitCommandLine(command_template);
  if (!split.ok()) return Unavailable("cmd backend: " + split.status().message());
  std::vector<std::string> words = std::move(split).value();
  if (words.empty())
    return Unavailable("cmd backend: empty command template (expected e.g. 'cmd:mycc --check {hlo_txt}')");
  bool has_placeholder = false, needs_pb = false;
  for (const auto& w : words)
    for (const char* p : kPlaceholders)
      if (w.find(p) != std::string::npos) {
        has_placeholder = true;
        if (std::string(p) == "{hlo_pb}") needs_pb = true;
      }
  if (!has_placeholder)
    return Unavailable(fmt::format(
        "cmd backend: template '{}' has no placeholder; use {{hlo_pb}}, {{hlo_txt}}, {{workdir}} or {{fingerprint}} "
        "to pass the probe unit to the compiler",
        command_template));
  for (const char* p : kPlaceholders)
    if (words[0].find(p) != std::string::npos)
      return Unavailable(fmt::format("cmd backend: the program name '{}' may not contain a placeholder", words[0]));
  auto program = FindProgram(words[0]);
  if (!program) {
    if (words[0].find('/') == std::string::npos) {
      const char* path_env = std::getenv("PATH");
      return Unavailable(fmt::format("cmd backend: compiler '{}' not found on PATH ({}); nothing was probed", words[0],
                                     path_env && *path_env ? path_env : "PATH is empty"));
    }
    // A path: name where it resolves (relative to the working directory) and why it cannot be started.
    std::error_code fec;
    fs::path resolved = fs::absolute(words[0], fec).lexically_normal();
    std::string why = !fs::exists(resolved, fec)        ? "does not exist"
                      : fs::is_directory(resolved, fec) ? "is a directory"
                                                        : "is not executable";
    return Unavailable(fmt::format("cmd backend: compiler '{}' cannot be started: {} {}; nothing was probed", words[0],
                                   resolved.string(), why));
  }
  {
    // Probes run in their own work directories: a relative program path must not be looked up from there.
    std::error_code aec;
    fs::path abs = fs::absolute(*program, aec);
    if (!aec) program = abs.lexically_normal().string();
  }
  std::string version =
      fmt::format("template={} program={}", hlo::Fnv1a64Hex(command_template), ProgramVersion(*program));

  std::string base = options.work_dir;
  std::optional<io::TempFolder> own;
  std::error_code ec;
  if (base.empty()) {
    auto folder = io::TempFolder::Create("opprobe-cmd-");
    if (!folder.ok()) return Unavailable("cmd backend: " + folder.status().message());
    base = folder->path();
    own = std::move(folder).value();
  } else {
    fs::create_directories(base, ec);
    if (ec) return Unavailable(fmt::format("cmd backend: cannot create work directory '{}': {}", base, ec.message()));
  }
  base = fs::absolute(base, ec).string();
  auto backend = std::make_unique<CmdBackend>(command_template, std::move(words), *program, std::move(version), base,
                                              std::move(own), options.probe_timeout_seconds);
  backend->set_needs_pb(needs_pb);
  return std::unique_ptr<Backend>(std::move(backend));
}

void Register(Registry& registry) {
  registry.Register(
      {"cmd", "cmd:TEMPLATE",
       "runs an external compiler on each unit ({hlo_pb}, {hlo_txt}, {workdir}, {fingerprint}); exit 0 = supported",
       [](const std::string& arg, const BackendOptions& options) { return CreateCmdBackend(arg, options); }});
}

}  // namespace opprobe::compiler_probe::cmd
