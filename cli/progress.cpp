#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace opprobe::cli {

namespace {

double Rate(int64_t done, double elapsed) { return elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0; }

// Seconds left, or a negative value when unknown.
double Eta(int64_t done, int64_t total, double elapsed) {
  double rate = Rate(done, elapsed);
  if (done <= 0 || rate <= 0) return -1;
  return static_cast<double>(total - done) / rate;
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  auto s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string FormatProgressBar(int64_t done, int64_t total, double elapsed_seconds, int width) {
  double frac = total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0) : 1.0;
  int filled = static_cast<int>(frac * width);
  std::string bar =
      "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.') + "]";
  int digits = static_cast<int>(std::to_string(total).size());
  std::string tail = done >= total ? fmt::format("in {}", FormatDuration(elapsed_seconds))
                                   : fmt::format("ETA {}", FormatDuration(Eta(done, total, elapsed_seconds)));
  return fmt::format("{} {:>{}}/{} {:>3.0f}% {:>6.1f}/s {}", bar, done, digits, total, frac * 100,
                     Rate(done, elapsed_seconds), tail);
}

std::string FormatProgressLine(int64_t done, int64_t total, double elapsed_seconds) {
  double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  std::string tail;
  if (done >= total) {
    tail = fmt::format("in {:.1f} s", elapsed_seconds);
  } else {
    double eta = Eta(done, total, elapsed_seconds);
    tail = eta < 0 ? "ETA unknown" : fmt::format("ETA {:.0f} s", eta);
  }
  return fmt::format("opprobe: probed {}/{} units ({:.0f}%), {:.1f}/s, {}", done, total, pct,
                     Rate(done, elapsed_seconds), tail);
}

ProgressReporter::ProgressReporter(bool is_tty, std::FILE* out, std::function<double()> now)
    : tty_(is_tty), out_(out), now_(std::move(now)) {}

void ProgressReporter::Update(int64_t done, int64_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  if (total <= 0 || finished_) return;
  double now = now_();
  if (start_ < 0) start_ = now;
  double elapsed = now - start_;
  bool last = done >= total;
  if (tty_) {
    // Redraw at most 10 times a second, and always for the last update.
    if (!last && last_print_ >= 0 && now - last_print_ < 0.1) return;
    std::fprintf(out_, "\r%s\x1b[K%s", FormatProgressBar(done, total, elapsed).c_str(), last ? "\n" : "");
  } else {
    int64_t decile = done * 10 / total;
    bool due = last || decile > last_decile_ || (last_print_ >= 0 && now - last_print_ >= 5.0);
    if (!due) return;
    if (done == 0 && !last) {  // nothing to say yet; start the 5 s clock
      last_decile_ = 0;
      last_print_ = now;
      return;
    }
    last_decile_ = decile;
    std::fprintf(out_, "%s\n", FormatProgressLine(done, total, elapsed).c_str());
  }
  std::fflush(out_);
  last_print_ = now;
  if (last) finished_ = true;
}

std::function<void(int64_t, int64_t)> MakeProgressReporter(bool is_tty) {
  auto start = std::chrono::steady_clock::now();
  auto reporter = std::make_shared<ProgressReporter>(is_tty, stderr, [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return [reporter](int64_t done, int64_t total) { reporter->Update(done, total); };
}

std::function<void(int64_t, int64_t)> ProgressFor(ProgressMode mode) {
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (mode == ProgressMode::kOff || (mode == ProgressMode::kAuto && !tty)) return {};
  return MakeProgressReporter(tty);
}

}  // namespace opprobe::cli
