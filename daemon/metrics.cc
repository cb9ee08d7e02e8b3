// The ecd_* metric families: registration, hooks and scrape-time collection.
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

using metrics::MetricType;
using metrics::Sample;

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// The callback of a metric without labels: its one sample is value(), read at each scrape.
template <typename Value>
std::function<std::vector<Sample>()> OneSample(Value value) {
  return [value] { return std::vector<Sample>{{{}, static_cast<double>(value())}}; };
}

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

// A value read from its source once per scrape (by the first family that asks after a new
// Expose) and shared by the families built on it.
template <typename T>
class PerScrape {
 public:
  PerScrape(std::function<T()> read, const std::atomic<uint64_t>* generation)
      : read_(std::move(read)), generation_(generation) {}

  std::shared_ptr<const T> Get() {
    std::lock_guard lock(mu_);
    const uint64_t g = generation_->load();
    if (value_ == nullptr || g != taken_at_) {
      value_ = std::make_shared<const T>(read_());
      taken_at_ = g;
    }
    return value_;
  }

 private:
  const std::function<T()> read_;
  const std::atomic<uint64_t>* const generation_;
  std::mutex mu_;
  std::shared_ptr<const T> value_;  // guarded by mu_
  uint64_t taken_at_ = 0;           // guarded by mu_
};

// What a scrape reads from the store: sums over the objects (not the objects themselves), and
// the devices. A source that failed (the catalog busy or broken) leaves its part empty and is
// counted in `errors`: its families then export no series rather than zeros that would resolve
// real alerts.
struct StoreData {
  bool objects_ok = false;
  double objects = 0, bytes = 0, degraded = 0, lost = 0;
  bool devices_ok = false;
  std::vector<store::DeviceStatus> devices;
  std::vector<store::FileSystemUsage> file_systems;  // never fails
  uint64_t errors = 0;  // failed reads since ecd started, this one included
};

StoreData ReadStore(store::Store* store, std::atomic<uint64_t>& errors) {
  StoreData d;
  absl::StatusOr<std::vector<store::ObjectStatus>> objects = store->List();
  d.objects_ok = objects.ok();
  if (objects.ok()) {
    for (const store::ObjectStatus& o : *objects) {
      d.objects += 1;
      d.bytes += static_cast<double>(o.object.size);
      d.degraded += static_cast<double>(o.degraded_stripes);
      d.lost += static_cast<double>(o.lost_stripes);
    }
  }
  absl::StatusOr<std::vector<store::DeviceStatus>> devices = store->admin().ListDevices();
  d.devices_ok = devices.ok();
  if (!objects.ok() || !devices.ok()) {
    ++errors;
    Log(LogLevel::kWarning, "metrics: cannot read the store: %s",
        (!objects.ok() ? objects.status() : devices.status()).ToString());
  }
  if (devices.ok()) d.devices = *std::move(devices);
  d.file_systems = store->Stats().file_systems;
  d.errors = errors.load();
  return d;
}

uint64_t CounterOf(const store::DeviceStatus& d, absl::string_view name) {
  for (const auto& [n, v] : d.counters) {
    if (n == name) return v;
  }
  return 0;
}

double UnixSecondsOrZero(absl::Time t) {
  return t == absl::InfinitePast() ? 0 : absl::ToDoubleSeconds(t - absl::UnixEpoch());
}

}  // namespace

