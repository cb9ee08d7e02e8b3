// DOCA-defined coding matrices over GF(2^8) (ISA-L's field, polynomial 0x11d), shape limits, and
// the exhaustive decodability check for Vandermonde codes.
#include "lib/ec/matrix.h"

#include <isa-l/erasure_code.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ecd::ec {
namespace {

// Patterns checked at most; C(M+K, K) beyond this is refused rather than trusted.
constexpr uint64_t kMaxPatternsToCheck = 2'000'000;

uint8_t Power(uint8_t base, int exponent) {
  uint8_t r = 1;
  for (int e = 0; e < exponent; ++e) r = static_cast<uint8_t>(gf_mul(r, base));
  return r;
}

// C(n, k), saturating at limit + 1.
uint64_t Choose(int n, int k, uint64_t limit) {
  uint64_t r = 1;
  for (int i = 1; i <= k; ++i) {
    r = r * static_cast<uint64_t>(n - k + i) / static_cast<uint64_t>(i);
    if (r > limit) return limit + 1;
  }
  return r;
}

// Whether the r x r matrix `a` (row-major, destroyed) is nonsingular over GF(2^8).
bool Nonsingular(std::vector<uint8_t>& a, int r) {
  for (int col = 0; col < r; ++col) {
    int pivot = col;
    while (pivot < r && a[pivot * r + col] == 0) ++pivot;
    if (pivot == r) return false;
    if (pivot != col) {
      for (int j = 0; j < r; ++j) std::swap(a[pivot * r + j], a[col * r + j]);
    }
    const uint8_t inv = static_cast<uint8_t>(gf_inv(a[col * r + col]));
    for (int row = col + 1; row < r; ++row) {
      const uint8_t f = static_cast<uint8_t>(gf_mul(a[row * r + col], inv));
      if (f == 0) continue;
      for (int j = col; j < r; ++j) {
        a[row * r + j] ^= static_cast<uint8_t>(gf_mul(f, a[col * r + j]));
      }
    }
  }
  return true;
}

}  // namespace

absl::Status ValidateShape(int data, int parity) {
  if (data < 1 || data > kMaxDataBlocks) {
    return absl::InvalidArgumentError(
        absl::StrCat("data blocks M=", data, " out of range: M must be 1..", kMaxDataBlocks));
  }
  if (parity < 1 || parity > kMaxParityBlocks) {
    return absl::InvalidArgumentError(
        absl::StrCat("parity blocks K=", parity, " out of range: K must be 1..", kMaxParityBlocks));
  }
  return absl::OkStatus();
}

absl::Status ValidateBlockSize(size_t block_size) {
  if (block_size < kMinBlockSize || block_size > kMaxBlockSize ||
      block_size % kBlockAlignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block size ", block_size, " is invalid: it must be a multiple of 64 bytes from 64 B to ",
        "128 MiB (e.g. 64K, 1M)"));
  }
  return absl::OkStatus();
}

std::vector<uint8_t> CodingMatrix(MatrixType type, int data, int parity) {
  std::vector<uint8_t> a(static_cast<size_t>(data) * parity);
  for (int j = 0; j < parity; ++j) {
    for (int i = 0; i < data; ++i) {
      a[j * data + i] = type == MatrixType::kVandermonde
                            ? Power(static_cast<uint8_t>(i + 1), j)
                            : static_cast<uint8_t>(gf_inv(static_cast<uint8_t>(i ^ (data + j))));
    }
  }
  return a;
}

absl::Status CheckEveryErasurePatternDecodes(const std::vector<uint8_t>& coding, int data,
                                             int parity) {
  // The systematic code [I; A] is MDS iff every square submatrix of A is nonsingular: losing the
  // data blocks in column set C and keeping the parity blocks in row set R (|R| = |C|) decodes iff
  // A[R][C] is invertible.
  if (Choose(data + parity, parity, kMaxPatternsToCheck) > kMaxPatternsToCheck) {
    return absl::InvalidArgumentError(absl::StrCat("a vandermonde matrix for ", data, "+", parity,
                                                   " has too many erasure patterns to verify (",
                                                   "more than ", kMaxPatternsToCheck,
                                                   "); use --matrix cauchy"));
  }
  std::vector<int> rows, cols;
  std::vector<uint8_t> sub;
  for (int r = 1; r <= std::min(data, parity); ++r) {
    rows.assign(r, 0);
    for (int x = 0; x < r; ++x) rows[x] = x;
    for (;;) {
      cols.assign(r, 0);
      for (int x = 0; x < r; ++x) cols[x] = x;
      for (;;) {
        sub.resize(static_cast<size_t>(r) * r);
        for (int x = 0; x < r; ++x) {
          for (int y = 0; y < r; ++y) sub[x * r + y] = coding[rows[x] * data + cols[y]];
        }
        if (!Nonsingular(sub, r)) {
          // Lost: the data blocks in cols and every parity block not in rows.
          std::vector<int> lost(cols.begin(), cols.end());
          for (int j = 0, x = 0; j < parity && static_cast<int>(lost.size()) < parity; ++j) {
            if (x < r && rows[x] == j) {
              ++x;
            } else {
              lost.push_back(data + j);
            }
          }
          return absl::InvalidArgumentError(absl::StrCat(
              "a vandermonde matrix for ", data, "+", parity, " cannot decode the loss of blocks {",
              absl::StrJoin(lost, ","), "}; use --matrix cauchy"));
        }
        int c = r - 1;  // Next combination of columns.
        while (c >= 0 && cols[c] == data - r + c) --c;
        if (c < 0) break;
        ++cols[c];
        for (int y = c + 1; y < r; ++y) cols[y] = cols[y - 1] + 1;
      }
      int q = r - 1;  // Next combination of rows.
      while (q >= 0 && rows[q] == parity - r + q) --q;
      if (q < 0) break;
      ++rows[q];
      for (int x = q + 1; x < r; ++x) rows[x] = rows[x - 1] + 1;
    }
  }
  return absl::OkStatus();
}

const char* MatrixTypeName(MatrixType type) {
  switch (type) {
    case MatrixType::kVandermonde:
      return "vandermonde";
    case MatrixType::kRaw:
      return "raw";
    case MatrixType::kCauchy:
      break;
  }
  return "cauchy";
}

}  // namespace ecd::ec
