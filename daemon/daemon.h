// Daemon: ecd's components, started in dependency order from DaemonOptions and stopped in the
// reverse order: the data dir lock, the store, the repair, the CXL monitor, the ecd.v1
// services, the gRPC server and the HTTP endpoint.
#ifndef ECD_DAEMON_DAEMON_H_
#define ECD_DAEMON_DAEMON_H_

#include <signal.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/auth.h"
#include "daemon/catalog_service.h"
#include "daemon/cxl_service.h"
#include "daemon/daemon_options.h"
#include "daemon/devices_service.h"
#include "daemon/grpc_serving.h"
#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "daemon/objects_service.h"
#include "daemon/rebuilds_service.h"
#include "daemon/request_limiter.h"
#include "daemon/stream_idle.h"
#include "lib/repair/cxl_monitor.h"
#include "lib/repair/event_policy.h"
#include "lib/repair/repair_planner.h"
#include "lib/repair/scrubber.h"
#include "lib/store/data_dir_lock.h"
#include "lib/store/store.h"

namespace ecd::daemon {

// NVMe namespaces opened with `nvme` (a DMA map of their own when it has none), wrapped by the
// fault injector and the power-cut journal when `testing` names them.
store::NamespaceFactory NamespaceFactoryFor(nvme::DeviceOptions nvme,
                                            const TestingOptions& testing);

// Thread safety: Start, Serve and the destructor from one thread; the components run threads
// of their own.
class Daemon {
 public:
  // Starts every component `options` asks for, serving gRPC before it returns. Blocks SIGINT,
  // SIGTERM and SIGHUP in the calling thread first (call it before any other thread starts).
  // On error, what was started is stopped again and the status says in one line why, and what
  // to do: InvalidArgument when the options are refused (TLS files, tokens: a usage error),
  // another code when a resource is not to be had (the data dir is another ecd's, a port is
  // taken, the store cannot open, ...).
  // REQUIRES: options.mode is kServe.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(DaemonOptions options);

  // Serves until SIGTERM or SIGINT, reloading --tokens-file on SIGHUP; then stops serving,
  // giving in-flight calls 10 s to finish.
  void Serve();

  // Stops the components in the reverse order of their start; background work finishes its
  // current batch.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

 private:
  explicit Daemon(DaemonOptions options);

  absl::Status CheckAccess();   // listener credentials and tokens
  absl::Status StartStore();    // the data dir lock and the store
  absl::Status StartRepair();   // the planner, the scrubber, the policy and the CXL monitor
  void StartServices();         // the ecd.v1 services
  absl::Status StartServing();  // the gRPC server
  absl::Status StartHttp();     // /metrics, /healthz, /readyz
  void WritePortFiles() const;
  void LogServing() const;
  // Builds and starts the gRPC server on the listeners gRPC owns (GrpcServing::Options::build):
  // at start, and again if one of them stops. Null (logged) when it cannot.
  std::unique_ptr<grpc::Server> BuildServer(int* tcp_port);
  void ReloadTokens();

  // Runs `undo`, when one was set, as the member is destroyed: a start step that registers
  // something with an earlier member sets one, placed where the registration must end.
  struct UndoOnDestroy {
    std::function<void()> undo;
    ~UndoOnDestroy() {
      if (undo) undo();
    }
  };

  // Components in the order they start; the destructor stops them in reverse.
  // SIGINT, SIGTERM and SIGHUP, blocked first: before any member starts a thread.
  const sigset_t signals_;
  const DaemonOptions options_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  DaemonMetrics metrics_;  // The store's hooks count into it until the store is gone.
  Authorizer authorizer_;
  std::unique_ptr<store::DataDirLock> data_dir_lock_;  // Held until the store has closed.
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<repair::RepairPlanner> planner_;
  // Takes the store's suspect listener (which calls planner_) back before planner_ goes.
  UndoOnDestroy forget_suspect_listener_;
  std::unique_ptr<repair::Scrubber> scrubber_;
  std::unique_ptr<repair::EventPolicy> policy_;
  std::unique_ptr<repair::CxlMonitor> cxl_monitor_;
  RequestLimiter limiter_;
  StreamIdleTimer stream_idle_;  // Outlives every server.
  std::unique_ptr<ObjectsService> objects_;
  std::unique_ptr<DevicesService> devices_;
  std::unique_ptr<RebuildsService> rebuilds_;
  std::unique_ptr<CatalogService> catalog_;
  std::unique_ptr<CxlService> cxl_;
  bool own_tcp_ = false;     // ecd accepts plaintext TCP itself (TcpAcceptor), not gRPC.
  std::string grpc_listen_;  // Where gRPC listens on TCP; a rebuilt server takes the same port.
  uint32_t max_connections_ = 0;  // Of the plaintext listener ecd accepts itself.
  std::unique_ptr<GrpcServing> serving_;
  // Forgets the peer resolver, which reads serving_'s acceptor, before serving_ goes.
  UndoOnDestroy forget_peer_resolver_;
  std::unique_ptr<HttpEndpoint> http_;  // Reads serving_ and stream_idle_: stops first.
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_DAEMON_H_
