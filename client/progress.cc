// The progress line: rendering (pure) and drawing (throttled, on a terminal).
#include "client/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/util/size.h"

namespace ecd::client {
namespace {

constexpr int kBarWidth = 20;
constexpr double kRedrawSeconds = 0.1;
constexpr int64_t kMaxEtaSeconds = 100 * 3600;

// "16.0 MiB" or "4 stripes".
std::string FormatCount(const ProgressUnit& unit, uint64_t n) {
  return unit.bytes() ? FormatSize(n) : absl::StrCat(n, " ", unit.noun);
}

// "16.0 MiB/64.0 MiB" or "4/10 stripes".
std::string FormatDoneOfTotal(const ProgressUnit& unit, uint64_t done, uint64_t total) {
  if (unit.bytes()) return absl::StrCat(FormatSize(done), "/", FormatSize(total));
  return absl::StrCat(done, "/", total, " ", unit.noun);
}

// The fraction finished, 0..1.
double Fraction(uint64_t done, uint64_t total) {
  return done >= total ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
}

// "[#####---------------]  25%".
std::string FormatBarAndPercent(double fraction) {
  const int filled = static_cast<int>(std::floor(fraction * kBarWidth));
  const int percent = static_cast<int>(std::floor(fraction * 100));
  return absl::StrFormat("[%s%s] %3d%%", std::string(filled, '#'),
                         std::string(kBarWidth - filled, '-'), percent);
}

// Seconds until done at `rate` units per second; negative when unknown.
double SecondsLeft(uint64_t done, uint64_t total, double rate) {
  if (done >= total) return 0;
  if (rate <= 0) return -1;
  return static_cast<double>(total - done) / rate;
}

// Everything after the label, starting with a space.
std::string RenderCounts(const ProgressUnit& unit, uint64_t done, uint64_t total,
                         double elapsed_seconds) {
  const double rate = elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : -1;
  if (total == 0) return absl::StrCat(" ", FormatCount(unit, done), " ", FormatRate(unit, rate));
  return absl::StrCat(" ", FormatBarAndPercent(Fraction(done, total)), " ",
                      FormatDoneOfTotal(unit, done, total), " ", FormatRate(unit, rate), " ETA ",
                      FormatEta(SecondsLeft(done, total, rate)));
}

// Columns of the terminal `out` is on, 0 when unknown.
size_t TerminalColumns(FILE* out) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

}  // namespace

std::string FormatEta(double seconds) {
  if (seconds < 0) return "--:--";
  const int64_t s = std::llround(seconds);
  if (s >= kMaxEtaSeconds) return "--:--";
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string FormatRate(const ProgressUnit& unit, double per_second) {
  if (per_second < 0) return "--/s";
  if (unit.bytes()) return absl::StrCat(FormatSize(std::llround(per_second)), "/s");
  return absl::StrFormat("%.1f %s/s", per_second, unit.noun);
}

std::string RenderProgress(const std::string& label, const ProgressUnit& unit, uint64_t done,
                           uint64_t total, double elapsed_seconds, size_t max_width) {
  const std::string counts = RenderCounts(unit, done, total, elapsed_seconds);
  if (max_width == 0 || label.size() + counts.size() <= max_width) return label + counts;
  if (counts.size() < max_width) return label.substr(0, max_width - counts.size()) + counts;
  return counts.substr(1, max_width);  // No room for the label.
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool ProgressWanted(bool quiet) { return !quiet && ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(FILE* out, bool enabled, std::string label, ProgressUnit unit, Clock clock)
    : out_(out),
      enabled_(enabled),
      label_(std::move(label)),
      unit_(std::move(unit)),
      clock_(std::move(clock)),
      start_(clock_()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { Clear(); }

void ProgressBar::Update(uint64_t done, uint64_t total) {
  if (!enabled_) return;
  const double now = clock_();
  if (now - last_draw_ < kRedrawSeconds) return;
  last_draw_ = now;
  const size_t columns = TerminalColumns(out_);
  const std::string line =
      RenderProgress(label_, unit_, done, total, now - start_, columns > 0 ? columns - 1 : 0);
  std::fprintf(out_, "\r%s\033[K", line.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::Clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", out_);
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace ecd::client
