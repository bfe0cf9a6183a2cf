// The HTML report in a real browser: headless Chromium (Debian package `chromium`) loads the page from
// a file:// URL, with console logging on stderr. The page must log nothing (no uncaught errors), show
// every unsupported op, and its rows must expand on click. Skipped, with a message, without chromium.
#include <gtest/gtest.h>

#include <regex>

#include "reports/report.h"
#include "reports/view.h"
#include "tests/reports/fixtures.h"
#include "tests/reports/report_test_util.h"

namespace opprobe::reports {
namespace {

namespace t = testing;

std::string Chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    std::string p = t::FindProgram(name);
    if (!p.empty()) return p;
  }
  return "";
}

struct Page {
  int exit_code = -1;
  std::string dom;
  std::vector<std::string> console;  // console messages (errors included)
  std::string log;
};

// Loads `html` in headless Chromium and returns the DOM after the scripts ran.
Page Load(const std::string& chromium, const std::string& html, const t::TempDir& dir) {
  std::string file = dir / "report.html";
  t::WriteText(file, html);
  std::string profile = dir / "profile";
  auto r = t::RunProgram({"timeout", "120", chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                          "--no-first-run", "--disable-background-networking", "--disable-component-update",
                          "--disable-sync", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
                          "--dump-dom", "file://" + file});
  Page page;
  page.exit_code = r.exit_code;
  page.dom = r.out;
  page.log = r.err;
  std::regex console_re(R"(:CONSOLE[:(][^\]]*\] (.*))");
  std::istringstream in(r.err);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, console_re)) page.console.push_back(m[1]);
  }
  return page;
}

// Text as a DOM serializer writes it in element content: only & < > are escaped.
std::string DomText(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

// Appended after the report's own script: clicks the first row toggle of each table and records what the
// page shows in attributes on <body>, which --dump-dom then prints.
constexpr const char* kProbe = R"(<script>
(function () {
  var b = document.body;
  var shown = 0;
  document.querySelectorAll('tr.unsupported-op').forEach(function (tr) {
    var r = tr.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && getComputedStyle(tr).visibility !== 'hidden') shown++;
  });
  b.setAttribute('data-unsupported-shown', String(shown));
  var hiddenBefore = document.getElementById('m0').hidden;
  document.querySelector('#by-module button.tog').click();
  var openModule = !document.getElementById('m0').hidden && document.getElementById('m0').getBoundingClientRect().height > 0;
  document.querySelector('#by-op button.tog').click();
  var openOp = !document.getElementById('o0').hidden;
  document.querySelector('button[data-expand="all"][data-table="by-op"]').click();
  var allOpen = Array.prototype.every.call(document.querySelectorAll('#by-op tr.detail'), function (r) { return !r.hidden; });
  var bars = document.querySelectorAll('#module-chart g.bar').length;
  b.setAttribute('data-probe', [hiddenBefore, openModule, openOp, allOpen, bars].join(','));
})();
</script>
</body>)";

class HtmlInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = Chromium();
    if (chromium_.empty())
      GTEST_SKIP()
          << "chromium is not installed (Debian package `chromium`): the HTML report was not checked in a browser";
  }
  std::string chromium_;
};

TEST_F(HtmlInBrowser, HarnessSeesConsoleErrors) {
  t::TempDir dir;
  Page page = Load(chromium_, "<!DOCTYPE html><html><body><script>noSuchFunction();</script></body></html>", dir);
  ASSERT_EQ(page.exit_code, 0) << page.log;
  ASSERT_EQ(page.console.size(), 1u) << page.log;
  EXPECT_NE(page.console[0].find("Uncaught ReferenceError"), std::string::npos) << page.console[0];
}

TEST_F(HtmlInBrowser, LoadsWithoutConsoleErrorsAndShowsTheUnsupportedOps) {
  for (auto make : {t::KitchenSink, t::NeuronUnsupported}) {
    analyzer::AnalysisResult result = make();
    RenderOptions options;
    options.verbosity = 0;
    options.cwd = "/home/user/proj";
    std::string html = RenderHtml(result, options);
    auto unsupported = UnsupportedOps(result);
    ASSERT_FALSE(unsupported.empty());
    size_t end = html.rfind("</body>");
    ASSERT_NE(end, std::string::npos);
    std::string probed = html.substr(0, end) + kProbe + html.substr(end + 7);

    t::TempDir dir;
    Page page = Load(chromium_, probed, dir);
    ASSERT_EQ(page.exit_code, 0) << page.log;
    EXPECT_TRUE(page.console.empty()) << "console: " << page.console.front();
    EXPECT_NE(page.dom.find("data-unsupported-shown=\"" + std::to_string(unsupported.size()) + "\""), std::string::npos)
        << page.dom.substr(0, 2000);
    // m0 hidden at first, opens on click; the op table's row too; "Expand all" opens every row; one bar per module.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(page.dom, m, std::regex("data-probe=\"([^\"]*)\""))) << page.dom.substr(0, 2000);
    EXPECT_EQ(m[1].str().substr(0, 20), "true,true,true,true,");
    EXPECT_GT(std::stoi(m[1].str().substr(20)), 0);
    for (const auto& u : unsupported) {
      EXPECT_NE(page.dom.find(DomText(u.kind)), std::string::npos) << u.kind;
      EXPECT_NE(page.dom.find(DomText(u.reason)), std::string::npos) << u.reason;
    }
  }
}

}  // namespace
}  // namespace opprobe::reports
