// The one place ecd reaches into gRPC's internals: methods whose messages travel as raw
// grpc::ByteBuffers instead of parsed protobuf, on the server (ecd, bench/grpc_null_sink) and on
// the client (ecctl). The generated code builds the same objects typed for its messages; these
// build them typed for grpc::ByteBuffer, so that data bytes stay in gRPC's slices (DataMessage).
//
// These use grpc::internal (RpcMethod, ClientWriterFactory, ClientReaderFactory,
// ClientStreamingHandler, SplitServerStreamingHandler, WriterInterface), which gRPC does not
// promise to keep. They are written against gRPC 1.51 (Debian 12's libgrpc++-dev); the build
// stops on any other version, so that a change of gRPC is checked here first
// (docs/dependencies.md).
#ifndef ECD_WIRE_RAW_METHODS_H_
#define ECD_WIRE_RAW_METHODS_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>
#include <grpcpp/version_info.h>

#include <functional>
#include <memory>
#include <utility>

static_assert(GRPC_CPP_VERSION_MAJOR == 1 && GRPC_CPP_VERSION_MINOR == 51,
              "wire/raw_methods.h uses grpc::internal as gRPC 1.51 has it: check each use "
              "against the new version, then update this check and docs/dependencies.md");

namespace ecd::wire {

// Server: what a raw server-streaming handler writes its responses to (each a serialized
// response message).
using RawResponseWriter = grpc::internal::WriterInterface<grpc::ByteBuffer>;
// Server: the handler type grpc::Service::MarkMethodStreamed takes.
using MethodHandler = grpc::internal::MethodHandler;

// Server: a handler for `service`'s client-streaming method that receives its requests as raw
// bytes and calls `method` (the generated code's handler, typed for grpc::ByteBuffer). Give it
// to grpc::Service::MarkMethodStreamed, which takes ownership. REQUIRES: `service` outlives the
// server.
template <typename Service, typename Response>
MethodHandler* RawRequestsHandler(
    grpc::Status (Service::*method)(grpc::ServerContext*, grpc::ServerReader<grpc::ByteBuffer>*,
                                    Response*),
    Service* service) {
  return new grpc::internal::ClientStreamingHandler<Service, grpc::ByteBuffer, Response>(
      std::mem_fn(method), service);
}

// Server: a handler for a server-streaming method whose one request is parsed as usual (type
// Request) and whose responses are written as raw bytes, as gRPC's split-streaming handler does.
// Ownership as RawRequestsHandler's.
template <typename Request>
MethodHandler* RawResponsesHandler(
    std::function<grpc::Status(grpc::ServerContext*,
                               grpc::ServerSplitStreamer<Request, grpc::ByteBuffer>*)>
        handler) {
  return new grpc::internal::SplitServerStreamingHandler<Request, grpc::ByteBuffer>(
      std::move(handler));
}

// Client: a client stream of `method` ("/ecd.v1.Objects/Encode") whose messages are written as
// raw bytes (each a serialized request); the response is parsed into `response` as usual.
// REQUIRES: `context` and `response` outlive the stream; `channel` is not null.
template <typename Response>
std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> OpenRawWriter(
    const std::shared_ptr<grpc::Channel>& channel, const char* method, grpc::ClientContext* context,
    Response* response) {
  const grpc::internal::RpcMethod rpc(method, grpc::internal::RpcMethod::CLIENT_STREAMING, channel);
  return std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>>(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(channel.get(), rpc, context,
                                                                    response));
}

// Client: a server stream of `method` ("/ecd.v1.Objects/Read") whose one request is sent as
// usual and whose responses are read as raw bytes (each a serialized response). REQUIRES:
// `context` outlives the stream; `channel` is not null.
template <typename Request>
std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> OpenRawReader(
    const std::shared_ptr<grpc::Channel>& channel, const char* method, grpc::ClientContext* context,
    const Request& request) {
  const grpc::internal::RpcMethod rpc(method, grpc::internal::RpcMethod::SERVER_STREAMING, channel);
  return std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>>(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel.get(), rpc, context,
                                                                    request));
}

}  // namespace ecd::wire

#endif  // ECD_WIRE_RAW_METHODS_H_
