// Tests for the PG329-style PRP fetch manager: bit-exact header and fill descriptor encodings,
// and the PRP list walk (ping/pong sets, chaining, errors) against a fake host memory.
#include "lib/nvme/prp_fetch.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace ecd::nvme {
namespace {

using Bytes = std::array<uint8_t, 16>;

constexpr uint64_t kBase = 0x1000'0000;        // host memory holding the PRP lists
constexpr uint64_t kDataBase = 0x7'0000'0000;  // data page addresses (never read)
constexpr uint64_t k4K = 4096;
constexpr uint64_t kEntry = 8;  // bytes per PRP entry

// ------------------------------------------------------------------------------------------------
// Header and fill descriptor encodings.

// An independent bit-by-bit packer for the PRP fetch information header's bit positions (PG329).
Bytes RefPack(const PrpFetchInfo& f) {
  Bytes b{};
  auto put = [&b](int lsb, int width, uint64_t v) {
    for (int i = 0; i < width; ++i) {
      if (((v >> i) & 1) != 0) b[(lsb + i) / 8] |= static_cast<uint8_t>(1u << ((lsb + i) % 8));
    }
  };
  put(0, 32, f.data_size_rem);
  put(32, 61, f.host_addr >> 3);
  put(94, 1, f.sgl_or_prp ? 1 : 0);
  put(95, 12, f.prp_index);
  put(107, 1, f.ping_or_pong);
  put(108, 10, f.no_of_desc_rem);
  put(118, 6, f.error_code);
  put(124, 4, f.valid_entries);
  return b;
}

TEST(PrpFetchInfoTest, EachFieldAtMaxIsBitExact) {
  struct Case {
    const char* name;
    PrpFetchInfo info;
    Bytes bytes;
  };
  std::vector<Case> cases;
  {
    PrpFetchInfo f;
    f.data_size_rem = 0xFFFF'FFFF;
    cases.push_back({"data_size_rem", f, {0xFF, 0xFF, 0xFF, 0xFF}});
  }
  {
    PrpFetchInfo f;
    f.host_addr = 0xFFFF'FFFF'FFFF'FFF8;  // bits 63:3 all set -> bits 92:32
    cases.push_back({"host_addr", f, {0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F}});
  }
  {
    PrpFetchInfo f;
    f.sgl_or_prp = true;  // bit 94
    cases.push_back({"sgl_or_prp", f, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40}});
  }
  {
    PrpFetchInfo f;
    f.prp_index = 0xFFF;  // bits 106:95
    cases.push_back({"prp_index", f, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0xFF, 0x07}});
  }
  {
    PrpFetchInfo f;
    f.ping_or_pong = 1;  // bit 107
    cases.push_back({"ping_or_pong", f, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08}});
  }
  {
    PrpFetchInfo f;
    f.no_of_desc_rem = 0x3FF;  // bits 117:108
    cases.push_back({"no_of_desc_rem", f, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F}});
  }
  {
    PrpFetchInfo f;
    f.error_code = 0x3F;  // bits 123:118
    cases.push_back({"error_code", f, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC0, 0x0F}});
  }
  {
    PrpFetchInfo f;
    f.valid_entries = 0xF;  // bits 127:124
    cases.push_back({"valid_entries", f, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0}});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(c.info.Check().ok());
    EXPECT_EQ(c.info.Pack(), c.bytes);
    EXPECT_EQ(RefPack(c.info), c.bytes);
    absl::StatusOr<PrpFetchInfo> back = PrpFetchInfo::Unpack(c.bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, c.info);
  }
}

TEST(PrpFetchInfoTest, AllFieldsAtMaxFillEveryBitButReserved93) {
  PrpFetchInfo f;
  f.data_size_rem = 0xFFFF'FFFF;
  f.host_addr = 0xFFFF'FFFF'FFFF'FFF8;
  f.sgl_or_prp = true;
  f.prp_index = 0xFFF;
  f.ping_or_pong = 1;
  f.no_of_desc_rem = 0x3FF;
  f.error_code = 0x3F;
  f.valid_entries = 0xF;
  Bytes expected;
  expected.fill(0xFF);
  expected[11] = 0xDF;  // bit 93 = byte 11 bit 5
  EXPECT_EQ(f.Pack(), expected);
  absl::StatusOr<PrpFetchInfo> back = PrpFetchInfo::Unpack(expected);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, f);
}

TEST(PrpFetchInfoTest, KnownMixedValue) {
  PrpFetchInfo f;
  f.data_size_rem = 0x0001'2345;
  f.host_addr = 0x0000'0001'1000'0FF8;
  f.prp_index = 0x005;
  f.ping_or_pong = 1;
  f.no_of_desc_rem = 0x123;
  f.error_code = 0x13;
  f.valid_entries = 14;
  // host_addr >> 3 = 0x2200'01FF at bits 92:32; prp_index 5 at 95 (byte 11 bit 7 = 1, byte 12 =
  // 0x02); ping 1 at 107 (byte 13 bit 3); desc 0x123 at 108 (byte 13 high nibble 3, byte 14 low
  // 6 bits 0x12); error 0x13 at 118 (byte 14 bits 7:6 = 11b, byte 15 low nibble 0x4); valid 14
  // in byte 15's high nibble.
  const Bytes expected = {0x45, 0x23, 0x01, 0x00, 0xFF, 0x01, 0x00, 0x22,
                          0x00, 0x00, 0x00, 0x80, 0x02, 0x38, 0xD2, 0xE4};
  EXPECT_EQ(f.Pack(), expected);
  absl::StatusOr<PrpFetchInfo> back = PrpFetchInfo::Unpack(expected);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, f);
}

