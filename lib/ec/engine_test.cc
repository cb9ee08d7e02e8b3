// Tests the engine's task kinds against the scalar reference (update equals re-encode, Galois
// multiply, raw matrices, random erasure patterns up to 128+32) and its submit/flush/complete
// semantics on a worker pool.
#include "lib/ec/engine.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "lib/ec/completion.h"
#include "lib/ec/gf_reference_test.h"
#include "lib/ec/poll.h"

// GCC 12 at -O2 warns that moving a CreateTask whose parity list is empty (the tests of bad
// inputs below) may read absl::InlinedVector storage uninitialized: a known false positive of
// -Wmaybe-uninitialized through std::variant, which appears or not with inlining decisions.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ecd::ec {
namespace {

using Blocks = std::vector<std::vector<uint8_t>>;

Blocks RandomBlocks(int n, size_t len, std::mt19937& rng) {
  Blocks b(n, std::vector<uint8_t>(len));
  for (auto& x : b) {
    for (auto& y : x) y = static_cast<uint8_t>(rng());
  }
  return b;
}

ConstBlocks Const(const Blocks& b) { return {b.begin(), b.end()}; }
MutableBlocks Mut(Blocks& b) {
  MutableBlocks s;
  for (auto& x : b) s.emplace_back(x);
  return s;
}

TEST(UpdateTest, EqualsReEncodeForRandomSubsets) {
  std::mt19937 rng(11);
  for (MatrixType type : {MatrixType::kCauchy, MatrixType::kVandermonde}) {
    for (auto [m, k] : {std::pair{4, 2}, {8, 3}, {6, 3}, {12, 4}, {3, 2}}) {
      auto codec = Codec::Create(type, m, k);
      if (!codec.ok()) continue;  // A refused Vandermonde shape.
      for (size_t len : {64ul, 128ul, 4160ul}) {
        for (int round = 0; round < 8; ++round) {
          Blocks data = RandomBlocks(m, len, rng);
          Blocks parity(k, std::vector<uint8_t>(len));
          ASSERT_TRUE((*codec)->Encode(Const(data), Mut(parity)).ok());
          std::vector<int> changed;
          for (int i = 0; i < m; ++i) {
            if (rng() % 2) changed.push_back(i);
          }
          if (changed.empty()) changed.push_back(static_cast<int>(rng() % m));
          Blocks old_blocks, new_blocks;
          Blocks patched = data;
          for (int i : changed) {
            old_blocks.push_back(data[i]);
            std::vector<uint8_t> fresh = RandomBlocks(1, len, rng)[0];
            new_blocks.push_back(fresh);
            patched[i] = fresh;
          }
          Blocks updated(k, std::vector<uint8_t>(len, 0x33));
          ASSERT_TRUE((*codec)
                          ->Update(changed, Const(old_blocks), Const(new_blocks), Const(parity),
                                   Mut(updated))
                          .ok());
          const Blocks want = testing::RefEncode(CodingMatrix(type, m, k), m, k, patched);
          ASSERT_EQ(updated, want) << MatrixTypeName(type) << " " << m << "+" << k;
          // In place: the new parity overwrites the old.
          Blocks in_place = parity;
          ASSERT_TRUE((*codec)
                          ->Update(changed, Const(old_blocks), Const(new_blocks), Const(in_place),
                                   Mut(in_place))
                          .ok());
          ASSERT_EQ(in_place, want);
        }
      }
    }
  }
}

TEST(UpdateTest, RefusesBadInputs) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  std::mt19937 rng(2);
  Blocks old_b = RandomBlocks(2, 64, rng), new_b = RandomBlocks(2, 64, rng);
  Blocks parity = RandomBlocks(2, 64, rng);
  Blocks out(2, std::vector<uint8_t>(64, 0x44));
  const Blocks untouched = out;
  for (std::vector<int> changed : {std::vector<int>{2, 1}, {1, 1}, {0, 4}, {-1, 0}}) {
    EXPECT_TRUE(absl::IsInvalidArgument(
        codec->Update(changed, Const(old_b), Const(new_b), Const(parity), Mut(out))));
  }
  EXPECT_TRUE(absl::IsInvalidArgument(
      codec->Update({1}, Const(old_b), Const(new_b), Const(parity), Mut(out))));  // Counts.
  Blocks short_new = RandomBlocks(2, 128, rng);
  EXPECT_TRUE(absl::IsInvalidArgument(
      codec->Update({0, 1}, Const(old_b), Const(short_new), Const(parity), Mut(out))));
  EXPECT_EQ(out, untouched);
}

