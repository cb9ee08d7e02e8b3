// GF(2^8) coding matrices for ecd's erasure codes, defined as NVIDIA DOCA Erasure Coding defines
// them, plus the shape limits every EC operation checks.
//
// A coding matrix for M data and K parity blocks is K x M: coefficient (j, i) multiplies data
// block i into parity block j. The full generator is the M x M identity stacked on it.
#ifndef ECD_LIB_EC_MATRIX_H_
#define ECD_LIB_EC_MATRIX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"

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

}  // namespace ecd::ec

#endif  // ECD_LIB_EC_MATRIX_H_
