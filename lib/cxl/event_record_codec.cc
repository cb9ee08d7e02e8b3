// CXL event record codecs: the 128-byte wire layout of each record kind, record-type UUIDs,
// PLDM component IDs and the accessors over EventRecord.
#include "lib/cxl/event_record_codec.h"

#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/cxl/event_record_fields.h"

namespace ecd::cxl {
namespace {

using internal::Raw;

using Image = std::array<uint8_t, kRecordSize>;

// Little-endian field access at a compile-time offset; the static_assert keeps every access
// inside the 128-byte image.
template <size_t kOffset, size_t kLen>
uint64_t GetLe(const Image& img) {
  static_assert(kLen >= 1 && kLen <= 8 && kOffset + kLen <= kRecordSize);
  uint64_t v = 0;
  for (size_t i = kLen; i-- > 0;) v = (v << 8) | img[kOffset + i];
  return v;
}

template <size_t kOffset, size_t kLen>
void PutLe(Image& img, uint64_t v) {
  static_assert(kLen >= 1 && kLen <= 8 && kOffset + kLen <= kRecordSize);
  for (size_t i = 0; i < kLen; ++i) img[kOffset + i] = static_cast<uint8_t>(v >> (8 * i));
}

template <size_t kOffset, size_t kLen>
std::array<uint8_t, kLen> GetBytes(const Image& img) {
  static_assert(kOffset + kLen <= kRecordSize);
  std::array<uint8_t, kLen> out;
  std::memcpy(out.data(), img.data() + kOffset, kLen);
  return out;
}

template <size_t kOffset, size_t kLen>
void PutBytes(Image& img, const std::array<uint8_t, kLen>& in) {
  static_assert(kOffset + kLen <= kRecordSize);
  std::memcpy(img.data() + kOffset, in.data(), kLen);
}

template <typename E>
E GetEnum(uint8_t raw) {
  return static_cast<E>(raw);
}

// Event-specific offsets (absolute within the record).
// Media header shared by GMER and DER.
constexpr size_t kPhysAddrOffset = 0x30;
constexpr size_t kDescriptorOffset = 0x38;
constexpr size_t kMemEventTypeOffset = 0x39;
constexpr size_t kTransactionTypeOffset = 0x3A;
constexpr size_t kValidityOffset = 0x3B;
constexpr size_t kChannelOffset = 0x3D;
constexpr size_t kRankOffset = 0x3E;
// GMER.
constexpr size_t kGmerDeviceOffset = 0x3F;
constexpr size_t kGmerComponentIdOffset = 0x42;
constexpr size_t kGmerCmeFlagsOffset = 0x52;
constexpr size_t kGmerCmeCountOffset = 0x53;
constexpr size_t kGmerSubTypeOffset = 0x56;
constexpr size_t kGmerReservedOffset = 0x57;
// DER.
constexpr size_t kDramNibbleMaskOffset = 0x3F;
constexpr size_t kDramBankGroupOffset = 0x42;
constexpr size_t kDramBankOffset = 0x43;
constexpr size_t kDramRowOffset = 0x44;
constexpr size_t kDramColumnOffset = 0x47;
constexpr size_t kDramCorrectionMaskOffset = 0x49;
constexpr size_t kDramComponentIdOffset = 0x69;
constexpr size_t kDramSubChannelOffset = 0x79;
constexpr size_t kDramCmeFlagsOffset = 0x7A;
constexpr size_t kDramCvmeCountOffset = 0x7B;
constexpr size_t kDramSubTypeOffset = 0x7E;
constexpr size_t kDramReservedOffset = 0x7F;
// MMER.
constexpr size_t kMmerEventTypeOffset = 0x30;
constexpr size_t kMmerHealthStatusOffset = 0x31;
constexpr size_t kMmerMediaStatusOffset = 0x32;
constexpr size_t kMmerAdditionalStatusOffset = 0x33;
constexpr size_t kMmerLifeUsedOffset = 0x34;
constexpr size_t kMmerDeviceTempOffset = 0x35;
constexpr size_t kMmerDirtyShutdownOffset = 0x37;
constexpr size_t kMmerCorVolErrOffset = 0x3B;
constexpr size_t kMmerCorPerErrOffset = 0x3F;
constexpr size_t kMmerValidityOffset = 0x43;
constexpr size_t kMmerComponentIdOffset = 0x45;
constexpr size_t kMmerSubTypeOffset = 0x55;
constexpr size_t kMmerReservedOffset = 0x56;

static_assert(kGmerReservedOffset + 41 == kRecordSize);
static_assert(kDramReservedOffset + 1 == kRecordSize);
static_assert(kMmerReservedOffset + 42 == kRecordSize);
static_assert(kHeaderReservedOffset + kHeaderReservedSize == kRecordDataOffset);

EventHeader DecodeHeader(const Image& img) {
  EventHeader h;
  h.length = static_cast<uint8_t>(GetLe<kHeaderLengthOffset, 1>(img));
  h.flags = static_cast<uint32_t>(GetLe<kHeaderFlagsOffset, kHeaderFlagsSize>(img));
  h.handle = static_cast<uint16_t>(GetLe<kHeaderHandleOffset, 2>(img));
  h.related_handle = static_cast<uint16_t>(GetLe<kHeaderRelatedHandleOffset, 2>(img));
  h.timestamp = GetLe<kHeaderTimestampOffset, 8>(img);
  h.maint_op_class = static_cast<uint8_t>(GetLe<kHeaderMaintOpClassOffset, 1>(img));
  h.maint_op_sub_class = static_cast<uint8_t>(GetLe<kHeaderMaintOpSubClassOffset, 1>(img));
  h.ld_id = static_cast<uint16_t>(GetLe<kHeaderLdIdOffset, 2>(img));
  h.head_id = static_cast<uint8_t>(GetLe<kHeaderHeadIdOffset, 1>(img));
  h.reserved = GetBytes<kHeaderReservedOffset, kHeaderReservedSize>(img);
  return h;
}

void EncodeHeader(const Uuid& uuid, const EventHeader& h, Image& img) {
  PutBytes<kHeaderUuidOffset, 16>(img, uuid.bytes);
  PutLe<kHeaderLengthOffset, 1>(img, h.length);
  PutLe<kHeaderFlagsOffset, kHeaderFlagsSize>(img, h.flags & kFlagsMask);
  PutLe<kHeaderHandleOffset, 2>(img, h.handle);
  PutLe<kHeaderRelatedHandleOffset, 2>(img, h.related_handle);
  PutLe<kHeaderTimestampOffset, 8>(img, h.timestamp);
  PutLe<kHeaderMaintOpClassOffset, 1>(img, h.maint_op_class);
  PutLe<kHeaderMaintOpSubClassOffset, 1>(img, h.maint_op_sub_class);
  PutLe<kHeaderLdIdOffset, 2>(img, h.ld_id);
  PutLe<kHeaderHeadIdOffset, 1>(img, h.head_id);
  PutBytes<kHeaderReservedOffset, kHeaderReservedSize>(img, h.reserved);
}

// The header and the media fields GMER and DER share, at the same offsets (0x30..0x3E) and
// under the same member names; R is GeneralMediaRecord or DramRecord.
template <typename R>
void DecodeMediaCommon(const Image& img, R& r) {
  r.header = DecodeHeader(img);
  r.physical_address = GetLe<kPhysAddrOffset, 8>(img);
  r.descriptor = img[kDescriptorOffset];
  r.type = GetEnum<decltype(r.type)>(img[kMemEventTypeOffset]);
  r.transaction_type = GetEnum<TransactionType>(img[kTransactionTypeOffset]);
  r.validity_flags = static_cast<uint16_t>(GetLe<kValidityOffset, 2>(img));
  r.channel = img[kChannelOffset];
  r.rank = img[kRankOffset];
}

template <typename R>
void EncodeMediaCommon(const Uuid& uuid, const R& r, Image& img) {
  EncodeHeader(uuid, r.header, img);
  PutLe<kPhysAddrOffset, 8>(img, r.physical_address);
  PutLe<kDescriptorOffset, 1>(img, r.descriptor);
  PutLe<kMemEventTypeOffset, 1>(img, Raw(r.type));
  PutLe<kTransactionTypeOffset, 1>(img, Raw(r.transaction_type));
  PutLe<kValidityOffset, 2>(img, r.validity_flags);
  PutLe<kChannelOffset, 1>(img, r.channel);
  PutLe<kRankOffset, 1>(img, r.rank);
}

GeneralMediaRecord DecodeGeneralMedia(const Image& img) {
  GeneralMediaRecord r;
  DecodeMediaCommon(img, r);
  r.device = static_cast<uint32_t>(GetLe<kGmerDeviceOffset, 3>(img));
  r.component_id = GetBytes<kGmerComponentIdOffset, 16>(img);
  r.cme_threshold_ev_flags = img[kGmerCmeFlagsOffset];
  r.cme_count = static_cast<uint32_t>(GetLe<kGmerCmeCountOffset, 3>(img));
  r.sub_type = GetEnum<MemEventSubType>(img[kGmerSubTypeOffset]);
  r.reserved = GetBytes<kGmerReservedOffset, 41>(img);
  return r;
}

void EncodeGeneralMedia(const GeneralMediaRecord& r, Image& img) {
  EncodeMediaCommon(kGeneralMediaUuid, r, img);
  PutLe<kGmerDeviceOffset, 3>(img, r.device);
  PutBytes<kGmerComponentIdOffset, 16>(img, r.component_id);
  PutLe<kGmerCmeFlagsOffset, 1>(img, r.cme_threshold_ev_flags);
  PutLe<kGmerCmeCountOffset, 3>(img, r.cme_count);
  PutLe<kGmerSubTypeOffset, 1>(img, Raw(r.sub_type));
  PutBytes<kGmerReservedOffset, 41>(img, r.reserved);
}

DramRecord DecodeDram(const Image& img) {
  DramRecord r;
  DecodeMediaCommon(img, r);
  r.nibble_mask = static_cast<uint32_t>(GetLe<kDramNibbleMaskOffset, 3>(img));
  r.bank_group = img[kDramBankGroupOffset];
  r.bank = img[kDramBankOffset];
  r.row = static_cast<uint32_t>(GetLe<kDramRowOffset, 3>(img));
  r.column = static_cast<uint16_t>(GetLe<kDramColumnOffset, 2>(img));
  r.correction_mask = GetBytes<kDramCorrectionMaskOffset, 32>(img);
  r.component_id = GetBytes<kDramComponentIdOffset, 16>(img);
  r.sub_channel = img[kDramSubChannelOffset];
  r.cme_threshold_ev_flags = img[kDramCmeFlagsOffset];
  r.cvme_count = static_cast<uint32_t>(GetLe<kDramCvmeCountOffset, 3>(img));
  r.sub_type = GetEnum<MemEventSubType>(img[kDramSubTypeOffset]);
  r.reserved = img[kDramReservedOffset];
  return r;
}

void EncodeDram(const DramRecord& r, Image& img) {
  EncodeMediaCommon(kDramUuid, r, img);
  PutLe<kDramNibbleMaskOffset, 3>(img, r.nibble_mask);
  PutLe<kDramBankGroupOffset, 1>(img, r.bank_group);
  PutLe<kDramBankOffset, 1>(img, r.bank);
  PutLe<kDramRowOffset, 3>(img, r.row);
  PutLe<kDramColumnOffset, 2>(img, r.column);
  PutBytes<kDramCorrectionMaskOffset, 32>(img, r.correction_mask);
  PutBytes<kDramComponentIdOffset, 16>(img, r.component_id);
  PutLe<kDramSubChannelOffset, 1>(img, r.sub_channel);
  PutLe<kDramCmeFlagsOffset, 1>(img, r.cme_threshold_ev_flags);
  PutLe<kDramCvmeCountOffset, 3>(img, r.cvme_count);
  PutLe<kDramSubTypeOffset, 1>(img, Raw(r.sub_type));
  PutLe<kDramReservedOffset, 1>(img, r.reserved);
}

MemoryModuleRecord DecodeMemoryModule(const Image& img) {
  MemoryModuleRecord r;
  r.header = DecodeHeader(img);
  r.event_type = GetEnum<MemModuleEventType>(img[kMmerEventTypeOffset]);
  r.health.health_status = img[kMmerHealthStatusOffset];
  r.health.media_status = GetEnum<MediaStatus>(img[kMmerMediaStatusOffset]);
  r.health.additional_status = img[kMmerAdditionalStatusOffset];
  r.health.life_used = img[kMmerLifeUsedOffset];
  r.health.device_temp = static_cast<int16_t>(GetLe<kMmerDeviceTempOffset, 2>(img));
  r.health.dirty_shutdown_count = static_cast<uint32_t>(GetLe<kMmerDirtyShutdownOffset, 4>(img));
  r.health.corrected_volatile_error_count =
      static_cast<uint32_t>(GetLe<kMmerCorVolErrOffset, 4>(img));
  r.health.corrected_persistent_error_count =
      static_cast<uint32_t>(GetLe<kMmerCorPerErrOffset, 4>(img));
  r.validity_flags = static_cast<uint16_t>(GetLe<kMmerValidityOffset, 2>(img));
  r.component_id = GetBytes<kMmerComponentIdOffset, 16>(img);
  r.event_sub_type = GetEnum<MemModuleEventSubType>(img[kMmerSubTypeOffset]);
  r.reserved = GetBytes<kMmerReservedOffset, 42>(img);
  return r;
}

void EncodeMemoryModule(const MemoryModuleRecord& r, Image& img) {
  EncodeHeader(kMemoryModuleUuid, r.header, img);
  PutLe<kMmerEventTypeOffset, 1>(img, Raw(r.event_type));
  PutLe<kMmerHealthStatusOffset, 1>(img, r.health.health_status);
  PutLe<kMmerMediaStatusOffset, 1>(img, Raw(r.health.media_status));
  PutLe<kMmerAdditionalStatusOffset, 1>(img, r.health.additional_status);
  PutLe<kMmerLifeUsedOffset, 1>(img, r.health.life_used);
  PutLe<kMmerDeviceTempOffset, 2>(img, static_cast<uint16_t>(r.health.device_temp));
  PutLe<kMmerDirtyShutdownOffset, 4>(img, r.health.dirty_shutdown_count);
  PutLe<kMmerCorVolErrOffset, 4>(img, r.health.corrected_volatile_error_count);
  PutLe<kMmerCorPerErrOffset, 4>(img, r.health.corrected_persistent_error_count);
  PutLe<kMmerValidityOffset, 2>(img, r.validity_flags);
  PutBytes<kMmerComponentIdOffset, 16>(img, r.component_id);
  PutLe<kMmerSubTypeOffset, 1>(img, Raw(r.event_sub_type));
  PutBytes<kMmerReservedOffset, 42>(img, r.reserved);
}

std::optional<PldmComponentId> PldmIfValid(uint16_t validity, uint16_t component_bit,
                                           uint16_t format_bit,
                                           const std::array<uint8_t, 16>& component_id) {
  if ((validity & component_bit) == 0 || (validity & format_bit) == 0) return std::nullopt;
  return ParsePldmComponentId(component_id);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Uuid::ToString() const {
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    absl::StrAppend(&out, absl::StrFormat("%02x", bytes[i]));
  }
  return out;
}

absl::StatusOr<Uuid> Uuid::Parse(std::string_view text) {
  if (text.size() != 36) {
    return absl::InvalidArgumentError(
        absl::StrFormat("UUID \"%s\" is not 36 characters (8-4-4-4-12 hex)", text));
  }
  Uuid u;
  size_t byte = 0;
  for (size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') {
        return absl::InvalidArgumentError(
            absl::StrFormat("UUID \"%s\" has no '-' at position %d", text, i));
      }
      ++i;
      continue;
    }
    const int hi = HexValue(text[i]);
    const int lo = HexValue(text[i + 1]);
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("UUID \"%s\" has a non-hex digit near position %d", text, i));
    }
    u.bytes[byte++] = static_cast<uint8_t>((hi << 4) | lo);
    i += 2;
  }
  return u;
}

