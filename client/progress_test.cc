// Tests for the progress line: exact rendering for given counts and times, and the throttled,
// cleared drawing of ProgressBar (on a memory stream, with a fake clock).
#include "client/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace ecd::client {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(FormatEta, MinutesAndHours) {
  EXPECT_EQ(FormatEta(0), "0:00");
  EXPECT_EQ(FormatEta(59.4), "0:59");
  EXPECT_EQ(FormatEta(61), "1:01");
  EXPECT_EQ(FormatEta(754), "12:34");
  EXPECT_EQ(FormatEta(3723), "1:02:03");
  EXPECT_EQ(FormatEta(99 * 3600 + 59 * 60 + 59), "99:59:59");
}

TEST(FormatEta, UnknownWhenNegativeOrHuge) {
  EXPECT_EQ(FormatEta(-1), "--:--");
  EXPECT_EQ(FormatEta(100 * 3600), "--:--");
}

TEST(FormatRate, BytesAndItems) {
  EXPECT_EQ(FormatRate(ProgressUnit::Bytes(), 8 * kMiB), "8.0 MiB/s");
  EXPECT_EQ(FormatRate(ProgressUnit::Bytes(), 512), "512 B/s");
  EXPECT_EQ(FormatRate(ProgressUnit::Bytes(), 0), "0 B/s");
  EXPECT_EQ(FormatRate(ProgressUnit::Items("stripes"), 3.5), "3.5 stripes/s");
  EXPECT_EQ(FormatRate(ProgressUnit::Items("stripes"), -1), "--/s");
}

TEST(RenderProgress, BytesWithRateAndEta) {
  EXPECT_EQ(RenderProgress("encode big", ProgressUnit::Bytes(), 16 * kMiB, 64 * kMiB, 2.0),
            "encode big [#####---------------]  25% 16.0 MiB/64.0 MiB 8.0 MiB/s ETA 0:06");
}

TEST(RenderProgress, Items) {
  EXPECT_EQ(RenderProgress("recover big", ProgressUnit::Items("stripes"), 4, 10, 2.0),
            "recover big [########------------]  40% 4/10 stripes 2.0 stripes/s ETA 0:03");
}

TEST(RenderProgress, UnknownTotalShowsDoneAndRateOnly) {
  EXPECT_EQ(RenderProgress("encode -", ProgressUnit::Bytes(), 3 * kMiB, 0, 1.5),
            "encode - 3.0 MiB 2.0 MiB/s");
  EXPECT_EQ(RenderProgress("scrub", ProgressUnit::Items("objects"), 0, 0, 0),
            "scrub 0 objects --/s");
}

TEST(RenderProgress, DoneBeyondTotalIsFinished) {
  EXPECT_EQ(RenderProgress("scrub", ProgressUnit::Items("objects"), 12, 10, 4.0),
            "scrub [####################] 100% 12/10 objects 3.0 objects/s ETA 0:00");
}

TEST(RenderProgress, RateAndEtaUnknownAtTheStart) {
  EXPECT_EQ(RenderProgress("read x", ProgressUnit::Bytes(), 0, 1024, 0),
            "read x [--------------------]   0% 0 B/1.0 KiB --/s ETA --:--");
  EXPECT_EQ(RenderProgress("read x", ProgressUnit::Bytes(), 0, 1024, 1.0),
            "read x [--------------------]   0% 0 B/1.0 KiB 0 B/s ETA --:--");
}

TEST(RenderProgress, PercentRoundsDown) {
  EXPECT_EQ(RenderProgress("w", ProgressUnit::Items("jobs"), 999, 1000, 999.0),
            "w [###################-]  99% 999/1000 jobs 1.0 jobs/s ETA 0:01");
}

TEST(RenderProgress, LabelIsCutToFitTheWidth) {
  const std::string full =
      RenderProgress("recover big", ProgressUnit::Items("stripes"), 4, 10, 2.0);
  EXPECT_EQ(RenderProgress("recover big", ProgressUnit::Items("stripes"), 4, 10, 2.0, full.size()),
            full);
  EXPECT_EQ(
      RenderProgress("recover big", ProgressUnit::Items("stripes"), 4, 10, 2.0, full.size() - 4),
      "recover [########------------]  40% 4/10 stripes 2.0 stripes/s ETA 0:03");
  EXPECT_EQ(RenderProgress("recover big", ProgressUnit::Items("stripes"), 4, 10, 2.0, 20),
            "[########-----------");
}

// A ProgressBar drawing into memory with a clock the test moves.
class ProgressBarTest : public ::testing::Test {
 protected:
  void SetUp() override { out_ = open_memstream(&buffer_, &size_); }
  void TearDown() override {
    std::fclose(out_);
    std::free(buffer_);
  }
  std::string Drawn() {
    std::fflush(out_);
    return std::string(buffer_, size_);
  }
  ProgressBar::Clock Clock() {
    return [this] { return now_; };
  }

  FILE* out_ = nullptr;
  char* buffer_ = nullptr;
  size_t size_ = 0;
  double now_ = 100.0;
};

TEST_F(ProgressBarTest, DrawsAtMostTenTimesASecondAndClearsAtTheEnd) {
  {
    ProgressBar bar(out_, true, "recover big", ProgressUnit::Items("stripes"), Clock());
    bar.Update(0, 10);  // At the start: nothing yet.
    now_ += 0.0625;
    bar.Update(1, 10);  // Too soon.
    EXPECT_EQ(Drawn(), "");
    now_ += 0.0625;
    bar.Update(2, 10);
    EXPECT_EQ(Drawn(),
              "\rrecover big [####----------------]  20% 2/10 stripes 16.0 stripes/s ETA 0:01"
              "\033[K");
    now_ += 0.0625;
    bar.Update(3, 10);  // Too soon after the last redraw.
    now_ += 0.0625;
    bar.Update(4, 10);
  }
  EXPECT_EQ(Drawn(),
            "\rrecover big [####----------------]  20% 2/10 stripes 16.0 stripes/s ETA 0:01\033[K"
            "\rrecover big [########------------]  40% 4/10 stripes 16.0 stripes/s ETA 0:00\033[K"
            "\r\033[K");
}

TEST_F(ProgressBarTest, QuickWorkDrawsNothingAndClearsNothing) {
  {
    ProgressBar bar(out_, true, "read x", ProgressUnit::Bytes(), Clock());
    now_ += 0.02;
    bar.Update(1024, 1024);
  }
  EXPECT_EQ(Drawn(), "");
}

TEST_F(ProgressBarTest, DisabledDrawsNothing) {
  {
    ProgressBar bar(out_, false, "read x", ProgressUnit::Bytes(), Clock());
    now_ += 5;
    bar.Update(512, 1024);
  }
  EXPECT_EQ(Drawn(), "");
}

TEST_F(ProgressBarTest, ClearThenDrawAgain) {
  ProgressBar bar(out_, true, "w", ProgressUnit::Items("jobs"), Clock());
  now_ += 1;
  bar.Update(1, 2);
  bar.Clear();
  bar.Clear();  // Nothing drawn since: nothing to erase.
  now_ += 1;
  bar.Update(2, 2);
  EXPECT_EQ(Drawn(),
            "\rw [##########----------]  50% 1/2 jobs 1.0 jobs/s ETA 0:01\033[K\r\033[K"
            "\rw [####################] 100% 2/2 jobs 1.0 jobs/s ETA 0:00\033[K");
}

}  // namespace
}  // namespace ecd::client
