// Tests the codec against the scalar reference: encode, reconstruction of every erasure pattern
// of the standard shapes with both matrices, the Vandermonde refusal, the decode-table cache
// under reuse and concurrency, and every refusal of bad input, with outputs left untouched.
#include "lib/ec/codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lib/ec/gf_reference_test.h"

namespace ecd::ec {
namespace {

using testing::RefCrc32c;
using testing::RefDocaCauchy;
using testing::RefDocaVandermonde;
using testing::RefEncode;
using testing::RefFindUndecodableLoss;
using testing::RefSurvivorsDecode;

constexpr uint8_t kSentinel = 0xEE;

struct Stripe {
  std::vector<std::vector<uint8_t>> blocks;  // M+K, data first.
  std::vector<absl::Span<uint8_t>> spans() {
    std::vector<absl::Span<uint8_t>> s;
    for (auto& b : blocks) s.emplace_back(b);
    return s;
  }
};

std::vector<absl::Span<const uint8_t>> Const(std::vector<std::vector<uint8_t>>& b) {
  return {b.begin(), b.end()};
}
std::vector<absl::Span<uint8_t>> Mut(std::vector<std::vector<uint8_t>>& b) {
  std::vector<absl::Span<uint8_t>> s;
  for (auto& x : b) s.emplace_back(x);
  return s;
}

// Random data blocks and the codec's parity for them.
Stripe Encoded(const Codec& codec, size_t len, uint32_t seed) {
  std::mt19937 rng(seed);
  Stripe s;
  s.blocks.assign(codec.total_blocks(), std::vector<uint8_t>(len, kSentinel));
  std::vector<absl::Span<const uint8_t>> data;
  std::vector<absl::Span<uint8_t>> parity;
  for (int i = 0; i < codec.data_blocks(); ++i) {
    for (auto& x : s.blocks[i]) x = static_cast<uint8_t>(rng());
    data.emplace_back(s.blocks[i]);
  }
  for (int j = 0; j < codec.parity_blocks(); ++j) {
    parity.emplace_back(s.blocks[codec.data_blocks() + j]);
  }
  EXPECT_TRUE(codec.Encode(data, parity).ok());
  return s;
}

std::vector<uint8_t> RefMatrix(MatrixType type, int m, int k) {
  return type == MatrixType::kCauchy ? RefDocaCauchy(m, k) : RefDocaVandermonde(m, k);
}

// Whether the reference says every erasure pattern of the DOCA matrix decodes.
bool RefMds(MatrixType type, int m, int k) {
  return !RefFindUndecodableLoss(RefMatrix(type, m, k), m, k).has_value();
}

// The coefficients of `coding` (K x M) in the data-major layout CreateFromRaw takes.
std::vector<uint8_t> DataMajor(const std::vector<uint8_t>& coding, int m, int k) {
  std::vector<uint8_t> raw(coding.size());
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < m; ++i) raw[i * k + j] = coding[j * m + i];
  }
  return raw;
}

const std::vector<std::pair<int, int>> kShapes = {{1, 1}, {2, 1},  {4, 2},  {6, 3},
                                                  {8, 3}, {10, 4}, {12, 4}, {16, 4}};

TEST(CodecTest, EncodeMatchesScalarReference) {
  int vandermonde_encoded = 0;
  for (MatrixType type : {MatrixType::kCauchy, MatrixType::kVandermonde}) {
    for (auto [m, k] : kShapes) {
      auto codec = Codec::Create(type, m, k);
      if (type == MatrixType::kVandermonde) {
        ASSERT_EQ(codec.ok(), RefMds(type, m, k)) << m << "+" << k << ": " << codec.status();
        if (!codec.ok()) {
          EXPECT_TRUE(absl::IsInvalidArgument(codec.status()));
          continue;
        }
        ++vandermonde_encoded;
      }
      ASSERT_TRUE(codec.ok()) << codec.status();
      EXPECT_EQ((*codec)->data_blocks(), m);
      EXPECT_EQ((*codec)->parity_blocks(), k);
      EXPECT_EQ((*codec)->total_blocks(), m + k);
      EXPECT_EQ((*codec)->matrix_type(), type);
      EXPECT_EQ((*codec)->coding(), RefMatrix(type, m, k));
      for (size_t len : {size_t{64}, size_t{128}, size_t{4096 + 64}}) {
        Stripe s = Encoded(**codec, len, static_cast<uint32_t>(len * 131 + m * 7 + k));
        std::vector<std::vector<uint8_t>> data(s.blocks.begin(), s.blocks.begin() + m);
        const auto want = RefEncode(RefMatrix(type, m, k), m, k, data);
        for (int j = 0; j < k; ++j) {
          ASSERT_EQ(s.blocks[m + j], want[j])
              << MatrixTypeName(type) << " " << m << "+" << k << " len " << len << " parity " << j;
        }
      }
    }
  }
  EXPECT_GT(vandermonde_encoded, 0);
}

