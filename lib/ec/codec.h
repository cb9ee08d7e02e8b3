// Codec: erasure-codes one stripe of M data blocks into K parity blocks and rebuilds any lost
// blocks from any M survivors, on ISA-L.
//
// Small and hard to misuse (in the spirit of klauspost/reedsolomon): a Codec is immutable once
// created, checks every shape and buffer it is given, and returns absl::Status instead of
// producing wrong bytes.
//
// Thread safety: all methods are const and safe to call concurrently on one Codec.
// Buffers: the caller owns every block buffer; a call reads and writes them only until it
// returns. Blocks of one call must not overlap.
#ifndef ECD_LIB_EC_CODEC_H_
#define ECD_LIB_EC_CODEC_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/ec/matrix.h"

namespace ecd::ec {

class Codec {
 public:
  // Creates a codec for `data` (M) data and `parity` (K) parity blocks. Returns InvalidArgument
  // for a shape out of range, or for a Vandermonde matrix with any undecodable erasure pattern.
  static absl::StatusOr<std::shared_ptr<const Codec>> Create(MatrixType type, int data, int parity);
  // Creates a codec from a raw coefficient buffer of M x K bytes, data-major as DOCA's
  // doca_ec_matrix_create_from_raw takes it: raw[i * K + j] multiplies data block i into parity
  // block j. A raw matrix is not checked for decodability (that may be too costly); Reconstruct
  // returns DataLoss for an erasure pattern it cannot invert.
  static absl::StatusOr<std::shared_ptr<const Codec>> CreateFromRaw(absl::Span<const uint8_t> raw,
                                                                    int data, int parity);
  ~Codec();
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  int data_blocks() const { return data_; }
  int parity_blocks() const { return parity_; }
  int total_blocks() const { return data_ + parity_; }
  MatrixType matrix_type() const { return type_; }

  // Computes the K parity blocks of the M data blocks.
  // When `checksums` is not empty, every entry is overwritten with the CRC32C (Castagnoli,
  // the standard value: CRC32C("123456789") == 0xE3069283) of a block, data then parity (M + K
  // values), taken in the same pass: the blocks are coded in pieces of 256 KiB / (M + K) bytes
  // (a multiple of 64, at least 4 KiB) and each piece is checksummed while it is still in
  // cache, which reads memory once instead of twice.
  // REQUIRES: data.size() == M, parity.size() == K, every block the same length, which passes
  // ValidateBlockSize; checksums empty or M + K long, and not inside any block (unchecked).
  // Returns InvalidArgument otherwise, with `parity` and `checksums` untouched.
  absl::Status Encode(absl::Span<const absl::Span<const uint8_t>> data,
                      absl::Span<const absl::Span<uint8_t>> parity,
                      absl::Span<uint32_t> checksums = {}) const;

  // Computes new parity after the data blocks listed in `changed` (ascending, unique) change
  // from `old_data` to `new_data` (one block each, in the order of `changed`), from the K old
  // parity blocks, without reading the unchanged data blocks (DOCA's update task):
  //   new_parity_j = old_parity_j + sum_c a_jc * (old_c + new_c)   over GF(2^8).
  // The result equals a full re-encode of the new data byte for byte. `new_parity` may be the
  // same buffers as `old_parity` (in-place update); otherwise no buffers may overlap.
  // InvalidArgument for bad indices, counts or lengths, with `new_parity` untouched.
  absl::Status Update(absl::Span<const int> changed,
                      absl::Span<const absl::Span<const uint8_t>> old_data,
                      absl::Span<const absl::Span<const uint8_t>> new_data,
                      absl::Span<const absl::Span<const uint8_t>> old_parity,
                      absl::Span<const absl::Span<uint8_t>> new_parity) const;

  // The K x M coding matrix, row-major (coefficient of data i in parity j at [j * M + i]).
  const std::vector<uint8_t>& coding() const { return coding_; }

  // Rebuilds the blocks listed in `wanted` from the blocks listed in `available`.
  // `blocks` holds all M+K blocks of the stripe in index order (0..M-1 data, M.. parity), each the
  // same length; only the `available` ones are read and only the `wanted` ones are written.
  // The blocks read are those BuildPartialRecoverMatrix chooses (the first M available ones in
  // index order, or the first invertible M of them for a non-MDS matrix); its matrix and ISA-L
  // tables are cached per (available, wanted) pattern, 64 patterns, least recently used out.
  // Returns DataLoss when fewer than M blocks are available or no M of them invert,
  // InvalidArgument for bad indices or buffers (then nothing is written).
  absl::Status Reconstruct(absl::Span<const absl::Span<uint8_t>> blocks,
                           absl::Span<const int> available, absl::Span<const int> wanted) const;

 private:
  struct Decoder;
  struct DecodeCache;

  Codec(MatrixType type, int data, int parity, std::vector<uint8_t> coding);
  // The decoder rebuilding `wanted` from blocks in `available`, from the cache or built with
  // BuildPartialRecoverMatrix (and then cached); DataLoss when no M available rows invert.
  absl::StatusOr<std::shared_ptr<const Decoder>> FindDecoder(const BlockMask& available,
                                                             const BlockMask& wanted) const;

  MatrixType type_;
  int data_;
  int parity_;
  std::vector<uint8_t> coding_;         // K x M, as CodingMatrix returns.
  std::vector<uint8_t> encode_tables_;  // ISA-L expanded tables for `coding_`.
  std::unique_ptr<DecodeCache> cache_;  // Thread-safe; mutable state behind a const API.
};

}  // namespace ecd::ec

#endif  // ECD_LIB_EC_CODEC_H_
