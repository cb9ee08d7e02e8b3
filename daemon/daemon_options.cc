// ParseDaemonArgs: ecd's flags registered with CLI11 as text, then converted and checked one
// group at a time (store, NVMe, serving, repair, CXL, testing).
#include "daemon/daemon_options.h"

#include <sys/un.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/util/size.h"

namespace ecd::daemon {
namespace {

// The flags as written; converted into DaemonOptions after CLI11 has parsed them.
struct Flags {
  std::string data_dir = "./var/ecd";
  int devices = 8;
  std::string device_size = "1G";
  std::string lba_size = "4K";
  std::string listen = "127.0.0.1:7400";
  std::string unix_socket;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  bool insecure = false;
  std::string tokens_file;
  std::string port_file;
  std::string metrics_listen = "127.0.0.1:9400";
  std::string metrics_port_file;
  std::string block_size = "1M";
  uint32_t data_blocks = 4;
  uint32_t parity_blocks = 2;
  std::string max_stripe_memory = "512M";
  std::string memory_limit = "512M";
  uint32_t max_memory_waiters = 64;
  std::string max_connection_idle = "5m";
  std::string stream_idle_timeout = "60s";
  uint32_t max_connections = 0;
  double memory_wait_seconds = 60;
  std::string log_level = "info";
  int ec_workers = 2;
  size_t stripes_in_flight = 0;
  std::string flush_bytes = "0";
  bool ec_pin_workers = true;
  std::string dma_arena = "512M";
  uint32_t nvme_queue_depth = 64;
  std::string nvme_host_memory = "8M";
  std::string nvme_page_size = "4K";
  uint32_t nvme_mdts = 8;
  bool nvme_direct = true;
  std::string rebuild_rate = "0";
  std::string repair_delay = "10m";
  bool start_with_missing_devices = false;
  double scrub_interval_hours = 168;
  std::string scrub_rate = "32M";
  bool scrub_repair = true;
  uint32_t cxl_log_capacity = 64;
  double cxl_poll_interval = 1.0;
  std::string cxl_interrupt_mode = "msi";
  std::string cxl_media_error = "rebuild";
  std::string cxl_module_critical = "evacuate";
  std::string cxl_fatal = "fail";
  std::string cxl_other = "count";
  uint32_t cxl_life_used_critical = 95;
  int cxl_temperature_critical = 85;
  bool rebuild_catalog = false;
  bool check_catalog = false;
  bool json = false;
  std::string fs_reserve = "256M";
  std::vector<std::string> fault_inject;
  uint64_t fault_seed = 1;
  std::string fault_power_cut_journal;
};

absl::Status FlagError(absl::string_view flag, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.message()));
}

// A size as operators write it ("1G", "4K", "0"), or InvalidArgument naming `flag`.
absl::StatusOr<uint64_t> SizeFlag(absl::string_view flag, const std::string& text) {
  absl::StatusOr<uint64_t> v = ParseSize(text);
  if (!v.ok()) return FlagError(flag, v.status());
  return *v;
}

// A duration as operators write it: "10m", "30s", "1h30m", "0" (which means `zero`, for the
// message). InvalidArgument naming `flag` for anything else, and for a negative or infinite
// one.
absl::StatusOr<absl::Duration> DurationFlag(absl::string_view flag, const std::string& text,
                                            absl::string_view zero) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": \"", text,
        "\" is not a duration; write a number with a unit, e.g. 30s, 10m or 1h (0: ", zero, ")"));
  }
  if (d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", text, "\" is negative"));
  }
  return d;
}

