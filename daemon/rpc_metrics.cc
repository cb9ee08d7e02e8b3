// RPC metrics interceptor: one per call, recording when the status is sent.
#include "daemon/rpc_metrics.h"

#include <google/protobuf/message_lite.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>

#include <atomic>
#include <chrono>

namespace ecd::daemon {
namespace {

using grpc::experimental::InterceptionHookPoints;
using Body = DaemonMetrics::RpcSeries::Body;

class RpcMetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(grpc::experimental::ServerRpcInfo* info, DaemonMetrics* metrics)
      : info_(info),
        series_(metrics->RpcSeriesFor(info->method())),
        start_(std::chrono::steady_clock::now()) {}

  ~RpcMetricsInterceptor() override {
    // Every call reaches PRE_SEND_STATUS; should one not, it still counts, as cancelled.
    if (!recorded_) Record(grpc::StatusCode::CANCELLED);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* batch) override {
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      // The message's type depends on the service: protobuf for ecd.v1 and reflection, a
      // ByteBuffer for gRPC's health service; an unknown method's is never touched.
      if (void* m = batch->GetRecvMessage()) {
        if (series_->body() == Body::kProtobuf) {
          received_ += static_cast<google::protobuf::MessageLite*>(m)->ByteSizeLong();
        } else if (series_->body() == Body::kByteBuffer) {
          received_ += static_cast<grpc::ByteBuffer*>(m)->Length();
        }
      }
    }
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      // Serializes the message once (gRPC sends these bytes), whatever its type.
      if (grpc::ByteBuffer* b = batch->GetSerializedSendMessage()) sent_ += b->Length();
    }
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      int code = batch->GetSendStatus().error_code();
      // A call the client cancelled, or whose deadline passed, ended with that for the client,
      // whatever the handler returned; one ecd cancelled for --stream-idle-timeout, with
      // DEADLINE_EXCEEDED, which its handler returns too.
      if (info_->server_context()->IsCancelled() && code != grpc::StatusCode::DEADLINE_EXCEEDED) {
        code = info_->server_context()->deadline() <= std::chrono::system_clock::now()
                   ? grpc::StatusCode::DEADLINE_EXCEEDED
                   : grpc::StatusCode::CANCELLED;
      }
      Record(code);
    }
    batch->Proceed();
  }

 private:
  void Record(int code) {
    recorded_ = true;
    series_->Record(code, std::chrono::steady_clock::now() - start_,
                    received_.load(std::memory_order_relaxed),
                    sent_.load(std::memory_order_relaxed));
  }

  grpc::experimental::ServerRpcInfo* const info_;
  const DaemonMetrics::RpcSeries* const series_;
  const std::chrono::steady_clock::time_point start_;
  // Atomic: a callback streaming service may receive while it sends its status.
  std::atomic<uint64_t> received_{0};
  std::atomic<uint64_t> sent_{0};
  bool recorded_ = false;
};

}  // namespace

grpc::experimental::Interceptor* RpcMetricsFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetricsInterceptor(info, metrics_);
}

}  // namespace ecd::daemon
