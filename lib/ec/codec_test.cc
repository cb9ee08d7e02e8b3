// Tests the codec against the scalar reference: encode, reconstruction of every erasure pattern
// for the standard shapes with both matrices, and every refusal, with outputs left untouched.
#include "lib/ec/codec.h"

#include <gtest/gtest.h>

#include <random>

#include "lib/ec/gf_reference_test.h"

namespace ecd::ec {
namespace {

struct Stripe {
  std::vector<std::vector<uint8_t>> blocks;  // M+K.
  std::vector<absl::Span<uint8_t>> spans() {
    std::vector<absl::Span<uint8_t>> s;
    for (auto& b : blocks) s.emplace_back(b);
    return s;
  }
};

Stripe Encoded(const Codec& codec, size_t len, uint32_t seed) {
  std::mt19937 rng(seed);
  Stripe s;
  s.blocks.assign(codec.total_blocks(), std::vector<uint8_t>(len));
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

TEST(CodecTest, EncodeMatchesScalarReference) {
  for (MatrixType type : {MatrixType::kCauchy, MatrixType::kVandermonde}) {
    for (auto [m, k] : {std::pair{4, 2}, {10, 4}, {2, 1}, {6, 3}}) {
      auto codec = Codec::Create(type, m, k);
      if (type == MatrixType::kVandermonde && !codec.ok()) {
        ASSERT_TRUE(absl::IsInvalidArgument(codec.status()));  // Not MDS: see matrix_test.
        continue;
      }
      ASSERT_TRUE(codec.ok()) << codec.status();
      for (size_t len : {64ul, 128ul, 4096ul + 64}) {
        Stripe s = Encoded(**codec, len, static_cast<uint32_t>(len + m));
        std::vector<std::vector<uint8_t>> data(s.blocks.begin(), s.blocks.begin() + m);
        auto want = testing::RefEncode(CodingMatrix(type, m, k), m, k, data);
        for (int j = 0; j < k; ++j) ASSERT_EQ(s.blocks[m + j], want[j]) << m << "+" << k;
      }
    }
  }
}

// Every pattern of 1..K lost blocks, rebuilt from the survivors, byte-exact.
void CheckEveryPattern(MatrixType type, int m, int k) {
  auto codec = Codec::Create(type, m, k);
  if (!codec.ok()) {
    ASSERT_EQ(type, MatrixType::kVandermonde) << codec.status();
    return;  // Refused Vandermonde shapes are tested in matrix_test.
  }
  const int n = m + k;
  Stripe original = Encoded(**codec, 128, static_cast<uint32_t>(m * 100 + k));
  int patterns = 0;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) > k) continue;
    Stripe damaged = original;
    std::vector<int> available, lost;
    for (int i = 0; i < n; ++i) {
      if (mask & (1u << i)) {
        lost.push_back(i);
        std::fill(damaged.blocks[i].begin(), damaged.blocks[i].end(), 0xEE);
      } else {
        available.push_back(i);
      }
    }
    ASSERT_TRUE((*codec)->Reconstruct(damaged.spans(), available, lost).ok());
    for (int i : lost) ASSERT_EQ(damaged.blocks[i], original.blocks[i]) << "mask " << mask;
    ++patterns;
  }
  EXPECT_GT(patterns, 0);
}

TEST(CodecTest, EveryErasurePatternRecoversCauchy) {
  for (auto [m, k] : {std::pair{2, 1}, {4, 2}, {6, 3}, {8, 3}, {10, 4}}) {
    CheckEveryPattern(MatrixType::kCauchy, m, k);
  }
}

TEST(CodecTest, EveryErasurePatternRecoversVandermondeWhereAccepted) {
  for (auto [m, k] : {std::pair{2, 1}, {4, 2}, {6, 3}, {8, 3}, {10, 4}}) {
    CheckEveryPattern(MatrixType::kVandermonde, m, k);
  }
}

