// StripeMemory tests: arena runs are zeroed and given back; a fragmented or missing arena falls
// back to a mapping of its own.
#include "lib/store/stripe_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace ecd::store {
namespace {

constexpr uint32_t kPage = 4096;

TEST(StripeMemory, IsAZeroedRunOfTheArenaGivenBackWhenDone) {
  auto arena = *nvme::HostMemory::Create(kPage, 8);
  std::memset(arena->Translate(arena->base_address(), 8 * kPage), 0xA5, 8 * kPage);
  {
    StripeMemory a(arena.get(), 3 * kPage - 100);  // rounded up to 3 pages
    ASSERT_TRUE(a.in_arena());
    EXPECT_EQ(reinterpret_cast<uint64_t>(a.get()), arena->base_address());
    EXPECT_EQ(arena->free_pages(), 5u);
    for (uint64_t i = 0; i < 3 * kPage - 100; ++i) ASSERT_EQ(a.get()[i], 0) << i;
  }
  EXPECT_EQ(arena->free_pages(), 8u);
}

TEST(StripeMemory, FallsBackToAMappingWhenNoRunIsLongEnough) {
  auto arena = *nvme::HostMemory::Create(kPage, 8);
  // Pages 0-1 and 4-5 free, 2-3 and 6-7 held: four free pages, no run of three.
  auto first = std::make_unique<StripeMemory>(arena.get(), 2 * kPage);
  StripeMemory held1(arena.get(), 2 * kPage);
  auto second = std::make_unique<StripeMemory>(arena.get(), 2 * kPage);
  StripeMemory held2(arena.get(), 2 * kPage);
  first.reset();
  second.reset();
  ASSERT_EQ(arena->free_pages(), 4u);
  {
    StripeMemory wide(arena.get(), 3 * kPage);
    ASSERT_NE(wide.get(), nullptr);
    EXPECT_FALSE(wide.in_arena());
    EXPECT_EQ(reinterpret_cast<uint64_t>(wide.get()) % kPage, 0u);
    for (uint64_t i = 0; i < 3 * kPage; ++i) ASSERT_EQ(wide.get()[i], 0) << i;
    EXPECT_EQ(arena->free_pages(), 4u);           // nothing taken
    StripeMemory narrow(arena.get(), 2 * kPage);  // still fits a free run
    EXPECT_TRUE(narrow.in_arena());
  }
}

TEST(StripeMemory, WithoutAnArenaIsAZeroedMapping) {
  StripeMemory m(nullptr, 100);
  ASSERT_NE(m.get(), nullptr);
  EXPECT_FALSE(m.in_arena());
  EXPECT_EQ(reinterpret_cast<uint64_t>(m.get()) % kPage, 0u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(m.get()[i], 0) << i;
}

}  // namespace
}  // namespace ecd::store
