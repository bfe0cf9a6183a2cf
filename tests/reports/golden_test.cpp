// The report goldens (tests/golden/reports/): every fixture of tests/reports/fixtures.h in every format at every
// verbosity (and the coloured text table once), one golden file per distinct output. manifest.tsv there says which
// golden holds each render; renders that give identical bytes share one file. The test fails when a render differs
// from its golden, when two renders that share a golden start to differ, when two goldens become identical, and
// when a golden file or manifest line is left over. An HTML golden holds only the report's data (the text of each
// {{slot}} of reports/html_template.html); the page around it is checked against that template once.
//
// Regenerate the goldens and the manifest (then review the diff; a second run changes nothing):
//   OPPROBE_UPDATE_GOLDEN=1 build/tests/reports_tests --gtest_filter='ReportGoldens.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "reports/report.h"
#include "tests/reports/fixtures.h"
#include "tests/reports/report_test_util.h"

namespace opprobe::reports {
namespace {

namespace fs = std::filesystem;
namespace t = testing;
using analyzer::AnalysisResult;

constexpr const char* kManifest = "manifest.tsv";

// --- The HTML page: reports/html_template.html with its {{slot}}s filled -------------------------------------

std::string TemplateText() { return t::ReadText(t::SourceDir() / "reports" / "html_template.html"); }

// The template cut at its slots: literal text, slot name, literal text, ... (a slot is `{{name}}`, name in a-z_).
struct Template {
  std::vector<std::string> literals;  // one more than slots
  std::vector<std::string> slots;
};

Template ParseTemplate(const std::string& text) {
  Template tmpl;
  std::string literal;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open + 2);
    std::string name = close == std::string::npos ? "" : text.substr(open + 2, close - open - 2);
    bool slot = !name.empty() &&
                std::all_of(name.begin(), name.end(), [](char c) { return c == '_' || (c >= 'a' && c <= 'z'); });
    if (!slot) {
      literal += text.substr(pos, open + 2 - pos);
      pos = open + 2;
      continue;
    }
    tmpl.literals.push_back(literal + text.substr(pos, open - pos));
    tmpl.slots.push_back(name);
    literal.clear();
    pos = close + 2;
  }
  tmpl.literals.push_back(literal + text.substr(std::min(pos, text.size())));
  return tmpl;
}

// The text of each slot when `page` is the template with its slots filled; nullopt when the page differs from the
// template anywhere else.
std::optional<std::vector<std::string>> SlotTexts(const Template& tmpl, const std::string& page) {
  const auto& lit = tmpl.literals;
  if (page.compare(0, lit[0].size(), lit[0]) != 0) return std::nullopt;
  std::vector<std::string> texts;
  size_t pos = lit[0].size();
  for (size_t i = 1; i < lit.size(); ++i) {
    size_t end;
    if (i + 1 == lit.size()) {  // the last literal ends the page
      if (page.size() < pos + lit[i].size() || page.compare(page.size() - lit[i].size(), lit[i].size(), lit[i]) != 0)
        return std::nullopt;
      end = page.size() - lit[i].size();
    } else {
      end = page.find(lit[i], pos);
      if (end == std::string::npos) return std::nullopt;
    }
    texts.push_back(page.substr(pos, end - pos));
    pos = end + lit[i].size();
  }
  return texts;
}

// What an HTML golden holds: each slot's text under a comment naming the slot.
std::string HtmlData(const Template& tmpl, const std::vector<std::string>& texts) {
  std::string out;
  for (size_t i = 0; i < texts.size(); ++i) out += "<!-- {{" + tmpl.slots[i] + "}} -->\n" + texts[i] + "\n";
  return out;
}

// --- Every render ----------------------------------------------------------------------------------------------

struct Variant {
  std::string name;  // the format's name; text-color: text with ANSI colours
  std::string ext;   // golden file extension
  bool color = false;
};

std::vector<Variant> Variants() {
  std::vector<Variant> out;
  for (const auto& f : Formats()) {
    std::string ext = f.name == "text" ? ".txt" : f.name == "github" ? ".github.txt" : std::string(f.extension);
    out.push_back({std::string(f.name), ext});
  }
  out.push_back({"text-color", ".color.txt", true});
  return out;
}

struct Rendered {
  std::string fixture;
  std::string variant;
  int verbosity = 0;
  std::string ext;
  std::string bytes;
  std::string Key() const { return fixture + "\t" + variant + "\t" + std::to_string(verbosity); }
};

