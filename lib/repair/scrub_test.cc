// Tests scrubbing: flipped bits in data and parity blocks are found and repaired byte-exact,
// parity that passes its checksum but does not match the data is found and rewritten, check-only
// scrubs change nothing, lost stripes are reported, reads run during a scrub, and the background
// scrubber paces itself and remembers its last pass across restarts.
#include <gtest/gtest.h>

#include <atomic>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "lib/catalog/catalog.h"
#include "lib/repair/scrubber.h"
#include "lib/store/store_test_util.h"
#include "lib/util/crc32c.h"

namespace ecd::repair {

using store::BlockRecord;
using store::BlockStatus;
using store::Catalog;
using store::Crc32c;
using store::RandomBytes;
using store::TempStoreTest;
using store::VectorSink;
using store::VectorSource;

namespace {

class ScrubTest : public TempStoreTest {
 protected:
  BlockRecord BlockOf(const std::string& name, uint64_t stripe, uint32_t index) {
    auto st = store_->Stat(name, /*with_blocks=*/true, /*verify=*/false);
    EXPECT_TRUE(st.ok());
    for (const BlockStatus& b : st->stripes.at(stripe).blocks) {
      if (b.record.index == index) return b.record;
    }
    ADD_FAILURE() << "no block " << index << " in stripe " << stripe;
    return {};
  }
  // Flips one bit of a stored block in its namespace file, behind the store's back.
  void FlipBit(const BlockRecord& b, size_t byte, int bit) {
    std::vector<uint8_t> bytes = Snapshot(b);
    bytes[byte] ^= static_cast<uint8_t>(1 << bit);
    Restore(b, bytes);
  }
  absl::StatusOr<ScrubReport> Scrub(Scrubber& scrubber, std::vector<std::string> names,
                                    bool repair = true) {
    return scrubber.ScrubNow(names, ScrubOptions{.repair = repair}, nullptr, nullptr);
  }
  ScrubberOptions Foreground() { return ScrubberOptions{.interval = absl::ZeroDuration()}; }
};

TEST_F(ScrubTest, FindsAndRepairsFlippedBitsInDataAndParity) {
  const auto data = RandomBytes(5 * 4 * 4096 + 100, 1);  // 6 stripes of 4+2
  ASSERT_TRUE(Put("o", data).ok());
  const std::vector<uint8_t> parity_before = Block("o", 2, 5);
  const std::vector<uint8_t> data_before = Block("o", 4, 1);
  FlipBit(BlockOf("o", 2, 5), 4000, 3);  // parity
  FlipBit(BlockOf("o", 4, 1), 17, 0);    // data
  Scrubber scrubber(store_.get(), Foreground());
  auto report = Scrub(scrubber, {"o"});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->objects_done, 1u);
  EXPECT_EQ(report->found.stripes_done, 6u);
  EXPECT_EQ(report->found.blocks_checked, 36u);
  EXPECT_EQ(report->found.blocks_corrupt, 2u);
  EXPECT_EQ(report->found.blocks_unreadable, 0u);
  EXPECT_EQ(report->found.parity_mismatches, 0u);
  EXPECT_EQ(report->found.blocks_rebuilt, 2u);
  EXPECT_EQ(report->found.bytes_checked, 34u * 4096);
  EXPECT_EQ(report->objects_failed, 0u);
  // Repaired byte-exact, on disk: the stored blocks now read back good as they were.
  auto st = store_->Stat("o", false, /*verify=*/true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 0u);
  EXPECT_EQ(Block("o", 2, 5), parity_before);
  EXPECT_EQ(Block("o", 4, 1), data_before);
  EXPECT_EQ(Get("o").value(), data);
  // A second scrub finds nothing.
  report = Scrub(scrubber, {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->found.blocks_corrupt + report->found.blocks_rebuilt, 0u);
  const ScrubberStatus status = scrubber.Status();
  EXPECT_EQ(status.found_total.blocks_corrupt, 2u);
  EXPECT_EQ(status.found_total.blocks_rebuilt, 2u);
  EXPECT_EQ(status.objects_scrubbed_total, 2u);
}

TEST_F(ScrubTest, ParityThatPassesItsChecksumButDoesNotMatchTheDataIsRewritten) {
  const auto data = RandomBytes(3 * 4 * 4096, 2);
  auto object = Put("o", data);
  ASSERT_TRUE(object.ok());
  const std::vector<uint8_t> parity_before = Block("o", 1, 4);
  // Wrong parity with a matching checksum: what a bug in the encoder would leave behind.
  BlockRecord b = BlockOf("o", 1, 4);
  std::vector<uint8_t> wrong = Snapshot(b);
  for (size_t i = 0; i < 64; ++i) wrong[i] ^= 0x5a;
  Restore(b, wrong);
  b.crc32c = Crc32c(absl::MakeConstSpan(wrong).first(4096));
  {
    auto catalog = Catalog::Open((dir_ / "catalog.db").string());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    ASSERT_TRUE((*catalog)->ReplaceBlocks(object->id, {b}).ok());
  }
  Scrubber scrubber(store_.get(), Foreground());
  auto check = Scrub(scrubber, {"o"}, /*repair=*/false);  // Check only: nothing changes.
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->found.parity_mismatches, 1u);
  EXPECT_EQ(check->found.blocks_corrupt, 0u);
  EXPECT_EQ(check->found.blocks_rebuilt, 0u);
  std::vector<uint8_t> wrong_block(wrong.begin(), wrong.begin() + 4096);
  EXPECT_EQ(Block("o", 1, 4), wrong_block);

