// CallGate: the first step of every ecd.v1 handler. The caller's token must allow the method
// (Authorizer), then the call takes a slot of the request limits (RequestLimiter), which it holds
// until the handler returns. Method paths come from the service's generated descriptor.
//
// Thread safety: Run may be called from any number of threads at once. The Authorizer and
// RequestLimiter are borrowed and must outlive the gate.
#ifndef ECD_DAEMON_CALL_GATE_H_
#define ECD_DAEMON_CALL_GATE_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <functional>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "daemon/auth.h"
#include "daemon/limits.h"
#include "daemon/request_limiter.h"
#include "daemon/stream_idle.h"

namespace ecd::daemon {

// What every ecd.v1 service applies to its calls, given to its constructor. The pointers are
// borrowed and must outlive the services; each may be null.
struct CallRules {
  const Authorizer* authorizer = nullptr;  // Null: every call is allowed (no --tokens-file).
  RequestLimiter* limiter = nullptr;       // Null: every call is admitted (no call limits).
  Limits limits;                           // The input limits (--max-object-size and others).
  StreamIdleTimer* idle = nullptr;         // Null: stalled streams are never cancelled.
};

class CallGate {
 public:
  // The gate of the service named `service` ("ecd.v1.Objects", the generated
  // Service::service_full_name()). Aborts when the generated descriptor pool has no such
  // service: a build error, not a runtime one.
  // Calls are checked by `rules.authorizer` and admitted by `rules.limiter`.
  CallGate(absl::string_view service, const CallRules& rules);

  // Counts a refusal by an input limit (no-op without a limiter).
  void CountRejection(Limit limit) const {
    if (limiter_ != nullptr) limiter_->CountRejection(limit);
  }

  // Runs `body` for a call of `method` ("Stat") when the caller may make it and a slot is free,
  // holding the slot until `body` returns; else returns the refusal (UNAUTHENTICATED or
  // PERMISSION_DENIED from the Authorizer, RESOURCE_EXHAUSTED from the limiter) without running
  // it. INTERNAL when the service has no method `method` (a programming error).
  template <typename Body>
  grpc::Status Run(grpc::ServerContext* context, absl::string_view method, Body&& body) const {
    const std::string* path = PathOf(method);
    if (path == nullptr) return UnknownMethod(method);
    if (grpc::Status s = Authorize(auth_, context, path->c_str()); !s.ok()) return s;
    RequestLimiter::Admission admission = RequestLimiter::Admit(limiter_, context);
    if (!admission.ok()) return admission.status();
    return std::forward<Body>(body)();
  }

 private:
  // "/ecd.v1.Objects/Stat" for "Stat"; null when the service has no such method.
  const std::string* PathOf(absl::string_view method) const;
  grpc::Status UnknownMethod(absl::string_view method) const;

  std::string service_;
  std::map<std::string, std::string, std::less<>> paths_;  // method name -> gRPC path
  const Authorizer* const auth_;
  RequestLimiter* const limiter_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_CALL_GATE_H_
