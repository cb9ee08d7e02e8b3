// DaemonMetrics: the families counted as things happen (RPCs, EC tasks, commits, auth), their
// hooks, and the exposition. The scrape-time families are in metrics_{store,repair,serving}.cc.
#include "daemon/metrics.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/support/status.h>
#include <isa-l.h>

#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"
#include "wire/data_message.h"

namespace ecd::daemon {
namespace {

using metrics_internal::LatencyBuckets;
using metrics_internal::Seconds;

// The x86 features ISA-L's dispatchers choose between, as the CPU reports them.
std::string CpuFeatures() {
  std::vector<std::string> out;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.1")) out.push_back("sse4_1");
  if (__builtin_cpu_supports("avx")) out.push_back("avx");
  if (__builtin_cpu_supports("avx2")) out.push_back("avx2");
  if (__builtin_cpu_supports("avx512f")) out.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) out.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) out.push_back("avx512vl");
  if (__builtin_cpu_supports("gfni")) out.push_back("gfni");
  if (__builtin_cpu_supports("vpclmulqdq")) out.push_back("vpclmulqdq");
#elif defined(__aarch64__)
  out.push_back("neon");
#endif
  return absl::StrJoin(out, ",");
}

}  // namespace

DaemonMetrics::DaemonMetrics(const std::string& version)
    : rpc_requests_(registry_.AddCounter("ecd_rpc_requests_total",
                                         "gRPC requests finished, by method and status code.",
                                         {"method", "code"})),
      rpc_duration_(registry_.AddHistogram("ecd_rpc_duration_seconds",
                                           "gRPC request duration, from its start to its status.",
                                           {"method"}, LatencyBuckets())),
      rpc_received_(registry_.AddCounter("ecd_rpc_received_bytes_total",
                                         "Bytes of request messages received, by method.",
                                         {"method"})),
      rpc_sent_(registry_.AddCounter("ecd_rpc_sent_bytes_total",
                                     "Bytes of response messages sent, by method.", {"method"})),
      catalog_commit_(
          registry_.AddHistogram("ecd_catalog_commit_duration_seconds",
                                 "Catalog (SQLite) commit duration: the WAL append and its fsync.",
                                 {}, LatencyBuckets())) {
  registry_
      .AddGauge("ecd_build_info",
                "Always 1; the labels say which ecd, which ISA-L and which CPU features "
                "ISA-L can use.",
                {"version", "isal", "cpu_features"})
      .WithLabels(
          {version,
           absl::StrCat(ISAL_MAJOR_VERSION, ".", ISAL_MINOR_VERSION, ".", ISAL_PATCH_VERSION),
           CpuFeatures()})
      .Set(1);
  auto& ec = registry_.AddHistogram(
      "ecd_ec_task_duration_seconds",
      "EC engine task latency from submit to the end of its run (queueing included), by kind.",
      {"kind"}, LatencyBuckets());
  for (ec::TaskKind k : {ec::TaskKind::kCreate, ec::TaskKind::kUpdate, ec::TaskKind::kRecover,
                         ec::TaskKind::kMultiply}) {
    ec_task_[static_cast<size_t>(k)] = &ec.WithLabels({ec::TaskKindName(k)});
  }
  catalog_commit_.Get();  // Exported (at zero) before the first commit.
  auto& denied = registry_.AddCounter(
      "ecd_auth_denied_total",
      "gRPC calls refused by token authorization (docs/security.md), by reason.", {"reason"});
  auth_unauthenticated_ = &denied.WithLabels({"unauthenticated"});
  auth_permission_denied_ = &denied.WithLabels({"permission_denied"});

  // The methods ecd serves: ecd.v1 from its descriptors, gRPC's health and reflection services.
  auto add = [this](const std::string& path, RpcSeries::Body body) {
    auto series = std::make_unique<RpcSeries>();
    series->metrics_ = this;
    series->label_ = path.empty() ? "unknown" : path.substr(1);
    series->body_ = body;
    series->duration_ = &rpc_duration_.WithLabels({series->label_});
    series->received_ = &rpc_received_.WithLabels({series->label_});
    series->sent_ = &rpc_sent_.WithLabels({series->label_});
    return series;
  };
  const google::protobuf::FileDescriptor* file =
      google::protobuf::DescriptorPool::generated_pool()->FindFileByName("ecd/v1/ecd.proto");
  for (int i = 0; file != nullptr && i < file->service_count(); ++i) {
    const google::protobuf::ServiceDescriptor* service = file->service(i);
    for (int j = 0; j < service->method_count(); ++j) {
      const std::string path =
          absl::StrCat("/", service->full_name(), "/", service->method(j)->name());
      const bool raw = absl::c_linear_search(wire::kRawRequestMethods, path);
      rpc_series_[path] =
          add(path, raw ? RpcSeries::Body::kByteBuffer : RpcSeries::Body::kProtobuf);
    }
  }
  for (const char* path : {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"}) {
    rpc_series_[path] = add(path, RpcSeries::Body::kByteBuffer);
  }
  const std::string reflection = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
  rpc_series_[reflection] = add(reflection, RpcSeries::Body::kProtobuf);
  unknown_rpc_ = add("", RpcSeries::Body::kUnknown);
}

std::function<void(ec::TaskKind, std::chrono::nanoseconds)> DaemonMetrics::EcTaskHook() {
  return [this](ec::TaskKind kind, std::chrono::nanoseconds latency) {
    ec_task_[static_cast<size_t>(kind)]->Observe(Seconds(latency));
  };
}

std::function<void(std::chrono::nanoseconds)> DaemonMetrics::CatalogCommitHook() {
  prometheus::Histogram* h = &catalog_commit_.Get();
  return [h](std::chrono::nanoseconds d) { h->Observe(Seconds(d)); };
}

std::function<void(absl::StatusCode)> DaemonMetrics::AuthDeniedHook() {
  return [this](absl::StatusCode code) {
    (code == absl::StatusCode::kUnauthenticated ? auth_unauthenticated_ : auth_permission_denied_)
        ->Increment();
  };
}

void DaemonMetrics::RpcSeries::Record(int code, std::chrono::nanoseconds duration,
                                      uint64_t received_bytes, uint64_t sent_bytes) const {
  const size_t c = code >= 0 && code < static_cast<int>(requests_.size())
                       ? static_cast<size_t>(code)
                       : static_cast<size_t>(grpc::StatusCode::UNKNOWN);
  prometheus::Counter* requests = requests_[c].load(std::memory_order_acquire);
  if (requests == nullptr) {
    // gRPC's codes are absl's, with the same canonical names ("NOT_FOUND").
    requests = &metrics_->rpc_requests_.WithLabels(
        {label_, absl::StatusCodeToString(static_cast<absl::StatusCode>(c))});
    requests_[c].store(requests, std::memory_order_release);
  }
  requests->Increment();
  duration_->Observe(Seconds(duration));
  received_->Increment(received_bytes);
  sent_->Increment(sent_bytes);
}

const DaemonMetrics::RpcSeries* DaemonMetrics::RpcSeriesFor(absl::string_view method) const {
  auto it = rpc_series_.find(method);
  return it == rpc_series_.end() ? unknown_rpc_.get() : it->second.get();
}

std::string DaemonMetrics::Expose() const { return registry_.Expose(); }

namespace metrics_internal {

std::vector<double> LatencyBuckets() {
  std::vector<double> out;
  double b = 50e-6;
  for (int i = 0; i < 15; ++i, b *= 2.5) out.push_back(b);
  return out;
}

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

double UnixSecondsOrZero(absl::Time t) {
  return t == absl::InfinitePast() ? 0 : absl::ToDoubleSeconds(t - absl::UnixEpoch());
}

}  // namespace metrics_internal
}  // namespace ecd::daemon
