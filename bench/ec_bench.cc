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
// The "Paired" rows run raw ISA-L and the engine (create: raw ISA-L on 1 and 2 threads, the
// engine on 1 and 2 workers waiting for each batch and kept busy; recover: raw and 1 worker)
// interleaved in time inside one benchmark, a few batches of each in turn per iteration, and
// report per-variant GB/s and the median of the per-iteration ratios as counters, so that
// interference on a shared machine lands on every variant alike (scripts/bench_ratios.py).
// ChecksumPaired: encode and CRC32C of every block in two passes against Codec::Encode's one.
#include <benchmark/benchmark.h>
#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "lib/ec/completion.h"
#include "lib/ec/engine.h"
#include "lib/ec/poll.h"

namespace {

using ecd::ec::Codec;
using ecd::ec::Completion;
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
  Completion done(kBatch);
  for (int s = 0; s < kBatch; ++s) {
    engine.Submit(make(s), done.Callback(),
                  s + 1 == kBatch ? SubmitFlag::kFlush : SubmitFlag::kNone);
  }
  if (help) engine.Progress();
  benchmark::DoNotOptimize(done.Wait(engine));
}

// kBatch stripes of M+K blocks each, data random and parity encoded, in one arena of 4 KiB-
// aligned blocks (as the store's DMA buffers are). Of() gives every benchmark of a shape the same
// arena, so a row and its raw ISA-L twin touch the same bytes at the same addresses: block
// placement alone (alignment, 4 KiB aliasing between streams, a footprint that no longer fits
// the last-level cache) moves a ratio far more than the engine's own cost when each row
// allocates its own.
class Stripes {
 public:
  static Stripes& Of(int m, int k, size_t len) {
    static std::map<std::tuple<int, int, size_t>, std::unique_ptr<Stripes>> arenas;
    std::unique_ptr<Stripes>& arena = arenas[{m, k, len}];
    if (arena == nullptr) arena.reset(new Stripes(m, k, len));
    return *arena;
  }
  uint8_t* Block(int s, int i) {
    return arena_.get() + (static_cast<size_t>(s) * (m + k) + i) * len;
  }
  absl::Span<uint8_t> Span(int s, int i) { return {Block(s, i), len}; }
  std::vector<uint8_t*> Pointers(int s) {
    std::vector<uint8_t*> p;
    for (int i = 0; i < m + k; ++i) p.push_back(Block(s, i));
    return p;
  }
  const int m, k;
  const size_t len;

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  Stripes(int m, int k, size_t len);  // Random data, parity encoded (after RawEncoder).
  std::unique_ptr<uint8_t, Free> arena_;
};

// The create task of stripe s.
ecd::ec::Task CreateOf(const std::shared_ptr<const Codec>& codec, Stripes& st, int s) {
  ecd::ec::CreateTask t{codec, {}, {}};
  for (int i = 0; i < st.m; ++i) t.data.emplace_back(st.Span(s, i));
  for (int j = 0; j < st.k; ++j) t.parity.emplace_back(st.Span(s, st.m + j));
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

Stripes::Stripes(int m, int k, size_t len)
    : m(m),
      k(k),
      len(len),
      arena_(static_cast<uint8_t*>(std::aligned_alloc(4096, kBatch * (m + k) * len))) {
  uint64_t x = 0x9E3779B97F4A7C15u;  // xorshift64: fast enough for hundreds of MiB.
  for (int s = 0; s < kBatch; ++s) {
    for (int i = 0; i < m; ++i) {
      for (size_t b = 0; b < len; b += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        std::memcpy(Block(s, i) + b, &x, 8);
      }
    }
  }
  RawEncoder(*this).Encode(0, kBatch);
}

void BM_CreateRawIsal(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  RawEncoder raw(st);
  for (auto _ : state) {
    raw.Encode(0, kBatch);
    benchmark::ClobberMemory();
  }
  Report(state, m, len);
}

// Codec::Encode of every stripe of a batch on this thread, each stripe's checksums into
// `checksums` when it is not empty.
void CodecBatch(const std::shared_ptr<const Codec>& codec, Stripes& st,
                absl::Span<uint32_t> checksums = {}) {
  for (int s = 0; s < kBatch; ++s) {
    const auto task = std::get<ecd::ec::CreateTask>(CreateOf(codec, st, s));
    benchmark::DoNotOptimize(codec->Encode(task.data, task.parity, checksums));
  }
}

// The codec called directly on the benchmark thread: the engine's cost without the handoff.
void BM_CreateCodec(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  for (auto _ : state) CodecBatch(codec, st);
  Report(state, m, len);
}

void BM_CreateEngine(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
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
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = 1, .check_buffers = false});
  for (auto _ : state) {
    for (int s = 0; s < kBatch; ++s) benchmark::DoNotOptimize(engine.Run(CreateOf(codec, st, s)));
  }
  Report(state, m, len);
}