TEST(GaloisMulTest, MatchesReference) {
  std::mt19937 rng(5);
  for (auto [rows, cols] : {std::pair{1, 1}, {3, 5}, {7, 10}, {32, 128}}) {
    std::vector<uint8_t> coef(static_cast<size_t>(rows) * cols);
    for (auto& c : coef) c = static_cast<uint8_t>(rng());
    Blocks src = RandomBlocks(cols, 128, rng);
    Blocks dst(rows, std::vector<uint8_t>(128));
    ASSERT_TRUE(GaloisMultiply(coef, rows, cols, Const(src), Mut(dst)).ok());
    EXPECT_EQ(dst, testing::RefEncode(coef, cols, rows, src)) << rows << "x" << cols;
  }
  Blocks src = RandomBlocks(2, 64, rng), dst(1, std::vector<uint8_t>(64));
  EXPECT_TRUE(absl::IsInvalidArgument(GaloisMultiply({1, 2, 3}, 1, 2, Const(src), Mut(dst))));
  EXPECT_TRUE(absl::IsInvalidArgument(GaloisMultiply({1, 2}, 1, 2, Const(src), {})));
}

TEST(RawMatrixTest, DataMajorLayoutMatchesCauchy) {
  const int m = 5, k = 3;
  const auto cauchy = CodingMatrix(MatrixType::kCauchy, m, k);
  std::vector<uint8_t> raw(m * k);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < k; ++j) raw[i * k + j] = cauchy[j * m + i];
  }
  auto from_raw = Codec::CreateFromRaw(raw, m, k);
  ASSERT_TRUE(from_raw.ok());
  EXPECT_EQ((*from_raw)->coding(), cauchy);
  EXPECT_EQ((*from_raw)->matrix_type(), MatrixType::kRaw);
  EXPECT_TRUE(absl::IsInvalidArgument(Codec::CreateFromRaw({1, 2, 3}, m, k).status()));
  // An all-zero raw matrix cannot rebuild a lost data block from parity.
  auto zero = *Codec::CreateFromRaw(std::vector<uint8_t>(4, 0), 2, 2);
  std::mt19937 rng(3);
  Blocks stripe = RandomBlocks(4, 64, rng);
  EXPECT_TRUE(absl::IsDataLoss(zero->Reconstruct(Mut(stripe), {1, 2, 3}, {0})));
}

