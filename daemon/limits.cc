// The --max-* flags of ecd and their checks.
#include "daemon/limits.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "lib/util/size.h"

namespace ecd::daemon {

LimitFlags::LimitFlags(CLI::App& app, Limits& limits) : limits_(limits) {
  app.add_option("--max-name-length", limits.max_name_length,
                 "Longest object name in bytes (names are UTF-8 relative paths without '\\\\' or "
                 "control characters)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--max-object-size", object_size_,
                 "Largest object an Encode (or an Update that appends) may make, e.g. 100G")
      ->capture_default_str();
  app.add_option("--max-message-size", message_size_,
                 "Largest gRPC message ecd receives or sends (at least 2M)")
      ->capture_default_str();
  app.add_option("--max-streams-per-client", limits.max_streams_per_client,
                 "Concurrent ecd.v1 calls one client (IP address, or the Unix socket) may have")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--max-streams", limits.max_streams, "Concurrent ecd.v1 calls of all clients")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--max-ingest-records", limits.max_ingest_records,
                 "Most records (raw records plus JSON lines) one Cxl Ingest call may carry")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
}

absl::Status LimitFlags::Finish() {
  absl::StatusOr<uint64_t> object = ParseSize(object_size_);
  if (!object.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-object-size: ", object.status().message()));
  }
  if (*object == 0) return absl::InvalidArgumentError("--max-object-size must be more than 0");
  absl::StatusOr<uint64_t> message = ParseSize(message_size_);
  if (!message.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-message-size: ", message.status().message()));
  }
  if (*message < kMinMessageSize || *message > (1ull << 31) - 1) {
    return absl::InvalidArgumentError(
        "--max-message-size must be from 2M (a read response carries 1 MiB of data) to 2047M");
  }
  limits_.max_object_size = *object;
  limits_.max_message_size = *message;
  return absl::OkStatus();
}

}  // namespace ecd::daemon
