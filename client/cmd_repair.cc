// ecctl's repair commands: rebuild ls, get and wait (the rebuild jobs), and repair status, pause,
// resume and rate (the repair that restores every stripe's redundancy); ecd.v1.Rebuilds.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/client_core.h"
#include "client/cmd_util.h"
#include "client/commands.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/util/size.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;
using ecd::FormatSize;

// ---- repair

// `what` names the command in errors.
absl::StatusOr<v1::RepairStatus> GetRepairStatus(ClientCore& c, const std::string& what) {
  v1::RepairStatus status;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(
      c.rebuilds().GetRepairStatus(context.get(), v1::RepairStatusRequest(), &status), what));
  return status;
}

absl::Status RepairStatus(ClientCore& c) {
  ECCTL_ASSIGN_OR_RETURN(const v1::RepairStatus r, GetRepairStatus(c, "repair status"));
  if (c.globals().json) {
    PrintJson(r);
    return absl::OkStatus();
  }
  PrintLines(RepairSummary(r));
  for (const v1::RepairLevel& l : r.repaired_by_redundancy()) {
    std::printf("  repaired with %u redundancy left: %llu stripes (batches %llu to %llu)\n",
                l.redundancy_left(), static_cast<unsigned long long>(l.stripes()),
                static_cast<unsigned long long>(l.first_batch()),
                static_cast<unsigned long long>(l.last_batch()));
  }
  if (r.last_progress_unix_ms() != 0) {
    std::printf("  last progress: %s (%s)\n", UtcTime(r.last_progress_unix_ms()).c_str(),
                Ago(r.last_progress_unix_ms()).c_str());
  }
  return absl::OkStatus();
}

// `repair pause`, `resume` and `rate`: one SetRepair with what `request` sets. `what` names the
// command in errors.
absl::StatusOr<v1::RepairStatus> SetRepair(ClientCore& c, const v1::SetRepairRequest& request,
                                           const std::string& what) {
  v1::RepairStatus status;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.rebuilds().SetRepair(context.get(), request, &status), what));
  return status;
}

absl::Status RepairPause(ClientCore& c, bool paused) {
  v1::SetRepairRequest request;
  request.set_paused(paused);
  ECCTL_ASSIGN_OR_RETURN(const v1::RepairStatus r,
                         SetRepair(c, request, paused ? "repair pause" : "repair resume"));
  if (c.globals().json) {
    PrintJson(r);
    return absl::OkStatus();
  }
  if (paused) {
    std::printf("repair paused: no repair starts until `ecctl repair resume`; %llu stripes wait\n",
                static_cast<unsigned long long>(r.stripes_queued()));
  } else {
    std::printf("repair resumed: %llu stripes to repair\n",
                static_cast<unsigned long long>(r.stripes_queued()));
  }
  return absl::OkStatus();
}

absl::Status RepairRate(ClientCore& c, const std::string& rate) {
  absl::StatusOr<uint64_t> bytes = ecd::ParseSize(rate);
  if (!bytes.ok()) {
    return Error(kExitUsage,
                 absl::StrCat("repair rate: ", bytes.status().message(), "; 0 means no limit"));
  }
  v1::SetRepairRequest request;
  request.set_rate_bytes_per_sec(*bytes);
  ECCTL_ASSIGN_OR_RETURN(const v1::RepairStatus r,
                         SetRepair(c, request, absl::StrCat("repair rate ", rate)));
  if (c.globals().json) {
    PrintJson(r);
    return absl::OkStatus();
  }
  std::printf("repair rate limit: %s\n", r.rate_bytes_per_sec() == 0
                                             ? "none"
                                             : (FormatSize(r.rate_bytes_per_sec()) + "/s").c_str());
  return absl::OkStatus();
}

// ---- rebuild jobs

absl::Status RebuildList(ClientCore& c) {
  ECCTL_ASSIGN_OR_RETURN(const v1::ListRebuildsResponse response, ListJobs(c));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  PrintLines(RepairSummary(response.repair()));
  std::printf("\n");
  std::printf("%-5s %-16s %-8s %-4s %9s %8s %10s  %s\n", "ID", "KIND", "STATE", "DEV", "OBJECTS",
              "MOVED", "BYTES", "REASON / ERROR");
  for (const v1::RebuildJob& j : response.jobs()) {
    const std::string objects = absl::StrCat(j.objects_done(), "/", j.objects_total());
    std::printf("%-5llu %-16s %-8s %-4u %9s %8llu %10s  %s\n",
                static_cast<unsigned long long>(j.id()), j.kind().c_str(), j.state().c_str(),
                j.device(), objects.c_str(), static_cast<unsigned long long>(j.blocks_moved()),
                FormatSize(j.bytes_moved()).c_str(),
                (j.error().empty() ? j.reason() : j.error()).c_str());
  }
  return absl::OkStatus();
}

