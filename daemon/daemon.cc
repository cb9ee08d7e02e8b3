// Daemon: starts ecd's components one group at a time, serves until a signal, and stops them
// in reverse as its members go.
#include "daemon/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/host_resources.h"
#include "daemon/request_parse.h"
#include "daemon/rpc_metrics.h"
#include "daemon/tcp_acceptor.h"
#include "daemon/tls.h"
#include "lib/fault/power_cut.h"
#include "lib/nvme/dma_map.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"

namespace ecd::daemon {

store::NamespaceFactory NamespaceFactoryFor(nvme::DeviceOptions nvme,
                                            const TestingOptions& testing) {
  if (!nvme.dma_map) nvme.dma_map = std::make_shared<nvme::DmaMap>();
  store::NamespaceFactory factory = store::NvmeNamespaceFactory(nvme);
  if (!testing.faults.empty()) {
    factory = store::FaultInjectingFactory(std::move(factory), testing.faults, testing.fault_seed);
  }
  if (!testing.power_cut_journal.empty()) {
    factory = store::PowerCutJournalFactory(std::move(factory), testing.power_cut_journal);
  }
  return factory;
}

namespace {

// Blocks the signals Serve takes with sigwait in the calling thread, and so in every thread it
// starts after; returns them.
sigset_t BlockServingSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // Reloads --tokens-file.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// A failure to start that is not a refusal of the options: never InvalidArgument.
absl::Status NotUsage(const absl::Status& s) {
  return absl::IsInvalidArgument(s) ? absl::FailedPreconditionError(s.message()) : s;
}

}  // namespace

Daemon::Daemon(DaemonOptions options)
    : signals_(BlockServingSignals()),
      options_(std::move(options)),
      metrics_(ECD_VERSION),
      limiter_(options_.limits.max_streams_per_client, options_.limits.max_streams),
      stream_idle_(options_.serving.stream_idle_timeout),
      grpc_listen_(options_.serving.listen) {}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(options)));
  // Listener and token rules first: a refusal must not wait for the store.
  if (absl::Status s = daemon->CheckAccess(); !s.ok()) return s;
  if (absl::Status s = daemon->StartStore(); !s.ok()) return NotUsage(s);
  if (absl::Status s = daemon->StartRepair(); !s.ok()) return NotUsage(s);
  daemon->StartServices();
  if (absl::Status s = daemon->StartServing(); !s.ok()) return NotUsage(s);
  if (absl::Status s = daemon->StartHttp(); !s.ok()) return NotUsage(s);
  daemon->serving_->SetServing(true);
  if (daemon->http_) daemon->http_->SetReady(true);
  daemon->WritePortFiles();
  daemon->LogServing();
  return daemon;
}

absl::Status Daemon::CheckAccess() {
  const ServingOptions& serving = options_.serving;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ListenerCredentials(serving.listen, serving.tls);
  if (!credentials.ok()) return absl::InvalidArgumentError(credentials.status().message());
  credentials_ = *std::move(credentials);
  if (serving.tls.insecure && serving.tls.cert_file.empty() && !IsLoopbackAddress(serving.listen)) {
    Log(LogLevel::kWarning,
        "--insecure: serving plaintext gRPC on %s; anyone on the network can read and change "
        "the traffic",
        serving.listen);
  }
  authorizer_.SetDeniedHook(metrics_.AuthDeniedHook());
  if (serving.tokens_file.empty()) {
    if (!IsLoopbackAddress(serving.listen)) {
      Log(LogLevel::kWarning, "no --tokens-file: every client that reaches %s may call every RPC",
          serving.listen);
    }
    return absl::OkStatus();
  }
  std::string warning;
  if (absl::Status s = authorizer_.Load(serving.tokens_file, &warning); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tokens-file: ", s.message()));
  }
  if (!warning.empty()) Log(LogLevel::kWarning, "%s", warning);
  return absl::OkStatus();
}

