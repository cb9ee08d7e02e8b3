// Controller: a model of an NVMe controller with one namespace (NSID 1) kept in a file or block
// device and one I/O queue pair, executing Read, Write and Flush.
//
// For each command the host makes visible with the submission-queue tail doorbell, the
// controller validates it (opcode, namespace, LBA range, MDTS in units of the 4 KiB minimum page
// size), resolves its PRPs through the PG329-style fetch manager (prp_walker.h), and only when
// all of that succeeds moves data: contiguous host pages are coalesced and each run becomes one
// io_uring READ_FIXED/WRITE_FIXED straight into or out of host memory: the pool and the fixed
// regions of the host's DmaMap (plain READ/WRITE for its other regions, or when the kernel
// refused the fixed buffers); Flush becomes an fsync.
// Kernel errors and short transfers become NVMe statuses. Completions are posted to the
// completion queue with the phase tag, and the host's interrupt handler is called.
//
// Thread safety: RingSubmissionDoorbell must be serialised by the host (it holds its submission
// lock); completions are posted and the interrupt handler runs on the controller's own thread.
#ifndef ECD_LIB_NVME_CONTROLLER_H_
#define ECD_LIB_NVME_CONTROLLER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/nvme/command.h"
#include "lib/nvme/dma_map.h"
#include "lib/nvme/host_memory.h"
#include "lib/nvme/prp_fetch.h"
#include "lib/nvme/queue.h"
#include "lib/nvme/uring_queue.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

inline constexpr uint32_t kMinPageSize = 4096;  // CAP.MPSMIN = 0

// The largest transfer MDTS allows: 2^mdts units of the minimum page size; 0 means no limit.
inline constexpr uint64_t MdtsBytes(uint32_t mdts) {
  return mdts == 0 ? 0 : uint64_t{kMinPageSize} << mdts;
}

struct ControllerOptions {
  // Maximum data transfer size as a power of two in units of the minimum page size (4 KiB):
  // 8 means 1 MiB. 1..10 with 4 KiB pages (a command's list must fit the fetch manager's
  // 10-bit descriptor count; larger pages allow more).
  uint32_t mdts = 8;
  // C_NUM_PRPS_PER_INDX of the PRP fetch manager (each ping/pong buffer holds 2*(n-1) entries).
  uint32_t prps_per_index = 8;
  // Submission/completion queue entries; also the io_uring depth. Power of two, 2..4096.
  uint32_t queue_entries = 64;
  // Open the namespace with O_DIRECT where the file system supports it.
  bool direct = true;
};

struct ControllerStats {
  uint64_t reads = 0, writes = 0, flushes = 0;
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t io_ops = 0;           // io_uring operations after coalescing
  uint64_t fixed_io_ops = 0;     // data pieces as READ_FIXED/WRITE_FIXED (pool, fixed regions)
  uint64_t plain_io_ops = 0;     // data pieces as plain READ/WRITE (pages pinned per I/O)
  uint64_t data_segments = 0;    // PRP data segments before coalescing
  uint64_t prp_sets = 0;         // PRP list sets fetched (initial + refills)
  PrpFetchManager::Stats fetch;  // fetches by buffer, refills, host reads
  std::map<uint16_t, uint64_t> errors;  // by NvmeStatus::Field()
  uint64_t in_flight = 0;
  bool direct = false;
  bool fixed_buffers = false;
};

class Controller {
 public:
  // The namespace is `path` (must exist and hold lba_count * lba_size bytes). Host memory pages
  // hold PRP lists and data; data may also lie in regions registered in `dma` (may be null),
  // whose fixed regions are registered with io_uring beside the pool.
  // `memory` and `dma` must outlive the controller.
  static absl::StatusOr<std::unique_ptr<Controller>> Create(HostMemory* memory,
                                                            const std::string& path,
                                                            uint32_t lba_size, uint64_t lba_count,
                                                            const ControllerOptions& options,
                                                            const DmaMap* dma = nullptr);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  uint32_t lba_size() const { return lba_size_; }
  uint64_t lba_count() const { return lba_count_; }
  // Largest transfer in bytes.
  uint64_t max_transfer_bytes() const;
  uint32_t queue_entries() const { return options_.queue_entries; }

  // Creates I/O queue pair 1 in host memory the host owns (like Create I/O SQ/CQ). The handler
  // is the queue's interrupt: it runs on the controller thread after completions are posted,
  // with the completion queue it may consume. REQUIRES: called once, before any doorbell; both
  // queues have queue_entries() entries and outlive the controller.
  void AttachQueues(SubmissionQueue* sq, CompletionQueue* cq,
                    std::function<void(CompletionQueue&)> interrupt);

  // The host wrote the SQ tail doorbell: consume and start every visible command.
  void RingSubmissionDoorbell();

  ControllerStats stats() const;

 private:
  struct Inflight {
    uint16_t cid = 0;
    Opcode opcode = Opcode::kFlush;
    uint32_t ops_left = 0;
    uint64_t bytes = 0;
    uint64_t expected = 0;
    NvmeStatus status;
  };

  Controller(HostMemory* memory, const DmaMap* dma, std::unique_ptr<UringQueue> uring,
             std::unique_ptr<PrpFetchManager> fetcher, uint32_t lba_size, uint64_t lba_count,
             const ControllerOptions& options);
  // The host memory at [addr, addr + len) for a data transfer, or null (a Data Transfer Error)
  // when it lies neither in the pool nor in one registered range.
  uint8_t* TranslateData(uint64_t addr, uint64_t len) const;
  void Start(const SubmissionEntry& e);
  void CompleteNow(uint16_t cid, NvmeStatus status);
  // Records command `cid` as in flight with `ops` and hands them to io_uring; `expected` is the
  // byte count the ops must move (0 for a flush).
  void Launch(uint16_t cid, Opcode op, std::vector<IoOp> ops, uint64_t expected);
  void ReaperLoop();
  void Post(const std::vector<std::pair<uint16_t, NvmeStatus>>& done);

  HostMemory* const memory_;
  const DmaMap* const dma_;  // may be null
  std::unique_ptr<UringQueue> uring_;
  std::unique_ptr<PrpFetchManager> fetcher_;
  const uint32_t lba_size_;
  const uint64_t lba_count_;
  const ControllerOptions options_;

  SubmissionQueue* sq_ = nullptr;
  CompletionQueue* cq_ = nullptr;
  std::function<void(CompletionQueue&)> interrupt_;

  mutable Mutex mu_;
  std::map<uint16_t, Inflight> inflight_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<uint16_t, NvmeStatus>> immediate_ ABSL_GUARDED_BY(mu_);
  ControllerStats stats_ ABSL_GUARDED_BY(mu_);
  Mutex cq_mu_;  // serialises posting and the interrupt handler

  std::atomic<uint32_t> sq_head_{0};  // controller SQ head, reported as SQHD
  std::atomic<bool> stop_{false};
  std::thread reaper_;
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_CONTROLLER_H_
