// Helpers shared by ecctl's command groups (client/cmd_util.h).
#include "client/cmd_util.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/progress.h"
#include "lib/util/size.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;
using ecd::FormatSize;

constexpr absl::Duration kPollInterval = absl::Milliseconds(200);

// running, paused, stalled or idle.
const char* RepairState(const v1::RepairStatus& r) {
  if (r.paused()) return "paused";
  if (!r.stalled().empty()) return "stalled";
  return r.stripes_queued() > 0 ? "running" : "idle";
}

// "0: 3, 1: 117, 2: 4000".
std::string ByRedundancy(const v1::RepairStatus& r) {
  std::vector<std::string> parts;
  parts.reserve(r.stripes_by_redundancy_size());
  for (int left = 0; left < r.stripes_by_redundancy_size(); ++left) {
    parts.push_back(absl::StrCat(left, ": ", r.stripes_by_redundancy(left)));
  }
  return parts.empty() ? "no stripes" : absl::StrJoin(parts, ", ");
}

bool AllFinished(const v1::ListRebuildsResponse& jobs) {
  return std::all_of(jobs.jobs().begin(), jobs.jobs().end(), Finished);
}

}  // namespace

void PrintJson(const google::protobuf::Message& m, FILE* to) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  std::fprintf(to, "%s\n", out.c_str());
}

void PrintLines(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
}

const char* StateName(v1::DeviceState s) {
  switch (s) {
    case v1::DEVICE_STATE_ONLINE:
      return "online";
    case v1::DEVICE_STATE_FAILING:
      return "failing";
    case v1::DEVICE_STATE_FAILED:
      return "failed";
    case v1::DEVICE_STATE_DOWN:
      return "down";
    default:
      return "unknown";
  }
}

std::string UtcTime(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

std::string Ago(int64_t unix_ms) {
  const absl::Duration d = absl::Now() - absl::FromUnixMillis(unix_ms);
  if (d < absl::Seconds(1)) return "just now";
  return absl::StrCat(absl::FormatDuration(absl::Trunc(d, absl::Seconds(1))), " ago");
}

std::vector<std::string> RepairSummary(const v1::RepairStatus& r) {
  std::vector<std::string> lines;
  std::string head =
      absl::StrCat("repair: ", RepairState(r), "; ", r.stripes_queued(), " stripes to repair");
  if (r.stripes_waiting() > 0) {
    absl::StrAppend(&head, ", ", r.stripes_waiting(), " waiting for down devices (repair delay ",
                    absl::FormatDuration(absl::Seconds(r.delay_seconds())), ")");
  }
  lines.push_back(head);
  std::string done =
      absl::StrCat("  since ecd started: ", r.stripes_repaired(), " stripes, ", r.blocks_repaired(),
                   " blocks, ", FormatSize(r.bytes_repaired()), " repaired");
  if (r.stripes_lost() > 0) {
    absl::StrAppend(&done, "; ", r.stripes_lost(),
                    " stripes lost (fewer than M good blocks: cannot be repaired)");
  }
  lines.push_back(done);
  lines.push_back(absl::StrCat(
      "  rate ", FormatRate(ProgressUnit::Bytes(), r.bytes_per_sec()), " (limit ",
      r.rate_bytes_per_sec() == 0 ? "none" : FormatSize(r.rate_bytes_per_sec()) + "/s", "), ETA ",
      r.eta_seconds() < 0 ? "unknown" : FormatEta(static_cast<double>(r.eta_seconds()))));
  lines.push_back(absl::StrCat("  stripes by redundancy left: ", ByRedundancy(r)));
  if (r.paused()) {
    lines.push_back("  paused: no repair starts until `ecctl repair resume`");
  }
  if (!r.stalled().empty()) lines.push_back(absl::StrCat("  stalled: ", r.stalled()));
  return lines;
}

std::string DownLine(const v1::DeviceInfo& d) {
  return absl::StrCat("down since ", UtcTime(d.down_since_unix_ms()), " (",
                      Ago(d.down_since_unix_ms()), "): ", d.down_reason());
}

std::string FileSystemLine(const v1::FileSystemInfo& fs) {
  std::vector<std::string> holds;
  if (fs.catalog()) holds.push_back("catalog");
  std::vector<std::string> runs;  // "0-7", "9"
  for (int i = 0; i < fs.devices_size();) {
    int j = i;
    while (j + 1 < fs.devices_size() && fs.devices(j + 1) == fs.devices(j) + 1) ++j;
    runs.push_back(i == j ? absl::StrCat(fs.devices(i))
                          : absl::StrCat(fs.devices(i), "-", fs.devices(j)));
    i = j + 1;
  }
  if (!runs.empty()) {
    holds.push_back(
        absl::StrCat(fs.devices_size() == 1 ? "device " : "devices ", absl::StrJoin(runs, ", ")));
  }
  std::string line =
      absl::StrCat("file system ", fs.path(), " (", absl::StrJoin(holds, ", "),
                   "): ", FormatSize(fs.free_bytes()), " free of ", FormatSize(fs.size_bytes()),
                   ", ", FormatSize(fs.reserve_bytes()), " kept free (--fs-reserve)");
  if (fs.free_bytes() < fs.reserve_bytes() + fs.claimed_bytes()) {
    absl::StrAppend(&line, "; NEARLY FULL: new data is refused (ecctl rm, or free space on it)");
  }
  return line;
}

absl::StatusOr<v1::ListDevicesResponse> ListDevices(ClientCore& c, const std::string& what) {
  v1::ListDevicesResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(
      c.Check(c.devices().List(context.get(), v1::ListDevicesRequest(), &response), what));
  return response;
}

absl::StatusOr<v1::ListRebuildsResponse> ListJobs(ClientCore& c, const std::string& what) {
  v1::ListRebuildsResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(
      c.Check(c.rebuilds().List(context.get(), v1::ListRebuildsRequest(), &response), what));
  return response;
}

absl::StatusOr<v1::RebuildJob> GetJob(ClientCore& c, uint64_t id, const std::string& what) {
  v1::GetRebuildRequest request;
  request.set_id(id);
  v1::RebuildJob job;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.rebuilds().Get(context.get(), request, &job), what));
  return job;
}

