// Checks Crc32c against the standard check value and a bitwise reference.
#include "lib/util/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace ecd::store {
namespace {

uint32_t ReferenceCrc32c(const std::vector<uint8_t>& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32cTest, StandardCheckValue) {
  const std::string check = "123456789";
  EXPECT_EQ(Crc32c(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(check.data()),
                                             check.size())),
            0xE3069283u);
  EXPECT_EQ(Crc32c({}), 0u);
}

TEST(Crc32cTest, MatchesBitwiseReference) {
  std::mt19937 rng(7);
  for (size_t len : {1u, 63u, 64u, 4095u, 4096u, 65537u}) {
    std::vector<uint8_t> data(len);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    EXPECT_EQ(Crc32c(data), ReferenceCrc32c(data)) << len;
    data[len / 2] ^= 1;  // A single flipped bit changes it.
    EXPECT_EQ(Crc32c(data), ReferenceCrc32c(data)) << len;
  }
}

}  // namespace
}  // namespace ecd::store
