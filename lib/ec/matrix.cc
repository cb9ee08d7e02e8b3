// DOCA-defined coding matrices over GF(2^8) (ISA-L's field, polynomial 0x11d), shape limits, the
// exhaustive decodability check for Vandermonde codes, and the update and recover matrices.
#include "lib/ec/matrix.h"

#include <isa-l/erasure_code.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/ec/block_checks.h"

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

// Checks the shape and that `coding` holds its K x M coefficients.
absl::Status CheckCoding(absl::Span<const uint8_t> coding, int data, int parity) {
  if (absl::Status s = ValidateShape(data, parity); !s.ok()) return s;
  if (coding.size() != static_cast<size_t>(data) * parity) {
    return absl::InvalidArgumentError(absl::StrCat("a coding matrix for ", data, "+", parity,
                                                   " has ", data * parity, " bytes, not ",
                                                   coding.size()));
  }
  return absl::OkStatus();
}

// "{a,b,c}" for the blocks in `mask` below `total`.
std::string Members(const BlockMask& mask, int total) {
  std::vector<int> v;
  for (int b = 0; b < total; ++b) {
    if (mask[b]) v.push_back(b);
  }
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

// InvalidArgument naming the first bit of `mask` at `total` or above.
absl::Status CheckMaskRange(const BlockMask& mask, int total, const char* what) {
  for (size_t b = total; b < mask.size(); ++b) {
    if (mask[b]) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " block index ", b, " is out of range 0..", total - 1));
    }
  }
  return absl::OkStatus();
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
  if (absl::Status s = CheckCoding(coding, data, parity); !s.ok()) return s;
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

absl::StatusOr<UpdateMatrix> BuildUpdateMatrix(absl::Span<const uint8_t> coding, int data,
                                               int parity, absl::Span<const uint32_t> changed) {
  if (absl::Status s = CheckCoding(coding, data, parity); !s.ok()) return s;
  if (changed.empty()) {
    return absl::InvalidArgumentError("an update matrix needs at least one changed data block");
  }
  BlockMask seen;
  if (absl::Status s = internal::AddBlockIndices(changed, data, "changed data", &seen); !s.ok())
    return s;
  UpdateMatrix u;
  u.parity = parity;
  u.changed.assign(changed.begin(), changed.end());
  const size_t n = changed.size();
  u.coefficients.resize(static_cast<size_t>(parity) * n);
  for (int j = 0; j < parity; ++j) {
    for (size_t x = 0; x < n; ++x) u.coefficients[j * n + x] = coding[j * data + changed[x]];
  }
  return u;
}

absl::StatusOr<RecoverMatrix> BuildRecoverMatrix(absl::Span<const uint8_t> coding, int data,
                                                 int parity, absl::Span<const uint32_t> missing) {
  if (absl::Status s = CheckCoding(coding, data, parity); !s.ok()) return s;
  BlockMask lost;
  if (absl::Status s = internal::AddBlockIndices(missing, data + parity, "missing", &lost); !s.ok())
    return s;
  return BuildRecoverMatrixFromMask(coding, data, parity, lost);
}

absl::StatusOr<RecoverMatrix> BuildRecoverMatrixFromMask(absl::Span<const uint8_t> coding, int data,
                                                         int parity, const BlockMask& missing) {
  if (absl::Status s = CheckCoding(coding, data, parity); !s.ok()) return s;
  const int total = data + parity;
  if (absl::Status s = CheckMaskRange(missing, total, "missing"); !s.ok()) return s;
  if (missing.count() > static_cast<size_t>(parity)) {
    return absl::DataLossError(absl::StrCat("blocks ", Members(missing, total), " are missing (",
                                            missing.count(), ") but a ", data, "+", parity,
                                            " code rebuilds at most ", parity));
  }
  BlockMask available;
  for (int b = 0; b < total; ++b) available[b] = !missing[b];
  return BuildPartialRecoverMatrix(coding, data, parity, available, missing);
}