void AddStoreFlags(CLI::App& app, Flags& f) {
  app.add_option("--data-dir", f.data_dir, "Directory for the catalog and namespace files")
      ->capture_default_str();
  app.add_option("--devices", f.devices, "Number of devices (namespace files) to create")
      ->capture_default_str();
  app.add_option("--device-size", f.device_size, "Size of each new device (e.g. 1G)")
      ->capture_default_str();
  app.add_option("--lba-size", f.lba_size, "LBA size of new devices")->capture_default_str();
  app.add_option("--block-size", f.block_size, "Default block size of new objects")
      ->capture_default_str();
  app.add_option("--data-blocks", f.data_blocks, "Default M of new objects")->capture_default_str();
  app.add_option("--parity-blocks", f.parity_blocks, "Default K of new objects")
      ->capture_default_str();
  app.add_option("--max-stripe-memory", f.max_stripe_memory,
                 "Largest stripe ((M+K) x block size) a request may hold in memory")
      ->capture_default_str();
  app.add_option("--fs-reserve", f.fs_reserve,
                 "Bytes kept free on the file system(s) under the data dir for the catalog and "
                 "deletes: an encode or update that would leave less is refused "
                 "(RESOURCE_EXHAUSTED) before it writes; a repair may use half of it")
      ->capture_default_str();
  app.add_option("--flush-bytes", f.flush_bytes,
                 "An encode or update also flushes the devices it wrote to each time it has "
                 "written this much more (blocks and parity, e.g. 1G), besides the flush before "
                 "its commit. 0: that flush only, one per object")
      ->capture_default_str();
  app.add_flag("--start-with-missing-devices", f.start_with_missing_devices,
               "Start even when more devices cannot be used than the fewest parity blocks of "
               "any stored object, marking them down (by default ecd refuses: a missing mount "
               "or a wrong path is likelier than that many dead disks)");
}

void AddMemoryFlags(CLI::App& app, Flags& f) {
  app.add_option("--memory-limit", f.memory_limit,
                 "Memory of ecd's buffers: the devices' DMA pools plus every request's stripe "
                 "buffers, after a fixed 96M for gRPC, the catalog and code (e.g. 2G; 0 = no "
                 "limit). Requests wait for memory rather than fail (docs/limits.md)")
      ->capture_default_str();
  app.add_option("--dma-arena", f.dma_arena,
                 "Up to this much of the stripe-memory budget is one DMA arena, mapped at start "
                 "and registered with every device's io_uring (fixed buffers, resident from the "
                 "start; devices x the arena count against RLIMIT_MEMLOCK); stripe buffers beyond "
                 "it are mapped per request. 0: no arena")
      ->capture_default_str();
  app.add_option("--max-memory-waiters", f.max_memory_waiters,
                 "Requests that may wait for stripe memory at once; more are refused "
                 "(RESOURCE_EXHAUSTED)")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--memory-wait", f.memory_wait_seconds,
                 "Seconds a request may wait for stripe memory before it is refused")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--ec-workers", f.ec_workers, "Threads of the erasure-coding engine (1..256)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--stripes-in-flight", f.stripes_in_flight,
                 "Stripe buffers one encode, read or recover (scrub and rebuild jobs too) keeps "
                 "at most, 2..64: the depth of its pipeline. 0: each picks its own (encode "
                 "--ec-workers + 3, read 3, recover 4). With --memory-limit a request gets at "
                 "most a quarter of it (docs/limits.md)")
      ->check([](const std::string& text) -> std::string {
        size_t n = 0;
        if (!absl::SimpleAtoi(text, &n) || n == 1 || n > store::kMaxStripesInFlight) {
          return absl::StrCat("must be 0 or 2..", store::kMaxStripesInFlight);
        }
        return "";
      })
      ->capture_default_str();
  app.add_option("--ec-pin-workers", f.ec_pin_workers,
                 "Pin each erasure-coding worker to a CPU of its own when --ec-workers (2 or "
                 "more) equals the number of CPUs ecd may use")
      ->capture_default_str();
}

void AddNvmeFlags(CLI::App& app, Flags& f) {
  app.add_option("--nvme-queue-depth", f.nvme_queue_depth,
                 "Entries of each device's NVMe queue pair and io_uring ring (power of two)")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  app.add_option("--nvme-host-memory", f.nvme_host_memory,
                 "DMA buffer pool per device (bounds the memory a device's I/O uses)")
      ->capture_default_str();
  app.add_option("--nvme-page-size", f.nvme_page_size, "Host memory page size (CC.MPS), 4K..64K")
      ->capture_default_str();
  app.add_option("--nvme-mdts", f.nvme_mdts,
                 "Maximum data transfer size, 2^N x 4 KiB per command (8 = 1 MiB; at most 10 "
                 "with 4K pages, 14 with 64K)")
      ->check(CLI::Range(1, 14))
      ->capture_default_str();
  app.add_option("--nvme-direct", f.nvme_direct,
                 "Open namespaces with O_DIRECT where the file system supports it")
      ->capture_default_str();
}

