// RepairPlanner: the one queue that brings the store back to full redundancy, with no operator
// command needed. Its inputs are what the catalog says (blocks on failed devices, blocks marked
// corrupt by a read, a verify or a scrub, blocks on failing devices being evacuated) and the
// media ranges a device reported bad. It works stripe by stripe across the whole store, the
// stripes with the fewest healthy blocks first, under one rate limiter, and plans again after
// every change (a device failing during a repair re-orders the work). Devices that went down
// without an operator asking are failed, and so repaired, once down for the repair delay.
//
// Jobs are the operators' view of the inputs: an evacuation, a media range or a whole-object
// repair, each with progress; automatic repairs are counted in RepairStatus.
//
// Thread safety: all methods are safe to call concurrently. One worker thread does the work.
#ifndef ECD_LIB_REPAIR_REPAIR_PLANNER_H_
#define ECD_LIB_REPAIR_REPAIR_PLANNER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "lib/store/store.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

enum class RebuildKind {
  kEvacuateDevice,  // mark the device failing, move every block off it, then mark it failed
  kMediaRange,      // move the blocks whose extents overlap an LBA range of one device
  kRepairObject,    // read and check every block of an object, rebuild what is bad
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

// Lower runs first among jobs of equal risk: evacuations, then media ranges, then repairs.
int RebuildPriority(RebuildKind kind);

struct RebuildJob {
  uint64_t id = 0;
  RebuildSpec spec;
  int priority = 0;
  RebuildState state = RebuildState::kQueued;
  absl::Time created;
  absl::Time started;
  absl::Time finished;
  // kRepairObject: 1 and 0/1. Evacuations and media ranges: stripes with a block to move,
  // as first planned, and those moved since.
  uint64_t objects_total = 0;
  uint64_t objects_done = 0;
  uint64_t blocks_checked = 0;
  uint64_t blocks_moved = 0;  // rebuilt or relocated
  uint64_t bytes_moved = 0;
  std::string error;  // set when kFailed
};

// Totals since ecd started, for the jobs' metrics.
struct RebuildStats {
  uint64_t queued = 0;
  uint64_t running = 0;
  // Finished jobs by kind and end state (kDone or kFailed); never forgotten, unlike history.
  std::map<std::pair<RebuildKind, RebuildState>, uint64_t> finished;
  uint64_t bytes_moved = 0;  // by every job and every automatic repair
  // When the repair last moved bytes or finished a batch; InfinitePast before the first.
  absl::Time last_progress = absl::InfinitePast();
  // Until the queue is empty, from the recent repair rate; nullopt when idle or unknown.
  std::optional<absl::Duration> eta;
};

// What the repair is doing, for status and metrics. Kept as stripes change; no catalog scan.
struct RepairStatus {
  bool paused = false;
  uint64_t rate_bytes_per_sec = 0;  // 0: unlimited
  absl::Duration delay;             // the repair delay of down devices
  // Stripes with a block to rebuild or move, and those only waiting for a down device's delay.
  uint64_t stripes_queued = 0;
  uint64_t stripes_waiting = 0;
  // Since ecd started.
  uint64_t stripes_repaired = 0;
  uint64_t blocks_repaired = 0;
  uint64_t bytes_repaired = 0;
  uint64_t stripes_lost = 0;  // fewer than M good blocks when last tried
  // Stripes of the whole store by redundancy left (healthy blocks minus M): index r holds the
  // stripes with r more blocks to lose before data is lost, up to the largest K stored.
  std::vector<uint64_t> stripes_by_redundancy;
  // The order the work was done in: per redundancy left at the time a stripe was repaired, the
  // sequence numbers of the first and the last batch that repaired one, and the stripes.
  struct Level {
    uint64_t first_batch = 0;
    uint64_t last_batch = 0;
    uint64_t stripes = 0;
  };
  std::map<uint32_t, Level> repaired_by_redundancy;
  double bytes_per_sec = 0;           // recent repair rate
  std::optional<absl::Duration> eta;  // to full redundancy; nullopt when idle or unknown
  std::string stalled;                // why the repair cannot progress; empty if it can
  absl::Time last_progress = absl::InfinitePast();
};

struct RepairPlannerOptions {
  uint64_t rate_bytes_per_sec = 0;                  // 0: unlimited; persisted changes win
  absl::Duration repair_delay = absl::Minutes(10);  // down this long: failed and repaired
  size_t history = 256;                             // finished jobs kept for List/Get
  uint64_t batch_stripes = 64;                      // stripes of one object per batch
  // Between batches, while client requests wait for stripe memory, the repair waits up to
  // this long for them (within its rate): clients first.
  absl::Duration yield_to_clients = absl::Milliseconds(50);
  absl::Duration stall_retry = absl::Seconds(30);  // after running out of room
};

class RepairPlanner {
 public:
  // REQUIRES: `store` outlives the planner. Reads the persisted pause and rate, registers as
  // the store's repair listener, and starts the worker, which plans from the catalog at once:
  // after a restart the repair resumes where it was.
  RepairPlanner(store::Store* store, const RepairPlannerOptions& options);
  ~RepairPlanner();  // finishes the current batch; queued work stays in the catalog
  RepairPlanner(const RepairPlanner&) = delete;
  RepairPlanner& operator=(const RepairPlanner&) = delete;

  // Queues a job and returns its id. A job equal to one still queued or running (same kind,
  // device, range and object) is not queued twice: the existing id is returned. An evacuation
  // marks the device failing at once (FailedPrecondition-like errors fail the job).
  uint64_t Submit(const RebuildSpec& spec);
  // Something may need repair (the store's listener calls this): plan again soon.
  void Changed();

