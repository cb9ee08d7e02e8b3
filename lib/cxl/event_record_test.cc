// Tests for the CXL event record codecs: byte images built field by field at the offsets of
// the CXL r3.1 tables (independently of the encoder), exact encodings, round trips, malformed
// and mutated input, operator names and the JSON rendering.
#include "lib/cxl/event_record.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace ecd::cxl {
namespace {

using Image = std::array<uint8_t, 128>;

// Writes `len` bytes of `v`, least significant first, at `off`.
void Le(Image& b, size_t off, uint64_t v, size_t len) {
  for (size_t i = 0; i < len; ++i) b.at(off + i) = static_cast<uint8_t>(v >> (8 * i));
}

// Wire bytes of the record-type UUIDs, as listed in the reference (network byte order).
constexpr Image::value_type kGmerWire[16] = {0xfb, 0xcd, 0x0a, 0x77, 0xc2, 0x60, 0x41, 0x7f,
                                             0x85, 0xa9, 0x08, 0x8b, 0x16, 0x21, 0xeb, 0xa6};
constexpr Image::value_type kDramWire[16] = {0x60, 0x1d, 0xcb, 0xb3, 0x9c, 0x06, 0x4e, 0xab,
                                             0xb8, 0xaf, 0x4e, 0x9b, 0xfb, 0x5c, 0x96, 0x24};
constexpr Image::value_type kMmerWire[16] = {0xfe, 0x92, 0x74, 0x75, 0xdd, 0x59, 0x43, 0x39,
                                             0xa5, 0x86, 0x79, 0xba, 0xb1, 0x13, 0xb7, 0x74};

void PutUuid(Image& b, const uint8_t (&wire)[16]) {
  for (size_t i = 0; i < 16; ++i) b[i] = wire[i];
}

void PutUuid(Image& b, const Uuid& u) {
  for (size_t i = 0; i < 16; ++i) b[i] = u.bytes[i];
}

// The common header used by the field-by-field fixtures: severity Failure with every r3.2 flag
// bit set, LD-ID and Head-ID present, reserved bytes 0xA0.. so that they must be kept raw.
void PutHeader(Image& b) {
  b[0x10] = 0x80;
  Le(b, 0x11, 0x0001FE, 3);
  Le(b, 0x14, 0x1234, 2);
  Le(b, 0x16, 0x5678, 2);
  Le(b, 0x18, 0x0123456789ABCDEFULL, 8);
  b[0x20] = 0x02;
  b[0x21] = 0x03;
  Le(b, 0x22, 0xBEEF, 2);
  b[0x24] = 0x07;
  for (size_t i = 0x25; i < 0x30; ++i) b[i] = static_cast<uint8_t>(0xA0 + (i - 0x25));
}

void ExpectFixtureHeader(const EventHeader& h) {
  EXPECT_EQ(h.length, 0x80);
  EXPECT_EQ(h.flags, 0x0001FEu);
  EXPECT_EQ(h.severity(), Severity::kFailure);
  EXPECT_TRUE(h.permanent_condition());
  EXPECT_TRUE(h.maintenance_needed());
  EXPECT_TRUE(h.performance_degraded());
  EXPECT_TRUE(h.hardware_replacement_needed());
  EXPECT_TRUE(h.maint_op_sub_class_valid());
  EXPECT_TRUE(h.ld_id_valid());
  EXPECT_TRUE(h.head_id_valid());
  EXPECT_EQ(h.reserved_flags(), 0u);
  EXPECT_EQ(h.handle, 0x1234);
  EXPECT_EQ(h.related_handle, 0x5678);
  EXPECT_EQ(h.timestamp, 0x0123456789ABCDEFULL);
  EXPECT_EQ(h.maint_op_class, 0x02);
  EXPECT_EQ(h.maint_op_sub_class, 0x03);
  EXPECT_EQ(h.ld_id, 0xBEEF);
  EXPECT_EQ(h.head_id, 0x07);
  for (size_t i = 0; i < h.reserved.size(); ++i) EXPECT_EQ(h.reserved[i], 0xA0 + i) << i;
}

template <typename T>
T DecodeAs(const Image& b) {
  absl::StatusOr<EventRecord> r = DecodeRecord(b);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*r));
  if (!std::holds_alternative<T>(*r)) return T{};
  return std::get<T>(*r);
}

TEST(Uuid, ConstantsMatchReferenceStrings) {
  EXPECT_EQ(kGeneralMediaUuid.ToString(), "fbcd0a77-c260-417f-85a9-088b1621eba6");
  EXPECT_EQ(kDramUuid.ToString(), "601dcbb3-9c06-4eab-b8af-4e9bfb5c9624");
  EXPECT_EQ(kMemoryModuleUuid.ToString(), "fe927475-dd59-4339-a586-79bab113b774");
  EXPECT_EQ(kMemorySparingUuid.ToString(), "e71f3a40-2d29-4092-8a39-4d1c966c7c65");
  EXPECT_EQ(kDynamicCapacityUuid.ToString(), "ca95afa7-f183-4018-8c2f-95268e101a2a");
  EXPECT_EQ(kPhysicalSwitchUuid.ToString(), "77cf9271-9c02-470b-9fe4-bc7b75f2da97");
  EXPECT_EQ(kVirtualSwitchUuid.ToString(), "40d26425-3396-4c4d-a5da-3d47263af425");
  EXPECT_EQ(kMldPortUuid.ToString(), "8dc44363-0c96-4710-b7bf-04bb99534c3f");
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(kGeneralMediaUuid.bytes[i], kGmerWire[i]);
    EXPECT_EQ(kDramUuid.bytes[i], kDramWire[i]);
    EXPECT_EQ(kMemoryModuleUuid.bytes[i], kMmerWire[i]);
  }
}

TEST(Uuid, ParseAcceptsCanonicalFormInEitherCase) {
  absl::StatusOr<Uuid> u = Uuid::Parse("FBCD0A77-C260-417F-85A9-088B1621EBA6");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(*u, kGeneralMediaUuid);
  u = Uuid::Parse("8dc44363-0c96-4710-b7bf-04bb99534c3f");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(*u, kMldPortUuid);
}

