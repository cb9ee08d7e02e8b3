// Interrupt: the deadline and cancellation checks of a request's waits.
#include "lib/store/interrupt.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ecd::store {

absl::Status Interrupt::Check(absl::string_view waiting_for) const {
  // The deadline first: a call past its deadline is cancelled too.
  if (deadline != absl::InfiniteFuture() && absl::Now() >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat("the deadline passed while ", waiting_for));
  }
  if (cancelled && cancelled()) {
    return absl::CancelledError(absl::StrCat("the caller went away while ", waiting_for));
  }
  return absl::OkStatus();
}

absl::Time Interrupt::NextCheck(absl::Time until) const {
  absl::Time next = std::min(until, deadline);
  if (cancelled) next = std::min(next, absl::Now() + kCancelPoll);
  return next;
}

}  // namespace ecd::store
