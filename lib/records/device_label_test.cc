// DeviceLabel: round trip, and what a damaged, foreign or newer label decodes to.
#include "lib/records/device_label.h"

#include <gtest/gtest.h>

#include "lib/util/crc32c.h"

namespace ecd::store {
namespace {

DeviceLabel Sample() {
  return DeviceLabel{.store_id = "0123456789abcdef0011223344556677",
                     .device = 7,
                     .size_bytes = 1ull << 30,
                     .lba_size = 4096,
                     .created_unix_ms = 1765000000000};
}

TEST(DeviceLabelTest, RoundTrips) {
  const std::vector<uint8_t> bytes = EncodeDeviceLabel(Sample());
  ASSERT_EQ(bytes.size(), kDeviceLabelBytes);
  absl::StatusOr<DeviceLabel> back = DecodeDeviceLabel(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->store_id, Sample().store_id);
  EXPECT_EQ(back->device, 7u);
  EXPECT_EQ(back->size_bytes, 1ull << 30);
  EXPECT_EQ(back->lba_size, 4096u);
  EXPECT_EQ(back->created_unix_ms, 1765000000000);
}

TEST(DeviceLabelTest, BlankBytesHoldNoLabel) {
  const std::vector<uint8_t> zeros(4096, 0);
  EXPECT_TRUE(absl::IsNotFound(DecodeDeviceLabel(zeros).status()));
}

TEST(DeviceLabelTest, EveryFlippedByteIsCaught) {
  const std::vector<uint8_t> good = EncodeDeviceLabel(Sample());
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x01;
    absl::StatusOr<DeviceLabel> got = DecodeDeviceLabel(bad);
    EXPECT_FALSE(got.ok()) << "byte " << i;
  }
}

TEST(DeviceLabelTest, NewerVersionIsRefused) {
  std::vector<uint8_t> bytes = EncodeDeviceLabel(Sample());
  bytes[8] = kDeviceLabelVersion + 1;
  // A valid CRC32C over the new version, so that only the version is wrong.
  const uint32_t crc = Crc32c(absl::MakeConstSpan(bytes).first(kDeviceLabelBytes - 4));
  for (int i = 0; i < 4; ++i)
    bytes[kDeviceLabelBytes - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
  absl::StatusOr<DeviceLabel> got = DecodeDeviceLabel(bytes);
  EXPECT_TRUE(absl::IsFailedPrecondition(got.status())) << got.status();
}

TEST(DeviceLabelTest, StoreIdsAreFreshHex) {
  const std::string a = NewStoreId();
  const std::string b = NewStoreId();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace ecd::store
