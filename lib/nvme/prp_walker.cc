// PRP walker: PRP1/PRP2 rules plus list sets from the fetch manager.
#include "lib/nvme/prp_walker.h"

#include <algorithm>

namespace ecd::nvme {
namespace {

PrpWalk Fail(uint8_t sc, uint32_t sets = 0) {
  PrpWalk w;
  w.status = Failure(sc);
  w.fetch_sets = sets;
  return w;
}

}  // namespace

PrpWalk WalkPrps(PrpFetchManager& fetcher, uint32_t page_size, uint64_t prp1, uint64_t prp2,
                 uint64_t length) {
  const uint64_t mask = page_size - 1;
  if ((prp1 & 3) != 0) return Fail(kScPrpOffsetInvalid);
  PrpWalk w;
  const uint64_t first = std::min<uint64_t>(length, page_size - (prp1 & mask));
  w.segments.push_back({prp1, static_cast<uint32_t>(first)});
  uint64_t rem = length - first;
  if (rem == 0) return w;
  if (rem <= page_size) {  // PRP2 is the second data page
    if ((prp2 & mask) != 0) return Fail(kScPrpOffsetInvalid);
    w.segments.push_back({prp2, static_cast<uint32_t>(rem)});
    return w;
  }
  // PRP2 is a list pointer: walk the sets the fetch manager delivers, asking for the next set
  // before consuming the current one.
  absl::StatusOr<PrpFetchInfo> head = fetcher.Begin(prp2, rem);
  if (!head.ok()) return Fail(kScInternalError);
  const uint16_t index = head->prp_index;
  PrpFetchInfo cur = *head;
  w.fetch_sets = 1;
  while (true) {
    if (cur.error_code != 0) {
      fetcher.Release(index);
      return Fail(static_cast<uint8_t>(cur.error_code), w.fetch_sets);
    }
    PrpFetchInfo next{};
    bool have_next = false;
    if (cur.no_of_desc_rem > 0) {
      absl::StatusOr<FillDescriptor> fill = fetcher.Fetch(cur);
      if (!fill.ok()) {
        fetcher.Release(index);
        return Fail(kScInternalError, w.fetch_sets);
      }
      next = fetcher.Header(fill->prp_index, fill->ping_or_pong);
      have_next = true;
      ++w.fetch_sets;
    }
    for (uint64_t e : fetcher.Entries(index, cur.ping_or_pong)) {
      const uint64_t n = std::min<uint64_t>(rem, page_size);
      w.segments.push_back({e, static_cast<uint32_t>(n)});
      rem -= n;
    }
    fetcher.Consumed(index, cur.ping_or_pong);
    if (!have_next) break;
    cur = next;
  }
  fetcher.Release(index);
  if (rem != 0) return Fail(kScInternalError, w.fetch_sets);
  return w;
}

std::vector<DataSegment> CoalesceSegments(const std::vector<DataSegment>& segments,
                                          uint64_t boundary_base, uint64_t boundary,
                                          uint32_t max_len) {
  std::vector<DataSegment> out;
  for (const DataSegment& s : segments) {
    if (!out.empty()) {
      DataSegment& last = out.back();
      const uint64_t end = last.addr + last.len;
      const bool same_region =
          (last.addr - boundary_base) / boundary == (s.addr + s.len - 1 - boundary_base) / boundary;
      if (end == s.addr && same_region && uint64_t{last.len} + s.len <= max_len) {
        last.len += s.len;
        continue;
      }
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace ecd::nvme