DaemonMetrics::DaemonMetrics(const std::string& version)
    : rpc_requests_(registry_.AddCounter("ecd_rpc_requests_total",
                                         "gRPC requests finished, by method and status code.",
                                         {"method", "code"})),
      rpc_duration_(registry_.AddHistogram("ecd_rpc_duration_seconds",
                                           "gRPC request duration, from its start to its status.",
                                           {"method"}, metrics::LatencyBuckets())),
      rpc_received_(registry_.AddCounter("ecd_rpc_received_bytes_total",
                                         "Bytes of request messages received, by method.",
                                         {"method"})),
      rpc_sent_(registry_.AddCounter("ecd_rpc_sent_bytes_total",
                                     "Bytes of response messages sent, by method.", {"method"})),
      catalog_commit_(
          registry_.AddHistogram("ecd_catalog_commit_duration_seconds",
                                 "Catalog (SQLite) commit duration: the WAL append and its fsync.",
                                 {}, metrics::LatencyBuckets())) {
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
      {"kind"}, metrics::LatencyBuckets());
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
  metrics::Histogram* h = &catalog_commit_.Get();
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
  metrics::Counter* requests = requests_[c].load(std::memory_order_acquire);
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

void DaemonMetrics::AttachLimiter(const RequestLimiter* limiter) {
  registry_.AddCallback(MetricType::kGauge, "ecd_inflight_requests",
                        "ecd.v1 calls in progress (what --max-streams bounds).", {},
                        OneSample([limiter] { return limiter->in_flight(); }));
  registry_.AddCallback(
      MetricType::kCounter, "ecd_limit_rejections_total",
      "Calls refused by an input limit, by limit (the --max-* flag without its dashes).", {"limit"},
      [limiter] {
        std::vector<Sample> out;
        for (int i = 0; i < kLimitCount; ++i) {
          const Limit l = static_cast<Limit>(i);
          out.push_back({{LimitName(l)}, static_cast<double>(limiter->rejections(l))});
        }
        return out;
      });
}

void DaemonMetrics::AttachServing(const GrpcServing* serving, const StreamIdleTimer* idle) {
  registry_.AddCallback(
      MetricType::kGauge, "ecd_listener_accepting",
      "1 while new gRPC connections are accepted and served; 0 while they cannot be (at "
      "--max-connections, out of file descriptors, the server restarting, stopping): /readyz "
      "says why.",
      {}, OneSample([serving] { return serving->NotReadyReason().empty() ? 1 : 0; }));
  const TcpAcceptor* acceptor = serving->acceptor();
  registry_.AddCallback(
      MetricType::kCounter, "ecd_listener_recoveries_total",
      "Times ecd made its gRPC listener accept again: accept, its own accept loop after running "
      "out of file descriptors; rebuild, the gRPC server restarted after a listener gRPC runs "
      "stopped.",
      {"how"}, [serving, acceptor] {
        return std::vector<Sample>{
            {{"accept"},
             static_cast<double>(acceptor != nullptr ? acceptor->stats().recoveries : 0)},
            {{"rebuild"}, static_cast<double>(serving->rebuilds())}};
      });
  if (acceptor != nullptr) {
    registry_.AddCallback(MetricType::kGauge, "ecd_grpc_connections",
                          "gRPC TCP connections open (what --max-connections bounds).", {},
                          OneSample([acceptor] { return acceptor->stats().open; }));
    registry_.AddCallback(
        MetricType::kCounter, "ecd_grpc_connections_refused_total",
        "gRPC TCP connections closed as soon as accepted: max-connections, that many were open; "
        "descriptors, ecd was out of file descriptors.",
        {"reason"}, [acceptor] {
          const TcpAcceptor::Stats s = acceptor->stats();
          return std::vector<Sample>{{{"max-connections"}, static_cast<double>(s.refused_at_limit)},
                                     {{"descriptors"}, static_cast<double>(s.refused_descriptors)}};
        });
  }
  registry_.AddCallback(
      MetricType::kCounter, "ecd_stream_idle_cancels_total",
      "Calls ecd cancelled because their client sent or took nothing for --stream-idle-timeout.",
      {}, OneSample([idle] { return idle->cancelled_calls(); }));
}