absl::Status Daemon::StartStore() {
  const TestingOptions& testing = options_.testing;
  if (!testing.faults.empty()) {
    Log(LogLevel::kWarning,
        "--fault-inject: injecting faults into the I/O of %d device(s) (%s, seed %d); for "
        "testing only, never on data you need",
        testing.faults.size(), testing.fault_text, testing.fault_seed);
  }
  if (!testing.power_cut_journal.empty()) {
    Log(LogLevel::kWarning,
        "--fault-power-cut-journal: journaling every device write in %s until the next flush, "
        "for power-cut tests; slower, and for testing only",
        testing.power_cut_journal);
  }
  // One ecd per data dir: the lock is taken before anything in the data dir is opened (the
  // store, the unix socket) and held until the store has closed.
  absl::StatusOr<std::unique_ptr<store::DataDirLock>> lock =
      store::DataDirLock::Acquire(options_.store.data_dir);
  if (!lock.ok()) return lock.status();
  data_dir_lock_ = *std::move(lock);
  if (!options_.serving.unix_socket.empty()) {
    if (absl::Status s = ClearUnixSocketPath(options_.serving.unix_socket); !s.ok()) return s;
  }
  store::StoreOptions store_options = options_.store;
  store_options.on_ec_task_done = metrics_.EcTaskHook();
  store_options.on_catalog_commit = metrics_.CatalogCommitHook();
  // One DMA map for the store's stripe buffers and every device, including devices that a
  // fault-injecting factory wraps.
  store_options.nvme.dma_map = std::make_shared<nvme::DmaMap>();
  store_options.namespace_factory = NamespaceFactoryFor(store_options.nvme, options_.testing);
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(store_options);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat("cannot open the store in ", options_.store.data_dir, ": ",
                                     store.status().ToString()));
  }
  store_ = *std::move(store);
  metrics_.AttachStore(store_.get());
  return absl::OkStatus();
}

absl::Status Daemon::StartRepair() {
  // Plans from the catalog at once: after a restart the repair resumes where it was.
  planner_ = std::make_unique<repair::RepairPlanner>(store_.get(), options_.repair);
  // A device whose flush failed is suspect: move everything off it.
  store_->admin().SetSuspectListener([this](uint32_t device, const std::string& reason) {
    repair::RebuildSpec spec;
    spec.kind = repair::RebuildKind::kEvacuateDevice;
    spec.device = device;
    spec.reason = reason;
    planner_->Submit(spec);
  });
  forget_suspect_listener_.undo = [store = store_.get()] {
    store->admin().SetSuspectListener(nullptr);
  };
  scrubber_ = std::make_unique<repair::Scrubber>(store_.get(), options_.scrub);
  metrics_.AttachRepair(planner_.get(), scrubber_.get());
  policy_ = std::make_unique<repair::EventPolicy>(store_.get(), planner_.get(), options_.policy);
  absl::StatusOr<std::vector<store::DeviceStatus>> devices = store_->admin().ListDevices();
  if (!devices.ok()) {
    return absl::Status(devices.status().code(),
                        absl::StrCat("cannot list devices: ", devices.status().ToString()));
  }
  absl::StatusOr<std::unique_ptr<repair::CxlMonitor>> monitor = repair::CxlMonitor::Create(
      policy_.get(), static_cast<uint32_t>(devices->size()), options_.cxl);
  if (!monitor.ok()) {
    return absl::Status(monitor.status().code(), absl::StrCat("cannot start the CXL monitor: ",
                                                              monitor.status().ToString()));
  }
  cxl_monitor_ = *std::move(monitor);
  metrics_.AttachCxl(cxl_monitor_.get(), policy_.get());
  return absl::OkStatus();
}

void Daemon::StartServices() {
  const CallRules rules{.authorizer = &authorizer_,
                        .limiter = &limiter_,
                        .limits = options_.limits,
                        .idle = &stream_idle_};
  metrics_.AttachLimiter(&limiter_);
  objects_ = std::make_unique<ObjectsService>(store_.get(), scrubber_.get(), options_.scrub, rules);
  devices_ = std::make_unique<DevicesService>(store_.get(), planner_.get(), rules);
  rebuilds_ = std::make_unique<RebuildsService>(planner_.get(), rules);
  catalog_ = std::make_unique<CatalogService>(store_.get(), options_.store.data_dir, rules);
  cxl_ = std::make_unique<CxlService>(cxl_monitor_.get(), policy_.get(), rules);
}

