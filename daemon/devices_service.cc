// The Devices service's handlers.
#include "daemon/devices_service.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/convert.h"

namespace ecd::daemon {

grpc::Status DevicesService::List(grpc::ServerContext* context,
                                  const v1::ListDevicesRequest* request,
                                  v1::ListDevicesResponse* response) {
  return gate_.Run(context, "List", [&]() -> grpc::Status {
    absl::StatusOr<std::vector<store::DeviceStatus>> devices = store_->admin().ListDevices();
    if (!devices.ok()) return ToGrpc(devices.status());
    for (const store::DeviceStatus& d : *devices) ToProto(d, response->add_devices());
    for (const store::FileSystemUsage& fs : store_->Stats().file_systems) {
      ToProto(fs, response->add_file_systems());
    }
    return grpc::Status::OK;
  });
}

grpc::Status DevicesService::SetState(grpc::ServerContext* context,
                                      const v1::SetDeviceStateRequest* request,
                                      v1::SetDeviceStateResponse* response) {
  return gate_.Run(context, "SetState", [&]() -> grpc::Status {
    const std::optional<store::DeviceState> state = FromProto(request->state());
    if (!state || *state == store::DeviceState::kDown) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "device state must be ONLINE, FAILING (evacuate) or FAILED; ecd marks "
                          "devices DOWN itself");
    }
    if (*state == store::DeviceState::kFailing) return Evacuate(request->id(), response);
    absl::StatusOr<store::DeviceStatus> device =
        store_->admin().SetDeviceState(request->id(), *state);
    if (!device.ok()) return ToGrpc(device.status());
    ToProto(*device, response->mutable_device());
    return grpc::Status::OK;
  });
}

grpc::Status DevicesService::Evacuate(uint32_t id, v1::SetDeviceStateResponse* response) {
  absl::StatusOr<std::vector<store::DeviceStatus>> all = store_->admin().ListDevices();
  if (!all.ok()) return ToGrpc(all.status());
  if (id >= all->size()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("device ", id, " not found (ecctl device ls)"));
  }
  // A failing device may be evacuated again (after a job failed for lack of space); a failed
  // or down one has nothing left that could be read off it.
  switch ((*all)[id].record.state) {
    case store::DeviceState::kFailed:
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          absl::StrCat("device ", id,
                       " is failed: nothing can be moved off it; the repair rebuilds its blocks "
                       "elsewhere (ecctl repair status). Run `ecctl device replace ",
                       id, "` once its disk is replaced"));
    case store::DeviceState::kDown:
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          absl::StrCat("device ", id,
                       " is down: nothing can be read off it. Its blocks are rebuilt once it has "
                       "been down for the repair delay; `ecctl device fail ",
                       id, "` rebuilds them now, `ecctl device online ", id,
                       "` brings it back if its disk is there again"));
    default:
      break;
  }
  repair::RebuildSpec spec;
  spec.kind = repair::RebuildKind::kEvacuateDevice;
  spec.device = id;
  spec.reason = "operator asked to evacuate the device";
  planner_->Submit(spec);
  ToProto((*all)[id], response->mutable_device());
  response->mutable_device()->set_state(v1::DEVICE_STATE_FAILING);
  return grpc::Status::OK;
}

absl::StatusOr<store::DeviceRecord> DevicesService::RecordOf(uint32_t id) const {
  for (const store::DeviceRecord& r : store_->admin().DeviceRecords()) {
    if (r.id == id) return r;
  }
  return absl::NotFoundError(absl::StrCat("device ", id, " not found (ecctl device ls)"));
}

grpc::Status DevicesService::Replace(grpc::ServerContext* context,
                                     const v1::ReplaceDeviceRequest* request,
                                     v1::ReplaceDeviceResponse* response) {
  return gate_.Run(context, "Replace", [&]() -> grpc::Status {
    const uint32_t id = request->id();
    absl::StatusOr<store::DeviceRecord> record = RecordOf(id);
    if (!record.ok()) return ToGrpc(record.status());
    if (record->state == store::DeviceState::kOnline ||
        record->state == store::DeviceState::kFailing) {
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          absl::StrCat("device ", id, " is ", store::DeviceStateName(record->state),
                       ": only a failed or down device is replaced. Fail it first (`ecctl device "
                       "fail ",
                       id, "`), or evacuate it (`ecctl device evacuate ", id,
                       " --wait`) to move its blocks off while it still reads"));
    }
    absl::StatusOr<store::DeviceStatus> device = store_->admin().ReplaceDevice(id);
    if (!device.ok()) return ToGrpc(device.status());
    ToProto(*device, response->mutable_device());
    return grpc::Status::OK;
  });
}

}  // namespace ecd::daemon