TEST(PrpFetchInfoTest, RandomRoundTripsMatchReferencePacker) {
  std::mt19937_64 rng(329);
  for (int i = 0; i < 2000; ++i) {
    PrpFetchInfo f;
    f.data_size_rem = static_cast<uint32_t>(rng());
    f.host_addr = rng() & ~uint64_t{7};
    f.sgl_or_prp = (rng() & 1) != 0;
    f.prp_index = static_cast<uint16_t>(rng() & 0xFFF);
    f.ping_or_pong = static_cast<uint8_t>(rng() & 1);
    f.no_of_desc_rem = static_cast<uint16_t>(rng() & 0x3FF);
    f.error_code = static_cast<uint8_t>(rng() & 0x3F);
    f.valid_entries = static_cast<uint8_t>(rng() & 0xF);
    ASSERT_TRUE(f.Check().ok());
    const Bytes packed = f.Pack();
    ASSERT_EQ(packed, RefPack(f));
    EXPECT_EQ(packed[11] & 0x20, 0);  // reserved bit 93 stays clear
    absl::StatusOr<PrpFetchInfo> back = PrpFetchInfo::Unpack(packed);
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(*back, f);
  }
}

TEST(PrpFetchInfoTest, UnpackRejectsReservedBitAndWrongSize) {
  Bytes image{};
  image[11] = 0x20;  // bit 93 only
  EXPECT_EQ(PrpFetchInfo::Unpack(image).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> short_image(15, 0);
  std::vector<uint8_t> long_image(17, 0);
  EXPECT_EQ(PrpFetchInfo::Unpack(short_image).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PrpFetchInfo::Unpack(long_image).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(PrpFetchInfo::Unpack(Bytes{}).ok());
}

TEST(PrpFetchInfoTest, CheckRejectsOutOfWidthValuesAndPackMasksThem) {
  EXPECT_TRUE(PrpFetchInfo{}.Check().ok());
  {
    PrpFetchInfo f;
    f.host_addr = 0x1000'0004;
    EXPECT_EQ(f.Check().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(f.Pack(), RefPack(PrpFetchInfo{.host_addr = 0x1000'0000}));
  }
  {
    PrpFetchInfo f;
    f.prp_index = 0x1FFF;
    EXPECT_EQ(f.Check().code(), absl::StatusCode::kInvalidArgument);
    PrpFetchInfo masked;
    masked.prp_index = 0xFFF;
    EXPECT_EQ(f.Pack(), masked.Pack());  // bit 107 (ping_or_pong) untouched
  }
  {
    PrpFetchInfo f;
    f.ping_or_pong = 2;
    EXPECT_EQ(f.Check().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(f.Pack(), Bytes{});  // bit 108 untouched
  }
  {
    PrpFetchInfo f;
    f.no_of_desc_rem = 0x400;
    EXPECT_EQ(f.Check().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(f.Pack(), Bytes{});  // bit 118 (error_code) untouched
  }
  {
    PrpFetchInfo f;
    f.error_code = 0x40;
    EXPECT_EQ(f.Check().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(f.Pack(), Bytes{});  // bit 124 (valid_entries) untouched
  }
  {
    PrpFetchInfo f;
    f.valid_entries = 0x1F;
    EXPECT_EQ(f.Check().code(), absl::StatusCode::kInvalidArgument);
    PrpFetchInfo masked;
    masked.valid_entries = 0xF;
    EXPECT_EQ(f.Pack(), masked.Pack());
  }
}

TEST(FillDescriptorTest, BitExact) {
  EXPECT_EQ((FillDescriptor{0xABC, 1}.Pack()), 0x1ABC);
  EXPECT_EQ((FillDescriptor{0xABC, 0}.Pack()), 0x0ABC);
  EXPECT_EQ((FillDescriptor{0xFFF, 1}.Pack()), 0x1FFF);
  EXPECT_EQ((FillDescriptor{0, 0}.Pack()), 0x0000);
  absl::StatusOr<FillDescriptor> d = FillDescriptor::Unpack(0x1ABC);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, (FillDescriptor{0xABC, 1}));
  d = FillDescriptor::Unpack(0x0005);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, (FillDescriptor{5, 0}));
}

TEST(FillDescriptorTest, ReservedBitsAndWidthsRejected) {
  for (uint16_t bit : {0x2000, 0x4000, 0x8000}) {
    EXPECT_EQ(FillDescriptor::Unpack(static_cast<uint16_t>(bit | 0x0ABC)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bit;
  }
  EXPECT_EQ((FillDescriptor{0x1000, 0}.Check().code()), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((FillDescriptor{0, 2}.Check().code()), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((FillDescriptor{0x1ABC, 0}.Pack()), 0x0ABC);  // masked: no spill into bit 12
  EXPECT_TRUE((FillDescriptor{0xFFF, 1}.Check().ok()));
}

// ------------------------------------------------------------------------------------------------
// Fake host memory and list building.

class FakeHost {
 public:
  FakeHost(uint64_t base, size_t size) : base_(base), mem_(size, 0) {}

  // Stores a little-endian uint64 at `addr`, which must lie inside the memory.
  void Put64(uint64_t addr, uint64_t value) {
    ASSERT_GE(addr, base_);
    ASSERT_LE(addr - base_ + 8, mem_.size());
    for (int i = 0; i < 8; ++i) mem_[addr - base_ + i] = static_cast<uint8_t>(value >> (8 * i));
  }

  HostReader Reader() {
    return [this](uint64_t addr, void* dst, size_t len) {
      reads_.emplace_back(addr, len);
      if (addr < base_ || addr - base_ > mem_.size() || len > mem_.size() - (addr - base_)) {
        return false;
      }
      std::memcpy(dst, mem_.data() + (addr - base_), len);
      return true;
    };
  }

  const std::vector<std::pair<uint64_t, size_t>>& reads() const { return reads_; }

 private:
  uint64_t base_;
  std::vector<uint8_t> mem_;
  std::vector<std::pair<uint64_t, size_t>> reads_;
};

// Distinct, page-aligned, non-contiguous data page addresses.
std::vector<uint64_t> DataPages(size_t n, uint64_t page, uint64_t salt = 0) {
  std::vector<uint64_t> pages;
  for (size_t i = 0; i < n; ++i) pages.push_back(kDataBase + (salt * 4096 + i * 3 + 1) * page);
  return pages;
}

// Writes `data` as a PRP list that starts at `first` (qword aligned, possibly mid-page) and
// continues in `next_pages` (page aligned), one entry at a time as a host driver would: the last
// slot of a list page becomes a chain pointer only when more than one entry is left. Returns the
// slot address of every data entry.
std::vector<uint64_t> WriteList(FakeHost& host, uint64_t page, uint64_t first,
                                const std::vector<uint64_t>& next_pages,
                                const std::vector<uint64_t>& data) {
  std::vector<uint64_t> slots;
  uint64_t slot = first;
  size_t used = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    if ((slot & (page - 1)) == page - 8 && data.size() - i > 1) {
      EXPECT_LT(used, next_pages.size()) << "list needs more pages";
      if (used >= next_pages.size()) return slots;
      host.Put64(slot, next_pages[used]);
      slot = next_pages[used++];
    }
    host.Put64(slot, data[i]);
    slots.push_back(slot);
    slot += 8;
  }
  EXPECT_EQ(used, next_pages.size()) << "unused list pages";
  return slots;
}

struct Set {
  int buffer;
  PrpFetchInfo header;
  std::vector<uint64_t> entries;
};

// Runs the application side of the protocol: consumes each set, then requests the next one with
// its header, until the last set or an error set.
std::vector<Set> Drain(PrpFetchManager& m, const PrpFetchInfo& first) {
  std::vector<Set> sets;
  PrpFetchInfo h = first;
  int buffer = kPing;
  while (true) {
    absl::Span<const uint64_t> e = m.Entries(h.prp_index, buffer);
    sets.push_back({buffer, h, std::vector<uint64_t>(e.begin(), e.end())});
    m.Consumed(h.prp_index, buffer);
    if (h.error_code != 0 || h.no_of_desc_rem == 0) break;
    absl::StatusOr<FillDescriptor> fd = m.Fetch(h);
    EXPECT_TRUE(fd.ok()) << fd.status();
    if (!fd.ok()) break;
    EXPECT_EQ(fd->prp_index, h.prp_index);
    buffer = fd->ping_or_pong;
    h = m.Header(h.prp_index, buffer);
  }
  return sets;
}

// Checks every set of a successful walk of `data` (list entries at `slots`) describing
// `list_bytes` bytes: entries, ping/pong alternation and every header field.
void ExpectWalk(const std::vector<Set>& sets, const std::vector<uint64_t>& data,
                const std::vector<uint64_t>& slots, uint64_t list_bytes, uint64_t page, size_t b,
                uint16_t index) {
  const size_t n = data.size();
  ASSERT_EQ(slots.size(), n);
  ASSERT_EQ(sets.size(), (n + b - 1) / b);
  size_t fetched = 0;
  for (size_t k = 0; k < sets.size(); ++k) {
    SCOPED_TRACE(testing::Message() << "set " << k);
    const Set& s = sets[k];
    const size_t count = std::min(b, n - fetched);
    EXPECT_EQ(s.buffer, static_cast<int>(k % 2));
    EXPECT_EQ(s.header.ping_or_pong, k % 2);
    EXPECT_EQ(s.header.prp_index, index);
    EXPECT_FALSE(s.header.sgl_or_prp);
    EXPECT_EQ(s.header.error_code, 0);
    EXPECT_EQ(s.header.valid_entries, count);
    EXPECT_EQ(s.entries,
              std::vector<uint64_t>(data.begin() + fetched, data.begin() + fetched + count));
    fetched += count;
    EXPECT_EQ(s.header.no_of_desc_rem, n - fetched);
    EXPECT_EQ(s.header.data_size_rem,
              list_bytes > fetched * page ? list_bytes - fetched * page : 0);
    EXPECT_EQ(s.header.host_addr, fetched < n ? slots[fetched - 1] + 8 : 0);
  }
  EXPECT_EQ(sets.back().header.no_of_desc_rem, 0);
  EXPECT_EQ(sets.back().header.data_size_rem, 0u);
}

std::unique_ptr<PrpFetchManager> MakeManager(FakeHost& host, PrpFetchOptions options = {}) {
  absl::StatusOr<std::unique_ptr<PrpFetchManager>> m =
      PrpFetchManager::Create(options, host.Reader());
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// ------------------------------------------------------------------------------------------------
// Creation and argument checks.

TEST(PrpFetchManagerTest, CreateValidatesOptions) {
  FakeHost host(kBase, k4K);
  auto bad = [&host](PrpFetchOptions o) {
    return PrpFetchManager::Create(o, host.Reader()).status().code() ==
           absl::StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(bad({.page_size = 2048}));
  EXPECT_TRUE(bad({.page_size = 3 * 4096}));
  EXPECT_TRUE(bad({.page_size = 128 * 1024}));
  EXPECT_TRUE(bad({.prps_per_index = 1}));
  EXPECT_TRUE(bad({.prps_per_index = 9}));
  EXPECT_TRUE(bad({.num_indexes = 0}));
  EXPECT_TRUE(bad({.num_indexes = 4096}));
  EXPECT_EQ(PrpFetchManager::Create({}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<PrpFetchManager>> m = PrpFetchManager::Create(
      {.page_size = 65536, .prps_per_index = 2, .num_indexes = 4095}, host.Reader());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->entries_per_buffer(), 2);
  m = PrpFetchManager::Create({}, host.Reader());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->entries_per_buffer(), 14);
}

TEST(PrpFetchManagerTest, BeginValidatesLength) {
  FakeHost host(kBase, k4K);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->Begin(kBase, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m->Begin(kBase, uint64_t{1} << 32).status().code(), absl::StatusCode::kInvalidArgument);
  // 1023 entries may remain after the first set of 14: at most 1037 entries.
  EXPECT_EQ(m->Begin(kBase, 1038 * k4K).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m->Begin(kBase, 1037 * k4K + 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(host.reads().size(), 0u);
  EXPECT_EQ(m->stats().begins, 0u);
  // 1037 entries are accepted; only the first set (14 zero, hence page-aligned, slots) is read.
  absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 1037 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->no_of_desc_rem, 1023);
}

// ------------------------------------------------------------------------------------------------
// Walks without chaining: 0, 1, 2 and many refills.

struct WalkCase {
  size_t entries;
  uint64_t list_bytes;
  size_t expected_sets;
};

class SinglePageWalkTest : public testing::TestWithParam<WalkCase> {};

TEST_P(SinglePageWalkTest, SetsAlternateAndHeadersCount) {
  const WalkCase& c = GetParam();
  FakeHost host(kBase, 4 * k4K);
  const uint64_t list = kBase + k4K;
  const std::vector<uint64_t> data = DataPages(c.entries, k4K);
  const std::vector<uint64_t> slots = WriteList(host, k4K, list, {}, data);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> first = m->Begin(list, c.list_bytes);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->prp_index, 0);
  EXPECT_EQ(first->ping_or_pong, 0);
  const std::vector<Set> sets = Drain(*m, *first);
  EXPECT_EQ(sets.size(), c.expected_sets);
  ExpectWalk(sets, data, slots, c.list_bytes, k4K, 14, 0);

  // One host read per set, each exactly the set's slots.
  ASSERT_EQ(host.reads().size(), sets.size());
  for (size_t k = 0; k < sets.size(); ++k) {
    EXPECT_EQ(host.reads()[k].first, list + kEntry * 14 * k);
    EXPECT_EQ(host.reads()[k].second, 8 * sets[k].entries.size());
  }
  const PrpFetchManager::Stats st = m->stats();
  EXPECT_EQ(st.begins, 1u);
  EXPECT_EQ(st.fills_ping, (sets.size() + 1) / 2);
  EXPECT_EQ(st.fills_pong, sets.size() / 2);
  EXPECT_EQ(st.refills, sets.size() - 1);
  EXPECT_EQ(st.host_reads, sets.size());
  for (uint64_t e : st.errors_by_code) EXPECT_EQ(e, 0u);

  // After the last set nothing remains to fetch.
  EXPECT_EQ(m->Fetch(sets.back().header).status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    Refills, SinglePageWalkTest,
    testing::Values(WalkCase{1, 100, 1},                  // 0 refills, partial page
                    WalkCase{3, 3 * k4K, 1},              // 0 refills
                    WalkCase{14, 14 * k4K, 1},            // 0 refills, exactly one full set
                    WalkCase{15, 14 * k4K + 1, 2},        // 1 refill of one entry
                    WalkCase{28, 28 * k4K, 2},            // 1 refill, full
                    WalkCase{29, 29 * k4K - 512, 3},      // 2 refills
                    WalkCase{40, 40 * k4K, 3},            // 2 refills
                    WalkCase{200, 200 * k4K - 4000, 15},  // many refills
                    WalkCase{511, 511 * k4K, 37},         // a whole page minus its last slot
                    WalkCase{512, 512 * k4K, 37}));       // a whole page, last slot is data

TEST(PrpFetchManagerTest, PrpsPerIndexSetsTheBufferSize) {
  for (uint32_t ppi = 2; ppi <= 8; ++ppi) {
    SCOPED_TRACE(ppi);
    FakeHost host(kBase, 2 * k4K);
    const std::vector<uint64_t> data = DataPages(37, k4K);
    const std::vector<uint64_t> slots = WriteList(host, k4K, kBase, {}, data);
    auto m = MakeManager(host, {.prps_per_index = ppi});
    ASSERT_NE(m, nullptr);
    const size_t b = 2 * (size_t{ppi} - 1);
    absl::StatusOr<PrpFetchInfo> first = m->Begin(kBase, 37 * k4K);
    ASSERT_TRUE(first.ok()) << first.status();
    ExpectWalk(Drain(*m, *first), data, slots, 37 * k4K, k4K, b, 0);
  }
}

// ------------------------------------------------------------------------------------------------
// Chaining.

TEST(PrpFetchManagerTest, ChainAfter511EntriesSpansASet) {
  FakeHost host(kBase, 4 * k4K);
  const uint64_t page1 = kBase, page2 = kBase + 2 * k4K;
  const std::vector<uint64_t> data = DataPages(611, k4K);
  const std::vector<uint64_t> slots = WriteList(host, k4K, page1, {page2}, data);
  ASSERT_EQ(slots[510], page1 + kEntry * 510);
  ASSERT_EQ(slots[511], page2);  // slot 511 of page 1 is the chain pointer
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> first = m->Begin(page1, 611 * k4K);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::vector<Set> sets = Drain(*m, *first);
  ExpectWalk(sets, data, slots, 611 * k4K, k4K, 14, 0);
  // Set 36 holds entries 504..517: 7 from page 1 read together with the chain slot, then 7 from
  // page 2.
  ASSERT_EQ(host.reads().size(), sets.size() + 1);
  EXPECT_EQ(host.reads()[36], std::make_pair(page1 + kEntry * 504, kEntry * 8));
  EXPECT_EQ(host.reads()[37], std::make_pair(page2, kEntry * 7));
  EXPECT_EQ(host.reads()[38], std::make_pair(page2 + kEntry * 7, kEntry * 14));
  EXPECT_EQ(sets[36].header.host_addr, page2 + kEntry * 7);
}

TEST(PrpFetchManagerTest, FinalListPageHolds512DataEntries) {
  FakeHost host(kBase, 4 * k4K);
  const uint64_t page1 = kBase + 3 * k4K, page2 = kBase + k4K;
  const std::vector<uint64_t> data = DataPages(511 + 512, k4K);
  const std::vector<uint64_t> slots = WriteList(host, k4K, page1, {page2}, data);
  ASSERT_EQ(slots.back(), page2 + k4K - 8);  // the last slot of page 2 is data
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> first = m->Begin(page1, 1023 * k4K - 7);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->no_of_desc_rem, 1023 - 14);
  const std::vector<Set> sets = Drain(*m, *first);
  ExpectWalk(sets, data, slots, 1023 * k4K - 7, k4K, 14, 0);
  ASSERT_FALSE(sets.back().entries.empty());
  EXPECT_EQ(sets.back().entries.back(), data.back());
  // Every read stays inside one list page.
  for (const auto& [addr, len] : host.reads()) {
    EXPECT_EQ(addr / k4K, (addr + len - 1) / k4K) << addr;
  }
}

TEST(PrpFetchManagerTest, FirstListMidPageWithTwoSlots) {
  // Offset 4096-16: two slots. With more than one entry left, the second is a chain pointer.
  FakeHost host(kBase, 4 * k4K);
  const uint64_t first_list = kBase + k4K - 16, page2 = kBase + 2 * k4K;
  const std::vector<uint64_t> data = DataPages(5, k4K);
  const std::vector<uint64_t> slots = WriteList(host, k4K, first_list, {page2}, data);
  ASSERT_EQ(slots[0], first_list);
  ASSERT_EQ(slots[1], page2);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, 5 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  ExpectWalk(Drain(*m, *h), data, slots, 5 * k4K, k4K, 14, 0);
  ASSERT_EQ(host.reads().size(), 2u);
  EXPECT_EQ(host.reads()[0], std::make_pair(first_list, size_t{16}));  // data + chain
  EXPECT_EQ(host.reads()[1], std::make_pair(page2, size_t{32}));
}

TEST(PrpFetchManagerTest, FirstListMidPageTwoSlotsBothDataWhenTwoRemain) {
  FakeHost host(kBase, 4 * k4K);
  const uint64_t first_list = kBase + k4K - 16;
  const std::vector<uint64_t> data = DataPages(2, k4K);
  const std::vector<uint64_t> slots = WriteList(host, k4K, first_list, {}, data);
  ASSERT_EQ(slots[1], first_list + 8);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, 2 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  ExpectWalk(Drain(*m, *h), data, slots, 2 * k4K, k4K, 14, 0);
  EXPECT_EQ(host.reads().size(), 1u);
}

TEST(PrpFetchManagerTest, FirstListWithOneSlotIsOnlyAChainPointer) {
  FakeHost host(kBase, 4 * k4K);
  const uint64_t first_list = kBase + k4K - 8, page2 = kBase + 3 * k4K;
  const std::vector<uint64_t> data = DataPages(3, k4K);
  const std::vector<uint64_t> slots = WriteList(host, k4K, first_list, {page2}, data);
  ASSERT_EQ(slots[0], page2);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, 3 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  ExpectWalk(Drain(*m, *h), data, slots, 3 * k4K, k4K, 14, 0);
  ASSERT_EQ(host.reads().size(), 2u);
  EXPECT_EQ(host.reads()[0], std::make_pair(first_list, size_t{8}));
}

TEST(PrpFetchManagerTest, SetEndingBeforeChainSlotResumesAtIt) {
  // 15 slots in the first list: 14 data entries fill set 0 exactly, and the 15th slot is a chain
  // pointer. Set 0's header points at the chain slot; set 1 reads it first.
  FakeHost host(kBase, 4 * k4K);
  const uint64_t first_list = kBase + k4K - kEntry * 15, page2 = kBase + 2 * k4K;
  const std::vector<uint64_t> data = DataPages(34, k4K);
  const std::vector<uint64_t> slots = WriteList(host, k4K, first_list, {page2}, data);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, 34 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->host_addr, kBase + k4K - 8);
  const std::vector<Set> sets = Drain(*m, *h);
  ExpectWalk(sets, data, slots, 34 * k4K, k4K, 14, 0);
  ASSERT_EQ(host.reads().size(), 4u);
  EXPECT_EQ(host.reads()[0], std::make_pair(first_list, kEntry * 14));
  EXPECT_EQ(host.reads()[1], std::make_pair(kBase + k4K - 8, size_t{8}));
  EXPECT_EQ(host.reads()[2], std::make_pair(page2, kEntry * 14));
  EXPECT_EQ(host.reads()[3], std::make_pair(page2 + kEntry * 14, kEntry * 6));
}

TEST(PrpFetchManagerTest, ThreeListPages) {
  // A 4-slot first list (3 data + chain), a full page 2 (511 data + chain), and page 3 with the
  // remaining 40 entries.
  FakeHost host(kBase, 4 * k4K);
  const uint64_t first_list = kBase + k4K - 32, page2 = kBase + 3 * k4K, page3 = kBase;
  const std::vector<uint64_t> data = DataPages(3 + 511 + 40, k4K, 7);
  const std::vector<uint64_t> slots = WriteList(host, k4K, first_list, {page2, page3}, data);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, data.size() * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  ExpectWalk(Drain(*m, *h), data, slots, data.size() * k4K, k4K, 14, 0);
}

TEST(PrpFetchManagerTest, PageSize64K) {
  constexpr uint64_t k64K = 65536;
  FakeHost host(kBase, 4 * k64K);
  auto m = MakeManager(host, {.page_size = 65536});
  ASSERT_NE(m, nullptr);
  {
    // One list page of 8192 slots: 1000 entries run straight past slot 511 (the 4 KiB-page chain
    // position) with no chain.
    const std::vector<uint64_t> data = DataPages(1000, k64K);
    const std::vector<uint64_t> slots = WriteList(host, k64K, kBase, {}, data);
    absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 1000 * k64K - 1);
    ASSERT_TRUE(h.ok()) << h.status();
    ExpectWalk(Drain(*m, *h), data, slots, 1000 * k64K - 1, k64K, 14, 0);
    m->Release(0);
  }
  {
    // First list with 5 slots (4 data + chain) into a full 64 KiB list page.
    const uint64_t first_list = kBase + 2 * k64K - 40, page2 = kBase + 3 * k64K;
    const std::vector<uint64_t> data = DataPages(604, k64K, 1);
    const std::vector<uint64_t> slots = WriteList(host, k64K, first_list, {page2}, data);
    ASSERT_EQ(slots[4], page2);
    absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, 604 * k64K);
    ASSERT_TRUE(h.ok()) << h.status();
    ExpectWalk(Drain(*m, *h), data, slots, 604 * k64K, k64K, 14, 0);
    m->Release(0);
  }
  {
    // 4 KiB-aligned but not 64 KiB-aligned data entry.
    host.Put64(kBase, kDataBase + k4K);
    absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 3 * k64K);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->error_code, kScPrpOffsetInvalid);
    EXPECT_EQ(h->valid_entries, 0);
  }
}

// ------------------------------------------------------------------------------------------------
// Errors.

TEST(PrpFetchManagerTest, MisalignedDataEntryInARefill) {
  FakeHost host(kBase, 2 * k4K);
  std::vector<uint64_t> data = DataPages(40, k4K);
  data[20] += 0x200;
  const std::vector<uint64_t> slots = WriteList(host, k4K, kBase, {}, data);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  std::vector<PrpFetchEvent> events;
  m->set_event_sink([&events](const PrpFetchEvent& e) { events.push_back(e); });
  absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 40 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->error_code, 0);
  absl::StatusOr<FillDescriptor> fd = m->Fetch(*h);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(*fd, (FillDescriptor{0, 1}));
  const PrpFetchInfo bad = m->Header(0, kPong);
  EXPECT_EQ(bad.error_code, kScPrpOffsetInvalid);
  EXPECT_EQ(bad.valid_entries, 6);  // entries 14..19 are good
  EXPECT_EQ(bad.ping_or_pong, 1);
  EXPECT_EQ(bad.host_addr, slots[20]);
  EXPECT_EQ(bad.no_of_desc_rem, 40 - 20);
  EXPECT_EQ(bad.data_size_rem, 20 * k4K);
  const absl::Span<const uint64_t> good = m->Entries(0, kPong);
  EXPECT_EQ(std::vector<uint64_t>(good.begin(), good.end()),
            std::vector<uint64_t>(data.begin() + 14, data.begin() + 20));
  // No further fetch, even after consuming both buffers.
  m->Consumed(0, kPing);
  m->Consumed(0, kPong);
  EXPECT_EQ(m->Fetch(bad).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->Fetch(*h).status().code(), absl::StatusCode::kFailedPrecondition);

  const PrpFetchManager::Stats st = m->stats();
  EXPECT_EQ(st.errors_by_code[kScPrpOffsetInvalid], 1u);
  EXPECT_EQ(st.refills, 0u);
  EXPECT_EQ(st.fills_pong, 1u);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, PrpFetchEvent::kBegin);
  EXPECT_EQ(events[0].header, *h);
  EXPECT_EQ(events[1].kind, PrpFetchEvent::kError);
  EXPECT_EQ(events[1].buffer, kPong);
  EXPECT_EQ(events[1].header, bad);
}

TEST(PrpFetchManagerTest, DwordOffsetOnFirstEntryIsInvalid) {
  FakeHost host(kBase, k4K);
  std::vector<uint64_t> data = DataPages(3, k4K);
  data[0] += 4;
  WriteList(host, k4K, kBase, {}, data);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 3 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->error_code, kScPrpOffsetInvalid);
  EXPECT_EQ(h->valid_entries, 0);
  EXPECT_EQ(h->host_addr, kBase);
  EXPECT_TRUE(m->Entries(0, kPing).empty());
  EXPECT_EQ(m->Fetch(*h).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(PrpFetchManagerTest, MisalignedChainPointer) {
  FakeHost host(kBase, 4 * k4K);
  const uint64_t first_list = kBase + k4K - 40, page2 = kBase + 2 * k4K;
  const std::vector<uint64_t> data = DataPages(10, k4K);
  WriteList(host, k4K, first_list, {page2}, data);
  host.Put64(kBase + k4K - 8, page2 + 0x100);  // the chain slot
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, 10 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->error_code, kScPrpOffsetInvalid);
  EXPECT_EQ(h->valid_entries, 4);  // the four data slots before the chain were good
  EXPECT_EQ(h->host_addr, kBase + k4K - 8);
  EXPECT_EQ(h->no_of_desc_rem, 6);
  const absl::Span<const uint64_t> good = m->Entries(0, kPing);
  EXPECT_EQ(std::vector<uint64_t>(good.begin(), good.end()),
            std::vector<uint64_t>(data.begin(), data.begin() + 4));
  EXPECT_EQ(m->Fetch(*h).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->stats().errors_by_code[kScPrpOffsetInvalid], 1u);
}

TEST(PrpFetchManagerTest, ListPointerNotQwordAligned) {
  FakeHost host(kBase, k4K);
  WriteList(host, k4K, kBase, {}, DataPages(20, k4K));
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  for (uint64_t low : {1, 4, 7}) {
    SCOPED_TRACE(low);
    absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase + 64 + low, 20 * k4K);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->error_code, kScPrpOffsetInvalid);
    EXPECT_EQ(h->valid_entries, 0);
    EXPECT_EQ(h->ping_or_pong, 0);
    EXPECT_EQ(h->host_addr, kBase + 64);
    EXPECT_EQ(h->no_of_desc_rem, 20);
    EXPECT_EQ(h->data_size_rem, 20 * k4K);
    EXPECT_TRUE(h->Check().ok());
    EXPECT_EQ(m->Fetch(*h).status().code(), absl::StatusCode::kFailedPrecondition);
    m->Release(h->prp_index);
  }
  EXPECT_EQ(host.reads().size(), 0u);
  EXPECT_EQ(m->stats().errors_by_code[kScPrpOffsetInvalid], 3u);
  EXPECT_EQ(m->stats().fills_ping, 3u);
}

TEST(PrpFetchManagerTest, UnreadableListMemory) {
  FakeHost host(kBase, k4K);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase + 16 * k4K, 20 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->error_code, kScDataTransferError);
  EXPECT_EQ(h->valid_entries, 0);
  EXPECT_EQ(h->host_addr, kBase + 16 * k4K);
  EXPECT_EQ(m->Fetch(*h).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->stats().errors_by_code[kScDataTransferError], 1u);
  EXPECT_EQ(m->stats().host_reads, 1u);
}

TEST(PrpFetchManagerTest, ChainIntoUnreadableMemory) {
  FakeHost host(kBase, 2 * k4K);
  const uint64_t first_list = kBase + k4K - 24, gone = kBase + 8 * k4K;
  const std::vector<uint64_t> data = DataPages(30, k4K);
  // Write the 2 data entries and the chain by hand: the chained page is outside host memory.
  host.Put64(first_list, data[0]);
  host.Put64(first_list + 8, data[1]);
  host.Put64(first_list + 16, gone);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(first_list, 30 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->error_code, kScDataTransferError);
  EXPECT_EQ(h->valid_entries, 2);
  EXPECT_EQ(h->host_addr, gone);
  EXPECT_EQ(m->Fetch(*h).status().code(), absl::StatusCode::kFailedPrecondition);
}

// Found by tests/fuzz/prp_fetch_fuzz.cc: the first set of a list of 1023 + B entries that fails
// at once leaves 1023 + B entries, more than the 10-bit no_of_desc_rem holds. The header must
// still pass Check(), so that Pack (`ecd-nvme prp-walk` prints it packed) keeps every field.
TEST(PrpFetchManagerTest, ErrorInTheFirstSetOfTheLongestListFitsTheHeader) {
  FakeHost host(kBase, k4K);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  const uint64_t entries = 1023 + m->entries_per_buffer();
  absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase + 16 * k4K, entries * k4K);  // unreadable
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->error_code, kScDataTransferError);
  EXPECT_EQ(h->valid_entries, 0);
  EXPECT_EQ(h->data_size_rem, entries * k4K);
  EXPECT_EQ(h->no_of_desc_rem, 1023);
  EXPECT_TRUE(h->Check().ok()) << h->Check();
  absl::StatusOr<PrpFetchInfo> back = PrpFetchInfo::Unpack(h->Pack());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *h);
}

