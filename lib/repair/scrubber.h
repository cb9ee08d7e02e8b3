// Scrubber: proves that stored data is still what was written, and repairs what is not. A scrub
// reads every block of the objects it covers, checks each block's CRC32C and that each stripe's
// parity equals the encoding of its data (Store::Recover with verify_parity), and rewrites what
// is wrong (copy-on-write, like recover). Scrubs run on request (ScrubNow: `ecctl scrub`) or in
// the background, one pass over all objects per interval at a bounded byte rate; when the last
// background pass finished is kept in the catalog, so restarts do not postpone scrubbing.
#ifndef ECD_LIB_REPAIR_SCRUBBER_H_
#define ECD_LIB_REPAIR_SCRUBBER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "lib/store/store.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

inline constexpr size_t kMaxScrubErrors = 32;

// What one scrub (of one object or of many) found and did.
struct ScrubReport {
  uint64_t objects_total = 0;
  uint64_t objects_done = 0;
  std::string current;              // the object being scrubbed now; empty between objects
  store::RecoverProgress found;     // summed over the objects done and the current one
  uint64_t objects_failed = 0;      // objects whose scrub ended in an error (DataLoss, no space)
  std::vector<std::string> errors;  // "name: message" of the first kMaxScrubErrors of them
};

struct ScrubOptions {
  bool repair = true;               // false: check and count only
  uint64_t rate_bytes_per_sec = 0;  // bytes read; 0: unlimited
};

struct ScrubberOptions {
  absl::Duration interval = absl::Hours(24 * 7);  // between background passes; zero: none
  uint64_t rate_bytes_per_sec = 32ull << 20;      // of background passes
  bool repair = true;                             // of background passes
};

struct ScrubberStatus {
  bool background = false;                          // background passes are configured
  bool running = false;                             // a background pass is running now
  absl::Time last_finished = absl::InfinitePast();  // of a background pass, persisted
  absl::Time next_start = absl::InfiniteFuture();
  ScrubReport current;  // the running background pass
  ScrubReport last;     // the last background pass finished since ecd started
  uint64_t passes = 0;  // background passes finished since ecd started
  // Everything every scrub (background or on request) found since ecd started.
  store::RecoverProgress found_total;
  uint64_t objects_failed_total = 0;
  uint64_t objects_scrubbed_total = 0;
};

// Thread safety: all methods are safe to call concurrently. A scrub of an object runs alongside
// reads and updates of it (Store::Recover takes the object's lock a batch at a time).
class Scrubber {
 public:
  // REQUIRES: `store` outlives the scrubber. Starts the background thread when
  // options.interval > 0.
  Scrubber(store::Store* store, const ScrubberOptions& options);
  ~Scrubber();  // stops a running pass between two batches of stripes
  Scrubber(const Scrubber&) = delete;
  Scrubber& operator=(const Scrubber&) = delete;

  // Scrubs `names` now, or every object when empty, on the caller's thread; `progress` (may be
  // empty) is called after each batch of stripes. NotFound if a named object does not exist
  // (objects deleted during a scrub of all are skipped); Cancelled if `cancelled` (may be
  // empty) returns true or the scrubber is stopping. Per-object failures are counted in the
  // report, not returned.
  absl::StatusOr<ScrubReport> ScrubNow(const std::vector<std::string>& names,
                                       const ScrubOptions& options,
                                       const std::function<void(const ScrubReport&)>& progress,
                                       const std::function<bool()>& cancelled);

  // Starts a background pass now unless one is running (or background passes are off).
  void StartPass();

  ScrubberStatus Status() const;

 private:
  void Loop();
  // Waits up to `d`; false if the scrubber is stopping.
  bool Wait(absl::Duration d);
  // Adds what `report` found since `accounted` to the totals, and moves `accounted` up to it.
  void Account(const ScrubReport& report, ScrubReport& accounted);

  store::Store* const store_;
  const ScrubberOptions options_;

  mutable Mutex mu_;
  CondVar wake_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool start_now_ ABSL_GUARDED_BY(mu_) = false;
  ScrubberStatus status_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;
};

}  // namespace ecd::repair

#endif  // ECD_LIB_REPAIR_SCRUBBER_H_