absl::StatusOr<RecoverMatrix> BuildPartialRecoverMatrix(absl::Span<const uint8_t> coding, int data,
                                                        int parity, const BlockMask& available,
                                                        const BlockMask& wanted) {
  if (absl::Status s = CheckCoding(coding, data, parity); !s.ok()) return s;
  const int m = data, total = data + parity;
  if (absl::Status s = CheckMaskRange(available, total, "available"); !s.ok()) return s;
  if (absl::Status s = CheckMaskRange(wanted, total, "wanted"); !s.ok()) return s;
  if (wanted.none()) {
    return absl::InvalidArgumentError("a recover matrix needs at least one block to rebuild");
  }
  if ((available & wanted).any()) {
    return absl::InvalidArgumentError(absl::StrCat("blocks ", Members(available & wanted, total),
                                                   " are both available and wanted"));
  }
  if (available.count() < static_cast<size_t>(m)) {
    return absl::DataLossError(absl::StrCat("only ", available.count(), " of the ", m,
                                            " blocks needed to rebuild are available"));
  }
  // Generator row of block b: e_b for data, coding row b - M for parity.
  auto generator_row = [&](int b, uint8_t* row) {
    if (b < m) {
      std::fill(row, row + m, 0);
      row[b] = 1;
    } else {
      std::copy_n(coding.begin() + static_cast<size_t>(b - m) * m, m, row);
    }
  };
  // Greedy basis over the available rows in index order: a row joins when it is independent of
  // the rows before it. This yields the first M available rows when they are invertible, and
  // otherwise the lexicographically first invertible subset (bases of a matroid).
  // Basis rows are kept reduced: each is 1 at its pivot and 0 at the earlier rows' pivots.
  RecoverMatrix r;
  r.data = m;
  std::vector<uint8_t> basis(static_cast<size_t>(m) * m);
  std::vector<int> pivots;
  std::vector<uint8_t> row(m);
  for (int b = 0; b < total && static_cast<int>(r.sources.size()) < m; ++b) {
    if (!available[b]) continue;
    generator_row(b, row.data());
    for (size_t x = 0; x < pivots.size(); ++x) {
      const uint8_t f = row[pivots[x]];
      if (f == 0) continue;
      const uint8_t* base = &basis[x * m];
      for (int c = 0; c < m; ++c) row[c] ^= Mul(f, base[c]);
    }
    int pivot = 0;
    while (pivot < m && row[pivot] == 0) ++pivot;
    if (pivot == m) continue;  // Dependent on the rows already chosen.
    const uint8_t inv = static_cast<uint8_t>(gf_inv(row[pivot]));
    uint8_t* dst = &basis[pivots.size() * m];
    for (int c = 0; c < m; ++c) dst[c] = Mul(inv, row[c]);
    pivots.push_back(pivot);
    r.sources.push_back(static_cast<uint32_t>(b));
  }
  if (static_cast<int>(r.sources.size()) < m) {
    return absl::DataLossError(absl::StrCat("cannot rebuild blocks ", Members(wanted, total),
                                            " from available blocks ", Members(available, total),
                                            ": their rows of the ", m, "+", parity,
                                            " coding matrix have rank ", r.sources.size(), " < ", m,
                                            ", so no ", m, " of them are invertible"));
  }
  // sources = S * data, so data = S^-1 * sources: data block d is row d of the inverse, and
  // parity block j is (row j of the coding matrix) * S^-1. gf_invert_matrix destroys `s`.
  std::vector<uint8_t> s(static_cast<size_t>(m) * m), inverse(static_cast<size_t>(m) * m);
  for (int x = 0; x < m; ++x) generator_row(static_cast<int>(r.sources[x]), &s[x * m]);
  if (gf_invert_matrix(s.data(), inverse.data(), m) != 0) {
    return absl::InternalError("independent rows failed to invert");  // Not reached.
  }
  for (int b = 0; b < total; ++b) {
    if (!wanted[b]) continue;
    r.missing.push_back(static_cast<uint32_t>(b));
    const size_t at = r.coefficients.size();
    r.coefficients.resize(at + m);
    uint8_t* out = &r.coefficients[at];
    if (b < m) {
      std::copy_n(&inverse[static_cast<size_t>(b) * m], m, out);
      continue;
    }
    const uint8_t* a = &coding[static_cast<size_t>(b - m) * m];
    for (int t = 0; t < m; ++t) {
      if (a[t] == 0) continue;
      const uint8_t* inv_row = &inverse[static_cast<size_t>(t) * m];
      for (int c = 0; c < m; ++c) out[c] ^= Mul(a[t], inv_row[c]);
    }
  }
  return r;
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