void AddServingFlags(CLI::App& app, Flags& f) {
  app.add_option("--listen", f.listen, "TCP address to serve gRPC on (port 0 picks one)")
      ->capture_default_str();
  app.add_option("--unix-socket", f.unix_socket,
                 "Also serve gRPC on this Unix socket path, mode 0660 (the owner and group); "
                 "default DATA_DIR/ecd.sock, 'none' for no socket");
  app.add_option("--tls-cert", f.tls_cert, "TLS: the server certificate chain (PEM) for --listen");
  app.add_option("--tls-key", f.tls_key, "TLS: the server certificate's private key (PEM)");
  app.add_option("--tls-client-ca", f.tls_client_ca,
                 "Mutual TLS: require client certificates signed by this CA (PEM)");
  app.add_flag("--insecure", f.insecure,
               "Allow plaintext gRPC on a non-loopback --listen address (not recommended)");
  app.add_option("--tokens-file", f.tokens_file,
                 "Bearer tokens, one `TOKEN ROLE [NAME]` a line; every call then needs one "
                 "(docs/security.md). SIGHUP reloads it");
  app.add_option("--port-file", f.port_file, "Write the bound TCP port to this file");
  app.add_option("--metrics-listen", f.metrics_listen,
                 "host:port serving /metrics (Prometheus), /healthz and /readyz over HTTP; "
                 "port 0 picks one; empty turns it off")
      ->capture_default_str();
  app.add_option("--metrics-port-file", f.metrics_port_file,
                 "Write the bound metrics HTTP port to this file");
  app.add_option("--max-connection-idle", f.max_connection_idle,
                 "Close a gRPC connection that has had no call for this long (e.g. 5m, 30s; 0: "
                 "never)")
      ->capture_default_str();
  app.add_option("--stream-idle-timeout", f.stream_idle_timeout,
                 "Cancel an Encode or Update whose client sends nothing, or a Read or block get "
                 "whose client takes nothing, for this long (DEADLINE_EXCEEDED), so that it "
                 "gives back its memory and locks (e.g. 60s; 0: never)")
      ->capture_default_str();
  app.add_option("--max-connections", f.max_connections,
                 "Most gRPC TCP connections open at once (plaintext listener); more are closed "
                 "at once. 0: what the open files limit leaves after start-up, less 64")
      ->capture_default_str();
  app.add_option("--log-level", f.log_level, "debug, info, warn or error")->capture_default_str();
}

void AddRepairFlags(CLI::App& app, Flags& f) {
  app.add_option("--rebuild-rate", f.rebuild_rate,
                 "Bandwidth limit of the repair (rebuilds, evacuations, media-range moves) in "
                 "bytes/s (e.g. 200M); 0 = none. A rate set with `ecctl repair rate` is kept in "
                 "the catalog and wins over this")
      ->capture_default_str();
  app.add_option("--repair-delay", f.repair_delay,
                 "How long a device that went down on its own (not opened, writes failing, cut "
                 "short or wrongly labelled) may stay down before it is failed and its blocks "
                 "are rebuilt elsewhere (e.g. 10m, 30s, 1h; 0: at once)")
      ->capture_default_str();
  app.add_option("--scrub-interval-hours", f.scrub_interval_hours,
                 "Hours between background scrub passes over every object (0: no background "
                 "scrub; a store never scrubbed starts one at once)")
      ->check(CLI::Range(0.0, 24.0 * 366))
      ->capture_default_str();
  app.add_option("--scrub-rate", f.scrub_rate,
                 "Bytes/s a background scrub reads (e.g. 32M); 0 = as fast as the devices go")
      ->capture_default_str();
  app.add_option("--scrub-repair", f.scrub_repair,
                 "Background scrubs repair what they find (false: report only)")
      ->capture_default_str();
}

void AddCxlFlags(CLI::App& app, Flags& f) {
  app.add_option("--cxl-log-capacity", f.cxl_log_capacity,
                 "Records each CXL event log of a device holds before it overflows")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_option("--cxl-poll-interval", f.cxl_poll_interval,
                 "Seconds between drains of CXL logs without an interrupt (0: interrupts only)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--cxl-interrupt-mode", f.cxl_interrupt_mode,
                 "Initial event interrupt mode of every log: none, msi or fw")
      ->check(CLI::IsMember({"none", "msi", "fw"}))
      ->capture_default_str();
  const std::tuple<const char*, std::string*, const char*> actions[] = {
      {"--cxl-media-error", &f.cxl_media_error,
       "Action for General Media/DRAM uncorrectable or threshold events"},
      {"--cxl-module-critical", &f.cxl_module_critical,
       "Action for Memory Module replacement-needed, data-loss, life or temperature events"},
      {"--cxl-fatal", &f.cxl_fatal, "Action for Fatal-severity events"},
      {"--cxl-other", &f.cxl_other, "Action for every other event"}};
  const std::vector<std::string> names = repair::PolicyActionNames();
  for (const auto& action : actions) {
    app.add_option(std::get<0>(action), *std::get<1>(action),
                   absl::StrCat(std::get<2>(action), ": ", absl::StrJoin(names, ", ")))
        ->check(CLI::IsMember(names))
        ->capture_default_str();
  }
  app.add_option("--cxl-life-used-critical", f.cxl_life_used_critical,
                 "Life used (percent) at which a memory module counts as critical")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--cxl-temperature-critical", f.cxl_temperature_critical,
                 "Device temperature (C) at which a memory module counts as critical")
      ->capture_default_str();
}

