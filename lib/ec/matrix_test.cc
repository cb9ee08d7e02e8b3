// Tests the DOCA matrix definitions against the scalar reference and ISA-L, the shape and block
// limits, and the decodability check (which must find real singular Vandermonde shapes).
#include "lib/ec/matrix.h"

#include <gtest/gtest.h>
#include <isa-l/erasure_code.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "lib/ec/gf_reference_test.h"

namespace ecd::ec {
namespace {

using testing::RefDocaCauchy;
using testing::RefDocaVandermonde;
using testing::RefEncode;
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

// --- Update and recover matrices ---

using Blocks = std::vector<std::vector<uint8_t>>;

// out[r] = sum_c coefficients[r * cols + c] * in[c], with the scalar reference.
Blocks RefApply(const std::vector<uint8_t>& coefficients, int rows, int cols, const Blocks& in) {
  Blocks out(rows, std::vector<uint8_t>(in[0].size(), 0));
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      for (size_t x = 0; x < in[c].size(); ++x) {
        out[r][x] ^= RefMul(coefficients[r * cols + c], in[c][x]);
      }
    }
  }
  return out;
}

// All M+K blocks of a stripe of random data (encoded with the reference).
Blocks RefStripe(const std::vector<uint8_t>& a, int m, int k, size_t len, uint32_t seed) {
  std::mt19937 rng(seed);
  Blocks data(m, std::vector<uint8_t>(len));
  for (auto& b : data) {
    for (auto& v : b) v = static_cast<uint8_t>(rng());
  }
  Blocks all = data;
  for (auto& p : RefEncode(a, m, k, data)) all.push_back(p);
  return all;
}

// The lexicographically first M-subset of `available` (ascending) whose rows decode, if any.
std::optional<std::vector<int>> RefFirstDecodableSubset(const std::vector<uint8_t>& a, int m,
                                                        const std::vector<int>& available) {
  if (static_cast<int>(available.size()) < m) return std::nullopt;
  std::vector<bool> pick(available.size(), false);
  std::fill(pick.begin(), pick.begin() + m, true);
  do {
    std::vector<int> subset;
    for (size_t x = 0; x < available.size(); ++x) {
      if (pick[x]) subset.push_back(available[x]);
    }
    if (RefSurvivorsDecode(a, m, subset)) return subset;
  } while (std::prev_permutation(pick.begin(), pick.end()));
  return std::nullopt;
}

// Rebuilds every loss of 1..K blocks of m+k with `a`, checking the chosen rows against a brute
// force and the rebuilt bytes against the reference. Returns the number of patterns whose first
// M available rows were singular (so another subset was chosen).
int CheckEveryRecoverPattern(const std::vector<uint8_t>& a, int m, int k) {
  const int n = m + k;
  const Blocks stripe = RefStripe(a, m, k, 16, static_cast<uint32_t>(n * 31 + k));
  int fallbacks = 0, patterns = 0;
  for (uint32_t lost = 1; lost < (1u << n); ++lost) {
    if (__builtin_popcount(lost) > k) continue;
    ++patterns;
    std::vector<uint32_t> missing;
    std::vector<int> available;
    for (int b = 0; b < n; ++b) {
      if (lost & (1u << b)) {
        missing.push_back(static_cast<uint32_t>(b));
      } else {
        available.push_back(b);
      }
    }
    std::vector<uint32_t> reversed(missing.rbegin(), missing.rend());  // Any order is accepted.
    absl::StatusOr<RecoverMatrix> r = BuildRecoverMatrix(a, m, k, reversed);
    const std::optional<std::vector<int>> expected = RefFirstDecodableSubset(a, m, available);
    if (!expected.has_value()) {
      EXPECT_TRUE(absl::IsDataLoss(r.status())) << m << "+" << k << " lost " << lost;
      continue;
    }
    if (!r.ok()) {
      ADD_FAILURE() << m << "+" << k << " lost " << lost << ": " << r.status();
      continue;
    }
    EXPECT_EQ(r->data, m);
    EXPECT_EQ(r->missing, missing) << "rows are in ascending block order";
    const std::vector<int> sources(r->sources.begin(), r->sources.end());
    EXPECT_EQ(sources, *expected) << m << "+" << k << " lost " << lost;
    if (sources != std::vector<int>(available.begin(), available.begin() + m)) ++fallbacks;
    EXPECT_EQ(r->coefficients.size(), missing.size() * m);
    Blocks in;
    for (int b : sources) in.push_back(stripe[b]);
    const Blocks out = RefApply(r->coefficients, static_cast<int>(missing.size()), m, in);
    for (size_t w = 0; w < missing.size(); ++w) {
      EXPECT_EQ(out[w], stripe[missing[w]]) << m << "+" << k << " block " << missing[w];
    }
    // The mask form agrees.
    BlockMask mask;
    for (uint32_t b : missing) mask.set(b);
    absl::StatusOr<RecoverMatrix> from_mask = BuildRecoverMatrixFromMask(a, m, k, mask);
    EXPECT_TRUE(from_mask.ok() && from_mask->sources == r->sources &&
                from_mask->coefficients == r->coefficients)
        << from_mask.status();
  }
  int expected = 0;  // sum over e = 1..K of C(n, e).
  for (int e = 1, c = 1; e <= k; ++e) expected += (c = c * (n - e + 1) / e);
  EXPECT_EQ(patterns, expected);
  return fallbacks;
}

