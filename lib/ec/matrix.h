// GF(2^8) coding matrices for ecd's erasure codes, defined as NVIDIA DOCA Erasure Coding defines
// them, plus the shape limits every EC operation checks.
//
// A coding matrix for M data and K parity blocks is K x M: coefficient (j, i) multiplies data
// block i into parity block j. The full generator is the M x M identity stacked on it. Blocks of
// a stripe are numbered 0..M-1 (data) then M..M+K-1 (parity).
//
// Derived matrices, as DOCA derives them from a coding matrix (doca_ec_matrix_create_update and
// doca_ec_matrix_create_recover), are plain values that any caller can apply with ISA-L
// (ec_init_tables + ec_encode_data) or with GaloisMultiply:
// - UpdateMatrix: K x n coefficients mapping the deltas of n changed data blocks to the K parity
//   deltas.
// - RecoverMatrix: which M available blocks to read and the coefficients that produce the
//   missing blocks (data or parity) from them. The M rows are the first M available blocks in
//   index order whose generator rows are independent: the first M available blocks themselves
//   unless that subset is singular (only possible for a non-MDS matrix such as some Vandermonde
//   shapes or a raw matrix), then the lexicographically first invertible subset.
#ifndef ECD_LIB_EC_MATRIX_H_
#define ECD_LIB_EC_MATRIX_H_

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ecd::ec {

enum class MatrixType {
  kCauchy,       // a_ij = 1 / (x_i + y_j), x_i = i, y_j = M + j. Every erasure pattern decodes.
  kVandermonde,  // a_ij = (i + 1)^j. Not MDS for every shape: checked before use.
  kRaw,          // Coefficients given by the caller (Codec::CreateFromRaw).
};

inline constexpr int kMaxDataBlocks = 128;
inline constexpr int kMaxParityBlocks = 32;
inline constexpr size_t kBlockAlignment = 64;
inline constexpr size_t kMinBlockSize = 64;
inline constexpr size_t kMaxBlockSize = size_t{128} << 20;

// Returns InvalidArgument unless 1 <= data <= 128 and 1 <= parity <= 32.
absl::Status ValidateShape(int data, int parity);

// Returns InvalidArgument unless block_size is a multiple of 64 in [64 B, 128 MiB].
absl::Status ValidateBlockSize(size_t block_size);

// Returns the K x M coding matrix, row-major: result[j * data + i] = a_ij for data block i and
// parity block j. REQUIRES: ValidateShape(data, parity).ok() and type != kRaw.
std::vector<uint8_t> CodingMatrix(MatrixType type, int data, int parity);

// Returns OK when every pattern of up to `parity` lost blocks of the systematic code built on
// `coding` (K x M, as CodingMatrix returns) can be decoded. Returns InvalidArgument naming the
// first singular pattern otherwise, or when there are too many patterns to check them all.
absl::Status CheckEveryErasurePatternDecodes(const std::vector<uint8_t>& coding, int data,
                                             int parity);

const char* MatrixTypeName(MatrixType type);

// A set of blocks of one stripe: bit b is block b (0..M+K-1).
using BlockMask = std::bitset<kMaxDataBlocks + kMaxParityBlocks>;

// The coefficients that turn the changes of some data blocks into the changes of the parity:
//   new_parity_j = old_parity_j + sum_x coefficients[j * n + x] * (old_c + new_c),  c = changed[x],
// over GF(2^8), for n = changed.size(). Equal to a full re-encode of the new data.
struct UpdateMatrix {
  int parity = 0;                 // K: rows, one per parity block.
  std::vector<uint32_t> changed;  // Data indices, in the caller's order: column x is changed[x].
  std::vector<uint8_t> coefficients;  // K x n, row-major: [j * n + x] = coding[j * M + changed[x]].
};

// The coefficients that rebuild missing blocks from M available ones:
//   block[missing[w]] = sum_r coefficients[w * M + r] * block[sources[r]]   over GF(2^8).
struct RecoverMatrix {
  int data = 0;                       // M: columns, one per source block.
  std::vector<uint32_t> sources;      // The M available blocks read, ascending.
  std::vector<uint32_t> missing;      // The blocks rebuilt, ascending: row w rebuilds missing[w].
  std::vector<uint8_t> coefficients;  // missing.size() x M, row-major.
};

// Returns the update matrix of `coding` (K x M, as CodingMatrix returns) for the data blocks
// `changed` (1..M distinct indices 0..M-1, any order). InvalidArgument for a bad shape or
// matrix size, an empty list, an index out of range or listed twice (each named).
absl::StatusOr<UpdateMatrix> BuildUpdateMatrix(absl::Span<const uint8_t> coding, int data,
                                               int parity, absl::Span<const uint32_t> changed);

// Returns the recover matrix of `coding` (K x M) that rebuilds the blocks `missing` (1..K
// distinct indices 0..M+K-1, data or parity, any order) from the other blocks, all of which are
// available. InvalidArgument for a bad shape or matrix size, an empty list, or an index out of
// range or listed twice; DataLoss, naming the blocks, for more than K missing blocks or when no
// M of the available blocks have independent rows (a non-MDS matrix).
absl::StatusOr<RecoverMatrix> BuildRecoverMatrix(absl::Span<const uint8_t> coding, int data,
                                                 int parity, absl::Span<const uint32_t> missing);

// As BuildRecoverMatrix, with the missing blocks as a mask; InvalidArgument for a bit set at
// M+K or above.
absl::StatusOr<RecoverMatrix> BuildRecoverMatrixFromMask(absl::Span<const uint8_t> coding, int data,
                                                         int parity, const BlockMask& missing);

// The general form: rebuilds the blocks in `wanted` from blocks in `available` when blocks in
// neither set are lost too (they are not rebuilt). The sets must be disjoint and non-empty and
// lie in 0..M+K-1 (else InvalidArgument); DataLoss when fewer than M blocks are available or no
// M of them are independent.
absl::StatusOr<RecoverMatrix> BuildPartialRecoverMatrix(absl::Span<const uint8_t> coding, int data,
                                                        int parity, const BlockMask& available,
                                                        const BlockMask& wanted);

}  // namespace ecd::ec

#endif  // ECD_LIB_EC_MATRIX_H_
