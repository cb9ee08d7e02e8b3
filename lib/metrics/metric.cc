// Histogram bookkeeping and bucket helpers.
#include "lib/metrics/metric.h"

#include <algorithm>

namespace ecd::metrics {

Histogram::Histogram(absl::Span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()),
      buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  // The first bound >= value: a value equal to a bound belongs to that bucket (le, "<=").
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                       bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  double s = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(s, s + value, std::memory_order_relaxed)) {
  }
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot out;
  out.bounds = bounds_;
  out.cumulative.resize(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    out.cumulative[i] = total;
  }
  out.count = total;
  out.sum = sum_.load(std::memory_order_relaxed);
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) out.push_back(b);
  return out;
}

std::vector<double> LatencyBuckets() {
  // 50 us x 2.5^k, k = 0..14: 50 us, 125 us, ... 18.6 s.
  return ExponentialBuckets(50e-6, 2.5, 15);
}

}  // namespace ecd::metrics