TEST(RecoverMatrixTest, RebuildsEveryPatternUpToKCauchy) {
  for (auto [m, k] : {std::pair{1, 1}, {2, 1}, {4, 2}, {6, 3}, {8, 3}, {5, 5}, {10, 4}}) {
    EXPECT_EQ(CheckEveryRecoverPattern(CodingMatrix(MatrixType::kCauchy, m, k), m, k), 0)
        << "a Cauchy code never needs another subset";
  }
}

// Non-MDS Vandermonde shapes included: where the first M available rows are singular another
// subset must be chosen (the first in lexicographic order), and where none inverts, DataLoss.
TEST(RecoverMatrixTest, RebuildsEveryPatternUpToKVandermondeIncludingSingularSubsets) {
  int fallbacks = 0;
  for (int m = 2; m <= 9; ++m) {
    for (int k = 2; k <= 5 && m + k <= 12; ++k) {
      fallbacks += CheckEveryRecoverPattern(CodingMatrix(MatrixType::kVandermonde, m, k), m, k);
    }
  }
  EXPECT_GT(fallbacks, 0) << "no singular first subset met: the fallback is untested";
}

// One concrete singular first subset, found with the reference alone. The DOCA Vandermonde rows
// (x^j) for consecutive j are a true Vandermonde matrix, so this needs a gap in the parity rows
// and fewer than K losses (e.g. 3+5 losing data 0, 1, 2 and parity 2: x0 + x1 + x2 = 0).
TEST(RecoverMatrixTest, SingularFirstSubsetFallsBackToOtherRows) {
  std::optional<std::pair<int, int>> shape;
  std::vector<uint32_t> missing;
  std::vector<int> first;
  for (int k = 2; k <= 6 && !shape; ++k) {
    for (int m = 2; m <= 10 && !shape; ++m) {
      const std::vector<uint8_t> v = RefDocaVandermonde(m, k);
      for (uint32_t lost = 1; lost < (1u << (m + k)) && !shape; ++lost) {
        if (__builtin_popcount(lost) >= k) continue;  // Leaves spare rows to fall back on.
        std::vector<int> available;
        std::vector<uint32_t> l;
        for (int b = 0; b < m + k; ++b) {
          if (lost & (1u << b)) {
            l.push_back(b);
          } else {
            available.push_back(b);
          }
        }
        std::vector<int> head(available.begin(), available.begin() + m);
        if (!RefSurvivorsDecode(v, m, head) && RefFirstDecodableSubset(v, m, available)) {
          shape = {m, k};
          missing = l;
          first = head;
        }
      }
    }
  }
  ASSERT_TRUE(shape.has_value()) << "no Vandermonde shape with a singular first subset";
  const auto [m, k] = *shape;
  const std::vector<uint8_t> v = CodingMatrix(MatrixType::kVandermonde, m, k);
  absl::StatusOr<RecoverMatrix> r = BuildRecoverMatrix(v, m, k, missing);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<int> sources(r->sources.begin(), r->sources.end());
  EXPECT_NE(sources, first);
  EXPECT_TRUE(RefSurvivorsDecode(v, m, sources));
  const Blocks stripe = RefStripe(v, m, k, 64, 7);
  Blocks in;
  for (int b : sources) in.push_back(stripe[b]);
  const Blocks out = RefApply(r->coefficients, static_cast<int>(missing.size()), m, in);
  for (size_t w = 0; w < missing.size(); ++w) EXPECT_EQ(out[w], stripe[missing[w]]);
}