TEST(CodecTest, ReferenceCrc32cIsTheStandardOne) {
  const std::string check = "123456789";
  EXPECT_EQ(RefCrc32c(std::vector<uint8_t>(check.begin(), check.end())), 0xE3069283u);
}

// Encode with checksums: the same parity as without, and each block's CRC32C, for widths whose
// pieces differ and lengths that end inside a piece, below one and at several.
TEST(CodecTest, EncodeWithChecksumsGivesTheSameParityAndEveryBlocksCrc32c) {
  const std::vector<std::pair<int, int>> shapes = {{1, 1}, {4, 2}, {8, 3}, {12, 4}, {100, 28}};
  for (auto [m, k] : shapes) {
    auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
    for (size_t len : {size_t{64}, size_t{4096 + 64}, size_t{23808 * 2 + 640}, size_t{1} << 20}) {
      if (m + k > 100 && len > 65536) continue;  // Keeps the test fast; the piece is 4 KiB.
      const Stripe plain = Encoded(*codec, len, static_cast<uint32_t>(len + m * 7 + k));
      Stripe fused = plain;
      for (int j = 0; j < k; ++j)
        std::fill(fused.blocks[m + j].begin(), fused.blocks[m + j].end(), kSentinel);
      std::vector<uint32_t> checksums(m + k, 0);
      std::vector<absl::Span<const uint8_t>> data;
      std::vector<absl::Span<uint8_t>> parity;
      for (int i = 0; i < m; ++i) data.emplace_back(fused.blocks[i]);
      for (int j = 0; j < k; ++j) parity.emplace_back(fused.blocks[m + j]);
      ASSERT_TRUE(codec->Encode(data, parity, absl::MakeSpan(checksums)).ok());
      ASSERT_EQ(fused.blocks, plain.blocks) << m << "+" << k << " len " << len;
      for (int i = 0; i < m + k; ++i) {
        ASSERT_EQ(checksums[i], RefCrc32c(plain.blocks[i]))
            << m << "+" << k << " len " << len << " block " << i;
      }
    }
  }
}

TEST(CodecTest, EncodeRefusesChecksumsOfTheWrongCountAndWritesNothing) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  std::vector<std::vector<uint8_t>> data(4, std::vector<uint8_t>(64, 1));
  std::vector<std::vector<uint8_t>> parity(2, std::vector<uint8_t>(64, kSentinel));
  for (size_t n : {size_t{1}, size_t{4}, size_t{5}, size_t{7}}) {
    std::vector<uint32_t> checksums(n, 0x5A5A5A5Au);
    const absl::Status s = codec->Encode(Const(data), Mut(parity), absl::MakeSpan(checksums));
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << n << ": " << s;
    EXPECT_TRUE(std::all_of(checksums.begin(), checksums.end(),
                            [](uint32_t c) { return c == 0x5A5A5A5Au; }));
    for (const auto& p : parity) {
      EXPECT_TRUE(std::all_of(p.begin(), p.end(), [](uint8_t b) { return b == kSentinel; }));
    }
  }
}

// Rebuilds every pattern of 1..K lost blocks (data and parity mixed) from all the others and
// checks the bytes. Returns false if Create refused the shape.
bool CheckEveryPattern(MatrixType type, int m, int k) {
  auto codec = Codec::Create(type, m, k);
  if (!codec.ok()) {
    EXPECT_TRUE(absl::IsInvalidArgument(codec.status()));
    return false;
  }
  const int n = m + k;
  const Stripe original = Encoded(**codec, 128, static_cast<uint32_t>(m * 100 + k));
  int patterns = 0;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) > k) continue;
    Stripe damaged = original;
    std::vector<int> available, lost;
    for (int i = 0; i < n; ++i) {
      if (mask & (1u << i)) {
        lost.push_back(i);
        std::fill(damaged.blocks[i].begin(), damaged.blocks[i].end(), kSentinel);
      } else {
        available.push_back(i);
      }
    }
    const absl::Status s = (*codec)->Reconstruct(damaged.spans(), available, lost);
    EXPECT_TRUE(s.ok()) << MatrixTypeName(type) << " " << m << "+" << k << " mask " << mask << ": "
                        << s;
    EXPECT_EQ(damaged.blocks, original.blocks)
        << MatrixTypeName(type) << " " << m << "+" << k << " mask " << mask;
    if (::testing::Test::HasFailure()) return true;  // One report is enough.
    ++patterns;
  }
  int expected = 0;  // sum over e = 1..K of C(n, e).
  for (int e = 1, c = 1; e <= k; ++e) expected += (c = c * (n - e + 1) / e);
  EXPECT_EQ(patterns, expected);
  return true;
}