void AddToolAndTestingFlags(CLI::App& app, Flags& f) {
  auto* rebuild = app.add_flag(
      "--rebuild-catalog", f.rebuild_catalog,
      "Rebuild the catalog from the block records on the devices, with ecd stopped, and exit: "
      "the old catalog is kept aside (docs/operations.md, \"The catalog is lost or damaged\")");
  app.add_flag("--check-catalog", f.check_catalog,
               "Compare the catalog with the block records on the devices, with ecd stopped, "
               "change nothing and exit (status 3 when they differ)")
      ->excludes(rebuild);
  app.add_flag("--json", f.json, "With --rebuild-catalog or --check-catalog: the summary as JSON");
  app.add_option("--fault-inject", f.fault_inject,
                 "TESTING ONLY: inject device faults, DEV=SPEC[,DEV=SPEC...] (e.g. "
                 "2=write:eio:p=0.5;read:latency:ms=5); see docs/errors.md")
      ->delimiter(',');
  app.add_option("--fault-seed", f.fault_seed, "Seed of the --fault-inject probabilities")
      ->capture_default_str();
  app.add_option("--fault-power-cut-journal", f.fault_power_cut_journal,
                 "TESTING ONLY: journal the old bytes of every device write in DIR/nvmeN.ns.undo "
                 "until the next flush, so that `ecd-nvme power-cut DIR` after a kill -9 acts "
                 "as a power cut (docs/fuzzing.md)");
}

// --memory-limit as the store's budget: what is left after kFixedMemory (0: no limit).
absl::StatusOr<uint64_t> StoreMemoryLimit(const std::string& text) {
  absl::StatusOr<uint64_t> limit = SizeFlag("--memory-limit", text);
  if (!limit.ok()) return limit.status();
  if (*limit != 0 && *limit <= kFixedMemory) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory-limit must be more than the ", kFixedMemory >> 20,
                     "M ecd keeps for gRPC, the catalog and its code (or 0: no limit)"));
  }
  return *limit == 0 ? 0 : *limit - kFixedMemory;
}

absl::Status ToStoreOptions(const Flags& f, store::StoreOptions& o) {
  o.data_dir = f.data_dir;
  o.device_count = f.devices;
  o.default_data_blocks = f.data_blocks;
  o.default_parity_blocks = f.parity_blocks;
  o.ec_workers = f.ec_workers;
  o.ec_pin_workers = f.ec_pin_workers;
  o.stripes_in_flight = f.stripes_in_flight;
  o.start_with_missing_devices = f.start_with_missing_devices;
  o.memory_waiters = f.max_memory_waiters;
  o.memory_wait = absl::Seconds(f.memory_wait_seconds);
  absl::StatusOr<uint64_t> memory = StoreMemoryLimit(f.memory_limit);
  if (!memory.ok()) return memory.status();
  o.memory_limit = *memory;
  const std::tuple<const char*, const std::string*, uint64_t*> sizes[] = {
      {"--dma-arena", &f.dma_arena, &o.dma_arena_bytes},
      {"--device-size", &f.device_size, &o.device_size},
      {"--fs-reserve", &f.fs_reserve, &o.fs_reserve_bytes},
      {"--block-size", &f.block_size, &o.default_block_size},
      {"--max-stripe-memory", &f.max_stripe_memory, &o.max_stripe_bytes},
      {"--flush-bytes", &f.flush_bytes, &o.flush_bytes}};
  for (const auto& size : sizes) {
    absl::StatusOr<uint64_t> v = SizeFlag(std::get<0>(size), *std::get<1>(size));
    if (!v.ok()) return v.status();
    *std::get<2>(size) = *v;
  }
  absl::StatusOr<uint64_t> lba = SizeFlag("--lba-size", f.lba_size);
  if (!lba.ok()) return lba.status();
  if (*lba > (64u << 10)) return absl::InvalidArgumentError("--lba-size must be at most 64K");
  o.lba_size = static_cast<uint32_t>(*lba);
  return absl::OkStatus();
}

