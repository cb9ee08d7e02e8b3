// A one-line progress bar on a terminal: done/total, percent, rate and ETA, redrawn in place
// with \r at most ten times a second and cleared when the work ends. ecctl draws it on stderr
// for encode, update, read, block get, recover, scrub and rebuild waits, only when stderr is a
// terminal and --quiet is not given.
#ifndef ECD_CLIENT_PROGRESS_H_
#define ECD_CLIENT_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace ecd::client {

// What a count measures: bytes (shown as sizes, "12.0 MiB") or items named by a plural noun.
struct ProgressUnit {
  static ProgressUnit Bytes() { return ProgressUnit{""}; }
  static ProgressUnit Items(std::string noun) { return ProgressUnit{std::move(noun)}; }
  bool bytes() const { return noun.empty(); }

  std::string noun;  // Empty: bytes.
};

// "0:05", "12:34", "1:02:03"; "--:--" when unknown (negative, or 100 hours and more).
std::string FormatEta(double seconds);

// "12.0 MiB/s" for bytes, "3.5 stripes/s" for items; "--/s" when unknown (negative).
std::string FormatRate(const ProgressUnit& unit, double per_second);

// The line a bar shows after `elapsed_seconds` with `done` of `total` (0: unknown) finished:
//   "encode big [#####---------------]  25% 16.0 MiB/64.0 MiB 8.0 MiB/s ETA 0:06"
// With an unknown total it is "LABEL DONE RATE". done > total counts as finished (100%, ETA
// 0:00). The rate and ETA are unknown until something is done after some time has passed. When
// `max_width` > 0 the label is cut so that the line fits in max_width characters.
std::string RenderProgress(const std::string& label, const ProgressUnit& unit, uint64_t done,
                           uint64_t total, double elapsed_seconds, size_t max_width = 0);

// Seconds on a monotonic clock.
double SteadySeconds();

// Whether ecctl should draw progress: stderr is a terminal and --quiet was not given.
bool ProgressWanted(bool quiet);

class ProgressBar {
 public:
  // Seconds on a monotonic clock (a fake one in tests).
  using Clock = std::function<double()>;

  // Draws on `out` only when `enabled`. The label names the work ("recover big").
  ProgressBar(FILE* out, bool enabled, std::string label, ProgressUnit unit,
              Clock clock = SteadySeconds);
  ~ProgressBar();  // Clear().
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Records the new counts; redraws when a tenth of a second has passed since the start or the
  // last redraw (so work that ends sooner draws nothing).
  void Update(uint64_t done, uint64_t total);
  // Erases the line if anything was drawn; later Updates draw again.
  void Clear();
  // Whether the bar draws at all (so callers can skip work done only for it).
  bool enabled() const { return enabled_; }

 private:
  FILE* const out_;
  const bool enabled_;
  const std::string label_;
  const ProgressUnit unit_;
  const Clock clock_;
  const double start_;
  double last_draw_;
  bool drawn_ = false;
};

}  // namespace ecd::client

#endif  // ECD_CLIENT_PROGRESS_H_