// Other blocks lost too and not wanted: they are neither read nor rebuilt.
TEST(RecoverMatrixTest, PartialRebuildsOnlyWanted) {
  const int m = 6, k = 3;
  const std::vector<uint8_t> a = CodingMatrix(MatrixType::kCauchy, m, k);
  const Blocks stripe = RefStripe(a, m, k, 32, 3);
  BlockMask available, wanted;
  for (int b : {0, 2, 3, 4, 5, 7, 8}) available.set(b);  // Block 6 lost and not wanted.
  wanted.set(1);
  absl::StatusOr<RecoverMatrix> r = BuildPartialRecoverMatrix(a, m, k, available, wanted);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sources, (std::vector<uint32_t>{0, 2, 3, 4, 5, 7}));
  EXPECT_EQ(r->missing, (std::vector<uint32_t>{1}));
  Blocks in;
  for (uint32_t b : r->sources) in.push_back(stripe[b]);
  EXPECT_EQ(RefApply(r->coefficients, 1, m, in)[0], stripe[1]);
}

TEST(RecoverMatrixTest, RefusesBadInputsNamingTheIndices) {
  const int m = 4, k = 2;
  const std::vector<uint8_t> a = CodingMatrix(MatrixType::kCauchy, m, k);
  EXPECT_EQ(BuildRecoverMatrix(a, m, k, {6}).status(),
            absl::InvalidArgumentError("missing block index 6 is out of range 0..5"));
  EXPECT_EQ(BuildRecoverMatrix(a, m, k, {1, 3, 1}).status(),
            absl::InvalidArgumentError("missing block index 1 is listed twice"));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildRecoverMatrix(a, m, k, {}).status()));
  const absl::Status too_many = BuildRecoverMatrix(a, m, k, {5, 0, 2}).status();
  EXPECT_EQ(too_many, absl::DataLossError("blocks {0,2,5} are missing (3) but a 4+2 code "
                                          "rebuilds at most 2"));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildRecoverMatrix({a.data(), 7}, m, k, {0}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildRecoverMatrix(a, 0, k, {0}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildRecoverMatrix(a, m, 33, {0}).status()));
  BlockMask beyond;
  beyond.set(6);
  EXPECT_EQ(BuildRecoverMatrixFromMask(a, m, k, beyond).status(),
            absl::InvalidArgumentError("missing block index 6 is out of range 0..5"));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildRecoverMatrixFromMask(a, m, k, BlockMask()).status()));
  BlockMask both, want;
  both.set(0).set(1).set(2).set(3);
  want.set(3);
  EXPECT_EQ(BuildPartialRecoverMatrix(a, m, k, both, want).status(),
            absl::InvalidArgumentError("blocks {3} are both available and wanted"));
  BlockMask three;
  three.set(0).set(1).set(5);
  EXPECT_EQ(BuildPartialRecoverMatrix(a, m, k, three, want).status(),
            absl::DataLossError("only 3 of the 4 blocks needed to rebuild are available"));
}