// ------------------------------------------------------------------------------------------------
// The request protocol.

TEST(PrpFetchManagerTest, LatencyHidingFetchAheadOfConsumption) {
  FakeHost host(kBase, k4K);
  const std::vector<uint64_t> data = DataPages(50, k4K);
  WriteList(host, k4K, kBase, {}, data);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> set0 = m->Begin(kBase, 50 * k4K);
  ASSERT_TRUE(set0.ok()) << set0.status();
  // Request set 1 before consuming set 0.
  absl::StatusOr<FillDescriptor> fd = m->Fetch(*set0);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(fd->Pack(), 0x1000);  // index 0, pong
  const PrpFetchInfo set1 = m->Header(0, kPong);
  EXPECT_EQ(set1.valid_entries, 14);
  EXPECT_EQ(set1.no_of_desc_rem, 50 - 28);
  auto entries = [&m](int buffer) {
    absl::Span<const uint64_t> e = m->Entries(0, buffer);
    return std::vector<uint64_t>(e.begin(), e.end());
  };
  // Set 0 is still intact in ping.
  EXPECT_EQ(entries(kPing), std::vector<uint64_t>(data.begin(), data.begin() + 14));
  EXPECT_EQ(entries(kPong), std::vector<uint64_t>(data.begin() + 14, data.begin() + 28));
  EXPECT_EQ(m->Header(0, kPing), *set0);
  // Both buffers are unconsumed: set 2 would overwrite set 0.
  EXPECT_EQ(m->Fetch(set1).status().code(), absl::StatusCode::kFailedPrecondition);
  // A stale header (set 0's) is refused.
  EXPECT_EQ(m->Fetch(*set0).status().code(), absl::StatusCode::kInvalidArgument);
  m->Consumed(0, kPong);  // consuming the newer set does not free ping
  EXPECT_EQ(m->Fetch(set1).status().code(), absl::StatusCode::kFailedPrecondition);
  m->Consumed(0, kPing);
  fd = m->Fetch(set1);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(*fd, (FillDescriptor{0, 0}));
  EXPECT_EQ(entries(kPing), std::vector<uint64_t>(data.begin() + 28, data.begin() + 42));
  const PrpFetchInfo set2 = m->Header(0, kPing);
  fd = m->Fetch(set2);  // pong was consumed
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(*fd, (FillDescriptor{0, 1}));
  const PrpFetchInfo set3 = m->Header(0, kPong);
  EXPECT_EQ(set3.valid_entries, 8);
  EXPECT_EQ(set3.no_of_desc_rem, 0);
  EXPECT_EQ(set3.host_addr, 0u);
  EXPECT_EQ(entries(kPong), std::vector<uint64_t>(data.begin() + 42, data.end()));
  EXPECT_EQ(m->stats().refills, 3u);
}