RecordKind KindFromUuid(const Uuid& uuid) {
  if (uuid == kGeneralMediaUuid) return RecordKind::kGeneralMedia;
  if (uuid == kDramUuid) return RecordKind::kDram;
  if (uuid == kMemoryModuleUuid) return RecordKind::kMemoryModule;
  if (uuid == kMemorySparingUuid) return RecordKind::kMemorySparing;
  if (uuid == kDynamicCapacityUuid) return RecordKind::kDynamicCapacity;
  if (uuid == kPhysicalSwitchUuid) return RecordKind::kPhysicalSwitch;
  if (uuid == kVirtualSwitchUuid) return RecordKind::kVirtualSwitch;
  if (uuid == kMldPortUuid) return RecordKind::kMldPort;
  return RecordKind::kUnknown;
}

PldmComponentId ParsePldmComponentId(const std::array<uint8_t, 16>& component_id) {
  PldmComponentId p;
  p.entity_id_valid = (component_id[0] & 0x1) != 0;
  p.resource_id_valid = (component_id[0] & 0x2) != 0;
  std::memcpy(p.entity_id.data(), component_id.data() + 1, p.entity_id.size());
  std::memcpy(p.resource_id.data(), component_id.data() + 7, p.resource_id.size());
  return p;
}

std::optional<PldmComponentId> GeneralMediaRecord::pldm_component_id() const {
  return PldmIfValid(validity_flags, kGmerValidComponent, kGmerValidComponentIdFormat,
                     component_id);
}

