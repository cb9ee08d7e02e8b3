// Tests for the host-memory page pool: page size rules, contiguous-first allocation, fallback to
// scattered pages, merging on free, translation bounds and blocking allocation.
#include "lib/nvme/host_memory.h"

#include <gtest/gtest.h>

#include <thread>

namespace ecd::nvme {
namespace {

TEST(HostMemory, PageSizeMustBePowerOfTwoFrom4KTo64K) {
  EXPECT_FALSE(HostMemory::Create(2048, 4).ok());
  EXPECT_FALSE(HostMemory::Create(12288, 4).ok());
  EXPECT_FALSE(HostMemory::Create(131072, 4).ok());
  EXPECT_FALSE(HostMemory::Create(4096, 0).ok());
  for (uint32_t p : {4096u, 8192u, 16384u, 32768u, 65536u}) {
    auto m = HostMemory::Create(p, 4);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(1u << (12 + (*m)->mps()), p);
    EXPECT_EQ((*m)->base_address() % p, 0u);  // mmap gives page alignment
  }
}

TEST(HostMemory, PrefersContiguousThenScatters) {
  auto m = *HostMemory::Create(4096, 8);
  const uint64_t base = m->base_address();
  auto a = *m->AllocatePages(3);
  EXPECT_EQ(a, (std::vector<uint64_t>{base, base + 4096, base + 8192}));
  auto b = *m->AllocatePages(2);
  EXPECT_EQ(b[0], base + 3 * 4096);
  m->FreePages({a[1]});           // hole of one page at index 1
  auto c = *m->AllocatePages(3);  // fits in the 3 pages at 5..7
  EXPECT_EQ(c[0], base + 5 * 4096);
  EXPECT_EQ(c[2], base + 7 * 4096);
  m->FreePages({b[0]});           // free: 1, 3
  auto d = *m->AllocatePages(2);  // no run of 2: scattered
  EXPECT_EQ(d, (std::vector<uint64_t>{base + 4096, base + 3 * 4096}));
  EXPECT_EQ(m->free_pages(), 0u);
  EXPECT_EQ(m->AllocatePages(1).status().code(), absl::StatusCode::kResourceExhausted);
  m->FreePages({a[0], a[2]});  // a[1] now belongs to d
  m->FreePages(d);
  m->FreePages({b[1]});
  m->FreePages(c);
  EXPECT_EQ(m->free_pages(), 8u);
  EXPECT_EQ(m->AllocatePages(8)->front(), m->base_address());  // merged back into one run
}

TEST(HostMemory, FreeMergesRuns) {
  auto m = *HostMemory::Create(4096, 6);
  auto a = *m->AllocatePages(6);
  m->FreePages({a[0], a[2], a[4]});
  m->FreePages({a[1], a[3], a[5]});
  auto all = *m->AllocatePages(6);  // one contiguous run again
  for (int i = 0; i < 6; ++i) EXPECT_EQ(all[i], m->base_address() + i * 4096ULL);
}

TEST(HostMemory, RunsAreContiguousOrRefused) {
  auto m = *HostMemory::Create(4096, 10);
  const uint64_t base = m->base_address();
  EXPECT_EQ(*m->AllocateRun(4), base);
  EXPECT_EQ(*m->AllocateRun(3), base + 4 * 4096);
  const uint64_t single = *m->AllocateRun(1);  // page 7; pages 8..9 stay free
  m->FreeRun(base, 4);                         // free: 0..3, 8..9
  EXPECT_EQ(m->free_pages(), 6u);
  // Six pages are free, but no run of five: refused at once, nothing taken.
  EXPECT_EQ(m->AllocateRun(5).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(m->AllocateRun(0).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(m->free_pages(), 6u);
  EXPECT_EQ(*m->AllocateRun(2), base);  // first fit
  m->FreeRun(base, 2);
  m->FreeRun(base + 4 * 4096, 3);
  m->FreePages({single});
  EXPECT_EQ(*m->AllocateRun(10), base);  // every run merged back into one
}

TEST(HostMemory, TranslateChecksBounds) {
  auto m = *HostMemory::Create(4096, 2);
  const uint64_t base = m->base_address();
  EXPECT_NE(m->Translate(base, 8192), nullptr);
  EXPECT_EQ(m->Translate(base, 8193), nullptr);
  EXPECT_EQ(m->Translate(base - 8, 8), nullptr);
  EXPECT_EQ(m->Translate(base + 8192, 1), nullptr);
  EXPECT_EQ(m->Translate(~uint64_t{0} - 2, 8), nullptr);
  m->Translate(base + 100, 4)[0] = 0x5A;
  uint8_t x = 0;
  EXPECT_TRUE(m->Read(base + 100, &x, 1));
  EXPECT_EQ(x, 0x5A);
  EXPECT_FALSE(m->Read(base + 8190, &x, 4));
}

TEST(HostMemory, WaitBlocksUntilFreed) {
  auto m = *HostMemory::Create(4096, 4);
  auto a = *m->AllocatePages(4);
  EXPECT_EQ(m->AllocatePagesWait(5).status().code(), absl::StatusCode::kResourceExhausted);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m->FreePages(a);
  });
  auto b = m->AllocatePagesWait(4);
  t.join();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 4u);
}

TEST(HostMemory, FixedBuffersCoverTheArena) {
  auto m = *HostMemory::Create(65536, 16);
  auto v = m->FixedBuffers();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].iov_base, reinterpret_cast<void*>(m->base_address()));
  EXPECT_EQ(v[0].iov_len, 16u * 65536u);
}

}  // namespace
}  // namespace ecd::nvme
