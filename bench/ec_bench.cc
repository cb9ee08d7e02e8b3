// The EC engine beside raw ISA-L calls on the same buffers, in one run, so ratios (not absolute
// numbers, on a shared machine) show what the engine costs and what more workers buy.
// GB/s counts data bytes in (M x block size per stripe).
//   build/bench/ec_bench                       # everything
//   build/bench/ec_bench --benchmark_filter=Create/10/4
// Each benchmark encodes (or rebuilds) a batch of 16 stripes per iteration; "Engine" variants
// submit the batch as held tasks and flush once, on W workers (4th argument), and with the 5th
// argument 1 the submitting thread runs queued tasks itself while it waits (Engine::Progress);
// "Run" variants run each task on the calling thread (Engine::Run: the engine on one thread with
// no hand-off); "Streaming" variants keep the engine busy (the next batch is submitted before
// waiting for the previous one). RawIsal2Threads is the machine's two-core ceiling: raw ISA-L on
// two threads that spin instead of sleeping, each encoding half of the batch.
#include <benchmark/benchmark.h>
#include <isa-l/erasure_code.h>

#include <atomic>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "lib/ec/engine.h"

namespace {

using ecd::ec::Codec;
using ecd::ec::Engine;
using ecd::ec::EngineOptions;
using ecd::ec::MatrixType;
using ecd::ec::SubmitFlag;

constexpr int kBatch = 16;

// Submits one batch of tasks as held tasks, flushes once, and waits for all of them: completion
// callbacks count down and only the last one wakes the submitter (as a DOCA progress loop would).
// With `help`, the submitter first runs queued tasks itself (Engine::Progress).
template <typename MakeTask>
void RunBatch(Engine& engine, MakeTask make, bool help = false) {
  std::promise<void> all_done;
  std::atomic<int> left{kBatch};
  for (int s = 0; s < kBatch; ++s) {
    engine.Submit(
        make(s),
        [&](absl::Status st) {
          benchmark::DoNotOptimize(st);
          if (left.fetch_sub(1) == 1) all_done.set_value();
        },
        s + 1 == kBatch ? SubmitFlag::kFlush : SubmitFlag::kNone);
  }
  if (help) engine.Progress();
  all_done.get_future().wait();
}

// kBatch stripes of M+K blocks each, data random.
struct Stripes {
  Stripes(int m, int k, size_t len) : m(m), k(k), len(len) {
    std::mt19937 rng(1);
    blocks.resize(kBatch);
    for (auto& stripe : blocks) {
      stripe.assign(m + k, std::vector<uint8_t>(len));
      for (int i = 0; i < m; ++i) {
        for (auto& b : stripe[i]) b = static_cast<uint8_t>(rng());
      }
    }
  }
  std::vector<uint8_t*> Pointers(int s) {
    std::vector<uint8_t*> p;
    for (auto& b : blocks[s]) p.push_back(b.data());
    return p;
  }
  int m, k;
  size_t len;
  std::vector<std::vector<std::vector<uint8_t>>> blocks;
};

// The create task of stripe s.
ecd::ec::Task CreateOf(const std::shared_ptr<const Codec>& codec, Stripes& st, int s) {
  ecd::ec::CreateTask t{codec, {}, {}};
  for (int i = 0; i < st.m; ++i) t.data.emplace_back(st.blocks[s][i]);
  for (int j = 0; j < st.k; ++j) t.parity.emplace_back(st.blocks[s][st.m + j]);
  return t;
}

void Shape(benchmark::State& state, int* m, int* k, size_t* len) {
  *m = static_cast<int>(state.range(0));
  *k = static_cast<int>(state.range(1));
  *len = static_cast<size_t>(state.range(2));
}

void Report(benchmark::State& state, int m, size_t len) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBatch * m *
                          static_cast<int64_t>(len));
}

