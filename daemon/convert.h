// Conversions between lib/store and lib/repair types and the ecd.v1 wire messages, and from
// absl::Status to grpc::Status. The daemon is the only layer that knows both.
#ifndef ECD_DAEMON_CONVERT_H_
#define ECD_DAEMON_CONVERT_H_

#include <grpcpp/support/status.h>

#include <optional>

#include "absl/status/status.h"
#include "ecd/v1/ecd.pb.h"
#include "lib/repair/repair_planner.h"
#include "lib/repair/scrubber.h"
#include "lib/store/store.h"

namespace ecd::daemon {

// Same code (absl and gRPC share the canonical numbering), same message.
grpc::Status ToGrpc(const absl::Status& status);

v1::MatrixType ToProto(ec::MatrixType type);
ec::MatrixType FromProto(v1::MatrixType type);
v1::DeviceState ToProto(store::DeviceState state);
// nullopt for UNSPECIFIED and values this ecd does not know.
std::optional<store::DeviceState> FromProto(v1::DeviceState state);

void ToProto(const store::ObjectRecord& object, v1::ObjectInfo* out);
void ToProto(const store::ObjectStatus& status, bool with_stripes, v1::ObjectInfo* out);
void ToProto(const store::DeviceStatus& device, v1::DeviceInfo* out);
void ToProto(const store::FileSystemUsage& fs, v1::FileSystemInfo* out);
void ToProto(const store::RecoverProgress& progress, v1::RecoverProgress* out);
void ToProto(const store::RecoverProgress& found, v1::ScrubFindings* out);
void ToProto(const repair::ScrubReport& report, v1::ScrubProgress* out);
void ToProto(const repair::ScrubberStatus& status, const repair::ScrubberOptions& options,
             v1::ScrubStatusResponse* out);
void ToProto(const repair::RepairStatus& status, v1::RepairStatus* out);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_CONVERT_H_