// Every fixture in every format at verbosity 2, 1 and 0, in that order; the coloured text table of the first fixture
// at verbosity 2. HTML pages are reduced to their data (HtmlData).
std::vector<Rendered> RenderAll() {
  const Template tmpl = ParseTemplate(TemplateText());
  std::vector<Rendered> out;
  for (const auto& fixture : t::kNamedFixtures) {
    for (const auto& v : Variants()) {
      if (v.color && std::string(fixture.name) != t::kNamedFixtures[0].name) continue;
      for (int verbosity : {2, 1, 0}) {
        if (v.color && verbosity != 2) continue;
        RenderOptions o;
        o.verbosity = verbosity;
        o.color = v.color;
        o.cwd = fixture.cwd;
        const Format* format = FindFormat(v.color ? "text" : v.name);
        Rendered r{fixture.name, v.name, verbosity, v.ext, format->render(fixture.make(), o)};
        if (v.name == "html") {
          auto texts = SlotTexts(tmpl, r.bytes);
          EXPECT_TRUE(texts.has_value()) << r.Key() << ": the page is not reports/html_template.html around the data";
          r.bytes = texts ? HtmlData(tmpl, *texts) : r.bytes;
        }
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

// "v2", "v1-2", "v0-2", "v0+2": the verbosities a golden holds for one fixture and format.
std::string Levels(std::vector<int> levels) {
  std::sort(levels.begin(), levels.end());
  if (levels.size() == 1) return "v" + std::to_string(levels[0]);
  if (levels.back() - levels.front() + 1 == static_cast<int>(levels.size()))
    return "v" + std::to_string(levels.front()) + "-" + std::to_string(levels.back());
  std::string out = "v";
  for (size_t i = 0; i < levels.size(); ++i) out += (i ? "+" : "") + std::to_string(levels[i]);
  return out;
}

// --- The manifest ----------------------------------------------------------------------------------------------

using Manifest = std::map<std::string, std::string>;  // render key -> golden file name

const char* kManifestHeader =
    "# tests/golden/reports: the golden file of each rendered report (tests/reports/golden_test.cpp). Renders that\n"
    "# give identical bytes share one file. Written by the test; regenerate the goldens and this file with\n"
    "#   OPPROBE_UPDATE_GOLDEN=1 build/tests/reports_tests --gtest_filter='ReportGoldens.*'\n"
    "# fixture\tformat\tverbosity\tgolden\n";

// Groups renders by identical bytes (in render order) and names each group after its first render: fixture,
// the verbosities of that fixture and format in the group, extension.
Manifest Regroup(const std::vector<Rendered>& renders) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of_bytes;
  for (size_t i = 0; i < renders.size(); ++i) {
    auto [it, fresh] = group_of_bytes.emplace(renders[i].bytes, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  Manifest manifest;
  std::set<std::string> names;
  for (const auto& g : groups) {
    const Rendered& first = renders[g[0]];
    std::vector<int> levels;
    for (size_t i : g)
      if (renders[i].fixture == first.fixture && renders[i].variant == first.variant)
        levels.push_back(renders[i].verbosity);
    std::string name = first.fixture + "." + Levels(levels) + first.ext;
    EXPECT_TRUE(names.insert(name).second) << "two goldens would be named " << name;
    for (size_t i : g) manifest[renders[i].Key()] = name;
  }
  return manifest;
}

std::string ManifestText(const std::vector<Rendered>& renders, const Manifest& manifest) {
  std::string out = kManifestHeader;
  for (const auto& r : renders) out += r.Key() + "\t" + manifest.at(r.Key()) + "\n";
  return out;
}

Manifest ParseManifest(const std::string& text) {
  Manifest manifest;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.rfind('\t');
    if (tab == std::string::npos || std::count(line.begin(), line.end(), '\t') != 3) {
      ADD_FAILURE() << kManifest << ":" << n << ": expected fixture, format, verbosity and golden separated by tabs";
      continue;
    }
    if (!manifest.emplace(line.substr(0, tab), line.substr(tab + 1)).second)
      ADD_FAILURE() << kManifest << ":" << n << ": a second line for the same render";
  }
  return manifest;
}

std::string Shown(const std::string& key) {
  std::string out = key;
  std::replace(out.begin(), out.end(), '\t', ' ');
  return out;
}

// Checks `renders` against the manifest and the golden files; every way they disagree is one failure.
void CheckGoldens(const std::vector<Rendered>& renders) {
  const fs::path dir = t::GoldenDir();
  ASSERT_TRUE(fs::exists(dir / kManifest)) << dir / kManifest << " is missing; run with OPPROBE_UPDATE_GOLDEN=1";
  const Manifest manifest = ParseManifest(t::ReadText(dir / kManifest));
  std::map<std::string, std::vector<const Rendered*>> by_golden;
  std::set<std::string> rendered;
  for (const auto& r : renders) {
    rendered.insert(r.Key());
    auto it = manifest.find(r.Key());
    if (it == manifest.end()) {
      ADD_FAILURE() << Shown(r.Key()) << " has no golden in " << kManifest << " (OPPROBE_UPDATE_GOLDEN=1 adds it)";
      continue;
    }
    by_golden[it->second].push_back(&r);
  }
  for (const auto& [key, golden] : manifest)
    if (!rendered.count(key)) ADD_FAILURE() << kManifest << " lists " << Shown(key) << ", which is no longer rendered";

  for (const auto& [golden, members] : by_golden) {
    const Rendered& first = *members[0];
    for (const Rendered* r : members)
      if (r->bytes != first.bytes)
        ADD_FAILURE() << Shown(r->Key()) << " and " << Shown(first.Key()) << " share " << golden
                      << " but now differ: each needs its own golden (OPPROBE_UPDATE_GOLDEN=1 splits them)";
    if (!fs::exists(dir / golden)) {
      ADD_FAILURE() << dir / golden << " is missing (OPPROBE_UPDATE_GOLDEN=1 writes it)";
      continue;
    }
    const std::string expected = t::ReadText(dir / golden);
    for (const Rendered* r : members)
      EXPECT_TRUE(r->bytes == expected) << "golden " << dir / golden << " differs from " << Shown(r->Key())
                                        << " (review, then OPPROBE_UPDATE_GOLDEN=1 rewrites it)\n--- actual ---\n"
                                        << r->bytes.substr(0, 4000);
  }
  // Distinct goldens hold distinct output.
  std::map<std::string, std::string> golden_of_bytes;
  for (const auto& [golden, members] : by_golden) {
    auto [it, fresh] = golden_of_bytes.emplace(members[0]->bytes, golden);
    if (!fresh)
      ADD_FAILURE() << it->second << " and " << golden
                    << " now hold identical output: they should be one golden (OPPROBE_UPDATE_GOLDEN=1 merges them)";
  }
  // Every file in the folder is the manifest or one of its goldens.
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name != kManifest && !by_golden.count(name))
      ADD_FAILURE() << e.path() << " is no render's golden (OPPROBE_UPDATE_GOLDEN=1 removes it)";
  }
}

// Rewrites the goldens and the manifest from `renders`, and removes the files no render uses any more.
void UpdateGoldens(const std::vector<Rendered>& renders) {
  const fs::path dir = t::GoldenDir();
  fs::create_directories(dir);
  const Manifest manifest = Regroup(renders);
  std::set<std::string> written;
  for (const auto& r : renders) {
    const std::string& golden = manifest.at(r.Key());
    if (written.insert(golden).second && t::ReadText(dir / golden) != r.bytes) t::WriteText(dir / golden, r.bytes);
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name != kManifest && !written.count(name)) fs::remove(e.path());
  }
  const std::string text = ManifestText(renders, manifest);
  if (t::ReadText(dir / kManifest) != text) t::WriteText(dir / kManifest, text);
}

TEST(ReportGoldens, OneGoldenPerDistinctOutput) {
  const std::vector<Rendered> renders = RenderAll();
  if (t::UpdateGolden()) UpdateGoldens(renders);
  CheckGoldens(renders);
}

// The page around the data is the template once: its slots are the title and the body, the data goldens hold
// neither the style sheet nor the script, and the data is escaped (a slot's name in the data stays text).
TEST(ReportGoldens, HtmlPageIsTheTemplateAroundTheData) {
  const std::string text = TemplateText();
  const Template tmpl = ParseTemplate(text);
  EXPECT_EQ(tmpl.slots, (std::vector<std::string>{"title", "body"}));
  EXPECT_NE(text.find("<style>"), std::string::npos);
  EXPECT_NE(text.find("<script>"), std::string::npos);
  for (const auto& r : RenderAll()) {
    if (r.variant != "html") continue;
    EXPECT_EQ(r.bytes.find("<style"), std::string::npos) << Shown(r.Key());
    EXPECT_EQ(r.bytes.find("<script"), std::string::npos) << Shown(r.Key());
  }
  AnalysisResult odd = t::AllSupported();
  odd.model = "{{body}}</title><script>";
  std::string page = RenderHtml(odd, RenderOptions{});
  auto texts = SlotTexts(tmpl, page);
  ASSERT_TRUE(texts.has_value()) << page.substr(0, 2000);
  EXPECT_EQ((*texts)[0].rfind("opprobe: {{body}}&lt;/title&gt;&lt;script&gt; on ", 0), 0u) << (*texts)[0];
  EXPECT_NE((*texts)[1].find("<code>{{body}}&lt;/title&gt;&lt;script&gt;</code>"), std::string::npos) << (*texts)[1];
}

}  // namespace
}  // namespace opprobe::reports
