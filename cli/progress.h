// Probe progress on stderr: a redrawn bar with rate and ETA on a terminal, plain lines otherwise
// (at every 10% and at least every 5 s), for DriverOptions::on_progress.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace opprobe::cli {

// `is_tty`: whether stderr is a terminal (isatty(2)). The returned function is thread-safe.
std::function<void(int64_t done, int64_t total)> MakeProgressReporter(bool is_tty);

// kAuto shows a bar on a terminal and nothing otherwise; kOn (--progress) also prints plain lines without a
// terminal; kOff (--no-progress, -q) prints nothing.
enum class ProgressMode { kAuto, kOn, kOff };
// The reporter for `mode` on stderr, or none (an empty function) when nothing is to be shown.
std::function<void(int64_t done, int64_t total)> ProgressFor(ProgressMode mode);

// The testable core: writes to `out`, reads time (seconds) from `now`.
class ProgressReporter {
 public:
  ProgressReporter(bool is_tty, std::FILE* out, std::function<double()> now);
  void Update(int64_t done, int64_t total);

 private:
  bool tty_;
  std::FILE* out_;
  std::function<double()> now_;
  std::mutex mu_;
  double start_ = -1;
  double last_print_ = -1;
  int64_t last_decile_ = -1;
  bool finished_ = false;
};

// `[##########..........]  120/240  50%  12.0/s  ETA 0:10` (width = bar characters).
std::string FormatProgressBar(int64_t done, int64_t total, double elapsed_seconds, int width = 30);
// `opprobe: probed 120/240 units (50%), 12.0/s, ETA 10 s`.
std::string FormatProgressLine(int64_t done, int64_t total, double elapsed_seconds);
// `0:07`, `1:02:03`.
std::string FormatDuration(double seconds);

}  // namespace opprobe::cli
