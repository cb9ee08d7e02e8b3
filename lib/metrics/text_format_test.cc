// Tests of the text format helpers: names, escaping and number formatting.
#include "lib/metrics/text_format.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace ecd::metrics {
namespace {

TEST(TextFormatTest, MetricNames) {
  EXPECT_TRUE(IsValidMetricName("ecd_rpc_requests_total"));
  EXPECT_TRUE(IsValidMetricName("_x"));
  EXPECT_TRUE(IsValidMetricName("job:ecd_up:sum"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("ecd-objects"));
  EXPECT_FALSE(IsValidMetricName("ecd objects"));
}

TEST(TextFormatTest, LabelNames) {
  EXPECT_TRUE(IsValidLabelName("device"));
  EXPECT_TRUE(IsValidLabelName("_a1"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("9"));
  EXPECT_FALSE(IsValidLabelName(""));
}

TEST(TextFormatTest, Escaping) {
  EXPECT_EQ(EscapeHelp("a\\b\nc \"q\""), "a\\\\b\\nc \"q\"");
  EXPECT_EQ(EscapeLabelValue("a\\b\nc \"q\""), "a\\\\b\\nc \\\"q\\\"");
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
}

TEST(TextFormatTest, Values) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(18446744073709551616.0), "1.8446744073709552e+19");
  EXPECT_EQ(FormatValue(0.5), "0.5");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(5e-05), "5e-05");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  for (double v : {1.0 / 3, 2.5e-7, 123456.789, 1e300}) {
    EXPECT_EQ(std::strtod(FormatValue(v).c_str(), nullptr), v) << FormatValue(v);
  }
}

}  // namespace
}  // namespace ecd::metrics