void DaemonMetrics::Attach(store::Store* store, repair::RepairPlanner* planner,
                           repair::Scrubber* scrubber, repair::CxlMonitor* monitor,
                           repair::EventPolicy* policy) {
  auto store_errors = std::make_shared<std::atomic<uint64_t>>(0);
  auto snapshot = std::make_shared<PerScrape<StoreData>>(
      [store, store_errors] { return ReadStore(store, *store_errors); }, &scrape_generation_);
  auto rebuild_stats = std::make_shared<PerScrape<repair::RebuildStats>>(
      [planner] { return planner->Stats(); }, &scrape_generation_);
  AttachRepair(planner);
  auto scrub_status = std::make_shared<PerScrape<repair::ScrubberStatus>>(
      [scrubber] { return scrubber->Status(); }, &scrape_generation_);
  auto cxl_stats = std::make_shared<PerScrape<repair::CxlMonitorStats>>(
      [monitor] { return monitor->stats(); }, &scrape_generation_);
  metrics::Registry& r = registry_;

  // Objects and stripes.
  auto store_sum = [snapshot](double StoreData::*field) {
    return [snapshot, field] {
      std::shared_ptr<const StoreData> d = snapshot->Get();
      if (!d->objects_ok) return std::vector<Sample>{};
      return std::vector<Sample>{{{}, (*d).*field}};
    };
  };
  using Data = StoreData;
  r.AddCallback(MetricType::kGauge, "ecd_objects", "Objects stored.", {},
                store_sum(&Data::objects));
  r.AddCallback(MetricType::kGauge, "ecd_object_bytes", "Bytes of all objects (their sizes).", {},
                store_sum(&Data::bytes));
  r.AddCallback(MetricType::kGauge, "ecd_degraded_stripes",
                "Stripes with fewer than M+K healthy blocks (readable, redundancy reduced).", {},
                store_sum(&Data::degraded));
  r.AddCallback(MetricType::kGauge, "ecd_lost_stripes",
                "Stripes with fewer than M healthy blocks (their data cannot be read).", {},
                store_sum(&Data::lost));
  r.AddCallback(MetricType::kCounter, "ecd_metrics_store_errors_total",
                "Scrapes that could not read the store (its families were left out of them).", {},
                OneSample([snapshot] { return snapshot->Get()->errors; }));

  // Devices.
  auto per_device = [snapshot](auto value) {
    return [snapshot, value] {
      std::vector<Sample> out;
      for (const store::DeviceStatus& d : snapshot->Get()->devices) {
        out.push_back({{absl::StrCat(d.record.id)}, static_cast<double>(value(d))});
      }
      return out;
    };
  };
  r.AddCallback(
      MetricType::kGauge, "ecd_device_state",
      "1 for the device's state (online, failing, failed, down), 0 for the others.",
      {"device", "state"}, [snapshot] {
        std::vector<Sample> out;
        for (const store::DeviceStatus& d : snapshot->Get()->devices) {
          for (store::DeviceState s : {store::DeviceState::kOnline, store::DeviceState::kFailing,
                                       store::DeviceState::kFailed, store::DeviceState::kDown}) {
            out.push_back({{absl::StrCat(d.record.id), store::DeviceStateName(s)},
                           d.record.state == s ? 1.0 : 0.0});
          }
        }
        return out;
      });
  r.AddCallback(MetricType::kGauge, "ecd_device_capacity_bytes", "Size of the device.", {"device"},
                per_device([](const store::DeviceStatus& d) { return d.record.size_bytes; }));
  r.AddCallback(MetricType::kGauge, "ecd_device_used_bytes",
                "Bytes of the device allocated: blocks, label and block-record log.", {"device"},
                per_device([](const store::DeviceStatus& d) { return d.used_bytes; }));
  r.AddCallback(MetricType::kGauge, "ecd_device_metadata_bytes",
                "Bytes of the device held by its label and its block-record log.", {"device"},
                per_device([](const store::DeviceStatus& d) { return d.metadata_bytes; }));
  r.AddCallback(MetricType::kGauge, "ecd_device_blocks", "Blocks stored on the device.", {"device"},
                per_device([](const store::DeviceStatus& d) { return d.blocks; }));
  r.AddCallback(MetricType::kCounter, "ecd_device_flush_failures_total",
                "Failed flushes (each one makes the device suspect: failing, then evacuated).",
                {"device"},
                per_device([](const store::DeviceStatus& d) { return d.flush_failures; }));

  // The file systems under the data dir.
  auto per_fs = [snapshot](uint64_t store::FileSystemUsage::*field) {
    return [snapshot, field] {
      std::vector<Sample> out;
      for (const store::FileSystemUsage& fs : snapshot->Get()->file_systems) {
        out.push_back({{fs.path}, static_cast<double>(fs.*field)});
      }
      return out;
    };
  };
  r.AddCallback(MetricType::kGauge, "ecd_filesystem_size_bytes",
                "Size of a file system holding the catalog or namespace files.", {"path"},
                per_fs(&store::FileSystemUsage::size_bytes));
  r.AddCallback(MetricType::kGauge, "ecd_filesystem_free_bytes",
                "Bytes ecd may still write to a file system under the data dir (statvfs "
                "f_bavail); new data is refused once it would fall below the reserve.",
                {"path"}, per_fs(&store::FileSystemUsage::free_bytes));
  r.AddCallback(MetricType::kGauge, "ecd_filesystem_reserve_bytes",
                "Bytes kept free on the file system for the catalog and deletes (--fs-reserve).",
                {"path"}, per_fs(&store::FileSystemUsage::reserve_bytes));

  // NVMe data path, from each namespace's counters.
  // One series per (device, label value), each from one of the namespace's counters.
  using CounterLabels = std::vector<std::pair<std::string, std::string>>;  // label, counter
  auto device_counters = [snapshot](CounterLabels labels) {
    return [snapshot, labels = std::move(labels)] {
      std::vector<Sample> out;
      for (const store::DeviceStatus& d : snapshot->Get()->devices) {
        if (d.counters.empty()) continue;  // a failed device has no namespace
        const std::string id = absl::StrCat(d.record.id);
        for (const auto& [value, counter] : labels) {
          out.push_back({{id, value}, static_cast<double>(CounterOf(d, counter))});
        }
      }
      return out;
    };
  };
  r.AddCallback(MetricType::kCounter, "ecd_nvme_commands_total",
                "NVMe I/O commands completed, by opcode.", {"device", "opcode"},
                device_counters({{"read", "nvme_read_commands"},
                                 {"write", "nvme_write_commands"},
                                 {"flush", "nvme_flush_commands"}}));
  r.AddCallback(MetricType::kCounter, "ecd_nvme_bytes_total",
                "Bytes moved by NVMe commands, by direction.", {"device", "direction"},
                device_counters({{"read", "nvme_bytes_read"}, {"write", "nvme_bytes_written"}}));
  r.AddCallback(MetricType::kCounter, "ecd_nvme_errors_total",
                "NVMe commands completed with an error, by status (sctX_scYY, hex).",
                {"device", "status"}, [snapshot] {
                  std::vector<Sample> out;
                  for (const store::DeviceStatus& d : snapshot->Get()->devices) {
                    for (const auto& [name, v] : d.counters) {
                      if (!absl::StartsWith(name, "nvme_errors_")) continue;
                      out.push_back({{absl::StrCat(d.record.id),
                                      std::string(absl::StripPrefix(name, "nvme_errors_"))},
                                     static_cast<double>(v)});
                    }
                  }
                  return out;
                });
  r.AddCallback(MetricType::kCounter, "ecd_nvme_transfers_total",
                "NVMe data commands by how their data moved: in place from the DMA arena "
                "(zero_copy) or copied through the device's pool (staged).",
                {"device", "path"},
                device_counters({{"zero_copy", "nvme_zero_copy_commands"},
                                 {"staged", "nvme_staged_commands"}}));
  r.AddCallback(MetricType::kCounter, "ecd_nvme_io_uring_ops_total",
                "io_uring data operations by buffer: registered fixed buffers (fixed) or pages "
                "the kernel pins per operation (plain).",
                {"device", "buffer"},
                device_counters(
                    {{"fixed", "nvme_io_uring_fixed_ops"}, {"plain", "nvme_io_uring_plain_ops"}}));
  r.AddCallback(
      MetricType::kCounter, "ecd_nvme_prp_fetches_total",
      "PRP list fetches by the controller's fetch manager, by buffer (ping, pong).",
      {"device", "buffer"},
      device_counters({{"ping", "nvme_prp_fetches_ping"}, {"pong", "nvme_prp_fetches_pong"}}));
  r.AddCallback(
      MetricType::kCounter, "ecd_nvme_prp_refills_total",
      "PRP fetch buffer refills (a buffer drained before the transfer ended).", {"device"},
      per_device([](const store::DeviceStatus& d) { return CounterOf(d, "nvme_prp_refills"); }));
  r.AddCallback(
      MetricType::kGauge, "ecd_nvme_in_flight",
      "NVMe commands submitted to io_uring and not yet completed.", {"device"},
      per_device([](const store::DeviceStatus& d) { return CounterOf(d, "nvme_in_flight"); }));

  // Stripe memory (--memory-limit).
  r.AddCallback(MetricType::kGauge, "ecd_memory_budget_bytes",
                "Bytes of stripe buffers all requests may hold at once (0: no limit).", {},
                OneSample([store] { return store->Stats().memory.limit_bytes; }));
  r.AddCallback(MetricType::kGauge, "ecd_memory_reserved_bytes",
                "Bytes of stripe buffers reserved by requests in progress.", {},
                OneSample([store] { return store->Stats().memory.reserved_bytes; }));
  r.AddCallback(MetricType::kGauge, "ecd_memory_waiting_requests",
                "Requests waiting for stripe memory (what --max-memory-waiters bounds).", {},
                OneSample([store] { return store->Stats().memory.waiting; }));
  r.AddCallback(MetricType::kCounter, "ecd_memory_waits_total",
                "Requests that had to wait for stripe memory.", {},
                OneSample([store] { return store->Stats().memory.waits; }));
  r.AddCallback(
      MetricType::kCounter, "ecd_memory_refusals_total",
      "Requests refused stripe memory: too large for the limit, too many waiting, or waited "
      "--memory-wait.",
      {}, OneSample([store] { return store->Stats().memory.refusals; }));

  r.AddCallback(MetricType::kGauge, "ecd_read_buffer_sets",
                "Stripe-buffer sets of reads, by state: in_read (a read in progress that holds "
                "them) or after_read (the read returned, gRPC still sends from its buffers to a "
                "slow client); their memory stays reserved until then.",
                {"state"}, [store] {
                  const store::StoreStats::ReadBuffers sets = store->Stats().read_buffers;
                  return std::vector<Sample>{
                      {{"in_read"}, static_cast<double>(sets.in_reads)},
                      {{"after_read"}, static_cast<double>(sets.after_reads)}};
                });

  r.AddCallback(MetricType::kGauge, "ecd_dma_arena_bytes",
                "Bytes of the DMA arena that holds the stripe buffers (0: no arena, "
                "--dma-arena).",
                {}, OneSample([store] { return store->Stats().arena.bytes; }));
  r.AddCallback(MetricType::kGauge, "ecd_dma_arena_free_bytes",
                "Bytes of the DMA arena not held by a request's stripe buffers.", {},
                OneSample([store] { return store->Stats().arena.free_bytes; }));
  r.AddCallback(MetricType::kCounter, "ecd_dma_arena_fallbacks_total",
                "Stripe buffers mapped on their own because the DMA arena had no free run that "
                "long (a budget larger than --dma-arena, or fragmentation); they are staged.",
                {}, OneSample([store] { return store->Stats().arena.fallbacks; }));

  // Catalog.
  r.AddCallback(MetricType::kCounter, "ecd_catalog_errors_total",
                "Catalog (SQLite) failures: I/O errors, full disk, corruption, lock timeouts.", {},
                OneSample([store] { return store->Stats().catalog.errors; }));

  // Rebuilds.
  r.AddCallback(MetricType::kGauge, "ecd_rebuild_jobs", "Rebuild jobs waiting or running.",
                {"state"}, [rebuild_stats] {
                  const repair::RebuildStats& s = *rebuild_stats->Get();
                  return std::vector<Sample>{{{"queued"}, static_cast<double>(s.queued)},
                                             {{"running"}, static_cast<double>(s.running)}};
                });
  r.AddCallback(
      MetricType::kCounter, "ecd_rebuild_jobs_finished_total",
      "Rebuild jobs finished since ecd started, by kind and result (done, failed).",
      {"kind", "result"}, [rebuild_stats] {
        std::vector<Sample> out;
        const repair::RebuildStats& s = *rebuild_stats->Get();
        for (repair::RebuildKind k :
             {repair::RebuildKind::kEvacuateDevice, repair::RebuildKind::kMediaRange,
              repair::RebuildKind::kRepairObject}) {
          for (repair::RebuildState st :
               {repair::RebuildState::kDone, repair::RebuildState::kFailed}) {
            auto it = s.finished.find({k, st});
            out.push_back({{repair::RebuildKindName(k), repair::RebuildStateName(st)},
                           it == s.finished.end() ? 0.0 : static_cast<double>(it->second)});
          }
        }
        return out;
      });
  r.AddCallback(MetricType::kCounter, "ecd_rebuild_bytes_total",
                "Bytes rebuilt or relocated by rebuild jobs and automatic repairs.", {},
                OneSample([rebuild_stats] { return rebuild_stats->Get()->bytes_moved; }));
  r.AddCallback(MetricType::kGauge, "ecd_rebuild_eta_seconds",
                "Estimated seconds until no rebuild job and no repair is left, at the recent "
                "rate (absent when idle or not known yet).",
                {}, [rebuild_stats] {
                  const repair::RebuildStats& s = *rebuild_stats->Get();
                  if (!s.eta) return std::vector<Sample>{};
                  return std::vector<Sample>{{{}, absl::ToDoubleSeconds(*s.eta)}};
                });
  r.AddCallback(MetricType::kGauge, "ecd_rebuild_last_progress_timestamp_seconds",
                "Unix time the repair or a rebuild job last moved bytes or finished a batch (0: "
                "never).",
                {}, OneSample([rebuild_stats] {
                  return UnixSecondsOrZero(rebuild_stats->Get()->last_progress);
                }));

  // Scrub.
  auto scrub = [scrub_status](auto value) {
    return OneSample([scrub_status, value] { return value(*scrub_status->Get()); });
  };
  using Scrub = repair::ScrubberStatus;
  r.AddCallback(MetricType::kGauge, "ecd_scrub_running", "1 while a background scrub pass runs.",
                {}, scrub([](const Scrub& s) { return s.running ? 1 : 0; }));
  r.AddCallback(MetricType::kGauge, "ecd_scrub_pass_objects_done",
                "Objects done of the running background scrub pass.", {},
                scrub([](const Scrub& s) { return s.current.objects_done; }));
  r.AddCallback(MetricType::kGauge, "ecd_scrub_pass_objects",
                "Objects of the running background scrub pass.", {},
                scrub([](const Scrub& s) { return s.current.objects_total; }));
  r.AddCallback(MetricType::kGauge, "ecd_scrub_last_finished_timestamp_seconds",
                "Unix time the last background scrub pass finished (0: never).", {},
                scrub([](const Scrub& s) { return UnixSecondsOrZero(s.last_finished); }));
  r.AddCallback(MetricType::kCounter, "ecd_scrub_bytes_checked_total",
                "Bytes read back good by scrubs (background and on request).", {},
                scrub([](const Scrub& s) { return s.found_total.bytes_checked; }));
  r.AddCallback(MetricType::kCounter, "ecd_scrub_findings_total",
                "Damage found by scrubs, by kind: corrupt (failed CRC32C), unreadable, "
                "parity_mismatch, lost_stripe.",
                {"kind"}, [scrub_status] {
                  const store::RecoverProgress& f = scrub_status->Get()->found_total;
                  return std::vector<Sample>{
                      {{"corrupt"}, static_cast<double>(f.blocks_corrupt)},
                      {{"unreadable"}, static_cast<double>(f.blocks_unreadable)},
                      {{"parity_mismatch"}, static_cast<double>(f.parity_mismatches)},
                      {{"lost_stripe"}, static_cast<double>(f.lost_stripes)}};
                });
  r.AddCallback(MetricType::kCounter, "ecd_scrub_repaired_blocks_total",
                "Blocks scrubs rewrote (rebuilt or recomputed).", {},
                scrub([](const Scrub& s) { return s.found_total.blocks_rebuilt; }));
  r.AddCallback(MetricType::kCounter, "ecd_scrub_objects_failed_total",
                "Objects whose scrub ended in an error (data loss, no space).", {},
                scrub([](const Scrub& s) { return s.objects_failed_total; }));

  // CXL.
  r.AddCallback(
      MetricType::kCounter, "ecd_cxl_records_total",
      "CXL event records decoded, by device, log, record type and severity.",
      {"device", "log", "type", "severity"}, [cxl_stats] {
        std::vector<Sample> out;
        for (const auto& [key, n] : cxl_stats->Get()->records_by) {
          const auto& [device, log, type, severity] = key;
          out.push_back({{absl::StrCat(device), log, type, severity}, static_cast<double>(n)});
        }
        return out;
      });
  auto per_cxl_device = [cxl_stats](auto field) {
    return [cxl_stats, field] {
      const repair::CxlMonitorStats& s = *cxl_stats->Get();
      const std::vector<uint64_t>& v = field(s);
      std::vector<Sample> out;
      for (size_t d = 0; d < v.size(); ++d) {
        out.push_back({{absl::StrCat(d)}, static_cast<double>(v[d])});
      }
      return out;
    };
  };
  r.AddCallback(
      MetricType::kCounter, "ecd_cxl_overflows_total",
      "CXL event log overflows (records the device dropped), by device.", {"device"},
      per_cxl_device([](const repair::CxlMonitorStats& s) -> const std::vector<uint64_t>& {
        return s.overflows_by_device;
      }));
  r.AddCallback(
      MetricType::kCounter, "ecd_cxl_overflowed_records_total",
      "CXL event records lost to log overflows (the overflow reports' counts), by "
      "device.",
      {"device"},
      per_cxl_device([](const repair::CxlMonitorStats& s) -> const std::vector<uint64_t>& {
        return s.overflowed_records_by_device;
      }));
  r.AddCallback(
      MetricType::kCounter, "ecd_cxl_decode_errors_total",
      "CXL event records that could not be decoded, by device.", {"device"},
      per_cxl_device([](const repair::CxlMonitorStats& s) -> const std::vector<uint64_t>& {
        return s.decode_errors_by_device;
      }));
  r.AddCallback(MetricType::kCounter, "ecd_cxl_policy_actions_total",
                "Actions the CXL event policy took (ignore, count, rebuild, evacuate, fail).",
                {"action"}, [policy] {
                  std::map<std::string, uint64_t> c = policy->counters();
                  std::vector<Sample> out;
                  for (repair::PolicyAction a :
                       {repair::PolicyAction::kIgnore, repair::PolicyAction::kCount,
                        repair::PolicyAction::kRebuildRange, repair::PolicyAction::kEvacuate,
                        repair::PolicyAction::kFail}) {
                    const std::string name = repair::PolicyActionName(a);
                    out.push_back({{name}, static_cast<double>(c[name])});
                  }
                  return out;
                });
}

