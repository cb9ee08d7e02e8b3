// Tests of counters, gauges, histograms, families and the exposition, byte for byte.
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/metrics/metric.h"
#include "lib/metrics/registry.h"

namespace ecd::metrics {
namespace {

TEST(MetricsTest, CounterAndGaugeExposition) {
  Registry r;
  auto& requests = r.AddCounter("ecd_requests_total", "Requests.\nBy method.", {"method", "code"});
  requests.WithLabels({"Objects/Read", "OK"}).Increment(3);
  requests.WithLabels({"Objects/Encode", "NOT_FOUND"}).Increment();
  requests.WithLabels({"Objects/Read", "OK"}).Increment();
  auto& used = r.AddGauge("ecd_used_bytes", "Used \\ bytes.");
  used.Get().Set(1.5);
  used.Get().Add(-0.25);
  EXPECT_EQ(r.Expose(),
            "# HELP ecd_requests_total Requests.\\nBy method.\n"
            "# TYPE ecd_requests_total counter\n"
            "ecd_requests_total{method=\"Objects/Encode\",code=\"NOT_FOUND\"} 1\n"
            "ecd_requests_total{method=\"Objects/Read\",code=\"OK\"} 4\n"
            "# HELP ecd_used_bytes Used \\\\ bytes.\n"
            "# TYPE ecd_used_bytes gauge\n"
            "ecd_used_bytes 1.25\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithInf) {
  Registry r;
  auto& h = r.AddHistogram("ecd_latency_seconds", "Latency.", {"kind"}, {0.5, 1, 2.5});
  Histogram& create = h.WithLabels({"create"});
  for (double v : {0.1, 0.5, 0.7, 2.5, 3.0, 100.0}) create.Observe(v);
  EXPECT_EQ(r.Expose(),
            "# HELP ecd_latency_seconds Latency.\n"
            "# TYPE ecd_latency_seconds histogram\n"
            "ecd_latency_seconds_bucket{kind=\"create\",le=\"0.5\"} 2\n"
            "ecd_latency_seconds_bucket{kind=\"create\",le=\"1\"} 3\n"
            "ecd_latency_seconds_bucket{kind=\"create\",le=\"2.5\"} 4\n"
            "ecd_latency_seconds_bucket{kind=\"create\",le=\"+Inf\"} 6\n"
            "ecd_latency_seconds_sum{kind=\"create\"} 106.8\n"
            "ecd_latency_seconds_count{kind=\"create\"} 6\n");
}

TEST(MetricsTest, HistogramWithoutLabels) {
  Registry r;
  r.AddHistogram("ecd_commit_seconds", "Commits.", {}, {0.001}).Get().Observe(0.0005);
  EXPECT_EQ(r.Expose(),
            "# HELP ecd_commit_seconds Commits.\n"
            "# TYPE ecd_commit_seconds histogram\n"
            "ecd_commit_seconds_bucket{le=\"0.001\"} 1\n"
            "ecd_commit_seconds_bucket{le=\"+Inf\"} 1\n"
            "ecd_commit_seconds_sum 0.0005\n"
            "ecd_commit_seconds_count 1\n");
}

TEST(MetricsTest, CallbacksRunAtEveryScrapeAndEscapeValues) {
  Registry r;
  int scrapes = 0;
  r.AddCallback(MetricType::kGauge, "ecd_device_state", "State.", {"device", "state"}, [&] {
    ++scrapes;
    return std::vector<Sample>{{{"0", "online"}, 1}, {{"1", "a\"b\\c\nd"}, 0}};
  });
  const std::string want =
      "# HELP ecd_device_state State.\n"
      "# TYPE ecd_device_state gauge\n"
      "ecd_device_state{device=\"0\",state=\"online\"} 1\n"
      "ecd_device_state{device=\"1\",state=\"a\\\"b\\\\c\\nd\"} 0\n";
  EXPECT_EQ(r.Expose(), want);
  EXPECT_EQ(r.Expose(), want);
  EXPECT_EQ(scrapes, 2);
}

TEST(MetricsTest, SeriesReferencesStayValidAndCountEveryIncrement) {
  Registry r;
  auto& f = r.AddCounter("ecd_x_total", "X.", {"t"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&f, t] {
      Counter& mine = f.WithLabels({std::to_string(t % 2)});
      for (int i = 0; i < 100000; ++i) mine.Increment();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(f.WithLabels({"0"}).value(), 200000u);
  EXPECT_EQ(f.WithLabels({"1"}).value(), 200000u);
}

TEST(MetricsTest, ConcurrentObservationsSumExactly) {
  Histogram h(LatencyBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h] {
      for (int i = 0; i < 50000; ++i) h.Observe(0.25);
    });
  }
  for (auto& t : threads) t.join();
  const Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.count, 200000u);
  EXPECT_DOUBLE_EQ(s.sum, 50000.0);
  EXPECT_EQ(s.cumulative.back(), 200000u);
}

TEST(MetricsTest, BucketHelpers) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  const std::vector<double> b = LatencyBuckets();
  EXPECT_DOUBLE_EQ(b.front(), 50e-6);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_GT(b[i], b[i - 1]);
  EXPECT_GT(b.back(), 10.0);
}

using MetricsDeathTest = ::testing::Test;

TEST(MetricsDeathTest, BadRegistrationsAbortWithTheReason) {
  EXPECT_DEATH(Registry().AddCounter("bad-name", "h"), "invalid metric name \"bad-name\"");
  EXPECT_DEATH(Registry().AddCounter("ok", "h", {"__x"}), "invalid label name \"__x\"");
  EXPECT_DEATH(Registry().AddCounter("ok", "h", {"a", "a"}), "label \"a\" given twice");
  EXPECT_DEATH(Registry().AddHistogram("ok", "h", {"le"}, {1}), "label called \"le\"");
  EXPECT_DEATH(Registry().AddHistogram("ok", "h", {}, {2, 1}), "strictly increasing");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddGauge("dup", "h");
        r.AddCounter("dup", "h");
      },
      "registered twice");
  EXPECT_DEATH(Registry().AddCounter("ok", "h", {"a"}).WithLabels({}), "0 label values for 1");
}

}  // namespace
}  // namespace ecd::metrics
