// ecctl's status command: devices, capacity, objects, damage, repair, rebuild jobs and CXL
// actions at once, from four calls (Devices.List, Objects.List, Rebuilds.List, Cxl.GetStats).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
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

constexpr int kRecentCxlJobs = 5;
constexpr size_t kStatusWidth = 120;  // Job lines are cut to this many columns.

absl::Status AddDevices(ClientCore& c, tools::Status& s) {
  ECCTL_ASSIGN_OR_RETURN(v1::ListDevicesResponse devices, ListDevices(c, "status"));
  for (v1::DeviceInfo& d : *devices.mutable_devices()) {
    d.clear_counters();
    s.set_capacity_bytes(s.capacity_bytes() + d.size_bytes());
    s.set_used_bytes(s.used_bytes() + d.used_bytes());
    s.set_free_bytes(s.free_bytes() + d.free_bytes());
    if (d.state() == v1::DEVICE_STATE_ONLINE) s.set_devices_online(s.devices_online() + 1);
    if (d.state() == v1::DEVICE_STATE_FAILING) s.set_devices_failing(s.devices_failing() + 1);
    if (d.state() == v1::DEVICE_STATE_FAILED) s.set_devices_failed(s.devices_failed() + 1);
    if (d.state() == v1::DEVICE_STATE_DOWN) s.set_devices_down(s.devices_down() + 1);
    *s.add_devices() = std::move(d);
  }
  *s.mutable_file_systems() = devices.file_systems();
  return absl::OkStatus();
}

// The object counts (one Objects.Count: kept counts, never a listing).
absl::Status AddObjects(ClientCore& c, tools::Status& s) {
  v1::CountResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(
      c.Check(c.objects().Count(context.get(), v1::CountRequest(), &response), "status"));
  s.set_objects(response.objects());
  s.set_object_bytes(response.bytes());
  s.set_degraded_objects(response.degraded_objects());
  s.set_degraded_stripes(response.degraded_stripes());
  s.set_lost_stripes(response.lost_stripes());
  return absl::OkStatus();
}

// The jobs and the repair's status (one Rebuilds.List).
absl::Status AddRebuilds(ClientCore& c, tools::Status& s) {
  ECCTL_ASSIGN_OR_RETURN(v1::ListRebuildsResponse jobs, ListJobs(c, "status"));
  *s.mutable_repair() = jobs.repair();
  std::sort(jobs.mutable_jobs()->begin(), jobs.mutable_jobs()->end(),
            [](const v1::RebuildJob& a, const v1::RebuildJob& b) { return a.id() > b.id(); });
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (!Finished(j)) *s.add_rebuilds() = j;
    if (absl::StartsWith(j.reason(), "CXL: ") && s.recent_cxl_jobs_size() < kRecentCxlJobs) {
      *s.add_recent_cxl_jobs() = j;
    }
  }
  std::stable_partition(s.mutable_rebuilds()->begin(), s.mutable_rebuilds()->end(),
                        [](const v1::RebuildJob& j) { return j.state() == "running"; });
  return absl::OkStatus();
}

absl::Status AddCxl(ClientCore& c, tools::Status& s) {
  v1::CxlStats response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(
      c.Check(c.cxl().GetStats(context.get(), v1::CxlStatsRequest(), &response), "status"));
  s.mutable_cxl_counters()->insert(response.counters().begin(), response.counters().end());
  return absl::OkStatus();
}

absl::StatusOr<tools::Status> CollectStatus(ClientCore& c) {
  tools::Status s;
  ECCTL_RETURN_IF_ERROR(AddDevices(c, s));
  ECCTL_RETURN_IF_ERROR(AddObjects(c, s));
  ECCTL_RETURN_IF_ERROR(AddRebuilds(c, s));
  ECCTL_RETURN_IF_ERROR(AddCxl(c, s));
  return s;
}