TEST(Uuid, ParseRejectsMalformedText) {
  for (const char* bad :
       {"", "fbcd0a77c260417f85a9088b1621eba6",
        "fbcd0a77-c260-417f-85a9-088b1621eba",    // 35 chars
        "fbcd0a77-c260-417f-85a9-088b1621eba6a",  // 37 chars
        "fbcd0a77_c260-417f-85a9-088b1621eba6", "fbcd0a7g-c260-417f-85a9-088b1621eba6",
        "fbcd0a77-c260-417f-85a9+088b1621eba6", "fbcd0a7--c260-417f-85a9-088b1621eba6"}) {
    absl::StatusOr<Uuid> u = Uuid::Parse(bad);
    EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(RecordKind, FromEveryUuid) {
  EXPECT_EQ(KindFromUuid(kGeneralMediaUuid), RecordKind::kGeneralMedia);
  EXPECT_EQ(KindFromUuid(kDramUuid), RecordKind::kDram);
  EXPECT_EQ(KindFromUuid(kMemoryModuleUuid), RecordKind::kMemoryModule);
  EXPECT_EQ(KindFromUuid(kMemorySparingUuid), RecordKind::kMemorySparing);
  EXPECT_EQ(KindFromUuid(kDynamicCapacityUuid), RecordKind::kDynamicCapacity);
  EXPECT_EQ(KindFromUuid(kPhysicalSwitchUuid), RecordKind::kPhysicalSwitch);
  EXPECT_EQ(KindFromUuid(kVirtualSwitchUuid), RecordKind::kVirtualSwitch);
  EXPECT_EQ(KindFromUuid(kMldPortUuid), RecordKind::kMldPort);
  EXPECT_EQ(KindFromUuid(Uuid{}), RecordKind::kUnknown);
  EXPECT_EQ(RecordKindName(RecordKind::kMldPort), "MLD Port");
  EXPECT_EQ(RecordKindName(RecordKind::kUnknown), "Unknown");
}

TEST(EventHeader, OffsetsMatchTheCommonRecordFormat) {
  EXPECT_EQ(kHeaderUuidOffset, 0x00u);
  EXPECT_EQ(kHeaderLengthOffset, 0x10u);
  EXPECT_EQ(kHeaderFlagsOffset, 0x11u);
  EXPECT_EQ(kHeaderHandleOffset, 0x14u);
  EXPECT_EQ(kHeaderRelatedHandleOffset, 0x16u);
  EXPECT_EQ(kHeaderTimestampOffset, 0x18u);
  EXPECT_EQ(kHeaderMaintOpClassOffset, 0x20u);
  EXPECT_EQ(kHeaderMaintOpSubClassOffset, 0x21u);
  EXPECT_EQ(kHeaderLdIdOffset, 0x22u);
  EXPECT_EQ(kHeaderHeadIdOffset, 0x24u);
  EXPECT_EQ(kHeaderReservedOffset, 0x25u);
  EXPECT_EQ(kRecordDataOffset, 0x30u);
  EXPECT_EQ(kRecordDataSize, 80u);
}

TEST(EventHeader, SeverityInFlagBits1To0) {
  const Severity all[] = {Severity::kInformational, Severity::kWarning, Severity::kFailure,
                          Severity::kFatal};
  const char* names[] = {"Informational", "Warning", "Failure", "Fatal"};
  for (uint32_t s = 0; s < 4; ++s) {
    Image b{};
    PutUuid(b, kMmerWire);
    b[0x10] = 0x80;
    b[0x11] = static_cast<uint8_t>(0x08 | s);  // maintenance needed + severity
    auto r = DecodeAs<MemoryModuleRecord>(b);
    EXPECT_EQ(r.header.severity(), all[s]);
    EXPECT_EQ(SeverityName(all[s]), names[s]);
    EXPECT_TRUE(r.header.maintenance_needed());
    EXPECT_FALSE(r.header.permanent_condition());
    EXPECT_FALSE(r.header.maint_op_sub_class_valid());
    EventHeader h;
    h.flags = kFlagMaintenanceNeeded;
    h.set_severity(all[s]);
    EXPECT_EQ(h.flags, 0x08 | s);
  }
}

// --- General Media -------------------------------------------------------------------------

Image GmerFixture(uint16_t validity) {
  Image b{};
  PutUuid(b, kGmerWire);
  PutHeader(b);
  Le(b, 0x30, 0x0000000123456787ULL, 8);  // DPA 0x123456780, VOLATILE|NOT_REPAIRABLE, bit 2
  b[0x38] = 0x07;                         // all three descriptor bits
  b[0x39] = 0x04;                         // Scrub Media ECC Error
  b[0x3A] = 0x07;                         // Internal Media Error Check Scrub
  Le(b, 0x3B, validity, 2);
  b[0x3D] = 0x11;  // channel
  b[0x3E] = 0x22;  // rank
  Le(b, 0x3F, 0xABCDEF, 3);
  b[0x42] = 0x03;  // PLDM: entity and resource ID valid
  for (size_t i = 1; i < 16; ++i) b[0x42 + i] = static_cast<uint8_t>(i);
  b[0x52] = 0x03;  // CME threshold flags
  Le(b, 0x53, 0x123456, 3);
  b[0x56] = 0x05;                                                       // Media Link CRC Error
  for (size_t i = 0x57; i < 0x80; ++i) b[i] = static_cast<uint8_t>(i);  // reserved, kept raw
  return b;
}

TEST(GeneralMedia, DecodesEveryFieldAtItsOffset) {
  const Image b = GmerFixture(0x001F);
  const auto r = DecodeAs<GeneralMediaRecord>(b);
  ExpectFixtureHeader(r.header);
  EXPECT_EQ(r.physical_address, 0x0000000123456787ULL);
  EXPECT_EQ(r.dpa(), 0x0000000123456780ULL);
  EXPECT_EQ(r.dpa_flags(), 0x03);
  EXPECT_TRUE(r.is_volatile());
  EXPECT_TRUE(r.not_repairable());
  EXPECT_EQ(r.descriptor, 0x07);
  EXPECT_EQ(r.type, GmerEventType::kScrubMediaEccError);
  EXPECT_EQ(r.transaction_type, TransactionType::kInternalMediaErrorCheckScrub);
  EXPECT_EQ(r.validity_flags, 0x001F);
  EXPECT_EQ(r.channel, 0x11);
  EXPECT_EQ(r.rank, 0x22);
  EXPECT_EQ(r.device, 0xABCDEFu);
  EXPECT_EQ(r.component_id[0], 0x03);
  for (size_t i = 1; i < 16; ++i) EXPECT_EQ(r.component_id[i], i);
  EXPECT_EQ(r.cme_threshold_ev_flags, 0x03);
  EXPECT_EQ(r.cme_count, 0x123456u);
  EXPECT_EQ(r.sub_type, MemEventSubType::kMediaLinkCrcError);
  for (size_t i = 0; i < r.reserved.size(); ++i) EXPECT_EQ(r.reserved[i], 0x57 + i);
  EXPECT_TRUE(r.has_channel());
  EXPECT_TRUE(r.has_rank());
  EXPECT_TRUE(r.has_device());
  EXPECT_TRUE(r.has_component_id());
  ASSERT_TRUE(r.pldm_component_id().has_value());
  const PldmComponentId p = *r.pldm_component_id();
  EXPECT_TRUE(p.entity_id_valid);
  EXPECT_TRUE(p.resource_id_valid);
  EXPECT_EQ(p.entity_id, (std::array<uint8_t, 6>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(p.resource_id, (std::array<uint8_t, 4>{7, 8, 9, 10}));
  EXPECT_TRUE(RecordWarnings(r).empty());
  EXPECT_EQ(EncodeRecord(r), b);
}

TEST(GeneralMedia, ValidityFlagsOffKeepsRawValues) {
  const auto r = DecodeAs<GeneralMediaRecord>(GmerFixture(0x0000));
  EXPECT_FALSE(r.has_channel());
  EXPECT_FALSE(r.has_rank());
  EXPECT_FALSE(r.has_device());
  EXPECT_FALSE(r.has_component_id());
  EXPECT_FALSE(r.pldm_component_id().has_value());
  EXPECT_EQ(r.channel, 0x11);  // still the raw byte
  EXPECT_EQ(r.device, 0xABCDEFu);
  // Each bit alone.
  EXPECT_TRUE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x01)).has_channel());
  EXPECT_FALSE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x01)).has_rank());
  EXPECT_TRUE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x02)).has_rank());
  EXPECT_TRUE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x04)).has_device());
  EXPECT_TRUE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x08)).has_component_id());
  // Component valid but not in PLDM format, and format without component: no PLDM view.
  EXPECT_FALSE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x08)).pldm_component_id().has_value());
  EXPECT_FALSE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x10)).pldm_component_id().has_value());
  EXPECT_TRUE(DecodeAs<GeneralMediaRecord>(GmerFixture(0x18)).pldm_component_id().has_value());
}