// ec_encode_data over stripes [first, last) of `st`, with tables built once, as a raw caller would.
class RawEncoder {
 public:
  explicit RawEncoder(Stripes& st) : st_(st), tables_(32 * st.m * st.k) {
    std::vector<uint8_t> coding = ecd::ec::CodingMatrix(MatrixType::kCauchy, st.m, st.k);
    ec_init_tables(st.m, st.k, coding.data(), tables_.data());
  }
  void Encode(int first, int last) {
    for (int s = first; s < last; ++s) {
      std::vector<uint8_t*> p = st_.Pointers(s);
      ec_encode_data(static_cast<int>(st_.len), st_.m, st_.k, tables_.data(), p.data(),
                     p.data() + st_.m);
    }
  }

 private:
  Stripes& st_;
  std::vector<uint8_t> tables_;
};

void BM_CreateRawIsal(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes st(m, k, len);
  RawEncoder raw(st);
  for (auto _ : state) {
    raw.Encode(0, kBatch);
    benchmark::ClobberMemory();
  }
  Report(state, m, len);
}

// The codec called directly on the benchmark thread: the engine's cost without the handoff.
void BM_CreateCodec(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes st(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  for (auto _ : state) {
    for (int s = 0; s < kBatch; ++s) {
      std::vector<absl::Span<const uint8_t>> data;
      std::vector<absl::Span<uint8_t>> parity;
      for (int i = 0; i < m; ++i) data.emplace_back(st.blocks[s][i]);
      for (int j = 0; j < k; ++j) parity.emplace_back(st.blocks[s][m + j]);
      benchmark::DoNotOptimize(codec->Encode(data, parity));
    }
  }
  Report(state, m, len);
}

void BM_CreateEngine(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes st(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = static_cast<int>(state.range(3)), .check_buffers = false});
  for (auto _ : state) {
    RunBatch(
        engine, [&](int s) { return CreateOf(codec, st, s); }, state.range(4) != 0);
  }
  Report(state, m, len);
}

// The engine on the benchmark's thread alone: Engine::Run per stripe.
void BM_CreateEngineRun(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes st(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = 1, .check_buffers = false});
  for (auto _ : state) {
    for (int s = 0; s < kBatch; ++s) benchmark::DoNotOptimize(engine.Run(CreateOf(codec, st, s)));
  }
  Report(state, m, len);
}

// Raw ISA-L on two threads, each encoding half of every batch; both spin (yielding) on atomics
// between batches, so no futex wake-up is paid: what two cores of this machine can do at best.
void BM_CreateRawIsal2Threads(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes st(m, k, len);
  RawEncoder raw(st);
  std::atomic<int64_t> started{0}, finished{0};  // Batches handed to / done by the helper.
  std::atomic<bool> stop{false};
  std::thread helper([&] {
    for (int64_t seen = 0; !stop.load(std::memory_order_acquire);) {
      if (started.load(std::memory_order_acquire) == seen) {
        std::this_thread::yield();  // Lets the other thread run if both share a core.
        continue;
      }
      raw.Encode(kBatch / 2, kBatch);
      finished.store(++seen, std::memory_order_release);
    }
  });
  int64_t batches = 0;
  for (auto _ : state) {
    started.store(++batches, std::memory_order_release);
    raw.Encode(0, kBatch / 2);
    while (finished.load(std::memory_order_acquire) != batches) std::this_thread::yield();
    benchmark::ClobberMemory();
  }
  stop.store(true, std::memory_order_release);
  helper.join();
  Report(state, m, len);
}

