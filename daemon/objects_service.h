// The ecd.v1 Objects service: encode, read, update, stat, list, delete, recover and scrub,
// adapting lib/store and the scrubber to the wire.
#ifndef ECD_DAEMON_OBJECTS_SERVICE_H_
#define ECD_DAEMON_OBJECTS_SERVICE_H_

#include <grpcpp/support/byte_buffer.h>

#include "daemon/call_gate.h"
#include "daemon/limits.h"
#include "daemon/stream_idle.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/repair/scrubber.h"
#include "lib/store/store.h"

namespace ecd::daemon {

class ObjectsService final : public v1::Objects::Service {
 public:
  // The store and the scrubber must outlive the service; every call passes `rules`.
  //
  // Encode and Update receive their requests as raw grpc::ByteBuffers (the methods named in
  // kRawRequestMethods): the constructor gives those two methods handlers that call
  // EncodeFromBytes and UpdateFromBytes, which copy each message's data once, from gRPC's
  // slices into the store's buffer. Read and GetBlock likewise send raw ByteBuffers, each
  // ReadResponse built in one slice (ReadFromBytes, GetBlockFromBytes).
  // Encode, Update, Read and GetBlock calls whose client stops sending or taking data are
  // cancelled by `rules.idle`.
  ObjectsService(store::Store* store, repair::Scrubber* scrubber,
                 const repair::ScrubberOptions& scrub_options, const CallRules& rules);

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
  grpc::Status Count(grpc::ServerContext* context, const v1::CountRequest* request,
                     v1::CountResponse* response) override;
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

 private:
  const CallGate gate_;  // Authorizes and admits every call.
  store::Store* const store_;
  repair::Scrubber* const scrubber_;
  const repair::ScrubberOptions scrub_options_;
  const Limits limits_;
  StreamIdleTimer* const idle_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_OBJECTS_SERVICE_H_