absl::Status Daemon::StartServing() {
  grpc::EnableDefaultHealthCheckService(true);
  // Server reflection: grpcurl and other generic clients discover the services without the proto.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // Plaintext TCP is accepted by ecd itself, whose accept loop never gives up (TcpAcceptor);
  // TLS, and an address it does not bind itself (a host name), by gRPC.
  GrpcServing::Options serving;
  if (options_.serving.tls.cert_file.empty()) {
    absl::StatusOr<std::unique_ptr<TcpAcceptor>> bound =
        TcpAcceptor::Listen(options_.serving.listen);
    if (bound.ok()) {
      serving.acceptor = *std::move(bound);
    } else if (!absl::IsInvalidArgument(bound.status())) {
      return bound.status();
    }
  }
  own_tcp_ = serving.acceptor != nullptr;
  if (own_tcp_) {
    const TcpAcceptor* tcp = serving.acceptor.get();
    SetFdPeerResolver([tcp](int fd) { return tcp->PeerOf(fd); });
    forget_peer_resolver_.undo = [] { SetFdPeerResolver(nullptr); };
  }
  serving.build = [this](int* tcp_port) { return BuildServer(tcp_port); };
  // Every gRPC connection holds a descriptor. Raised here, once every refusal to start has been
  // given (each is one line), and before the limit is used.
  RaiseDescriptorLimit();
  max_connections_ = options_.serving.max_connections != 0 ? options_.serving.max_connections
                                                           : AutoMaxConnections();
  serving.max_connections = max_connections_;
  absl::StatusOr<std::unique_ptr<GrpcServing>> started = GrpcServing::Start(std::move(serving));
  if (!started.ok()) {
    return absl::UnavailableError("the gRPC server did not start (see the line above)");
  }
  serving_ = *std::move(started);
  metrics_.AttachServing(serving_.get(), &stream_idle_);
  return absl::OkStatus();
}

std::unique_ptr<grpc::Server> Daemon::BuildServer(int* tcp_port) {
  const std::string& unix_socket = options_.serving.unix_socket;
  grpc::ServerBuilder builder;
  if (!own_tcp_) builder.AddListeningPort(grpc_listen_, credentials_, tcp_port);
  if (!unix_socket.empty()) {
    // Cleared of a stale socket after the data dir was locked; a rebuilt server replaces the
    // socket its predecessor made, and nothing else.
    struct stat st;
    if (::lstat(unix_socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      std::remove(unix_socket.c_str());
    }
    builder.AddListeningPort(absl::StrCat("unix:", unix_socket), grpc::InsecureServerCredentials());
  }
  // Encode and Update messages are checked against the limit by ecd (a message naming the
  // flag); gRPC refuses larger ones itself, at twice the limit.
  const uint64_t max_message = options_.limits.max_message_size;
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<uint64_t>(2 * max_message, INT32_MAX)));
  builder.SetMaxSendMessageSize(static_cast<int>(max_message));
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  // First: the metrics then count the status it may change.
  interceptors.push_back(std::make_unique<RequestParseFailureFactory>());
  interceptors.push_back(std::make_unique<RpcMetricsFactory>(&metrics_));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  // Each call's receive window is a fixed 8 MiB (no BDP growth): enough to keep a loopback or
  // LAN stream busy, and it bounds the bytes gRPC buffers per stream (docs/limits.md).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
  // A connection with no call for this long is closed (GOAWAY), with its descriptor.
  if (options_.serving.max_connection_idle > absl::ZeroDuration()) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_IDLE_MS,
        static_cast<int>(absl::ToInt64Milliseconds(options_.serving.max_connection_idle)));
  }
  for (grpc::Service* service : std::initializer_list<grpc::Service*>{
           objects_.get(), devices_.get(), catalog_.get(), rebuilds_.get(), cxl_.get()}) {
    builder.RegisterService(service);
  }
  // The socket is created 0660 (umask 0117 while binding), so it is never open to others.
  const mode_t umask_before = ::umask(0117);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ::umask(umask_before);
  if (server == nullptr || (!own_tcp_ && *tcp_port == 0)) {
    // Not another ecd on this data dir (the lock stops that first), and not the TLS files
    // (checked at start): the address.
    Log(LogLevel::kError,
        "cannot listen on %s%s%s: is the port taken by another program, or the address not "
        "this host's? Give another --listen",
        grpc_listen_, unix_socket.empty() ? "" : " or unix:", unix_socket);
    return nullptr;
  }
  // Only the owner and its group may connect (the socket's directory should be 0750 too).
  if (!unix_socket.empty() && ::chmod(unix_socket.c_str(), 0660) != 0) {
    Log(LogLevel::kError, "cannot chmod 0660 the unix socket %s: %s", unix_socket,
        std::strerror(errno));
    server->Shutdown(std::chrono::system_clock::now());
    return nullptr;
  }
  if (!own_tcp_ && absl::EndsWith(grpc_listen_, ":0")) {
    grpc_listen_ = absl::StrCat(grpc_listen_.substr(0, grpc_listen_.size() - 1), *tcp_port);
  }
  return server;
}

