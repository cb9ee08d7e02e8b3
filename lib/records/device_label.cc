// DeviceLabel encoding: magic, version, fields little-endian, CRC32C of what precedes it.
#include "lib/records/device_label.h"

#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/util/crc32c.h"

namespace ecd::store {
namespace {

constexpr char kMagic[8] = {'E', 'C', 'D', 'L', 'A', 'B', 'E', 'L'};
// Field offsets in the label.
constexpr size_t kVersionAt = 8;
constexpr size_t kStoreIdAt = 12;  // 16 bytes
constexpr size_t kDeviceAt = 28;
constexpr size_t kLbaSizeAt = 32;
constexpr size_t kSizeAt = 36;
constexpr size_t kCreatedAt = 44;
constexpr size_t kLogFirstAt = 52;  // Version 2: the record log's place.
constexpr size_t kLogCountAt = 60;
constexpr size_t kLogPageAt = 68;
constexpr size_t kCrcAt = kDeviceLabelBytes - 4;

void Put(std::vector<uint8_t>& out, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t Get(absl::Span<const uint8_t> in, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(in[at + i]) << (8 * i);
  return v;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string NewStoreId() {
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) absl::StrAppendFormat(&id, "%08x", random());
  return id;
}

std::vector<uint8_t> EncodeDeviceLabel(const DeviceLabel& label) {
  std::vector<uint8_t> out(kDeviceLabelBytes, 0);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  Put(out, kVersionAt, kDeviceLabelVersion, 4);
  for (size_t i = 0; i < 16 && 2 * i + 1 < label.store_id.size(); ++i) {
    out[kStoreIdAt + i] = static_cast<uint8_t>(HexDigit(label.store_id[2 * i]) << 4 |
                                               HexDigit(label.store_id[2 * i + 1]));
  }
  Put(out, kDeviceAt, label.device, 4);
  Put(out, kLbaSizeAt, label.lba_size, 4);
  Put(out, kSizeAt, label.size_bytes, 8);
  Put(out, kCreatedAt, static_cast<uint64_t>(label.created_unix_ms), 8);
  Put(out, kLogFirstAt, label.log.first_lba, 8);
  Put(out, kLogCountAt, label.log.lba_count, 8);
  Put(out, kLogPageAt, label.log.page_bytes, 4);
  Put(out, kCrcAt, Crc32c(absl::MakeConstSpan(out).first(kCrcAt)), 4);
  return out;
}

absl::StatusOr<DeviceLabel> DecodeDeviceLabel(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kDeviceLabelBytes || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::NotFoundError("no ecd device label (a blank or foreign namespace)");
  }
  if (Crc32c(bytes.first(kCrcAt)) != Get(bytes, kCrcAt, 4)) {
    return absl::DataLossError("the device label fails its CRC32C");
  }
  const uint64_t version = Get(bytes, kVersionAt, 4);
  if (version > kDeviceLabelVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("device label version ", version, " is newer than this ecd reads (",
                     kDeviceLabelVersion, "): use a matching ecd release"));
  }
  DeviceLabel label;
  for (size_t i = 0; i < 16; ++i) {
    absl::StrAppendFormat(&label.store_id, "%02x", bytes[kStoreIdAt + i]);
  }
  label.device = static_cast<uint32_t>(Get(bytes, kDeviceAt, 4));
  label.lba_size = static_cast<uint32_t>(Get(bytes, kLbaSizeAt, 4));
  label.size_bytes = Get(bytes, kSizeAt, 8);
  label.created_unix_ms = static_cast<int64_t>(Get(bytes, kCreatedAt, 8));
  if (version >= 2) {
    label.log.first_lba = Get(bytes, kLogFirstAt, 8);
    label.log.lba_count = Get(bytes, kLogCountAt, 8);
    label.log.page_bytes = static_cast<uint32_t>(Get(bytes, kLogPageAt, 4));
  }
  return label;
}

}  // namespace ecd::store
