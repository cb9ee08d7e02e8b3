// Tests the DOCA matrix definitions against the scalar reference and ISA-L, the limits, and the
// Vandermonde decodability check (which must find real singular shapes).
#include "lib/ec/matrix.h"

#include <gtest/gtest.h>
#include <isa-l/erasure_code.h>

#include "lib/ec/gf_reference_test.h"

namespace ecd::ec {
namespace {

using testing::RefInv;
using testing::RefNonsingular;
using testing::RefPow;

TEST(MatrixTest, CauchyIsDocaDefinitionAndIsalCauchy1) {
  for (auto [m, k] : {std::pair{4, 2}, {10, 4}, {128, 32}, {1, 1}}) {
    const auto a = CodingMatrix(MatrixType::kCauchy, m, k);
    std::vector<uint8_t> isal(static_cast<size_t>(m + k) * m);
    gf_gen_cauchy1_matrix(isal.data(), m + k, m);
    for (int j = 0; j < k; ++j) {
      for (int i = 0; i < m; ++i) {
        ASSERT_EQ(a[j * m + i], RefInv(static_cast<uint8_t>(i ^ (m + j)))) << m << "+" << k;
        ASSERT_EQ(a[j * m + i], isal[(m + j) * m + i]);
      }
    }
  }
}

TEST(MatrixTest, VandermondeIsDocaDefinition) {
  const auto a = CodingMatrix(MatrixType::kVandermonde, 10, 4);
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 10; ++i) ASSERT_EQ(a[j * 10 + i], RefPow(static_cast<uint8_t>(i + 1), j));
  }
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a[i], 1);  // Parity 0 is plain XOR.
}

TEST(MatrixTest, Limits) {
  EXPECT_TRUE(ValidateShape(1, 1).ok());
  EXPECT_TRUE(ValidateShape(128, 32).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShape(0, 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShape(129, 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShape(4, 0)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShape(4, 33)));
  for (size_t ok : {64ul, 128ul, 4160ul, 128ul << 20}) EXPECT_TRUE(ValidateBlockSize(ok).ok());
  for (size_t bad : {0ul, 63ul, 65ul, 100ul, (128ul << 20) + 64}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ValidateBlockSize(bad))) << bad;
  }
}

// Brute force with the reference: is every square submatrix of the coding matrix nonsingular?
bool RefIsMds(const std::vector<uint8_t>& a, int m, int k) {
  for (int r = 1; r <= std::min(m, k); ++r) {
    std::vector<bool> rs(k, false), cs(m, false);
    std::fill(rs.begin(), rs.begin() + r, true);
    do {
      std::fill(cs.begin(), cs.end(), false);
      std::fill(cs.begin(), cs.begin() + r, true);
      do {
        std::vector<uint8_t> sub;
        for (int j = 0; j < k; ++j) {
          if (!rs[j]) continue;
          for (int i = 0; i < m; ++i) {
            if (cs[i]) sub.push_back(a[j * m + i]);
          }
        }
        if (!RefNonsingular(sub, r)) return false;
      } while (std::prev_permutation(cs.begin(), cs.end()));
    } while (std::prev_permutation(rs.begin(), rs.end()));
  }
  return true;
}

TEST(MatrixTest, VandermondeCheckAgreesWithBruteForceAndFindsSingularShapes) {
  int refused = 0;
  for (int m = 1; m <= 12; ++m) {
    for (int k = 1; k <= 5; ++k) {
      const auto a = CodingMatrix(MatrixType::kVandermonde, m, k);
      const bool mds = RefIsMds(a, m, k);
      const absl::Status s = CheckEveryErasurePatternDecodes(a, m, k);
      EXPECT_EQ(s.ok(), mds) << m << "+" << k << ": " << s;
      if (!mds) {
        EXPECT_TRUE(absl::IsInvalidArgument(s));
        EXPECT_NE(s.message().find("cauchy"), absl::string_view::npos);
        ++refused;
      }
      EXPECT_TRUE(
          CheckEveryErasurePatternDecodes(CodingMatrix(MatrixType::kCauchy, m, k), m, k).ok());
    }
  }
  EXPECT_GT(refused, 0) << "no singular Vandermonde shape found: the refusal is untested";
}

TEST(MatrixTest, HugeVandermondeShapesAreRefusedNotTrusted) {
  const auto a = CodingMatrix(MatrixType::kVandermonde, 128, 32);
  const absl::Status s = CheckEveryErasurePatternDecodes(a, 128, 32);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("too many"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace ecd::ec
