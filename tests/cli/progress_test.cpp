// cli/progress: the progress reporter the driver's on_progress calls while probing.
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace opprobe::cli {
namespace {

std::string ReadAll(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ProgressTest, Formats) {
  EXPECT_EQ(FormatDuration(7), "0:07");
  EXPECT_EQ(FormatDuration(62), "1:02");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
  EXPECT_EQ(FormatDuration(-1), "?");
  EXPECT_EQ(FormatProgressBar(120, 240, 10.0, 10), "[#####.....] 120/240  50%   12.0/s ETA 0:10");
  EXPECT_EQ(FormatProgressBar(240, 240, 20.0, 10), "[##########] 240/240 100%   12.0/s in 0:20");
  EXPECT_EQ(FormatProgressBar(0, 5, 0.0, 4), "[....] 0/5   0%    0.0/s ETA ?");
  EXPECT_EQ(FormatProgressLine(120, 240, 10.0), "opprobe: probed 120/240 units (50%), 12.0/s, ETA 10 s");
  EXPECT_EQ(FormatProgressLine(240, 240, 20.0), "opprobe: probed 240/240 units (100%), 12.0/s, in 20.0 s");
}

TEST(ProgressTest, PlainLinesAtEveryTenthAndAtTheEnd) {
  std::FILE* f = std::tmpfile();
  double t = 0;
  ProgressReporter r(false, f, [&] { return t; });
  for (int i = 0; i <= 100; ++i) {
    t = i * 0.01;  // fast: no 5-second lines
    r.Update(i, 100);
  }
  r.Update(100, 100);  // a repeated final update prints nothing more
  std::string out = ReadAll(f);
  EXPECT_EQ(Count(out, "\n"), 10) << out;  // 10%, 20%, ..., 100%
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_NE(out.find("opprobe: probed 10/100 units (10%)"), std::string::npos) << out;
  EXPECT_NE(out.find("opprobe: probed 100/100 units (100%), 100.0/s, in 1.0 s"), std::string::npos) << out;
  std::fclose(f);
}

TEST(ProgressTest, PlainLinesAtLeastEveryFiveSeconds) {
  std::FILE* f = std::tmpfile();
  double t = 0;
  ProgressReporter r(false, f, [&] { return t; });
  r.Update(0, 1000);
  for (int i = 1; i <= 20; ++i) {
    t = i * 1.0;  // one probe per second: 1% in 10 s, so only the 5 s rule prints
    r.Update(i, 1000);
  }
  std::string out = ReadAll(f);
  EXPECT_EQ(Count(out, "\n"), 4) << out;  // t = 5, 10, 15, 20
  EXPECT_NE(out.find("probed 5/1000 units (0%), 1.0/s, ETA 995 s"), std::string::npos) << out;
  std::fclose(f);
}

TEST(ProgressTest, TerminalBarIsRedrawnInPlaceAndThrottled) {
  std::FILE* f = std::tmpfile();
  double t = 0;
  ProgressReporter r(true, f, [&] { return t; });
  for (int i = 1; i <= 50; ++i) {
    t = i * 0.01;  // 2 ms apart: throttled to 10 redraws per second
    r.Update(i, 50);
  }
  std::string out = ReadAll(f);
  EXPECT_EQ(Count(out, "\n"), 1);  // only after the final redraw
  EXPECT_EQ(out.back(), '\n');
  int redraws = Count(out, "\r");
  EXPECT_GE(redraws, 4);
  EXPECT_LE(redraws, 7);
  EXPECT_NE(out.find("50/50 100%"), std::string::npos) << out;
  EXPECT_NE(out.find("ETA "), std::string::npos);
  std::fclose(f);
}

TEST(ProgressTest, ZeroTotalPrintsNothing) {
  std::FILE* f = std::tmpfile();
  ProgressReporter r(false, f, [] { return 0.0; });
  r.Update(0, 0);
  EXPECT_EQ(ReadAll(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace opprobe::cli
