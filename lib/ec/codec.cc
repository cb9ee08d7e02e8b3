// Codec on ISA-L: encode with precomputed tables; reconstruct by inverting the survivors' rows of
// the generator, with a bounded cache of decode tables keyed by the erasure pattern.
#include "lib/ec/codec.h"

#include <isa-l/erasure_code.h>

#include <algorithm>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/ec/block_checks.h"

namespace ecd::ec {
namespace {

using internal::CheckBlocks;
using internal::CheckDisjoint;

constexpr size_t kDecodeCacheEntries = 64;

// The Vandermonde verdict per (M, K), computed once per process: the check may take a while
// for wide shapes. At most 128 x 32 entries.
absl::Status CachedVandermondeCheck(const std::vector<uint8_t>& coding, int data, int parity) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, absl::Status>* verdicts =
      new std::map<std::pair<int, int>, absl::Status>();  // Never destroyed (static-init safe).
  {
    std::lock_guard lock(mu);
    auto it = verdicts->find({data, parity});
    if (it != verdicts->end()) return it->second;
  }
  // Checked outside the lock: two threads may both compute a verdict; they agree.
  absl::Status s = CheckEveryErasurePatternDecodes(coding, data, parity);
  std::lock_guard lock(mu);
  verdicts->emplace(std::make_pair(data, parity), s);
  return s;
}

std::string Join(const std::vector<int>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

}  // namespace

// Decode tables for one (survivors, wanted) pattern, in a small LRU.
struct Codec::DecodeCache {
  using Key = std::pair<std::vector<int>, std::vector<int>>;
  std::mutex mu;
  std::list<std::pair<Key, std::shared_ptr<const std::vector<uint8_t>>>> entries;  // MRU first.
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
  std::vector<const uint8_t*> starts;
  for (size_t x = 0; x < n; ++x) {
    starts.push_back(old_data[x].data());
    starts.push_back(new_data[x].data());
  }
  for (int j = 0; j < parity_; ++j) {
    starts.push_back(new_parity[j].data());
    if (!in_place) starts.push_back(old_parity[j].data());
  }
  if (absl::Status s = CheckDisjoint(std::move(starts), len); !s.ok()) return s;

  // Tables for the K x n submatrix of the changed columns; accumulate each delta into parity.
  std::vector<uint8_t> sub(static_cast<size_t>(parity_) * n);
  for (int j = 0; j < parity_; ++j) {
    for (size_t x = 0; x < n; ++x) sub[j * n + x] = coding_[j * data_ + changed[x]];
  }
  std::vector<uint8_t> tables(32 * n * static_cast<size_t>(parity_));
  ec_init_tables(static_cast<int>(n), parity_, sub.data(), tables.data());
  std::vector<uint8_t*> out(parity_);
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
                           absl::Span<const absl::Span<uint8_t>> parity) const {
  size_t len = 0, parity_len = 0;
  if (absl::Status s = CheckBlocks(data, data_, "data", &len); !s.ok()) return s;
  if (absl::Status s = CheckBlocks(parity, parity_, "parity", &parity_len); !s.ok()) return s;
  if (len != parity_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("data blocks are ", len, " bytes but parity blocks ", parity_len));
  }
  std::vector<const uint8_t*> starts;
  std::vector<uint8_t*> in(data_), out(parity_);
  for (int i = 0; i < data_; ++i) {
    in[i] = const_cast<uint8_t*>(data[i].data());
    starts.push_back(in[i]);
  }
  for (int j = 0; j < parity_; ++j) {
    out[j] = parity[j].data();
    starts.push_back(out[j]);
  }
  if (absl::Status s = CheckDisjoint(std::move(starts), len); !s.ok()) return s;
  ec_encode_data(static_cast<int>(len), data_, parity_, const_cast<uint8_t*>(encode_tables_.data()),
                 in.data(), out.data());
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> Codec::DecodeTables(
    const std::vector<int>& survivors, const std::vector<int>& wanted) const {
  DecodeCache::Key key{survivors, wanted};
  {
    std::lock_guard lock(cache_->mu);
    for (auto it = cache_->entries.begin(); it != cache_->entries.end(); ++it) {
      if (it->first == key) {
        cache_->entries.splice(cache_->entries.begin(), cache_->entries, it);
        return it->second;
      }
    }
  }
  const int m = data_;
  // Rows of the generator [I; A] for the survivors. gf_invert_matrix destroys `sub`.
  std::vector<uint8_t> sub(static_cast<size_t>(m) * m, 0), inverse(static_cast<size_t>(m) * m);
  for (int r = 0; r < m; ++r) {
    const int idx = survivors[r];
    for (int c = 0; c < m; ++c) {
      sub[r * m + c] = idx < m ? (idx == c ? 1 : 0) : coding_[(idx - m) * m + c];
    }
  }
  if (gf_invert_matrix(sub.data(), inverse.data(), m) != 0) {
    return absl::DataLossError(
        absl::StrCat("blocks ", Join(survivors), " form a singular matrix for ", m, "+", parity_));
  }
  // survivors = S * data, so data = S^-1 * survivors: data block d is row d of the inverse, and
  // parity block j is (row j of A) * S^-1.
  const int n = static_cast<int>(wanted.size());
  std::vector<uint8_t> rows(static_cast<size_t>(n) * m);
  for (int w = 0; w < n; ++w) {
    const int idx = wanted[w];
    for (int c = 0; c < m; ++c) {
      if (idx < m) {
        rows[w * m + c] = inverse[idx * m + c];
      } else {
        uint8_t v = 0;
        for (int t = 0; t < m; ++t) {
          v ^= static_cast<uint8_t>(gf_mul(coding_[(idx - m) * m + t], inverse[t * m + c]));
        }
        rows[w * m + c] = v;
      }
    }
  }
  auto tables = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(32) * m * n);
  ec_init_tables(m, n, rows.data(), tables->data());
  std::lock_guard lock(cache_->mu);
  for (const auto& entry : cache_->entries) {
    if (entry.first == key) return entry.second;  // Another thread got here first.
  }
  cache_->entries.emplace_front(std::move(key), tables);
  if (cache_->entries.size() > kDecodeCacheEntries) cache_->entries.pop_back();
  return std::shared_ptr<const std::vector<uint8_t>>(tables);
}