TEST(RecoverTest, RandomPatternsUpTo128Plus32) {
  std::mt19937 rng(17);
  for (auto [m, k] : {std::pair{16, 4}, {20, 8}, {64, 16}, {100, 20}, {128, 32}}) {
    auto codec = *Codec::Create(MatrixType::kCauchy, m, k);
    Blocks stripe = RandomBlocks(m + k, 64, rng);
    {
      Blocks data(stripe.begin(), stripe.begin() + m);
      Blocks parity(k, std::vector<uint8_t>(64));
      ASSERT_TRUE(codec->Encode(Const(data), Mut(parity)).ok());
      std::copy(parity.begin(), parity.end(), stripe.begin() + m);
    }
    for (int round = 0; round < 20; ++round) {
      std::vector<int> order(m + k);
      for (int i = 0; i < m + k; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      const int lost = 1 + static_cast<int>(rng() % k);
      std::vector<int> wanted(order.begin(), order.begin() + lost);
      std::vector<int> available(order.begin() + lost, order.end());
      std::sort(wanted.begin(), wanted.end());
      std::sort(available.begin(), available.end());
      Blocks damaged = stripe;
      for (int i : wanted) std::fill(damaged[i].begin(), damaged[i].end(), 0);
      ASSERT_TRUE(codec->Reconstruct(Mut(damaged), available, wanted).ok());
      ASSERT_EQ(damaged, stripe) << m << "+" << k << " round " << round;
    }
  }
}

TEST(EngineTest, HeldTasksRunOnlyWhenFlushed) {
  Engine engine(EngineOptions{.workers = 2});
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  std::mt19937 rng(1);
  Blocks data = RandomBlocks(4, 4096, rng);
  Blocks parity(2, std::vector<uint8_t>(4096, 0));
  std::future<absl::Status> held =
      engine.Submit(CreateTask{codec, Const(data), Mut(parity)}, SubmitFlag::kNone);
  EXPECT_EQ(held.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  EXPECT_EQ(parity, Blocks(2, std::vector<uint8_t>(4096, 0)));
  engine.Flush();
  ASSERT_TRUE(held.get().ok());
  EXPECT_EQ(parity, testing::RefEncode(codec->coding(), 4, 2, data));
}

TEST(EngineTest, CreateTaskChecksumsEveryBlockOnTheWorker) {
  Engine engine(EngineOptions{.workers = 2});
  auto codec = *Codec::Create(MatrixType::kCauchy, 8, 3);
  std::mt19937 rng(5);
  Blocks data = RandomBlocks(8, 65536, rng);
  Blocks parity(3, std::vector<uint8_t>(65536, 0));
  std::vector<uint32_t> checksums(11, 0);
  ASSERT_TRUE(engine.Submit(CreateTask{codec, Const(data), Mut(parity), absl::MakeSpan(checksums)})
                  .get()
                  .ok());
  EXPECT_EQ(parity, testing::RefEncode(codec->coding(), 8, 3, data));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(checksums[i], testing::RefCrc32c(data[i])) << i;
  for (int j = 0; j < 3; ++j) EXPECT_EQ(checksums[8 + j], testing::RefCrc32c(parity[j])) << j;
  // The wrong count is refused like any bad shape.
  std::vector<uint32_t> short_list(10, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(
      engine.Submit(CreateTask{codec, Const(data), Mut(parity), absl::MakeSpan(short_list)})
          .get()));
}

TEST(EngineTest, BatchOfEveryTaskKindCompletesCorrectly) {
  Engine engine(EngineOptions{.workers = 2});
  EXPECT_EQ(engine.workers(), 2);
  auto codec = *Codec::Create(MatrixType::kCauchy, 6, 3);
  std::mt19937 rng(9);
  constexpr int kStripes = 40;
  std::vector<Blocks> data(kStripes), parity(kStripes, Blocks(3, std::vector<uint8_t>(4096)));
  std::atomic<int> done{0}, failed{0};
  for (int s = 0; s < kStripes; ++s) {
    data[s] = RandomBlocks(6, 4096, rng);
    engine.Submit(
        CreateTask{codec, Const(data[s]), Mut(parity[s])},
        [&](absl::Status st) {
          failed += !st.ok();
          ++done;
        },
        s + 1 == kStripes ? SubmitFlag::kFlush : SubmitFlag::kNone);
  }
  while (done.load() < kStripes) std::this_thread::yield();
  EXPECT_EQ(failed.load(), 0);
  for (int s = 0; s < kStripes; ++s) {
    ASSERT_EQ(parity[s], testing::RefEncode(codec->coding(), 6, 3, data[s])) << s;
  }

  // Recover, update and Galois multiply through the engine too.
  Blocks stripe = data[0];
  stripe.insert(stripe.end(), parity[0].begin(), parity[0].end());
  Blocks damaged = stripe;
  std::fill(damaged[2].begin(), damaged[2].end(), 0);
  std::fill(damaged[7].begin(), damaged[7].end(), 0);
  ASSERT_TRUE(
      engine.Submit(RecoverTask{codec, Mut(damaged), {0, 1, 3, 4, 5, 6, 8}, {2, 7}}).get().ok());
  EXPECT_EQ(damaged, stripe);

  Blocks fresh = RandomBlocks(1, 4096, rng);
  Blocks old_block = {data[0][4]};
  Blocks new_parity(3, std::vector<uint8_t>(4096));
  ASSERT_TRUE(
      engine
          .Submit(UpdateTask{
              codec, {4}, Const(old_block), Const(fresh), Const(parity[0]), Mut(new_parity)})
          .get()
          .ok());
  Blocks patched = data[0];
  patched[4] = fresh[0];
  EXPECT_EQ(new_parity, testing::RefEncode(codec->coding(), 6, 3, patched));

  Blocks regenerated(3, std::vector<uint8_t>(4096));
  ASSERT_TRUE(engine.Submit(GaloisMulTask{codec->coding(), 3, 6, Const(data[1]), Mut(regenerated)})
                  .get()
                  .ok());
  EXPECT_EQ(regenerated, parity[1]);

  // Errors arrive as statuses, not crashes.
  EXPECT_TRUE(absl::IsInvalidArgument(engine.Submit(CreateTask{codec, Const(data[0]), {}}).get()));
  EXPECT_TRUE(absl::IsInvalidArgument(engine.Submit(CreateTask{nullptr, {}, {}}).get()));
}

// Block lists longer than kInlineBlocks live on the heap; tasks that carry them are queued,
// moved between threads and run the same as the inline ones.
TEST(EngineTest, TasksWiderThanTheInlineListsRunThroughTheQueue) {
  Engine engine(EngineOptions{.workers = 2});
  constexpr int kM = 24, kK = 8;
  static_assert(kM + kK > static_cast<int>(kInlineBlocks));
  auto codec = *Codec::Create(MatrixType::kCauchy, kM, kK);
  std::mt19937 rng(23);
  constexpr int kStripes = 6;
  std::vector<Blocks> data(kStripes), parity(kStripes, Blocks(kK, std::vector<uint8_t>(128)));
  Completion done(kStripes);
  for (int s = 0; s < kStripes; ++s) {
    data[s] = RandomBlocks(kM, 128, rng);
    engine.Submit(CreateTask{codec, Const(data[s]), Mut(parity[s])}, done.Callback(),
                  s + 1 == kStripes ? SubmitFlag::kFlush : SubmitFlag::kNone);
  }
  ASSERT_TRUE(done.Wait().ok());
  for (int s = 0; s < kStripes; ++s) {
    ASSERT_EQ(parity[s], testing::RefEncode(codec->coding(), kM, kK, data[s])) << s;
  }
  // Lose the last K blocks' worth, spread over data and parity: 21 available, 8 wanted.
  Blocks stripe = data[0];
  stripe.insert(stripe.end(), parity[0].begin(), parity[0].end());
  Blocks damaged = stripe;
  BlockIndices available, wanted;
  for (int i = 0; i < kM + kK; ++i) (i % 4 == 1 ? wanted : available).push_back(i);
  ASSERT_GT(available.size(), kInlineBlocks);
  for (int i : wanted) std::fill(damaged[i].begin(), damaged[i].end(), 0);
  ASSERT_TRUE(engine.Submit(RecoverTask{codec, Mut(damaged), available, wanted}).get().ok());
  EXPECT_EQ(damaged, stripe);
}

TEST(EngineTest, TaskObserverSeesEveryTaskWithItsKindBeforeItCompletes) {
  std::mutex mu;
  std::map<std::string, int> seen;
  std::atomic<bool> observed_before_done{true};
  std::atomic<int> observed{0};
  EngineOptions options{.workers = 2};
  options.on_task_done = [&](TaskKind kind, std::chrono::nanoseconds latency) {
    std::lock_guard lock(mu);
    ++seen[TaskKindName(kind)];
    if (latency.count() <= 0) observed_before_done = false;
    ++observed;
  };
  Engine engine(options);
  auto codec = *Codec::Create(MatrixType::kVandermonde, 3, 2);
  std::mt19937 rng(3);
  Blocks data = RandomBlocks(3, 128, rng), parity(2, std::vector<uint8_t>(128));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(engine.Submit(CreateTask{codec, Const(data), Mut(parity)}).get().ok());
    EXPECT_EQ(observed.load(), i + 1);  // Observed before the future was completed.
  }
  Blocks out(2, std::vector<uint8_t>(128));
  ASSERT_TRUE(
      engine.Submit(GaloisMulTask{codec->coding(), 2, 3, Const(data), Mut(out)}).get().ok());
  // A failing task is observed too.
  EXPECT_FALSE(engine.Submit(CreateTask{codec, Const(data), {}}).get().ok());
  std::lock_guard lock(mu);
  EXPECT_EQ(seen, (std::map<std::string, int>{{"create", 6}, {"multiply", 1}}));
  EXPECT_TRUE(observed_before_done.load());
  EXPECT_EQ(std::string(TaskKindName(KindOf(Task{UpdateTask{}}))), "update");
  EXPECT_EQ(std::string(TaskKindName(KindOf(Task{RecoverTask{}}))), "recover");
}

TEST(EngineTest, DestructionCancelsHeldTasks) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 2, 1);
  std::mt19937 rng(4);
  Blocks data = RandomBlocks(2, 64, rng), parity(1, std::vector<uint8_t>(64, 9));
  std::future<absl::Status> f;
  {
    Engine engine(EngineOptions{.workers = 1});
    f = engine.Submit(CreateTask{codec, Const(data), Mut(parity)}, SubmitFlag::kNone);
  }
  EXPECT_TRUE(absl::IsCancelled(f.get()));
  EXPECT_EQ(parity, Blocks(1, std::vector<uint8_t>(64, 9)));
}

