// Helpers that more than one of ecctl's command groups use: JSON and time formatting, the
// repair's summary, and the device and rebuild-job calls that devices, repair and status share.
#ifndef ECD_CLIENT_CMD_UTIL_H_
#define ECD_CLIENT_CMD_UTIL_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client_core.h"
#include "ecd/v1/ecd.pb.h"

namespace ecd::client {

// Every --json document: protobuf's JSON mapping, proto field names, every field present.
void PrintJson(const google::protobuf::Message& m, FILE* to = stdout);

// Writes each line and a newline to stdout.
void PrintLines(const std::vector<std::string>& lines);

// online, failing, failed, down or unknown.
const char* StateName(ecd::v1::DeviceState s);

// "2024-05-01 12:00:00 UTC".
std::string UtcTime(int64_t unix_ms);

// "12m5s ago", or "just now" under a second.
std::string Ago(int64_t unix_ms);

// The repair's paragraph in `rebuild ls`, `repair status` and `status`: its state and queue,
// what it did since ecd started, its rate and ETA, the stripes by redundancy left, and why it
// is paused or stalled.
std::vector<std::string> RepairSummary(const ecd::v1::RepairStatus& r);

// "down since 2024-05-01 12:00:00 UTC (12m5s ago): writes kept failing".
std::string DownLine(const ecd::v1::DeviceInfo& d);

// "file system /var/lib/ecd (catalog, devices 0-7): 12.3 GiB free of 50.0 GiB, 256.0 MiB kept
// free (--fs-reserve)", and a warning once new data no longer fits.
std::string FileSystemLine(const ecd::v1::FileSystemInfo& fs);

// Devices.List. `what` names the command in errors.
absl::StatusOr<ecd::v1::ListDevicesResponse> ListDevices(ClientCore& c,
                                                         const std::string& what = "device ls");

// Rebuilds.List: running and queued jobs first, then the newest finished ones. `what` names the
// command in errors.
absl::StatusOr<ecd::v1::ListRebuildsResponse> ListJobs(ClientCore& c,
                                                       const std::string& what = "rebuild ls");

// Rebuilds.Get. `what` names the command in errors.
absl::StatusOr<ecd::v1::RebuildJob> GetJob(ClientCore& c, uint64_t id, const std::string& what);

// Whether the job is done or failed.
bool Finished(const ecd::v1::RebuildJob& j);

// Polls the jobs `ids` until every one has finished, showing the objects they have done on a
// progress line; gives up with DEADLINE_EXCEEDED after --timeout seconds (0: never).
absl::StatusOr<ecd::v1::ListRebuildsResponse> WaitForJobs(ClientCore& c,
                                                          const std::vector<uint64_t>& ids,
                                                          const std::string& label);

// "cauchy" or "vandermonde".
const char* MatrixName(ecd::v1::MatrixType t);

// "M+K".
std::string Shape(const ecd::v1::ObjectInfo& o);

// Objects.List from `request`'s page on: calls `page` with each page in order until the last
// one or an error (`page`'s, or the call's with `what` naming the command).
absl::Status ForEachListPage(ClientCore& c, ecd::v1::ListRequest request, const std::string& what,
                             const std::function<absl::Status(ecd::v1::ListResponse&)>& page);

// Exit code 1 with the one line when a job failed; OK when none did.
absl::Status JobFailure(const ecd::v1::ListRebuildsResponse& jobs);

}  // namespace ecd::client

#endif  // ECD_CLIENT_CMD_UTIL_H_