void PrintStatusDevices(const tools::Status& s) {
  // Down devices are named only when there are some.
  const std::string down =
      s.devices_down() == 0 ? "" : absl::StrCat(", ", s.devices_down(), " down");
  std::printf("devices: %d (%u online, %u failing, %u failed%s); %s capacity, %s used, %s free\n",
              s.devices_size(), s.devices_online(), s.devices_failing(), s.devices_failed(),
              down.c_str(), FormatSize(s.capacity_bytes()).c_str(),
              FormatSize(s.used_bytes()).c_str(), FormatSize(s.free_bytes()).c_str());
  std::printf("  %-4s %-8s %11s %11s %8s\n", "ID", "STATE", "CAPACITY", "USED", "BLOCKS");
  for (const v1::DeviceInfo& d : s.devices()) {
    std::printf("  %-4u %-8s %11s %11s %8llu\n", d.id(), StateName(d.state()),
                FormatSize(d.size_bytes()).c_str(), FormatSize(d.used_bytes()).c_str(),
                static_cast<unsigned long long>(d.blocks()));
    if (d.state() == v1::DEVICE_STATE_DOWN) std::printf("       %s\n", DownLine(d).c_str());
  }
  for (const v1::FileSystemInfo& fs : s.file_systems()) {
    std::printf("%s\n", FileSystemLine(fs).c_str());
  }
}

void PrintStatusObjects(const tools::Status& s) {
  std::printf("objects: %llu (%s); %llu degraded: %llu degraded stripes, %llu lost stripes\n",
              static_cast<unsigned long long>(s.objects()), FormatSize(s.object_bytes()).c_str(),
              static_cast<unsigned long long>(s.degraded_objects()),
              static_cast<unsigned long long>(s.degraded_stripes()),
              static_cast<unsigned long long>(s.lost_stripes()));
}

// "  3    evacuate-device running  dev 7  " and then its progress or its reason, cut to fit.
std::string JobLine(const v1::RebuildJob& j) {
  const std::string head =
      absl::StrFormat("  %-4d %-16s %-8s dev %-3d ", j.id(), j.kind(), j.state(), j.device());
  if (j.state() == "running") {
    const double elapsed = (absl::ToUnixMillis(absl::Now()) - j.started_unix_ms()) / 1000.0;
    return RenderProgress(head, ProgressUnit::Items("objects"), j.objects_done(), j.objects_total(),
                          std::max(elapsed, 0.0), kStatusWidth);
  }
  const std::string why = j.error().empty() ? j.reason() : j.error();
  return (head + why).substr(0, kStatusWidth);
}

void PrintStatusJobs(const tools::Status& s) {
  const auto running =
      std::count_if(s.rebuilds().begin(), s.rebuilds().end(),
                    [](const v1::RebuildJob& j) { return j.state() == "running"; });
  std::printf("rebuild jobs: %lld running, %lld queued\n", static_cast<long long>(running),
              static_cast<long long>(s.rebuilds_size() - running));
  for (const v1::RebuildJob& j : s.rebuilds()) std::printf("%s\n", JobLine(j).c_str());
}

uint64_t Counter(const tools::Status& s, const std::string& name) {
  auto it = s.cxl_counters().find(name);
  return it == s.cxl_counters().end() ? 0 : it->second;
}

void PrintStatusCxl(const tools::Status& s) {
  std::printf("CXL: %llu records; policy actions:",
              static_cast<unsigned long long>(Counter(s, "records")));
  for (const char* action : {"fail", "evacuate", "rebuild", "count", "ignore"}) {
    std::printf(" %llu %s",
                static_cast<unsigned long long>(Counter(s, absl::StrCat("action_", action))),
                action);
  }
  std::printf("\n");
  if (s.recent_cxl_jobs_size() == 0) return;
  std::printf("recent CXL jobs:\n");
  for (const v1::RebuildJob& j : s.recent_cxl_jobs()) std::printf("%s\n", JobLine(j).c_str());
}

absl::Status Status(ClientCore& c) {
  ECCTL_ASSIGN_OR_RETURN(const tools::Status s, CollectStatus(c));
  if (c.globals().json) {
    PrintJson(s);
    return absl::OkStatus();
  }
  PrintStatusDevices(s);
  PrintStatusObjects(s);
  PrintLines(RepairSummary(s.repair()));
  PrintStatusJobs(s);
  PrintStatusCxl(s);
  return absl::OkStatus();
}

}  // namespace

void AddStatusCommands(CLI::App& app, Selected& selected) {
  OnRun(app.add_subcommand("status",
                           "Devices, capacity, objects, damage, repair, rebuild jobs and CXL "
                           "actions at once"),
        selected, Status);
}

}  // namespace ecd::client