absl::Status RebuildGet(ClientCore& c, uint64_t id) {
  ECCTL_ASSIGN_OR_RETURN(const v1::RebuildJob job, GetJob(c, id, absl::StrCat("rebuild get ", id)));
  PrintJson(job);
  return absl::OkStatus();
}

// The ids of the jobs queued or running now.
absl::StatusOr<std::vector<uint64_t>> ActiveJobIds(ClientCore& c) {
  std::vector<uint64_t> ids;
  ECCTL_ASSIGN_OR_RETURN(const v1::ListRebuildsResponse jobs, ListJobs(c));
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (!Finished(j)) ids.push_back(j.id());
  }
  return ids;
}

// "rebuild job 3" or "rebuild jobs 3,4".
std::string JobsLabel(const std::vector<uint64_t>& ids) {
  return absl::StrCat(ids.size() == 1 ? "rebuild job " : "rebuild jobs ", absl::StrJoin(ids, ","));
}

absl::Status RebuildWait(ClientCore& c, std::vector<uint64_t> ids) {
  if (ids.empty()) {
    ECCTL_ASSIGN_OR_RETURN(ids, ActiveJobIds(c));
  }
  ECCTL_ASSIGN_OR_RETURN(const v1::ListRebuildsResponse jobs, WaitForJobs(c, ids, JobsLabel(ids)));
  ECCTL_RETURN_IF_ERROR(JobFailure(jobs));
  if (c.globals().json) {
    PrintJson(jobs);
    return absl::OkStatus();
  }
  if (ids.empty()) std::printf("no rebuild jobs queued or running\n");
  for (const v1::RebuildJob& j : jobs.jobs()) {
    std::printf("rebuild job %llu (%s): %s; %llu/%llu objects, %llu blocks moved (%s)\n",
                static_cast<unsigned long long>(j.id()), j.kind().c_str(), j.state().c_str(),
                static_cast<unsigned long long>(j.objects_done()),
                static_cast<unsigned long long>(j.objects_total()),
                static_cast<unsigned long long>(j.blocks_moved()),
                FormatSize(j.bytes_moved()).c_str());
  }
  return absl::OkStatus();
}

// ---- command line

void AddRebuild(CLI::App& app, Selected& selected) {
  auto* rebuild = app.add_subcommand("rebuild", "Proactive rebuild jobs");
  rebuild->require_subcommand(1);
  OnRun(rebuild->add_subcommand(
            "ls", "The repair's summary, then the rebuild jobs, running and queued first"),
        selected, RebuildList);
  auto id = std::make_shared<uint64_t>(0);
  auto* get = rebuild->add_subcommand("get", "Show one rebuild job as JSON");
  get->add_option("ID", *id, "Job id")->required();
  OnRun(get, selected, [id](ClientCore& c) { return RebuildGet(c, *id); });
  auto ids = std::make_shared<std::vector<uint64_t>>();
  auto* wait = rebuild->add_subcommand(
      "wait", "Wait until rebuild jobs finish (default: every queued or running one)");
  wait->add_option("ID", *ids, "Job ids");
  OnRun(wait, selected, [ids](ClientCore& c) { return RebuildWait(c, *ids); });
}

void AddRepair(CLI::App& app, Selected& selected) {
  auto* repair = app.add_subcommand(
      "repair", "The repair that brings every stripe back to full redundancy on its own");
  repair->require_subcommand(1);
  OnRun(repair->add_subcommand(
            "status", "Queue, progress, rate, ETA and stripes by redundancy left of the repair"),
        selected, RepairStatus);
  OnRun(repair->add_subcommand(
            "pause", "Stop starting repairs (e.g. during maintenance that takes devices away)"),
        selected, [](ClientCore& c) { return RepairPause(c, true); });
  OnRun(repair->add_subcommand("resume", "Start repairing again after a pause"), selected,
        [](ClientCore& c) { return RepairPause(c, false); });
  auto rate = std::make_shared<std::string>();
  auto* sub = repair->add_subcommand(
      "rate", "Set the repair's bandwidth limit (kept across restarts; beats ecd --rebuild-rate)");
  sub->add_option("RATE", *rate, "Bytes per second, e.g. 100M; 0: no limit")->required();
  OnRun(sub, selected, [rate](ClientCore& c) { return RepairRate(c, *rate); });
}

}  // namespace

void AddRepairCommands(CLI::App& app, Selected& selected) {
  AddRebuild(app, selected);
  AddRepair(app, selected);
}

}  // namespace ecd::client
