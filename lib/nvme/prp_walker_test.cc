// PRP rule tests: the host-side builder and the controller-side walker (through the PG329-style
// fetch manager) agree on every shape the NVMe rules allow, and the walker rejects each invalid
// shape with the specified status.
#include "lib/nvme/prp_walker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "lib/nvme/host_memory.h"
#include "lib/nvme/prp_builder.h"

namespace ecd::nvme {
namespace {

class PrpWalkerTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    page_ = GetParam();
    memory_ = *HostMemory::Create(page_, 3000);
    PrpFetchOptions o;
    o.page_size = page_;
    fetcher_ = *PrpFetchManager::Create(
        o, [this](uint64_t a, void* d, size_t n) { return memory_->Read(a, d, n); });
  }

  // `n` data pages, deliberately not contiguous (every other page, in descending order).
  std::vector<uint64_t> ScatteredPages(uint64_t n) {
    auto all = *memory_->AllocatePages(2 * n);
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < n; ++i) out.push_back(all[2 * (n - 1 - i)]);
    for (uint64_t i = 0; i < n; ++i) spare_.push_back(all[2 * i + 1]);
    return out;
  }

  // Builds PRPs for (offset, length) and checks that the walk yields exactly the expected pages.
  void RoundTrip(uint32_t offset, uint64_t length, uint32_t list_offset = 0) {
    SCOPED_TRACE(::testing::Message() << "page " << page_ << " offset " << offset << " length "
                                      << length << " list offset " << list_offset);
    const uint64_t n = DataPageCount(page_, offset, length);
    std::vector<uint64_t> pages = ScatteredPages(n);
    auto d = BuildPrps(*memory_, pages, offset, length, list_offset);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->prp1, pages[0] + offset);
    if (n == 1) {
      EXPECT_EQ(d->prp2, 0u);
    }
    if (n == 2) {
      EXPECT_EQ(d->prp2, pages[1]);
    }
    if (n > 2) {
      EXPECT_EQ(d->prp2, d->list_pages[0] + list_offset);
      EXPECT_EQ(d->list_pages.size(), ListPageCount(page_, list_offset, n - 1));
    }
    PrpWalk w = WalkPrps(*fetcher_, page_, d->prp1, d->prp2, length);
    ASSERT_TRUE(w.status.ok()) << w.status.ToString();
    ASSERT_EQ(w.segments.size(), n);
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; ++i) {
      EXPECT_EQ(w.segments[i].addr, pages[i] + (i == 0 ? offset : 0)) << i;
      const uint64_t expect_len = i == 0 ? std::min<uint64_t>(length, page_ - offset)
                                         : std::min<uint64_t>(page_, length - total);
      EXPECT_EQ(w.segments[i].len, expect_len) << i;
      total += w.segments[i].len;
    }
    EXPECT_EQ(total, length);
    memory_->FreePages(d->list_pages);
    memory_->FreePages(pages);
    memory_->FreePages(spare_);
    spare_.clear();
  }

  uint32_t page_ = 0;
  std::unique_ptr<HostMemory> memory_;
  std::unique_ptr<PrpFetchManager> fetcher_;
  std::vector<uint64_t> spare_;
};

TEST_P(PrpWalkerTest, EveryLengthFromOneByteToMdtsAtOffsets0_4_PageMinus4) {
  const uint64_t mdts = 1 << 20;
  std::mt19937_64 rng(page_);
  for (uint32_t offset : {0u, 4u, page_ - 4}) {
    std::vector<uint64_t> lengths = {
        1,         4,         page_ - offset, page_ - offset + 4, page_,
        page_ + 4, 2 * page_, 2 * page_ + 4,  3 * page_,          mdts - offset,
        mdts};
    for (int i = 0; i < 20; ++i) lengths.push_back(1 + rng() % mdts);
    for (uint64_t len : lengths) RoundTrip(offset, len);
  }
}

TEST_P(PrpWalkerTest, ExactlyOneTwoAndThreePages) {
  RoundTrip(0, page_);          // PRP2 unused
  RoundTrip(0, 2 * page_);      // PRP2 = second page
  RoundTrip(0, 3 * page_);      // PRP2 = list of two entries
  RoundTrip(8, page_);          // one page of data across two pages: PRP2 = second page
  RoundTrip(8, 2 * page_ - 8);  // ends exactly at the second page's end
  RoundTrip(8, 2 * page_);      // touches three pages: list
}

// Shapes that need thousands of pages at larger page sizes run with 4 KiB pages only.
class PrpWalker4K : public PrpWalkerTest {};

TEST_P(PrpWalker4K, ListPagesChainOnlyWhenMoreThanOneEntryRemains) {
  const uint64_t slots = page_ / 8;
  // A full first list page as the last one: `slots` data entries, no chain.
  RoundTrip(0, (slots + 1) * page_);
  // One more entry: slots-1 data entries + chain, then 2 entries.
  RoundTrip(0, (slots + 2) * page_);
  // A last list page with exactly `slots` data entries after a chained one.
  RoundTrip(0, (1 + (slots - 1) + slots) * page_);
}

TEST_P(PrpWalkerTest, FirstListStartsMidPage) {
  RoundTrip(0, 3 * page_, page_ - 16);  // two slots: both data
  RoundTrip(0, 4 * page_, page_ - 16);  // three entries: data + chain, then two
  RoundTrip(4, 40 * page_, page_ - 8);  // one slot: it can only be the chain pointer
}

