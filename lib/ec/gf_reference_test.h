// A scalar GF(2^8) reference (polynomial 0x11d) for the tests, independent of ISA-L.
#ifndef ECD_LIB_EC_GF_REFERENCE_TEST_H_
#define ECD_LIB_EC_GF_REFERENCE_TEST_H_

#include <cstdint>
#include <vector>

namespace ecd::ec::testing {

inline uint8_t RefMul(uint8_t a, uint8_t b) {
  uint8_t r = 0;
  while (b) {
    if (b & 1) r ^= a;
    a = static_cast<uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
    b >>= 1;
  }
  return r;
}

inline uint8_t RefInv(uint8_t a) {
  for (int x = 1; x < 256; ++x) {
    if (RefMul(a, static_cast<uint8_t>(x)) == 1) return static_cast<uint8_t>(x);
  }
  return 0;
}

inline uint8_t RefPow(uint8_t a, int e) {
  uint8_t r = 1;
  while (e-- > 0) r = RefMul(r, a);
  return r;
}

// parity[j][x] = sum_i coding[j*M + i] * data[i][x].
inline std::vector<std::vector<uint8_t>> RefEncode(const std::vector<uint8_t>& coding, int m, int k,
                                                   const std::vector<std::vector<uint8_t>>& data) {
  std::vector<std::vector<uint8_t>> parity(k, std::vector<uint8_t>(data[0].size(), 0));
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < m; ++i) {
      const uint8_t c = coding[j * m + i];
      for (size_t x = 0; x < data[i].size(); ++x) parity[j][x] ^= RefMul(c, data[i][x]);
    }
  }
  return parity;
}

// Whether the r x r matrix is nonsingular (Gaussian elimination with RefMul/RefInv).
inline bool RefNonsingular(std::vector<uint8_t> a, int r) {
  for (int c = 0; c < r; ++c) {
    int p = c;
    while (p < r && a[p * r + c] == 0) ++p;
    if (p == r) return false;
    for (int j = 0; j < r; ++j) std::swap(a[p * r + j], a[c * r + j]);
    const uint8_t inv = RefInv(a[c * r + c]);
    for (int row = c + 1; row < r; ++row) {
      const uint8_t f = RefMul(a[row * r + c], inv);
      for (int j = c; j < r; ++j) a[row * r + j] ^= RefMul(f, a[c * r + j]);
    }
  }
  return true;
}

}  // namespace ecd::ec::testing

#endif  // ECD_LIB_EC_GF_REFERENCE_TEST_H_