TEST(EngineTest, BufferCheckCatchesSourcesTouchedInFlight) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 2, 1);
  std::mt19937 rng(4);
  Blocks data = RandomBlocks(2, 64, rng), parity(1, std::vector<uint8_t>(64));
  Engine engine(EngineOptions{.workers = 1, .check_buffers = true});
  auto f = engine.Submit(CreateTask{codec, Const(data), Mut(parity)}, SubmitFlag::kNone);
  data[0][0] ^= 1;  // The caller breaks the contract.
  engine.Flush();
  EXPECT_TRUE(absl::IsFailedPrecondition(f.get()));
  EXPECT_EQ(parity, Blocks(1, std::vector<uint8_t>(64)));  // Nothing was written.
}

TEST(EngineTest, RunWorksOnTheCallerWithTheHook) {
  std::atomic<int> observed{0};
  std::atomic<bool> on_caller{true};
  const std::thread::id caller = std::this_thread::get_id();
  EngineOptions options{.workers = 1};
  options.on_task_done = [&](TaskKind kind, std::chrono::nanoseconds) {
    if (kind == TaskKind::kCreate) ++observed;
    if (std::this_thread::get_id() != caller) on_caller = false;
  };
  Engine engine(options);
  auto codec = *Codec::Create(MatrixType::kCauchy, 5, 3);
  std::mt19937 rng(12);
  Blocks data = RandomBlocks(5, 4160, rng), parity(3, std::vector<uint8_t>(4160));
  ASSERT_TRUE(engine.Run(CreateTask{codec, Const(data), Mut(parity)}).ok());
  EXPECT_EQ(parity, testing::RefEncode(codec->coding(), 5, 3, data));
  Task no_parity(std::in_place_type<CreateTask>);  // No parity blocks.
  std::get<CreateTask>(no_parity).codec = codec;
  std::get<CreateTask>(no_parity).data = Const(data);
  EXPECT_TRUE(absl::IsInvalidArgument(engine.Run(no_parity)));
  EXPECT_EQ(observed.load(), 2);
  EXPECT_TRUE(on_caller.load());
}

