// XLA's own HLO test modules (../shared/external/xla_hlo, see its SOURCES.md) through opprobe: every module
// is loaded as `opprobe analyze` loads it and analyzed with `rules:tpu`; a fixed sample (every Nth module)
// plus the modules named with --interp is also analyzed with the `interp` backend. Prints the figures, and
// with --markdown writes docs/hlo-compatibility.md (regenerate: scripts/hlo-compatibility).
//
// Modules the extraction left unusable are set apart by rules on their text, each listed in the document:
// templates whose placeholders XLA's test fills before parsing (`<<F8E4M3>>`, `TYPE[...]`, `f32[full_size,...]`),
// and texts that stop mid-module (the test assembles the module from several strings; opprobe's error is at
// the end of the text). The rules never set apart a module opprobe accepts (checked: a template that parses
// fails the run).
//
// Modules the manifest marks valid that XLA's own verifier rejects (their test parses them unverified) are counted
// apart when --verifier-rejects lists them (tests/hlo/corpus/xla_verifier_rejects.tsv, each with the XLA check).
//
// Exit status 1 when a figure crosses its limit: more valid modules rejected than --max-rejected-valid, fewer
// modules XLA expects to fail rejected than --min-rejected-invalid, a listed module opprobe accepts, a rejection
// without a `file:line:col:` place (--require-located), a module that takes more than --max-seconds of CPU
// (process CPU time, so a loaded machine does not fail it and worker threads count). A crash or an abort fails the
// run by itself.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/driver/driver.h"
#include "analyzer/loaders/hlo_loader.h"
#include "compiler_probe/registry.h"
#include "opprobe_version.h"

