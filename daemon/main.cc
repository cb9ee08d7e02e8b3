// ecd: the erasure-coding storage daemon. Parses flags (or a config file), opens the store,
// serves ecd.v1, grpc.health.v1 and server reflection over gRPC on TCP and optionally a Unix
// socket, and shuts down cleanly on SIGTERM or SIGINT.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "daemon/auth.h"
#include "daemon/catalog_service.h"
#include "daemon/catalog_tool.h"
#include "daemon/cxl_service.h"
#include "daemon/grpc_serving.h"
#include "daemon/http_server.h"
#include "daemon/limits.h"
#include "daemon/metrics.h"
#include "daemon/request_limiter.h"
#include "daemon/request_parse.h"
#include "daemon/rpc_metrics.h"
#include "daemon/services.h"
#include "daemon/stream_idle.h"
#include "daemon/tcp_acceptor.h"
#include "daemon/tls.h"
#include "lib/fault/fault_namespace.h"
#include "lib/fault/power_cut.h"
#include "lib/nvme/dma_map.h"
#include "lib/repair/cxl_monitor.h"
#include "lib/repair/event_policy.h"
#include "lib/repair/repair_planner.h"
#include "lib/repair/scrubber.h"
#include "lib/store/data_dir_lock.h"
#include "lib/store/store.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"
#include "lib/util/malloc_policy.h"
#include "lib/util/size.h"

namespace {

// What --memory-limit keeps back for everything but the store's buffers: gRPC's message and
// stream buffers, the catalog's page cache, thread stacks and code (docs/limits.md).
constexpr uint64_t kFixedMemory = 96ull << 20;

// File descriptors kept free beside the gRPC TCP connections when --max-connections is 0 (the
// default: what the descriptor limit leaves after start-up, less these): for Unix-socket
// clients, the metrics endpoint, the catalog and gRPC itself (docs/limits.md).
constexpr uint64_t kDescriptorReserve = 64;
// The fewest connections the automatic --max-connections allows, however low the limit.
constexpr uint64_t kMinAutoConnections = 8;

// Raises the soft limit on open files to the hard limit: every gRPC connection holds one.
// Logs what it did.
void RaiseDescriptorLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  if (r.rlim_cur >= r.rlim_max) {
    ecd::Log(ecd::LogLevel::kInfo, "open files limit (RLIMIT_NOFILE): %d", r.rlim_cur);
    return;
  }
  const rlim_t before = r.rlim_cur;
  r.rlim_cur = r.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &r) != 0) {
    ecd::Log(ecd::LogLevel::kWarning, "cannot raise the open files limit from %d to %d: %s", before,
             r.rlim_max, std::strerror(errno));
    return;
  }
  ecd::Log(ecd::LogLevel::kInfo, "raised the open files limit (RLIMIT_NOFILE) from %d to %d",
           before, r.rlim_max);
}

// How many connections --max-connections 0 allows: what the descriptor limit leaves after
// the descriptors open now, less kDescriptorReserve.
uint32_t AutoMaxConnections() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  uint64_t open = 0;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++open;
  }
  const uint64_t limit = r.rlim_cur;
  const uint64_t left = limit > open + kDescriptorReserve ? limit - open - kDescriptorReserve : 0;
  return static_cast<uint32_t>(std::clamp<uint64_t>(left, kMinAutoConnections, UINT32_MAX));
}

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
  std::vector<std::string> fault_inject;  // DEV=SPEC items; for tests only.
  uint64_t fault_seed = 1;
  std::string fault_power_cut_journal;  // For tests only.
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "ecd: %s\n", message.c_str());
  return 2;
}

// A duration as operators write it: "10m", "30s", "1h30m", "0" (which means `zero`, for the
// message). InvalidArgument for anything else, and for a negative or infinite one.
absl::StatusOr<absl::Duration> ParseDelay(const std::string& text,
                                          absl::string_view zero = "at once") {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text,
        "\" is not a duration; write a number with a unit, e.g. 30s, 10m or 1h (0: ", zero, ")"));
  }
  if (d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" is negative"));
  }
  return d;
}

// What lstat says `mode` is, for a message.
const char* FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a socket";
}

