// CRC32C (Castagnoli), the checksum ecd keeps for every stored block, computed with ISA-L.
#ifndef ECD_LIB_STORE_CRC32C_H_
#define ECD_LIB_STORE_CRC32C_H_

#include <cstdint>

#include "absl/types/span.h"

namespace ecd::store {

// Returns the standard CRC32C of `data` (CRC32C("123456789") == 0xE3069283).
uint32_t Crc32c(absl::Span<const uint8_t> data);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_CRC32C_H_