// Raw ISA-L on two threads: Batch() encodes the first half of the batch on the calling thread
// and hands the second half to a helper thread. Both poll (yielding) for each other, so a run of
// batches pays no futex wake-up: what two cores of this machine can do at best. Between runs the
// helper sleeps once it has polled for 100 us, leaving the CPUs to the other paired variants.
class RawOnTwoThreads {
 public:
  explicit RawOnTwoThreads(RawEncoder& raw) : raw_(raw), helper_([this] { Help(); }) {}
  ~RawOnTwoThreads() {
    stop_.store(true);
    started_.fetch_add(1);
    started_.notify_one();
    helper_.join();
  }
  void Batch() {
    const int64_t batch = started_.fetch_add(1) + 1;
    started_.notify_one();
    raw_.Encode(0, kBatch / 2);
    ecd::ec::internal::PollFor(std::chrono::microseconds(1000),
                               [&] { return finished_.load() == batch; });
    for (int64_t f = finished_.load(); f != batch; f = finished_.load()) finished_.wait(f);
    benchmark::ClobberMemory();
  }

 private:
  void Help() {
    for (int64_t seen = 0;;) {
      ecd::ec::internal::PollFor(std::chrono::microseconds(100),
                                 [&] { return started_.load() != seen; });
      started_.wait(seen);
      if (stop_.load()) return;
      raw_.Encode(kBatch / 2, kBatch);
      finished_.store(++seen);
      finished_.notify_one();
    }
  }
  RawEncoder& raw_;
  std::atomic<int64_t> started_{0}, finished_{0};  // Batches handed to / done by the helper.
  std::atomic<bool> stop_{false};
  std::thread helper_;  // Last: starts once the members above exist.
};

void BM_CreateRawIsal2Threads(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  RawEncoder raw(st);
  RawOnTwoThreads two(raw);
  for (auto _ : state) two.Batch();
  Report(state, m, len);
}

// The engine kept busy, as the store's encode pipeline keeps it, on the same 16 stripes as the
// batch rows: each Batch() submits the two halves of the batch in turn, and waits for a half's
// previous run only once the other half is queued, so worker wake-ups overlap with work and no
// buffer is touched while in flight. Drain() waits for what is still in flight. With `help`,
// the submitter runs queued tasks while it waits.
constexpr int kHalf = kBatch / 2;

template <typename MakeTask>
class Streamer {
 public:
  Streamer(Engine& engine, MakeTask make, bool help = false)
      : engine_(engine), make_(std::move(make)), help_(help) {}
  ~Streamer() { Drain(); }
  void Batch() {
    for (int h = 0; h < 2; ++h) {
      Finish(h);
      running_[h] = std::make_unique<Completion>(kHalf);
      for (int s = h * kHalf; s < (h + 1) * kHalf; ++s) {
        engine_.Submit(make_(s), running_[h]->Callback(),
                       s + 1 == (h + 1) * kHalf ? SubmitFlag::kFlush : SubmitFlag::kNone);
      }
      if (help_) engine_.Progress();
    }
  }
  void Drain() {
    for (int h = 0; h < 2; ++h) Finish(h);
  }

