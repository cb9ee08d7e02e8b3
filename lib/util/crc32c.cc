// CRC32C on ISA-L's crc32_iscsi, which takes the running (pre-inverted) CRC and returns it
// un-inverted; the standard value is its complement.
#include "lib/util/crc32c.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>

namespace ecd::store {

uint32_t Crc32c(absl::Span<const uint8_t> data) {
  uint32_t crc = 0xFFFFFFFFu;
  const uint8_t* p = data.data();
  size_t left = data.size();
  while (left > 0) {  // crc32_iscsi takes an int length.
    const int n = static_cast<int>(std::min<size_t>(left, size_t{1} << 30));
    crc = crc32_iscsi(const_cast<uint8_t*>(p), n, crc);
    p += n;
    left -= static_cast<size_t>(n);
  }
  return ~crc;
}

}  // namespace ecd::store
