// ecctl's command groups: each registers its CLI11 subcommands, whose callbacks select the one
// command to run once the command line is parsed (then with the ClientCore, client_core.h).
#ifndef ECD_CLIENT_COMMANDS_H_
#define ECD_CLIENT_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "client/client_core.h"

namespace ecd::client {

// The command the command line names, run once it parsed. Its status is the failure to report
// (client_core.h: one line, its exit code).
struct Selected {
  std::function<absl::Status(ClientCore&)> run;
};

// Makes `sub` the command to run, with `run`, when the command line names it.
inline void OnRun(CLI::App* sub, Selected& selected, std::function<absl::Status(ClientCore&)> run) {
  sub->callback([&selected, run = std::move(run)] { selected.run = run; });
}

// encode, read, update, recover, scrub, stat, rm, block get (cmd_objects.cc).
void AddObjectCommands(CLI::App& app, Selected& selected);
// ls (cmd_list.cc).
void AddListCommands(CLI::App& app, Selected& selected);
// device ls, fail, online, replace, evacuate (cmd_devices.cc).
void AddDeviceCommands(CLI::App& app, Selected& selected);
// cxl inject, events, clear, policy, stats, ingest, decode (cmd_cxl.cc).
void AddCxlCommands(CLI::App& app, Selected& selected);
// rebuild ls, get, wait; repair status, pause, resume, rate (cmd_repair.cc).
void AddRepairCommands(CLI::App& app, Selected& selected);
// catalog backup (cmd_catalog.cc).
void AddCatalogCommands(CLI::App& app, Selected& selected);
// status (cmd_status.cc).
void AddStatusCommands(CLI::App& app, Selected& selected);

}  // namespace ecd::client

#endif  // ECD_CLIENT_COMMANDS_H_
