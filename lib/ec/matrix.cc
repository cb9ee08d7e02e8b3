// DOCA-defined coding matrices over GF(2^8) (ISA-L's field, polynomial 0x11d), shape limits, and
// the exhaustive decodability check for Vandermonde codes.
#include "lib/ec/matrix.h"

#include <isa-l/erasure_code.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ecd::ec {
namespace {

// Square submatrices (= erasure patterns) checked at most. Beyond this a matrix that has shown
// no singular pattern yet is refused rather than trusted.
constexpr uint64_t kMaxPatternsToCheck = 2'000'000;

uint8_t Mul(uint8_t a, uint8_t b) { return static_cast<uint8_t>(gf_mul(a, b)); }

uint8_t Power(uint8_t base, int exponent) {
  uint8_t r = 1;
  for (int e = 0; e < exponent; ++e) r = Mul(r, base);
  return r;
}

// Advances `c`, an ascending r-combination of 0..n-1, to the next one in lexicographic order.
// Returns false (leaving `c` unspecified) after the last one.
bool NextCombination(std::vector<int>& c, int n) {
  const int r = static_cast<int>(c.size());
  int x = r - 1;
  while (x >= 0 && c[x] == n - r + x) --x;
  if (x < 0) return false;
  ++c[x];
  for (int y = x + 1; y < r; ++y) c[y] = c[y - 1] + 1;
  return true;
}

// Whether the r x r matrix `a` (row-major, destroyed) is nonsingular over GF(2^8).
bool Nonsingular(std::vector<uint8_t>& a, int r) {
  for (int col = 0; col < r; ++col) {
    int pivot = col;
    while (pivot < r && a[pivot * r + col] == 0) ++pivot;
    if (pivot == r) return false;
    if (pivot != col) {
      for (int j = col; j < r; ++j) std::swap(a[pivot * r + j], a[col * r + j]);
    }
    const uint8_t inv = static_cast<uint8_t>(gf_inv(a[col * r + col]));
    for (int row = col + 1; row < r; ++row) {
      const uint8_t f = Mul(a[row * r + col], inv);
      if (f == 0) continue;
      for (int j = col; j < r; ++j) a[row * r + j] ^= Mul(f, a[col * r + j]);
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
  constexpr const char* kRule = "block sizes are multiples of 64 B from 64 B to 128 MiB";
  if (block_size < kMinBlockSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("block size ", block_size, " B is too small: use at least 64 (", kRule, ")"));
  }
  if (block_size > kMaxBlockSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block size ", block_size, " B is too large: use at most 134217728 (", kRule, ")"));
  }
  if (block_size % kBlockAlignment != 0) {
    const size_t up = (block_size / kBlockAlignment + 1) * kBlockAlignment;
    return absl::InvalidArgumentError(absl::StrCat(
        "block size ", block_size, " B is not a multiple of 64: pad it to ", up, " (", kRule, ")"));
  }
  return absl::OkStatus();
}

std::vector<uint8_t> CodingMatrix(MatrixType type, int data, int parity) {
  std::vector<uint8_t> a(static_cast<size_t>(data) * parity);
  for (int j = 0; j < parity; ++j) {
    for (int i = 0; i < data; ++i) {
      if (type == MatrixType::kVandermonde) {
        a[j * data + i] = Power(static_cast<uint8_t>(i + 1), j);  // (i + 1)^j.
      } else {
        // 1 / (x_i + y_j) with x_i = i, y_j = M + j; addition is XOR. The x's and y's are
        // distinct values below M + K <= 160, so the sum is never 0.
        a[j * data + i] = static_cast<uint8_t>(gf_inv(static_cast<uint8_t>(i ^ (data + j))));
      }
    }
  }
  return a;
}

absl::Status CheckEveryErasurePatternDecodes(const std::vector<uint8_t>& coding, int data,
                                             int parity) {
  if (absl::Status s = ValidateShape(data, parity); !s.ok()) return s;
  if (coding.size() != static_cast<size_t>(data) * parity) {
    return absl::InvalidArgumentError(absl::StrCat("a coding matrix for ", data, "+", parity,
                                                   " has ", data * parity, " bytes, not ",
                                                   coding.size()));
  }
  // The systematic code [I; A] is MDS iff every square submatrix of A is nonsingular: losing the
  // data blocks in column set C and the parity blocks outside row set R (|R| = |C|) leaves M
  // blocks whose generator rows have determinant det A[R][C]. There are C(M+K, K) - 1 such
  // patterns. Small ones are checked first (they are the likeliest to be singular), so a shape
  // with too many patterns to check is still named by a concrete failure when one turns up
  // within the budget; otherwise it is refused as too large to verify.
  uint64_t checked = 0;
  std::vector<int> rows, cols;
  std::vector<uint8_t> sub;
  for (int r = 1; r <= std::min(data, parity); ++r) {
    rows.resize(r);
    std::iota(rows.begin(), rows.end(), 0);
    do {
      cols.resize(r);
      std::iota(cols.begin(), cols.end(), 0);
      do {
        if (++checked > kMaxPatternsToCheck) {
          return absl::InvalidArgumentError(
              absl::StrCat("vandermonde matrix for ", data, "+", parity,
                           " is too large to verify: it has more than ", kMaxPatternsToCheck,
                           " erasure patterns to check; use --matrix cauchy"));
        }
        sub.resize(static_cast<size_t>(r) * r);
        for (int x = 0; x < r; ++x) {
          for (int y = 0; y < r; ++y) sub[x * r + y] = coding[rows[x] * data + cols[y]];
        }
        if (!Nonsingular(sub, r)) {
          std::vector<int> lost(cols.begin(), cols.end());  // Data blocks in C...
          for (int j = 0, x = 0; j < parity; ++j) {         // ...and parity blocks not in R.
            if (x < r && rows[x] == j) {
              ++x;
            } else {
              lost.push_back(data + j);
            }
          }
          return absl::InvalidArgumentError(absl::StrCat(
              "vandermonde matrix for ", data, "+", parity, " cannot decode the loss of blocks {",
              absl::StrJoin(lost, ","), "}; use --matrix cauchy"));
        }
      } while (NextCombination(cols, data));
    } while (NextCombination(rows, parity));
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
