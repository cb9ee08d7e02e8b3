// ecctl: the operator CLI of ecd. A thin client of the ecd.v1 gRPC API: most subcommands are one
// RPC (`status` is four, the waits poll); errors are one line on stderr and a non-zero exit
// (client/client_core.h, docs/errors.md). Long transfers and waits draw a progress line on stderr
// when it is a terminal (client/progress.h). The commands are in client/cmd_*.cc; here is main:
// the global options, the command groups, and the run of the one command named.
#include <grpc/support/log.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/client_core.h"
#include "client/commands.h"
#include "client/complete.h"
#include "client/help.h"
#include "lib/util/malloc_policy.h"

namespace {

using ecd::client::ClientCore;
using ecd::client::Globals;
using ecd::client::Selected;

void AddGlobalOptions(CLI::App& app, Globals& g) {
  app.formatter(std::make_shared<ecd::client::ExpandingFormatter>());
  app.require_subcommand(1);
  app.fallthrough();  // The global options may come after the subcommand too.
  app.set_help_all_flag("--help-all", "Print the help of every subcommand and exit");
  app.set_version_flag("--version", std::string("ecctl ") + ECD_VERSION);
  app.footer(ecd::client::ExitStatusHelp());
  app.add_option("--addr", g.addr, "ecd address, host:port or unix:/path")->capture_default_str();
  app.add_flag("--json", g.json, "Print machine-readable JSON (shapes: docs/ecctl.md)");
  app.add_flag("-q,--quiet", g.quiet, "Draw no progress line on stderr");
  app.add_option("--timeout", g.timeout, "Give up after this many seconds (0: never)");
  app.add_option("--token", g.token,
                 "Bearer token for an ecd with --tokens-file (beats --token-file and $ECD_TOKEN)");
  app.add_option("--token-file", g.token_file,
                 "Read the bearer token from the first line of this file (beats $ECD_TOKEN)");
  app.add_option("--tls-ca", g.tls_ca, "TLS: the CA (PEM) that signed ecd's certificate");
  app.add_option("--tls-cert", g.tls_cert, "Mutual TLS: this client's certificate (PEM)");
  app.add_option("--tls-key", g.tls_key, "Mutual TLS: this client's private key (PEM)");
  app.add_option("--tls-server-name", g.tls_server_name,
                 "TLS: the name to check ecd's certificate against (default: the --addr host)");
}

// The hidden `__complete -- WORD... CURRENT` of client/ecctl.bash-completion.
void AddComplete(CLI::App& app, Selected& selected) {
  auto words = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("__complete", "")->group("");
  sub->add_option("WORDS", *words, "The words typed so far, the one being completed last");
  ecd::client::OnRun(sub, selected, [&app, words](ClientCore&) {
    for (const std::string& w : ecd::client::CompletionCandidates(app, *words)) {
      std::printf("%s\n", w.c_str());
    }
    return absl::OkStatus();
  });
}

// Help and --version exit 0; anything else is a usage error, one line.
int ParseFailure(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);
  ecd::client::ReportError(absl::StrCat(e.what(), "; see ecctl --help"));
  return ecd::client::kExitUsage;
}

// Runs the command the command line named; its failure is one line and its exit code.
int Run(const Globals& g, const Selected& selected) {
  absl::StatusOr<std::unique_ptr<ClientCore>> core = ClientCore::Create(g);
  absl::Status status = core.ok() ? selected.run(**core) : core.status();
  if (status.ok()) return ecd::client::kExitOk;
  ecd::client::ReportError(std::string(status.message()));
  return ecd::client::ExitCodeOf(status);
}

int Main(int argc, char** argv) {
  // gRPC's own log lines (e.g. a failed TLS handshake) would break the one-line error rule;
  // the status that ends the call says the same. GRPC_VERBOSITY=debug brings them back.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  Globals g;
  Selected selected;
  CLI::App app{"ecctl: operate an ecd erasure-coding storage daemon", "ecctl"};
  AddGlobalOptions(app, g);
  ecd::client::AddObjectCommands(app, selected);
  ecd::client::AddListCommands(app, selected);
  ecd::client::AddDeviceCommands(app, selected);
  ecd::client::AddCxlCommands(app, selected);
  ecd::client::AddRepairCommands(app, selected);
  ecd::client::AddCatalogCommands(app, selected);
  ecd::client::AddStatusCommands(app, selected);
  AddComplete(app, selected);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ParseFailure(app, e);
  }
  return Run(g, selected);
}

}  // namespace

int main(int argc, char** argv) {
  ecd::ApplyMallocPolicy();  // A read receives MiB-sized messages as ecd does (its sys time /4).
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {  // Nothing else may escape: one line, non-zero exit.
    ecd::client::ReportError(e.what());
    return ecd::client::kExitEcd;
  }
}