TEST(PrpFetchManagerTest, FetchRejectsBadRequests) {
  FakeHost host(kBase, k4K);
  WriteList(host, k4K, kBase, {}, DataPages(40, k4K));
  auto m = MakeManager(host, {.num_indexes = 4});
  ASSERT_NE(m, nullptr);
  absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 40 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  const size_t reads = host.reads().size();
  auto code = [&m](PrpFetchInfo r) { return m->Fetch(r).status().code(); };
  PrpFetchInfo r = *h;
  r.prp_index = 1;  // not allocated
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  r.prp_index = 4;  // out of range
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  r = *h;
  r.host_addr += 8;
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  r = *h;
  r.data_size_rem -= 1;
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  r = *h;
  r.no_of_desc_rem += 1;
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  r = *h;
  r.sgl_or_prp = true;
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(host.reads().size(), reads);
  // A request built from just the four matching fields is accepted.
  r = PrpFetchInfo{};
  r.prp_index = h->prp_index;
  r.host_addr = h->host_addr;
  r.data_size_rem = h->data_size_rem;
  r.no_of_desc_rem = h->no_of_desc_rem;
  r.ping_or_pong = 1;
  r.valid_entries = 3;
  EXPECT_TRUE(m->Fetch(r).ok());
}

TEST(PrpFetchManagerTest, IndexExhaustionAndRelease) {
  FakeHost host(kBase, k4K);
  WriteList(host, k4K, kBase, {}, DataPages(20, k4K));
  auto m = MakeManager(host, {.num_indexes = 3});
  ASSERT_NE(m, nullptr);
  std::vector<PrpFetchInfo> heads;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 20 * k4K);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->prp_index, i);
    heads.push_back(*h);
  }
  EXPECT_EQ(m->Begin(kBase, 20 * k4K).status().code(), absl::StatusCode::kResourceExhausted);
  m->Release(1);
  m->Release(1);  // no-op
  EXPECT_EQ(m->Fetch(heads[1]).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(m->Entries(1, kPing).empty());
  EXPECT_EQ(m->Header(1, kPing), PrpFetchInfo{});
  // The other indexes are unaffected.
  EXPECT_TRUE(m->Fetch(heads[2]).ok());
  absl::StatusOr<PrpFetchInfo> again = m->Begin(kBase, 5 * k4K);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->prp_index, 1);
  EXPECT_EQ(again->valid_entries, 5);
  EXPECT_EQ(again->no_of_desc_rem, 0);
  EXPECT_EQ(m->Header(1, kPong), PrpFetchInfo{});  // the previous command's pong is gone
  EXPECT_EQ(m->Begin(kBase, 20 * k4K).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(m->stats().begins, 4u);
}

