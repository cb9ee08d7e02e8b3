// Limits: the configurable input limits of ecd (docs/limits.md), their flags and defaults.
#ifndef ECD_DAEMON_LIMITS_H_
#define ECD_DAEMON_LIMITS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace ecd::daemon {

struct Limits {
  uint64_t max_name_length = 1024;          // bytes of an object name
  uint64_t max_object_size = 1ull << 40;    // bytes of one object (Encode, Update --append)
  uint64_t max_message_size = 16ull << 20;  // bytes of one gRPC message, either way
  uint32_t max_streams_per_client = 32;     // concurrent ecd.v1 calls of one client
  uint32_t max_streams = 128;               // concurrent ecd.v1 calls in all
  uint32_t max_ingest_records = 10000;      // records + lines of one Cxl.Ingest call
};

// Smallest --max-message-size: read responses and ecctl's Encode/Update messages carry up to
// 1 MiB of data each, plus a header.
inline constexpr uint64_t kMinMessageSize = 2ull << 20;

// The flags of `limits` (sizes take K/M/G/T suffixes); call Finish after parsing.
class LimitFlags {
 public:
  LimitFlags(CLI::App& app, Limits& limits);
  // Converts the size flags into `limits` and checks them; InvalidArgument naming the flag.
  absl::Status Finish();

 private:
  Limits& limits_;
  std::string object_size_ = "1T";
  std::string message_size_ = "16M";
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_LIMITS_H_
