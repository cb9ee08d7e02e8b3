// A gRPC server interceptor that counts every RPC into DaemonMetrics: method, status code,
// duration and the bytes of the messages received and sent.
#ifndef ECD_DAEMON_RPC_METRICS_H_
#define ECD_DAEMON_RPC_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include "daemon/metrics.h"

namespace ecd::daemon {

// Install with ServerBuilder::experimental().SetInterceptorCreators. REQUIRES: `metrics`
// outlives the server.
class RpcMetricsFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsFactory(DaemonMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  DaemonMetrics* const metrics_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_RPC_METRICS_H_
