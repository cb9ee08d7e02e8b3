// Tests first-fit allocation, coalescing, and detection of double use and double free.
#include "lib/devices/extent_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ecd::store {
namespace {

TEST(ExtentAllocatorTest, AllocatesFirstFitAndRunsOut) {
  ExtentAllocator a(10);
  EXPECT_EQ(a.Allocate(4), 0u);
  EXPECT_EQ(a.Allocate(4), 4u);
  EXPECT_EQ(a.Allocate(4), std::nullopt);
  EXPECT_EQ(a.Allocate(2), 8u);
  EXPECT_EQ(a.free_lbas(), 0u);
  EXPECT_EQ(a.Allocate(0), std::nullopt);
}

TEST(ExtentAllocatorTest, FreeCoalescesNeighbours) {
  ExtentAllocator a(12);
  ASSERT_EQ(a.Allocate(4), 0u);
  ASSERT_EQ(a.Allocate(4), 4u);
  ASSERT_EQ(a.Allocate(4), 8u);
  ASSERT_TRUE(a.Free(0, 4).ok());
  ASSERT_TRUE(a.Free(8, 4).ok());
  EXPECT_EQ(a.largest_free_run(), 4u);
  ASSERT_TRUE(a.Free(4, 4).ok());
  EXPECT_EQ(a.largest_free_run(), 12u);
  EXPECT_EQ(a.Allocate(12), 0u);
}

TEST(ExtentAllocatorTest, RejectsDoubleFreeAndOverlappingUse) {
  ExtentAllocator a(16);
  ASSERT_TRUE(a.MarkUsed(4, 4).ok());
  EXPECT_FALSE(a.MarkUsed(6, 4).ok());   // Overlaps [4, 8).
  EXPECT_FALSE(a.MarkUsed(15, 2).ok());  // Past the end.
  ASSERT_TRUE(a.Free(4, 4).ok());
  EXPECT_FALSE(a.Free(4, 4).ok());  // Double free.
  EXPECT_FALSE(a.Free(2, 4).ok());  // Partly free.
  EXPECT_EQ(a.free_lbas(), 16u);
}

TEST(ExtentAllocatorTest, FreeRunsInClipsToTheRange) {
  ExtentAllocator a(32);
  ASSERT_TRUE(a.MarkUsed(4, 4).ok());  // free: [0, 4), [8, 20), [24, 32)
  ASSERT_TRUE(a.MarkUsed(20, 4).ok());
  using Runs = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(a.FreeRunsIn(0, 32), (Runs{{0, 4}, {8, 12}, {24, 8}}));
  EXPECT_EQ(a.FreeRunsIn(2, 8), (Runs{{2, 2}, {8, 2}}));  // [2, 10)
  EXPECT_EQ(a.FreeRunsIn(4, 4), Runs{});                  // all used
  EXPECT_EQ(a.FreeRunsIn(10, 20), (Runs{{10, 10}, {24, 6}}));
  EXPECT_EQ(a.FreeRunsIn(31, 1), (Runs{{31, 1}}));
}

TEST(ExtentAllocatorTest, RandomOperationsKeepAccounting) {
  std::mt19937 rng(1);
  ExtentAllocator a(1000);
  std::vector<std::pair<uint64_t, uint64_t>> used;
  std::vector<bool> map(1000, false);
  for (int op = 0; op < 5000; ++op) {
    if (used.empty() || rng() % 2) {
      const uint64_t n = 1 + rng() % 20;
      if (auto lba = a.Allocate(n)) {
        for (uint64_t i = *lba; i < *lba + n; ++i) {
          ASSERT_FALSE(map[i]) << "allocated twice: " << i;
          map[i] = true;
        }
        used.emplace_back(*lba, n);
      }
    } else {
      const size_t k = rng() % used.size();
      ASSERT_TRUE(a.Free(used[k].first, used[k].second).ok());
      for (uint64_t i = used[k].first; i < used[k].first + used[k].second; ++i) map[i] = false;
      used.erase(used.begin() + static_cast<long>(k));
    }
    uint64_t in_use = 0;
    for (bool b : map) in_use += b;
    ASSERT_EQ(a.used_lbas(), in_use);
  }
}

}  // namespace
}  // namespace ecd::store
