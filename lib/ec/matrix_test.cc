// Tests the DOCA matrix definitions against the scalar reference and ISA-L, the shape and block
// limits, and the decodability check (which must find real singular Vandermonde shapes).
#include "lib/ec/matrix.h"

#include <gtest/gtest.h>
#include <isa-l/erasure_code.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "lib/ec/gf_reference_test.h"

namespace ecd::ec {
namespace {

using testing::RefDocaCauchy;
using testing::RefDocaVandermonde;
using testing::RefFindUndecodableLoss;
using testing::RefInv;
using testing::RefMul;
using testing::RefSurvivorsDecode;

// The blocks a "cannot decode the loss of blocks {a,b,c}" message names; empty if none.
std::vector<int> NamedLoss(const absl::Status& s) {
  const std::string msg(s.message());
  const size_t open = msg.find('{'), close = msg.find('}');
  std::vector<int> lost;
  if (open == std::string::npos || close == std::string::npos || close < open) return lost;
  for (absl::string_view part : absl::StrSplit(msg.substr(open + 1, close - open - 1), ',')) {
    int v = -1;
    if (!absl::SimpleAtoi(part, &v)) return {};
    lost.push_back(v);
  }
  return lost;
}

// The M survivors when `lost` (ascending, K of them) is lost from M+K blocks.
std::vector<int> Complement(const std::vector<int>& lost, int n) {
  std::vector<int> rest;
  for (int i = 0, x = 0; i < n; ++i) {
    if (x < static_cast<int>(lost.size()) && lost[x] == i) {
      ++x;
    } else {
      rest.push_back(i);
    }
  }
  return rest;
}

// Asserts `s` refuses m+k by naming K lost blocks whose survivors really do not decode `a`.
void ExpectNamesRealUndecodableLoss(const absl::Status& s, const std::vector<uint8_t>& a, int m,
                                    int k) {
  ASSERT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("cannot decode the loss of blocks"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("use --matrix cauchy"), absl::string_view::npos) << s;
  const std::vector<int> lost = NamedLoss(s);
  ASSERT_EQ(static_cast<int>(lost.size()), k) << s;
  for (size_t x = 0; x < lost.size(); ++x) {
    ASSERT_GE(lost[x], 0);
    ASSERT_LT(lost[x], m + k);
    if (x > 0) {
      ASSERT_LT(lost[x - 1], lost[x]) << s;
    }
  }
  EXPECT_FALSE(RefSurvivorsDecode(a, m, Complement(lost, m + k))) << s;
}

TEST(ReferenceFieldTest, IsGf256WithPolynomial11dAndAgreesWithIsal) {
  EXPECT_EQ(RefMul(0x80, 2), 0x1d);  // x^8 = x^4 + x^3 + x^2 + 1.
  EXPECT_EQ(RefMul(0x53, 0xca), RefMul(0xca, 0x53));
  // 2 generates the multiplicative group: its powers reach all 255 non-zero elements.
  std::vector<bool> reached(256, false);
  uint8_t p = 1;
  for (int e = 0; e < 255; ++e) {
    EXPECT_FALSE(reached[p]) << "2^" << e << " repeats";
    reached[p] = true;
    p = RefMul(p, 2);
  }
  EXPECT_EQ(p, 1);
  for (int a = 0; a < 256; ++a) {
    if (a > 0) {
      ASSERT_EQ(RefMul(static_cast<uint8_t>(a), RefInv(static_cast<uint8_t>(a))), 1);
      ASSERT_EQ(RefInv(static_cast<uint8_t>(a)), gf_inv(static_cast<uint8_t>(a))) << a;
    }
    for (int b = 0; b < 256; ++b) {
      ASSERT_EQ(RefMul(static_cast<uint8_t>(a), static_cast<uint8_t>(b)),
                gf_mul(static_cast<uint8_t>(a), static_cast<uint8_t>(b)))
          << a << " * " << b;
    }
  }
}

const std::vector<std::pair<int, int>> kShapes = {{1, 1},  {2, 1},  {4, 2},  {6, 3},   {8, 3},
                                                  {10, 4}, {12, 4}, {16, 4}, {64, 17}, {128, 32}};

TEST(MatrixTest, CauchyIsDocaDefinitionAndIsalCauchy1) {
  for (auto [m, k] : kShapes) {
    const std::vector<uint8_t> a = CodingMatrix(MatrixType::kCauchy, m, k);
    ASSERT_EQ(a, RefDocaCauchy(m, k)) << m << "+" << k;
    // ISA-L's generator is (M+K) x M with the identity on top; its parity rows are DOCA's.
    std::vector<uint8_t> isal(static_cast<size_t>(m + k) * m);
    gf_gen_cauchy1_matrix(isal.data(), m + k, m);
    ASSERT_EQ(a, std::vector<uint8_t>(isal.begin() + m * m, isal.end())) << m << "+" << k;
  }
}

TEST(MatrixTest, VandermondeIsDocaDefinition) {
  for (auto [m, k] : kShapes) {
    const std::vector<uint8_t> a = CodingMatrix(MatrixType::kVandermonde, m, k);
    ASSERT_EQ(a, RefDocaVandermonde(m, k)) << m << "+" << k;
    for (int i = 0; i < m; ++i) {
      ASSERT_EQ(a[i], 1) << "parity 0 is plain XOR";
      if (k > 1) {
        ASSERT_EQ(a[m + i], i + 1) << "parity 1 weighs data i by i + 1";
      }
    }
  }
}

TEST(MatrixTest, ShapeLimitsSayWhatToDo) {
  EXPECT_TRUE(ValidateShape(1, 1).ok());
  EXPECT_TRUE(ValidateShape(128, 32).ok());
  EXPECT_EQ(ValidateShape(200, 4),
            absl::InvalidArgumentError("data blocks M=200 out of range: M must be 1..128"));
  EXPECT_EQ(ValidateShape(0, 4),
            absl::InvalidArgumentError("data blocks M=0 out of range: M must be 1..128"));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShape(129, 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShape(-1, 2)));
  EXPECT_EQ(ValidateShape(4, 33),
            absl::InvalidArgumentError("parity blocks K=33 out of range: K must be 1..32"));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShape(4, 0)));
}