TEST(GeneralMedia, EncodesStructToExactBytes) {
  GeneralMediaRecord r;
  r.header.flags = kFlagPermanentCondition | static_cast<uint32_t>(Severity::kWarning);
  r.header.handle = 0x0102;
  r.header.related_handle = 0x0304;
  r.header.timestamp = 0x1122334455667788ULL;
  r.header.maint_op_class = 0x09;
  r.physical_address = 0x00000000DEADBE81ULL;
  r.descriptor = kDescriptorUncorrectable;
  r.type = GmerEventType::kInvalidAddress;
  r.transaction_type = TransactionType::kHostWrite;
  r.validity_flags = kGmerValidChannel | kGmerValidDevice;
  r.channel = 3;
  r.rank = 4;
  r.device = 0x00FEDCBA;
  r.component_id[15] = 0xCC;
  r.cme_threshold_ev_flags = kCmeThresholdExceeded;
  r.cme_count = 0x000102;
  r.sub_type = MemEventSubType::kInternalDatapathError;

  Image want{};
  PutUuid(want, kGmerWire);
  want[0x10] = 0x80;
  want[0x11] = 0x05;
  want[0x14] = 0x02;
  want[0x15] = 0x01;
  want[0x16] = 0x04;
  want[0x17] = 0x03;
  for (size_t i = 0; i < 8; ++i) want[0x18 + i] = static_cast<uint8_t>(0x88 - 0x11 * i);
  want[0x20] = 0x09;
  want[0x30] = 0x81;
  want[0x31] = 0xBE;
  want[0x32] = 0xAD;
  want[0x33] = 0xDE;
  want[0x38] = 0x01;
  want[0x39] = 0x01;
  want[0x3A] = 0x02;
  want[0x3B] = 0x05;
  want[0x3D] = 3;
  want[0x3E] = 4;
  want[0x3F] = 0xBA;
  want[0x40] = 0xDC;
  want[0x41] = 0xFE;
  want[0x51] = 0xCC;
  want[0x52] = 0x02;
  want[0x53] = 0x02;
  want[0x54] = 0x01;
  want[0x56] = 0x01;
  EXPECT_EQ(EncodeRecord(r), want);
  EXPECT_EQ(DecodeAs<GeneralMediaRecord>(want), r);
}

// --- DRAM ----------------------------------------------------------------------------------

Image DramFixture(uint16_t validity) {
  Image b{};
  PutUuid(b, kDramWire);
  PutHeader(b);
  Le(b, 0x30, 0xFEDCBA9876543241ULL, 8);  // DPA ...240, VOLATILE
  b[0x38] = 0x02;                         // THRESHOLD_EVENT
  b[0x39] = 0x01;                         // DRAM: Scrub Media ECC Error
  b[0x3A] = 0x08;                         // Media Initialization
  Le(b, 0x3B, validity, 2);
  b[0x3D] = 0x0A;  // channel
  b[0x3E] = 0x0B;  // rank
  Le(b, 0x3F, 0x0F0E0D, 3);
  b[0x42] = 0x03;  // bank group
  b[0x43] = 0x0C;  // bank
  Le(b, 0x44, 0x01FFFE, 3);
  Le(b, 0x47, 0x03FF, 2);
  for (size_t i = 0; i < 32; ++i) b[0x49 + i] = static_cast<uint8_t>(0x80 + i);
  b[0x69] = 0x01;  // PLDM: entity ID only
  for (size_t i = 1; i < 16; ++i) b[0x69 + i] = static_cast<uint8_t>(0x40 + i);
  b[0x79] = 0x02;  // sub-channel
  b[0x7A] = 0x01;  // CME in multiple media
  Le(b, 0x7B, 0xFFFFFE, 3);
  b[0x7E] = 0x02;  // Media Link Command Training Error
  b[0x7F] = 0x5A;  // reserved, kept raw
  return b;
}