// Every available row depends on the others: DataLoss names the blocks.
TEST(RecoverMatrixTest, NoInvertibleSubsetIsDataLoss) {
  const std::vector<uint8_t> coding = {0, 1, 1, 1};  // 2+2: parity 0 = data 1.
  const absl::Status s = BuildRecoverMatrix(coding, 2, 2, {0, 3}).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("cannot rebuild blocks {0,3} from available blocks {1,2}"),
            absl::string_view::npos)
      << s;
  EXPECT_NE(s.message().find("rank 1 < 2"), absl::string_view::npos) << s;
  // Block 3 is a spare: with it available, {1, 3} is chosen.
  absl::StatusOr<RecoverMatrix> r = BuildRecoverMatrix(coding, 2, 2, {0});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sources, (std::vector<uint32_t>{1, 3}));
}

TEST(UpdateMatrixTest, LayoutAndDeltasGiveTheParityDelta) {
  std::mt19937 rng(5);
  for (MatrixType type : {MatrixType::kCauchy, MatrixType::kVandermonde}) {
    for (auto [m, k] : {std::pair{1, 1}, {4, 2}, {8, 3}, {12, 4}, {128, 32}}) {
      const std::vector<uint8_t> a = CodingMatrix(type, m, k);
      for (int round = 0; round < 8; ++round) {
        std::vector<uint32_t> all(m);
        for (int i = 0; i < m; ++i) all[i] = i;
        std::shuffle(all.begin(), all.end(), rng);
        const size_t n = 1 + rng() % m;
        const std::vector<uint32_t> changed(all.begin(), all.begin() + n);  // Any order.
        absl::StatusOr<UpdateMatrix> u = BuildUpdateMatrix(a, m, k, changed);
        ASSERT_TRUE(u.ok()) << u.status();
        EXPECT_EQ(u->parity, k);
        EXPECT_EQ(u->changed, changed);
        ASSERT_EQ(u->coefficients.size(), n * k);
        for (int j = 0; j < k; ++j) {
          for (size_t x = 0; x < n; ++x) {
            ASSERT_EQ(u->coefficients[j * n + x], a[j * m + changed[x]]);
          }
        }
        // Parity delta of re-encoding equals the update matrix times the data deltas.
        const Blocks before = RefStripe(a, m, k, 8, rng());
        Blocks data_after(before.begin(), before.begin() + m), deltas;
        for (uint32_t c : changed) {
          std::vector<uint8_t> delta(8);
          for (size_t x = 0; x < 8; ++x) {
            data_after[c][x] = static_cast<uint8_t>(rng());
            delta[x] = before[c][x] ^ data_after[c][x];
          }
          deltas.push_back(delta);
        }
        const Blocks parity_after = RefEncode(a, m, k, data_after);
        const Blocks parity_delta = RefApply(u->coefficients, k, static_cast<int>(n), deltas);
        for (int j = 0; j < k; ++j) {
          for (size_t x = 0; x < 8; ++x) {
            ASSERT_EQ(before[m + j][x] ^ parity_delta[j][x], parity_after[j][x])
                << m << "+" << k << " parity " << j;
          }
        }
      }
    }
  }
}

TEST(UpdateMatrixTest, RefusesBadInputsNamingTheIndices) {
  const std::vector<uint8_t> a = CodingMatrix(MatrixType::kCauchy, 4, 2);
  EXPECT_EQ(BuildUpdateMatrix(a, 4, 2, {4}).status(),
            absl::InvalidArgumentError("changed data block index 4 is out of range 0..3"));
  EXPECT_EQ(BuildUpdateMatrix(a, 4, 2, {2, 0, 2}).status(),
            absl::InvalidArgumentError("changed data block index 2 is listed twice"));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildUpdateMatrix(a, 4, 2, {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildUpdateMatrix(a, 4, 3, {0}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(BuildUpdateMatrix(a, 129, 2, {0}).status()));
}

}  // namespace
}  // namespace ecd::ec
