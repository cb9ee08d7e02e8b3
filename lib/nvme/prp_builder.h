// PRP builder: the host side of NVMe PRP data pointers. Describes a buffer made of host pages as
// PRP1, PRP2 and, when needed, chained PRP list pages written into host memory, following the
// rules of NVMe Base Specification 2.x section 4.3.1 (see docs/nvme.md):
//
//   * PRP1 points at the first data byte and may carry a (dword-aligned) offset into its page.
//   * PRP2 is unused when the transfer stays in one page, the second page when it touches exactly
//     two, and otherwise a pointer to a PRP list of the remaining pages.
//   * List entries are page aligned. A list page's last slot chains to the next list page only
//     when more than one entry remains; otherwise it holds the last data entry.
//   * The first list may start inside a page (qword aligned); it then has (P - offset) / 8 slots.
#ifndef ECD_LIB_NVME_PRP_BUILDER_H_
#define ECD_LIB_NVME_PRP_BUILDER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/nvme/host_memory.h"

namespace ecd::nvme {

struct PrpDescriptor {
  uint64_t prp1 = 0;
  uint64_t prp2 = 0;
  // Host pages holding PRP lists, in chain order. Unless the caller supplied them, the caller
  // owns them and returns them to the HostMemory once the command has completed.
  std::vector<uint64_t> list_pages;
};

// Number of data pages a transfer of `length` bytes starting `offset` bytes into its first page
// touches, with pages of `page_size` bytes.
uint64_t DataPageCount(uint32_t page_size, uint32_t offset, uint64_t length);

// Number of PRP list pages needed for `entries` list entries when the first list starts
// `first_list_offset` bytes into its page (0 when entries == 0).
uint64_t ListPageCount(uint32_t page_size, uint32_t first_list_offset, uint64_t entries);

// Builds the PRPs for `length` bytes that start `offset` bytes into data_pages[0] and continue at
// the start of each following page. List pages come from `memory` (waiting for free pages if
// need be) unless the caller passes `list_pages` (at least ListPageCount of them), in which case
// those are used and the caller keeps ownership. `first_list_offset` places the first list
// inside its page (tests and debugging use it; the data path passes 0).
//
// REQUIRES: data_pages are page-aligned host addresses, of `memory` or of memory registered for
// DMA (dma_map.h); only the list pages are written.
// Errors: InvalidArgument if length is 0, offset is not dword aligned or not inside a page,
// first_list_offset is not qword aligned or not inside a page, or data_pages holds fewer pages
// than the transfer touches.
absl::StatusOr<PrpDescriptor> BuildPrps(HostMemory& memory, absl::Span<const uint64_t> data_pages,
                                        uint32_t offset, uint64_t length,
                                        uint32_t first_list_offset = 0,
                                        absl::Span<const uint64_t> list_pages = {});

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_PRP_BUILDER_H_