TEST(Dram, DecodesEveryFieldAtItsOffset) {
  const Image b = DramFixture(0x07FF);
  const auto r = DecodeAs<DramRecord>(b);
  ExpectFixtureHeader(r.header);
  EXPECT_EQ(r.physical_address, 0xFEDCBA9876543241ULL);
  EXPECT_EQ(r.dpa(), 0xFEDCBA9876543240ULL);
  EXPECT_EQ(r.dpa_flags(), 0x01);
  EXPECT_TRUE(r.is_volatile());
  EXPECT_FALSE(r.not_repairable());
  EXPECT_EQ(r.descriptor, kDescriptorThreshold);
  EXPECT_EQ(r.type, DramEventType::kScrubMediaEccError);
  EXPECT_EQ(r.transaction_type, TransactionType::kMediaInitialization);
  EXPECT_EQ(r.validity_flags, 0x07FF);
  EXPECT_EQ(r.channel, 0x0A);
  EXPECT_EQ(r.rank, 0x0B);
  EXPECT_EQ(r.nibble_mask, 0x0F0E0Du);
  EXPECT_EQ(r.bank_group, 0x03);
  EXPECT_EQ(r.bank, 0x0C);
  EXPECT_EQ(r.row, 0x01FFFEu);
  EXPECT_EQ(r.column, 0x03FF);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(r.correction_mask[i], 0x80 + i);
  EXPECT_EQ(r.correction_mask_word(0), 0x8786858483828180ULL);
  EXPECT_EQ(r.correction_mask_word(3), 0x9F9E9D9C9B9A9998ULL);
  EXPECT_EQ(r.component_id[0], 0x01);
  for (size_t i = 1; i < 16; ++i) EXPECT_EQ(r.component_id[i], 0x40 + i);
  EXPECT_EQ(r.sub_channel, 0x02);
  EXPECT_EQ(r.cme_threshold_ev_flags, 0x01);
  EXPECT_EQ(r.cvme_count, 0xFFFFFEu);
  EXPECT_EQ(r.sub_type, MemEventSubType::kMediaLinkCommandTrainingError);
  EXPECT_EQ(r.reserved, 0x5A);
  EXPECT_TRUE(r.has_channel());
  EXPECT_TRUE(r.has_rank());
  EXPECT_TRUE(r.has_nibble_mask());
  EXPECT_TRUE(r.has_bank_group());
  EXPECT_TRUE(r.has_bank());
  EXPECT_TRUE(r.has_row());
  EXPECT_TRUE(r.has_column());
  EXPECT_TRUE(r.has_correction_mask());
  EXPECT_TRUE(r.has_component_id());
  EXPECT_TRUE(r.has_sub_channel());
  ASSERT_TRUE(r.pldm_component_id().has_value());
  EXPECT_TRUE(r.pldm_component_id()->entity_id_valid);
  EXPECT_FALSE(r.pldm_component_id()->resource_id_valid);
  EXPECT_EQ(r.pldm_component_id()->entity_id,
            (std::array<uint8_t, 6>{0x41, 0x42, 0x43, 0x44, 0x45, 0x46}));
  EXPECT_TRUE(RecordWarnings(r).empty());
  EXPECT_EQ(EncodeRecord(r), b);
}

TEST(Dram, EachValidityBitGatesOneField) {
  const auto none = DecodeAs<DramRecord>(DramFixture(0));
  EXPECT_FALSE(none.has_channel() || none.has_rank() || none.has_nibble_mask() ||
               none.has_bank_group() || none.has_bank() || none.has_row() || none.has_column() ||
               none.has_correction_mask() || none.has_component_id() || none.has_sub_channel());
  EXPECT_FALSE(none.pldm_component_id().has_value());
  EXPECT_EQ(none.row, 0x01FFFEu);  // raw value kept
  using Pred = bool (DramRecord::*)() const;
  const Pred preds[] = {&DramRecord::has_channel,     &DramRecord::has_rank,
                        &DramRecord::has_nibble_mask, &DramRecord::has_bank_group,
                        &DramRecord::has_bank,        &DramRecord::has_row,
                        &DramRecord::has_column,      &DramRecord::has_correction_mask,
                        &DramRecord::has_component_id};
  for (int bit = 0; bit < 9; ++bit) {
    const auto r = DecodeAs<DramRecord>(DramFixture(static_cast<uint16_t>(1u << bit)));
    for (int other = 0; other < 9; ++other) {
      EXPECT_EQ((r.*preds[other])(), bit == other) << bit << " " << other;
    }
  }
  EXPECT_TRUE(DecodeAs<DramRecord>(DramFixture(1u << 10)).has_sub_channel());
  EXPECT_FALSE(DecodeAs<DramRecord>(DramFixture(1u << 9)).has_sub_channel());
  EXPECT_TRUE(DecodeAs<DramRecord>(DramFixture(0x0300)).pldm_component_id().has_value());
}

TEST(Dram, EncodesStructToExactBytes) {
  DramRecord r;
  r.header.flags = static_cast<uint32_t>(Severity::kFatal);
  r.header.handle = 0xFFFF;
  r.physical_address = 0x40;
  r.type = DramEventType::kCkidViolation;
  r.transaction_type = TransactionType::kHostInjectPoison;
  r.validity_flags = kDramValidRow | kDramValidSubChannel;
  r.nibble_mask = 0x123456;
  r.bank_group = 7;
  r.bank = 8;
  r.row = 0xABCDEF;
  r.column = 0x1234;
  r.correction_mask[0] = 0x11;
  r.correction_mask[31] = 0x22;
  r.component_id[0] = 0x33;
  r.sub_channel = 1;
  r.cme_threshold_ev_flags = 3;
  r.cvme_count = 0x010203;
  r.sub_type = MemEventSubType::kMediaLinkDataTrainingError;

  Image want{};
  PutUuid(want, kDramWire);
  want[0x10] = 0x80;
  want[0x11] = 0x03;
  want[0x14] = 0xFF;
  want[0x15] = 0xFF;
  want[0x30] = 0x40;
  want[0x39] = 0x06;
  want[0x3A] = 0x04;
  want[0x3B] = 0x20;
  want[0x3C] = 0x04;
  want[0x3F] = 0x56;
  want[0x40] = 0x34;
  want[0x41] = 0x12;
  want[0x42] = 7;
  want[0x43] = 8;
  want[0x44] = 0xEF;
  want[0x45] = 0xCD;
  want[0x46] = 0xAB;
  want[0x47] = 0x34;
  want[0x48] = 0x12;
  want[0x49] = 0x11;
  want[0x68] = 0x22;
  want[0x69] = 0x33;
  want[0x79] = 1;
  want[0x7A] = 3;
  want[0x7B] = 0x03;
  want[0x7C] = 0x02;
  want[0x7D] = 0x01;
  want[0x7E] = 0x04;
  EXPECT_EQ(EncodeRecord(r), want);
  EXPECT_EQ(DecodeAs<DramRecord>(want), r);
}

// --- Memory Module -------------------------------------------------------------------------

Image MmerFixture(uint16_t validity) {
  Image b{};
  PutUuid(b, kMmerWire);
  PutHeader(b);
  b[0x30] = 0x07;          // Memory Media FRU Error
  b[0x31] = 0x0F;          // all four health status bits
  b[0x32] = 0x09;          // All Data Loss Imminent
  b[0x33] = 0x39;          // life used Warning, temperature Critical, both error counts Warning
  b[0x34] = 0x63;          // 99 % life used
  Le(b, 0x35, 0xFFEC, 2);  // -20 degrees
  Le(b, 0x37, 0x01020304, 4);
  Le(b, 0x3B, 0x11223344, 4);
  Le(b, 0x3F, 0xA1B2C3D4, 4);
  Le(b, 0x43, validity, 2);
  b[0x45] = 0x02;  // PLDM: resource ID only
  for (size_t i = 1; i < 16; ++i) b[0x45 + i] = static_cast<uint8_t>(0x60 + i);
  b[0x55] = 0x03;  // Unsupported Memory Media FRU
  for (size_t i = 0x56; i < 0x80; ++i) b[i] = static_cast<uint8_t>(0xFF - i);
  return b;
}

