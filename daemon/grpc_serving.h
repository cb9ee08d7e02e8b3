// GrpcServing: ecd's gRPC server, kept accepting connections whatever happens to the process's
// file descriptors. Plaintext TCP is accepted by ecd itself (TcpAcceptor), which never stops.
// The listeners gRPC runs (TLS, the Unix socket) stop for good at an accept error in gRPC 1.51
// ("Failed accept4: Too many open files"): gRPC's log line is the signal (InstallGrpcLog), and
// a watchdog thread then rebuilds the server (calls in flight are cancelled) on the same
// addresses, trying again every second until it listens again.
//
// Thread safety: all methods may be called concurrently.
#ifndef ECD_DAEMON_GRPC_SERVING_H_
#define ECD_DAEMON_GRPC_SERVING_H_

#include <grpcpp/server.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/tcp_acceptor.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

class GrpcServing {
 public:
  struct Options {
    // Builds and starts the server with every service and every listening port gRPC runs, and
    // sets *tcp_port to the TCP port gRPC bound (0 if none); null when that fails. Called by
    // Start and for every rebuild, on any thread.
    std::function<std::unique_ptr<grpc::Server>(int* tcp_port)> build;
    // ecd's own listener of plaintext TCP (null: gRPC listens itself), and the most connections
    // it keeps open (0: no limit).
    std::unique_ptr<TcpAcceptor> acceptor;
    uint32_t max_connections = 0;
    // How long calls in flight get when the server is rebuilt, and the pause between attempts
    // to build it.
    absl::Duration rebuild_grace = absl::Seconds(1);
    absl::Duration rebuild_retry = absl::Seconds(1);
  };

  // Builds the server and starts accepting. Unavailable when the first build fails.
  static absl::StatusOr<std::unique_ptr<GrpcServing>> Start(Options options);
  ~GrpcServing();  // Shutdown(now) if not done.
  GrpcServing(const GrpcServing&) = delete;
  GrpcServing& operator=(const GrpcServing&) = delete;

  // The TCP port served: the acceptor's, else the one gRPC bound at the first build.
  int tcp_port() const { return tcp_port_; }
  // Sets the gRPC health service's status, now and on every rebuilt server.
  void SetServing(bool serving);
  // "" while new gRPC connections are accepted and served; else why not (for /readyz).
  std::string NotReadyReason() const;
  // Times the server was rebuilt because a listener gRPC runs had stopped.
  uint64_t rebuilds() const;
  // The acceptor, or null.
  const TcpAcceptor* acceptor() const { return acceptor_.get(); }

  // Reports that a listener gRPC runs has stopped accepting (`why`: gRPC's message); the
  // watchdog rebuilds the server. The log hook of InstallGrpcLog calls it for the GrpcServing
  // that is running.
  void ListenerDied(const std::string& why);

  // Stops accepting, and shuts the server down: calls in flight get until `deadline`, then are
  // cancelled. Returns once the server is down. Later calls do nothing.
  void Shutdown(std::chrono::system_clock::time_point deadline);
  // Blocks until Shutdown has returned.
  void Wait();

 private:
  explicit GrpcServing(Options options);
  void Take(int fd);  // The acceptor's hand-off.
  void Watch();       // The watchdog thread.
  // Opens (again) the descriptors kept for a rebuild, or closes them. Watchdog thread, or before
  // it starts and after it ends.
  void HoldReserve();
  void ReleaseReserve();

  const std::function<std::unique_ptr<grpc::Server>(int*)> build_;
  const std::unique_ptr<TcpAcceptor> acceptor_;
  const uint32_t max_connections_;
  const absl::Duration rebuild_grace_;
  const absl::Duration rebuild_retry_;
  int tcp_port_ = 0;

  mutable Mutex mu_;
  CondVar changed_;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);  // Null while being rebuilt
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool listener_died_ ABSL_GUARDED_BY(mu_) = false;
  std::string died_because_ ABSL_GUARDED_BY(mu_);
  std::string rebuilding_ ABSL_GUARDED_BY(mu_);  // Why, while rebuilding
  uint64_t rebuilds_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
  int reserve_[2] = {-1, -1};  // Descriptors given back when a rebuild starts.
};

// Sends gRPC's log lines to ecd's log (with gRPC's file and line), and tells the running
// GrpcServing when one says that a listener gRPC runs stopped accepting. Process-wide; call
// once, before the first server is built.
void InstallGrpcLog();

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_GRPC_SERVING_H_