std::optional<PldmComponentId> DramRecord::pldm_component_id() const {
  return PldmIfValid(validity_flags, kDramValidComponent, kDramValidComponentIdFormat,
                     component_id);
}

std::optional<PldmComponentId> MemoryModuleRecord::pldm_component_id() const {
  return PldmIfValid(validity_flags, kMemModuleValidComponent, kMemModuleValidComponentIdFormat,
                     component_id);
}

uint64_t DramRecord::correction_mask_word(int i) const {
  const size_t base = 8 * static_cast<size_t>(i);
  uint64_t v = 0;
  for (size_t b = 8; b-- > 0;) v = (v << 8) | correction_mask.at(base + b);
  return v;
}

absl::StatusOr<EventRecord> DecodeRecord(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kRecordSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CXL event record needs %d bytes, buffer has %d", kRecordSize, bytes.size()));
  }
  Image img;
  std::memcpy(img.data(), bytes.data(), kRecordSize);
  const uint8_t length = img[kHeaderLengthOffset];
  if (length != kRecordLength) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CXL event record length byte is 0x%02x, expected 0x%02x", length, kRecordLength));
  }
  Uuid uuid;
  uuid.bytes = GetBytes<kHeaderUuidOffset, 16>(img);
  const RecordKind kind = KindFromUuid(uuid);
  switch (kind) {
    case RecordKind::kGeneralMedia:
      return DecodeGeneralMedia(img);
    case RecordKind::kDram:
      return DecodeDram(img);
    case RecordKind::kMemoryModule:
      return DecodeMemoryModule(img);
    default:
      break;
  }
  GenericRecord g;
  g.kind = kind;
  g.uuid = uuid;
  g.header = DecodeHeader(img);
  g.data = GetBytes<kRecordDataOffset, kRecordDataSize>(img);
  return g;
}