TEST(MemoryModule, DecodesEveryFieldAtItsOffset) {
  const Image b = MmerFixture(0x0003);
  const auto r = DecodeAs<MemoryModuleRecord>(b);
  ExpectFixtureHeader(r.header);
  EXPECT_EQ(r.event_type, MemModuleEventType::kMemoryMediaFruError);
  EXPECT_EQ(r.health.health_status, 0x0F);
  EXPECT_EQ(r.health.media_status, MediaStatus::kAllDataLossImminent);
  EXPECT_EQ(r.health.additional_status, 0x39);
  EXPECT_EQ(r.health.life_used_status(), 1);
  EXPECT_EQ(r.health.device_temp_status(), 2);
  EXPECT_EQ(r.health.cor_vol_err_status(), 1);
  EXPECT_EQ(r.health.cor_per_err_status(), 1);
  EXPECT_EQ(r.health.life_used, 99);
  EXPECT_EQ(r.health.device_temp, -20);
  EXPECT_EQ(r.health.dirty_shutdown_count, 0x01020304u);
  EXPECT_EQ(r.health.corrected_volatile_error_count, 0x11223344u);
  EXPECT_EQ(r.health.corrected_persistent_error_count, 0xA1B2C3D4u);
  EXPECT_EQ(r.validity_flags, 0x0003);
  EXPECT_EQ(r.component_id[0], 0x02);
  for (size_t i = 1; i < 16; ++i) EXPECT_EQ(r.component_id[i], 0x60 + i);
  EXPECT_EQ(r.event_sub_type, MemModuleEventSubType::kUnsupportedMemoryMediaFru);
  for (size_t i = 0; i < r.reserved.size(); ++i) EXPECT_EQ(r.reserved[i], 0xFF - 0x56 - i);
  EXPECT_TRUE(r.has_component_id());
  ASSERT_TRUE(r.pldm_component_id().has_value());
  EXPECT_FALSE(r.pldm_component_id()->entity_id_valid);
  EXPECT_TRUE(r.pldm_component_id()->resource_id_valid);
  EXPECT_EQ(r.pldm_component_id()->resource_id, (std::array<uint8_t, 4>{0x67, 0x68, 0x69, 0x6A}));
  EXPECT_TRUE(RecordWarnings(r).empty());
  EXPECT_EQ(EncodeRecord(r), b);

  const auto off = DecodeAs<MemoryModuleRecord>(MmerFixture(0));
  EXPECT_FALSE(off.has_component_id());
  EXPECT_FALSE(off.pldm_component_id().has_value());
  EXPECT_EQ(off.component_id[1], 0x61);
  EXPECT_TRUE(DecodeAs<MemoryModuleRecord>(MmerFixture(1)).has_component_id());
  EXPECT_FALSE(DecodeAs<MemoryModuleRecord>(MmerFixture(1)).pldm_component_id().has_value());
}

TEST(MemoryModule, EncodesStructToExactBytes) {
  MemoryModuleRecord r;
  r.header.handle = 1;
  r.header.timestamp = 1;
  r.event_type = MemModuleEventType::kTemperatureChange;
  r.health.health_status = kHealthPerformanceDegraded;
  r.health.media_status = MediaStatus::kNotReady;
  r.health.additional_status = 0x08;
  r.health.life_used = 5;
  r.health.device_temp = 85;
  r.health.dirty_shutdown_count = 2;
  r.health.corrected_volatile_error_count = 0x100;
  r.health.corrected_persistent_error_count = 0x10000;
  r.validity_flags = kMemModuleValidComponent;
  r.component_id[0] = 0x41;
  r.event_sub_type = MemModuleEventSubType::kInvalidConfigData;

  Image want{};
  PutUuid(want, kMmerWire);
  want[0x10] = 0x80;
  want[0x14] = 1;
  want[0x18] = 1;
  want[0x30] = 3;
  want[0x31] = 0x02;
  want[0x32] = 0x01;
  want[0x33] = 0x08;
  want[0x34] = 5;
  want[0x35] = 85;
  want[0x37] = 2;
  want[0x3C] = 0x01;
  want[0x41] = 0x01;
  want[0x43] = 0x01;
  want[0x45] = 0x41;
  want[0x55] = 0x01;
  EXPECT_EQ(EncodeRecord(r), want);
  EXPECT_EQ(DecodeAs<MemoryModuleRecord>(want), r);
}

// --- Generic -------------------------------------------------------------------------------