namespace {

namespace fs = std::filesystem;
using namespace opprobe;

struct Entry {
  std::string module;
  std::string source;
  std::string kind;  // cc | file
  std::string test;
  bool expect_invalid = false;
};

enum class Extraction { kModule, kTemplate, kIncomplete };

struct Outcome {
  bool loaded = false;
  std::string reason;   // the load error, without the file name
  bool located = true;  // the error names `file:line:col`
  Extraction extraction = Extraction::kModule;
  double seconds = 0;
  bool interp = false;
  int64_t interp_unsupported = 0, interp_errors = 0, interp_units = 0;
  std::vector<std::string> interp_error_reasons;
};

std::vector<std::string> Split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// `path:12:5: unknown opcode 'foo'` -> `unknown opcode 'foo'` (the reason, without file and place).
std::string ReasonOf(const std::string& message, const std::string& path) {
  std::string m = message;
  if (m.rfind(path, 0) == 0) m = m.substr(path.size());
  size_t i = 0;
  while (i < m.size() && (m[i] == ':' || m[i] == ' ' || (m[i] >= '0' && m[i] <= '9'))) ++i;
  return m.substr(i);
}

// `path:12:5: ...`: the message names a line and a column.
bool IsLocated(const std::string& message, const std::string& path) {
  static const std::regex kPlace(R"(^:[0-9]+:[0-9]+: )");
  return message.rfind(path, 0) == 0 && std::regex_search(message.substr(path.size()), kPlace);
}

// A reason with its quoted details dropped, to group modules that fail for the same cause.
std::string Category(const std::string& reason) {
  std::string out;
  bool in_quote = false;
  for (char c : reason) {
    if (c == '\'') {
      in_quote = !in_quote;
      out += in_quote ? "'…" : "'";
      continue;
    }
    if (!in_quote) out += (c >= '0' && c <= '9') ? 'N' : c;
  }
  std::string collapsed;
  for (char c : out)
    if (!(c == 'N' && !collapsed.empty() && collapsed.back() == 'N')) collapsed += c;
  return collapsed;
}

// Placeholders XLA's tests substitute before parsing: `<<F8E4M3>>`, an upper-case word as an element type
// (`TYPE[2]`), a word among a shape's dimensions (`f32[full_size,8]`, `s32[INDICES_BOUND]`), an upper-case
// word standing alone on a line, as replica_groups' value or in braces as a value (`OTHER_ATTRIBUTES`,
// `replica_groups=REPLICA_GROUPS`, `frontend_attributes={FRONTEND_ATTRIBUTES}`).
bool IsTemplate(const std::string& text) {
  static const std::regex kAngle(R"(<<[A-Za-z0-9_]+>>)");
  static const std::regex kUpperType(R"(\b[A-Z][A-Z0-9_]*\[)");
  static const std::regex kWordDim(R"(\b(pred|bf16|c64|c128|[suf][0-9][a-z0-9]*)\[[^\]\n]*[A-Za-z_][^\]\n]*\])");
  static const std::regex kUpperLine(R"((^|\n)[ \t]*[A-Z][A-Z0-9_]{3,}[ \t]*(\n|$))");
  static const std::regex kUpperGroups(R"(replica_groups=[A-Z]|=\{[A-Z][A-Z0-9_]{3,}\})");
  return std::regex_search(text, kAngle) || std::regex_search(text, kUpperType) || std::regex_search(text, kWordDim) ||
         std::regex_search(text, kUpperLine) || std::regex_search(text, kUpperGroups);
}

// The text stops mid-module: opprobe's error is about the end of the input.
bool IsIncomplete(const std::string& reason) {
  return reason == "module has no computations" || reason.find("got end of input") != std::string::npos ||
         reason.find("is not closed with '}'") != std::string::npos;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Options {
  std::string corpus;
  std::string markdown;
  size_t interp_every = 40;
  std::set<std::string> interp_named;
  int64_t max_rejected_valid = -1;
  double max_seconds = -1;
  bool require_located = false;
  int64_t min_rejected_invalid = -1;
  // Modules the manifest marks valid that XLA's own verifier rejects (their test does not verify): module -> the
  // XLA check (tests/hlo/corpus/xla_verifier_rejects.tsv).
  std::map<std::string, std::string> verifier_rejects;
};

// `name<TAB>why` lines; `#` comments and blank lines skipped. A relative path is the source tree's.
bool ReadVerifierRejects(std::string path, std::map<std::string, std::string>& out) {
  if (!path.empty() && path[0] != '/') path = std::string(OPPROBE_SOURCE_DIR) + "/" + path;
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    if (tab == std::string::npos) return false;
    out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  opt.corpus = std::string(OPPROBE_SOURCE_DIR) + "/../shared/external/xla_hlo";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--corpus") opt.corpus = next();
    else if (a == "--markdown") opt.markdown = next();
    else if (a == "--interp-every") opt.interp_every = std::stoul(next());
    else if (a == "--interp") opt.interp_named.insert(next());
    else if (a == "--max-rejected-valid") opt.max_rejected_valid = std::stoll(next());
    else if (a == "--max-seconds") opt.max_seconds = std::stod(next());
    else if (a == "--require-located") opt.require_located = true;
    else if (a == "--min-rejected-invalid") opt.min_rejected_invalid = std::stoll(next());
    else if (a == "--verifier-rejects") {
      std::string file = next();
      if (!ReadVerifierRejects(file, opt.verifier_rejects)) {
        std::cerr << file << ": cannot read (lines of module<TAB>reason)\n";
        return 2;
      }
    } else {
      std::cerr
          << "usage: xla_corpus_check [--corpus DIR] [--markdown OUT.md] [--interp-every N] [--interp MODULE]...\n"
             "                        [--max-rejected-valid N] [--min-rejected-invalid N] [--max-seconds S]\n"
             "                        [--require-located] [--verifier-rejects FILE]\n";
      return 2;
    }
  }
  std::ifstream manifest(opt.corpus + "/MANIFEST.tsv");
  if (!manifest) {
    std::cerr << opt.corpus << "/MANIFEST.tsv: cannot open (the corpus comes with ../shared)\n";
    return 2;
  }
  std::vector<Entry> entries;
  std::string line;
  std::getline(manifest, line);  // header
  while (std::getline(manifest, line)) {
    auto f = Split(line, '\t');
    if (f.size() < 6) continue;
    entries.push_back({f[0], f[1], f[3], f[4], f[5] == "1"});
  }
  auto registry = compiler_probe::Registry::Builtin();
  auto rules = registry.Create("rules:tpu");
  auto interp = registry.Create("interp");
  if (!rules.ok() || !interp.ok()) {
    std::cerr << "cannot create the backends\n";
    return 2;
  }
  std::vector<Outcome> out(entries.size());
  std::vector<std::pair<double, std::string>> slowest;
  std::vector<std::string> templates_accepted;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    Outcome& o = out[k];
    const std::string path = opt.corpus + "/" + e.module;
    const std::clock_t start = std::clock();
    auto loaded = analyzer::LoadHlo(path);
    if (!loaded.ok()) {
      o.reason = ReasonOf(loaded.status().message(), path);
      o.located = IsLocated(loaded.status().message(), path);
    } else {
      o.loaded = true;
      std::vector<analyzer::NamedModule> named;
      for (const auto& m : *loaded) named.push_back({m.name, m.module.get()});
      analyzer::AnalyzeHlo(e.module, named, **rules, {});
      if (opt.interp_named.count(e.module) || (opt.interp_every && k % opt.interp_every == 0)) {
        o.interp = true;
        auto r = analyzer::AnalyzeHlo(e.module, named, **interp, {});
        for (const auto& p : r.probes) {
          ++o.interp_units;
          if (p.verdict.kind == compiler_probe::Verdict::Kind::kUnsupported) ++o.interp_unsupported;
          if (p.verdict.kind == compiler_probe::Verdict::Kind::kError) {
            ++o.interp_errors;
            o.interp_error_reasons.push_back(p.verdict.reason);
          }
        }
      }
    }
    o.seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
    slowest.push_back({o.seconds, e.module});
    if (IsTemplate(ReadText(path))) {
      o.extraction = Extraction::kTemplate;
      if (o.loaded) templates_accepted.push_back(e.module);
    } else if (!o.loaded && IsIncomplete(o.reason)) {
      o.extraction = Extraction::kIncomplete;
    }
  }
  std::sort(slowest.rbegin(), slowest.rend());