 private:
  void Finish(int h) {
    if (running_[h] != nullptr) benchmark::DoNotOptimize(running_[h]->Wait(engine_));
    running_[h].reset();
  }
  Engine& engine_;
  MakeTask make_;
  const bool help_;
  std::unique_ptr<Completion> running_[2];
};

template <typename MakeTask>
void KeepBusy(benchmark::State& state, Engine& engine, MakeTask make, bool help) {
  Streamer<MakeTask> streamer(engine, std::move(make), help);
  for (auto _ : state) streamer.Batch();
}

void BM_CreateEngineStreaming(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = static_cast<int>(state.range(3)), .check_buffers = false});
  KeepBusy(
      state, engine, [&](int s) { return CreateOf(codec, st, s); }, state.range(4) != 0);
  Report(state, m, len);
}

// ec_encode_data rebuilding data blocks 0..e-1 of stripes [first, last) of `st` from data
// e..M-1 and parity 0..e-1, with the survivors' rows inverted and the tables built once, as a
// raw caller would.
class RawRecoverer {
 public:
  RawRecoverer(Stripes& st, int e) : st_(st), e_(e), tables_(32 * st.m * e) {
    const int m = st.m;
    std::vector<uint8_t> coding = ecd::ec::CodingMatrix(MatrixType::kCauchy, m, st.k);
    std::vector<uint8_t> sub(m * m, 0), inv(m * m), rows(e * m);
    for (int r = 0; r < m; ++r) {
      const int idx = r < m - e ? e + r : m + (r - (m - e));
      for (int c = 0; c < m; ++c) sub[r * m + c] = idx < m ? idx == c : coding[(idx - m) * m + c];
    }
    gf_invert_matrix(sub.data(), inv.data(), m);
    for (int w = 0; w < e; ++w) {
      for (int c = 0; c < m; ++c) rows[w * m + c] = inv[w * m + c];
    }
    ec_init_tables(m, e, rows.data(), tables_.data());
  }
  void Recover(int first, int last) {
    const int m = st_.m;
    for (int s = first; s < last; ++s) {
      std::vector<uint8_t*> p = st_.Pointers(s), in, out;
      for (int i = e_; i < m; ++i) in.push_back(p[i]);
      for (int j = 0; j < e_; ++j) in.push_back(p[m + j]);
      for (int w = 0; w < e_; ++w) out.push_back(p[w]);
      ec_encode_data(static_cast<int>(st_.len), m, e_, tables_.data(), in.data(), out.data());
    }
  }

 private:
  Stripes& st_;
  const int e_;
  std::vector<uint8_t> tables_;
};

// Rebuild `e` lost data blocks (e = range(3)) per stripe.
void BM_RecoverRawIsal(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  RawRecoverer raw(Stripes::Of(m, k, len), static_cast<int>(state.range(3)));
  for (auto _ : state) {
    raw.Recover(0, kBatch);
    benchmark::ClobberMemory();
  }
  Report(state, m, len);
}

// Makes the recover task of stripe s: data blocks 0..e-1 lost, rebuilt from data e..M-1 and
// parity 0..e-1 (the survivors raw ISA-L reads).
auto RecoverOf(const std::shared_ptr<const Codec>& codec, Stripes& st, int e) {
  ecd::ec::BlockIndices available, wanted;
  for (int i = 0; i < st.m + e; ++i) (i < e ? wanted : available).push_back(i);
  return [codec, &st, available, wanted](int s) {
    ecd::ec::RecoverTask t{codec, {}, available, wanted};
    for (int i = 0; i < st.m + st.k; ++i) t.blocks.emplace_back(st.Span(s, i));
    return ecd::ec::Task(std::move(t));
  };
}

