// Fuzzes the controller's PRP resolution (lib/nvme/prp_walker.h over prp_fetch.h): WalkPrps with
// fuzzed PRP1, PRP2, transfer length, memory page size and PRP list contents, against real
// HostMemory (lib/nvme/host_memory.h), then the controller's host-memory check and
// CoalesceSegments, as Controller::Start runs them.
//
// Input: page size (4 KiB..64 KiB), C_NUM_PRPS_PER_INDX, a length mode and value, PRP1 and PRP2
// as offsets from the host memory base, a coalescing boundary and limit, then the qwords of the
// host memory (each stored as base + value, so that inputs do not depend on where the arena was
// mapped; the rest of the arena is zero).
//
// Properties checked beyond "no crash":
// - either a clean NVMe error (SCT 0, DNR, PRP Offset Invalid, Data Transfer Error, or Internal
//   Error only for a list longer than the fetch manager's 10-bit count allows) and no segments, or
//   segments that follow the PRP rules: the first at PRP1, the others page aligned, none crossing a
//   page, ceil((offset + length) / page) of them, summing to the length;
// - the walk equals a reference walk written from NVMe Base 2.x 4.3.1 (docs/nvme.md) that reads
//   the list one slot at a time: same segments when it succeeds, a failure when it fails; and the
//   number of fetch-manager sets is ceil(list entries / buffer size);
// - the PRP buffer index is released after every walk (a Begin right after succeeds);
// - HostMemory::Translate accepts a segment exactly when it lies inside the arena (checked with
//   128-bit arithmetic, so wrap-around near 2^64 is covered);
// - CoalesceSegments keeps the same bytes in the same order, merges only contiguous segments,
//   never past max_len, and never across a boundary multiple.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "lib/nvme/host_memory.h"
#include "lib/nvme/prp_fetch.h"
#include "lib/nvme/prp_walker.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd::nvme {
namespace {

constexpr uint64_t kArenaBytes = 256 << 10;

// One arena per page size, kept across inputs (mapping costs more than a walk). Only the bytes
// an input wrote are cleared before the next input.
struct Arena {
  std::unique_ptr<HostMemory> memory;
  uint64_t dirty = 0;  // bytes written from offset 0 by the last input
};

Arena& ArenaFor(int shift) {
  static Arena arenas[5];
  Arena& a = arenas[shift];
  if (a.memory == nullptr) {
    const uint32_t page = 4096u << shift;
    absl::StatusOr<std::unique_ptr<HostMemory>> m = HostMemory::Create(page, kArenaBytes / page);
    FUZZ_CHECK(m.ok());
    a.memory = std::move(*m);
  }
  return a;
}

struct Result {
  bool ok = false;
  std::vector<DataSegment> segments;
  uint64_t list_entries = 0;  // data entries in the PRP list (0 without one)
};

// The PRP rules read straight from the specification, one list slot at a time.
Result ReferenceWalk(const HostMemory& mem, uint64_t page, uint64_t prp1, uint64_t prp2,
                     uint64_t length) {
  Result r;
  const uint64_t mask = page - 1;
  if ((prp1 & 3) != 0) return r;
  const uint64_t first = std::min(length, page - (prp1 & mask));
  r.segments.push_back({prp1, static_cast<uint32_t>(first)});
  uint64_t rem = length - first;
  if (rem > 0 && rem <= page) {
    if ((prp2 & mask) != 0) return r;
    r.segments.push_back({prp2, static_cast<uint32_t>(rem)});
    rem = 0;
  }
  if (rem > 0) {
    uint64_t n = (rem + page - 1) / page;
    r.list_entries = n;
    if ((prp2 & 7) != 0) return r;
    uint64_t addr = prp2;
    while (n > 0) {
      uint64_t v = 0;
      if (!mem.Read(addr, &v, 8)) return r;
      if ((v & mask) != 0) return r;
      if ((page - (addr & mask)) / 8 == 1 && n > 1) {  // the last slot of a page: a chain pointer
        addr = v;
        continue;
      }
      const uint64_t len = std::min(rem, page);
      r.segments.push_back({v, static_cast<uint32_t>(len)});
      rem -= len;
      --n;
      addr += 8;
    }
  }
  r.ok = true;
  return r;
}

bool InArena(const HostMemory& mem, const DataSegment& s) {
  const unsigned __int128 lo = mem.base_address();
  const unsigned __int128 hi = lo + mem.size_bytes();
  return s.addr >= lo && static_cast<unsigned __int128>(s.addr) + s.len <= hi;
}

void CheckCoalesce(const std::vector<DataSegment>& in, uint64_t base, uint64_t boundary,
                   uint32_t max_len) {
  const std::vector<DataSegment> out = CoalesceSegments(in, base, boundary, max_len);
  // The output, cut back at the input's segment lengths, must be the input.
  size_t i = 0;
  for (const DataSegment& run : out) {
    FUZZ_CHECK(run.len > 0);
    uint64_t addr = run.addr;
    uint64_t left = run.len;
    const size_t first = i;
    while (left > 0) {
      FUZZ_CHECK(i < in.size());
      FUZZ_CHECK(in[i].addr == addr && in[i].len <= left);
      addr += in[i].len;
      left -= in[i].len;
      ++i;
    }
    if (i - first > 1) {  // a merge: within max_len and one boundary region
      FUZZ_CHECK(run.len <= max_len);
      FUZZ_CHECK((run.addr - base) / boundary == (run.addr + run.len - 1 - base) / boundary);
    }
  }
  FUZZ_CHECK(i == in.size());
}

}  // namespace
}  // namespace ecd::nvme

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ecd::nvme;
  ecd::fuzz::Reader in(data, size);
  const int shift = in.U8() % 5;
  const uint64_t page = 4096u << shift;
  const uint32_t prps_per_index = 2 + in.U8() % 7;
  const uint8_t mode = in.U8();
  const uint32_t raw_length = in.U32();
  // Short transfers (a few pages) most of the time; long lists up to past the 10-bit limit.
  const uint64_t length = 1 + raw_length % ((mode & 1) != 0 ? 1100 * page : 20 * page);
  const uint64_t prp1_off = in.U64();
  const uint64_t prp2_off = in.U64();
  const uint64_t boundary = page << (in.U8() % 4);
  const uint32_t max_len = static_cast<uint32_t>(page * (1 + in.U8() % 8));

  Arena& arena = ArenaFor(shift);
  HostMemory& mem = *arena.memory;
  const uint64_t base = mem.base_address();
  uint8_t* bytes = mem.Translate(base, mem.size_bytes());
  std::memset(bytes, 0, arena.dirty);
  arena.dirty = 0;
  while (in.remaining() >= 8 && arena.dirty + 8 <= mem.size_bytes()) {
    const uint64_t v = base + in.U64();
    std::memcpy(bytes + arena.dirty, &v, 8);
    arena.dirty += 8;
  }
  const uint64_t prp1 = base + prp1_off;
  const uint64_t prp2 = base + prp2_off;

  PrpFetchOptions fo;
  fo.page_size = static_cast<uint32_t>(page);
  fo.prps_per_index = prps_per_index;
  fo.num_indexes = 1;
  absl::StatusOr<std::unique_ptr<PrpFetchManager>> fetcher = PrpFetchManager::Create(
      fo, [&mem](uint64_t addr, void* dst, size_t len) { return mem.Read(addr, dst, len); });
  FUZZ_CHECK(fetcher.ok());
  const uint64_t per_set = (*fetcher)->entries_per_buffer();

  const PrpWalk walk = WalkPrps(**fetcher, static_cast<uint32_t>(page), prp1, prp2, length);
  const Result ref = ReferenceWalk(mem, page, prp1, prp2, length);
  const bool too_long = ref.list_entries > 1023 + per_set;

  if (!walk.status.ok()) {
    FUZZ_CHECK(walk.segments.empty());
    FUZZ_CHECK(walk.status.sct == kSctGeneric && walk.status.dnr);
    const uint8_t sc = walk.status.sc;
    FUZZ_CHECK(sc == kScPrpOffsetInvalid || sc == kScDataTransferError ||
               (sc == kScInternalError && too_long));
    FUZZ_CHECK(!ref.ok || (sc == kScInternalError && too_long));
  } else {
    FUZZ_CHECK(ref.ok && !too_long);
    FUZZ_CHECK(walk.segments == ref.segments);
    const uint64_t offset = prp1 & (page - 1);
    FUZZ_CHECK(walk.segments.size() == (offset + length + page - 1) / page);
    uint64_t sum = 0;
    for (size_t i = 0; i < walk.segments.size(); ++i) {
      const DataSegment& s = walk.segments[i];
      FUZZ_CHECK(s.len > 0 && (s.addr & (page - 1)) + s.len <= page);
      FUZZ_CHECK(i == 0 ? s.addr == prp1 : (s.addr & (page - 1)) == 0);
      sum += s.len;
    }
    FUZZ_CHECK(sum == length);
    FUZZ_CHECK(walk.fetch_sets == (ref.list_entries + per_set - 1) / per_set);

    // The controller's data-page check, then its coalescing.
    for (const DataSegment& s : walk.segments) {
      FUZZ_CHECK((mem.Translate(s.addr, s.len) != nullptr) == InArena(mem, s));
    }
    CheckCoalesce(walk.segments, base, boundary, max_len);
  }

  // The walk gave its PRP buffer index back: the only index is free again.
  std::memset(bytes, 0, 16);  // a two-entry list at the arena's start, pointing at page 0
  std::memcpy(bytes, &base, 8);
  std::memcpy(bytes + 8, &base, 8);
  arena.dirty = std::max<uint64_t>(arena.dirty, 16);
  absl::StatusOr<PrpFetchInfo> again = (*fetcher)->Begin(base, 2 * page);
  FUZZ_CHECK(again.ok() && again->error_code == kScSuccess && again->valid_entries == 2);
  (*fetcher)->Release(again->prp_index);
  return 0;
}