absl::Status ToNvmeOptions(const Flags& f, store::StoreOptions& o) {
  if ((f.nvme_queue_depth & (f.nvme_queue_depth - 1)) != 0) {
    return absl::InvalidArgumentError("--nvme-queue-depth must be a power of two from 2 to 4096");
  }
  o.nvme.controller.queue_entries = f.nvme_queue_depth;
  o.nvme.controller.mdts = f.nvme_mdts;
  o.nvme.controller.direct = f.nvme_direct;
  absl::StatusOr<uint64_t> host_memory = SizeFlag("--nvme-host-memory", f.nvme_host_memory);
  if (!host_memory.ok()) return host_memory.status();
  o.nvme.host_memory_bytes = *host_memory;
  absl::StatusOr<uint64_t> page = ParseSize(f.nvme_page_size);
  if (!page.ok() || *page < 4096 || *page > 65536 || (*page & (*page - 1)) != 0) {
    return absl::InvalidArgumentError("--nvme-page-size must be a power of two from 4K to 64K");
  }
  o.nvme.page_size = static_cast<uint32_t>(*page);
  if (o.nvme.host_memory_bytes < uint64_t{4} * o.nvme.page_size) {
    return absl::InvalidArgumentError("--nvme-host-memory must hold at least 4 pages");
  }
  return absl::OkStatus();
}

absl::StatusOr<LogLevel> ToLogLevel(const std::string& text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warn") return LogLevel::kWarning;
  if (text == "error") return LogLevel::kError;
  return absl::InvalidArgumentError("--log-level must be debug, info, warn or error");
}

absl::Status ToServingOptions(const Flags& f, ServingOptions& o) {
  o.listen = f.listen;
  o.tls = {.cert_file = f.tls_cert,
           .key_file = f.tls_key,
           .client_ca_file = f.tls_client_ca,
           .insecure = f.insecure};
  o.tokens_file = f.tokens_file;
  o.port_file = f.port_file;
  o.metrics_listen = f.metrics_listen;
  o.metrics_port_file = f.metrics_port_file;
  o.max_connections = f.max_connections;
  o.unix_socket = f.unix_socket.empty() ? f.data_dir + "/ecd.sock" : f.unix_socket;
  if (o.unix_socket == "none") o.unix_socket.clear();
  if (o.unix_socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the unix socket path ", o.unix_socket, " is longer than ",
        sizeof(sockaddr_un{}.sun_path) - 1, " bytes; give a shorter --unix-socket (or 'none')"));
  }
  absl::StatusOr<absl::Duration> connection_idle =
      DurationFlag("--max-connection-idle", f.max_connection_idle, "never");
  if (!connection_idle.ok()) return connection_idle.status();
  if (*connection_idle > absl::Milliseconds(INT32_MAX)) {
    return absl::InvalidArgumentError("--max-connection-idle must be at most 596h (24 days)");
  }
  o.max_connection_idle = *connection_idle;
  absl::StatusOr<absl::Duration> stream_idle =
      DurationFlag("--stream-idle-timeout", f.stream_idle_timeout, "never");
  if (!stream_idle.ok()) return stream_idle.status();
  o.stream_idle_timeout = *stream_idle;
  return absl::OkStatus();
}

absl::Status ToRepairOptions(const Flags& f, DaemonOptions& o) {
  absl::StatusOr<uint64_t> rate = SizeFlag("--rebuild-rate", f.rebuild_rate);
  if (!rate.ok()) return rate.status();
  o.repair.rate_bytes_per_sec = *rate;
  absl::StatusOr<absl::Duration> delay = DurationFlag("--repair-delay", f.repair_delay, "at once");
  if (!delay.ok()) return delay.status();
  o.repair.repair_delay = *delay;
  absl::StatusOr<uint64_t> scrub_rate = SizeFlag("--scrub-rate", f.scrub_rate);
  if (!scrub_rate.ok()) return scrub_rate.status();
  o.scrub.rate_bytes_per_sec = *scrub_rate;
  o.scrub.interval = absl::Seconds(f.scrub_interval_hours * 3600);
  o.scrub.repair = f.scrub_repair;
  return absl::OkStatus();
}