  // Figures per group (kind x expect_invalid), over the modules the extraction left whole.
  struct Group {
    int64_t modules = 0, accepted = 0;
  };
  std::map<std::string, Group> groups;
  std::map<std::string, std::vector<size_t>> rejected_valid_by_category;
  std::vector<size_t> accepted_invalid, templates, incomplete, unlocated, verifier_rejects, verifier_rejects_accepted;
  int64_t valid = 0, rejected_valid = 0, invalid = 0, rejected_invalid = 0, interp_modules = 0, interp_units = 0,
          interp_unsupported = 0, interp_errors = 0;
  std::vector<size_t> interp_with_errors;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    const Outcome& o = out[k];
    if (!o.loaded && !o.located) unlocated.push_back(k);
    if (o.interp) {
      ++interp_modules;
      interp_units += o.interp_units;
      interp_unsupported += o.interp_unsupported;
      interp_errors += o.interp_errors;
      if (o.interp_errors) interp_with_errors.push_back(k);
    }
    if (o.extraction == Extraction::kTemplate) {
      templates.push_back(k);
      continue;
    }
    if (o.extraction == Extraction::kIncomplete) {
      incomplete.push_back(k);
      continue;
    }
    const bool unverified = !e.expect_invalid && opt.verifier_rejects.count(e.module);
    Group& g = groups[fmt::format("{} | {}", e.kind == "file" ? "`.hlo` files" : "C++ tests",
                                  e.expect_invalid ? "XLA expects a failure"
                                  : unverified     ? "valid per the manifest, XLA's verifier rejects"
                                                   : "valid")];
    if (unverified) {
      ++g.modules;
      g.accepted += o.loaded;
      verifier_rejects.push_back(k);
      if (o.loaded) verifier_rejects_accepted.push_back(k);
      continue;
    }
    ++g.modules;
    g.accepted += o.loaded;
    if (e.expect_invalid) {
      ++invalid;
      if (o.loaded) accepted_invalid.push_back(k);
      else ++rejected_invalid;
    } else {
      ++valid;
      if (!o.loaded) {
        ++rejected_valid;
        rejected_valid_by_category[Category(o.reason)].push_back(k);
      }
    }
  }
  const double pct = valid ? 100.0 * static_cast<double>(rejected_valid) / static_cast<double>(valid) : 0;
  std::cout << fmt::format(
      "{} modules: {} templates and {} incomplete texts set apart; {} valid, {} rejected ({:.2f}%); "
      "{} expected invalid, {} rejected, {} accepted; {} marked valid that XLA's verifier "
      "rejects, {} accepted\n",
      entries.size(), templates.size(), incomplete.size(), valid, rejected_valid, pct, invalid, rejected_invalid,
      accepted_invalid.size(), verifier_rejects.size(), verifier_rejects_accepted.size());
  std::cout << fmt::format("interp: {} modules, {} probe units, {} unsupported, {} errors\n", interp_modules,
                           interp_units, interp_unsupported, interp_errors);
  for (size_t k : interp_with_errors)
    for (const auto& r : out[k].interp_error_reasons)
      std::cout << fmt::format("  interp error in {}: {}\n", entries[k].module, r);
  std::cout << "slowest modules (load + rules:tpu [+ interp], CPU seconds):\n";
  for (size_t i = 0; i < std::min<size_t>(10, slowest.size()); ++i)
    std::cout << fmt::format("  {:8.2f} s  {}\n", slowest[i].first, slowest[i].second);
  std::vector<std::pair<std::string, std::vector<size_t>>> cats(rejected_valid_by_category.begin(),
                                                                rejected_valid_by_category.end());
  std::stable_sort(cats.begin(), cats.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::cout << "rejected valid modules by reason:\n";
  for (const auto& [cat, ks] : cats) std::cout << fmt::format("  {:5}  {}\n", ks.size(), cat);
  for (size_t k : unlocated)
    std::cout << fmt::format("  rejection without a place: {}: {}\n", entries[k].module, out[k].reason);

  if (!opt.markdown.empty()) {
    std::ostringstream md;
    auto item = [&](size_t k, const std::string& what) {
      return fmt::format("- `{}` ({}{}): {}\n", entries[k].module, entries[k].source,
                         entries[k].test.empty() ? "" : ", " + entries[k].test, what);
    };
    md << "# HLO compatibility: XLA's own test modules\n\n"
          "<!-- Generated by scripts/hlo-compatibility (tests/hlo/corpus/xla_corpus_check.cpp); do not edit. -->\n\n"
       << fmt::format(
              "opprobe's HLO parser held against the {} HLO modules extracted from openxla/xla's `.hlo` files "
              "and C++ tests (`../shared/external/xla_hlo/`, described in its SOURCES.md). Each module is "
              "loaded as `opprobe analyze` loads it and analyzed with `--backend rules:tpu`; ",
              entries.size())
       << (opt.interp_every ? fmt::format("every {}th module and ", opt.interp_every) : std::string())
       << "the modules named with --interp (the ones issue #16 names) also with `--backend interp`. The ctest entry "
          "`hlo_xla_corpus` runs the same check (arguments in tests/hlo/corpus/xla_corpus_args) and fails when more "
          "valid modules are rejected than its ceiling"
       << (opt.max_rejected_valid >= 0 ? fmt::format(" ({})", opt.max_rejected_valid) : std::string())
       << ", when a rejection does not name its line and column, when a module takes more than "
       << (opt.max_seconds > 0 ? fmt::format("{} s", opt.max_seconds) : std::string("its time limit"))
       << " of CPU (load, rules:tpu and, where sampled, the interpreter)"
       << ", when fewer modules XLA expects to fail are rejected than its floor"
       << (opt.min_rejected_invalid >= 0 ? fmt::format(" ({})", opt.min_rejected_invalid) : std::string())
       << ", when opprobe accepts a module listed as one XLA's own verifier rejects, when the interpreter gives an "
          "error verdict, or when a module crashes the process. Every module is verified as it is loaded "
          "(hlo/verifier.h: XLA's HloVerifier checks and shape inference per opcode).\n\n"
          "`expect_invalid` is the manifest's heuristic flag: XLA's test expects *some* check to fail (parser, "
          "verifier, shape inference or a pass), so a module with it set is not necessarily unparseable.\n\n"
          "## Figures\n\n"
       << fmt::format(
              "Set apart before counting (listed at the end): {} templates whose placeholders XLA's test fills "
              "before parsing, and {} texts that stop mid-module (the test assembles the module from several "
              "strings).\n\n",
              templates.size(), incomplete.size())
       << "| source | XLA's expectation | modules | accepted | rejected |\n|---|---|---:|---:|---:|\n";
    for (const auto& [name, g] : groups)
      md << fmt::format("| {} | {} | {} | {} |\n", name, g.modules, g.accepted, g.modules - g.accepted);
    const int64_t all_valid = valid + static_cast<int64_t>(verifier_rejects.size());
    const int64_t all_rejected =
        rejected_valid + static_cast<int64_t>(verifier_rejects.size() - verifier_rejects_accepted.size());
    md << fmt::format(
        "\nValid modules rejected: **{} of {} ({:.2f}%)**, each listed below with its reason. Modules "
        "XLA's tests expect to fail: {} of {} rejected by opprobe (every message names its line and column), "
        "{} accepted, each listed below as a known difference. Modules the manifest marks valid that XLA's "
        "own verifier rejects (their test never verifies them): {}, {} rejected by opprobe's verifier, "
        "each listed below with the XLA check. Counted with the valid ones, as the manifest counts them: "
        "**{} of {} ({:.2f}%)** rejected.\n\n",
        rejected_valid, valid, pct, rejected_invalid, invalid, accepted_invalid.size(), verifier_rejects.size(),
        verifier_rejects.size() - verifier_rejects_accepted.size(), all_rejected, all_valid,
        all_valid ? 100.0 * static_cast<double>(all_rejected) / static_cast<double>(all_valid) : 0.0);
    md << fmt::format(
        "Interpreter: {} modules, {} probe units, {} unsupported verdicts, {} errors. Slowest module: "
        "{:.1f} s of CPU (`{}`).\n\n",
        interp_modules, interp_units, interp_unsupported, interp_errors, slowest.empty() ? 0.0 : slowest[0].first,
        slowest.empty() ? "" : slowest[0].second);
    md << "## Valid modules opprobe rejects\n\n"
          "Reasons are opprobe's messages, grouped with quoted text shown as `'…'` and numbers as `N`.\n\n";
    if (cats.empty()) md << "None.\n\n";
    for (const auto& [cat, ks] : cats) {
      md << fmt::format("### {} ({})\n\n", cat, ks.size());
      for (size_t k : ks) md << item(k, out[k].reason);
      md << "\n";
    }
    md << "## Marked valid, rejected by XLA's own verifier\n\n"
          "The manifest marks these valid because their test expects no failure, but the test parses them without "
          "verifying (`ParseAndReturnUnverifiedModule`, or a tool that does not verify) and XLA's HloVerifier would "
          "reject them; opprobe verifies every module it loads (hlo/verifier.h). The list is "
          "tests/hlo/corpus/xla_verifier_rejects.tsv; the check fails when opprobe accepts one of them.\n\n";
    if (verifier_rejects.empty()) md << "None.\n";
    for (size_t k : verifier_rejects)
      md << item(k, fmt::format("XLA: {}; opprobe: {}", opt.verifier_rejects.at(entries[k].module),
                                out[k].loaded ? "accepted" : out[k].reason));
    md << "\n## Known differences: modules XLA's tests expect to fail that opprobe accepts\n\n"
          "opprobe parses HLO and verifies what XLA's HloVerifier and shape inference check of each instruction "
          "(hlo/verifier.h), but none of XLA's passes or backends. A module here parses and verifies, and XLA's test "
          "expects a later check (a pass, a backend, a verifier option opprobe does not take) to reject it. The "
          "manifest's test name says which.\n\n";
    for (size_t k : accepted_invalid) md << item(k, "accepted");
    md << "\n## Set apart: templates\n\n"
          "The text holds a placeholder XLA's test substitutes before parsing (`<<F8E4M3>>`, `TYPE[...]`, a word among "
          "a shape's dimensions, an upper-case word standing for attributes). opprobe rejects each, correctly.\n\n";
    for (size_t k : templates) md << item(k, out[k].loaded ? "accepted" : out[k].reason);
    md << "\n## Set apart: texts that stop mid-module\n\n"
          "The test builds the module from several strings (or a proto text around it); the extracted piece ends "
          "before the module does.\n\n";
    for (size_t k : incomplete) md << item(k, out[k].reason);
    std::ofstream f(opt.markdown, std::ios::binary | std::ios::trunc);
    f << md.str();
    if (!f) {
      std::cerr << opt.markdown << ": cannot write\n";
      return 2;
    }
  }
  bool fail = false;
  if (opt.max_rejected_valid >= 0 && rejected_valid > opt.max_rejected_valid) {
    std::cerr << fmt::format("regression: {} valid modules rejected, ceiling {}\n", rejected_valid,
                             opt.max_rejected_valid);
    fail = true;
  }
  if (opt.min_rejected_invalid >= 0 && rejected_invalid < opt.min_rejected_invalid) {
    std::cerr << fmt::format("regression: {} modules XLA expects to fail rejected, floor {}\n", rejected_invalid,
                             opt.min_rejected_invalid);
    fail = true;
  }
  if (!verifier_rejects_accepted.empty()) {
    std::cerr << fmt::format("{} modules listed as rejected by XLA's verifier are accepted (first: {})\n",
                             verifier_rejects_accepted.size(), entries[verifier_rejects_accepted[0]].module);
    fail = true;
  }
  if (!templates_accepted.empty()) {
    std::cerr << fmt::format("the template rule sets apart {} modules opprobe accepts (first: {})\n",
                             templates_accepted.size(), templates_accepted[0]);
    fail = true;
  }
  if (opt.require_located && !unlocated.empty()) {
    std::cerr << fmt::format("{} rejections name no line and column (first: {})\n", unlocated.size(),
                             entries[unlocated[0]].module);
    fail = true;
  }
  if (opt.max_seconds > 0 && !slowest.empty() && slowest[0].first > opt.max_seconds) {
    std::cerr << fmt::format("{} took {:.1f} s, limit {} s\n", slowest[0].second, slowest[0].first, opt.max_seconds);
    fail = true;
  }
  if (interp_errors > 0) {
    std::cerr << fmt::format("the interpreter gave {} error verdicts\n", interp_errors);
    fail = true;
  }
  return fail ? 1 : 0;
}