  auto repair = Scrub(scrubber, {"o"});
  ASSERT_TRUE(repair.ok()) << repair.status();
  EXPECT_EQ(repair->found.parity_mismatches, 1u);
  EXPECT_EQ(repair->found.blocks_rebuilt, 1u);
  EXPECT_EQ(Block("o", 1, 4), parity_before);  // The data decided.
  EXPECT_EQ(Get("o").value(), data);
  auto again = Scrub(scrubber, {"o"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->found.parity_mismatches, 0u);
}

TEST_F(ScrubTest, CheckOnlyReportsCorruptionAndWritesNothing) {
  const auto data = RandomBytes(2 * 4 * 4096, 3);
  ASSERT_TRUE(Put("o", data).ok());
  const BlockRecord b = BlockOf("o", 0, 2);
  FlipBit(b, 100, 7);
  const uint64_t free_before = TotalFree();
  Scrubber scrubber(store_.get(), Foreground());
  auto report = Scrub(scrubber, {"o"}, /*repair=*/false);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->found.blocks_corrupt, 1u);
  EXPECT_EQ(report->found.blocks_rebuilt, 0u);
  EXPECT_EQ(TotalFree(), free_before);
  const BlockRecord after = BlockOf("o", 0, 2);
  EXPECT_EQ(after.device, b.device);
  EXPECT_EQ(after.lba, b.lba);
  EXPECT_TRUE(after.corrupt);  // Flagged, so reads avoid it until it is repaired.
  EXPECT_EQ(Get("o").value(), data);
}

TEST_F(ScrubTest, LostStripesAreReportedAndTheRestIsRepaired) {
  ASSERT_TRUE(Put("fragile", RandomBytes(4 * 4 * 4096, 4)).ok());
  const auto good = RandomBytes(4 * 4096 * 2, 5);
  ASSERT_TRUE(Put("good", good).ok());
  // Three bad blocks in stripe 1 of a 4+2 object: more than K.
  for (uint32_t i = 0; i < 3; ++i) FlipBit(BlockOf("fragile", 1, i), 0, 1);
  FlipBit(BlockOf("fragile", 3, 0), 0, 1);  // repairable
  FlipBit(BlockOf("good", 0, 5), 9, 1);     // repairable
  Scrubber scrubber(store_.get(), Foreground());
  auto report = Scrub(scrubber, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->objects_total, 2u);
  EXPECT_EQ(report->objects_done, 2u);
  EXPECT_EQ(report->objects_failed, 1u);
  ASSERT_EQ(report->errors.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(report->errors[0], "fragile: 1 of 4 stripes")) << report->errors[0];
  EXPECT_EQ(report->found.lost_stripes, 1u);
  EXPECT_EQ(report->found.blocks_corrupt, 5u);
  EXPECT_EQ(report->found.blocks_rebuilt, 2u);
  EXPECT_EQ(Get("good").value(), good);
  auto st = store_->Stat("fragile", false, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 1u);  // Only the lost stripe is left bad.
}

TEST_F(ScrubTest, NamedObjectMustExist) {
  Scrubber scrubber(store_.get(), Foreground());
  auto report = Scrub(scrubber, {"missing"});
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ScrubTest, ReadsAndUpdatesRunBetweenBatchesOfAScrub) {
  const auto data = RandomBytes(200 * 4 * 4096, 6);  // 200 stripes: 4 batches of 64
  ASSERT_TRUE(Put("big", data).ok());
  FlipBit(BlockOf("big", 150, 3), 5, 5);
  Scrubber scrubber(store_.get(), Foreground());
  int calls = 0;
  std::vector<uint8_t> model = data;
  auto report = scrubber.ScrubNow(
      {"big"}, ScrubOptions{},
      [&](const ScrubReport& now) {
        ++calls;
        if (calls == 2) {  // The object's lock is free between batches.
          VectorSink sink;
          ASSERT_TRUE(store_->Read("big", 4096 * 4 * 70, 4096, sink).ok());
          const std::vector<uint8_t> patch(4096, 0xee);
          VectorSource src(patch);
          ASSERT_TRUE(store_->Update("big", 4096 * 4 * 180, src, false).ok());
          std::copy(patch.begin(), patch.end(), model.begin() + 4096 * 4 * 180);
        }
      },
      nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(calls, 5);  // 4 batches and the final report
  EXPECT_EQ(report->found.blocks_corrupt, 1u);
  EXPECT_EQ(report->found.parity_mismatches, 0u);  // The update kept parity exact.
  EXPECT_EQ(Get("big").value(), model);
}

TEST_F(ScrubTest, CancelStopsBetweenBatches) {
  ASSERT_TRUE(Put("big", RandomBytes(200 * 4 * 4096, 7)).ok());
  Scrubber scrubber(store_.get(), Foreground());
  std::atomic<int> polls = 0;
  auto report = scrubber.ScrubNow({}, ScrubOptions{}, nullptr, [&] { return ++polls > 2; });
  EXPECT_EQ(report.status().code(), absl::StatusCode::kCancelled) << report.status();
  EXPECT_GT(scrubber.Status().found_total.stripes_done, 0u);
  EXPECT_LT(scrubber.Status().found_total.stripes_done, 200u);
}

TEST_F(ScrubTest, RateLimitPacesTheScrub) {
  ASSERT_TRUE(Put("o", RandomBytes(128 * 4 * 4096, 8)).ok());  // 128 stripes, 3 MiB of blocks
  Scrubber scrubber(store_.get(), Foreground());
  const absl::Time start = absl::Now();
  auto report =
      scrubber.ScrubNow({"o"}, ScrubOptions{.rate_bytes_per_sec = 4 << 20}, nullptr, nullptr);
  ASSERT_TRUE(report.ok());
  // The pacer sleeps after each batch until the bytes so far fit the rate: after the second
  // and last batch, 3 MiB at 4 MiB/s is 0.75 s. (A lower bound only: a busy machine is slower.)
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(700));
}

// The totals (what metrics export) move while a scrub runs, batch by batch, not at its end.
TEST_F(ScrubTest, TotalsMoveDuringAScrub) {
  ASSERT_TRUE(Put("o", RandomBytes(128 * 4 * 4096, 8)).ok());
  Scrubber scrubber(store_.get(), Foreground());
  uint64_t seen_mid_scrub = 0;
  auto report = scrubber.ScrubNow(
      {"o"}, ScrubOptions{.rate_bytes_per_sec = 4 << 20},
      [&](const ScrubReport& r) {
        if (r.found.stripes_done < 128) {
          seen_mid_scrub = scrubber.Status().found_total.bytes_checked;
        }
      },
      nullptr);
  ASSERT_TRUE(report.ok());
  EXPECT_GT(seen_mid_scrub, 0u);
  EXPECT_LT(seen_mid_scrub, report->found.bytes_checked);
  // And at the end they hold the scrub exactly once.
  const ScrubberStatus s = scrubber.Status();
  EXPECT_EQ(s.found_total.bytes_checked, report->found.bytes_checked);
  EXPECT_EQ(s.found_total.blocks_checked, report->found.blocks_checked);
  EXPECT_EQ(s.objects_scrubbed_total, 1u);
}

TEST_F(ScrubTest, BackgroundPassRunsOnANewStoreAndIsRememberedAcrossRestarts) {
  const auto data = RandomBytes(3 * 4 * 4096, 9);
  ASSERT_TRUE(Put("o", data).ok());
  FlipBit(BlockOf("o", 1, 0), 1, 1);
  {
    Scrubber scrubber(store_.get(),
                      ScrubberOptions{.interval = absl::Hours(1), .rate_bytes_per_sec = 0});
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (scrubber.Status().passes == 0 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    const ScrubberStatus s = scrubber.Status();
    ASSERT_EQ(s.passes, 1u);
    EXPECT_TRUE(s.background);
    EXPECT_FALSE(s.running);
    EXPECT_EQ(s.last.objects_done, 1u);
    EXPECT_EQ(s.last.found.blocks_corrupt, 1u);
    EXPECT_EQ(s.last.found.blocks_rebuilt, 1u);
    EXPECT_GE(s.next_start - s.last_finished, absl::Minutes(59));
  }
  auto st = store_->Stat("o", false, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 0u);
  Open();  // Restart: the last pass is remembered, so the next one waits for the interval.
  Scrubber scrubber(store_.get(), ScrubberOptions{.interval = absl::Hours(1)});
  absl::SleepFor(absl::Milliseconds(200));
  const ScrubberStatus s = scrubber.Status();
  EXPECT_EQ(s.passes, 0u);
  EXPECT_GT(s.last_finished, absl::Now() - absl::Minutes(5));
  EXPECT_GT(s.next_start, absl::Now() + absl::Minutes(50));
  scrubber.StartPass();  // ... unless asked.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (scrubber.Status().passes == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(scrubber.Status().passes, 1u);
}

}  // namespace
}  // namespace ecd::repair