// The CXL flags' values were checked by CLI11 (IsMember of PolicyActionNames, Range).
void ToCxlOptions(const Flags& f, DaemonOptions& o) {
  o.policy.media_error = *repair::ParsePolicyAction(f.cxl_media_error);
  o.policy.module_critical = *repair::ParsePolicyAction(f.cxl_module_critical);
  o.policy.fatal = *repair::ParsePolicyAction(f.cxl_fatal);
  o.policy.other = *repair::ParsePolicyAction(f.cxl_other);
  o.policy.life_used_critical = f.cxl_life_used_critical;
  o.policy.temperature_critical = f.cxl_temperature_critical;
  o.cxl.device.capacity.fill(f.cxl_log_capacity);
  o.cxl.poll_interval = absl::Seconds(f.cxl_poll_interval);
  o.cxl.initial_mode = f.cxl_interrupt_mode == "none" ? cxl::InterruptMode::kNone
                       : f.cxl_interrupt_mode == "fw" ? cxl::InterruptMode::kFwInterrupt
                                                      : cxl::InterruptMode::kMsi;
}

absl::Status ToTestingOptions(const Flags& f, TestingOptions& o) {
  o.fault_seed = f.fault_seed;
  o.power_cut_journal = f.fault_power_cut_journal;
  if (f.fault_inject.empty()) return absl::OkStatus();
  o.fault_text = absl::StrJoin(f.fault_inject, ",");
  absl::StatusOr<std::map<uint32_t, std::vector<store::FaultRule>>> faults =
      store::ParseDeviceFaultSpecs(o.fault_text);
  if (!faults.ok()) return FlagError("--fault-inject", faults.status());
  o.faults = *std::move(faults);
  return absl::OkStatus();
}

absl::StatusOr<DaemonOptions> ToOptions(const Flags& f, const Limits& limits) {
  DaemonOptions o;
  o.mode = f.rebuild_catalog ? DaemonMode::kRebuildCatalog
           : f.check_catalog ? DaemonMode::kCheckCatalog
                             : DaemonMode::kServe;
  o.json = f.json;
  absl::StatusOr<LogLevel> level = ToLogLevel(f.log_level);
  if (!level.ok()) return level.status();
  o.log_level = *level;
  o.limits = limits;
  o.store.max_name_length = limits.max_name_length;
  if (absl::Status s = ToStoreOptions(f, o.store); !s.ok()) return s;
  if (absl::Status s = ToNvmeOptions(f, o.store); !s.ok()) return s;
  if (absl::Status s = ToServingOptions(f, o.serving); !s.ok()) return s;
  if (absl::Status s = ToRepairOptions(f, o); !s.ok()) return s;
  ToCxlOptions(f, o);
  if (absl::Status s = ToTestingOptions(f, o.testing); !s.ok()) return s;
  return o;
}

}  // namespace

absl::StatusOr<DaemonArgs> ParseDaemonArgs(const std::vector<std::string>& argv) {
  Flags f;
  Limits limits;
  CLI::App app{"ecd: erasure-coding storage daemon"};
  app.set_config("--config", "", "Read options from an INI/TOML file (key = value, flag names)");
  // A key ecd does not know is a typo whose setting would silently not apply.
  app.allow_config_extras(CLI::config_extras_mode::error);
  AddStoreFlags(app, f);
  AddMemoryFlags(app, f);
  AddNvmeFlags(app, f);
  AddServingFlags(app, f);
  AddRepairFlags(app, f);
  AddCxlFlags(app, f);
  LimitFlags limit_flags(app, limits);
  AddToolAndTestingFlags(app, f);
  std::vector<const char*> args;
  args.reserve(argv.size());
  for (const std::string& a : argv) args.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp&) {
    DaemonArgs help;
    help.help = app.help();
    return help;
  } catch (const CLI::CallForAllHelp&) {
    DaemonArgs help;
    help.help = app.help("", CLI::AppFormatMode::All);
    return help;
  } catch (const CLI::ConfigError& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--config: ", e.what(), "; its keys are ecd's flag names without the --, see ecd --help"));
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(absl::StrCat(e.what(), "; see ecd --help"));
  }
  if (absl::Status s = limit_flags.Finish(); !s.ok()) return s;
  absl::StatusOr<DaemonOptions> options = ToOptions(f, limits);
  if (!options.ok()) return options.status();
  DaemonArgs parsed;
  parsed.options = *std::move(options);
  return parsed;
}

}  // namespace ecd::daemon
