// NVMe SQE/CQE packing and status names.
#include "lib/nvme/command.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "lib/util/enum_table.h"

namespace ecd::nvme {
namespace {

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A status code type and code as one value, for the name table.
constexpr uint16_t StatusKey(uint8_t sct, uint8_t sc) {
  return static_cast<uint16_t>((sct << 8) | sc);
}

constexpr EnumName<uint16_t> kStatusNameEntries[] = {
    {StatusKey(kSctGeneric, kScSuccess), "Successful Completion"},
    {StatusKey(kSctGeneric, kScInvalidOpcode), "Invalid Command Opcode"},
    {StatusKey(kSctGeneric, kScInvalidField), "Invalid Field in Command"},
    {StatusKey(kSctGeneric, kScDataTransferError), "Data Transfer Error"},
    {StatusKey(kSctGeneric, kScInternalError), "Internal Error"},
    {StatusKey(kSctGeneric, kScInvalidNamespace), "Invalid Namespace or Format"},
    {StatusKey(kSctGeneric, kScPrpOffsetInvalid), "PRP Offset Invalid"},
    {StatusKey(kSctGeneric, kScLbaOutOfRange), "LBA Out of Range"},
    {StatusKey(kSctGeneric, kScCapacityExceeded), "Capacity Exceeded"},
    {StatusKey(kSctMedia, kScWriteFault), "Write Fault"},
    {StatusKey(kSctMedia, kScUnrecoveredReadError), "Unrecovered Read Error"},
};
constexpr EnumTable kStatusNames(kStatusNameEntries, "Unknown");
static_assert(kStatusNames.Valid());

}  // namespace

uint16_t NvmeStatus::Field() const {
  return static_cast<uint16_t>(sc | ((sct & 0x7) << 8) | (dnr ? 0x4000 : 0));
}

NvmeStatus NvmeStatus::FromField(uint16_t field) {
  NvmeStatus s;
  s.sc = static_cast<uint8_t>(field & 0xFF);
  s.sct = static_cast<uint8_t>((field >> 8) & 0x7);
  s.dnr = (field & 0x4000) != 0;
  return s;
}

NvmeStatus Failure(uint8_t sc, uint8_t sct) { return NvmeStatus{sct, sc, true}; }

std::string StatusName(uint8_t sct, uint8_t sc) {
  return std::string(kStatusNames.Name(StatusKey(sct, sc)));
}

std::string NvmeStatus::ToString() const {
  return absl::StrFormat("%s (SCT 0x%x, SC 0x%02x%s)", StatusName(sct, sc), sct, sc,
                         dnr ? ", DNR" : "");
}

absl::Status ToAbslStatus(const NvmeStatus& s, const std::string& context) {
  if (s.ok()) return absl::OkStatus();
  const std::string msg = absl::StrFormat("%s: NVMe %s", context, s.ToString());
  if (s.sct == kSctMedia) return absl::DataLossError(msg);
  if (s.sct == kSctGeneric) {
    switch (s.sc) {
      case kScLbaOutOfRange:
        return absl::OutOfRangeError(msg);
      case kScCapacityExceeded:  // The namespace (for a file: its file system) has no room.
        return absl::ResourceExhaustedError(msg);
      case kScInvalidOpcode:
      case kScInvalidField:
      case kScInvalidNamespace:
      case kScPrpOffsetInvalid:
        return absl::InvalidArgumentError(msg);
      default:
        break;
    }
  }
  return absl::InternalError(msg);
}

std::array<uint8_t, 64> SubmissionEntry::Pack() const {
  std::array<uint8_t, 64> b{};
  Put32(&b[0],
        opcode | (static_cast<uint32_t>(psdt & 0x3) << 14) | (static_cast<uint32_t>(cid) << 16));
  Put32(&b[4], nsid);
  Put64(&b[24], prp1);
  Put64(&b[32], prp2);
  Put64(&b[40], slba);
  Put32(&b[48], nlb);
  return b;
}

SubmissionEntry SubmissionEntry::Unpack(absl::Span<const uint8_t> bytes) {
  SubmissionEntry e;
  const uint32_t cdw0 = Get32(&bytes[0]);
  e.opcode = static_cast<uint8_t>(cdw0 & 0xFF);
  e.psdt = static_cast<uint8_t>((cdw0 >> 14) & 0x3);
  e.cid = static_cast<uint16_t>(cdw0 >> 16);
  e.nsid = Get32(&bytes[4]);
  e.prp1 = Get64(&bytes[24]);
  e.prp2 = Get64(&bytes[32]);
  e.slba = Get64(&bytes[40]);
  e.nlb = static_cast<uint16_t>(Get32(&bytes[48]) & 0xFFFF);
  return e;
}

std::array<uint8_t, 16> CompletionEntry::Pack() const {
  std::array<uint8_t, 16> b{};
  Put32(&b[0], dw0);
  Put32(&b[8], sq_head | (static_cast<uint32_t>(sq_id) << 16));
  Put32(&b[12], cid | (phase ? 1u << 16 : 0u) | (static_cast<uint32_t>(status.Field()) << 17));
  return b;
}

CompletionEntry CompletionEntry::Unpack(absl::Span<const uint8_t> bytes) {
  CompletionEntry e;
  e.dw0 = Get32(&bytes[0]);
  const uint32_t dw2 = Get32(&bytes[8]);
  e.sq_head = static_cast<uint16_t>(dw2 & 0xFFFF);
  e.sq_id = static_cast<uint16_t>(dw2 >> 16);
  const uint32_t dw3 = Get32(&bytes[12]);
  e.cid = static_cast<uint16_t>(dw3 & 0xFFFF);
  e.phase = (dw3 >> 16) & 1;
  e.status = NvmeStatus::FromField(static_cast<uint16_t>(dw3 >> 17));
  return e;
}

}  // namespace ecd::nvme
