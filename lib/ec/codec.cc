// Codec on ISA-L: encode with precomputed tables; reconstruct by inverting the survivors' rows of
// the generator, with a bounded cache of decode tables keyed by the erasure pattern.
#include "lib/ec/codec.h"

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>

#include <algorithm>
#include <array>
#include <list>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/ec/block_checks.h"
#include "lib/util/mutex.h"

namespace ecd::ec {
namespace {

using internal::AddBlockIndices;
using internal::CheckBlocks;
using internal::CheckDisjoint;

constexpr size_t kDecodeCacheEntries = 64;

// Encode with checksums codes this many bytes of all M+K blocks together, a piece of each, so
// that the pieces are still in the core's cache when they are checksummed, rather than read
// back from memory once a whole stripe larger than the cache has been coded (bench/ec_bench
// ChecksumPaired compares the two).
constexpr size_t kChecksumPassBytes = size_t{256} * 1024;

// The Vandermonde verdict per (M, K), computed once per process: the check may take a while
// for wide shapes. At most 128 x 32 entries.
absl::Status CachedVandermondeCheck(const std::vector<uint8_t>& coding, int data, int parity) {
  static Mutex mu;
  static std::map<std::pair<int, int>, absl::Status>* verdicts =
      new std::map<std::pair<int, int>, absl::Status>();  // Never destroyed (static-init safe).
  {
    MutexLock lock(mu);
    auto it = verdicts->find({data, parity});
    if (it != verdicts->end()) return it->second;
  }
  // Checked outside the lock: two threads may both compute a verdict; they agree.
  absl::Status s = CheckEveryErasurePatternDecodes(coding, data, parity);
  MutexLock lock(mu);
  verdicts->emplace(std::make_pair(data, parity), s);
  return s;
}

}  // namespace

// The recover matrix of one (available, wanted) pattern and its ISA-L tables.
struct Codec::Decoder {
  RecoverMatrix matrix;
  std::vector<uint8_t> tables;  // ec_init_tables of matrix.coefficients.
};

// Decoders by erasure pattern, in a small LRU. A hit costs one lock and two mask compares.
struct Codec::DecodeCache {
  struct Entry {
    BlockMask available;
    BlockMask wanted;
    std::shared_ptr<const Decoder> decoder;
  };
  Mutex mu;
  std::list<Entry> entries ABSL_GUARDED_BY(mu);  // MRU first.
};

Codec::Codec(MatrixType type, int data, int parity, std::vector<uint8_t> coding)
    : type_(type),
      data_(data),
      parity_(parity),
      coding_(std::move(coding)),
      encode_tables_(static_cast<size_t>(32) * data * parity),
      cache_(std::make_unique<DecodeCache>()) {
  ec_init_tables(data_, parity_, coding_.data(), encode_tables_.data());
}

Codec::~Codec() = default;

absl::StatusOr<std::shared_ptr<const Codec>> Codec::Create(MatrixType type, int data, int parity) {
  if (absl::Status s = ValidateShape(data, parity); !s.ok()) return s;
  if (type == MatrixType::kRaw) {
    return absl::InvalidArgumentError("a raw matrix needs its coefficients: use CreateFromRaw");
  }
  std::vector<uint8_t> coding = CodingMatrix(type, data, parity);
  if (type == MatrixType::kVandermonde) {
    if (absl::Status s = CachedVandermondeCheck(coding, data, parity); !s.ok()) return s;
  }
  return std::shared_ptr<const Codec>(new Codec(type, data, parity, std::move(coding)));
}

absl::StatusOr<std::shared_ptr<const Codec>> Codec::CreateFromRaw(absl::Span<const uint8_t> raw,
                                                                  int data, int parity) {
  if (absl::Status s = ValidateShape(data, parity); !s.ok()) return s;
  if (raw.size() != static_cast<size_t>(data) * parity) {
    return absl::InvalidArgumentError(absl::StrCat("a raw matrix for ", data, "+", parity, " has ",
                                                   data * parity, " bytes, not ", raw.size()));
  }
  std::vector<uint8_t> coding(raw.size());
  for (int i = 0; i < data; ++i) {
    for (int j = 0; j < parity; ++j) coding[j * data + i] = raw[i * parity + j];
  }
  return std::shared_ptr<const Codec>(new Codec(MatrixType::kRaw, data, parity, std::move(coding)));
}

absl::Status Codec::Update(absl::Span<const int> changed,
                           absl::Span<const absl::Span<const uint8_t>> old_data,
                           absl::Span<const absl::Span<const uint8_t>> new_data,
                           absl::Span<const absl::Span<const uint8_t>> old_parity,
                           absl::Span<const absl::Span<uint8_t>> new_parity) const {
  const size_t n = changed.size();
  if (n == 0 || n > static_cast<size_t>(data_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("an update changes 1..", data_, " data blocks, not ", n));
  }
  for (size_t x = 0; x < n; ++x) {
    if (changed[x] < 0 || changed[x] >= data_ || (x > 0 && changed[x] <= changed[x - 1])) {
      return absl::InvalidArgumentError(
          "changed block indices must be data indices 0..M-1, ascending and unique");
    }
  }
  size_t len = 0, l2 = 0, l3 = 0, l4 = 0;
  if (absl::Status s = CheckBlocks(old_data, n, "old data", &len); !s.ok()) return s;
  if (absl::Status s = CheckBlocks(new_data, n, "new data", &l2); !s.ok()) return s;
  if (absl::Status s = CheckBlocks(old_parity, parity_, "old parity", &l3); !s.ok()) return s;
  if (absl::Status s = CheckBlocks(new_parity, parity_, "new parity", &l4); !s.ok()) return s;
  if (len != l2 || len != l3 || len != l4) {
    return absl::InvalidArgumentError("update blocks differ in length");
  }
  bool in_place = true;
  for (int j = 0; j < parity_; ++j) in_place &= old_parity[j].data() == new_parity[j].data();
  std::array<const uint8_t*, 2 * (kMaxDataBlocks + kMaxParityBlocks)> starts;
  size_t count = 0;
  for (size_t x = 0; x < n; ++x) {
    starts[count++] = old_data[x].data();
    starts[count++] = new_data[x].data();
  }
  for (int j = 0; j < parity_; ++j) {
    starts[count++] = new_parity[j].data();
    if (!in_place) starts[count++] = old_parity[j].data();
  }
  if (absl::Status s = CheckDisjoint(absl::MakeSpan(starts.data(), count), len); !s.ok()) {
    return s;
  }

  // Tables for the K x n update matrix; accumulate each delta into parity.
  std::array<uint32_t, kMaxDataBlocks> columns;
  std::copy(changed.begin(), changed.end(), columns.begin());
  absl::StatusOr<UpdateMatrix> update =
      BuildUpdateMatrix(coding_, data_, parity_, absl::MakeConstSpan(columns.data(), n));
  if (!update.ok()) return update.status();
  std::vector<uint8_t> tables(32 * n * static_cast<size_t>(parity_));
  ec_init_tables(static_cast<int>(n), parity_, update->coefficients.data(), tables.data());
  std::array<uint8_t*, kMaxParityBlocks> out;
  for (int j = 0; j < parity_; ++j) {
    out[j] = new_parity[j].data();
    if (!in_place) std::copy(old_parity[j].begin(), old_parity[j].end(), out[j]);
  }
  // Over GF(2^8), adding a_jc * old_c a second time removes it, so accumulating the old and then
  // the new block gives parity + a_jc * (old_c + new_c) with no delta buffer.
  for (size_t x = 0; x < n; ++x) {
    for (const absl::Span<const uint8_t>& source : {old_data[x], new_data[x]}) {
      ec_encode_data_update(static_cast<int>(len), static_cast<int>(n), parity_,
                            static_cast<int>(x), tables.data(), const_cast<uint8_t*>(source.data()),
                            out.data());
    }
  }
  return absl::OkStatus();
}

absl::Status Codec::Encode(absl::Span<const absl::Span<const uint8_t>> data,
                           absl::Span<const absl::Span<uint8_t>> parity,
                           absl::Span<uint32_t> checksums) const {
  size_t len = 0, parity_len = 0;
  if (absl::Status s = CheckBlocks(data, data_, "data", &len); !s.ok()) return s;
  if (absl::Status s = CheckBlocks(parity, parity_, "parity", &parity_len); !s.ok()) return s;
  if (len != parity_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("data blocks are ", len, " bytes but parity blocks ", parity_len));
  }
  if (!checksums.empty() && checksums.size() != static_cast<size_t>(total_blocks())) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", total_blocks(),
                                                   " checksums (one per block), got room for ",
                                                   checksums.size()));
  }
  std::array<uint8_t*, kMaxDataBlocks + kMaxParityBlocks> blocks;
  for (int i = 0; i < data_; ++i) blocks[i] = const_cast<uint8_t*>(data[i].data());
  for (int j = 0; j < parity_; ++j) blocks[data_ + j] = parity[j].data();
  std::array<const uint8_t*, kMaxDataBlocks + kMaxParityBlocks> starts;
  std::copy_n(blocks.begin(), total_blocks(), starts.begin());
  if (absl::Status s = CheckDisjoint(absl::MakeSpan(starts.data(), total_blocks()), len); !s.ok()) {
    return s;
  }
  uint8_t* tables = const_cast<uint8_t*>(encode_tables_.data());
  if (checksums.empty()) {
    ec_encode_data(static_cast<int>(len), data_, parity_, tables, blocks.data(),
                   blocks.data() + data_);
    return absl::OkStatus();
  }
  // A piece of each block per pass: a multiple of 64 B (ISA-L's SIMD width, and every block
  // length is one), at least 4 KiB, whatever the stripe's width.
  const size_t piece =
      std::max<size_t>(4096, kChecksumPassBytes / static_cast<size_t>(total_blocks()) / 64 * 64);
  std::array<uint8_t*, kMaxDataBlocks + kMaxParityBlocks> at;
  std::array<uint32_t, kMaxDataBlocks + kMaxParityBlocks> crc;
  std::fill_n(crc.begin(), total_blocks(),
              0xFFFFFFFFu);  // ISA-L's running CRC, before the complement.
  for (size_t offset = 0; offset < len; offset += piece) {
    const int n = static_cast<int>(std::min(piece, len - offset));
    for (int i = 0; i < total_blocks(); ++i) at[i] = blocks[i] + offset;
    ec_encode_data(n, data_, parity_, tables, at.data(), at.data() + data_);
    for (int i = 0; i < total_blocks(); ++i) crc[i] = crc32_iscsi(at[i], n, crc[i]);
  }
  for (int i = 0; i < total_blocks(); ++i) checksums[i] = ~crc[i];
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Codec::Decoder>> Codec::FindDecoder(
    const BlockMask& available, const BlockMask& wanted) const {
  {
    MutexLock lock(cache_->mu);
    for (auto it = cache_->entries.begin(); it != cache_->entries.end(); ++it) {
      if (it->wanted == wanted && it->available == available) {
        if (it != cache_->entries.begin()) {
          cache_->entries.splice(cache_->entries.begin(), cache_->entries, it);
        }
        return it->decoder;
      }
    }
  }
  absl::StatusOr<RecoverMatrix> matrix =
      BuildPartialRecoverMatrix(coding_, data_, parity_, available, wanted);
  if (!matrix.ok()) return matrix.status();
  auto decoder = std::make_shared<Decoder>();
  decoder->matrix = *std::move(matrix);
  const int rows = static_cast<int>(decoder->matrix.missing.size());
  decoder->tables.resize(static_cast<size_t>(32) * data_ * rows);
  ec_init_tables(data_, rows, decoder->matrix.coefficients.data(), decoder->tables.data());
  MutexLock lock(cache_->mu);
  for (const auto& entry : cache_->entries) {
    if (entry.wanted == wanted && entry.available == available) {
      return entry.decoder;  // Another thread got here first.
    }
  }
  cache_->entries.push_front({available, wanted, decoder});
  if (cache_->entries.size() > kDecodeCacheEntries) cache_->entries.pop_back();
  return std::shared_ptr<const Decoder>(std::move(decoder));
}

