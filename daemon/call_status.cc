// Statuses of ecd.v1 calls that end early, and the store's Interrupt of a call.
#include "daemon/call_status.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "daemon/convert.h"

namespace ecd::daemon {

grpc::Status Stopped(const grpc::ServerContext* context, absl::string_view what) {
  if (context->deadline() <= std::chrono::system_clock::now()) {
    return grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("the call's deadline passed; ", what, ". Retry with a longer deadline"));
  }
  return grpc::Status(grpc::StatusCode::CANCELLED,
                      absl::StrCat("the client cancelled the call; ", what));
}

grpc::Status StatusOfCall(const grpc::ServerContext* context, const absl::Status& s,
                          absl::string_view what) {
  if (!s.ok() && !absl::IsDeadlineExceeded(s) && context->IsCancelled()) {
    return Stopped(context, what);
  }
  return ToGrpc(s);
}

store::Interrupt InterruptOf(grpc::ServerContext* context) {
  store::Interrupt interrupt;
  if (const auto deadline = context->deadline();
      deadline != std::chrono::system_clock::time_point::max()) {
    interrupt.deadline = absl::FromChrono(deadline);
  }
  interrupt.cancelled = [context] { return context->IsCancelled(); };
  return interrupt;
}

}  // namespace ecd::daemon