const std::vector<std::pair<int, int>> kPatternShapes = {{2, 1}, {4, 2}, {6, 3}, {8, 3}, {10, 4}};

TEST(CodecTest, EveryErasurePatternRecoversCauchy) {
  for (auto [m, k] : kPatternShapes) {
    ASSERT_TRUE(CheckEveryPattern(MatrixType::kCauchy, m, k)) << m << "+" << k;
  }
}

TEST(CodecTest, EveryErasurePatternRecoversVandermondeWhereAccepted) {
  int accepted = 0;
  for (auto [m, k] : kPatternShapes) {
    const bool created = CheckEveryPattern(MatrixType::kVandermonde, m, k);
    EXPECT_EQ(created, RefMds(MatrixType::kVandermonde, m, k)) << m << "+" << k;
    accepted += created;
  }
  EXPECT_GT(accepted, 0) << "no Vandermonde shape accepted: nothing was reconstructed";
}

// For every loss of exactly K blocks, rebuild each non-empty strict subset of them: only the
// wanted ones are written, the other lost ones keep their sentinel.
TEST(CodecTest, RebuildsOnlyWhatIsWanted) {
  for (auto [m, k] : {std::pair{4, 2}, {6, 3}, {10, 4}}) {
    auto codec = Codec::Create(MatrixType::kCauchy, m, k);
    ASSERT_TRUE(codec.ok());
    const int n = m + k;
    const Stripe original = Encoded(**codec, 64, static_cast<uint32_t>(n));
    std::vector<bool> lost_mask(n, false);
    std::fill(lost_mask.begin(), lost_mask.begin() + k, true);
    int rebuilt = 0;
    do {
      std::vector<int> available, lost;
      for (int i = 0; i < n; ++i) (lost_mask[i] ? lost : available).push_back(i);
      for (uint32_t sub = 1; sub + 1 < (1u << k); ++sub) {
        Stripe damaged = original;
        for (int i : lost) std::fill(damaged.blocks[i].begin(), damaged.blocks[i].end(), kSentinel);
        std::vector<int> wanted;
        for (int x = 0; x < k; ++x) {
          if (sub & (1u << x)) wanted.push_back(lost[x]);
        }
        std::reverse(wanted.begin(), wanted.end());  // Any order is accepted.
        ASSERT_TRUE((*codec)->Reconstruct(damaged.spans(), available, wanted).ok());
        for (int x = 0; x < k; ++x) {
          const int i = lost[x];
          if (sub & (1u << x)) {
            ASSERT_EQ(damaged.blocks[i], original.blocks[i]) << m << "+" << k << " block " << i;
          } else {
            ASSERT_EQ(damaged.blocks[i], std::vector<uint8_t>(64, kSentinel)) << "block " << i;
          }
        }
        for (int i : available) ASSERT_EQ(damaged.blocks[i], original.blocks[i]);
        ++rebuilt;
      }
    } while (std::prev_permutation(lost_mask.begin(), lost_mask.end()));
    EXPECT_GT(rebuilt, 0);
  }
}

TEST(CodecTest, EmptyWantedWritesNothing) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  Stripe s = Encoded(*codec, 64, 1);
  const Stripe before = s;
  EXPECT_TRUE(codec->Reconstruct(s.spans(), {0, 1, 2, 3}, {}).ok());
  EXPECT_EQ(s.blocks, before.blocks);
}