// The engine kept busy, as the store's encode pipeline keeps it: the next batch is submitted
// before waiting for the previous one, so worker wake-ups overlap with work. Two stripe sets
// alternate so no buffer is touched while in flight.
void BM_CreateEngineStreaming(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes sets[2] = {Stripes(m, k, len), Stripes(m, k, len)};
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = static_cast<int>(state.range(3)), .check_buffers = false});
  struct Batch {
    std::promise<void> done;
    std::atomic<int> left{kBatch};
  };
  std::unique_ptr<Batch> previous;
  std::future<void> previous_done;
  int which = 0;
  for (auto _ : state) {
    auto batch = std::make_unique<Batch>();
    Batch* b = batch.get();
    Stripes& st = sets[which];
    which ^= 1;
    std::future<void> finished = b->done.get_future();
    for (int s = 0; s < kBatch; ++s) {
      engine.Submit(
          CreateOf(codec, st, s),
          [b](absl::Status status) {
            benchmark::DoNotOptimize(status);
            if (b->left.fetch_sub(1) == 1) b->done.set_value();
          },
          s + 1 == kBatch ? SubmitFlag::kFlush : SubmitFlag::kNone);
    }
    if (state.range(4) != 0) engine.Progress();
    if (previous_done.valid()) previous_done.wait();
    previous = std::move(batch);  // The one before it has completed every callback.
    previous_done = std::move(finished);
  }
  if (previous_done.valid()) previous_done.wait();
  Report(state, m, len);
}

// Rebuild `e` lost data blocks (e = range(3)) per stripe.
void BM_RecoverRawIsal(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  const int e = static_cast<int>(state.range(3));
  Stripes st(m, k, len);
  // Survivors: data e..m-1 then parity 0..e-1; invert their rows once, as a raw caller would.
  std::vector<uint8_t> coding = ecd::ec::CodingMatrix(MatrixType::kCauchy, m, k);
  std::vector<uint8_t> sub(m * m, 0), inv(m * m), rows(e * m), tables(32 * m * e);
  for (int r = 0; r < m; ++r) {
    const int idx = r < m - e ? e + r : m + (r - (m - e));
    for (int c = 0; c < m; ++c) sub[r * m + c] = idx < m ? idx == c : coding[(idx - m) * m + c];
  }
  gf_invert_matrix(sub.data(), inv.data(), m);
  for (int w = 0; w < e; ++w) {
    for (int c = 0; c < m; ++c) rows[w * m + c] = inv[w * m + c];
  }
  ec_init_tables(m, e, rows.data(), tables.data());
  for (auto _ : state) {
    for (int s = 0; s < kBatch; ++s) {
      std::vector<uint8_t*> p = st.Pointers(s), in, out;
      for (int i = e; i < m; ++i) in.push_back(p[i]);
      for (int j = 0; j < e; ++j) in.push_back(p[m + j]);
      for (int w = 0; w < e; ++w) out.push_back(p[w]);
      ec_encode_data(static_cast<int>(len), m, e, tables.data(), in.data(), out.data());
    }
    benchmark::ClobberMemory();
  }
  Report(state, m, len);
}

// Rebuilds the first e data blocks of each stripe through the engine: batches submitted to one
// worker, or (on_caller) Engine::Run per stripe on the benchmark's thread alone.
void RecoverThroughEngine(benchmark::State& state, bool on_caller) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  const int e = static_cast<int>(state.range(3));
  Stripes st(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = 1, .check_buffers = false});
  std::vector<int> available, wanted;
  for (int i = 0; i < m + e; ++i) (i < e ? wanted : available).push_back(i);
  auto make = [&](int s) {
    ecd::ec::RecoverTask t{codec, {}, available, wanted};
    for (auto& b : st.blocks[s]) t.blocks.emplace_back(b);
    return ecd::ec::Task(std::move(t));
  };
  for (auto _ : state) {
    if (!on_caller) {
      RunBatch(engine, make);
      continue;
    }
    for (int s = 0; s < kBatch; ++s) benchmark::DoNotOptimize(engine.Run(make(s)));
  }
  Report(state, m, len);
}

void BM_RecoverEngine(benchmark::State& state) { RecoverThroughEngine(state, false); }
void BM_RecoverEngineRun(benchmark::State& state) { RecoverThroughEngine(state, true); }

