// The ecd.v1 Devices service: list the devices and set their state or replace one, adapting
// the store's administration and the repair planner to the wire.
#ifndef ECD_DAEMON_DEVICES_SERVICE_H_
#define ECD_DAEMON_DEVICES_SERVICE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "daemon/call_gate.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/repair/repair_planner.h"
#include "lib/store/store.h"
#include "lib/store/store_admin.h"

namespace ecd::daemon {

class DevicesService final : public v1::Devices::Service {
 public:
  // The store and the planner must outlive the service; every call passes `rules`.
  DevicesService(store::Store* store, repair::RepairPlanner* planner, const CallRules& rules)
      : gate_(v1::Devices::service_full_name(), rules), store_(store), planner_(planner) {}

  grpc::Status List(grpc::ServerContext* context, const v1::ListDevicesRequest* request,
                    v1::ListDevicesResponse* response) override;
  grpc::Status SetState(grpc::ServerContext* context, const v1::SetDeviceStateRequest* request,
                        v1::SetDeviceStateResponse* response) override;
  grpc::Status Replace(grpc::ServerContext* context, const v1::ReplaceDeviceRequest* request,
                       v1::ReplaceDeviceResponse* response) override;

 private:
  // SetState FAILING: queues the evacuation of device `id`; its job marks it failing.
  grpc::Status Evacuate(uint32_t id, v1::SetDeviceStateResponse* response);
  // The device's record, or NOT_FOUND naming `id`.
  absl::StatusOr<store::DeviceRecord> RecordOf(uint32_t id) const;

  const CallGate gate_;  // Authorizes and admits every call.
  store::Store* const store_;
  repair::RepairPlanner* const planner_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_DEVICES_SERVICE_H_