void DaemonMetrics::AttachRepair(repair::RepairPlanner* planner) {
  auto status = std::make_shared<PerScrape<repair::RepairStatus>>(
      [planner] { return planner->Status(); }, &scrape_generation_);
  auto repair = [status](auto value) {
    return OneSample([status, value] { return value(*status->Get()); });
  };
  using Repair = repair::RepairStatus;
  metrics::Registry& r = registry_;
  r.AddCallback(MetricType::kGauge, "ecd_stripes",
                "Stripes of all objects by redundancy left: the blocks each can still lose "
                "before its data is lost (healthy blocks minus M), 0 up to the largest K stored. "
                "Stripes already lost are in ecd_lost_stripes.",
                {"redundancy_left"}, [status] {
                  std::vector<Sample> out;
                  const std::vector<uint64_t>& by = status->Get()->stripes_by_redundancy;
                  for (size_t left = 0; left < by.size(); ++left) {
                    out.push_back({{absl::StrCat(left)}, static_cast<double>(by[left])});
                  }
                  return out;
                });
  r.AddCallback(MetricType::kGauge, "ecd_repair_queue_stripes",
                "Stripes with a block the repair has to rebuild or move.", {},
                repair([](const Repair& s) { return s.stripes_queued; }));
  r.AddCallback(MetricType::kGauge, "ecd_repair_waiting_stripes",
                "Stripes whose only missing blocks are on down devices still within the repair "
                "delay (--repair-delay).",
                {}, repair([](const Repair& s) { return s.stripes_waiting; }));
  r.AddCallback(MetricType::kCounter, "ecd_repair_stripes_total",
                "Stripes the repair brought back to full redundancy.", {},
                repair([](const Repair& s) { return s.stripes_repaired; }));
  r.AddCallback(MetricType::kCounter, "ecd_repair_blocks_total",
                "Blocks the repair rebuilt or moved.", {},
                repair([](const Repair& s) { return s.blocks_repaired; }));
  r.AddCallback(MetricType::kCounter, "ecd_repair_bytes_total",
                "Bytes the repair rebuilt or moved.", {},
                repair([](const Repair& s) { return s.bytes_repaired; }));
  r.AddCallback(MetricType::kGauge, "ecd_repair_lost_stripes",
                "Stripes the repair found with fewer than M good blocks: it cannot rebuild them.",
                {}, repair([](const Repair& s) { return s.stripes_lost; }));
  r.AddCallback(MetricType::kGauge, "ecd_repair_eta_seconds",
                "Estimated seconds until every stripe is back to full redundancy, at the recent "
                "repair rate (absent when idle or not known yet).",
                {}, [status] {
                  const std::optional<absl::Duration>& eta = status->Get()->eta;
                  if (!eta) return std::vector<Sample>{};
                  return std::vector<Sample>{{{}, absl::ToDoubleSeconds(*eta)}};
                });
  r.AddCallback(MetricType::kGauge, "ecd_repair_paused",
                "1 while the repair is paused (ecctl repair pause), else 0.", {},
                repair([](const Repair& s) { return s.paused ? 1 : 0; }));
  r.AddCallback(MetricType::kGauge, "ecd_repair_stalled",
                "1 while the repair cannot go on (ecctl repair status says why), else 0.", {},
                repair([](const Repair& s) { return s.stalled.empty() ? 0 : 1; }));
  r.AddCallback(MetricType::kGauge, "ecd_repair_rate_limit_bytes_per_second",
                "The repair's bandwidth limit (ecctl repair rate, --rebuild-rate); 0: none.", {},
                repair([](const Repair& s) { return s.rate_bytes_per_sec; }));
}

std::string DaemonMetrics::Expose() const {
  std::lock_guard lock(expose_mu_);
  scrape_generation_.fetch_add(1);
  return registry_.Expose();
}

}  // namespace ecd::daemon