// A raw matrix whose first-choice survivors are singular: Reconstruct must find another set.
TEST(CodecTest, SingularFirstSurvivorsFallBackToAnotherSet) {
  // Parity 0 = data 1, parity 1 = data 0 + data 1 (raw is data-major: raw[i * K + j]).
  const std::vector<uint8_t> coding = {0, 1, 1, 1};  // K x M.
  auto codec = Codec::CreateFromRaw(DataMajor(coding, 2, 2), 2, 2);
  ASSERT_TRUE(codec.ok()) << codec.status();
  ASSERT_FALSE(RefSurvivorsDecode(coding, 2, {1, 2})) << "the first choice must be singular";
  ASSERT_TRUE(RefSurvivorsDecode(coding, 2, {1, 3}));
  const Stripe original = Encoded(**codec, 128, 5);
  Stripe damaged = original;
  std::fill(damaged.blocks[0].begin(), damaged.blocks[0].end(), kSentinel);
  ASSERT_TRUE((*codec)->Reconstruct(damaged.spans(), {1, 2, 3}, {0}).ok());
  EXPECT_EQ(damaged.blocks, original.blocks);
  // With only the singular pair there is nothing else to try.
  damaged = original;
  std::fill(damaged.blocks[0].begin(), damaged.blocks[0].end(), kSentinel);
  const Stripe before = damaged;
  const absl::Status s = (*codec)->Reconstruct(damaged.spans(), {1, 2}, {0});
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_EQ(damaged.blocks, before.blocks);
}

// Finds, with the reference alone, a shape whose DOCA Vandermonde matrix has an undecodable
// loss; Create must refuse it, and the loss must really fail to decode with those coefficients
// (through CreateFromRaw, which does not check) while Cauchy rebuilds it.
TEST(CodecTest, RefusesVandermondeShapesThatCannotDecodeSomeLoss) {
  std::optional<std::pair<int, int>> shape;
  std::vector<int> lost;
  for (int k = 2; k <= 5 && !shape; ++k) {
    for (int m = 2; m <= 12 && !shape; ++m) {
      if (auto l = RefFindUndecodableLoss(RefDocaVandermonde(m, k), m, k)) {
        shape = {m, k};
        lost = *l;
      }
    }
  }
  ASSERT_TRUE(shape.has_value()) << "no singular Vandermonde shape found: the refusal is untested";
  const auto [m, k] = *shape;
  for (int attempt = 0; attempt < 2; ++attempt) {  // The second answer comes from the cache.
    auto refused = Codec::Create(MatrixType::kVandermonde, m, k);
    ASSERT_TRUE(absl::IsInvalidArgument(refused.status())) << m << "+" << k;
    EXPECT_NE(refused.status().message().find("cauchy"), absl::string_view::npos);
  }
  // The refused shapes the daemon is most likely to be asked for.
  for (auto [mm, kk] : {std::pair{10, 4}, {12, 4}, {16, 4}}) {
    EXPECT_TRUE(absl::IsInvalidArgument(Codec::Create(MatrixType::kVandermonde, mm, kk).status()));
  }

  std::vector<int> available;
  for (int i = 0, x = 0; i < m + k; ++i) {
    if (x < static_cast<int>(lost.size()) && lost[x] == i) {
      ++x;
    } else {
      available.push_back(i);
    }
  }
  auto raw = Codec::CreateFromRaw(DataMajor(RefDocaVandermonde(m, k), m, k), m, k);
  ASSERT_TRUE(raw.ok()) << raw.status();
  Stripe s = Encoded(**raw, 64, 77);
  for (int i : lost) std::fill(s.blocks[i].begin(), s.blocks[i].end(), kSentinel);
  const Stripe before = s;
  EXPECT_TRUE(absl::IsDataLoss((*raw)->Reconstruct(s.spans(), available, lost)));
  EXPECT_EQ(s.blocks, before.blocks);

  auto cauchy = *Codec::Create(MatrixType::kCauchy, m, k);
  const Stripe original = Encoded(*cauchy, 64, 78);
  Stripe damaged = original;
  for (int i : lost) std::fill(damaged.blocks[i].begin(), damaged.blocks[i].end(), kSentinel);
  ASSERT_TRUE(cauchy->Reconstruct(damaged.spans(), available, lost).ok());
  EXPECT_EQ(damaged.blocks, original.blocks);
}