TEST_P(PrpWalker4K, ListLayoutOnTheWire) {
  // 511 data entries + chain, then 512 data entries in the last list page.
  const uint64_t n = 1 + 511 + 512;
  std::vector<uint64_t> pages = ScatteredPages(n);
  auto d = *BuildPrps(*memory_, pages, 0, n * page_);
  ASSERT_EQ(d.list_pages.size(), 2u);
  const auto* l0 = reinterpret_cast<const uint64_t*>(memory_->Translate(d.list_pages[0], 4096));
  const auto* l1 = reinterpret_cast<const uint64_t*>(memory_->Translate(d.list_pages[1], 4096));
  EXPECT_EQ(l0[0], pages[1]);
  EXPECT_EQ(l0[510], pages[511]);
  EXPECT_EQ(l0[511], d.list_pages[1]);  // chain
  EXPECT_EQ(l1[0], pages[512]);
  EXPECT_EQ(l1[511], pages[1023]);  // last slot is data: nothing follows
  PrpWalk w = WalkPrps(*fetcher_, page_, d.prp1, d.prp2, n * page_);
  ASSERT_TRUE(w.status.ok());
  ASSERT_EQ(w.segments.size(), n);
  EXPECT_EQ(w.segments.back().addr, pages[1023]);
}

INSTANTIATE_TEST_SUITE_P(PageSizes, PrpWalkerTest, ::testing::Values(4096u, 16384u, 65536u));
INSTANTIATE_TEST_SUITE_P(Page4K, PrpWalker4K, ::testing::Values(4096u));

class PrpWalkerErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    memory_ = *HostMemory::Create(4096, 64);
    fetcher_ = *PrpFetchManager::Create(PrpFetchOptions{}, [this](uint64_t a, void* d, size_t n) {
      return memory_->Read(a, d, n);
    });
    pages_ = *memory_->AllocatePages(40);
  }
  uint64_t* Slots(uint64_t addr) {
    return reinterpret_cast<uint64_t*>(memory_->Translate(addr, 8));
  }
  NvmeStatus Walk(uint64_t prp1, uint64_t prp2, uint64_t len) {
    return WalkPrps(*fetcher_, 4096, prp1, prp2, len).status;
  }
  std::unique_ptr<HostMemory> memory_;
  std::unique_ptr<PrpFetchManager> fetcher_;
  std::vector<uint64_t> pages_;
};

TEST_F(PrpWalkerErrors, Prp1NotDwordAligned) {
  EXPECT_EQ(Walk(pages_[0] + 2, 0, 16), Failure(kScPrpOffsetInvalid));
  EXPECT_EQ(Walk(pages_[0] + 1, 0, 16), Failure(kScPrpOffsetInvalid));
}

TEST_F(PrpWalkerErrors, Prp2DataPointerWithOffset) {
  EXPECT_EQ(Walk(pages_[0], pages_[1] + 512, 8192), Failure(kScPrpOffsetInvalid));
  EXPECT_TRUE(Walk(pages_[0], pages_[1], 8192).ok());
}

TEST_F(PrpWalkerErrors, ListPointerNotQwordAligned) {
  EXPECT_EQ(Walk(pages_[0], pages_[2] + 4, 3 * 4096), Failure(kScPrpOffsetInvalid));
}

TEST_F(PrpWalkerErrors, ListEntryWithOffset) {
  auto d = *BuildPrps(*memory_, absl::MakeConstSpan(pages_).subspan(0, 20), 0, 20 * 4096);
  Slots(d.prp2)[17] += 0x200;  // in the second ping/pong set
  EXPECT_EQ(Walk(d.prp1, d.prp2, 20 * 4096), Failure(kScPrpOffsetInvalid));
}

TEST_F(PrpWalkerErrors, ChainPointerWithOffset) {
  // A first list of two slots at the end of a page: slot 1 chains.
  auto d = *BuildPrps(*memory_, absl::MakeConstSpan(pages_).subspan(0, 5), 0, 5 * 4096, 4096 - 16);
  Slots(d.prp2)[1] += 64;
  EXPECT_EQ(Walk(d.prp1, d.prp2, 5 * 4096), Failure(kScPrpOffsetInvalid));
}

TEST_F(PrpWalkerErrors, UnreadableListIsDataTransferError) {
  EXPECT_EQ(Walk(pages_[0], 0x10, 3 * 4096), Failure(kScDataTransferError));
  const uint64_t end = memory_->base_address() + memory_->size_bytes();
  EXPECT_EQ(Walk(pages_[0], end - 8, 4 * 4096), Failure(kScDataTransferError));
}

TEST_F(PrpWalkerErrors, IndexesAreReleasedAfterErrors) {
  // More failing walks than indexes: each must give its index back.
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(Walk(pages_[0], 0x10, 3 * 4096), Failure(kScDataTransferError));
  }
  auto d = *BuildPrps(*memory_, absl::MakeConstSpan(pages_).subspan(0, 3), 0, 3 * 4096);
  EXPECT_TRUE(Walk(d.prp1, d.prp2, 3 * 4096).ok());
}

TEST(CoalesceSegments, MergesContiguousRunsWithinBoundaries) {
  std::vector<DataSegment> s = {{0x1000, 4096}, {0x2000, 4096}, {0x4000, 4096}, {0x5000, 100}};
  EXPECT_EQ(CoalesceSegments(s, 0, 1 << 30, 1 << 20),
            (std::vector<DataSegment>{{0x1000, 8192}, {0x4000, 4196}}));
  // A boundary at 0x2000 splits the first run.
  EXPECT_EQ(CoalesceSegments(s, 0, 0x2000, 1 << 20).size(), 3u);
  // A length cap.
  EXPECT_EQ(CoalesceSegments(s, 0, 1 << 30, 4096).size(), 4u);
}

}  // namespace
}  // namespace ecd::nvme