TEST(PrpFetchManagerTest, EventSinkSeesEverySet) {
  FakeHost host(kBase, k4K);
  const std::vector<uint64_t> data = DataPages(30, k4K);
  WriteList(host, k4K, kBase, {}, data);
  auto m = MakeManager(host);
  ASSERT_NE(m, nullptr);
  std::vector<PrpFetchEvent> events;
  m->set_event_sink([&events](const PrpFetchEvent& e) { events.push_back(e); });
  absl::StatusOr<PrpFetchInfo> h = m->Begin(kBase, 30 * k4K);
  ASSERT_TRUE(h.ok()) << h.status();
  const std::vector<Set> sets = Drain(*m, *h);
  ASSERT_EQ(sets.size(), 3u);
  ASSERT_EQ(events.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(events[k].kind, k == 0 ? PrpFetchEvent::kBegin : PrpFetchEvent::kFill);
    EXPECT_EQ(events[k].prp_index, 0);
    EXPECT_EQ(events[k].buffer, sets[k].buffer);
    EXPECT_EQ(events[k].header, sets[k].header);
  }
  m->set_event_sink(nullptr);
  m->Release(0);
  ASSERT_TRUE(m->Begin(kBase, k4K).ok());
  EXPECT_EQ(events.size(), 3u);
}

