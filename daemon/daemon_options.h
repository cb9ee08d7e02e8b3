// DaemonOptions: everything ecd's command line and config file ask for, parsed and checked by
// one pure function before anything starts. docs/operations.md lists the flags.
#ifndef ECD_DAEMON_DAEMON_OPTIONS_H_
#define ECD_DAEMON_DAEMON_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/limits.h"
#include "daemon/tls.h"
#include "lib/fault/fault_namespace.h"
#include "lib/repair/cxl_monitor.h"
#include "lib/repair/event_policy.h"
#include "lib/repair/repair_planner.h"
#include "lib/repair/scrubber.h"
#include "lib/store/store_options.h"
#include "lib/util/log.h"

namespace ecd::daemon {

// What --memory-limit keeps back for everything but the store's buffers: gRPC's message and
// stream buffers, the catalog's page cache, thread stacks and code (docs/limits.md).
inline constexpr uint64_t kFixedMemory = 96ull << 20;

// What ecd is asked to do besides serving: the offline catalog tools.
enum class DaemonMode {
  kServe,
  kRebuildCatalog,  // --rebuild-catalog
  kCheckCatalog,    // --check-catalog
};

// How ecd serves: gRPC listeners, their security and connection rules, the metrics endpoint.
struct ServingOptions {
  std::string listen = "127.0.0.1:7400";  // gRPC over TCP; port 0 picks one
  std::string unix_socket;                // gRPC over a Unix socket; empty: none
  TlsOptions tls;
  std::string tokens_file;        // empty: no authorization
  std::string port_file;          // where the bound TCP port is written; empty: nowhere
  std::string metrics_listen;     // /metrics, /healthz, /readyz; empty: no HTTP endpoint
  std::string metrics_port_file;  // where the bound HTTP port is written; empty: nowhere
  absl::Duration max_connection_idle = absl::Minutes(5);   // zero: never closed
  absl::Duration stream_idle_timeout = absl::Seconds(60);  // zero: never cancelled
  uint32_t max_connections = 0;  // 0: what the open files limit leaves (docs/limits.md)
};

// Faults injected into the devices' I/O, for tests only.
struct TestingOptions {
  std::map<uint32_t, std::vector<store::FaultRule>> faults;  // by device; empty: none
  std::string fault_text;  // the --fault-inject items as given, for the log
  uint64_t fault_seed = 1;
  std::string power_cut_journal;  // empty: no journal
};

struct DaemonOptions {
  DaemonMode mode = DaemonMode::kServe;
  bool json = false;  // the catalog tools' summary as JSON
  LogLevel log_level = LogLevel::kInfo;
  // The store's options. The daemon fills in what is not a flag: the metrics hooks, the DMA
  // map and the namespace factory (from `testing`).
  store::StoreOptions store;
  repair::RepairPlannerOptions repair;
  repair::ScrubberOptions scrub;
  repair::EventPolicyOptions policy;
  repair::CxlMonitorOptions cxl;
  Limits limits;
  ServingOptions serving;
  TestingOptions testing;
};

// What the command line asks for: run with `options`, or print `help` and exit 0 (--help).
struct DaemonArgs {
  DaemonOptions options;
  std::optional<std::string> help;
};

// Parses ecd's arguments (argv[0] is the program) and the --config file they may name into
// options, checking each. Pure but for reading the config file: nothing is logged, opened or
// started. InvalidArgument with one line that names the flag and says what it takes.
absl::StatusOr<DaemonArgs> ParseDaemonArgs(const std::vector<std::string>& argv);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_DAEMON_OPTIONS_H_
