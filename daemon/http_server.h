// HttpEndpoint: ecd's plain-HTTP side (cpp-httplib) for Prometheus and orchestrators:
//   GET /metrics  the text exposition (format 0.0.4)
//   GET /healthz  200 "ok" while the process serves HTTP at all (liveness)
//   GET /readyz   200 "ready" while gRPC accepts requests; 503 "not ready" before that and while
//                 stopping, and "not ready: REASON" while new connections cannot be served
#ifndef ECD_DAEMON_HTTP_SERVER_H_
#define ECD_DAEMON_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace ecd::daemon {

class HttpEndpoint {
 public:
  // Binds `listen` ("host:port"; port 0 picks one) and serves on a thread of its own.
  // `metrics` renders /metrics; it is called on the server's threads. InvalidArgument for a
  // malformed address, Unavailable when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(const std::string& listen,
                                                             std::function<std::string()> metrics);
  ~HttpEndpoint();  // stops serving and joins the thread

  int port() const { return port_; }
  // What /readyz answers (false until set).
  void SetReady(bool ready) { ready_.store(ready); }
  // While ready, /readyz asks `why_not` (called on the server's threads; it must be
  // thread-safe): a non-empty answer makes it "503 not ready: <answer>". Set before SetReady.
  void SetNotReadyCheck(std::function<std::string()> why_not) { why_not_ = std::move(why_not); }

 private:
  HttpEndpoint();
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> ready_{false};
  std::function<std::string()> why_not_;
  std::atomic<bool> listen_done_{false};  // listen_after_bind returned (stopped or failed)
  int port_ = 0;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_HTTP_SERVER_H_