TEST(PrpFetchManagerTest, ConcurrentCommandsOnDistinctIndexes) {
  constexpr uint64_t kThreads = 4;
  constexpr uint64_t kRounds = 25;
  FakeHost host(kBase, kThreads * 2 * k4K);
  std::vector<std::vector<uint64_t>> data(kThreads), slots(kThreads);
  for (uint64_t t = 0; t < kThreads; ++t) {
    // Each thread's list: 300 entries from mid-page, chaining into its second page.
    const uint64_t first = kBase + 2 * t * k4K + k4K - 80;
    data[t] = DataPages(300, k4K, t + 1);
    slots[t] = WriteList(host, k4K, first, {kBase + (2 * t + 1) * k4K}, data[t]);
  }
  auto m = MakeManager(host, {.num_indexes = kThreads});
  ASSERT_NE(m, nullptr);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t r = 0; r < kRounds; ++r) {
        absl::StatusOr<PrpFetchInfo> h = m->Begin(slots[t][0], 300 * k4K);
        ASSERT_TRUE(h.ok()) << h.status();
        ExpectWalk(Drain(*m, *h), data[t], slots[t], 300 * k4K, k4K, 14, h->prp_index);
        m->Release(h->prp_index);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const PrpFetchManager::Stats st = m->stats();
  EXPECT_EQ(st.begins, kThreads * kRounds);
  EXPECT_EQ(st.refills, kThreads * kRounds * 21);  // 22 sets of up to 14
  EXPECT_EQ(st.fills_ping + st.fills_pong, kThreads * kRounds * 22);
}

}  // namespace
}  // namespace ecd::nvme
