// The gRPC services of ecd.v1 (Objects, Devices, Rebuilds), adapting lib/store and lib/repair to
// the wire. Each handler passes its CallGate (authorize, admit), then makes a call or two into
// the Store or the RepairPlanner; the services keep only their collaborators and limits.
#ifndef ECD_DAEMON_SERVICES_H_
#define ECD_DAEMON_SERVICES_H_

#include "daemon/auth.h"
#include "daemon/call_gate.h"
#include "daemon/limits.h"
#include "daemon/request_limiter.h"
#include "daemon/stream_idle.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/repair/repair_planner.h"
#include "lib/repair/scrubber.h"
#include "lib/store/store.h"

namespace ecd::daemon {

class ObjectsService final : public v1::Objects::Service {
 public:
  // Both must outlive the service.
  //
  // Encode and Update receive their requests as raw grpc::ByteBuffers (the methods named in
  // kRawRequestMethods): the constructor gives those two methods handlers that call
  // EncodeFromBytes and UpdateFromBytes, which copy each message's data once, from gRPC's
  // slices into the store's buffer. Read and GetBlock likewise send raw ByteBuffers, each
  // ReadResponse built in one slice (ReadFromBytes, GetBlockFromBytes).
  ObjectsService(store::Store* store, repair::Scrubber* scrubber,
                 const repair::ScrubberOptions& scrub_options);
  // The input limits and the in-flight limiter; the limiter (may be null: no call limits) must
  // outlive the service. Call before serving.
  void SetLimits(const Limits& limits, RequestLimiter* limiter) {
    limits_ = limits;
    gate_.set_limiter(limiter);
  }
  // Cancels Encode, Update, Read and GetBlock calls whose client stops sending or taking data
  // (may be null: never). Must outlive the service. Call before serving.
  void SetStreamIdleTimer(StreamIdleTimer* idle) { idle_ = idle; }

  // The Encode and Update methods (see the constructor); the stream's messages are
  // EncodeRequests and UpdateRequests in protobuf's wire format.
  grpc::Status EncodeFromBytes(grpc::ServerContext* context,
                               grpc::ServerReader<grpc::ByteBuffer>* reader,
                               v1::EncodeResponse* response);
  grpc::Status UpdateFromBytes(grpc::ServerContext* context,
                               grpc::ServerReader<grpc::ByteBuffer>* reader,
                               v1::UpdateResponse* response);
  // The Read and GetBlock methods (see the constructor); the stream's messages are
  // ReadResponses in protobuf's wire format.
  grpc::Status ReadFromBytes(grpc::ServerContext* context,
                             grpc::ServerSplitStreamer<v1::ReadRequest, grpc::ByteBuffer>* stream);
  grpc::Status GetBlockFromBytes(
      grpc::ServerContext* context,
      grpc::ServerSplitStreamer<v1::GetBlockRequest, grpc::ByteBuffer>* stream);
  grpc::Status Stat(grpc::ServerContext* context, const v1::StatRequest* request,
                    v1::StatResponse* response) override;
  grpc::Status List(grpc::ServerContext* context, const v1::ListRequest* request,
                    v1::ListResponse* response) override;
  grpc::Status Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                      v1::DeleteResponse* response) override;
  grpc::Status Recover(grpc::ServerContext* context, const v1::RecoverRequest* request,
                       grpc::ServerWriter<v1::RecoverProgress>* writer) override;
  grpc::Status Scrub(grpc::ServerContext* context, const v1::ScrubRequest* request,
                     grpc::ServerWriter<v1::ScrubProgress>* writer) override;
  grpc::Status GetScrubStatus(grpc::ServerContext* context, const v1::ScrubStatusRequest* request,
                              v1::ScrubStatusResponse* response) override;

  // Checks every call against `auth`'s tokens (null: no checks). Must outlive the service.
  void set_authorizer(const Authorizer* auth) { gate_.set_authorizer(auth); }

 private:
  CallGate gate_{v1::Objects::service_full_name()};  // Authorize and admit every call.
  store::Store* const store_;
  repair::Scrubber* const scrubber_;
  const repair::ScrubberOptions scrub_options_;
  Limits limits_;
  StreamIdleTimer* idle_ = nullptr;
};

class DevicesService final : public v1::Devices::Service {
 public:
  // Both must outlive the service.
  DevicesService(store::Store* store, repair::RepairPlanner* planner)
      : store_(store), planner_(planner) {}
  // The in-flight limiter (may be null: no call limits) must
  // outlive the service. Call before serving.
  void SetLimits(RequestLimiter* limiter) { gate_.set_limiter(limiter); }

  grpc::Status List(grpc::ServerContext* context, const v1::ListDevicesRequest* request,
                    v1::ListDevicesResponse* response) override;
  grpc::Status SetState(grpc::ServerContext* context, const v1::SetDeviceStateRequest* request,
                        v1::SetDeviceStateResponse* response) override;
  grpc::Status Replace(grpc::ServerContext* context, const v1::ReplaceDeviceRequest* request,
                       v1::ReplaceDeviceResponse* response) override;

  // Checks every call against `auth`'s tokens (null: no checks). Must outlive the service.
  void set_authorizer(const Authorizer* auth) { gate_.set_authorizer(auth); }

 private:
  // SetState FAILING: queues the evacuation of device `id`; its job marks it failing.
  grpc::Status Evacuate(uint32_t id, v1::SetDeviceStateResponse* response);
  // The device's record, or NOT_FOUND naming `id`.
  absl::StatusOr<store::DeviceRecord> RecordOf(uint32_t id) const;

  CallGate gate_{v1::Devices::service_full_name()};  // Authorize and admit every call.
  store::Store* const store_;
  repair::RepairPlanner* const planner_;
};

class RebuildsService final : public v1::Rebuilds::Service {
 public:
  // The planner must outlive the service.
  explicit RebuildsService(repair::RepairPlanner* planner) : planner_(planner) {}
  // The in-flight limiter (may be null: no call limits) must
  // outlive the service. Call before serving.
  void SetLimits(RequestLimiter* limiter) { gate_.set_limiter(limiter); }

  grpc::Status List(grpc::ServerContext* context, const v1::ListRebuildsRequest* request,
                    v1::ListRebuildsResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetRebuildRequest* request,
                   v1::RebuildJob* response) override;
  grpc::Status GetRepairStatus(grpc::ServerContext* context, const v1::RepairStatusRequest* request,
                               v1::RepairStatus* response) override;
  grpc::Status SetRepair(grpc::ServerContext* context, const v1::SetRepairRequest* request,
                         v1::RepairStatus* response) override;

  // Checks every call against `auth`'s tokens (null: no checks). Must outlive the service.
  void set_authorizer(const Authorizer* auth) { gate_.set_authorizer(auth); }

 private:
  // Applies the settings `request` carries, the rate first; the first error, saying what was
  // changed before it.
  grpc::Status ApplyRepairSettings(const v1::SetRepairRequest& request);

  CallGate gate_{v1::Rebuilds::service_full_name()};  // Authorize and admit every call.
  repair::RepairPlanner* const planner_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_SERVICES_H_