TEST(CodecTest, RebuildsOnlyWhatIsWanted) {
  auto codec = Codec::Create(MatrixType::kCauchy, 4, 2);
  ASSERT_TRUE(codec.ok());
  Stripe original = Encoded(**codec, 256, 9);
  Stripe damaged = original;
  std::fill(damaged.blocks[1].begin(), damaged.blocks[1].end(), 0xEE);
  std::fill(damaged.blocks[4].begin(), damaged.blocks[4].end(), 0xEE);
  // Both 1 and 4 are lost; only 1 is wanted: 4 stays as it was.
  ASSERT_TRUE((*codec)->Reconstruct(damaged.spans(), {0, 2, 3, 5}, {1}).ok());
  EXPECT_EQ(damaged.blocks[1], original.blocks[1]);
  EXPECT_EQ(damaged.blocks[4], std::vector<uint8_t>(256, 0xEE));
  // More survivors than needed is fine.
  damaged = original;
  std::fill(damaged.blocks[0].begin(), damaged.blocks[0].end(), 0);
  ASSERT_TRUE((*codec)->Reconstruct(damaged.spans(), {1, 2, 3, 4, 5}, {0}).ok());
  EXPECT_EQ(damaged.blocks[0], original.blocks[0]);
}

TEST(CodecTest, RefusesBadInputsAndLeavesOutputsUntouched) {
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::Create(MatrixType::kCauchy, 0, 2).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::Create(MatrixType::kCauchy, 129, 2).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::Create(MatrixType::kCauchy, 4, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::Create(MatrixType::kCauchy, 4, 33).status()));
  auto codec = Codec::Create(MatrixType::kCauchy, 4, 2);
  ASSERT_TRUE(codec.ok());
  const Codec& c = **codec;

  auto check_encode = [&](size_t data_count, size_t parity_count, std::vector<size_t> lens) {
    std::vector<std::vector<uint8_t>> d, p;
    for (size_t i = 0; i < data_count; ++i) d.emplace_back(lens[i % lens.size()], 1);
    for (size_t j = 0; j < parity_count; ++j) p.emplace_back(lens[0], 0x77);
    std::vector<absl::Span<const uint8_t>> ds(d.begin(), d.end());
    std::vector<absl::Span<uint8_t>> ps;
    for (auto& x : p) ps.emplace_back(x);
    absl::Status s = c.Encode(ds, ps);
    for (auto& x : p) EXPECT_EQ(x, std::vector<uint8_t>(lens[0], 0x77));
    return s;
  };
  EXPECT_TRUE(absl::IsInvalidArgument(check_encode(3, 2, {64})));
  EXPECT_TRUE(absl::IsInvalidArgument(check_encode(4, 3, {64})));
  EXPECT_TRUE(absl::IsInvalidArgument(check_encode(4, 2, {64, 128})));
  EXPECT_TRUE(absl::IsInvalidArgument(check_encode(4, 2, {63})));
  EXPECT_TRUE(absl::IsInvalidArgument(check_encode(4, 2, {100})));

  // Overlapping buffers: parity 0 overlaps data 3.
  std::vector<uint8_t> arena(64 * 6 + 32, 5);
  std::vector<absl::Span<const uint8_t>> ds;
  for (int i = 0; i < 4; ++i) ds.emplace_back(arena.data() + 64 * i, 64);
  std::vector<absl::Span<uint8_t>> ps = {{arena.data() + 64 * 3 + 32, 64},
                                         {arena.data() + 64 * 5 + 32, 64}};
  EXPECT_TRUE(absl::IsInvalidArgument(c.Encode(ds, ps)));
  EXPECT_EQ(arena, std::vector<uint8_t>(64 * 6 + 32, 5));

  Stripe s = Encoded(c, 64, 3);
  Stripe before = s;
  EXPECT_TRUE(absl::IsDataLoss(c.Reconstruct(s.spans(), {0, 1, 2}, {3})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(s.spans(), {0, 1, 2, 3}, {3})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(s.spans(), {0, 1, 2, 2, 4}, {3})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(s.spans(), {0, 1, 2, 4}, {6})));
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(s.spans(), {0, 1, 2, -1}, {3})));
  auto spans = s.spans();
  spans.pop_back();
  EXPECT_TRUE(absl::IsInvalidArgument(c.Reconstruct(spans, {0, 1, 2, 4}, {3})));
  EXPECT_EQ(s.blocks, before.blocks);
}

}  // namespace
}  // namespace ecd::ec