absl::Status Daemon::StartHttp() {
  const std::string& listen = options_.serving.metrics_listen;
  if (listen.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<HttpEndpoint>> started =
      HttpEndpoint::Start(listen, [this] { return metrics_.Expose(); });
  if (!started.ok()) return started.status();
  http_ = *std::move(started);
  http_->SetNotReadyCheck([this] { return serving_->NotReadyReason(); });
  Log(LogLevel::kInfo, "metrics on http://%s/metrics (port %d)", listen, http_->port());
  return absl::OkStatus();
}

void Daemon::WritePortFiles() const {
  if (http_ && !options_.serving.metrics_port_file.empty()) {
    std::ofstream(options_.serving.metrics_port_file) << http_->port() << "\n";
  }
  if (!options_.serving.port_file.empty()) {
    std::ofstream(options_.serving.port_file) << serving_->tcp_port() << "\n";
  }
}

void Daemon::LogServing() const {
  const ServingOptions& s = options_.serving;
  Log(LogLevel::kInfo, "ecd serving on %s (port %d, %s)%s%s, data dir %s, %s", s.listen,
      serving_->tcp_port(),
      s.tls.cert_file.empty()        ? "plaintext"
      : s.tls.client_ca_file.empty() ? "TLS"
                                     : "mutual TLS",
      s.unix_socket.empty() ? "" : " and unix:", s.unix_socket, options_.store.data_dir,
      authorizer_.enabled() ? "tokens required" : "no authorization (no --tokens-file)");
  if (own_tcp_) {
    Log(LogLevel::kInfo,
        "TCP connections: at most %d (--max-connections), idle ones closed after %s "
        "(--max-connection-idle); streams idle for %s are cancelled (--stream-idle-timeout)",
        max_connections_, absl::FormatDuration(s.max_connection_idle),
        absl::FormatDuration(s.stream_idle_timeout));
  }
}

void Daemon::ReloadTokens() {
  const std::string& file = options_.serving.tokens_file;
  if (file.empty()) {
    Log(LogLevel::kInfo, "SIGHUP received: no --tokens-file to reload");
    return;
  }
  std::string warning;
  if (absl::Status s = authorizer_.Load(file, &warning); !s.ok()) {
    Log(LogLevel::kError, "SIGHUP: %s; the previous tokens stay in force", s.message());
    return;
  }
  if (!warning.empty()) Log(LogLevel::kWarning, "%s", warning);
  Log(LogLevel::kInfo, "SIGHUP: reloaded the tokens of %s", file);
}

void Daemon::Serve() {
  std::thread waiter([this] {
    int sig = 0;
    while (sigwait(&signals_, &sig) == 0 && sig == SIGHUP) ReloadTokens();
    Log(LogLevel::kInfo, "%s received: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    serving_->SetServing(false);
    if (http_) http_->SetReady(false);
    // In-flight requests get 10 s to finish; then they are cancelled.
    serving_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  });
  serving_->Wait();
  waiter.join();
}

Daemon::~Daemon() {
  // The members stop in reverse order of their declaration: the HTTP endpoint (which reads the
  // server and the idle timer), the server, the services, the CXL monitor and the policy, the
  // scrubber and the repair planner (each finishing its current batch), then the store, and
  // last the data dir lock.
  if (serving_ != nullptr) {
    Log(LogLevel::kInfo, "ecd stopped serving; finishing background work");
  }
}

}  // namespace ecd::daemon
