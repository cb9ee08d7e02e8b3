// PRP walker: the controller side of PRP resolution. Turns a command's PRP1, PRP2 and transfer
// length into the host data segments they describe, fetching PRP lists through the PG329-style
// PrpFetchManager (ping/pong sets, one set requested ahead of the one being consumed), and
// checking every rule the controller enforces. No data moves here: a command either resolves
// completely or fails with the NVMe status it must complete with.
#ifndef ECD_LIB_NVME_PRP_WALKER_H_
#define ECD_LIB_NVME_PRP_WALKER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/nvme/command.h"
#include "lib/nvme/prp_fetch.h"

namespace ecd::nvme {

struct DataSegment {
  uint64_t addr = 0;
  uint32_t len = 0;
  friend bool operator==(const DataSegment&, const DataSegment&) = default;
};

struct PrpWalk {
  NvmeStatus status;                  // ok() or the status the command fails with
  std::vector<DataSegment> segments;  // one per data page, in transfer order; empty on failure
  uint32_t fetch_sets = 0;            // PRP sets fetched (initial + refills)
};

// Resolves `length` bytes (> 0) described by prp1/prp2 with memory pages of `page_size` bytes.
// `fetcher` (may be shared by concurrent walks) reads the lists. Statuses: PRP Offset Invalid
// (0x13) for PRP1 bits 1:0 set, an offset in a PRP2 data pointer, list entry or chain pointer,
// or a list pointer that is not qword aligned; Data Transfer Error (0x04) when a list cannot be
// read; Internal Error (0x06) when no PRP buffer index is free.
PrpWalk WalkPrps(PrpFetchManager& fetcher, uint32_t page_size, uint64_t prp1, uint64_t prp2,
                 uint64_t length);

// Merges segments that are contiguous in host memory, never letting a merged segment cross a
// multiple of `boundary` bytes (a fixed-buffer edge) or exceed max_len bytes.
std::vector<DataSegment> CoalesceSegments(const std::vector<DataSegment>& segments,
                                          uint64_t boundary_base, uint64_t boundary,
                                          uint32_t max_len);

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_PRP_WALKER_H_