// The only worker is held inside its first task's hook; the caller's Progress() must then run
// the whole next batch on its own thread, correctly, and return how many it ran.
TEST(EngineTest, ProgressRunsQueuedTasksOnTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  std::promise<void> worker_busy, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  EngineOptions options{.workers = 1};
  options.on_task_done = [&](TaskKind, std::chrono::nanoseconds) {
    if (std::this_thread::get_id() != caller && first.exchange(false)) {
      worker_busy.set_value();
      released.wait();
    }
  };
  Engine engine(options);
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  std::mt19937 rng(13);
  Blocks block_data = RandomBlocks(4, 256, rng), block_parity(2, std::vector<uint8_t>(256));
  std::future<absl::Status> blocker =
      engine.Submit(CreateTask{codec, Const(block_data), Mut(block_parity)});
  worker_busy.get_future().wait();

  constexpr int kStripes = 6;
  std::vector<Blocks> data(kStripes), parity(kStripes, Blocks(2, std::vector<uint8_t>(256)));
  std::atomic<int> done_on_caller{0}, failed{0};
  for (int s = 0; s < kStripes; ++s) {
    data[s] = RandomBlocks(4, 256, rng);
    engine.Submit(
        CreateTask{codec, Const(data[s]), Mut(parity[s])},
        [&](absl::Status st) {
          failed += !st.ok();
          done_on_caller += std::this_thread::get_id() == caller;
        },
        s + 1 == kStripes ? SubmitFlag::kFlush : SubmitFlag::kNone);
  }
  EXPECT_EQ(engine.Progress(), kStripes);
  EXPECT_EQ(done_on_caller.load(), kStripes);
  EXPECT_EQ(failed.load(), 0);
  for (int s = 0; s < kStripes; ++s) {
    EXPECT_EQ(parity[s], testing::RefEncode(codec->coding(), 4, 2, data[s])) << s;
  }
  EXPECT_EQ(engine.Progress(), 0);  // Nothing queued: returns at once.
  release.set_value();
  ASSERT_TRUE(blocker.get().ok());
  EXPECT_EQ(block_parity, testing::RefEncode(codec->coding(), 4, 2, block_data));
}

