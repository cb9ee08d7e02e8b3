// ecd: the erasure-coding storage daemon. Parses its flags (or a config file) into options,
// then either runs an offline catalog tool or starts the Daemon and serves until SIGTERM.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "daemon/catalog_tool.h"
#include "daemon/daemon.h"
#include "daemon/daemon_options.h"
#include "daemon/request_parse.h"
#include "lib/store/data_dir_lock.h"
#include "lib/util/log.h"
#include "lib/util/malloc_policy.h"

namespace {

// A refusal of the command line or of what it names: one line, exit status 2.
int UsageError(absl::string_view message) {
  std::fprintf(stderr, "ecd: %.*s\n", static_cast<int>(message.size()), message.data());
  return 2;
}

// --rebuild-catalog or --check-catalog, holding the data dir's lock.
int RunTool(const ecd::daemon::DaemonOptions& options) {
  absl::StatusOr<std::unique_ptr<ecd::store::DataDirLock>> lock =
      ecd::store::DataDirLock::Acquire(options.store.data_dir);
  if (!lock.ok()) {
    ecd::Log(ecd::LogLevel::kError, "%s", lock.status().message());
    return 1;
  }
  return ecd::daemon::RunCatalogTool(
      options.mode == ecd::daemon::DaemonMode::kRebuildCatalog ? ecd::daemon::CatalogTool::kRebuild
                                                               : ecd::daemon::CatalogTool::kCheck,
      options.store.data_dir, ecd::daemon::NamespaceFactoryFor(options.store.nvme, options.testing),
      options.json);
}

int Main(int argc, char** argv) {
  ecd::ApplyMallocPolicy();
  absl::StatusOr<ecd::daemon::DaemonArgs> args =
      ecd::daemon::ParseDaemonArgs(std::vector<std::string>(argv, argv + argc));
  if (!args.ok()) return UsageError(args.status().message());
  if (args->help) {
    std::fputs(args->help->c_str(), stdout);
    return 0;
  }
  ecd::daemon::DaemonOptions& options = args->options;
  ecd::daemon::RouteProtobufLogs();
  ecd::MinLogLevel() = static_cast<int>(options.log_level);
  if (options.mode != ecd::daemon::DaemonMode::kServe) return RunTool(options);
  // gRPC's log lines go to ecd's, and tell the server's watchdog when a listener stops.
  ecd::daemon::InstallGrpcLog();
  absl::StatusOr<std::unique_ptr<ecd::daemon::Daemon>> daemon =
      ecd::daemon::Daemon::Start(std::move(options));
  if (!daemon.ok()) {
    if (absl::IsInvalidArgument(daemon.status())) return UsageError(daemon.status().message());
    ecd::Log(ecd::LogLevel::kError, "%s", daemon.status().message());
    return 1;
  }
  (*daemon)->Serve();
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
