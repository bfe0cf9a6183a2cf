// Every report format from hand-built AnalysisResults (tests/reports/fixtures.h): the JSON report against
// schemas/report.schema.json, SARIF against the SARIF 2.1.0 schema subset, JUnit against junit-10.xsd (xmllint),
// and format-specific escaping. The golden files are tests/reports/golden_test.cpp's.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "reports/report.h"
#include "reports/view.h"
#include "tests/reports/fixtures.h"
#include "tests/reports/json_schema.h"
#include "tests/reports/report_test_util.h"

namespace opprobe::reports {
namespace {

using analyzer::AnalysisResult;
namespace t = testing;

using Fixture = t::NamedFixture;
const auto& kFixtures = t::kNamedFixtures;

std::string Render(const Fixture& f, std::string_view format, int verbosity, bool color = false) {
  RenderOptions o;
  o.verbosity = verbosity;
  o.color = color;
  o.cwd = f.cwd;
  const Format* fmt = FindFormat(format);
  EXPECT_NE(fmt, nullptr) << format;
  return fmt == nullptr ? "" : fmt->render(f.make(), o);
}

// The CLI looks up the working directory only for the formats that say they use it: the others must not depend on it.
TEST(Formats, OnlyTheFormatsThatSayTheyUseTheWorkingDirectoryDependOnIt) {
  std::set<std::string> dependent;
  for (const auto& f : kFixtures) {
    for (const Format& format : Formats()) {
      for (int verbosity : {0, 2}) {
        RenderOptions here, elsewhere;
        here.verbosity = elsewhere.verbosity = verbosity;
        here.cwd = f.cwd;
        elsewhere.cwd = "";
        const AnalysisResult r = f.make();
        if (format.render(r, here) != format.render(r, elsewhere)) dependent.insert(std::string(format.name));
      }
    }
  }
  for (const Format& format : Formats()) {
    if (!format.uses_cwd) { EXPECT_EQ(dependent.count(std::string(format.name)), 0u) << format.name; }
  }
  EXPECT_TRUE(dependent.count("sarif"));  // (the fixtures do exercise it)
}

TEST(Formats, RegistryListsEveryFormat) {
  std::vector<std::string> names;
  for (const auto& f : Formats()) names.push_back(std::string(f.name));
  EXPECT_EQ(names, (std::vector<std::string>{"json", "text", "markdown", "junit", "sarif", "github", "html"}));
  EXPECT_EQ(FindFormat("pdf"), nullptr);
}

TEST(Formats, EveryFormatIsDeterministic) {
  for (const auto& f : kFixtures)
    for (const auto& format : Formats()) EXPECT_EQ(Render(f, format.name, 0), Render(f, format.name, 0)) << format.name;
}

nlohmann::json LoadSchema(const std::string& relative) {
  return nlohmann::json::parse(t::ReadText(t::SourceDir() / relative));
}

TEST(JsonReport, ValidatesAgainstReportSchema) {
  opprobe::testing::JsonSchemaValidator v(LoadSchema("schemas/report.schema.json"));
  for (const auto& f : kFixtures) {
    for (int verbosity : {2, 1, 0}) {
      auto doc = nlohmann::json::parse(Render(f, "json", verbosity));
      auto errors = v.Validate(doc);
      EXPECT_TRUE(errors.empty()) << f.name << " v" << verbosity << ": " << (errors.empty() ? "" : errors.front());
    }
  }
}

TEST(JsonReport, SchemaRejectsWhatItShould) {
  opprobe::testing::JsonSchemaValidator v(LoadSchema("schemas/report.schema.json"));
  auto good = nlohmann::json::parse(Render(kFixtures[0], "json", 1));
  ASSERT_TRUE(v.Validate(good).empty());
  auto bad = good;
  bad["support_percentage"] = "60%";
  EXPECT_FALSE(v.Validate(bad).empty());
  bad = good;
  bad["schema_version"] = 2;
  EXPECT_FALSE(v.Validate(bad).empty());
  bad = good;
  bad["unsupported_operators"]["aten"][0].erase("kind");
  EXPECT_FALSE(v.Validate(bad).empty());
  bad = good;
  bad["surprise"] = 1;
  EXPECT_FALSE(v.Validate(bad).empty());
  bad = good;
  bad["supported_operators"]["aten"]["aten::add"] = "two";
  EXPECT_FALSE(v.Validate(bad).empty());
}

TEST(JsonSchemaValidator, RefusesKeywordsItDoesNotCheck) {
  opprobe::testing::JsonSchemaValidator v(nlohmann::json::parse(R"({"type":"object","patternProperties":{}})"));
  auto errors = v.Validate(nlohmann::json::object());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("patternProperties"), std::string::npos);
}

TEST(Sarif, ValidatesAgainstSarifSchemaAndPointsAtSourceLines) {
  opprobe::testing::JsonSchemaValidator v(LoadSchema("schemas/third_party/sarif-2.1.0-subset.schema.json"));
  for (const auto& f : kFixtures) {
    auto log = nlohmann::json::parse(Render(f, "sarif", 2));
    auto errors = v.Validate(log);
    EXPECT_TRUE(errors.empty()) << f.name << ": " << (errors.empty() ? "" : errors.front());
    // Every result's ruleIndex names the rule with its ruleId.
    const auto& run = log["runs"][0];
    for (const auto& r : run["results"]) {
      int idx = r["ruleIndex"];
      ASSERT_LT(idx, static_cast<int>(run["tool"]["driver"]["rules"].size()));
      EXPECT_EQ(run["tool"]["driver"]["rules"][idx]["id"], r["ruleId"]);
    }
  }
  auto log = nlohmann::json::parse(Render(kFixtures[1], "sarif", 2));
  const auto& results = log["runs"][0]["results"];
  auto find = [&](const std::string& op) {
    for (const auto& r : results)
      if (r["properties"]["aten_op"] == op) return r;
    return nlohmann::json();
  };
  // Under the working directory: relative to %SRCROOT%; outside it: an absolute file URI.
  auto cast = find("aten::_to_copy");
  const auto& loc = cast["locations"][0]["physicalLocation"];
  EXPECT_EQ(loc["artifactLocation"]["uri"], "model.py");
  EXPECT_EQ(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
  EXPECT_EQ(loc["region"]["startLine"], 40);
  EXPECT_EQ(cast["locations"][0]["logicalLocations"][0]["fullyQualifiedName"], "layer1.0.bn1");
  auto weird = find("aten::_weird_op");
  EXPECT_EQ(weird["ruleId"], "opprobe/no-lowering");
  EXPECT_EQ(weird["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "file:///opt/ext/custom_ops.py");
  EXPECT_EQ(find("aten::mm")["ruleId"], "opprobe/backend-error");
  EXPECT_EQ(log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"], "file:///home/user/proj/");
  // An op without a recorded place is still located (at the model) so code scanning accepts it.
  for (const auto& r : results) EXPECT_TRUE(r.contains("locations")) << r.dump();
}

TEST(Junit, ValidatesAgainstJunitXsd) {
  std::string xmllint = t::FindProgram("xmllint");
  if (xmllint.empty()) GTEST_SKIP() << "xmllint not installed (Debian package libxml2-utils); JUnit XSD check skipped";
  t::TempDir dir;
  for (const auto& f : kFixtures) {
    for (int verbosity : {2, 0}) {
      std::string path = dir / (std::string(f.name) + ".xml");
      t::WriteText(path, Render(f, "junit", verbosity));
      auto r = t::RunProgram(
          {xmllint, "--noout", "--schema", (t::SourceDir() / "schemas/third_party/junit-10.xsd").string(), path});
      EXPECT_EQ(r.exit_code, 0) << f.name << ": " << r.out << r.err;
    }
  }
}

TEST(Junit, OneCasePerOpAndSignatureWithReasons) {
  std::string xml = Render(kFixtures[0], "junit", 2);
  // fft (c64), add, mul (c64), mul (f32): 4 cases, 2 failing.
  EXPECT_NE(xml.find("tests=\"4\" failures=\"2\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"aten::mul(f32[4], c64[4])\""), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"element type c64 is not supported: Neuron has no complex types\" "
                     "type=\"unsupported\">"),
            std::string::npos);
  std::string sink = Render(kFixtures[1], "junit", 2);
  EXPECT_NE(sink.find("<error message=\"neuronx-cc crashed (signal 11)\" type=\"backend-error\">"), std::string::npos);
  EXPECT_NE(sink.find("type=\"lowering\""), std::string::npos);
  // Markup in reasons is escaped.
  EXPECT_NE(sink.find("&lt;f64&gt; &amp; &quot;emulated&quot;"), std::string::npos);
}

TEST(Github, AnnotationsAtSourceLinesWithEscaping) {
  std::string out = Render(kFixtures[1], "github", 2);
  std::regex line_re(R"(^::(error|warning|notice)( [a-z]+=[^:]*)?::.*$)");
  std::istringstream in(out);
  std::string line;
  int errors = 0;
  while (std::getline(in, line)) {
    EXPECT_TRUE(std::regex_match(line, line_re)) << line;
    errors += line.rfind("::error", 0) == 0;
  }
  EXPECT_EQ(errors, 3);  // one per unsupported call site (_to_copy merged, mm, nonzero); _weird_op is opprobe's gap
  EXPECT_NE(
      out.find("::error file=model.py,line=40,title=opprobe%3A aten%3A%3A_to_copy unsupported on cmd%3Aneuronx-cc::"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("| 50%25 slower"), std::string::npos) << "% in messages is escaped";
  EXPECT_NE(
      out.find("::warning file=/opt/ext/custom_ops.py,line=5,title=opprobe cannot analyze aten%3A%3A_weird_op yet::"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("%0Arejected HLO instructions:"), std::string::npos) << "newlines are escaped";
}

// Counts unescaped `|` in a Markdown table row.
int Pipes(const std::string& line) {
  int n = 0;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++n;
  return n;
}

TEST(Markdown, TablesStayRectangularWhateverTheText) {
  for (const auto& f : kFixtures) {
    std::istringstream in(Render(f, "markdown", 0));
    std::string line;
    int columns = -1;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] != '|') {
        columns = -1;
        continue;
      }
      if (columns < 0) columns = Pipes(line);
      EXPECT_EQ(Pipes(line), columns) << f.name << ": " << line;
    }
  }
  std::string md = Render(kFixtures[1], "markdown", 2);
  EXPECT_NE(md.find("\\| 50% slower"), std::string::npos);
  EXPECT_NE(md.find("&lt;f64&gt;"), std::string::npos);
}

TEST(Text, ColourOnlyWhenAsked) {
  std::string plain = Render(kFixtures[0], "text", 2, false);
  std::string colored = Render(kFixtures[0], "text", 2, true);
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  EXPECT_NE(colored.find("\033[1;31m42.86%\033[0m"), std::string::npos);
  // Stripping the escapes gives the plain table back.
  EXPECT_EQ(std::regex_replace(colored, std::regex("\033\\[[0-9;]*m"), ""), plain);
}

TEST(Text, ControlCharactersAreShownEscaped) {
  AnalysisResult r = t::NeuronUnsupported();
  r.probes[2].verdict.reason = "bad\033[2Jthing";
  RenderOptions o;
  std::string text = RenderText(r, o);
  EXPECT_EQ(text.find('\033'), std::string::npos);
  EXPECT_NE(text.find("bad\\x1b[2Jthing"), std::string::npos);
}

TEST(Html, SelfContainedAndEscaped) {
  std::string html = Render(kFixtures[1], "html", 0);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"module-chart\""), std::string::npos);
  EXPECT_NE(html.find("&lt;f64&gt; &amp; &quot;emulated&quot;"), std::string::npos);
  EXPECT_NE(html.find("id=\"by-module\""), std::string::npos);
  EXPECT_NE(html.find("id=\"by-op\""), std::string::npos);
  // Every unsupported op is on the page.
  for (const auto& u : UnsupportedOps(t::KitchenSink()))
    EXPECT_NE(html.find("<code>" + XmlEscape(u.kind) + "</code>"), std::string::npos) << u.kind;
}

TEST(Html, ChartGroupsManyModules) {
  AnalysisResult r = t::AllSupported();
  auto base = r.ops[0];
  r.ops.clear();
  for (int block = 0; block < 10; ++block)
    for (int layer = 0; layer < 10; ++layer) {
      auto op = base;
      op.module_path = "blocks." + std::to_string(block) + ".layer" + std::to_string(layer) + ".conv";
      r.ops.push_back(op);
    }
  RenderOptions o;
  std::string html = RenderHtml(r, o);
  EXPECT_NE(html.find("Module paths grouped to depth 2"), std::string::npos);
  EXPECT_NE(html.find(">blocks.9</text>"), std::string::npos);
}

}  // namespace
}  // namespace opprobe::reports
