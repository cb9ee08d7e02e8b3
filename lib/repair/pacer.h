// Pacer: keeps background work (rebuilds, scrubs) at or under a configured byte rate. The
// caller reports how many bytes it has done since the pacer started and sleeps for the delay it
// is given, in whatever way lets it stop early.
//
// Thread safety: const methods only; safe to share.
#ifndef ECD_LIB_REPAIR_PACER_H_
#define ECD_LIB_REPAIR_PACER_H_

#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ecd::repair {

class Pacer {
 public:
  // bytes_per_sec 0: unlimited (Delay is always zero).
  explicit Pacer(uint64_t bytes_per_sec) : rate_(bytes_per_sec), start_(absl::Now()) {}

  // How long to wait, now, so that `bytes_so_far` bytes since construction stay within the
  // rate. Never more than `cap`, so that a caller keeps checking whether it should stop.
  absl::Duration Delay(uint64_t bytes_so_far, absl::Duration cap = absl::Seconds(5)) const {
    if (rate_ == 0) return absl::ZeroDuration();
    const absl::Duration due = absl::Seconds(static_cast<double>(bytes_so_far) / rate_);
    const absl::Duration ahead = due - (absl::Now() - start_);
    if (ahead <= absl::ZeroDuration()) return absl::ZeroDuration();
    return ahead < cap ? ahead : cap;
  }

 private:
  const uint64_t rate_;
  const absl::Time start_;
};

}  // namespace ecd::repair

#endif  // ECD_LIB_REPAIR_PACER_H_
