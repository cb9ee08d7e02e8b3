// The ecd.v1 Rebuilds service: the repair's jobs and settings, adapting the repair planner to
// the wire.
#ifndef ECD_DAEMON_REBUILDS_SERVICE_H_
#define ECD_DAEMON_REBUILDS_SERVICE_H_

#include "daemon/call_gate.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/repair/repair_planner.h"

namespace ecd::daemon {

class RebuildsService final : public v1::Rebuilds::Service {
 public:
  // The planner must outlive the service; every call passes `rules`.
  RebuildsService(repair::RepairPlanner* planner, const CallRules& rules)
      : gate_(v1::Rebuilds::service_full_name(), rules), planner_(planner) {}

  grpc::Status List(grpc::ServerContext* context, const v1::ListRebuildsRequest* request,
                    v1::ListRebuildsResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetRebuildRequest* request,
                   v1::RebuildJob* response) override;
  grpc::Status GetRepairStatus(grpc::ServerContext* context, const v1::RepairStatusRequest* request,
                               v1::RepairStatus* response) override;
  grpc::Status SetRepair(grpc::ServerContext* context, const v1::SetRepairRequest* request,
                         v1::RepairStatus* response) override;

 private:
  // Applies the settings `request` carries, the rate first; the first error, saying what was
  // changed before it.
  grpc::Status ApplyRepairSettings(const v1::SetRepairRequest& request);

  const CallGate gate_;  // Authorizes and admits every call.
  repair::RepairPlanner* const planner_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_REBUILDS_SERVICE_H_
