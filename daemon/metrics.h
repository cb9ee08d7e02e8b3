// DaemonMetrics: every ecd_* metric the daemon exports, and the hooks that feed them.
//
// Values that already exist in the store, the repair planner, the scrubber and the CXL
// monitor are read when Prometheus scrapes (callback families); only RPCs, EC tasks and catalog
// commits are counted as they happen (through hooks that touch atomics only). docs/metrics.md
// lists every metric with its labels and meaning.
#ifndef ECD_DAEMON_METRICS_H_
#define ECD_DAEMON_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "daemon/grpc_serving.h"
#include "daemon/request_limiter.h"
#include "daemon/stream_idle.h"
#include "lib/ec/engine.h"
#include "lib/metrics/registry.h"
#include "lib/repair/cxl_monitor.h"
#include "lib/repair/event_policy.h"
#include "lib/repair/repair_planner.h"
#include "lib/repair/scrubber.h"
#include "lib/store/store.h"

namespace ecd::daemon {

// Thread safety: all methods may be called concurrently once the sources are attached.
class DaemonMetrics {
 public:
  // `version` goes into ecd_build_info with the ISA-L version and the CPU features ISA-L can use.
  explicit DaemonMetrics(const std::string& version);

  // For StoreOptions::on_ec_task_done and on_catalog_commit. The metrics must outlive the store.
  std::function<void(ec::TaskKind, std::chrono::nanoseconds)> EcTaskHook();
  std::function<void(std::chrono::nanoseconds)> CatalogCommitHook();
  // For Authorizer::SetDeniedHook: counts ecd_auth_denied_total by reason.
  std::function<void(absl::StatusCode)> AuthDeniedHook();

  // The series of one gRPC method, looked up once per call; recording touches atomics only.
  class RpcSeries {
   public:
    // How the method's messages reach an interceptor.
    enum class Body {
      kProtobuf,    // google::protobuf::MessageLite (ecd.v1, server reflection)
      kByteBuffer,  // grpc::ByteBuffer (gRPC's health service; kRawRequestMethods' requests)
      kUnknown,     // a method ecd does not serve: nothing is read from its messages
    };
    Body body() const { return body_; }
    // One finished call: gRPC status code, duration, bytes received and sent.
    void Record(int code, std::chrono::nanoseconds duration, uint64_t received_bytes,
                uint64_t sent_bytes) const;

   private:
    friend class DaemonMetrics;
    DaemonMetrics* metrics_ = nullptr;
    std::string label_;  // "ecd.v1.Objects/Encode", or "unknown"
    Body body_ = Body::kUnknown;
    metrics::Histogram* duration_ = nullptr;
    metrics::Counter* received_ = nullptr;
    metrics::Counter* sent_ = nullptr;
    // By status code, created on first use (the lock is taken once per method and code).
    mutable std::array<std::atomic<metrics::Counter*>, 17> requests_{};
  };
  // The series of `method` ("/ecd.v1.Objects/Encode"): every method ecd serves has its own; any
  // other path a client sends shares the "unknown" series, so clients cannot add labels.
  // Never null; valid as long as the metrics.
  const RpcSeries* RpcSeriesFor(absl::string_view method) const;

  // Registers the scrape-time families over these sources. Call once, before serving.
  // REQUIRES: all of them outlive the metrics' last Expose().
  void Attach(store::Store* store, repair::RepairPlanner* planner, repair::Scrubber* scrubber,
              repair::CxlMonitor* monitor, repair::EventPolicy* policy);

  // Registers ecd_inflight_requests and ecd_limit_rejections_total over `limiter`. Call once,
  // before serving. REQUIRES: the limiter outlives the metrics' last Expose().
  void AttachLimiter(const RequestLimiter* limiter);

  // Registers the listener's families (ecd_listener_*, ecd_grpc_connections*) over `serving`
  // and ecd_stream_idle_cancels_total over `idle`. Call once. REQUIRES: both outlive the
  // metrics' last Expose().
  void AttachServing(const GrpcServing* serving, const StreamIdleTimer* idle);

  // The whole exposition, text format 0.0.4.
  std::string Expose() const;

 private:
  // The repair's families (ecd_stripes, ecd_repair_*), from RepairPlanner::Status once per
  // scrape.
  void AttachRepair(repair::RepairPlanner* planner);

  metrics::Registry registry_;
  metrics::Family<metrics::Counter>& rpc_requests_;
  metrics::Family<metrics::Histogram>& rpc_duration_;
  metrics::Family<metrics::Counter>& rpc_received_;
  metrics::Family<metrics::Counter>& rpc_sent_;
  metrics::Family<metrics::Histogram>& catalog_commit_;
  std::array<metrics::Histogram*, 4> ec_task_;  // by ec::TaskKind
  metrics::Counter* auth_unauthenticated_ = nullptr;
  metrics::Counter* auth_permission_denied_ = nullptr;
  // Built in the constructor, read-only after: no lock on the RPC path.
  std::map<std::string, std::unique_ptr<RpcSeries>, std::less<>> rpc_series_;
  std::unique_ptr<RpcSeries> unknown_rpc_;
  // One scrape at a time: the store snapshot is taken once per Expose (scrape_generation_).
  mutable std::mutex expose_mu_;
  mutable std::atomic<uint64_t> scrape_generation_{0};
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_METRICS_H_