// Each task's callback records the CPUs its thread may run on; `n` tasks that wait for each
// other inside their callbacks run on `n` workers (each takes one: a worker takes
// 1/(2 x workers) of the queue).
std::vector<cpu_set_t> WorkerAffinities(Engine& engine, int n) {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::vector<cpu_set_t> seen;
  Completion done(n);
  for (int t = 0; t < n; ++t) {
    engine.Submit(
        Task(GaloisMulTask{}),  // Fails at once: an empty matrix; only the thread matters.
        [&](absl::Status s) {
          cpu_set_t set;
          CPU_ZERO(&set);
          EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
          std::unique_lock lock(mu);
          seen.push_back(set);
          ++arrived;
          cv.notify_all();
          EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived == n; }))
              << "the tasks did not run on " << n << " workers at once";
          lock.unlock();
          done.Done(std::move(s));
        },
        t + 1 == n ? SubmitFlag::kFlush : SubmitFlag::kNone);
  }
  EXPECT_FALSE(done.Wait().ok());
  return seen;
}

TEST(EngineTest, PinsEachWorkerToACpuOfItsOwnWhenTheyFillTheCpus) {
  const std::vector<int> cpus = internal::UsableCpuList();
  const int n = static_cast<int>(cpus.size());
  if (n < 2 || n > 64) GTEST_SKIP() << "needs 2..64 CPUs, this process may use " << n;
  Engine engine(EngineOptions{.workers = n});
  EXPECT_EQ(engine.worker_cpus(), cpus);
  std::vector<cpu_set_t> seen = WorkerAffinities(engine, n);
  ASSERT_EQ(seen.size(), cpus.size());
  std::vector<int> pinned;
  for (const cpu_set_t& set : seen) {
    ASSERT_EQ(CPU_COUNT(&set), 1);
    for (int c : cpus) {
      if (CPU_ISSET(c, &set)) pinned.push_back(c);
    }
  }
  std::sort(pinned.begin(), pinned.end());
  EXPECT_EQ(pinned, cpus);
}

TEST(EngineTest, LeavesWorkersUnpinnedWhenAskedOrWhenTheyDoNotFillTheCpus) {
  const std::vector<int> cpus = internal::UsableCpuList();
  const int n = static_cast<int>(cpus.size());
  std::vector<EngineOptions> cases = {EngineOptions{.workers = 1}};
  if (n >= 2 && n <= 64) cases.push_back(EngineOptions{.workers = n, .pin_workers = false});
  if (n <= 64) cases.push_back(EngineOptions{.workers = n + 1});  // More workers than CPUs.
  if (n >= 3) cases.push_back(EngineOptions{.workers = 2});       // Fewer.
  for (const EngineOptions& options : cases) {
    Engine engine(options);
    EXPECT_TRUE(engine.worker_cpus().empty()) << options.workers << " workers";
    if (options.workers < 2) continue;
    for (const cpu_set_t& set : WorkerAffinities(engine, options.workers)) {
      EXPECT_EQ(CPU_COUNT(&set), n);
    }
  }
}

}  // namespace
}  // namespace ecd::ec