// Rebuilds the first e data blocks of each stripe through the engine: batches submitted to one
// worker, or (on_caller) Engine::Run per stripe on the benchmark's thread alone.
void RecoverThroughEngine(benchmark::State& state, bool on_caller) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  const int e = static_cast<int>(state.range(3));
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = 1, .check_buffers = false});
  auto make = RecoverOf(codec, st, e);
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

// Recover with the engine kept busy on one worker (as BM_CreateEngineStreaming).
void BM_RecoverEngineStreaming(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  const int e = static_cast<int>(state.range(3));
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = 1, .check_buffers = false});
  KeepBusy(state, engine, RecoverOf(codec, st, e), false);
  Report(state, m, len);
}

// Update of data block 0 of each stripe, parity-delta style: raw ISA-L (the update tables of
// column 0 built once; accumulate the old and then the new block into the K parity blocks),
// beside the engine running an UpdateTask on the calling thread (Engine::Run). Parity is
// updated in place; GB/s counts the changed block's bytes.
void BM_UpdateOneBlockRawIsal(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  std::vector<uint8_t> coding = ecd::ec::CodingMatrix(MatrixType::kCauchy, m, k);
  std::vector<uint8_t> column(k), tables(32 * k);
  for (int j = 0; j < k; ++j) column[j] = coding[j * m];
  ec_init_tables(1, k, column.data(), tables.data());
  std::vector<uint8_t> fresh(len, 0x5A);
  for (auto _ : state) {
    for (int s = 0; s < kBatch; ++s) {
      std::vector<uint8_t*> p = st.Pointers(s);
      for (uint8_t* source : {p[0], fresh.data()}) {
        ec_encode_data_update(static_cast<int>(len), 1, k, 0, tables.data(), source, p.data() + m);
      }
    }
    benchmark::ClobberMemory();
  }
  Report(state, 1, len);
}

void BM_UpdateOneBlockEngineRun(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  Engine engine(EngineOptions{.workers = 1, .check_buffers = false});
  std::vector<uint8_t> fresh(len, 0x5A);
  for (auto _ : state) {
    for (int s = 0; s < kBatch; ++s) {
      ecd::ec::UpdateTask t{codec, {0}, {st.Span(s, 0)}, {absl::MakeConstSpan(fresh)}, {}, {}};
      for (int j = 0; j < k; ++j) {
        t.old_parity.emplace_back(st.Span(s, m + j));
        t.new_parity.emplace_back(st.Span(s, m + j));
      }
      benchmark::DoNotOptimize(engine.Run(std::move(t)));
    }
  }
  Report(state, 1, len);
}

// One variant of a paired comparison: `batch` runs one batch of 16 stripes; `finish`, when
// set, waits for whatever `batch` left in flight (a streaming variant's last batches).
struct Variant {
  std::function<void()> batch;
  std::function<void()> finish;
};

// The paired rows: the variants of one comparison measured interleaved in time inside one
// benchmark, so that interference from the rest of a shared machine lands on all of them alike
// (separate rows run seconds apart, and there the same code measured against itself spans
// 0.82-1.13). Each iteration is one round: every variant in turn, round r starting at variant
// r % N so that each goes first equally often, runs a segment of `segment` consecutive batches,
// and only the batches after the first are timed (with the finish after them). The first, and
// its finish, are warm-up: an engine whose worker went to sleep while the other variants ran
// pays a futex wake-up there (and the previous engine's worker may still be polling), which
// the standalone rows never pay in steady state.
// Returns each round's time per timed batch of each variant, in seconds.
template <size_t N>
std::vector<std::array<double, N>> Rounds(benchmark::State& state, int segment,
                                          const std::array<Variant, N>& variants) {
  std::vector<std::array<double, N>> rounds;
  rounds.reserve(static_cast<size_t>(state.max_iterations));
  for (auto _ : state) {
    std::array<double, N>& seconds = rounds.emplace_back();
    for (size_t i = 0; i < N; ++i) {
      const size_t v = (rounds.size() - 1 + i) % N;
      const Variant& variant = variants[v];
      variant.batch();
      if (variant.finish) variant.finish();
      const auto start = std::chrono::steady_clock::now();
      for (int b = 1; b < segment; ++b) variant.batch();
      if (variant.finish) variant.finish();
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      seconds[v] = took.count() / (segment - 1);
    }
  }
  return rounds;
}

