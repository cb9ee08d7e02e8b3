// Tests of MetricRegistry: HELP escaping, label-name checks, empty families, scrape-time
// collectables and histogram buckets, on the exact bytes of the exposition.
#include "daemon/metric_registry.h"

#include <atomic>
#include <string>

#include "gtest/gtest.h"

namespace ecd::daemon {
namespace {

TEST(MetricRegistryTest, EscapesBackslashAndNewlineInHelp) {
  MetricRegistry r;
  r.AddCounter("a_total", "one \\ two\nthree").Get().Increment(2);
  EXPECT_EQ(r.Expose(),
            "# HELP a_total one \\\\ two\\nthree\n"
            "# TYPE a_total counter\n"
            "a_total 2\n");
  EXPECT_EQ(EscapeHelp("a\\b\nc\"d"), "a\\\\b\\nc\"d");
}

TEST(MetricRegistryTest, EscapesHelpOfScrapeTimeFamilies) {
  MetricRegistry r;
  r.AddCollectable({{"g", "x\\y\nz", prometheus::MetricType::Gauge, {}}}, [] {
    return std::vector<Samples>{{{{}, 1.5}}};
  });
  EXPECT_EQ(r.Expose(), "# HELP g x\\\\y\\nz\n# TYPE g gauge\ng 1.5\n");
}

TEST(MetricRegistryTest, EmptyFamiliesKeepHelpAndTypeInRegistrationOrder) {
  MetricRegistry r;
  r.AddGauge("z_gauge", "Last registered first.", {"a"});
  r.AddCounter("b_total", "No series yet.", {"x"});
  r.AddHistogram("c_seconds", "No observations.", {"kind"}, {1, 2});
  r.AddCollectable({{"d", "Absent now.", prometheus::MetricType::Gauge, {}}},
                   [] { return std::vector<Samples>{{}}; });
  EXPECT_EQ(r.Expose(),
            "# HELP z_gauge Last registered first.\n# TYPE z_gauge gauge\n"
            "# HELP b_total No series yet.\n# TYPE b_total counter\n"
            "# HELP c_seconds No observations.\n# TYPE c_seconds histogram\n"
            "# HELP d Absent now.\n# TYPE d gauge\n");
}

TEST(MetricRegistryTest, SameNameAndLabelsReturnsTheSameFamily) {
  MetricRegistry r;
  auto& a = r.AddCounter("x_total", "X.", {"a", "b"});
  auto& b = r.AddCounter("x_total", "X again.", {"a", "b"});
  EXPECT_EQ(&a, &b);
  a.WithLabels({"1", "2"}).Increment();
  b.WithNamedLabels(prometheus::Labels{{"b", "2"}, {"a", "1"}}).Increment();
  EXPECT_EQ(r.Expose(), "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"1\",b=\"2\"} 2\n");
}

TEST(MetricRegistryDeathTest, RefusesDisagreeingLabelNames) {
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddCounter("x_total", "X.", {"a", "b"});
        r.AddCounter("x_total", "X.", {"a", "c"});
      },
      "metrics: metric \"x_total\" registered twice, with labels \\(a,b\\) then \\(a,c\\)");
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddCounter("x_total", "X.", {"a"});
        r.AddGauge("x_total", "X.", {"a"});
      },
      "registered twice");
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddGauge("g", "G.", {"a"});
        r.AddCollectable({{"g", "G.", prometheus::MetricType::Gauge, {"a"}}},
                         [] { return std::vector<Samples>{{}}; });
      },
      "registered twice \\(scrape-time\\)");
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddHistogram("h", "H.", {"le"}, {1});
      },
      "a histogram cannot have a label called \"le\"");
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddHistogram("h", "H.", {}, {1, 2});
        r.AddHistogram("h", "H.", {}, {1, 3});
      },
      "other buckets");
}

TEST(MetricRegistryDeathTest, RefusesSeriesWithOtherLabelNames) {
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddCounter("x_total", "X.", {"a", "b"}).WithLabels({"1"});
      },
      "x_total: 1 label values for the label names \\(a,b\\)");
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddCounter("x_total", "X.", {"a", "b"})
            .WithNamedLabels(prometheus::Labels{{"a", "1"}, {"c", "2"}});
      },
      "x_total: series labels \\(a,c\\) are not the family's \\(a,b\\)");
  EXPECT_DEATH(
      {
        MetricRegistry r;
        r.AddCollectable({{"g", "G.", prometheus::MetricType::Gauge, {"a", "b"}}}, [] {
          return std::vector<Samples>{{{{"1"}, 1}}};
        });
        r.Expose();
      },
      "g: 1 label values for the label names \\(a,b\\)");
}

TEST(MetricRegistryTest, CollectableReadsItsSourceOncePerScrape) {
  MetricRegistry r;
  std::atomic<int> reads{0};
  struct Data {
    double objects;
    double bytes;
  };
  r.AddScraped<Data>(
      [&reads] {
        ++reads;
        return Data{3, 4096};
      },
      {{{"objects", "Objects.", prometheus::MetricType::Gauge, {}},
        [](const Data& d) {
          return Samples{{{}, d.objects}};
        }},
       {{"bytes_total", "Bytes.", prometheus::MetricType::Counter, {"dir", "dev"}},
        [](const Data& d) {
          return Samples{{{"write", "1"}, d.bytes}, {{"read", "0"}, 0.25}};
        }}});
  EXPECT_EQ(reads, 0);
  const std::string want =
      "# HELP objects Objects.\n# TYPE objects gauge\nobjects 3\n"
      "# HELP bytes_total Bytes.\n# TYPE bytes_total counter\n"
      "bytes_total{dev=\"1\",dir=\"write\"} 4096\n"
      "bytes_total{dev=\"0\",dir=\"read\"} 0.25\n";
  EXPECT_EQ(r.Expose(), want);
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(r.Expose(), want);
  EXPECT_EQ(reads, 2);
}

TEST(MetricRegistryTest, HistogramHasTheConfiguredBuckets) {
  MetricRegistry r;
  auto& family = r.AddHistogram("lat_seconds", "Latency.", {"kind"}, {0.001, 0.01, 0.1});
  EXPECT_EQ(family.bounds(), (std::vector<double>{0.001, 0.01, 0.1}));
  prometheus::Histogram& h = family.WithLabels({"create"});
  h.Observe(0.001);  // a value equal to a bound is in that bucket (le)
  h.Observe(0.05);
  h.Observe(7);
  EXPECT_EQ(r.Expose(),
            "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n"
            "lat_seconds_count{kind=\"create\"} 3\n"
            "lat_seconds_sum{kind=\"create\"} 7.051\n"
            "lat_seconds_bucket{kind=\"create\",le=\"0.001\"} 1\n"
            "lat_seconds_bucket{kind=\"create\",le=\"0.01\"} 1\n"
            "lat_seconds_bucket{kind=\"create\",le=\"0.1\"} 2\n"
            "lat_seconds_bucket{kind=\"create\",le=\"+Inf\"} 3\n");
}

}  // namespace
}  // namespace ecd::daemon
