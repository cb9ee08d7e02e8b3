// DmaMap tests: registration rules (alignment, overlap), containment across adjacent regions,
// and registrations that end with their owner.
#include "lib/nvme/dma_map.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace ecd::nvme {
namespace {

constexpr uint64_t kBase = uint64_t{1} << 40;  // addresses only: nothing is dereferenced

const void* At(uint64_t offset) { return reinterpret_cast<const void*>(kBase + offset); }

TEST(DmaMap, RegistersAlignedRegionsThatDoNotOverlap) {
  DmaMap map;
  ASSERT_TRUE(map.Register(At(0), 8192).ok());
  ASSERT_TRUE(map.Register(At(65536), 4096).ok());
  EXPECT_EQ(map.Register(At(4096), 4096).code(), absl::StatusCode::kInvalidArgument);   // inside
  EXPECT_EQ(map.Register(At(61440), 8192).code(), absl::StatusCode::kInvalidArgument);  // tail
  EXPECT_EQ(map.Register(At(65536), 4096).code(), absl::StatusCode::kInvalidArgument);  // same
  EXPECT_EQ(map.Register(At(12288 + 512), 4096).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(map.Register(At(12288), 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(map.Register(reinterpret_cast<const void*>(~uint64_t{4095}), 8192).code(),
            absl::StatusCode::kInvalidArgument);  // wraps around the address space
  EXPECT_EQ(map.regions(), 2u);
  ASSERT_TRUE(map.Register(At(8192), 4096).ok());  // touching both neighbours' ends is fine
  EXPECT_EQ(map.regions(), 3u);
}

TEST(DmaMap, ContainsOnlyRegisteredBytes) {
  DmaMap map;
  ASSERT_TRUE(map.Register(At(4096), 8192).ok());   // [4K, 12K)
  ASSERT_TRUE(map.Register(At(12288), 4096).ok());  // [12K, 16K): adjacent
  ASSERT_TRUE(map.Register(At(20480), 4096).ok());  // [20K, 24K): after a gap
  EXPECT_TRUE(map.Contains(kBase + 4096, 1));
  EXPECT_TRUE(map.Contains(kBase + 4096, 8192));
  EXPECT_TRUE(map.Contains(kBase + 5000, 11384));  // to the end of the adjacent region
  EXPECT_FALSE(map.Contains(kBase + 5000, 11385));
  EXPECT_FALSE(map.Contains(kBase + 4095, 2));       // starts before
  EXPECT_FALSE(map.Contains(kBase + 12288, 12288));  // crosses the gap
  EXPECT_FALSE(map.Contains(kBase + 16384, 1));      // in the gap
  EXPECT_TRUE(map.Contains(kBase + 24575, 1));
  EXPECT_FALSE(map.Contains(kBase + 24576, 1));
  EXPECT_FALSE(map.Contains(kBase, 1));
  EXPECT_FALSE(map.Contains(kBase + 4096, 0));
  EXPECT_FALSE(map.Contains(~uint64_t{0}, 2));  // wraps
}

TEST(DmaMap, ListsTheFixedRegionsInAddressOrder) {
  DmaMap map;
  ASSERT_TRUE(map.Register(At(65536), 8192, /*fixed=*/true).ok());
  ASSERT_TRUE(map.Register(At(0), 4096).ok());
  ASSERT_TRUE(map.Register(At(8192), 4096, /*fixed=*/true).ok());
  const std::vector<iovec> fixed = map.FixedRegions();
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(fixed[0].iov_base, At(8192));
  EXPECT_EQ(fixed[0].iov_len, 4096u);
  EXPECT_EQ(fixed[1].iov_base, At(65536));
  EXPECT_EQ(fixed[1].iov_len, 8192u);
  EXPECT_TRUE(map.Contains(kBase + 8192, 4096));  // fixed regions are registered memory too
}

TEST(DmaMap, UnregisterRemovesExactlyOneRegion) {
  DmaMap map;
  ASSERT_TRUE(map.Register(At(0), 4096).ok());
  ASSERT_TRUE(map.Register(At(4096), 4096).ok());
  EXPECT_EQ(map.Unregister(At(2048)).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(map.Unregister(At(0)).ok());
  EXPECT_FALSE(map.Contains(kBase, 1));
  EXPECT_TRUE(map.Contains(kBase + 4096, 4096));
  EXPECT_EQ(map.Unregister(At(0)).code(), absl::StatusCode::kNotFound);
}

TEST(DmaRegistration, EndsWithItsOwnerAndMoves) {
  DmaMap map;
  {
    DmaRegistration a(&map, At(0), 4096);
    EXPECT_TRUE(a.registered());
    EXPECT_TRUE(map.Contains(kBase, 4096));
    DmaRegistration overlapping(&map, At(0), 4096);  // refused: the buffer just is not mapped
    EXPECT_FALSE(overlapping.registered());
    DmaRegistration b(std::move(a));
    EXPECT_FALSE(a.registered());  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_TRUE(b.registered());
    DmaRegistration c(&map, At(8192), 4096);
    c = std::move(b);  // c's own region ends; it now holds [0, 4K)
    EXPECT_FALSE(map.Contains(kBase + 8192, 1));
    EXPECT_TRUE(map.Contains(kBase, 4096));
    EXPECT_EQ(map.regions(), 1u);
  }
  EXPECT_EQ(map.regions(), 0u);
  DmaRegistration none(nullptr, At(0), 4096);
  EXPECT_FALSE(none.registered());
}

}  // namespace
}  // namespace ecd::nvme