  // Pause (Ceph's noout) and resume; persisted in the catalog's meta table.
  absl::Status SetPaused(bool paused);
  // Bytes per second for all repair work; 0 unlimited. Persisted.
  absl::Status SetRate(uint64_t bytes_per_sec);

  std::vector<RebuildJob> List() const;  // running and queued first, then newest finished
  std::optional<RebuildJob> Get(uint64_t id) const;
  RebuildStats Stats() const;
  RepairStatus Status() const;
  // Waits until nothing is queued or running and no stripe waits for repair (stripes waiting
  // only for a down device's delay do not count); false on timeout.
  bool WaitIdle(absl::Duration timeout);

 private:
  struct Work;  // one stripe to repair
  void Loop();
  // Queues again the media ranges a previous run had not finished (catalog meta). Not analysed:
  // the constructor calls it before the worker thread starts, without the lock.
  void ResumeMediaRanges() ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // When the worker must wake without being told: a stall's retry, a down device's delay.
  absl::Time NextDeadlineLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t NextObjectJobLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // a queued repair-object job, or 0
  // Fails the devices down for longer than the delay; returns how many.
  size_t FailDownDevices();
  struct Findings;  // what one plan found
  // Reads what is at risk from the catalog and replaces the queue, the census and the jobs'
  // progress with what it finds. A catalog error plans again 5 s later.
  void Plan();
  // Reads every stripe with a corrupt block, a block on a device not online, or a block in a
  // media range, once each, into `f`.
  absl::Status ReadRisks(const std::vector<store::DeviceRecord>& devices,
                         const std::vector<store::DeviceRange>& media,
                         const std::map<std::pair<int64_t, uint64_t>, bool>& skipped, Findings& f);
  // Counts one stripe into `f` and queues it if it needs work.
  static void Assess(const store::StripeRows& r, const std::vector<store::DeviceRecord>& devices,
                     const std::vector<store::DeviceRange>& media,
                     const std::map<std::pair<int64_t, uint64_t>, bool>& skipped, Findings& f);
  void RecountLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // status_.stripes_by_redundancy from the census
  // Ends the jobs whose work is done; the meta keys of finished media ranges go to
  // `finished_media`, to be deleted once the lock is released.
  void UpdateJobsLocked(const std::vector<store::DeviceRecord>& devices,
                        const std::vector<store::DeviceRange>& media, const Findings& f,
                        uint64_t first_unseen_job, std::vector<std::string>& finished_media)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets a failed batch's stripes aside (lost, for DataLoss) until a device change or the
  // retry, so that one stripe that cannot be repaired does not hold up the others.
  void SetAsideLocked(const std::vector<Work>& batch, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClearSkippedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Repairs the stripes at the head of the queue that share its object and risk.
  void RunBatch();
  void Finished(const std::vector<Work>& batch, const absl::StatusOr<store::RecoverProgress>& p);
  void RunObjectJob(uint64_t id);
  // Adds a batch's moves to the running evacuation or media-range job of `device` (-1: none).
  void CreditJobsLocked(int64_t device, const store::RecoverProgress& p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Store::Recover of `name` under the rate limit, stopped when the planner stops; `progress`
  // (may be empty) after each batch.
  absl::StatusOr<store::RecoverProgress> RecoverPaced(
      const std::string& name, store::RecoverOptions options,
      const std::function<void(const store::RecoverProgress&)>& progress);
  // Sleeps as long as `bytes` more keep the repair within its rate.
  void Pace(uint64_t bytes);
  // Waits, up to options_.yield_to_clients, while client requests wait for stripe memory.
  void YieldToClients();
  // Marks `device` failing for its evacuation; returns why it cannot be, or "".
  std::string StartEvacuation(uint32_t device);
  void FinishLocked(uint64_t id, const std::string& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<absl::Duration> EtaLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  store::Store* const store_;
  const RepairPlannerOptions options_;

  mutable Mutex mu_;
  CondVar changed_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;  // Plan again before the next batch
  bool planning_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t rate_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t paced_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // Since pace_start_
  absl::Time pace_start_ ABSL_GUARDED_BY(mu_) = absl::Now();
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, RebuildJob> jobs_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> finished_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<RebuildKind, RebuildState>, uint64_t> finished_counts_ ABSL_GUARDED_BY(mu_);
  std::vector<store::DeviceRange> ranges_ ABSL_GUARDED_BY(mu_);  // Media ranges to move
  std::vector<Work> queue_ ABSL_GUARDED_BY(mu_);                 // Most at risk first
  size_t in_batch_ ABSL_GUARDED_BY(mu_) = 0;                     // Stripes of the batch running
  std::vector<store::DeviceRecord> down_ ABSL_GUARDED_BY(mu_);   // Down devices at the last plan
  // Stripes by K, and of those the degraded ones by redundancy left.
  mutable std::map<uint32_t, uint64_t> census_totals_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, uint64_t> census_lost_ ABSL_GUARDED_BY(mu_);  // lost stripes by K
  std::map<uint32_t, std::map<uint32_t, uint64_t>> census_degraded_ ABSL_GUARDED_BY(mu_);
  mutable RepairStatus status_ ABSL_GUARDED_BY(mu_);  // Status() refreshes its census
  uint64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  // Since the queue last filled: when, and the stripes and bytes repaired (rate, ETA).
  absl::Time activity_start_ ABSL_GUARDED_BY(mu_) = absl::Now();
  uint64_t activity_stripes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t activity_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Stripes set aside after a failed batch (true: lost), until a device change or retry_at_.
  std::map<std::pair<int64_t, uint64_t>, bool> skipped_ ABSL_GUARDED_BY(mu_);
  absl::Time retry_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time plan_retry_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();  // After an error
  std::thread worker_;
};

}  // namespace ecd::repair

#endif  // ECD_LIB_REPAIR_REPAIR_PLANNER_H_
