// ecctl's catalog commands: catalog backup, a consistent copy of ecd's catalog (ecd.v1.Catalog)
// written to a local file.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/client_core.h"
#include "client/cmd_util.h"
#include "client/commands.h"
#include "client/progress.h"
#include "ecd/tools/ecctl.pb.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/util/size.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;
namespace tools = ecd::tools;
using ecd::FormatSize;

// Streams the catalog's backup into FILE.partial, fsyncs it and renames it to FILE, so that
// FILE is either a whole copy or absent.
absl::Status CatalogBackup(ClientCore& c, const std::string& file) {
  const std::string partial = file + ".partial";
  FILE* out = std::fopen(partial.c_str(), "wb");
  if (out == nullptr) {
    return Error(kExitLocalFile,
                 absl::StrCat("cannot create ", partial, ": ", std::strerror(errno)));
  }
  auto fail_local = [&](const std::string& what) {
    std::fclose(out);
    std::remove(partial.c_str());
    return Error(kExitLocalFile, absl::StrCat(what, " ", partial, ": ", std::strerror(errno)));
  };
  auto context = c.Context();
  auto reader = c.catalog().Backup(context.get(), v1::CatalogBackupRequest());
  ProgressBar progress = c.Progress("catalog backup", ProgressUnit::Bytes());
  v1::CatalogBackupChunk chunk;
  uint64_t got = 0, declared = 0;
  bool done = false;
  while (reader->Read(&chunk)) {
    if (!chunk.data().empty() &&
        std::fwrite(chunk.data().data(), 1, chunk.data().size(), out) != chunk.data().size()) {
      return fail_local("cannot write");
    }
    got += chunk.data().size();
    if (chunk.done()) {
      done = true;
      declared = chunk.size_bytes();
    }
    progress.Update(got, 0);
  }
  progress.Clear();
  const grpc::Status status = reader->Finish();
  if (!status.ok() || !done || declared != got) {
    std::fclose(out);
    std::remove(partial.c_str());
    ECCTL_RETURN_IF_ERROR(c.Check(status, "catalog backup"));
    return Error(kExitEcd, absl::StrCat("catalog backup: the stream ended after ", got,
                                        " bytes without its end; nothing was written, retry"));
  }
  if (std::fflush(out) != 0 || ::fsync(::fileno(out)) != 0) return fail_local("cannot flush");
  std::fclose(out);
  if (std::rename(partial.c_str(), file.c_str()) != 0) {
    return Error(kExitLocalFile,
                 absl::StrCat("cannot rename ", partial, " to ", file, ": ", std::strerror(errno)));
  }
  if (c.globals().json) {
    tools::CatalogBackupResult result;
    result.set_file(file);
    result.set_bytes(got);
    PrintJson(result);
    return absl::OkStatus();
  }
  std::printf("catalog backed up to %s (%s): a SQLite database, a copy as of one moment\n",
              file.c_str(), FormatSize(got).c_str());
  return absl::OkStatus();
}

}  // namespace

void AddCatalogCommands(CLI::App& app, Selected& selected) {
  auto* catalog = app.add_subcommand("catalog", "The catalog of objects and their blocks");
  catalog->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* backup = catalog->add_subcommand(
      "backup", "Copy the catalog, consistent as of one moment, into FILE while ecd serves");
  backup->add_option("FILE", *file, "Where the copy goes (a SQLite database)")->required();
  OnRun(backup, selected, [file](ClientCore& c) { return CatalogBackup(c, *file); });
}

}  // namespace ecd::client
