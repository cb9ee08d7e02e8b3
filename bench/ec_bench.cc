// Codec encode and reconstruct beside raw ISA-L calls on the same buffers, in one run, so the
// ratio shows what the codec's checks and table cache cost. GB/s counts data bytes in.
//   build/bench/ec_bench --benchmark_filter='4_2'
#include <benchmark/benchmark.h>
#include <isa-l/erasure_code.h>

#include <random>
#include <vector>

#include "lib/ec/codec.h"

namespace {

struct Buffers {
  Buffers(int m, int k, size_t len) : blocks(m + k, std::vector<uint8_t>(len)) {
    std::mt19937 rng(1);
    for (int i = 0; i < m; ++i) {
      for (auto& b : blocks[i]) b = static_cast<uint8_t>(rng());
    }
    for (auto& b : blocks) ptrs.push_back(b.data());
  }
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<uint8_t*> ptrs;
};

void BM_CodecEncode(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const size_t len = static_cast<size_t>(state.range(2));
  auto codec = *ecd::ec::Codec::Create(ecd::ec::MatrixType::kCauchy, m, k);
  Buffers b(m, k, len);
  std::vector<absl::Span<const uint8_t>> data(b.blocks.begin(), b.blocks.begin() + m);
  std::vector<absl::Span<uint8_t>> parity;
  for (int j = 0; j < k; ++j) parity.emplace_back(b.blocks[m + j]);
  for (auto _ : state) benchmark::DoNotOptimize(codec->Encode(data, parity));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * m * len);
}

void BM_RawIsalEncode(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const size_t len = static_cast<size_t>(state.range(2));
  std::vector<uint8_t> matrix = ecd::ec::CodingMatrix(ecd::ec::MatrixType::kCauchy, m, k);
  std::vector<uint8_t> tables(32 * m * k);
  ec_init_tables(m, k, matrix.data(), tables.data());
  Buffers b(m, k, len);
  for (auto _ : state) {
    ec_encode_data(static_cast<int>(len), m, k, tables.data(), b.ptrs.data(), b.ptrs.data() + m);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * m * len);
}

void BM_CodecReconstructK(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const size_t len = static_cast<size_t>(state.range(2));
  auto codec = *ecd::ec::Codec::Create(ecd::ec::MatrixType::kCauchy, m, k);
  Buffers b(m, k, len);
  std::vector<absl::Span<uint8_t>> all;
  for (auto& x : b.blocks) all.emplace_back(x);
  std::vector<int> available, wanted;
  for (int i = 0; i < m + k; ++i) (i < k ? wanted : available).push_back(i);  // Lose K data.
  for (auto _ : state) benchmark::DoNotOptimize(codec->Reconstruct(all, available, wanted));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * m * len);
}

#define SHAPES \
  Args({4, 2, 64 << 10})->Args({4, 2, 1 << 20})->Args({8, 3, 1 << 20})->Args({10, 4, 1 << 20})

BENCHMARK(BM_CodecEncode)->SHAPES;
BENCHMARK(BM_RawIsalEncode)->SHAPES;
BENCHMARK(BM_CodecReconstructK)->SHAPES;

}  // namespace

BENCHMARK_MAIN();
