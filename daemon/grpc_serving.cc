// GrpcServing: the server, ecd's own TCP accept loop, and the watchdog that rebuilds the server
// when a listener gRPC runs has stopped.
#include "daemon/grpc_serving.h"

#include <fcntl.h>
#include <grpc/support/log.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_posix.h>
#include <unistd.h>

#include <atomic>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {
namespace {

// The GrpcServing that gRPC's log reports a dead listener to (null: none).
std::atomic<GrpcServing*> watching{nullptr};

// What gRPC 1.51 logs (GPR_ERROR, in tcp_server_posix.cc) just before its accept loop gives up
// on a listener for good.
constexpr absl::string_view kAcceptFailed = "Failed accept4";

void ForwardGrpcLog(gpr_log_func_args* args) {
  const LogLevel level = args->severity == GPR_LOG_SEVERITY_ERROR  ? LogLevel::kError
                         : args->severity == GPR_LOG_SEVERITY_INFO ? LogLevel::kInfo
                                                                   : LogLevel::kDebug;
  Log(level, "grpc: %s (%s:%d)", args->message, args->file, args->line);
  if (absl::StartsWith(args->message, kAcceptFailed)) {
    if (GrpcServing* serving = watching.load()) serving->ListenerDied(args->message);
  }
}

}  // namespace

void InstallGrpcLog() {
  gpr_set_log_function(ForwardGrpcLog);
  // The accept failure is an error: make sure errors are passed on whatever GRPC_VERBOSITY says.
  if (!gpr_should_log(GPR_LOG_SEVERITY_ERROR)) gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
}

GrpcServing::GrpcServing(Options options)
    : build_(std::move(options.build)),
      acceptor_(std::move(options.acceptor)),
      max_connections_(options.max_connections),
      rebuild_grace_(options.rebuild_grace),
      rebuild_retry_(options.rebuild_retry) {}

absl::StatusOr<std::unique_ptr<GrpcServing>> GrpcServing::Start(Options options) {
  std::unique_ptr<GrpcServing> serving(new GrpcServing(std::move(options)));
  int port = 0;
  std::unique_ptr<grpc::Server> server = serving->build_(&port);
  if (server == nullptr) return absl::UnavailableError("the gRPC server could not be started");
  {
    MutexLock lock(serving->mu_);  // Not shared yet; taken for the analysis (uncontended).
    serving->server_ = std::move(server);
  }
  serving->tcp_port_ = serving->acceptor_ != nullptr ? serving->acceptor_->port() : port;
  GrpcServing* self = serving.get();
  if (serving->acceptor_ != nullptr) {
    serving->acceptor_->Start(serving->max_connections_, [self](int fd) { self->Take(fd); });
  }
  serving->HoldReserve();
  serving->watchdog_ = std::thread([self] { self->Watch(); });
  watching.store(self);
  return serving;
}

GrpcServing::~GrpcServing() {
  GrpcServing* self = this;
  watching.compare_exchange_strong(self, nullptr);
  Shutdown(std::chrono::system_clock::now());
}

void GrpcServing::Take(int fd) {
  MutexLock lock(mu_);
  if (server_ == nullptr) {  // Being rebuilt: the client will connect again.
    ::close(fd);
    return;
  }
  grpc::AddInsecureChannelFromFd(server_.get(), fd);
}

void GrpcServing::SetServing(bool serving) {
  MutexLock lock(mu_);
  serving_ = serving;
  if (server_ != nullptr) server_->GetHealthCheckService()->SetServingStatus(serving);
}

std::string GrpcServing::NotReadyReason() const {
  {
    MutexLock lock(mu_);
    if (stopping_) return "ecd is shutting down";
    if (!rebuilding_.empty()) return rebuilding_;
  }
  return acceptor_ != nullptr ? acceptor_->NotAccepting() : "";
}

uint64_t GrpcServing::rebuilds() const {
  MutexLock lock(mu_);
  return rebuilds_;
}

void GrpcServing::ListenerDied(const std::string& why) {
  MutexLock lock(mu_);
  listener_died_ = true;
  died_because_ = why;
  changed_.NotifyAll();
}

void GrpcServing::HoldReserve() {
  for (int& fd : reserve_) {
    if (fd < 0) fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
}

void GrpcServing::ReleaseReserve() {
  for (int& fd : reserve_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

void GrpcServing::Watch() {
  UniqueMutexLock lock(mu_);
  for (;;) {
    changed_.Wait(
        mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || listener_died_; });
    if (stopping_) return;
    rebuilding_ = absl::StrCat("a gRPC listener stopped accepting (", died_because_,
                               "); ecd is restarting its gRPC server");
    std::unique_ptr<grpc::Server> old = std::move(server_);
    const std::string why = rebuilding_;  // For the log line below, without the lock.
    lock.Unlock();
    // The listener died for want of descriptors: these let the shutdown below (and anything it
    // opens, such as a pipe) work until the old connections have given theirs back.
    ReleaseReserve();
    Log(LogLevel::kError,
        "%s: calls in flight get %s, then are cancelled; clients connect again once it serves", why,
        absl::FormatDuration(rebuild_grace_));
    // Its connections close with it, which gives back their descriptors.
    old->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(rebuild_grace_));
    old.reset();
    std::unique_ptr<grpc::Server> fresh;
    for (int attempt = 1;; ++attempt) {
      lock.Lock();
      listener_died_ = false;  // What the old server's listeners said is answered.
      if (stopping_) return;
      lock.Unlock();
      int port = 0;
      fresh = build_(&port);
      if (fresh != nullptr) break;
      Log(LogLevel::kError, "restarting the gRPC server failed (attempt %d); trying again in %s",
          attempt, absl::FormatDuration(rebuild_retry_));
      lock.Lock();
      changed_.WaitFor(mu_, absl::ToChronoNanoseconds(rebuild_retry_),
                       [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; });
      lock.Unlock();
    }
    lock.Lock();
    if (stopping_) {  // Shutdown came meanwhile and found no server: this one goes too.
      lock.Unlock();
      fresh->Shutdown(std::chrono::system_clock::now());
      return;
    }
    server_ = std::move(fresh);
    HoldReserve();
    server_->GetHealthCheckService()->SetServingStatus(serving_);
    rebuilding_.clear();
    ++rebuilds_;
    Log(LogLevel::kInfo, "the gRPC server serves again (restart %d)", rebuilds_);
  }
}

void GrpcServing::Shutdown(std::chrono::system_clock::time_point deadline) {
  std::unique_ptr<grpc::Server> server;
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    server = std::move(server_);
  }
  changed_.NotifyAll();
  if (acceptor_ != nullptr) acceptor_->Stop();
  if (server != nullptr) server->Shutdown(deadline);
  if (watchdog_.joinable()) watchdog_.join();
  server.reset();
  ReleaseReserve();
  MutexLock lock(mu_);
  stopped_ = true;
  changed_.NotifyAll();
}

void GrpcServing::Wait() {
  MutexLock lock(mu_);
  changed_.Wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_; });
}

}  // namespace ecd::daemon
