// PRP builder: writes PRP1/PRP2 and chained PRP lists for a buffer of host pages.
#include "lib/nvme/prp_builder.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace ecd::nvme {

uint64_t DataPageCount(uint32_t page_size, uint32_t offset, uint64_t length) {
  return (offset + length + page_size - 1) / page_size;
}

uint64_t ListPageCount(uint32_t page_size, uint32_t first_list_offset, uint64_t entries) {
  if (entries == 0) return 0;
  const uint64_t per_page = page_size / 8;
  uint64_t slots = (page_size - first_list_offset) / 8;
  uint64_t pages = 1;
  // Each full list page that chains carries slots - 1 entries; the last carries up to `slots`.
  while (entries > slots) {
    entries -= slots - 1;
    slots = per_page;
    ++pages;
  }
  return pages;
}

absl::StatusOr<PrpDescriptor> BuildPrps(HostMemory& memory, absl::Span<const uint64_t> data_pages,
                                        uint32_t offset, uint64_t length,
                                        uint32_t first_list_offset,
                                        absl::Span<const uint64_t> list_pages) {
  const uint32_t page = memory.page_size();
  if (length == 0) return absl::InvalidArgumentError("a PRP transfer needs at least one byte");
  if (offset >= page || offset % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "PRP1 offset %u must be dword aligned and inside a %u-byte page", offset, page));
  }
  if (first_list_offset >= page || first_list_offset % 8 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("PRP list offset %u must be qword aligned and inside a %u-byte page",
                        first_list_offset, page));
  }
  const uint64_t n = DataPageCount(page, offset, length);
  if (data_pages.size() < n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%u bytes at offset %u touch %u pages but %u were given", length, offset, n,
                        data_pages.size()));
  }
  PrpDescriptor d;
  d.prp1 = data_pages[0] + offset;
  if (n == 1) return d;
  if (n == 2) {
    d.prp2 = data_pages[1];
    return d;
  }
  const uint64_t entries = n - 1;
  const uint64_t list_count = ListPageCount(page, first_list_offset, entries);
  if (!list_pages.empty()) {
    if (list_pages.size() < list_count) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%u PRP list entries need %u list pages but %u were given", entries,
                          list_count, list_pages.size()));
    }
    d.list_pages.assign(list_pages.begin(), list_pages.begin() + list_count);
  } else {
    auto pages = memory.AllocatePagesWait(list_count);
    if (!pages.ok()) return pages.status();
    d.list_pages = *std::move(pages);
  }
  d.prp2 = d.list_pages[0] + first_list_offset;

  uint64_t next = 1;  // next data page to describe
  uint64_t slot_addr = d.prp2;
  for (size_t lp = 0; lp < d.list_pages.size(); ++lp) {
    const uint64_t slots = (d.list_pages[lp] + page - slot_addr) / 8;
    const uint64_t remaining = n - next;
    const bool chain = remaining > slots;
    const uint64_t data_entries = chain ? slots - 1 : remaining;
    auto* out = reinterpret_cast<uint64_t*>(memory.Translate(slot_addr, slots * 8));
    for (uint64_t i = 0; i < data_entries; ++i) out[i] = data_pages[next++];
    if (chain) {
      out[slots - 1] = d.list_pages[lp + 1];
      slot_addr = d.list_pages[lp + 1];
    }
  }
  return d;
}

}  // namespace ecd::nvme