// Makes `path` free for ecd's Unix socket. Nothing there is fine; a socket that no process
// serves (left by an ecd that was killed) is removed. FailedPrecondition for anything else at
// the path (left alone), for a socket a process still serves (another ecd with another data
// dir, say), and when the socket cannot be checked or removed; the message says what to do.
absl::Status ClearUnixSocketPath(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("--unix-socket ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix-socket ", path, " exists and is not a socket (", FileKind(st.st_mode),
                     "); give another path or remove it"));
  }
  // Non-blocking: a listener with a full backlog answers EAGAIN at once, and is alive too.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot check the unix socket ", path, ": ", std::strerror(errno)));
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), std::min(path.size(), sizeof(addr.sun_path) - 1));
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  if (rc == 0 || err == EAGAIN || err == EINPROGRESS) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix-socket ", path,
                     " is served by another process; give another path, or stop that process"));
  }
  if (err != ECONNREFUSED) {
    return absl::FailedPreconditionError(absl::StrCat("cannot check whether the unix socket ", path,
                                                      " is in use: ", std::strerror(err),
                                                      "; remove it if nothing serves it"));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot remove the old unix socket ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  ecd::ApplyMallocPolicy();
  Flags f;
  CLI::App app{"ecd: erasure-coding storage daemon"};
  app.set_config("--config", "", "Read options from an INI/TOML file (key = value, flag names)");
  app.add_option("--data-dir", f.data_dir, "Directory for the catalog and namespace files")
      ->capture_default_str();
  app.add_option("--devices", f.devices, "Number of devices (namespace files) to create")
      ->capture_default_str();
  app.add_option("--device-size", f.device_size, "Size of each new device (e.g. 1G)")
      ->capture_default_str();
  app.add_option("--lba-size", f.lba_size, "LBA size of new devices")->capture_default_str();
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
  app.add_option("--block-size", f.block_size, "Default block size of new objects")
      ->capture_default_str();
  app.add_option("--data-blocks", f.data_blocks, "Default M of new objects")->capture_default_str();
  app.add_option("--parity-blocks", f.parity_blocks, "Default K of new objects")
      ->capture_default_str();
  app.add_option("--max-stripe-memory", f.max_stripe_memory,
                 "Largest stripe ((M+K) x block size) a request may hold in memory")
      ->capture_default_str();
  app.add_option("--memory-limit", f.memory_limit,
                 "Memory of ecd's buffers: the devices' DMA pools plus every request's stripe "
                 "buffers, after a fixed 96M for gRPC, the catalog and code (e.g. 2G; 0 = no "
                 "limit). Requests wait for memory rather than fail (docs/limits.md)");
  app.add_option("--dma-arena", f.dma_arena,
                 "Up to this much of the stripe-memory budget is one DMA arena, mapped at start "
                 "and registered with every device's io_uring (fixed buffers, resident from the "
                 "start; devices x the arena count against RLIMIT_MEMLOCK); stripe buffers beyond "
                 "it are mapped per request. 0: no arena")
      ->capture_default_str();
  app.add_option("--max-memory-waiters", f.max_memory_waiters,
                 "Requests that may wait for stripe memory at once; more are refused "
                 "(RESOURCE_EXHAUSTED)")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--memory-wait", f.memory_wait_seconds,
                 "Seconds a request may wait for stripe memory before it is refused")
      ->check(CLI::Range(0.0, 86400.0));
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
  app.add_option("--ec-workers", f.ec_workers, "Threads of the erasure-coding engine (1..256)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--flush-bytes", f.flush_bytes,
                 "An encode or update also flushes the devices it wrote to each time it has "
                 "written this much more (blocks and parity, e.g. 1G), besides the flush before "
                 "its commit. 0: that flush only, one per object")
      ->capture_default_str();
  app.add_option("--stripes-in-flight", f.stripes_in_flight,
                 "Stripe buffers one encode, read or recover (scrub and rebuild jobs too) keeps "
                 "at most, 2..64: the depth of its pipeline. 0: each picks its own (encode "
                 "--ec-workers + 3, read 3, recover 4). With --memory-limit a request gets at "
                 "most a quarter of it (docs/limits.md)")
      ->check([](const std::string& text) -> std::string {
        size_t n = 0;
        if (!absl::SimpleAtoi(text, &n) || n == 1 || n > ecd::store::kMaxStripesInFlight) {
          return absl::StrCat("must be 0 or 2..", ecd::store::kMaxStripesInFlight);
        }
        return "";
      })
      ->capture_default_str();
  app.add_option("--ec-pin-workers", f.ec_pin_workers,
                 "Pin each erasure-coding worker to a CPU of its own when --ec-workers (2 or "
                 "more) equals the number of CPUs ecd may use")
      ->capture_default_str();
  app.add_option("--log-level", f.log_level, "debug, info, warn or error")->capture_default_str();
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
  app.add_flag("--start-with-missing-devices", f.start_with_missing_devices,
               "Start even when more devices cannot be used than the fewest parity blocks of "
               "any stored object, marking them down (by default ecd refuses: a missing mount "
               "or a wrong path is likelier than that many dead disks)");
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
  for (auto [flag, target, help] :
       {std::tuple<const char*, std::string*, const char*>{
            "--cxl-media-error", &f.cxl_media_error,
            "Action for General Media/DRAM uncorrectable or threshold events"},
        {"--cxl-module-critical", &f.cxl_module_critical,
         "Action for Memory Module replacement-needed, data-loss, life or temperature events"},
        {"--cxl-fatal", &f.cxl_fatal, "Action for Fatal-severity events"},
        {"--cxl-other", &f.cxl_other, "Action for every other event"}}) {
    app.add_option(flag, *target, std::string(help) + ": ignore, count, rebuild, evacuate, fail")
        ->check(CLI::IsMember({"ignore", "count", "rebuild", "evacuate", "fail"}))
        ->capture_default_str();
  }
  app.add_option("--cxl-life-used-critical", f.cxl_life_used_critical,
                 "Life used (percent) at which a memory module counts as critical")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--cxl-temperature-critical", f.cxl_temperature_critical,
                 "Device temperature (C) at which a memory module counts as critical")
      ->capture_default_str();
  auto* rebuild = app.add_flag(
      "--rebuild-catalog", f.rebuild_catalog,
      "Rebuild the catalog from the block records on the devices, with ecd stopped, and exit: "
      "the old catalog is kept aside (docs/operations.md, \"The catalog is lost or damaged\")");
  app.add_flag("--check-catalog", f.check_catalog,
               "Compare the catalog with the block records on the devices, with ecd stopped, "
               "change nothing and exit (status 3 when they differ)")
      ->excludes(rebuild);
  app.add_flag("--json", f.json, "With --rebuild-catalog or --check-catalog: the summary as JSON");
  app.add_option("--fs-reserve", f.fs_reserve,
                 "Bytes kept free on the file system(s) under the data dir for the catalog and "
                 "deletes: an encode or update that would leave less is refused "
                 "(RESOURCE_EXHAUSTED) before it writes; a repair may use half of it")
      ->capture_default_str();
  ecd::daemon::Limits limits;
  ecd::daemon::LimitFlags limit_flags(app, limits);
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return Fail(absl::StrCat(e.what(), "; see ecd --help"));
  }

  if (absl::Status s = limit_flags.Finish(); !s.ok()) return Fail(std::string(s.message()));
  ecd::daemon::RouteProtobufLogs();

  if (f.log_level == "debug") {
    ecd::MinLogLevel() = static_cast<int>(ecd::LogLevel::kDebug);
  } else if (f.log_level == "warn") {
    ecd::MinLogLevel() = static_cast<int>(ecd::LogLevel::kWarning);
  } else if (f.log_level == "error") {
    ecd::MinLogLevel() = static_cast<int>(ecd::LogLevel::kError);
  } else if (f.log_level != "info") {
    return Fail("--log-level must be debug, info, warn or error");
  }

  absl::StatusOr<absl::Duration> connection_idle = ParseDelay(f.max_connection_idle, "never");
  if (!connection_idle.ok()) {
    return Fail(absl::StrCat("--max-connection-idle: ", connection_idle.status().message()));
  }
  if (*connection_idle > absl::Milliseconds(INT32_MAX)) {
    return Fail("--max-connection-idle must be at most 596h (24 days)");
  }
  absl::StatusOr<absl::Duration> stream_idle = ParseDelay(f.stream_idle_timeout, "never");
  if (!stream_idle.ok()) {
    return Fail(absl::StrCat("--stream-idle-timeout: ", stream_idle.status().message()));
  }
  // gRPC's log lines go to ecd's, and tell the server's watchdog when a listener stops.
  ecd::daemon::InstallGrpcLog();

  // Signals are taken by one thread with sigwait; block them before any thread starts
  // (gRPC starts its own threads when the listener credentials are made).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // Reloads --tokens-file.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Listener and token rules first: a refusal must not wait for the store.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> listen_credentials =
      ecd::daemon::ListenerCredentials(f.listen, {.cert_file = f.tls_cert,
                                                  .key_file = f.tls_key,
                                                  .client_ca_file = f.tls_client_ca,
                                                  .insecure = f.insecure});
  if (!listen_credentials.ok()) return Fail(std::string(listen_credentials.status().message()));
  if (f.insecure && f.tls_cert.empty() && !ecd::daemon::IsLoopbackAddress(f.listen)) {
    ecd::Log(ecd::LogLevel::kWarning,
             "--insecure: serving plaintext gRPC on %s; anyone on the network can read and "
             "change the traffic",
             f.listen);
  }
  ecd::daemon::Authorizer authorizer;
  if (!f.tokens_file.empty()) {
    std::string warning;
    if (absl::Status s = authorizer.Load(f.tokens_file, &warning); !s.ok()) {
      return Fail(absl::StrCat("--tokens-file: ", s.message()));
    }
    if (!warning.empty()) ecd::Log(ecd::LogLevel::kWarning, "%s", warning);
  } else if (!ecd::daemon::IsLoopbackAddress(f.listen)) {
    ecd::Log(ecd::LogLevel::kWarning,
             "no --tokens-file: every client that reaches %s may call every RPC", f.listen);
  }

  // Before the store: the store's hooks count into it until the store is gone.
  ecd::daemon::DaemonMetrics metrics(ECD_VERSION);
  authorizer.SetDeniedHook(metrics.AuthDeniedHook());
  ecd::store::StoreOptions options;
  options.on_ec_task_done = metrics.EcTaskHook();
  options.on_catalog_commit = metrics.CatalogCommitHook();
  options.data_dir = f.data_dir;
  options.device_count = f.devices;
  options.default_data_blocks = f.data_blocks;
  options.default_parity_blocks = f.parity_blocks;
  options.ec_workers = f.ec_workers;
  options.ec_pin_workers = f.ec_pin_workers;
  options.stripes_in_flight = f.stripes_in_flight;
  options.start_with_missing_devices = f.start_with_missing_devices;
  absl::StatusOr<uint64_t> dma_arena = ecd::ParseSize(f.dma_arena);
  if (!dma_arena.ok()) return Fail(absl::StrCat("--dma-arena: ", dma_arena.status().message()));
  options.dma_arena_bytes = *dma_arena;
  options.max_name_length = limits.max_name_length;
  {
    absl::StatusOr<uint64_t> limit = ecd::ParseSize(f.memory_limit);
    if (!limit.ok()) return Fail(absl::StrCat("--memory-limit: ", limit.status().message()));
    if (*limit != 0 && *limit <= kFixedMemory) {
      return Fail(absl::StrCat("--memory-limit must be more than the ", kFixedMemory >> 20,
                               "M ecd keeps for gRPC, the catalog and its code (or 0: no limit)"));
    }
    options.memory_limit = *limit == 0 ? 0 : *limit - kFixedMemory;
    options.memory_waiters = f.max_memory_waiters;
    options.memory_wait = absl::Seconds(f.memory_wait_seconds);
  }
  for (auto [text, out, flag] :
       {std::tuple<std::string*, uint64_t*, const char*>{&f.device_size, &options.device_size,
                                                         "--device-size"},
        {&f.fs_reserve, &options.fs_reserve_bytes, "--fs-reserve"},
        {&f.block_size, &options.default_block_size, "--block-size"},
        {&f.max_stripe_memory, &options.max_stripe_bytes, "--max-stripe-memory"},
        {&f.flush_bytes, &options.flush_bytes, "--flush-bytes"}}) {
    absl::StatusOr<uint64_t> v = ecd::ParseSize(*text);
    if (!v.ok()) return Fail(absl::StrCat(flag, ": ", v.status().message()));
    *out = *v;
  }
  absl::StatusOr<uint64_t> lba = ecd::ParseSize(f.lba_size);
  if (!lba.ok()) return Fail(absl::StrCat("--lba-size: ", lba.status().message()));
  if (*lba > (64u << 10)) return Fail("--lba-size must be at most 64K");
  options.lba_size = static_cast<uint32_t>(*lba);
  if ((f.nvme_queue_depth & (f.nvme_queue_depth - 1)) != 0) {
    return Fail("--nvme-queue-depth must be a power of two from 2 to 4096");
  }
  options.nvme.controller.queue_entries = f.nvme_queue_depth;
  options.nvme.controller.mdts = f.nvme_mdts;
  options.nvme.controller.direct = f.nvme_direct;
  absl::StatusOr<uint64_t> host_memory = ecd::ParseSize(f.nvme_host_memory);
  if (!host_memory.ok()) {
    return Fail(absl::StrCat("--nvme-host-memory: ", host_memory.status().message()));
  }
  options.nvme.host_memory_bytes = *host_memory;
  absl::StatusOr<uint64_t> page = ecd::ParseSize(f.nvme_page_size);
  if (!page.ok() || *page < 4096 || *page > 65536 || (*page & (*page - 1)) != 0) {
    return Fail("--nvme-page-size must be a power of two from 4K to 64K");
  }
  options.nvme.page_size = static_cast<uint32_t>(*page);
  if (options.nvme.host_memory_bytes < 4 * options.nvme.page_size) {
    return Fail("--nvme-host-memory must hold at least 4 pages");
  }

  // One DMA map for the store's stripe buffers and every device, including devices that a
  // fault-injecting factory wraps.
  options.nvme.dma_map = std::make_shared<ecd::nvme::DmaMap>();
  if (!f.fault_inject.empty()) {
    absl::StatusOr<std::map<uint32_t, std::vector<ecd::store::FaultRule>>> faults =
        ecd::store::ParseDeviceFaultSpecs(absl::StrJoin(f.fault_inject, ","));
    if (!faults.ok()) return Fail(absl::StrCat("--fault-inject: ", faults.status().message()));
    ecd::Log(ecd::LogLevel::kWarning,
             "--fault-inject: injecting faults into the I/O of %d device(s) (%s, seed %d); "
             "for testing only, never on data you need",
             faults->size(), absl::StrJoin(f.fault_inject, ","), f.fault_seed);
    options.namespace_factory = ecd::store::FaultInjectingFactory(
        ecd::store::NvmeNamespaceFactory(options.nvme), *std::move(faults), f.fault_seed);
  }
  if (!f.fault_power_cut_journal.empty()) {
    ecd::Log(ecd::LogLevel::kWarning,
             "--fault-power-cut-journal: journaling every device write in %s until the next "
             "flush, for power-cut tests; slower, and for testing only",
             f.fault_power_cut_journal);
    options.namespace_factory = ecd::store::PowerCutJournalFactory(
        options.namespace_factory ? options.namespace_factory
                                  : ecd::store::NvmeNamespaceFactory(options.nvme),
        f.fault_power_cut_journal);
  }

  ecd::repair::RepairPlannerOptions repair_options;
  absl::StatusOr<uint64_t> rate = ecd::ParseSize(f.rebuild_rate);
  if (!rate.ok()) return Fail(absl::StrCat("--rebuild-rate: ", rate.status().message()));
  repair_options.rate_bytes_per_sec = *rate;
  absl::StatusOr<absl::Duration> delay = ParseDelay(f.repair_delay);
  if (!delay.ok()) return Fail(absl::StrCat("--repair-delay: ", delay.status().message()));
  repair_options.repair_delay = *delay;
  ecd::repair::ScrubberOptions scrub_options;
  absl::StatusOr<uint64_t> scrub_rate = ecd::ParseSize(f.scrub_rate);
  if (!scrub_rate.ok()) return Fail(absl::StrCat("--scrub-rate: ", scrub_rate.status().message()));
  scrub_options.rate_bytes_per_sec = *scrub_rate;
  scrub_options.interval = absl::Seconds(f.scrub_interval_hours * 3600);
  scrub_options.repair = f.scrub_repair;

  if (f.unix_socket.empty()) f.unix_socket = f.data_dir + "/ecd.sock";
  if (f.unix_socket == "none") f.unix_socket.clear();
  if (f.unix_socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Fail(absl::StrCat("the unix socket path ", f.unix_socket, " is longer than ",
                             sizeof(sockaddr_un{}.sun_path) - 1,
                             " bytes; give a shorter --unix-socket (or 'none')"));
  }

  // One ecd per data dir: the lock is taken before anything in the data dir is opened (the
  // store, the unix socket) and held until Main returns, after the store has closed.
  absl::StatusOr<std::unique_ptr<ecd::store::DataDirLock>> data_dir_lock =
      ecd::store::DataDirLock::Acquire(f.data_dir);
  if (!data_dir_lock.ok()) {
    ecd::Log(ecd::LogLevel::kError, "%s", data_dir_lock.status().message());
    return 1;
  }
  if (f.rebuild_catalog || f.check_catalog) {
    return ecd::daemon::RunCatalogTool(
        f.rebuild_catalog ? ecd::daemon::CatalogTool::kRebuild : ecd::daemon::CatalogTool::kCheck,
        f.data_dir,
        options.namespace_factory ? options.namespace_factory
                                  : ecd::store::NvmeNamespaceFactory(options.nvme),
        f.json);
  }
  if (!f.unix_socket.empty()) {
    if (absl::Status s = ClearUnixSocketPath(f.unix_socket); !s.ok()) {
      ecd::Log(ecd::LogLevel::kError, "%s", s.message());
      return 1;
    }
  }

  absl::StatusOr<std::unique_ptr<ecd::store::Store>> store = ecd::store::Store::Open(options);
  if (!store.ok()) {
    ecd::Log(ecd::LogLevel::kError, "cannot open the store in %s: %s", f.data_dir,
             store.status().ToString());
    return 1;
  }

  // Plans from the catalog at once: after a restart the repair resumes where it was.
  ecd::repair::RepairPlanner planner(store->get(), repair_options);
  // A device whose flush failed is suspect: move everything off it.
  (*store)->admin().SetSuspectListener([&planner](uint32_t device, const std::string& reason) {
    ecd::repair::RebuildSpec spec;
    spec.kind = ecd::repair::RebuildKind::kEvacuateDevice;
    spec.device = device;
    spec.reason = reason;
    planner.Submit(spec);
  });
  // The listener points at `planner`: taken back before `planner` goes, on every return path.
  absl::Cleanup forget_listener = [&store] { (*store)->admin().SetSuspectListener(nullptr); };
  ecd::repair::Scrubber scrubber(store->get(), scrub_options);
  ecd::daemon::RequestLimiter limiter(limits.max_streams_per_client, limits.max_streams);
  metrics.AttachLimiter(&limiter);
  ecd::daemon::ObjectsService objects(store->get(), &scrubber, scrub_options);
  objects.SetLimits(limits, &limiter);
  ecd::repair::EventPolicyOptions policy_options;
  policy_options.media_error = *ecd::repair::ParsePolicyAction(f.cxl_media_error);
  policy_options.module_critical = *ecd::repair::ParsePolicyAction(f.cxl_module_critical);
  policy_options.fatal = *ecd::repair::ParsePolicyAction(f.cxl_fatal);
  policy_options.other = *ecd::repair::ParsePolicyAction(f.cxl_other);
  policy_options.life_used_critical = f.cxl_life_used_critical;
  policy_options.temperature_critical = f.cxl_temperature_critical;
  ecd::repair::EventPolicy policy(store->get(), &planner, policy_options);
  ecd::repair::CxlMonitorOptions cxl_options;
  cxl_options.device.capacity.fill(f.cxl_log_capacity);
  cxl_options.poll_interval = absl::Seconds(f.cxl_poll_interval);
  cxl_options.initial_mode = f.cxl_interrupt_mode == "none" ? ecd::cxl::InterruptMode::kNone
                             : f.cxl_interrupt_mode == "fw" ? ecd::cxl::InterruptMode::kFwInterrupt
                                                            : ecd::cxl::InterruptMode::kMsi;
  absl::StatusOr<std::vector<ecd::store::DeviceStatus>> device_list =
      (*store)->admin().ListDevices();
  if (!device_list.ok()) {
    ecd::Log(ecd::LogLevel::kError, "cannot list devices: %s", device_list.status().ToString());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<ecd::repair::CxlMonitor>> cxl_monitor =
      ecd::repair::CxlMonitor::Create(&policy, static_cast<uint32_t>(device_list->size()),
                                      cxl_options);
  if (!cxl_monitor.ok()) {
    ecd::Log(ecd::LogLevel::kError, "cannot start the CXL monitor: %s",
             cxl_monitor.status().ToString());
    return 1;
  }
  metrics.AttachStore(store->get());
  metrics.AttachRepair(&planner, &scrubber);
  metrics.AttachCxl(cxl_monitor->get(), &policy);
  std::unique_ptr<ecd::daemon::HttpEndpoint> http;  // Stops before the sources it reads.
  if (!f.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<ecd::daemon::HttpEndpoint>> started =
        ecd::daemon::HttpEndpoint::Start(f.metrics_listen, [&metrics] { return metrics.Expose(); });
    if (!started.ok()) {
      ecd::Log(ecd::LogLevel::kError, "%s", started.status().message());
      return 1;
    }
    http = *std::move(started);
    if (!f.metrics_port_file.empty()) std::ofstream(f.metrics_port_file) << http->port() << "\n";
    ecd::Log(ecd::LogLevel::kInfo, "metrics on http://%s/metrics (port %d)", f.metrics_listen,
             http->port());
  }
  ecd::daemon::CxlService cxl_service(cxl_monitor->get(), &policy);
  cxl_service.SetLimits(limits, &limiter);
  ecd::daemon::DevicesService devices(store->get(), &planner);
  ecd::daemon::CatalogService catalog_service(store->get(), f.data_dir);
  catalog_service.SetLimits(&limiter);
  devices.SetLimits(&limiter);
  ecd::daemon::RebuildsService rebuild_service(&planner);
  rebuild_service.SetLimits(&limiter);
  objects.set_authorizer(&authorizer);
  devices.set_authorizer(&authorizer);
  catalog_service.set_authorizer(&authorizer);
  rebuild_service.set_authorizer(&authorizer);
  cxl_service.set_authorizer(&authorizer);
  grpc::EnableDefaultHealthCheckService(true);
  // Server reflection: grpcurl and other generic clients discover the services without the proto.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // Plaintext TCP is accepted by ecd itself, whose accept loop never gives up (TcpAcceptor);
  // TLS, and an address it does not bind itself (a host name), by gRPC.
  std::unique_ptr<ecd::daemon::TcpAcceptor> acceptor;
  if (f.tls_cert.empty()) {
    absl::StatusOr<std::unique_ptr<ecd::daemon::TcpAcceptor>> bound =
        ecd::daemon::TcpAcceptor::Listen(f.listen);
    if (bound.ok()) {
      acceptor = *std::move(bound);
    } else if (!absl::IsInvalidArgument(bound.status())) {
      ecd::Log(ecd::LogLevel::kError, "%s", bound.status().message());
      return 1;
    }
  }
  const bool own_tcp = acceptor != nullptr;
  // Where gRPC listens on TCP: --listen, then the port the first build bound (a restarted
  // server takes the same port).
  std::string grpc_listen = f.listen;
  ecd::daemon::StreamIdleTimer stream_idle_timer(*stream_idle);  // Outlives every server.
  objects.SetStreamIdleTimer(&stream_idle_timer);
  // Builds and starts the server: at start, and again if a listener gRPC runs stops.
  const auto build = [&](int* tcp_port) -> std::unique_ptr<grpc::Server> {
    grpc::ServerBuilder builder;
    if (!own_tcp) builder.AddListeningPort(grpc_listen, *listen_credentials, tcp_port);
    if (!f.unix_socket.empty()) {
      // Cleared of a stale socket after the data dir was locked; a rebuilt server replaces the
      // socket its predecessor made, and nothing else.
      struct stat st;
      if (::lstat(f.unix_socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        std::remove(f.unix_socket.c_str());
      }
      builder.AddListeningPort(absl::StrCat("unix:", f.unix_socket),
                               grpc::InsecureServerCredentials());
    }
    // Encode and Update messages are checked against the limit by ecd (a message naming the
    // flag); gRPC refuses larger ones itself, at twice the limit.
    builder.SetMaxReceiveMessageSize(
        static_cast<int>(std::min<uint64_t>(2 * limits.max_message_size, INT32_MAX)));
    builder.SetMaxSendMessageSize(static_cast<int>(limits.max_message_size));
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    // First: the metrics then count the status it may change.
    interceptors.push_back(std::make_unique<ecd::daemon::RequestParseFailureFactory>());
    interceptors.push_back(std::make_unique<ecd::daemon::RpcMetricsFactory>(&metrics));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
    // Each call's receive window is a fixed 8 MiB (no BDP growth): enough to keep a loopback or
    // LAN stream busy, and it bounds the bytes gRPC buffers per stream (docs/limits.md).
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
    // A connection with no call for this long is closed (GOAWAY), with its descriptor.
    if (*connection_idle > absl::ZeroDuration()) {
      builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                                 static_cast<int>(absl::ToInt64Milliseconds(*connection_idle)));
    }
    builder.RegisterService(&objects);
    builder.RegisterService(&devices);
    builder.RegisterService(&catalog_service);
    builder.RegisterService(&rebuild_service);
    builder.RegisterService(&cxl_service);
    // The socket is created 0660 (umask 0117 while binding), so it is never open to others.
    const mode_t umask_before = ::umask(0117);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    ::umask(umask_before);
    if (server == nullptr || (!own_tcp && *tcp_port == 0)) {
      // Not another ecd on this data dir (the lock stops that first), and not the TLS files
      // (checked at start): the address.
      ecd::Log(ecd::LogLevel::kError,
               "cannot listen on %s%s%s: is the port taken by another program, or the address "
               "not this host's? Give another --listen",
               grpc_listen, f.unix_socket.empty() ? "" : " or unix:", f.unix_socket);
      return nullptr;
    }
    // Only the owner and its group may connect (the socket's directory should be 0750 too).
    if (!f.unix_socket.empty() && ::chmod(f.unix_socket.c_str(), 0660) != 0) {
      ecd::Log(ecd::LogLevel::kError, "cannot chmod 0660 the unix socket %s: %s", f.unix_socket,
               std::strerror(errno));
      server->Shutdown(std::chrono::system_clock::now());
      return nullptr;
    }
    if (!own_tcp && absl::EndsWith(grpc_listen, ":0")) {
      grpc_listen = absl::StrCat(grpc_listen.substr(0, grpc_listen.size() - 1), *tcp_port);
    }
    return server;
  };
  ecd::daemon::GrpcServing::Options serving_options;
  serving_options.build = build;
  if (own_tcp) {
    const ecd::daemon::TcpAcceptor* tcp = acceptor.get();
    ecd::daemon::SetFdPeerResolver([tcp](int fd) { return tcp->PeerOf(fd); });
  }
  serving_options.acceptor = std::move(acceptor);
  // Every gRPC connection holds a descriptor. Raised here, once every refusal to start has been
  // given (each is one line), and before the limit is used.
  RaiseDescriptorLimit();
  const uint32_t max_connections =
      f.max_connections != 0 ? f.max_connections : AutoMaxConnections();
  serving_options.max_connections = max_connections;
  absl::StatusOr<std::unique_ptr<ecd::daemon::GrpcServing>> started =
      ecd::daemon::GrpcServing::Start(std::move(serving_options));
  if (!started.ok()) {
    ecd::daemon::SetFdPeerResolver(nullptr);
    return 1;  // The build said why.
  }
  std::unique_ptr<ecd::daemon::GrpcServing> serving = *std::move(started);
  // The resolver reads the acceptor, which goes with `serving`.
  absl::Cleanup forget_peers = [] { ecd::daemon::SetFdPeerResolver(nullptr); };
  const int port = serving->tcp_port();
  metrics.AttachServing(serving.get(), &stream_idle_timer);
  serving->SetServing(true);
  if (http) {
    http->SetNotReadyCheck([&serving] { return serving->NotReadyReason(); });
    http->SetReady(true);
  }
  if (!f.port_file.empty()) {
    std::ofstream(f.port_file) << port << "\n";
  }
  ecd::Log(ecd::LogLevel::kInfo, "ecd serving on %s (port %d, %s)%s%s, data dir %s, %s", f.listen,
           port,
           f.tls_cert.empty()        ? "plaintext"
           : f.tls_client_ca.empty() ? "TLS"
                                     : "mutual TLS",
           f.unix_socket.empty() ? "" : " and unix:", f.unix_socket, f.data_dir,
           authorizer.enabled() ? "tokens required" : "no authorization (no --tokens-file)");
  if (own_tcp) {
    ecd::Log(ecd::LogLevel::kInfo,
             "TCP connections: at most %d (--max-connections), idle ones closed after %s "
             "(--max-connection-idle); streams idle for %s are cancelled (--stream-idle-timeout)",
             max_connections, absl::FormatDuration(*connection_idle),
             absl::FormatDuration(*stream_idle));
  }

  std::thread waiter([&] {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
      if (f.tokens_file.empty()) {
        ecd::Log(ecd::LogLevel::kInfo, "SIGHUP received: no --tokens-file to reload");
        continue;
      }
      std::string warning;
      if (absl::Status s = authorizer.Load(f.tokens_file, &warning); !s.ok()) {
        ecd::Log(ecd::LogLevel::kError, "SIGHUP: %s; the previous tokens stay in force",
                 s.message());
        continue;
      }
      if (!warning.empty()) ecd::Log(ecd::LogLevel::kWarning, "%s", warning);
      ecd::Log(ecd::LogLevel::kInfo, "SIGHUP: reloaded the tokens of %s", f.tokens_file);
    }
    ecd::Log(ecd::LogLevel::kInfo, "%s received: shutting down",
             sig == SIGTERM ? "SIGTERM" : "SIGINT");
    serving->SetServing(false);
    if (http) http->SetReady(false);
    // In-flight requests get 10 s to finish; then they are cancelled.
    serving->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  });
  serving->Wait();
  waiter.join();
  // The metrics endpoint reads the server and the idle timer (and /readyz the server): it stops
  // first.
  http.reset();
  serving.reset();
  // The rest stops in reverse order of construction as Main returns: the CXL monitor and the
  // policy, the scrubber and the repair planner (each finishing its current batch), then the
  // store.
  ecd::Log(ecd::LogLevel::kInfo, "ecd stopped serving; finishing background work");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {  // Nothing else may escape: one line, non-zero exit.
    std::fprintf(stderr, "ecd: %s\n", e.what());
    return 1;
  }
}
