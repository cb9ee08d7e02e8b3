// HealthEventFromJson: the policy's view of one CXL event printed as a JSON line (by `cxl
// monitor`, the kernel's trace text turned to JSON, or ecd's own RecordToJson).
#ifndef ECD_LIB_REPAIR_HEALTH_EVENT_JSON_H_
#define ECD_LIB_REPAIR_HEALTH_EVENT_JSON_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "lib/repair/event_policy.h"

namespace ecd::repair {

// The policy's view of one JSON line. "memdev": "memN" names device N; without "memdev" the
// event is `default_device`'s. "log" is 0..3 (a number or a string) or Informational, Warning,
// Failure or Fatal in any case. InvalidArgument, saying what is wrong, for a line that is not a
// JSON object, names no cxl_* event, has a "memdev" that is not memN, or a "log" that is missing
// or none of those. Other numbers are read as doubles: a missing or unparsable one is 0, one
// outside its field's range saturates (a negative one is 0), and a DPA above 2^53 comes out
// rounded as a double. Whether the device and the DPA exist is for EventPolicy::Check.
absl::StatusOr<HealthEvent> HealthEventFromJson(const std::string& line, uint32_t default_device);

}  // namespace ecd::repair

#endif  // ECD_LIB_REPAIR_HEALTH_EVENT_JSON_H_