TEST(MatrixTest, BlockSizeLimitsSayWhatToDo) {
  for (size_t ok : {size_t{64}, size_t{128}, size_t{4160}, size_t{1} << 20, size_t{128} << 20}) {
    EXPECT_TRUE(ValidateBlockSize(ok).ok()) << ok;
  }
  for (size_t bad : {size_t{0}, size_t{1}, size_t{63}, size_t{65}, size_t{100}, size_t{4097},
                     (size_t{128} << 20) + 64, size_t{1} << 40}) {
    const absl::Status s = ValidateBlockSize(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad;
    EXPECT_NE(s.message().find("multiples of 64 B from 64 B to 128 MiB"), absl::string_view::npos)
        << s;
  }
  EXPECT_NE(ValidateBlockSize(65).message().find("pad it to 128"), absl::string_view::npos);
  EXPECT_NE(ValidateBlockSize(4097).message().find("pad it to 4160"), absl::string_view::npos);
  EXPECT_NE(ValidateBlockSize(0).message().find("too small"), absl::string_view::npos);
  EXPECT_NE(ValidateBlockSize((size_t{128} << 20) + 64).message().find("too large"),
            absl::string_view::npos);
}

// The check must agree with an independent brute force (every K-loss, M x M generator rows,
// scalar arithmetic) on every small shape, and the sweep must meet both verdicts.
TEST(MatrixTest, CheckAgreesWithBruteForceAndFindsSingularVandermondeShapes) {
  int refused = 0, accepted = 0;
  for (int m = 1; m <= 12; ++m) {
    for (int k = 1; k <= 5; ++k) {
      const std::vector<uint8_t> v = CodingMatrix(MatrixType::kVandermonde, m, k);
      const bool mds = !RefFindUndecodableLoss(v, m, k).has_value();
      const absl::Status s = CheckEveryErasurePatternDecodes(v, m, k);
      EXPECT_EQ(s.ok(), mds) << m << "+" << k << ": " << s;
      if (mds) {
        ++accepted;
      } else {
        ++refused;
        ExpectNamesRealUndecodableLoss(s, v, m, k);
        EXPECT_NE(s.message().find("vandermonde matrix for " + std::to_string(m) + "+" +
                                   std::to_string(k)),
                  absl::string_view::npos)
            << s;
      }
      const std::vector<uint8_t> c = CodingMatrix(MatrixType::kCauchy, m, k);
      EXPECT_TRUE(CheckEveryErasurePatternDecodes(c, m, k).ok()) << m << "+" << k;
      if (m + k <= 12) {
        EXPECT_FALSE(RefFindUndecodableLoss(c, m, k).has_value()) << m << "+" << k;
      }
    }
  }
  EXPECT_GT(refused, 0) << "no singular Vandermonde shape found: the refusal is untested";
  EXPECT_GT(accepted, 0) << "no Vandermonde shape accepted: acceptance is untested";
}

TEST(MatrixTest, CommonVandermondeShapesAreRefusedWithinMilliseconds) {
  const auto start = std::chrono::steady_clock::now();
  for (auto [m, k] : {std::pair{10, 4}, {12, 4}, {16, 4}}) {
    const std::vector<uint8_t> v = CodingMatrix(MatrixType::kVandermonde, m, k);
    ExpectNamesRealUndecodableLoss(CheckEveryErasurePatternDecodes(v, m, k), v, m, k);
    EXPECT_TRUE(
        CheckEveryErasurePatternDecodes(CodingMatrix(MatrixType::kCauchy, m, k), m, k).ok());
  }
  // Typically well under 1 ms; the bound only catches an accidental blow-up.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
}

// With K <= 3 every square submatrix of (x_i^j) is a Vandermonde, x_a x_b (x_b - x_a), or
// (x_b - x_a)^2 (in characteristic 2) times non-zero factors, so such shapes always pass.
TEST(MatrixTest, VandermondeWithAtMostThreeParityBlocksIsAccepted) {
  for (auto [m, k] : {std::pair{128, 1}, {128, 2}, {128, 3}, {3, 3}, {40, 3}}) {
    EXPECT_TRUE(
        CheckEveryErasurePatternDecodes(CodingMatrix(MatrixType::kVandermonde, m, k), m, k).ok())
        << m << "+" << k;
  }
}

TEST(MatrixTest, NamesTheExactLossOfASingularEntry) {
  std::vector<uint8_t> a = CodingMatrix(MatrixType::kCauchy, 3, 2);
  a[1 * 3 + 2] = 0;  // Parity 1 ignores data 2: losing data 2 and parity 0 is fatal.
  EXPECT_EQ(CheckEveryErasurePatternDecodes(a, 3, 2),
            absl::InvalidArgumentError(
                "vandermonde matrix for 3+2 cannot decode the loss of blocks {2,3}; use --matrix "
                "cauchy"));
  ExpectNamesRealUndecodableLoss(CheckEveryErasurePatternDecodes(a, 3, 2), a, 3, 2);
}

TEST(MatrixTest, TooLargeToVerifyIsRefusedNotTrusted) {
  // Cauchy is MDS, so no failure turns up within the budget: it must not be passed unchecked.
  const absl::Status s =
      CheckEveryErasurePatternDecodes(CodingMatrix(MatrixType::kCauchy, 128, 32), 128, 32);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("too large to verify"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("use --matrix cauchy"), absl::string_view::npos) << s;
  // Vandermonde 128+32 fails early on a concrete loss, which is the better message.
  const std::vector<uint8_t> v = CodingMatrix(MatrixType::kVandermonde, 128, 32);
  ExpectNamesRealUndecodableLoss(CheckEveryErasurePatternDecodes(v, 128, 32), v, 128, 32);
}

TEST(MatrixTest, CheckRefusesMalformedArguments) {
  const std::vector<uint8_t> a = CodingMatrix(MatrixType::kCauchy, 4, 2);
  EXPECT_TRUE(absl::IsInvalidArgument(CheckEveryErasurePatternDecodes(a, 4, 3)));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckEveryErasurePatternDecodes(a, 0, 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckEveryErasurePatternDecodes({}, 4, 2)));
}

TEST(MatrixTest, TypeNames) {
  EXPECT_STREQ(MatrixTypeName(MatrixType::kCauchy), "cauchy");
  EXPECT_STREQ(MatrixTypeName(MatrixType::kVandermonde), "vandermonde");
  EXPECT_STREQ(MatrixTypeName(MatrixType::kRaw), "raw");
}

}  // namespace
}  // namespace ecd::ec
