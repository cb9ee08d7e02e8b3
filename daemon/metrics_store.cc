// DaemonMetrics::AttachStore: the store's scrape-time families (objects, devices, file systems,
// NVMe, stripe memory, DMA arena, catalog), from one reading of the store per scrape.
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "daemon/metrics.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"

namespace ecd::daemon {
namespace {

using prometheus::MetricType;

// What a scrape reads from the store: the kept object totals, the damage counts, the devices and
// Store::Stats(), each once. A source that failed (the catalog busy or broken)
// leaves its part empty and is counted in `errors`: its families then export no series rather
// than zeros that would resolve real alerts.
struct StoreData {
  bool objects_ok = false;
  double objects = 0, bytes = 0, degraded = 0, lost = 0;
  std::vector<store::DeviceStatus> devices;  // empty when they could not be read
  store::StoreStats stats;                   // never fails
  uint64_t errors = 0;                       // failed reads since ecd started, this one included
};

StoreData ReadStore(store::Store* store, std::atomic<uint64_t>& errors) {
  StoreData d;
  // Kept counts and the damaged blocks only: a scrape never reads every object.
  const store::ObjectTotals totals = store->Totals();
  absl::StatusOr<store::DamageTotals> damage = store->Damage();
  d.objects_ok = damage.ok();
  if (damage.ok()) {
    d.objects = static_cast<double>(totals.objects);
    d.bytes = static_cast<double>(totals.bytes);
    d.degraded = static_cast<double>(damage->degraded_stripes);
    d.lost = static_cast<double>(damage->lost_stripes);
  }
  absl::StatusOr<std::vector<store::DeviceStatus>> devices = store->admin().ListDevices();
  if (!damage.ok() || !devices.ok()) {
    ++errors;
    Log(LogLevel::kWarning, "metrics: cannot read the store: %s",
        (!damage.ok() ? damage.status() : devices.status()).ToString());
  }
  if (devices.ok()) d.devices = *std::move(devices);
  d.stats = store->Stats();
  d.errors = errors.load();
  return d;
}

uint64_t CounterOf(const store::DeviceStatus& d, absl::string_view name) {
  for (const auto& [n, v] : d.counters) {
    if (n == name) return v;
  }
  return 0;
}

using Family = ScrapedFamily<StoreData>;
using Families = std::vector<Family>;

template <typename F>
Family Value(std::string name, std::string help, MetricType type, F value) {
  return metrics_internal::OneValue<StoreData>(std::move(name), std::move(help), type, value);
}

// A sum over the objects: no series when the objects could not be listed.
Family ObjectSum(std::string name, std::string help, double StoreData::*field) {
  return {{std::move(name), std::move(help), MetricType::Gauge, {}}, [field](const StoreData& d) {
            if (!d.objects_ok) return Samples{};
            return Samples{{{}, d.*field}};
          }};
}

// One series per device, labelled device="<id>".
template <typename F>
Family PerDevice(std::string name, std::string help, MetricType type, F value) {
  return {{std::move(name), std::move(help), type, {"device"}}, [value](const StoreData& d) {
            Samples out;
            for (const store::DeviceStatus& dev : d.devices) {
              out.push_back({{absl::StrCat(dev.record.id)}, static_cast<double>(value(dev))});
            }
            return out;
          }};
}

// One series per (device, label value), each from one of the namespace's counters.
using CounterLabels = std::vector<std::pair<std::string, std::string>>;  // label, counter
Family DeviceCounters(std::string name, std::string help, std::string label, CounterLabels labels) {
  return {{std::move(name), std::move(help), MetricType::Counter, {"device", std::move(label)}},
          [labels = std::move(labels)](const StoreData& d) {
            Samples out;
            for (const store::DeviceStatus& dev : d.devices) {
              if (dev.counters.empty()) continue;  // a failed device has no namespace
              const std::string id = absl::StrCat(dev.record.id);
              for (const auto& [value, counter] : labels) {
                out.push_back({{id, value}, static_cast<double>(CounterOf(dev, counter))});
              }
            }
            return out;
          }};
}

// One series per file system under the data dir, labelled path.
Family PerFileSystem(std::string name, std::string help, uint64_t store::FileSystemUsage::*field) {
  return {{std::move(name), std::move(help), MetricType::Gauge, {"path"}},
          [field](const StoreData& d) {
            Samples out;
            for (const store::FileSystemUsage& fs : d.stats.file_systems) {
              out.push_back({{fs.path}, static_cast<double>(fs.*field)});
            }
            return out;
          }};
}

Families ObjectFamilies() {
  return {
      ObjectSum("ecd_objects", "Objects stored.", &StoreData::objects),
      ObjectSum("ecd_object_bytes", "Bytes of all objects (their sizes).", &StoreData::bytes),
      ObjectSum("ecd_degraded_stripes",
                "Stripes with fewer than M+K healthy blocks (readable, redundancy reduced).",
                &StoreData::degraded),
      ObjectSum("ecd_lost_stripes",
                "Stripes with fewer than M healthy blocks (their data cannot be read).",
                &StoreData::lost),
      Value("ecd_metrics_store_errors_total",
            "Scrapes that could not read the store (its families were left out of them).",
            MetricType::Counter, [](const StoreData& d) { return d.errors; }),
  };
}

Families DeviceFamilies() {
  using D = store::DeviceStatus;
  return {
      {{"ecd_device_state",
        "1 for the device's state (online, failing, failed, down), 0 for the others.",
        MetricType::Gauge,
        {"device", "state"}},
       [](const StoreData& d) {
         Samples out;
         for (const store::DeviceStatus& dev : d.devices) {
           for (store::DeviceState s : {store::DeviceState::kOnline, store::DeviceState::kFailing,
                                        store::DeviceState::kFailed, store::DeviceState::kDown}) {
             out.push_back({{absl::StrCat(dev.record.id), store::DeviceStateName(s)},
                            dev.record.state == s ? 1.0 : 0.0});
           }
         }
         return out;
       }},
      PerDevice("ecd_device_capacity_bytes", "Size of the device.", MetricType::Gauge,
                [](const D& d) { return d.record.size_bytes; }),
      PerDevice("ecd_device_used_bytes",
                "Bytes of the device allocated: blocks, label and block-record log.",
                MetricType::Gauge, [](const D& d) { return d.used_bytes; }),
      PerDevice("ecd_device_metadata_bytes",
                "Bytes of the device held by its label and its block-record log.",
                MetricType::Gauge, [](const D& d) { return d.metadata_bytes; }),
      PerDevice("ecd_device_blocks", "Blocks stored on the device.", MetricType::Gauge,
                [](const D& d) { return d.blocks; }),
      PerDevice("ecd_device_flush_failures_total",
                "Failed flushes (each one makes the device suspect: failing, then evacuated).",
                MetricType::Counter, [](const D& d) { return d.flush_failures; }),
      PerFileSystem("ecd_filesystem_size_bytes",
                    "Size of a file system holding the catalog or namespace files.",
                    &store::FileSystemUsage::size_bytes),
      PerFileSystem("ecd_filesystem_free_bytes",
                    "Bytes ecd may still write to a file system under the data dir (statvfs "
                    "f_bavail); new data is refused once it would fall below the reserve.",
                    &store::FileSystemUsage::free_bytes),
      PerFileSystem("ecd_filesystem_reserve_bytes",
                    "Bytes kept free on the file system for the catalog and deletes "
                    "(--fs-reserve).",
                    &store::FileSystemUsage::reserve_bytes),
  };
}

// The NVMe data path, from each namespace's counters.
Families NvmeFamilies() {
  using D = store::DeviceStatus;
  return {
      DeviceCounters("ecd_nvme_commands_total", "NVMe I/O commands completed, by opcode.", "opcode",
                     {{"read", "nvme_read_commands"},
                      {"write", "nvme_write_commands"},
                      {"flush", "nvme_flush_commands"}}),
      DeviceCounters("ecd_nvme_bytes_total", "Bytes moved by NVMe commands, by direction.",
                     "direction", {{"read", "nvme_bytes_read"}, {"write", "nvme_bytes_written"}}),
      {{"ecd_nvme_errors_total",
        "NVMe commands completed with an error, by status (sctX_scYY, hex).",
        MetricType::Counter,
        {"device", "status"}},
       [](const StoreData& d) {
         Samples out;
         for (const store::DeviceStatus& dev : d.devices) {
           for (const auto& [name, v] : dev.counters) {
             if (!absl::StartsWith(name, "nvme_errors_")) continue;
             out.push_back({{absl::StrCat(dev.record.id),
                             std::string(absl::StripPrefix(name, "nvme_errors_"))},
                            static_cast<double>(v)});
           }
         }
         return out;
       }},
      DeviceCounters(
          "ecd_nvme_transfers_total",
          "NVMe data commands by how their data moved: in place from the DMA arena "
          "(zero_copy) or copied through the device's pool (staged).",
          "path", {{"zero_copy", "nvme_zero_copy_commands"}, {"staged", "nvme_staged_commands"}}),
      DeviceCounters("ecd_nvme_io_uring_ops_total",
                     "io_uring data operations by buffer: registered fixed buffers (fixed) or "
                     "pages the kernel pins per operation (plain).",
                     "buffer",
                     {{"fixed", "nvme_io_uring_fixed_ops"}, {"plain", "nvme_io_uring_plain_ops"}}),
      DeviceCounters("ecd_nvme_prp_fetches_total",
                     "PRP list fetches by the controller's fetch manager, by buffer (ping, pong).",
                     "buffer",
                     {{"ping", "nvme_prp_fetches_ping"}, {"pong", "nvme_prp_fetches_pong"}}),
      PerDevice("ecd_nvme_prp_refills_total",
                "PRP fetch buffer refills (a buffer drained before the transfer ended).",
                MetricType::Counter, [](const D& d) { return CounterOf(d, "nvme_prp_refills"); }),
      PerDevice("ecd_nvme_in_flight", "NVMe commands submitted to io_uring and not yet completed.",
                MetricType::Gauge, [](const D& d) { return CounterOf(d, "nvme_in_flight"); }),
  };
}

// Stripe memory (--memory-limit), read buffers, the DMA arena and the catalog.
Families MemoryFamilies() {
  using S = StoreData;
  return {
      Value("ecd_memory_budget_bytes",
            "Bytes of stripe buffers all requests may hold at once (0: no limit).",
            MetricType::Gauge, [](const S& d) { return d.stats.memory.limit_bytes; }),
      Value("ecd_memory_reserved_bytes",
            "Bytes of stripe buffers reserved by requests in progress.", MetricType::Gauge,
            [](const S& d) { return d.stats.memory.reserved_bytes; }),
      Value("ecd_memory_waiting_requests",
            "Requests waiting for stripe memory (what --max-memory-waiters bounds).",
            MetricType::Gauge, [](const S& d) { return d.stats.memory.waiting; }),
      Value("ecd_memory_waits_total", "Requests that had to wait for stripe memory.",
            MetricType::Counter, [](const S& d) { return d.stats.memory.waits; }),
      Value("ecd_memory_refusals_total",
            "Requests refused stripe memory: too large for the limit, too many waiting, or "
            "waited --memory-wait.",
            MetricType::Counter, [](const S& d) { return d.stats.memory.refusals; }),
      {{"ecd_read_buffer_sets",
        "Stripe-buffer sets of reads, by state: in_read (a read in progress that holds them) or "
        "after_read (the read returned, gRPC still sends from its buffers to a slow client); "
        "their memory stays reserved until then.",
        MetricType::Gauge,
        {"state"}},
       [](const S& d) {
         return Samples{{{"in_read"}, static_cast<double>(d.stats.read_buffers.in_reads)},
                        {{"after_read"}, static_cast<double>(d.stats.read_buffers.after_reads)}};
       }},
      Value("ecd_dma_arena_bytes",
            "Bytes of the DMA arena that holds the stripe buffers (0: no arena, --dma-arena).",
            MetricType::Gauge, [](const S& d) { return d.stats.arena.bytes; }),
      Value("ecd_dma_arena_free_bytes",
            "Bytes of the DMA arena not held by a request's stripe buffers.", MetricType::Gauge,
            [](const S& d) { return d.stats.arena.free_bytes; }),
      Value("ecd_dma_arena_fallbacks_total",
            "Stripe buffers mapped on their own because the DMA arena had no free run that long "
            "(a budget larger than --dma-arena, or fragmentation); they are staged.",
            MetricType::Counter, [](const S& d) { return d.stats.arena.fallbacks; }),
      Value("ecd_catalog_errors_total",
            "Catalog (SQLite) failures: I/O errors, full disk, corruption, lock timeouts.",
            MetricType::Counter, [](const S& d) { return d.stats.catalog.errors; }),
  };
}

}  // namespace

void DaemonMetrics::AttachStore(store::Store* store) {
  Families families;
  for (Families part : {ObjectFamilies(), DeviceFamilies(), NvmeFamilies(), MemoryFamilies()}) {
    for (Family& f : part) families.push_back(std::move(f));
  }
  auto errors = std::make_shared<std::atomic<uint64_t>>(0);
  registry_.AddScraped<StoreData>([store, errors] { return ReadStore(store, *errors); },
                                  std::move(families));
}

}  // namespace ecd::daemon
