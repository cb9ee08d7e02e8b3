// Driver: the host side of one NVMe I/O queue pair, as a host driver would run it. Callers
// submit commands from any thread; the driver assigns command identifiers, waits for a free
// submission slot, writes the entry, rings the tail doorbell, and completes each caller when the
// controller's interrupt delivers the matching completion (phase tag checked, SQHD recorded,
// head doorbell rung).
#ifndef ECD_LIB_NVME_DRIVER_H_
#define ECD_LIB_NVME_DRIVER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/nvme/command.h"
#include "lib/nvme/controller.h"
#include "lib/nvme/queue.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

// Thread safety: Submit and Execute may be called concurrently from any threads. Completion
// callbacks run on the controller thread and must not block on other commands.
class Driver {
 public:
  // REQUIRES: `controller` outlives the driver and has no queues attached yet.
  explicit Driver(Controller* controller);
  ~Driver();  // waits for every outstanding command
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  using Callback = std::function<void(const CompletionEntry&)>;
  // Submits `e` (its cid is assigned here) and returns once it is in the submission queue.
  void Submit(SubmissionEntry e, Callback done);
  // Submits `e` and waits for its completion status.
  NvmeStatus Execute(SubmissionEntry e);

  uint64_t outstanding() const;

 private:
  void OnInterrupt(CompletionQueue& cq);

  Controller* const controller_;
  SubmissionQueue sq_;
  CompletionQueue cq_;

  mutable Mutex mu_;
  CondVar slot_free_;
  CondVar idle_;
  std::vector<Callback> callbacks_ ABSL_GUARDED_BY(mu_);  // by cid
  std::vector<uint16_t> free_cids_ ABSL_GUARDED_BY(mu_);
  uint32_t sq_head_seen_ ABSL_GUARDED_BY(mu_) = 0;  // From the last completion's SQHD
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_DRIVER_H_
