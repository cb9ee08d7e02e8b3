// RPC metrics interceptor: one per call, recording when the status is sent.
#include "daemon/rpc_metrics.h"

#include <google/protobuf/message_lite.h>

#include <chrono>
#include <string>

namespace ecd::daemon {
namespace {

using grpc::experimental::InterceptionHookPoints;

class RpcMetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(grpc::experimental::ServerRpcInfo* info, DaemonMetrics* metrics)
      : method_(info->method()), metrics_(metrics), start_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* batch) override {
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      // ecd's services are all protobuf: the received message is a MessageLite.
      if (void* m = batch->GetRecvMessage()) {
        received_ += static_cast<google::protobuf::MessageLite*>(m)->ByteSizeLong();
      }
    }
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      if (const void* m = batch->GetSendMessage()) {
        sent_ += static_cast<const google::protobuf::MessageLite*>(m)->ByteSizeLong();
      } else if (grpc::ByteBuffer* b = batch->GetSerializedSendMessage()) {
        sent_ += b->Length();
      }
    }
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      metrics_->RecordRpc(method_, batch->GetSendStatus().error_code(),
                          std::chrono::steady_clock::now() - start_, received_, sent_);
    }
    batch->Proceed();
  }

 private:
  const std::string method_;
  DaemonMetrics* const metrics_;
  const std::chrono::steady_clock::time_point start_;
  uint64_t received_ = 0;
  uint64_t sent_ = 0;
};

}  // namespace

grpc::experimental::Interceptor* RpcMetricsFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetricsInterceptor(info, metrics_);
}

}  // namespace ecd::daemon