TEST(Generic, SwitchPortSparingDcdAndUnknownUuidsKeepRawData) {
  const std::pair<Uuid, RecordKind> cases[] = {
      {kPhysicalSwitchUuid, RecordKind::kPhysicalSwitch},
      {kVirtualSwitchUuid, RecordKind::kVirtualSwitch},
      {kMldPortUuid, RecordKind::kMldPort},
      {kMemorySparingUuid, RecordKind::kMemorySparing},
      {kDynamicCapacityUuid, RecordKind::kDynamicCapacity},
      {Uuid{{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}, RecordKind::kUnknown},
  };
  for (const auto& [uuid, kind] : cases) {
    Image b{};
    PutUuid(b, uuid);
    PutHeader(b);
    for (size_t i = 0x30; i < 0x80; ++i) b[i] = static_cast<uint8_t>(i * 3);
    const auto g = DecodeAs<GenericRecord>(b);
    EXPECT_EQ(g.kind, kind) << uuid.ToString();
    EXPECT_EQ(g.uuid, uuid);
    ExpectFixtureHeader(g.header);
    for (size_t i = 0; i < 80; ++i) EXPECT_EQ(g.data[i], static_cast<uint8_t>((0x30 + i) * 3));
    EXPECT_EQ(EncodeRecord(g), b);
    EXPECT_EQ(KindOf(g), kind);
    EXPECT_EQ(UuidOf(g), uuid);
    if (kind == RecordKind::kUnknown) {
      EXPECT_EQ(RecordWarnings(g),
                std::vector<std::string>{
                    "unknown event record UUID deadbeef-0102-0304-0506-0708090a0b0c"});
    } else {
      EXPECT_TRUE(RecordWarnings(g).empty());
    }
  }
}

TEST(EventRecord, VariantAccessors) {
  EventRecord r = GeneralMediaRecord{};
  EXPECT_EQ(KindOf(r), RecordKind::kGeneralMedia);
  EXPECT_EQ(UuidOf(r), kGeneralMediaUuid);
  MutableHeaderOf(r).handle = 0x4242;
  EXPECT_EQ(HeaderOf(r).handle, 0x4242);
  const auto bytes = EncodeRecord(r);
  EXPECT_EQ(bytes[kHeaderHandleOffset], 0x42);
  EXPECT_EQ(bytes[kHeaderHandleOffset + 1], 0x42);
  r = DramRecord{};
  EXPECT_EQ(KindOf(r), RecordKind::kDram);
  EXPECT_EQ(UuidOf(r), kDramUuid);
  r = MemoryModuleRecord{};
  EXPECT_EQ(KindOf(r), RecordKind::kMemoryModule);
  EXPECT_EQ(UuidOf(r), kMemoryModuleUuid);
}

TEST(EventRecord, EncodeTruncatesWideValuesToTheirFields) {
  GeneralMediaRecord r;
  r.header.flags = 0xFF000001;  // only bits 23:0 go on the wire
  r.device = 0xAA123456;
  r.cme_count = 0xBB654321;
  const auto b = EncodeRecord(r);
  EXPECT_EQ(b[0x11], 0x01);
  EXPECT_EQ(b[0x12], 0x00);
  EXPECT_EQ(b[0x13], 0x00);
  EXPECT_EQ(b[0x14], 0x00);  // handle untouched
  EXPECT_EQ(b[0x3F], 0x56);
  EXPECT_EQ(b[0x41], 0x12);
  EXPECT_EQ(b[0x42], 0x00);  // component ID untouched
  EXPECT_EQ(b[0x53], 0x21);
  EXPECT_EQ(b[0x55], 0x65);
  EXPECT_EQ(b[0x56], 0x00);  // sub-type untouched
}

// --- Malformed input -----------------------------------------------------------------------

TEST(DecodeRecord, ShortBuffersAreInvalidArgumentNamingTheSize) {
  const Image full = GmerFixture(0x1F);
  for (size_t n = 0; n < 128; ++n) {
    std::vector<uint8_t> buf(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    absl::StatusOr<EventRecord> r = DecodeRecord(buf);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_EQ(r.status().message(),
              "CXL event record needs 128 bytes, buffer has " + std::to_string(n));
  }
}

TEST(DecodeRecord, LongerBufferDecodesTheFirst128Bytes) {
  const Image full = DramFixture(0x7FF);
  std::vector<uint8_t> buf(full.begin(), full.end());
  buf.resize(300, 0xEE);
  const absl::StatusOr<EventRecord> r = DecodeRecord(buf);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(EncodeRecord(*r), full);
}

TEST(DecodeRecord, LengthByteOtherThan0x80IsInvalidArgument) {
  for (uint8_t len : {0x00, 0x01, 0x40, 0x7F, 0x81, 0xFF}) {
    Image b = MmerFixture(0);
    b[0x10] = len;
    absl::StatusOr<EventRecord> r = DecodeRecord(b);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    char want[64];
    std::snprintf(want, sizeof(want), "CXL event record length byte is 0x%02x, expected 0x80", len);
    EXPECT_EQ(r.status().message(), want);
  }
}

TEST(DecodeRecord, ReservedEnumValuesDecodeAndAreFlagged) {
  Image g = GmerFixture(0);
  Le(g, 0x11, 0x800002, 3);  // Failure plus reserved bit 23
  g[0x39] = 0x07;
  g[0x3A] = 0x09;
  g[0x56] = 0x06;
  const auto gm = DecodeAs<GeneralMediaRecord>(g);
  EXPECT_EQ(static_cast<uint8_t>(gm.type), 0x07);
  EXPECT_FALSE(IsKnown(gm.type));
  EXPECT_FALSE(IsKnown(gm.transaction_type));
  EXPECT_FALSE(IsKnown(gm.sub_type));
  EXPECT_EQ(GmerEventTypeName(gm.type), "Reserved");
  EXPECT_EQ(TransactionTypeName(gm.transaction_type), "Reserved");
  EXPECT_EQ(gm.header.severity(), Severity::kFailure);
  EXPECT_EQ(gm.header.reserved_flags(), 0x800000u);
  EXPECT_EQ(RecordWarnings(gm), (std::vector<std::string>{
                                    "reserved header flag bits 0x800000 set",
                                    "reserved general media event type 0x07",
                                    "reserved transaction type 0x09",
                                    "reserved memory event sub-type 0x06",
                                }));
  EXPECT_EQ(EncodeRecord(gm), g);

  Image d = DramFixture(0);
  d[0x39] = 0xFF;
  d[0x7E] = 0x80;
  const auto dr = DecodeAs<DramRecord>(d);
  EXPECT_FALSE(IsKnown(dr.type));
  EXPECT_TRUE(IsKnown(dr.transaction_type));
  EXPECT_EQ(DramEventTypeName(dr.type), "Reserved");
  EXPECT_EQ(RecordWarnings(dr), (std::vector<std::string>{
                                    "reserved DRAM event type 0xff",
                                    "reserved memory event sub-type 0x80",
                                }));
  EXPECT_EQ(EncodeRecord(dr), d);

  Image m = MmerFixture(0);
  m[0x30] = 0x09;
  m[0x32] = 0x0A;
  m[0x55] = 0x04;
  const auto mm = DecodeAs<MemoryModuleRecord>(m);
  EXPECT_FALSE(IsKnown(mm.event_type));
  EXPECT_FALSE(IsKnown(mm.health.media_status));
  EXPECT_FALSE(IsKnown(mm.event_sub_type));
  EXPECT_EQ(MemModuleEventTypeName(mm.event_type), "Reserved");
  EXPECT_EQ(MediaStatusName(mm.health.media_status), "Reserved");
  EXPECT_EQ(MemModuleEventSubTypeName(mm.event_sub_type), "Reserved");
  EXPECT_EQ(RecordWarnings(mm), (std::vector<std::string>{
                                    "reserved memory module event type 0x09",
                                    "reserved media status 0x0a",
                                    "reserved memory module event sub-type 0x04",
                                }));
  EXPECT_EQ(EncodeRecord(mm), m);
}

// --- Round trips and mutation --------------------------------------------------------------

std::vector<Uuid> AllUuids() {
  return {kGeneralMediaUuid,    kDramUuid,           kMemoryModuleUuid,  kMemorySparingUuid,
          kDynamicCapacityUuid, kPhysicalSwitchUuid, kVirtualSwitchUuid, kMldPortUuid,
          Uuid{{1, 2, 3}}};
}

TEST(RoundTrip, RandomImagesAreExactForEveryUuid) {
  std::mt19937 rng(20240229);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const Uuid& uuid : AllUuids()) {
    for (int iter = 0; iter < 500; ++iter) {
      Image b;
      for (auto& x : b) x = static_cast<uint8_t>(byte(rng));
      PutUuid(b, uuid);
      b[0x10] = 0x80;
      const absl::StatusOr<EventRecord> r = DecodeRecord(b);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(KindOf(*r), KindFromUuid(uuid));
      ASSERT_EQ(EncodeRecord(*r), b) << uuid.ToString() << " iteration " << iter;
      const absl::StatusOr<EventRecord> again = DecodeRecord(EncodeRecord(*r));
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(*again, *r);
    }
  }
}

TEST(RoundTrip, MutatedAndTruncatedInputNeverCrashes) {
  std::mt19937 rng(7);
  const Image seeds[] = {GmerFixture(0x1F), DramFixture(0x7FF), MmerFixture(3),
                         EncodeRecord(GenericRecord{RecordKind::kMldPort, kMldPortUuid, {}, {}})};
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<size_t> pos(0, 127);
  std::uniform_int_distribution<size_t> len(0, 128);
  std::uniform_int_distribution<int> flips(1, 4);
  int decoded = 0;
  for (int iter = 0; iter < 10000; ++iter) {
    const Image& seed = seeds[static_cast<size_t>(iter) % 4];
    std::vector<uint8_t> buf(seed.begin(), seed.end());
    for (int f = flips(rng); f > 0; --f) buf[pos(rng)] ^= static_cast<uint8_t>(1 + byte(rng) % 255);
    if (iter % 3 == 0) buf.resize(len(rng));
    buf.shrink_to_fit();  // exact-size heap buffer: an overread would leave it
    const absl::StatusOr<EventRecord> r = DecodeRecord(buf);
    const bool valid = buf.size() == 128 && buf[0x10] == 0x80;
    ASSERT_EQ(r.ok(), valid) << iter << " " << r.status();
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ++decoded;
    const auto out = EncodeRecord(*r);
    ASSERT_TRUE(std::equal(out.begin(), out.end(), buf.begin())) << iter;
    (void)RecordWarnings(*r);
    (void)RecordToJson(*r, "Fatal");
  }
  EXPECT_GT(decoded, 1000);
}

// --- Names ---------------------------------------------------------------------------------

TEST(Names, MatchTheKernelTracepointTables) {
  EXPECT_EQ(GmerEventTypeName(GmerEventType::kEccError), "ECC Error");
  EXPECT_EQ(GmerEventTypeName(GmerEventType::kInvalidAddress), "Invalid Address");
  EXPECT_EQ(GmerEventTypeName(GmerEventType::kAdvProgCmeCounterExpiration),
            "Adv Prog CME Counter Expiration");
  EXPECT_EQ(DramEventTypeName(DramEventType::kScrubMediaEccError), "Scrub Media ECC Error");
  EXPECT_EQ(DramEventTypeName(DramEventType::kInvalidAddress), "Invalid Address");
  EXPECT_EQ(DramEventTypeName(DramEventType::kCkidViolation), "CKID Violation");
  EXPECT_EQ(TransactionTypeName(TransactionType::kUnknown), "Unknown");
  EXPECT_EQ(TransactionTypeName(TransactionType::kHostScanMedia), "Host Scan Media");
  EXPECT_EQ(TransactionTypeName(TransactionType::kInternalMediaErrorCheckScrub),
            "Internal Media Error Check Scrub");
  EXPECT_EQ(MemEventSubTypeName(MemEventSubType::kMediaLinkControlTrainingError),
            "Media Link Control Training Error");
  EXPECT_EQ(MemModuleEventTypeName(MemModuleEventType::kLsaError), "LSA Error");
  EXPECT_EQ(MemModuleEventTypeName(MemModuleEventType::kUnrecoverableSidebandBusError),
            "Unrecoverable Internal Sideband Bus Error");
  EXPECT_EQ(MemModuleEventSubTypeName(MemModuleEventSubType::kUnsupportedConfigData),
            "Unsupported Config Data");
  EXPECT_EQ(MediaStatusName(MediaStatus::kWritePersistencyLossOnPowerLoss),
            "Write Persistency Loss in the Event of Power Loss");
  EXPECT_EQ(MediaStatusName(MediaStatus::kAllDataLossOnShutdown),
            "All Data loss in the Event of Shutdown");
  EXPECT_EQ(AdditionalStatusName(0), "Normal");
  EXPECT_EQ(AdditionalStatusName(2), "Critical");
  EXPECT_EQ(AdditionalStatusName(3), "Reserved");
  for (int v = 0; v < 256; ++v) {
    const auto u = static_cast<uint8_t>(v);
    EXPECT_EQ(IsKnown(static_cast<GmerEventType>(u)), v <= 6);
    EXPECT_EQ(IsKnown(static_cast<DramEventType>(u)), v <= 6);
    EXPECT_EQ(IsKnown(static_cast<TransactionType>(u)), v <= 8);
    EXPECT_EQ(IsKnown(static_cast<MemEventSubType>(u)), v <= 5);
    EXPECT_EQ(IsKnown(static_cast<MemModuleEventType>(u)), v <= 8);
    EXPECT_EQ(IsKnown(static_cast<MemModuleEventSubType>(u)), v <= 3);
    EXPECT_EQ(IsKnown(static_cast<MediaStatus>(u)), v <= 9);
  }
}

TEST(Names, FlagStringsFollowPrintFlags) {
  EXPECT_EQ(HeaderFlagsString(0), "");
  EXPECT_EQ(HeaderFlagsString(0x18), "MAINTENANCE_NEEDED | PERFORMANCE_DEGRADED");
  EXPECT_EQ(HeaderFlagsString(0x01), "0x1");  // severity bits have no names
  EXPECT_EQ(HeaderFlagsString(0x6E),
            "PERMANENT_CONDITION | MAINTENANCE_NEEDED | HARDWARE_REPLACEMENT_NEEDED | "
            "MAINT_OP_SUB_CLASS_VALID | 0x2");
  EXPECT_EQ(DpaFlagsString(0x03), "VOLATILE|NOT_REPAIRABLE");
  EXPECT_EQ(DescriptorString(0x0D), "UNCORRECTABLE_EVENT|POISON_LIST_OVERFLOW|0x8");
  EXPECT_EQ(GmerValidityString(0x1F), "CHANNEL|RANK|DEVICE|COMPONENT|COMPONENT PLDM FORMAT");
  EXPECT_EQ(DramValidityString(0x7FF),
            "CHANNEL|RANK|NIBBLE|BANK GROUP|BANK|ROW|COLUMN|CORRECTION MASK|COMPONENT|"
            "COMPONENT PLDM FORMAT|SUB CHANNEL");
  EXPECT_EQ(MemModuleValidityString(0x03), "COMPONENT|COMPONENT PLDM FORMAT");
  EXPECT_EQ(HealthStatusString(0x0F),
            "MAINTENANCE_NEEDED|PERFORMANCE_DEGRADED|REPLACEMENT_NEEDED|MEM_CAPACITY_DEGRADED");
  EXPECT_EQ(CmeThresholdFlagsString(0x03),
            "Corrected Memory Errors in Multiple Media Components|Exceeded Programmable "
            "Threshold");
}

// --- JSON ----------------------------------------------------------------------------------

TEST(Json, GeneralMedia) {
  GeneralMediaRecord r;
  r.header.flags = 0x0A;  // Failure, maintenance needed
  r.header.handle = 5;
  r.header.timestamp = 1700000000000000000ULL;
  r.physical_address = 0x1000C1;
  r.descriptor = 1;
  r.transaction_type = TransactionType::kHostRead;
  r.validity_flags = 0x0B;
  r.channel = 2;
  r.rank = 3;
  r.component_id = {'D', 'I', 'M', 'M', '0'};
  EXPECT_EQ(RecordToJson(r, "Failure"),
            R"({"system":"cxl","event":"cxl_general_media","log":"Failure",)"
            R"("hdr_uuid":"fbcd0a77-c260-417f-85a9-088b1621eba6","hdr_flags":10,"hdr_handle":5,)"
            R"("hdr_related_handle":0,"hdr_timestamp":1700000000000000000,"hdr_length":128,)"
            R"("hdr_maint_op_class":0,"hdr_maint_op_sub_class":0,"dpa":1048768,"descriptor":1,)"
            R"("type":0,"transaction_type":1,"channel":2,"device":0,)"
            R"("comp_id":[68,73,77,77,48,0,0,0,0,0,0,0,0,0,0,0],"validity_flags":11,"rank":3,)"
            R"("dpa_flags":1,"cme_count":0,"sub_type":0,"cme_threshold_ev_flags":0})");
}

TEST(Json, Dram) {
  DramRecord r;
  r.header.flags = 0x01;
  r.header.handle = 16;
  r.header.related_handle = 3;
  r.header.timestamp = 42;
  r.header.maint_op_class = 1;
  r.header.maint_op_sub_class = 2;
  r.physical_address = 0x2000;
  r.descriptor = 2;
  r.type = DramEventType::kScrubMediaEccError;
  r.transaction_type = TransactionType::kInternalMediaScrub;
  r.validity_flags = 0x7FF;
  r.channel = 1;
  r.nibble_mask = 0x000F0F;
  r.bank_group = 2;
  r.bank = 5;
  r.row = 0x12345;
  r.column = 0x3FF;
  r.correction_mask[0] = 0xFF;
  r.sub_channel = 1;
  r.cme_threshold_ev_flags = 2;
  r.cvme_count = 7;
  r.sub_type = MemEventSubType::kMediaLinkCrcError;
  EXPECT_EQ(RecordToJson(r, "Warning"),
            R"({"system":"cxl","event":"cxl_dram","log":"Warning",)"
            R"("hdr_uuid":"601dcbb3-9c06-4eab-b8af-4e9bfb5c9624","hdr_flags":1,"hdr_handle":16,)"
            R"("hdr_related_handle":3,"hdr_timestamp":42,"hdr_length":128,)"
            R"("hdr_maint_op_class":1,"hdr_maint_op_sub_class":2,"dpa":8192,"descriptor":2,)"
            R"("type":1,"transaction_type":5,"channel":1,"validity_flags":2047,"column":1023,)"
            R"("nibble_mask":3855,"row":74565,)"
            R"("cor_mask":[255,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],)"
            R"("rank":0,"bank_group":2,"bank":5,"dpa_flags":0,)"
            R"("comp_id":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"cvme_count":7,"sub_type":5,)"
            R"("sub_channel":1,"cme_threshold_ev_flags":2})");
}

TEST(Json, MemoryModule) {
  MemoryModuleRecord r;
  r.header.flags = 0x2E;
  r.header.handle = 0xFFFF;
  r.header.related_handle = 1;
  r.event_type = MemModuleEventType::kTemperatureChange;
  r.health.health_status = 5;
  r.health.media_status = MediaStatus::kWritePersistencyLost;
  r.health.additional_status = 0x19;
  r.health.life_used = 87;
  r.health.device_temp = -5;
  r.health.dirty_shutdown_count = 3;
  r.health.corrected_volatile_error_count = 100000;
  r.health.corrected_persistent_error_count = 0xFFFFFFFF;
  r.validity_flags = 1;
  r.component_id[0] = 1;
  r.component_id[1] = 2;
  r.event_sub_type = MemModuleEventSubType::kInvalidConfigData;
  EXPECT_EQ(RecordToJson(r, "Fatal"),
            R"({"system":"cxl","event":"cxl_memory_module","log":"Fatal",)"
            R"("hdr_uuid":"fe927475-dd59-4339-a586-79bab113b774","hdr_flags":46,)"
            R"("hdr_handle":65535,"hdr_related_handle":1,"hdr_timestamp":0,"hdr_length":128,)"
            R"("hdr_maint_op_class":0,"hdr_maint_op_sub_class":0,"event_type":3,)"
            R"("health_status":5,"media_status":2,"life_used":87,"dirty_shutdown_cnt":3,)"
            R"("cor_vol_err_cnt":100000,"cor_per_err_cnt":4294967295,"device_temp":-5,)"
            R"("add_status":25,"event_sub_type":1,)"
            R"("comp_id":[1,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"validity_flags":1})");
}

TEST(Json, GenericWithEscapedLogName) {
  GenericRecord g;
  g.kind = RecordKind::kPhysicalSwitch;
  g.uuid = kPhysicalSwitchUuid;
  g.header.handle = 1;
  g.data[0] = 1;
  g.data[79] = 255;
  EXPECT_EQ(RecordToJson(g, "a\"b\\c\n\t\x01/"),
            R"({"system":"cxl","event":"cxl_generic_event","log":"a\"b\\c\n\t\u0001/",)"
            R"("hdr_uuid":"77cf9271-9c02-470b-9fe4-bc7b75f2da97","hdr_flags":0,"hdr_handle":1,)"
            R"("hdr_related_handle":0,"hdr_timestamp":0,"hdr_length":128,)"
            R"("hdr_maint_op_class":0,"hdr_maint_op_sub_class":0,)"
            R"("data":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,)"
            R"(0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,)"
            R"(0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,)"
            R"(0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,255]})");
}

// ensure_ascii off: valid UTF-8 and DEL pass through; each invalid byte becomes U+FFFD.
TEST(Json, LogNameUtf8PassesThroughAndInvalidBytesBecomeReplacementCharacters) {
  GenericRecord g;
  const std::string prefix = R"({"system":"cxl","event":"cxl_generic_event","log":")";
  const std::string valid = prefix + "caf\xc3\xa9 \x7f\",";
  EXPECT_EQ(RecordToJson(g, "caf\xc3\xa9 \x7f").substr(0, valid.size()), valid);
  const std::string invalid = prefix +
                              "a\xef\xbf\xbd\xef\xbf\xbd"
                              "b\",";
  EXPECT_EQ(RecordToJson(g,
                         "a\xff\xc3"
                         "b")
                .substr(0, invalid.size()),
            invalid);
}

}  // namespace
}  // namespace ecd::cxl
