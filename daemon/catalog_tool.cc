// The offline catalog tools' output: progress lines, then a summary (text or JSON).
#include "daemon/catalog_tool.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "lib/store/catalog_rebuild.h"

namespace ecd::daemon {
namespace {

std::string Quote(const std::string& s) {
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}}), "\"");
}

std::string JsonList(const std::vector<std::string>& lines) {
  std::vector<std::string> quoted;
  quoted.reserve(lines.size());
  for (const std::string& l : lines) quoted.push_back(Quote(l));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

void PrintLines(const char* title, const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  std::printf("%s:\n", title);
  for (const std::string& l : lines) std::printf("  %s\n", l.c_str());
}

}  // namespace

int RunCatalogTool(CatalogTool tool, const std::string& data_dir,
                   const store::NamespaceFactory& factory, bool json) {
  store::CatalogToolOptions options;
  options.data_dir = data_dir;
  options.namespace_factory = factory;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  options.progress = [tty](const std::string& line) {
    std::fprintf(stderr, "%s%s\n", tty ? "  " : "ecd: ", line.c_str());
  };
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (tool == CatalogTool::kRebuild) {
    absl::StatusOr<store::RebuildReport> r = store::RebuildCatalog(options);
    if (!r.ok()) {
      std::fprintf(stderr, "ecd: --rebuild-catalog: %s\n",
                   std::string(r.status().message()).c_str());
      return 1;
    }
    const store::Resolution& res = r->resolution;
    if (json) {
      std::printf(
          "{\"objects\":%zu,\"blocks\":%lu,\"missing_blocks\":%lu,\"deleted\":%lu,"
          "\"uncommitted\":%lu,\"voided\":%lu,\"committed_through\":%lu,\"kept_aside\":%s,"
          "\"seconds\":%.3f,\"devices\":%s,\"not_restored\":%s}\n",
          res.objects.size(), r->blocks, res.missing_blocks, res.deleted, res.uncommitted,
          res.voided, res.committed_through, Quote(r->kept_aside).c_str(), seconds(),
          JsonList(r->devices).c_str(), JsonList(res.not_restored).c_str());
    } else {
      std::printf(
          "rebuilt the catalog in %.1f s: %zu objects, %lu blocks (%lu without a record, to be "
          "rebuilt by the repair); %lu deleted, %lu uncommitted and %lu voided operations left "
          "out; committed through operation %lu\n",
          seconds(), res.objects.size(), r->blocks, res.missing_blocks, res.deleted,
          res.uncommitted, res.voided, res.committed_through);
      if (!r->kept_aside.empty())
        std::printf("the old catalog is kept as %s\n", r->kept_aside.c_str());
      PrintLines("not restored", res.not_restored);
    }
    return 0;
  }
  absl::StatusOr<store::CheckReport> r = store::CheckCatalog(options);
  if (!r.ok()) {
    std::fprintf(stderr, "ecd: --check-catalog: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  if (json) {
    std::printf(
        "{\"objects\":%lu,\"on_devices\":%zu,\"seconds\":%.3f,\"devices\":%s,"
        "\"differences\":%s}\n",
        r->objects, r->resolution.objects.size(), seconds(), JsonList(r->devices).c_str(),
        JsonList(r->differences).c_str());
  } else {
    std::printf(
        "checked the catalog (%lu objects) against the devices (%zu objects) in %.1f s: "
        "%s\n",
        r->objects, r->resolution.objects.size(), seconds(),
        r->differences.empty() ? "they agree"
                               : absl::StrCat(r->differences.size(), " differences").c_str());
    PrintLines("differences", r->differences);
  }
  return r->differences.empty() ? 0 : 3;
}

}  // namespace ecd::daemon
