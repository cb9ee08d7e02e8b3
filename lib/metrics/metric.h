// Counter, Gauge and Histogram: the values behind one labelled series of a metric family.
//
// Updates are lock-free and allocation-free (relaxed atomics), so hot paths may call them on
// every operation; a scrape reads them without stopping writers (a histogram read during an
// Observe may see the bucket before the sum: Prometheus tolerates that skew).
#ifndef ECD_LIB_METRICS_METRIC_H_
#define ECD_LIB_METRICS_METRIC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"

namespace ecd::metrics {

// A value that only goes up (resets only when the process restarts).
// Thread safety: all methods may be called concurrently.
class Counter {
 public:
  void Increment(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down.
// Thread safety: all methods may be called concurrently.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double d) {
    double v = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(v, v + d, std::memory_order_relaxed)) {
    }
  }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations into cumulative buckets by upper bound, with their sum and count.
// Thread safety: all methods may be called concurrently.
class Histogram {
 public:
  // REQUIRES: `bounds` strictly increasing and finite (the +Inf bucket is implicit).
  explicit Histogram(absl::Span<const double> bounds);

  void Observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1, not cumulative
  std::atomic<double> sum_{0};
};

// Bucket bounds: `count` bounds start, start*factor, start*factor^2, ...
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// Latency buckets in seconds from 50 us to about 19 s, for RPCs, EC tasks and commits.
std::vector<double> LatencyBuckets();

}  // namespace ecd::metrics

#endif  // ECD_LIB_METRICS_METRIC_H_