// The same pattern served from the decode-table cache rebuilds fresh stripes, before and after
// more patterns than the cache holds have gone through it.
TEST(CodecTest, CachedDecodeTablesServeNewStripes) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 8, 3);
  const std::vector<int> available = {0, 2, 3, 5, 6, 7, 9, 10}, wanted = {1, 4, 8};
  auto rebuild_once = [&](uint32_t seed) {
    const Stripe original = Encoded(*codec, 192, seed);
    Stripe damaged = original;
    for (int i : wanted) std::fill(damaged.blocks[i].begin(), damaged.blocks[i].end(), kSentinel);
    ASSERT_TRUE(codec->Reconstruct(damaged.spans(), available, wanted).ok());
    ASSERT_EQ(damaged.blocks, original.blocks) << "seed " << seed;
  };
  for (uint32_t seed = 0; seed < 4; ++seed) rebuild_once(seed);
  // 165 other single-loss and double-loss patterns: the first entry is evicted.
  const Stripe other = Encoded(*codec, 64, 99);
  for (int a = 0; a < 11; ++a) {
    for (int b = a; b < 11; ++b) {
      Stripe d = other;
      std::vector<int> avail, want = {a};
      if (b != a) want.push_back(b);
      for (int i = 0; i < 11; ++i) {
        if (i != a && i != b) avail.push_back(i);
      }
      ASSERT_TRUE(codec->Reconstruct(d.spans(), avail, want).ok());
      ASSERT_EQ(d.blocks, other.blocks);
    }
  }
  for (uint32_t seed = 10; seed < 12; ++seed) rebuild_once(seed);
}

// Threads sharing one codec (and its cache) each rebuild their own stripes correctly.
TEST(CodecTest, ConcurrentReconstructOnOneCodec) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 6, 3);
  std::atomic<int> failures{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const Stripe original = Encoded(*codec, 128, static_cast<uint32_t>(1000 + t));
      for (int round = 0; round < 3; ++round) {
        for (uint32_t mask = 1; mask < (1u << 9); ++mask) {
          if (__builtin_popcount(mask) > 3) continue;
          Stripe damaged = original;
          std::vector<int> available, lost;
          for (int i = 0; i < 9; ++i) {
            if (mask & (1u << i)) {
              lost.push_back(i);
              std::fill(damaged.blocks[i].begin(), damaged.blocks[i].end(), kSentinel);
            } else {
              available.push_back(i);
            }
          }
          if (!codec->Reconstruct(damaged.spans(), available, lost).ok() ||
              damaged.blocks != original.blocks) {
            failures.fetch_add(1);
          }
          done.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(done.load(), 4 * 3 * (9 + 36 + 84));
}

TEST(CodecTest, CreateRefusesShapesOutOfRange) {
  for (MatrixType type : {MatrixType::kCauchy, MatrixType::kVandermonde}) {
    for (auto [m, k] : {std::pair{0, 2}, {129, 2}, {4, 0}, {4, 33}, {-1, 2}}) {
      const absl::Status s = Codec::Create(type, m, k).status();
      EXPECT_TRUE(absl::IsInvalidArgument(s)) << m << "+" << k;
      EXPECT_NE(s.message().find("out of range"), absl::string_view::npos) << s;
    }
  }
  EXPECT_TRUE(Codec::Create(MatrixType::kCauchy, 128, 32).ok());
  EXPECT_TRUE(Codec::Create(MatrixType::kCauchy, 1, 1).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::Create(MatrixType::kRaw, 4, 2).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::CreateFromRaw({1, 2, 3}, 2, 2).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::CreateFromRaw({1, 2}, 2, 0).status()));
}

// Runs Encode on data blocks of `data_lens` and parity blocks of `parity_lens` (one entry per
// block), expecting InvalidArgument and every parity byte still the sentinel.
void ExpectEncodeRefused(const Codec& c, const std::vector<size_t>& data_lens,
                         const std::vector<size_t>& parity_lens) {
  std::vector<std::vector<uint8_t>> d, p;
  for (size_t len : data_lens) d.emplace_back(len, 1);
  for (size_t len : parity_lens) p.emplace_back(len, kSentinel);
  const absl::Status s = c.Encode(Const(d), Mut(p));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  for (const auto& x : p) EXPECT_EQ(x, std::vector<uint8_t>(x.size(), kSentinel));
}

TEST(CodecTest, EncodeRefusesBadInputsAndLeavesParityUntouched) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  const Codec& c = *codec;
  using L = std::vector<size_t>;
  ExpectEncodeRefused(c, L(3, 64), L(2, 64));  // Counts.
  ExpectEncodeRefused(c, L(5, 64), L(2, 64));
  ExpectEncodeRefused(c, L(4, 64), L(1, 64));
  ExpectEncodeRefused(c, L(4, 64), L(3, 64));
  ExpectEncodeRefused(c, {64, 128, 64, 64}, L(2, 64));  // Unequal lengths.
  ExpectEncodeRefused(c, L(4, 64), {64, 128});
  ExpectEncodeRefused(c, L(4, 128), L(2, 64));
  for (size_t bad : {size_t{0}, size_t{63}, size_t{65}, size_t{100}}) {  // Block sizes.
    ExpectEncodeRefused(c, L(4, bad), L(2, bad));
  }

  // Above the 128 MiB limit; the data is never read, so it stays uninitialised.
  const size_t huge = (size_t{128} << 20) + 64;
  auto one = *Codec::Create(MatrixType::kCauchy, 1, 1);
  std::unique_ptr<uint8_t[]> data(new uint8_t[huge]);
  std::vector<uint8_t> parity(huge, kSentinel);
  const absl::Span<const uint8_t> ds[] = {{data.get(), huge}};
  const absl::Span<uint8_t> ps[] = {absl::Span<uint8_t>(parity)};
  EXPECT_TRUE(absl::IsInvalidArgument(one->Encode(ds, ps)));
  EXPECT_TRUE(std::all_of(parity.begin(), parity.end(), [](uint8_t b) { return b == kSentinel; }));
}