std::array<uint8_t, kRecordSize> EncodeRecord(const EventRecord& record) {
  Image img{};
  std::visit(
      [&img](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, GeneralMediaRecord>) {
          EncodeGeneralMedia(r, img);
        } else if constexpr (std::is_same_v<T, DramRecord>) {
          EncodeDram(r, img);
        } else if constexpr (std::is_same_v<T, MemoryModuleRecord>) {
          EncodeMemoryModule(r, img);
        } else {
          EncodeHeader(r.uuid, r.header, img);
          PutBytes<kRecordDataOffset, kRecordDataSize>(img, r.data);
        }
      },
      record);
  return img;
}

const EventHeader& HeaderOf(const EventRecord& record) {
  return std::visit([](const auto& r) -> const EventHeader& { return r.header; }, record);
}

EventHeader& MutableHeaderOf(EventRecord& record) {
  return std::visit([](auto& r) -> EventHeader& { return r.header; }, record);
}

RecordKind KindOf(const EventRecord& record) {
  switch (record.index()) {
    case 0:
      return RecordKind::kGeneralMedia;
    case 1:
      return RecordKind::kDram;
    case 2:
      return RecordKind::kMemoryModule;
    default:
      return std::get<GenericRecord>(record).kind;
  }
}

Uuid UuidOf(const EventRecord& record) {
  switch (record.index()) {
    case 0:
      return kGeneralMediaUuid;
    case 1:
      return kDramUuid;
    case 2:
      return kMemoryModuleUuid;
    default:
      return std::get<GenericRecord>(record).uuid;
  }
}

}  // namespace ecd::cxl
