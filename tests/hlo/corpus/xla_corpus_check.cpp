// XLA's own HLO test modules (../shared/external/xla_hlo, see its SOURCES.md) through opprobe: every module
// is loaded as `opprobe analyze` loads it and analyzed with `rules:tpu`; a fixed sample (every Nth module)
// plus the modules named with --interp is also analyzed with the `interp` backend. Prints the figures, and
// with --markdown writes docs/hlo-compatibility.md (regenerate: scripts/hlo-compatibility).
//
// Exit status 1 when a figure crosses its ceiling (--max-rejected-valid): the corpus test (ctest
// hlo_xla_corpus) fails on a regression. A crash or abort fails it by itself.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
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
using Clock = std::chrono::steady_clock;

struct Entry {
  std::string module;
  std::string source;
  std::string kind;  // cc | file
  bool expect_invalid = false;
};

struct Outcome {
  bool loaded = false;
  std::string reason;  // the load error, without the file name
  double seconds = 0;
  bool interp = false;
  int64_t interp_unsupported = 0, interp_errors = 0, interp_units = 0;
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

struct Options {
  std::string corpus;
  std::string markdown;
  size_t interp_every = 40;
  std::set<std::string> interp_named;
  int64_t max_rejected_valid = -1;
  int64_t max_accepted_invalid = -1;
};

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
    else if (a == "--max-accepted-invalid") opt.max_accepted_invalid = std::stoll(next());
    else {
      std::cerr << "usage: xla_corpus_check [--corpus DIR] [--markdown OUT.md] [--interp-every N] [--interp MODULE]...\n"
                   "                        [--max-rejected-valid N] [--max-accepted-invalid N]\n";
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
    entries.push_back({f[0], f[1], f[3], f[5] == "1"});
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
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    Outcome& o = out[k];
    const std::string path = opt.corpus + "/" + e.module;
    auto start = Clock::now();
    auto loaded = analyzer::LoadHlo(path);
    if (!loaded.ok()) {
      o.reason = ReasonOf(loaded.status().message(), path);
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
          if (p.verdict.kind == compiler_probe::Verdict::Kind::kError) ++o.interp_errors;
        }
      }
    }
    o.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    slowest.push_back({o.seconds, e.module});
  }
  std::sort(slowest.rbegin(), slowest.rend());

  // Figures per group (kind x expect_invalid).
  struct Group {
    int64_t modules = 0, accepted = 0;
  };
  std::map<std::string, Group> groups;
  std::map<std::string, std::vector<size_t>> rejected_valid_by_category;
  std::vector<size_t> accepted_invalid;
  int64_t valid = 0, rejected_valid = 0, invalid = 0, interp_modules = 0, interp_units = 0, interp_unsupported = 0,
          interp_errors = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    const Outcome& o = out[k];
    Group& g = groups[fmt::format("{} | {}", e.kind == "file" ? "`.hlo` files" : "C++ tests",
                                  e.expect_invalid ? "XLA expects a failure" : "valid")];
    ++g.modules;
    g.accepted += o.loaded;
    if (e.expect_invalid) {
      ++invalid;
      if (o.loaded) accepted_invalid.push_back(k);
    } else {
      ++valid;
      if (!o.loaded) {
        ++rejected_valid;
        rejected_valid_by_category[Category(o.reason)].push_back(k);
      }
    }
    if (o.interp) {
      ++interp_modules;
      interp_units += o.interp_units;
      interp_unsupported += o.interp_unsupported;
      interp_errors += o.interp_errors;
    }
  }
  const double pct = valid ? 100.0 * static_cast<double>(rejected_valid) / static_cast<double>(valid) : 0;
  std::cout << fmt::format("{} modules: {} valid, {} rejected ({:.2f}%); {} expected invalid, {} accepted\n",
                           entries.size(), valid, rejected_valid, pct, invalid, accepted_invalid.size());
  std::cout << fmt::format("interp: {} modules, {} probe units, {} unsupported, {} errors\n", interp_modules,
                           interp_units, interp_unsupported, interp_errors);
  std::cout << "slowest modules (load + rules:tpu [+ interp]):\n";
  for (size_t i = 0; i < std::min<size_t>(10, slowest.size()); ++i)
    std::cout << fmt::format("  {:8.2f} s  {}\n", slowest[i].first, slowest[i].second);
  std::vector<std::pair<std::string, std::vector<size_t>>> cats(rejected_valid_by_category.begin(),
                                                                rejected_valid_by_category.end());
  std::stable_sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::cout << "rejected valid modules by reason:\n";
  for (const auto& [cat, ks] : cats) std::cout << fmt::format("  {:5}  {}\n", ks.size(), cat);

  if (!opt.markdown.empty()) {
    std::ostringstream md;
    md << "# HLO compatibility: XLA's own test modules\n\n"
          "<!-- Generated by scripts/hlo-compatibility (tests/hlo/corpus/xla_corpus_check.cpp); do not edit. -->\n\n"
          "opprobe's HLO parser held against the 8,195 HLO modules extracted from openxla/xla's `.hlo` files and C++ "
          "tests (`../shared/external/xla_hlo/`, described in its SOURCES.md). Each module is loaded as "
          "`opprobe analyze` loads it and analyzed with `--backend rules:tpu`; "
       << (opt.interp_every ? fmt::format("every {}th module and ", opt.interp_every) : std::string())
       << "the modules named with --interp (the ones issue #16 names) also with `--backend interp`. The ctest entry "
          "`hlo_xla_corpus` runs the same check and fails when more valid modules are rejected than the ceiling "
          "it is given, or when a module crashes the process.\n\n"
          "`expect_invalid` is the manifest's heuristic flag: XLA's test expects *some* check to fail (parser, "
          "verifier, shape inference or a pass), so a module with it set is not necessarily unparseable.\n\n"
          "## Figures\n\n| source | XLA's expectation | modules | accepted | rejected |\n|---|---|---:|---:|---:|\n";
    for (const auto& [name, g] : groups)
      md << fmt::format("| {} | {} | {} | {} |\n", name, g.modules, g.accepted, g.modules - g.accepted);
    md << fmt::format("\nValid modules rejected: **{} of {} ({:.2f}%)**. Modules XLA expects to fail that opprobe "
                      "accepts: {} of {} (opprobe has no verifier yet, so most of these are known differences: "
                      "they parse, and XLA rejects them later).\n\n",
                      rejected_valid, valid, pct, accepted_invalid.size(), invalid);
    md << fmt::format("Interpreter on the sample: {} modules, {} probe units, {} unsupported verdicts, {} errors.\n\n",
                      interp_modules, interp_units, interp_unsupported, interp_errors);
    md << "## Valid modules opprobe rejects, by reason\n\n"
          "Reasons are opprobe's messages with quoted text shown as `'…'` and numbers as `N`. What they come to: "
          "test templates whose placeholders were not filled (`TYPE`, `DTYPE1`, `<<F8E4M3>>`, `<<ABType>>`: "
          "not HLO, rejected correctly); element types opprobe does not model yet (`f8e8m0fnu`, `f4e2m1fn`, "
          "`u2`, `f8e4m3`); layouts written before the opcode (`f32[2,2] {1,0} add(...)`); unbounded dynamic "
          "dimensions (`?`); and a few dozen one-off forms, each listed below.\n\n";
    for (const auto& [cat, ks] : cats) {
      md << fmt::format("### {} ({})\n\n", cat, ks.size());
      for (size_t k : ks) md << fmt::format("- `{}` ({}): {}\n", entries[k].module, entries[k].source, out[k].reason);
      md << "\n";
    }
    std::ofstream f(opt.markdown, std::ios::binary | std::ios::trunc);
    f << md.str();
    if (!f) {
      std::cerr << opt.markdown << ": cannot write\n";
      return 2;
    }
  }
  bool fail = false;
  if (opt.max_rejected_valid >= 0 && rejected_valid > opt.max_rejected_valid) {
    std::cerr << fmt::format("regression: {} valid modules rejected, ceiling {}\n", rejected_valid, opt.max_rejected_valid);
    fail = true;
  }
  if (opt.max_accepted_invalid >= 0 && static_cast<int64_t>(accepted_invalid.size()) > opt.max_accepted_invalid) {
    std::cerr << fmt::format("regression: {} modules XLA rejects are accepted, ceiling {}\n", accepted_invalid.size(),
                             opt.max_accepted_invalid);
    fail = true;
  }
  return fail ? 1 : 0;
}