TEST(CodecTest, EncodeRefusesOverlappingBuffers) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  std::vector<uint8_t> arena(64 * 8, 5);
  uint8_t* base = arena.data();
  auto data_at = [&](std::vector<size_t> offsets) {
    std::vector<absl::Span<const uint8_t>> v;
    for (size_t o : offsets) v.emplace_back(base + o, 64);
    return v;
  };
  auto parity_at = [&](std::vector<size_t> offsets) {
    std::vector<absl::Span<uint8_t>> v;
    for (size_t o : offsets) v.emplace_back(base + o, 64);
    return v;
  };
  // Sanity: disjoint blocks in one arena are fine.
  ASSERT_TRUE(codec->Encode(data_at({0, 64, 128, 192}), parity_at({256, 320})).ok());
  std::fill(arena.begin(), arena.end(), 5);
  // Parity 0 overlaps data 3 by half a block.
  EXPECT_TRUE(
      absl::IsInvalidArgument(codec->Encode(data_at({0, 64, 128, 192}), parity_at({224, 320}))));
  // The two parity blocks are the same memory.
  EXPECT_TRUE(
      absl::IsInvalidArgument(codec->Encode(data_at({0, 64, 128, 192}), parity_at({256, 256}))));
  // Two data blocks share memory (listed out of address order).
  EXPECT_TRUE(
      absl::IsInvalidArgument(codec->Encode(data_at({128, 64, 0, 100}), parity_at({256, 320}))));
  EXPECT_EQ(arena, std::vector<uint8_t>(64 * 8, 5));
}

TEST(CodecTest, ReconstructRefusesBadInputsAndWritesNothing) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  const Codec& c = *codec;
  Stripe s = Encoded(c, 64, 3);
  std::fill(s.blocks[3].begin(), s.blocks[3].end(), kSentinel);
  std::fill(s.blocks[5].begin(), s.blocks[5].end(), kSentinel);
  const Stripe before = s;
  auto spans = s.spans();

  // Fewer than M available.
  const absl::Status too_few = c.Reconstruct(spans, {0, 1, 2}, {3});
  EXPECT_TRUE(absl::IsDataLoss(too_few)) << too_few;
  EXPECT_NE(too_few.message().find("only 3 of the 4 blocks"), absl::string_view::npos) << too_few;
  EXPECT_TRUE(absl::IsDataLoss(c.Reconstruct(spans, {}, {3})));

  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, 4}, {4})));  // Both.
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, 2, 4}, {3})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, 4}, {3, 3})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, 4}, {6})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, 4}, {-1})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, -1}, {3})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, 6}, {3})));
  // Bad indices are reported even when too few blocks are available.
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 7}, {3})));

  auto short_spans = spans;  // Wrong block count.
  short_spans.pop_back();
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(short_spans, {0, 1, 2, 4}, {3})));
  auto long_spans = spans;
  long_spans.push_back(spans[0]);
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(long_spans, {0, 1, 2, 4}, {3})));

  auto unequal = spans;  // Unequal lengths.
  unequal[3] = unequal[3].subspan(0, 32);
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(unequal, {0, 1, 2, 4}, {3})));
  auto odd = spans;  // 63-byte blocks break the block-size rule.
  for (auto& b : odd) b = b.subspan(0, 63);
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(odd, {0, 1, 2, 4}, {3})));

  auto aliased = spans;  // The wanted block is the memory of an available one.
  aliased[3] = aliased[0];
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(aliased, {0, 1, 2, 4}, {3})));

  EXPECT_EQ(s.blocks, before.blocks);
}

}  // namespace
}  // namespace ecd::ec
