// The gRPC services of ecd.v1 (Objects, Devices), adapting lib/store to the wire. They hold no
// state of their own; every request is one call into the Store.
#ifndef ECD_DAEMON_SERVICES_H_
#define ECD_DAEMON_SERVICES_H_

#include "daemon/auth.h"
#include "daemon/limits.h"
#include "daemon/request_limiter.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/store/rebuild_scheduler.h"
#include "lib/store/scrubber.h"
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
  ObjectsService(store::Store* store, store::Scrubber* scrubber,
                 const store::ScrubberOptions& scrub_options);
  // The input limits and the in-flight limiter; the limiter (may be null: no call limits) must
  // outlive the service. Call before serving.
  void SetLimits(const Limits& limits, RequestLimiter* limiter) {
    limits_ = limits;
    limiter_ = limiter;
  }

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
  void set_authorizer(const Authorizer* auth) { auth_ = auth; }

 private:
  const Authorizer* auth_ = nullptr;
  store::Store* const store_;
  store::Scrubber* const scrubber_;
  const store::ScrubberOptions scrub_options_;
  Limits limits_;
  RequestLimiter* limiter_ = nullptr;
};

class DevicesService final : public v1::Devices::Service {
 public:
  // Both must outlive the service.
  DevicesService(store::Store* store, store::RebuildScheduler* rebuilds)
      : store_(store), rebuilds_(rebuilds) {}
  // The in-flight limiter (may be null: no call limits) must
  // outlive the service. Call before serving.
  void SetLimits(RequestLimiter* limiter) { limiter_ = limiter; }

  grpc::Status List(grpc::ServerContext* context, const v1::ListDevicesRequest* request,
                    v1::ListDevicesResponse* response) override;
  grpc::Status SetState(grpc::ServerContext* context, const v1::SetDeviceStateRequest* request,
                        v1::SetDeviceStateResponse* response) override;

  // Checks every call against `auth`'s tokens (null: no checks). Must outlive the service.
  void set_authorizer(const Authorizer* auth) { auth_ = auth; }

 private:
  const Authorizer* auth_ = nullptr;
  store::Store* const store_;
  store::RebuildScheduler* const rebuilds_;
  RequestLimiter* limiter_ = nullptr;
};

class RebuildsService final : public v1::Rebuilds::Service {
 public:
  explicit RebuildsService(store::RebuildScheduler* rebuilds) : rebuilds_(rebuilds) {}
  // The in-flight limiter (may be null: no call limits) must
  // outlive the service. Call before serving.
  void SetLimits(RequestLimiter* limiter) { limiter_ = limiter; }

  grpc::Status List(grpc::ServerContext* context, const v1::ListRebuildsRequest* request,
                    v1::ListRebuildsResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetRebuildRequest* request,
                   v1::RebuildJob* response) override;

  // Checks every call against `auth`'s tokens (null: no checks). Must outlive the service.
  void set_authorizer(const Authorizer* auth) { auth_ = auth; }

 private:
  const Authorizer* auth_ = nullptr;
  store::RebuildScheduler* const rebuilds_;
  RequestLimiter* limiter_ = nullptr;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_SERVICES_H_
