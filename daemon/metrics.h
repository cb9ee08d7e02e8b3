// DaemonMetrics: every ecd_* metric the daemon exports, and the hooks that feed them.
//
// Values that already exist in the store, the repair planner, the scrubber, the CXL monitor,
// the request limiter and the listener are read when Prometheus scrapes: each Attach* function
// registers one prometheus::Collectable per source (MetricRegistry::AddScraped) that reads the
// source once per scrape. Only RPCs, EC tasks, catalog commits and auth denials are counted as
// they happen, through hooks on prometheus-cpp counters and histograms. docs/metrics.md lists
// every metric with its labels and meaning.
//
// Which Attach registers what (a family that needs two sources sits with the one it reads most):
//   AttachStore    ecd_objects, ecd_object_bytes, ecd_degraded_stripes, ecd_lost_stripes,
//                  ecd_metrics_store_errors_total, ecd_device_*, ecd_filesystem_*, ecd_nvme_*,
//                  ecd_memory_*, ecd_read_buffer_sets, ecd_dma_arena_*, ecd_catalog_errors_total
//                  (metrics_store.cc)
//   AttachRepair   ecd_stripes, ecd_repair_*, ecd_rebuild_* (RepairPlanner::Status and Stats),
//                  ecd_scrub_* (metrics_repair.cc)
//   AttachCxl      ecd_cxl_records_total, ecd_cxl_overflows_total,
//                  ecd_cxl_overflowed_records_total, ecd_cxl_decode_errors_total, and
//                  ecd_cxl_policy_actions_total from the EventPolicy (metrics_repair.cc)
//   AttachLimiter  ecd_inflight_requests, ecd_limit_rejections_total (metrics_serving.cc)
//   AttachServing  ecd_listener_*, ecd_grpc_connections*, ecd_stream_idle_cancels_total
//                  (metrics_serving.cc)
// The constructor registers the others: ecd_build_info, ecd_rpc_*, ecd_ec_task_duration_seconds,
// ecd_catalog_commit_duration_seconds, ecd_auth_denied_total (metrics.cc).
#ifndef ECD_DAEMON_METRICS_H_
#define ECD_DAEMON_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "daemon/grpc_serving.h"
#include "daemon/metric_registry.h"
#include "daemon/request_limiter.h"
#include "daemon/stream_idle.h"
#include "lib/ec/engine.h"
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

  // The series of one gRPC method, looked up once per call; recording takes no registry lock
  // (prometheus-cpp's counters are atomic; its histograms take a short lock of their own).
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
    prometheus::Histogram* duration_ = nullptr;
    prometheus::Counter* received_ = nullptr;
    prometheus::Counter* sent_ = nullptr;
    // By status code, created on first use (the lock is taken once per method and code).
    mutable std::array<std::atomic<prometheus::Counter*>, 17> requests_{};
  };
  // The series of `method` ("/ecd.v1.Objects/Encode"): every method ecd serves has its own; any
  // other path a client sends shares the "unknown" series, so clients cannot add labels.
  // Never null; valid as long as the metrics.
  const RpcSeries* RpcSeriesFor(absl::string_view method) const;

  // Each Attach* registers the scrape-time families over its sources (see the table above).
  // Call each once, before serving. REQUIRES: the sources outlive the metrics' last Expose().
  void AttachStore(store::Store* store);
  void AttachRepair(repair::RepairPlanner* planner, repair::Scrubber* scrubber);
  void AttachCxl(repair::CxlMonitor* monitor, repair::EventPolicy* policy);
  void AttachLimiter(const RequestLimiter* limiter);
  void AttachServing(const GrpcServing* serving, const StreamIdleTimer* idle);

  // The whole exposition, text format 0.0.4 (MetricRegistry::Expose): every family, with its
  // HELP and TYPE lines even while it has no series. Each call reads every attached source once
  // (the store: one List, one ListDevices, one Stats); concurrent calls each read them.
  std::string Expose() const;

 private:
  MetricRegistry registry_;
  CheckedFamily<prometheus::Counter>& rpc_requests_;
  CheckedFamily<prometheus::Histogram>& rpc_duration_;
  CheckedFamily<prometheus::Counter>& rpc_received_;
  CheckedFamily<prometheus::Counter>& rpc_sent_;
  CheckedFamily<prometheus::Histogram>& catalog_commit_;
  std::array<prometheus::Histogram*, 4> ec_task_;  // by ec::TaskKind
  prometheus::Counter* auth_unauthenticated_ = nullptr;
  prometheus::Counter* auth_permission_denied_ = nullptr;
  // Built in the constructor, read-only after: no lock on the RPC path.
  std::map<std::string, std::unique_ptr<RpcSeries>, std::less<>> rpc_series_;
  std::unique_ptr<RpcSeries> unknown_rpc_;
};

// Shared by the metrics_*.cc files.
namespace metrics_internal {

// Latency buckets in seconds from 50 us to about 19 s (50 us x 2.5^k, k = 0..14), for RPCs, EC
// tasks and catalog commits.
std::vector<double> LatencyBuckets();
double Seconds(std::chrono::nanoseconds d);
// Unix seconds of `t`; 0 for absl::InfinitePast() ("never").
double UnixSecondsOrZero(absl::Time t);
// A family of one series without labels whose value `value(data)` gives.
template <typename Data, typename F>
ScrapedFamily<Data> OneValue(std::string name, std::string help, prometheus::MetricType type,
                             F value) {
  return {{std::move(name), std::move(help), type, {}}, [value](const Data& d) {
            return Samples{{{}, static_cast<double>(value(d))}};
          }};
}

}  // namespace metrics_internal

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_METRICS_H_
