// ecctl ls: the objects under a prefix, a page at a time, as folders by default ('/' as the
// delimiter, like `mc ls`) or every name with --recursive.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "client/client_core.h"
#include "client/cmd_util.h"
#include "client/commands.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/util/printable.h"
#include "lib/util/size.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;

struct ListArgs {
  std::string prefix;
  bool recursive = false;
  int page_size = 0;
};

void PrintHeader() {
  std::printf("%-32s %12s %-6s %-12s %8s %9s\n", "NAME", "SIZE", "SHAPE", "MATRIX", "STRIPES",
              "DEGRADED");
}

void PrintObject(const v1::ObjectInfo& o) {
  std::printf("%-32s %12s %-6s %-12s %8llu %9llu\n", Printable(o.name()).c_str(),
              FormatSize(o.size()).c_str(), Shape(o).c_str(), MatrixName(o.matrix()),
              static_cast<unsigned long long>(o.stripe_count()),
              static_cast<unsigned long long>(o.degraded_stripes()));
}

void PrintPrefix(const std::string& prefix) {
  std::printf("%-32s %12s\n", Printable(prefix).c_str(), "PRE");
}

// One page's objects and common prefixes, merged in name order.
void PrintPage(const v1::ListResponse& page) {
  int o = 0;
  int p = 0;
  while (o < page.objects_size() || p < page.common_prefixes_size()) {
    if (p == page.common_prefixes_size() ||
        (o < page.objects_size() && page.objects(o).name() < page.common_prefixes(p))) {
      PrintObject(page.objects(o++));
    } else {
      PrintPrefix(page.common_prefixes(p++));
    }
  }
}

absl::Status List(ClientCore& c, const ListArgs& a) {
  v1::ListRequest request;
  request.set_prefix(a.prefix);
  if (!a.recursive) request.set_delimiter("/");
  request.set_page_size(a.page_size);
  if (c.globals().json) {  // One document: every page's entries together.
    v1::ListResponse all;
    ECCTL_RETURN_IF_ERROR(ForEachListPage(c, request, "ls", [&](v1::ListResponse& page) {
      for (v1::ObjectInfo& o : *page.mutable_objects()) *all.add_objects() = std::move(o);
      for (std::string& p : *page.mutable_common_prefixes()) all.add_common_prefixes(std::move(p));
      return absl::OkStatus();
    }));
    PrintJson(all);
    return absl::OkStatus();
  }
  PrintHeader();
  return ForEachListPage(c, request, "ls", [](v1::ListResponse& page) {
    PrintPage(page);
    std::fflush(stdout);
    return absl::OkStatus();
  });
}

}  // namespace

void AddListCommands(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<ListArgs>();
  auto* sub = app.add_subcommand(
      "ls", "List objects under a prefix, names up to the next '/' shown once as PRE");
  sub->add_option("PREFIX", a->prefix, "Only names that start with this (e.g. backup/2026/)");
  sub->add_flag("-r,--recursive", a->recursive, "Every name under the prefix, no PRE lines");
  sub->add_option("--page-size", a->page_size, "Entries per List call (1..10000; default 1000)")
      ->check(CLI::Range(1, 10000));
  OnRun(sub, selected, [a](ClientCore& c) { return List(c, *a); });
}

}  // namespace ecd::client
