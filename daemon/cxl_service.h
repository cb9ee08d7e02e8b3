// The ecd.v1 Cxl service: inject event records into a device's emulated CXL event log, and run
// the Events mailbox commands (Get/Clear Event Records, Get/Set Event Interrupt Policy) on it,
// adapting lib/cxl to the wire. Records injected here reach the store's policy through the
// monitor's interrupt-driven drain, exactly like records a device raises by itself.
#ifndef ECD_DAEMON_CXL_SERVICE_H_
#define ECD_DAEMON_CXL_SERVICE_H_

#include "daemon/auth.h"
#include "daemon/call_gate.h"
#include "daemon/limits.h"
#include "daemon/request_limiter.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/repair/cxl_monitor.h"

namespace ecd::daemon {

class CxlService final : public v1::Cxl::Service {
 public:
  // The monitor and the policy must outlive the service; every call passes `rules`.
  CxlService(repair::CxlMonitor* monitor, repair::EventPolicy* policy, const CallRules& rules)
      : gate_(v1::Cxl::service_full_name(), rules),
        monitor_(monitor),
        policy_(policy),
        limits_(rules.limits) {}

  grpc::Status Ingest(grpc::ServerContext* context, const v1::CxlIngestRequest* request,
                      v1::CxlIngestResponse* response) override;
  grpc::Status GetStats(grpc::ServerContext* context, const v1::CxlStatsRequest* request,
                        v1::CxlStats* response) override;

  grpc::Status Inject(grpc::ServerContext* context, const v1::CxlInjectRequest* request,
                      v1::CxlInjectResponse* response) override;
  grpc::Status GetEventRecords(grpc::ServerContext* context,
                               const v1::CxlGetEventRecordsRequest* request,
                               v1::CxlGetEventRecordsResponse* response) override;
  grpc::Status ClearEventRecords(grpc::ServerContext* context,
                                 const v1::CxlClearEventRecordsRequest* request,
                                 v1::CxlClearEventRecordsResponse* response) override;
  grpc::Status GetInterruptPolicy(grpc::ServerContext* context,
                                  const v1::CxlGetInterruptPolicyRequest* request,
                                  v1::CxlInterruptPolicy* response) override;
  grpc::Status SetInterruptPolicy(grpc::ServerContext* context,
                                  const v1::CxlSetInterruptPolicyRequest* request,
                                  v1::CxlInterruptPolicy* response) override;

 private:
  const CallGate gate_;  // Authorizes and admits every call.
  repair::CxlMonitor* const monitor_;
  repair::EventPolicy* const policy_;
  const Limits limits_;
};

// Builds the 128-byte record an Inject request describes. InvalidArgument for an unknown type.
absl::StatusOr<cxl::EventRecord> RecordFromInject(const v1::CxlInjectRequest& request);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_CXL_SERVICE_H_