// Recover with the engine kept busy (as BM_CreateEngineStreaming): the next batch is submitted
// before waiting for the previous one; two stripe sets alternate.
void BM_RecoverEngineStreaming(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  const int e = static_cast<int>(state.range(3));
  Stripes sets[2] = {Stripes(m, k, len), Stripes(m, k, len)};
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = 1, .check_buffers = false});
  std::vector<int> available, wanted;
  for (int i = 0; i < m + e; ++i) (i < e ? wanted : available).push_back(i);
  struct Batch {
    std::promise<void> done;
    std::atomic<int> left{kBatch};
  };
  std::unique_ptr<Batch> previous;
  std::future<void> previous_done;
  int which = 0;
  for (auto _ : state) {
    auto batch = std::make_unique<Batch>();
    Batch* b = batch.get();
    Stripes& st = sets[which];
    which ^= 1;
    std::future<void> finished = b->done.get_future();
    for (int s = 0; s < kBatch; ++s) {
      ecd::ec::RecoverTask t{codec, {}, available, wanted};
      for (auto& block : st.blocks[s]) t.blocks.emplace_back(block);
      engine.Submit(
          std::move(t),
          [b](absl::Status status) {
            benchmark::DoNotOptimize(status);
            if (b->left.fetch_sub(1) == 1) b->done.set_value();
          },
          s + 1 == kBatch ? SubmitFlag::kFlush : SubmitFlag::kNone);
    }
    if (previous_done.valid()) previous_done.wait();
    previous = std::move(batch);
    previous_done = std::move(finished);
  }
  if (previous_done.valid()) previous_done.wait();
  Report(state, m, len);
}

void BM_UpdateOneBlockEngine(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes st(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  std::vector<uint8_t> fresh(len, 0x5A);
  for (auto _ : state) {
    for (int s = 0; s < kBatch; ++s) {
      std::vector<absl::Span<const uint8_t>> old_parity;
      std::vector<absl::Span<uint8_t>> new_parity;
      for (int j = 0; j < k; ++j) {
        old_parity.emplace_back(st.blocks[s][m + j]);
        new_parity.emplace_back(st.blocks[s][m + j]);
      }
      benchmark::DoNotOptimize(codec->Update({0}, {absl::Span<const uint8_t>(st.blocks[s][0])},
                                             {absl::Span<const uint8_t>(fresh)}, old_parity,
                                             new_parity));
    }
  }
  Report(state, 1, len);  // Counts the changed block's bytes.
}

void Shapes(benchmark::internal::Benchmark* b, bool with_workers) {
  for (auto [m, k] : {std::pair{4, 2}, {8, 3}, {10, 4}, {12, 4}}) {
    for (int64_t len : {64 << 10, 1 << 20}) {
      if (with_workers) {  // W workers, caller helps or not.
        b->Args({m, k, len, 1, 0})->Args({m, k, len, 2, 0})->Args({m, k, len, 1, 1});
      } else {
        b->Args({m, k, len});
      }
    }
  }
  b->UseRealTime();
}

void RecoverShapes(benchmark::internal::Benchmark* b) {
  for (auto [m, k] : {std::pair{4, 2}, {8, 3}, {10, 4}, {12, 4}}) {
    for (int64_t len : {64 << 10, 1 << 20}) {
      for (int e = 1; e <= k; ++e) b->Args({m, k, len, e});
    }
  }
  b->UseRealTime();
}

BENCHMARK(BM_CreateRawIsal)->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_CreateCodec)->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_CreateRawIsal2Threads)->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_CreateEngineRun)->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_CreateEngine)->Apply([](auto* b) { Shapes(b, true); });
BENCHMARK(BM_CreateEngineStreaming)->Apply([](auto* b) { Shapes(b, true); });
BENCHMARK(BM_RecoverRawIsal)->Apply(RecoverShapes);
BENCHMARK(BM_RecoverEngine)->Apply(RecoverShapes);
BENCHMARK(BM_RecoverEngineRun)->Apply(RecoverShapes);
BENCHMARK(BM_RecoverEngineStreaming)->Apply(RecoverShapes);
BENCHMARK(BM_UpdateOneBlockEngine)->Apply([](auto* b) { Shapes(b, false); });

}  // namespace

BENCHMARK_MAIN();