bool Finished(const v1::RebuildJob& j) { return j.state() == "done" || j.state() == "failed"; }

absl::StatusOr<v1::ListRebuildsResponse> WaitForJobs(ClientCore& c,
                                                     const std::vector<uint64_t>& ids,
                                                     const std::string& label) {
  ProgressBar progress = c.Progress(label, ProgressUnit::Items("objects"));
  const double timeout = c.globals().timeout;
  const absl::Time deadline =
      timeout > 0 ? absl::Now() + absl::Seconds(timeout) : absl::InfiniteFuture();
  for (;;) {
    v1::ListRebuildsResponse now;
    uint64_t done = 0, total = 0;
    for (uint64_t id : ids) {
      ECCTL_ASSIGN_OR_RETURN(*now.add_jobs(), GetJob(c, id, absl::StrCat("rebuild job ", id)));
      done += now.jobs().rbegin()->objects_done();
      total += now.jobs().rbegin()->objects_total();
    }
    progress.Update(done, total);
    if (AllFinished(now)) return now;
    if (absl::Now() >= deadline) {
      return Error(kExitEcd, absl::StrCat(label, ": DEADLINE_EXCEEDED: still running after ",
                                          timeout, " s (ecctl rebuild ls)"));
    }
    absl::SleepFor(kPollInterval);
  }
}

absl::Status JobFailure(const v1::ListRebuildsResponse& jobs) {
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (j.state() == "failed") {
      return Error(kExitEcd, absl::StrCat("rebuild job ", j.id(), " (", j.kind(),
                                          ") failed: ", j.error(), "; see docs/cxl.md"));
    }
  }
  return absl::OkStatus();
}

const char* MatrixName(v1::MatrixType t) {
  return t == v1::MATRIX_TYPE_VANDERMONDE ? "vandermonde" : "cauchy";
}

std::string Shape(const v1::ObjectInfo& o) {
  return absl::StrCat(o.data_blocks(), "+", o.parity_blocks());
}

absl::Status ForEachListPage(ClientCore& c, v1::ListRequest request, const std::string& what,
                             const std::function<absl::Status(v1::ListResponse&)>& page) {
  for (;;) {
    v1::ListResponse response;
    auto context = c.Context();
    ECCTL_RETURN_IF_ERROR(c.Check(c.objects().List(context.get(), request, &response), what));
    std::string next = response.next_page_token();
    ECCTL_RETURN_IF_ERROR(page(response));
    if (next.empty()) return absl::OkStatus();
    request.set_page_token(std::move(next));
  }
}

}  // namespace ecd::client