// Batches per segment: enough for a segment of about 2 ms of raw ISA-L work (the fastest
// variant but for the two-worker engine), and at least 2 so that one is timed after the
// warm-up. 2 ms is short next to a burst of interference from another process (a compile job's,
// tens of ms and more), so that one usually spans every variant of a round, and long next to
// the warm-up's wake-up, the clock reads and the 100 us that the previous variant's idle worker
// keeps polling (EngineOptions::poll) on the other CPU. Small blocks give a segment many
// batches; at 1 MiB one batch alone outlasts 2 ms, so a segment is 2 batches and a round is
// long: those rows want a --benchmark_min_time of a second or more for enough rounds. `raw` runs
// one batch of raw ISA-L; the median of 5 is the estimate.
int SegmentOf(const std::function<void()>& raw) {
  std::array<double, 5> t{};
  for (double& seconds : t) {
    const auto start = std::chrono::steady_clock::now();
    raw();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::sort(t.begin(), t.end());
  return std::clamp(static_cast<int>(std::ceil(2e-3 / t[2])) + 1, 2, 64);
}

// The median over rounds of f(round).
template <size_t N, typename F>
double MedianOver(const std::vector<std::array<double, N>>& rounds, F f) {
  std::vector<double> v;
  v.reserve(rounds.size());
  for (const std::array<double, N>& round : rounds) v.push_back(f(round));
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Sets counter `name` of a paired row to the median over rounds of variant `den`'s time over
// variant `num`'s (variant num's speed relative to variant den's).
template <size_t N>
void SetRatio(benchmark::State& state, const std::vector<std::array<double, N>>& rounds,
              const char* name, size_t num, size_t den) {
  state.counters[name] =
      MedianOver(rounds, [num, den](const std::array<double, N>& t) { return t[den] / t[num]; });
}

// Sets the paired rows' counters: `name`_GBps of each variant (data bytes of a batch over its
// median batch time), and bytes processed over all the variants' batches, warm-ups included.
template <size_t N>
void ReportPaired(benchmark::State& state, const std::vector<std::array<double, N>>& rounds,
                  const std::array<const char*, N>& names, int segment, int m, size_t len) {
  const double batch_bytes = static_cast<double>(kBatch) * m * static_cast<double>(len);
  for (size_t v = 0; v < N; ++v) {
    state.counters[std::string(names[v]) + "_GBps"] =
        batch_bytes / MedianOver(rounds, [v](const std::array<double, N>& t) { return t[v]; }) /
        1e9;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(N) *
                          segment * kBatch * m * static_cast<int64_t>(len));
}

// Create, paired: raw ISA-L on one thread and on two (raw2: the two-core ceiling), the engine
// on one worker and on two, each waiting for every batch (w1, w2), and the engine on one worker
// and on two kept busy as the store keeps it (w1s, w2s: Streamer). The *_over_* counters are
// the medians over rounds of the round's ratio.
void BM_CreatePaired(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  RawEncoder raw(st);
  RawOnTwoThreads raw_two(raw);
  Engine one(EngineOptions{.workers = 1, .check_buffers = false});
  Engine two(EngineOptions{.workers = 2, .check_buffers = false});
  const auto make = [&](int s) { return CreateOf(codec, st, s); };
  Streamer one_busy(one, make), two_busy(two, make);
  const std::function<void()> raw_batch = [&] {
    raw.Encode(0, kBatch);
    benchmark::ClobberMemory();
  };
  const int segment = SegmentOf(raw_batch);
  using Times = std::array<double, 6>;
  const std::vector<Times> rounds = Rounds<6>(
      state, segment,
      {Variant{raw_batch, {}}, Variant{[&] { raw_two.Batch(); }, {}},
       Variant{[&] { RunBatch(one, make); }, {}}, Variant{[&] { RunBatch(two, make); }, {}},
       Variant{[&] { one_busy.Batch(); }, [&] { one_busy.Drain(); }},
       Variant{[&] { two_busy.Batch(); }, [&] { two_busy.Drain(); }}});
  ReportPaired<6>(state, rounds, {"raw", "raw2", "w1", "w2", "w1s", "w2s"}, segment, m, len);
  SetRatio(state, rounds, "raw2_over_raw", 1, 0);
  SetRatio(state, rounds, "w1_over_raw", 2, 0);
  SetRatio(state, rounds, "w2_over_w1", 3, 2);
  SetRatio(state, rounds, "w1s_over_raw", 4, 0);
  SetRatio(state, rounds, "w2s_over_w1s", 5, 4);
}

// Encode and every block's CRC32C, as the store's encode needs both, paired: the codec's
// encode, then crc32_iscsi over each whole block (apart), against Codec::Encode with checksums,
// which codes and checksums the blocks in pieces while they are in cache (fused).
// fused_over_apart is what the single pass gains.
void BM_ChecksumPaired(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  std::vector<uint32_t> sums(static_cast<size_t>(m + k));
  const std::function<void()> apart = [&] {  // As the store did: each stripe, then its CRCs.
    for (int s = 0; s < kBatch; ++s) {
      const auto task = std::get<ecd::ec::CreateTask>(CreateOf(codec, st, s));
      benchmark::DoNotOptimize(codec->Encode(task.data, task.parity));
      for (int i = 0; i < m + k; ++i) {
        sums[i] = ~crc32_iscsi(st.Span(s, i).data(), static_cast<int>(len), 0xFFFFFFFFu);
      }
    }
    benchmark::ClobberMemory();
  };
  const std::function<void()> fused = [&] {
    CodecBatch(codec, st, absl::MakeSpan(sums));
    benchmark::ClobberMemory();
  };
  const int segment = SegmentOf(apart);
  const std::vector<std::array<double, 2>> rounds =
      Rounds<2>(state, segment, {Variant{apart, {}}, Variant{fused, {}}});
  ReportPaired<2>(state, rounds, {"apart", "fused"}, segment, m, len);
  SetRatio(state, rounds, "fused_over_apart", 1, 0);
}

// Recover of e data blocks (e = range(3)): raw ISA-L and the engine on one worker, paired.
void BM_RecoverPaired(benchmark::State& state) {
  int m, k;
  size_t len;
  Shape(state, &m, &k, &len);
  const int e = static_cast<int>(state.range(3));
  Stripes& st = Stripes::Of(m, k, len);
  auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
  RawRecoverer raw(st, e);
  Engine one(EngineOptions{.workers = 1, .check_buffers = false});
  const auto make = RecoverOf(codec, st, e);
  const std::function<void()> raw_batch = [&] {
    raw.Recover(0, kBatch);
    benchmark::ClobberMemory();
  };
  const int segment = SegmentOf(raw_batch);
  using Times = std::array<double, 2>;
  const std::vector<Times> rounds = Rounds<2>(
      state, segment, {Variant{raw_batch, {}}, Variant{[&] { RunBatch(one, make); }, {}}});
  ReportPaired<2>(state, rounds, {"raw", "w1"}, segment, m, len);
  SetRatio(state, rounds, "w1_over_raw", 1, 0);
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
BENCHMARK(BM_CreatePaired)->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_RecoverPaired)->Apply(RecoverShapes);
BENCHMARK(BM_ChecksumPaired)->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_UpdateOneBlockRawIsal)->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_UpdateOneBlockEngineRun)->Apply([](auto* b) { Shapes(b, false); });

}  // namespace

BENCHMARK_MAIN();