absl::Status Codec::Reconstruct(absl::Span<const absl::Span<uint8_t>> blocks,
                                absl::Span<const int> available,
                                absl::Span<const int> wanted) const {
  // Every check comes before the first write: on error no block is touched.
  const int total = total_blocks();
  size_t len = 0;
  if (absl::Status s = CheckBlocks(blocks, total, "stripe", &len); !s.ok()) return s;
  BlockMask have, want;
  if (absl::Status s = AddBlockIndices(available, total, "available", &have); !s.ok()) return s;
  if (absl::Status s = AddBlockIndices(wanted, total, "wanted", &want); !s.ok()) return s;
  for (int i : wanted) {
    if (have[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("wanted block index ", i, " is also available (a block cannot be both)"));
    }
  }
  std::array<const uint8_t*, kMaxDataBlocks + kMaxParityBlocks> starts;
  for (int i = 0; i < total; ++i) starts[i] = blocks[i].data();
  if (absl::Status s = CheckDisjoint(absl::MakeSpan(starts.data(), total), len); !s.ok()) {
    return s;
  }
  if (static_cast<int>(available.size()) < data_) {
    return absl::DataLossError(absl::StrCat("only ", available.size(), " of the ", data_,
                                            " blocks needed to rebuild are available"));
  }
  if (wanted.empty()) return absl::OkStatus();

  // The recover matrix reads the first M available blocks in index order (data before parity:
  // the cheapest inverse), or the first invertible M of them for a non-MDS matrix.
  absl::StatusOr<std::shared_ptr<const Decoder>> decoder = FindDecoder(have, want);
  if (!decoder.ok()) {
    return absl::Status(decoder.status().code(), absl::StrCat(decoder.status().message(), " (",
                                                              MatrixTypeName(type_), " matrix)"));
  }
  const RecoverMatrix& matrix = (*decoder)->matrix;
  std::array<uint8_t*, kMaxDataBlocks> in;
  std::array<uint8_t*, kMaxDataBlocks + kMaxParityBlocks> out;
  for (int r = 0; r < data_; ++r) in[r] = blocks[matrix.sources[r]].data();
  const int rows = static_cast<int>(matrix.missing.size());
  for (int w = 0; w < rows; ++w) out[w] = blocks[matrix.missing[w]].data();
  ec_encode_data(static_cast<int>(len), data_, rows,
                 const_cast<uint8_t*>((*decoder)->tables.data()), in.data(), out.data());
  return absl::OkStatus();
}

}  // namespace ecd::ec
