// Fuzzes the CXL Events mailbox payload decoders (lib/cxl/mailbox.h): Get Event Records input
// and output, Clear Event Records input, the Event Interrupt Policy and one interrupt settings
// byte.
//
// Input: byte 0 picks the decoder (modulo 5); the rest is the payload, in a buffer of exactly
// its size (so ASan catches any read past it).
//
// Properties checked beyond "no crash":
// - each decoder accepts exactly the payloads mailbox.h documents, and a refusal is OutOfRange
//   for a wrong length and InvalidArgument for a bad field, never anything else (so
//   ReturnCodeForDecodeError never turns a bad payload into Internal Error);
// - an accepted payload re-encodes to itself with the reserved bits and bytes cleared (and, for
//   Get Event Records output, without the bytes after the last record);
// - Decode(Encode(x)) == x for every decoded value.
#include <cstdint>
#include <cstring>
#include <vector>

#include "lib/cxl/mailbox.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd::cxl {
namespace {

void CheckReturnCode(const absl::Status& s) {
  const ReturnCode rc = ReturnCodeForDecodeError(s);
  if (s.ok()) {
    FUZZ_CHECK(rc == ReturnCode::kSuccess);
  } else {
    FUZZ_CHECK(rc == (s.code() == absl::StatusCode::kOutOfRange ? ReturnCode::kInvalidPayloadLength
                                                                : ReturnCode::kInvalidInput));
  }
}

void FuzzGetInput(const std::vector<uint8_t>& p) {
  absl::StatusOr<GetEventRecordsInput> in = GetEventRecordsInput::Decode(p);
  CheckReturnCode(in.status());
  if (p.size() != 1) {
    FUZZ_CHECK(in.status().code() == absl::StatusCode::kOutOfRange);
    return;
  }
  FUZZ_CHECK(in.ok() == IsDefinedEventLog(p[0]));
  if (!in.ok()) {
    FUZZ_CHECK(in.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  FUZZ_CHECK(in->Encode() == p);
  FUZZ_CHECK(!EventLogName(in->log).empty());
}

void FuzzGetOutput(const std::vector<uint8_t>& p) {
  absl::StatusOr<GetEventRecordsOutput> out = GetEventRecordsOutput::Decode(p);
  CheckReturnCode(out.status());
  const size_t header = GetEventRecordsOutput::kHeaderSize;
  const size_t count = p.size() >= header ? (p[0x14] | (p[0x15] << 8)) : 0;
  const size_t need = header + kEventRecordSize * count;
  FUZZ_CHECK(out.ok() == (p.size() >= header && p.size() >= need));
  if (!out.ok()) {
    FUZZ_CHECK(out.status().code() == absl::StatusCode::kOutOfRange);
    return;
  }
  FUZZ_CHECK(out->records.size() == count);
  // Canonical form: bytes after the last record dropped, reserved fields zero.
  std::vector<uint8_t> canonical(p.begin(), p.begin() + static_cast<ptrdiff_t>(need));
  canonical[0] &= GetEventRecordsOutput::kFlagOverflow | GetEventRecordsOutput::kFlagMoreRecords;
  canonical[1] = 0;
  std::memset(&canonical[0x16], 0, header - 0x16);
  const std::vector<uint8_t> encoded = out->Encode();
  FUZZ_CHECK(encoded == canonical);
  absl::StatusOr<GetEventRecordsOutput> again = GetEventRecordsOutput::Decode(encoded);
  FUZZ_CHECK(again.ok() && *again == *out);
}

void FuzzClearInput(const std::vector<uint8_t>& p) {
  absl::StatusOr<ClearEventRecordsInput> in = ClearEventRecordsInput::Decode(p);
  CheckReturnCode(in.status());
  const size_t header = ClearEventRecordsInput::kHeaderSize;
  if (p.size() < header || p.size() != header + 2 * size_t{p[2]}) {
    FUZZ_CHECK(in.status().code() == absl::StatusCode::kOutOfRange);
    return;
  }
  FUZZ_CHECK(in.ok() == IsDefinedEventLog(p[0]));
  if (!in.ok()) {
    FUZZ_CHECK(in.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  FUZZ_CHECK(in->handles.size() == p[2]);
  FUZZ_CHECK(in->clear_all == ((p[1] & ClearEventRecordsInput::kFlagClearAll) != 0));
  std::vector<uint8_t> canonical = p;
  canonical[1] &= ClearEventRecordsInput::kFlagClearAll;
  canonical[3] = canonical[4] = canonical[5] = 0;
  const std::vector<uint8_t> encoded = in->Encode();
  FUZZ_CHECK(encoded == canonical);
  absl::StatusOr<ClearEventRecordsInput> again = ClearEventRecordsInput::Decode(encoded);
  FUZZ_CHECK(again.ok() && *again == *in);
}

uint8_t CanonicalSetting(uint8_t b) { return b & ~uint8_t{0x0C}; }  // bits 3:2 reserved

void FuzzPolicy(const std::vector<uint8_t>& p) {
  absl::StatusOr<EventInterruptPolicy> policy = EventInterruptPolicy::Decode(p);
  CheckReturnCode(policy.status());
  if (p.size() != EventInterruptPolicy::kBaseSize && p.size() != EventInterruptPolicy::kDcdSize) {
    FUZZ_CHECK(policy.status().code() == absl::StatusCode::kOutOfRange);
    return;
  }
  bool reserved_mode = false;
  for (uint8_t b : p) reserved_mode |= (b & InterruptSetting::kModeMask) == 3;
  FUZZ_CHECK(policy.ok() == !reserved_mode);
  if (!policy.ok()) {
    FUZZ_CHECK(policy.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  FUZZ_CHECK(policy->dynamic_capacity.has_value() == (p.size() == EventInterruptPolicy::kDcdSize));
  std::vector<uint8_t> canonical = p;
  for (uint8_t& b : canonical) b = CanonicalSetting(b);
  const std::vector<uint8_t> encoded = policy->Encode();
  FUZZ_CHECK(encoded == canonical);
  absl::StatusOr<EventInterruptPolicy> again = EventInterruptPolicy::Decode(encoded);
  FUZZ_CHECK(again.ok() && *again == *policy);
}

void FuzzSetting(const std::vector<uint8_t>& p) {
  for (uint8_t b : p) {
    absl::StatusOr<InterruptSetting> s = InterruptSetting::Decode(b);
    FUZZ_CHECK(s.ok() == ((b & InterruptSetting::kModeMask) != 3));
    if (!s.ok()) {
      FUZZ_CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
      continue;
    }
    FUZZ_CHECK(s->message_number <= InterruptSetting::kMaxMessageNumber);
    FUZZ_CHECK(s->Encode() == CanonicalSetting(b));
    absl::StatusOr<InterruptSetting> again = InterruptSetting::Decode(s->Encode());
    FUZZ_CHECK(again.ok() && *again == *s);
  }
}

}  // namespace
}  // namespace ecd::cxl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ecd::cxl;
  if (size == 0) return 0;
  // A copy of exactly the payload's size: a read past it is a heap overflow ASan reports.
  const std::vector<uint8_t> payload(data + 1, data + size);
  switch (data[0] % 5) {
    case 0:
      FuzzGetInput(payload);
      break;
    case 1:
      FuzzGetOutput(payload);
      break;
    case 2:
      FuzzClearInput(payload);
      break;
    case 3:
      FuzzPolicy(payload);
      break;
    default:
      FuzzSetting(payload);
      break;
  }
  return 0;
}
