// RebuildScheduler: the queue of proactive rebuild work. Jobs are the store's answers to device
// health reports (CXL events) and to operators: evacuate a device, move the blocks in a media
// range a device reported bad, or repair one object. One worker runs them by priority (then
// age), with progress per job, an optional bandwidth limit, and a bounded history for the API.
#ifndef ECD_LIB_STORE_REBUILD_SCHEDULER_H_
#define ECD_LIB_STORE_REBUILD_SCHEDULER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "lib/store/store.h"

namespace ecd::store {

enum class RebuildKind {
  kEvacuateDevice,  // mark the device failing, move every block off it, then mark it failed
  kMediaRange,      // move the blocks whose extents overlap an LBA range of one device
  kRepairObject,    // rebuild an object's lost or corrupt blocks (like `ecctl recover`)
};
const char* RebuildKindName(RebuildKind kind);

enum class RebuildState { kQueued, kRunning, kDone, kFailed };
const char* RebuildStateName(RebuildState state);

struct RebuildSpec {
  RebuildKind kind = RebuildKind::kRepairObject;
  uint32_t device = 0;     // kEvacuateDevice, kMediaRange
  uint64_t first_lba = 0;  // kMediaRange
  uint64_t lba_count = 0;  // kMediaRange; > 0
  std::string object;      // kRepairObject
  std::string reason;      // why, for operators (e.g. the CXL record that caused it)
};

// Lower runs first: evacuations, then media ranges, then repairs.
int RebuildPriority(RebuildKind kind);

struct RebuildJob {
  uint64_t id = 0;
  RebuildSpec spec;
  int priority = 0;
  RebuildState state = RebuildState::kQueued;
  absl::Time created;
  absl::Time started;
  absl::Time finished;
  uint64_t objects_total = 0;
  uint64_t objects_done = 0;
  uint64_t blocks_checked = 0;
  uint64_t blocks_moved = 0;  // rebuilt or relocated
  uint64_t bytes_moved = 0;
  std::string error;  // set when kFailed
};

// Totals since ecd started, for metrics.
struct RebuildStats {
  uint64_t queued = 0;
  uint64_t running = 0;
  // Finished jobs by kind and end state (kDone or kFailed); never forgotten, unlike history.
  std::map<std::pair<RebuildKind, RebuildState>, uint64_t> finished;
  uint64_t bytes_moved = 0;  // by every job, the running one included
  // When the running job last moved bytes, finished an object or started; InfinitePast when
  // no job has run. A running job whose last progress is old is stalled.
  absl::Time last_progress = absl::InfinitePast();
  // Of the running job, from its pace so far over objects (the current one counted by its
  // stripes); nullopt when idle or before the first batch of stripes is done.
  std::optional<absl::Duration> eta;
};

struct RebuildSchedulerOptions {
  uint64_t rate_bytes_per_sec = 0;  // 0: unlimited
  size_t history = 256;             // finished jobs kept for List/Get
};

// Thread safety: all methods are safe to call concurrently.
class RebuildScheduler {
 public:
  // REQUIRES: `store` outlives the scheduler.
  RebuildScheduler(Store* store, const RebuildSchedulerOptions& options);
  ~RebuildScheduler();  // finishes the running job's current object, drops queued ones
  RebuildScheduler(const RebuildScheduler&) = delete;
  RebuildScheduler& operator=(const RebuildScheduler&) = delete;

  // Queues a job and returns its id. A job equal to one still queued (same kind, device, range
  // and object) is not queued twice: the existing id is returned.
  uint64_t Submit(RebuildSpec spec);
  // Queues an evacuation for every device the catalog says is failing (after a restart).
  void ResumeEvacuations();

  std::vector<RebuildJob> List() const;  // running and queued first, then newest finished
  std::optional<RebuildJob> Get(uint64_t id) const;
  RebuildStats Stats() const;
  // Waits until nothing is queued or running; false on timeout.
  bool WaitIdle(absl::Duration timeout);

 private:
  void Loop();
  void Run(RebuildJob& job);

  Store* const store_;
  const RebuildSchedulerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint64_t next_id_ = 1;                 // guarded by mu_
  std::map<uint64_t, RebuildJob> jobs_;  // all known jobs by id; guarded by mu_
  std::deque<uint64_t> finished_;        // finished ids, oldest first; guarded by mu_
  std::optional<uint64_t> running_;      // guarded by mu_
  bool stop_ = false;                    // guarded by mu_
  // For Stats, guarded by mu_: finished jobs by kind and state, their bytes, the last progress,
  // and how far the running job is into its current object (0..1).
  std::map<std::pair<RebuildKind, RebuildState>, uint64_t> finished_counts_;
  uint64_t finished_bytes_ = 0;
  absl::Time last_progress_ = absl::InfinitePast();
  double current_fraction_ = 0;
  std::thread worker_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_REBUILD_SCHEDULER_H_