absl::Status Codec::Reconstruct(absl::Span<const absl::Span<uint8_t>> blocks,
                                absl::Span<const int> available,
                                absl::Span<const int> wanted) const {
  // Every check comes before the first write: on error no block is touched.
  size_t len = 0;
  if (absl::Status s = CheckBlocks(blocks, total_blocks(), "stripe", &len); !s.ok()) return s;
  std::vector<int> seen(total_blocks(), 0);
  for (int i : available) {
    if (i < 0 || i >= total_blocks()) {
      return absl::InvalidArgumentError(
          absl::StrCat("available block index ", i, " is out of range 0..", total_blocks() - 1));
    }
    if (seen[i]++) {
      return absl::InvalidArgumentError(
          absl::StrCat("available block index ", i, " is listed twice"));
    }
  }
  for (int i : wanted) {
    if (i < 0 || i >= total_blocks()) {
      return absl::InvalidArgumentError(
          absl::StrCat("wanted block index ", i, " is out of range 0..", total_blocks() - 1));
    }
    if (seen[i]++) {
      return absl::InvalidArgumentError(absl::StrCat(
          "wanted block index ", i, " is listed twice or is also available (it cannot be both)"));
    }
  }
  std::vector<const uint8_t*> starts;
  for (const auto& b : blocks) starts.push_back(b.data());
  if (absl::Status s = CheckDisjoint(std::move(starts), len); !s.ok()) return s;
  if (static_cast<int>(available.size()) < data_) {
    return absl::DataLossError(absl::StrCat("only ", available.size(), " of the ", data_,
                                            " blocks needed to rebuild are available"));
  }
  if (wanted.empty()) return absl::OkStatus();
  std::vector<int> want(wanted.begin(), wanted.end());
  std::sort(want.begin(), want.end());
  std::vector<int> pool(available.begin(), available.end());
  std::sort(pool.begin(), pool.end());

  // The first M available blocks in index order (data before parity: the cheapest inverse);
  // if they are singular (possible only for a non-MDS matrix), try the other M-subsets of the
  // available ones in lexicographic order, a bounded number of times.
  constexpr int kMaxSurvivorSets = 256;
  std::vector<bool> pick(pool.size(), false);
  std::fill(pick.begin(), pick.begin() + data_, true);
  int attempts = 0;
  do {
    std::vector<int> survivors;
    for (size_t x = 0; x < pool.size(); ++x) {
      if (pick[x]) survivors.push_back(pool[x]);
    }
    absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> tables =
        DecodeTables(survivors, want);
    if (tables.ok()) {
      std::vector<uint8_t*> in, out;
      for (int i : survivors) in.push_back(blocks[i].data());
      for (int i : want) out.push_back(blocks[i].data());
      ec_encode_data(static_cast<int>(len), data_, static_cast<int>(want.size()),
                     const_cast<uint8_t*>((*tables)->data()), in.data(), out.data());
      return absl::OkStatus();
    }
  } while (++attempts < kMaxSurvivorSets && std::prev_permutation(pick.begin(), pick.end()));
  return absl::DataLossError(absl::StrCat(
      "cannot rebuild blocks ", Join(want), " from available blocks ", Join(pool), ": the ",
      attempts, " sets of ", data_, " survivors tried are all singular for this ",
      MatrixTypeName(type_), " matrix"));
}

}  // namespace ecd::ec
