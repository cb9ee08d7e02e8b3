// A scalar GF(2^8) reference (polynomial 0x11d) for the lib/ec tests, independent of ISA-L:
// field arithmetic, the DOCA matrix formulas, encoding, brute-force decodability, and a bitwise
// CRC32C for the checksums the encode computes.
#ifndef ECD_LIB_EC_GF_REFERENCE_TEST_H_
#define ECD_LIB_EC_GF_REFERENCE_TEST_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace ecd::ec::testing {

// Addition (and subtraction) in GF(2^8).
inline uint8_t RefAdd(uint8_t a, uint8_t b) { return static_cast<uint8_t>(a ^ b); }

// Shift-and-xor multiplication modulo x^8 + x^4 + x^3 + x^2 + 1 (0x11d).
inline uint8_t RefMul(uint8_t a, uint8_t b) {
  uint8_t r = 0;
  while (b) {
    if (b & 1) r ^= a;
    a = static_cast<uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
    b >>= 1;
  }
  return r;
}

// The multiplicative inverse, found by search (once per value). RefInv(0) is 0: 0 has none.
inline uint8_t RefInv(uint8_t a) {
  static const std::array<uint8_t, 256> kInverse = [] {
    std::array<uint8_t, 256> inv{};
    for (int v = 1; v < 256; ++v) {
      for (int x = 1; x < 256; ++x) {
        if (RefMul(static_cast<uint8_t>(v), static_cast<uint8_t>(x)) == 1) {
          inv[v] = static_cast<uint8_t>(x);
          break;
        }
      }
    }
    return inv;
  }();
  return kInverse[a];
}

inline uint8_t RefPow(uint8_t a, int e) {
  uint8_t r = 1;
  while (e-- > 0) r = RefMul(r, a);
  return r;
}

// DOCA_EC_MATRIX_TYPE_CAUCHY, K x M row-major: a_ij = 1 / (x_i + y_j), x_i = i, y_j = M + j.
inline std::vector<uint8_t> RefDocaCauchy(int m, int k) {
  std::vector<uint8_t> a(static_cast<size_t>(m) * k);
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < m; ++i) {
      a[j * m + i] = RefInv(RefAdd(static_cast<uint8_t>(i), static_cast<uint8_t>(m + j)));
    }
  }
  return a;
}

// DOCA_EC_MATRIX_TYPE_VANDERMONDE, K x M row-major: a_ij = (i + 1)^j.
inline std::vector<uint8_t> RefDocaVandermonde(int m, int k) {
  std::vector<uint8_t> a(static_cast<size_t>(m) * k);
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < m; ++i) a[j * m + i] = RefPow(static_cast<uint8_t>(i + 1), j);
  }
  return a;
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

// Whether the M blocks `survivors` (indices 0..M+K-1, M of them) of the systematic code [I; A]
// determine the data: their generator rows form a nonsingular M x M matrix.
inline bool RefSurvivorsDecode(const std::vector<uint8_t>& a, int m,
                               const std::vector<int>& survivors) {
  std::vector<uint8_t> g;
  for (int idx : survivors) {
    for (int c = 0; c < m; ++c) g.push_back(idx < m ? (idx == c) : a[(idx - m) * m + c]);
  }
  return RefNonsingular(g, m);
}

// Brute force over every set of exactly K lost blocks: returns one, ascending, whose M survivors
// do not decode, or nullopt when every loss of up to K blocks decodes (the code is MDS: a
// smaller loss decodes iff one of its K-supersets does, since its survivors have full rank iff
// some M of them do). Costs C(M+K, K) eliminations of M x M: small shapes only.
inline std::optional<std::vector<int>> RefFindUndecodableLoss(const std::vector<uint8_t>& a, int m,
                                                              int k) {
  const int n = m + k;
  std::vector<bool> lost(n, false);
  std::fill(lost.begin(), lost.begin() + k, true);
  do {
    std::vector<int> survivors, lost_set;
    for (int x = 0; x < n; ++x) (lost[x] ? lost_set : survivors).push_back(x);
    if (!RefSurvivorsDecode(a, m, survivors)) return lost_set;
  } while (std::prev_permutation(lost.begin(), lost.end()));
  return std::nullopt;
}

// CRC32C bit by bit (reflected polynomial 0x82F63B78, the standard value), the reference for
// the checksums Codec::Encode computes beside the parity.
inline uint32_t RefCrc32c(const std::vector<uint8_t>& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

}  // namespace ecd::ec::testing

#endif  // ECD_LIB_EC_GF_REFERENCE_TEST_H_
