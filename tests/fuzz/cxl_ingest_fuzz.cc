// Fuzzes the `ecctl cxl ingest` JSON line parser (lib/repair/health_event_json.h), the
// input an outside agent controls.
//
// Input: byte 0 picks the mode.
// - Even: the rest is one line, parsed as is (any bytes: JSON or not, numbers of any size and
//   sign, strings where numbers belong, nesting).
// - Odd: the rest is a 128-byte record image, a log byte (0..3 used), a device number and a flag
//   byte; the line is what ecd itself prints for that record (RecordToJson, the shape of
//   `cxl monitor`), optionally with "memdev":"memN" added.
//
// Properties checked beyond "no crash" (UBSan included: every number in a line goes through a
// double-to-integer conversion):
// - a line that parses gives an event whose description is the line, whose DPA has its flag bits
//   clear and whose severity is 0..3;
// - round trip: for every record DecodeRecord accepts, ingesting its JSON line gives the same
//   policy input as draining the raw record (HealthEventFromRecord): kind, device, log,
//   severity, the four header flags, descriptor, health, media and additional status, life used,
//   temperature, and the DPA (exact below 2^53; JSON numbers are doubles, so above that within a
//   double's rounding).
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "lib/cxl/event_record.h"
#include "lib/repair/cxl_monitor.h"
#include "lib/repair/health_event_json.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd {
namespace {

void CheckSane(const repair::HealthEvent& e, const std::string& line) {
  FUZZ_CHECK(e.description == line);
  FUZZ_CHECK((e.dpa & ~cxl::kDpaMask) == 0);
  FUZZ_CHECK(e.severity >= 0 && e.severity <= 3);
}

void RoundTrip(fuzz::Reader& in, bool add_memdev) {
  const std::vector<uint8_t> image = in.Bytes(cxl::kRecordSize);
  absl::StatusOr<cxl::EventRecord> rec = cxl::DecodeRecord(image);
  if (!rec.ok()) return;
  const auto log = static_cast<cxl::EventLog>(in.U8() % 4);
  const uint32_t device = in.U32();
  constexpr uint32_t kDefaultDevice = 7;
  std::string line = cxl::RecordToJson(*rec, cxl::EventLogName(log));
  if (add_memdev) line.insert(1, absl::StrCat("\"memdev\":\"mem", device, "\","));
  absl::StatusOr<repair::HealthEvent> got = repair::HealthEventFromJson(line, kDefaultDevice);
  FUZZ_CHECK(got.ok());
  CheckSane(*got, line);
  const repair::HealthEvent want =
      repair::HealthEventFromRecord(add_memdev ? device : kDefaultDevice, log, *rec);
  FUZZ_CHECK(got->kind == want.kind);
  FUZZ_CHECK(got->device == want.device);
  FUZZ_CHECK(got->log == want.log);
  FUZZ_CHECK(got->severity == want.severity);
  FUZZ_CHECK(got->permanent == want.permanent);
  FUZZ_CHECK(got->maintenance_needed == want.maintenance_needed);
  FUZZ_CHECK(got->performance_degraded == want.performance_degraded);
  FUZZ_CHECK(got->replacement_needed == want.replacement_needed);
  FUZZ_CHECK(got->descriptor == want.descriptor);
  FUZZ_CHECK(got->health_status == want.health_status);
  FUZZ_CHECK(got->media_status == want.media_status);
  FUZZ_CHECK(got->additional_status == want.additional_status);
  FUZZ_CHECK(got->life_used == want.life_used);
  FUZZ_CHECK(got->temperature == want.temperature);
  if (want.dpa < (uint64_t{1} << 53)) {
    FUZZ_CHECK(got->dpa == want.dpa);
  } else {  // the double's rounding, then bits 5:0 cleared
    const double diff = std::fabs(static_cast<double>(got->dpa) - static_cast<double>(want.dpa));
    FUZZ_CHECK(diff <= static_cast<double>(want.dpa) * 0x1p-52 + 64);
  }
}

}  // namespace
}  // namespace ecd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  ecd::fuzz::Reader in(data + 1, size - 1);
  if ((data[0] & 1) != 0) {
    ecd::RoundTrip(in, (data[0] & 2) != 0);
    return 0;
  }
  const std::string line(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<ecd::repair::HealthEvent> e = ecd::repair::HealthEventFromJson(line, 3);
  if (e.ok()) {
    ecd::CheckSane(*e, line);
  } else {
    FUZZ_CHECK(e.status().code() == absl::StatusCode::kInvalidArgument);
  }
  return 0;
}
