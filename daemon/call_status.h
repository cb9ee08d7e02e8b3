// How an ecd.v1 handler turns the store's answer into the call's status, and the store's view of
// a call's deadline and cancellation.
#ifndef ECD_DAEMON_CALL_STATUS_H_
#define ECD_DAEMON_CALL_STATUS_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "lib/store/interrupt.h"

namespace ecd::daemon {

// A call stopped because its client cancelled it or its deadline passed: the status the
// client would see anyway, with what was (not) done (`what`: "nothing was stored").
grpc::Status Stopped(const grpc::ServerContext* context, absl::string_view what);

// The store's answer `s` to a call, or Stopped when the call ended because the client went
// away. DeadlineExceeded is kept as it is: the call's deadline passed while it waited, or ecd
// cancelled a stalled stream (StreamIdleTimer), which told the client so in these words.
grpc::Status StatusOfCall(const grpc::ServerContext* context, const absl::Status& s,
                          absl::string_view what);

// When the store's waits for a call give up: at its deadline, or once it is cancelled.
// REQUIRES: `context` outlives the returned Interrupt.
store::Interrupt InterruptOf(grpc::ServerContext* context);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_CALL_STATUS_H_
