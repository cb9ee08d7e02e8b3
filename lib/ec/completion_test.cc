// Tests Completion: it waits for exactly its tasks, reports the first failure, wakes a sleeping
// waiter, may be destroyed as soon as Wait returns, and on an engine whose workers occupy every
// CPU runs the queued tasks itself (and only then).
#include "lib/ec/completion.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "lib/ec/engine.h"
#include "lib/ec/gf_reference_test.h"
#include "lib/ec/poll.h"

namespace ecd::ec {
namespace {

using std::chrono::microseconds;

TEST(CompletionTest, NoTasksIsReadyAtOnce) {
  Completion done(0);
  EXPECT_TRUE(done.ready());
  EXPECT_TRUE(done.Wait(microseconds(0)).ok());
}

TEST(CompletionTest, WaitsForEveryTask) {
  Completion done(3);
  done.Done(absl::OkStatus());
  done.Done(absl::OkStatus());
  EXPECT_FALSE(done.ready());
  std::thread last([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    done.Done(absl::OkStatus());
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(done.Wait(microseconds(0)).ok());  // Sleeps at once; woken by the last Done.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(25));
  EXPECT_TRUE(done.ready());
  last.join();
}

TEST(CompletionTest, ReportsTheFirstFailure) {
  Completion done(3);
  done.Done(absl::OkStatus());
  done.Done(absl::DataLossError("block 2 is corrupt"));
  done.Done(absl::InternalError("later"));
  absl::Status s = done.Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "block 2 is corrupt");
}

TEST(CompletionTest, EngineTasksCompleteIt) {
  auto codec = *Codec::Create(MatrixType::kCauchy, 4, 2);
  std::mt19937 rng(5);
  constexpr int kStripes = 32;
  constexpr size_t kLen = 4096;
  std::vector<std::vector<uint8_t>> blocks(kStripes * 6, std::vector<uint8_t>(kLen));
  for (auto& b : blocks) {
    for (auto& x : b) x = static_cast<uint8_t>(rng());
  }
  for (auto poll : {microseconds(0), microseconds(200), microseconds(10000)}) {
    Engine engine(EngineOptions{.workers = 2, .poll = poll});
    std::vector<std::vector<uint8_t>> expected(kStripes * 2, std::vector<uint8_t>(kLen));
    Completion done(kStripes);
    for (int s = 0; s < kStripes; ++s) {
      CreateTask t{codec, {}, {}};
      for (int i = 0; i < 4; ++i) t.data.emplace_back(blocks[s * 6 + i]);
      for (int j = 0; j < 2; ++j) t.parity.emplace_back(blocks[s * 6 + 4 + j]);
      std::vector<absl::Span<uint8_t>> want = {absl::MakeSpan(expected[s * 2]),
                                               absl::MakeSpan(expected[s * 2 + 1])};
      ASSERT_TRUE(codec->Encode(t.data, want).ok());
      engine.Submit(std::move(t), done.Callback(),
                    s + 1 == kStripes ? SubmitFlag::kFlush : SubmitFlag::kNone);
    }
    ASSERT_TRUE(done.Wait(poll).ok());
    for (int s = 0; s < kStripes; ++s) {
      EXPECT_EQ(blocks[s * 6 + 4], expected[s * 2]) << "stripe " << s;
      EXPECT_EQ(blocks[s * 6 + 5], expected[s * 2 + 1]) << "stripe " << s;
    }
  }
}

// Engines whose workers block after their first task until released, so that a test knows
// which thread runs what is queued next.
class BlockedWorkers {
 public:
  explicit BlockedWorkers(int workers)
      : engine_(EngineOptions{.workers = workers,
                              .on_task_done = [this](TaskKind, std::chrono::nanoseconds) {
                                if (std::this_thread::get_id() == caller_) return;
                                std::unique_lock lock(mu_);
                                ++blocked_;
                                changed_.notify_all();
                                changed_.wait(lock, [&] { return released_; });
                              }}) {
    // One task at a time, each taken by a worker not yet blocked, until every worker is.
    for (int i = 0; i < engine_.workers(); ++i) {
      engine_.Submit(GaloisMulTask{}, [](const absl::Status&) {});
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return blocked_ == i + 1; });
    }
  }
  ~BlockedWorkers() { Release(); }
  Engine& engine() { return engine_; }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  const std::thread::id caller_ = std::this_thread::get_id();
  std::mutex mu_;
  std::condition_variable changed_;
  int blocked_ = 0;
  bool released_ = false;
  Engine engine_;  // Last: its workers use the members above until it is destroyed.
};

// Lets a BlockedWorkers' workers go after `after`, or at once when Now() is called (and at the
// latest when destroyed, which waits for its thread).
class ReleaseLater {
 public:
  ReleaseLater(BlockedWorkers& held, std::chrono::milliseconds after)
      : thread_([&held, after, now = now_.get_future()] {
          now.wait_for(after);
          held.Release();
        }) {}
  ~ReleaseLater() { Now(); }
  void Now() {
    if (!thread_.joinable()) return;
    now_.set_value();
    thread_.join();
  }

 private:
  std::promise<void> now_;
  std::thread thread_;  // Last: it uses now_'s future.
};

// A batch of `n` 1 x 1 Galois multiplies by 3 of 64 B blocks submitted to `engine` (flushed
// with the last), counted down by `done`; each records the thread it ran on.
class MultiplyBatch {
 public:
  MultiplyBatch(Engine& engine, int n) : done(n), src_(n, std::vector<uint8_t>(64)), dst_(n) {
    for (int t = 0; t < n; ++t) {
      for (int i = 0; i < 64; ++i) src_[t][i] = static_cast<uint8_t>(t * 64 + i);
      dst_[t].assign(64, 0);
    }
    for (int t = 0; t < n; ++t) {
      GaloisMulTask task{{3}, 1, 1, {}, {}};
      task.src.emplace_back(src_[t]);
      task.dst.emplace_back(absl::MakeSpan(dst_[t]));
      engine.Submit(
          std::move(task),
          [this, callback = done.Callback()](absl::Status s) {
            {
              std::lock_guard lock(mu_);
              ran_on_.push_back(std::this_thread::get_id());
            }
            callback(std::move(s));
          },
          t + 1 == n ? SubmitFlag::kFlush : SubmitFlag::kNone);
    }
  }
  // The threads the tasks ran on so far, in the order they ran.
  std::vector<std::thread::id> ran_on() {
    std::lock_guard lock(mu_);
    return ran_on_;
  }
  // REQUIRES: every task has run. Checks each product against the GF(2^8) reference.
  void ExpectProducts() const {
    for (size_t t = 0; t < src_.size(); ++t) {
      for (int i = 0; i < 64; ++i) {
        ASSERT_EQ(dst_[t][i], testing::RefMul(3, src_[t][i])) << "task " << t << " byte " << i;
      }
    }
  }

  Completion done;

 private:
  std::vector<std::vector<uint8_t>> src_, dst_;
  std::mutex mu_;
  std::vector<std::thread::id> ran_on_;
};

// With a worker on every CPU, a waiter runs queued tasks itself instead of sleeping until the
// workers have: here every worker is held, and the waiter runs the whole batch.
TEST(CompletionTest, WaitRunsTheQueueItselfWhenTheWorkersOccupyEveryCpu) {
  BlockedWorkers held(internal::UsableCpus());
  ASSERT_FALSE(held.engine().spare_cpu());
  MultiplyBatch batch(held.engine(), 8);
  // Should the waiter sleep instead, the workers are let go after 5 s and run the batch.
  ReleaseLater watchdog(held, std::chrono::seconds(5));
  EXPECT_TRUE(batch.done.Wait(held.engine()).ok());
  watchdog.Now();
  EXPECT_EQ(batch.ran_on(), std::vector<std::thread::id>(8, std::this_thread::get_id()));
  batch.ExpectProducts();
}

// With a CPU left free, the waiter leaves the tasks to the workers: it would otherwise add a
// thread to the pool the operator sized.
TEST(CompletionTest, WaitLeavesTheTasksToTheWorkersWhenACpuIsFree) {
  const int cpus = internal::UsableCpus();
  if (cpus < 2) GTEST_SKIP() << "needs 2 CPUs, this process may use " << cpus;
  BlockedWorkers held(cpus - 1);
  ASSERT_TRUE(held.engine().spare_cpu());
  MultiplyBatch batch(held.engine(), 8);
  ReleaseLater release(held, std::chrono::milliseconds(50));
  EXPECT_TRUE(batch.done.Wait(held.engine()).ok());
  const std::vector<std::thread::id> ran_on = batch.ran_on();
  ASSERT_EQ(ran_on.size(), 8u);
  for (const std::thread::id id : ran_on) EXPECT_NE(id, std::this_thread::get_id());
  batch.ExpectProducts();
}

// The waiter runs queued tasks only until its own countdown ends: another caller's batch,
// queued behind its own, is left to the workers.
TEST(CompletionTest, WaitRunsNoMoreTasksOnceItsOwnHaveRun) {
  BlockedWorkers held(internal::UsableCpus());
  ASSERT_FALSE(held.engine().spare_cpu());
  MultiplyBatch mine(held.engine(), 4);
  MultiplyBatch theirs(held.engine(), 4);
  ReleaseLater watchdog(held, std::chrono::seconds(5));
  EXPECT_TRUE(mine.done.Wait(held.engine()).ok());
  EXPECT_EQ(mine.ran_on(), std::vector<std::thread::id>(4, std::this_thread::get_id()));
  EXPECT_TRUE(theirs.ran_on().empty()) << theirs.ran_on().size() << " of the other batch ran";
  watchdog.Now();  // The workers go on with the other batch.
  EXPECT_TRUE(theirs.done.Wait(microseconds(0)).ok());
  const std::vector<std::thread::id> ran_on = theirs.ran_on();
  ASSERT_EQ(ran_on.size(), 4u);
  for (const std::thread::id id : ran_on) EXPECT_NE(id, std::this_thread::get_id());
  mine.ExpectProducts();
  theirs.ExpectProducts();
}

// Whichever way it waits, Wait(engine) returns a failure of its tasks.
TEST(CompletionTest, WaitOnAnEngineReturnsAFailureOfItsTasks) {
  const int cpus = internal::UsableCpus();
  Engine all(EngineOptions{.workers = cpus});
  EXPECT_FALSE(all.spare_cpu());
  Engine more(EngineOptions{.workers = cpus + 1});
  EXPECT_FALSE(more.spare_cpu());
  std::vector<Engine*> engines = {&all, &more};
  std::unique_ptr<Engine> fewer;
  if (cpus > 1) {
    fewer = std::make_unique<Engine>(EngineOptions{.workers = cpus - 1});
    EXPECT_TRUE(fewer->spare_cpu());
    engines.push_back(fewer.get());
  }
  for (Engine* engine : engines) {
    Completion done(3);
    for (int i = 0; i < 3; ++i) engine->Submit(GaloisMulTask{}, done.Callback());
    EXPECT_EQ(done.Wait(*engine).code(), absl::StatusCode::kInvalidArgument);
  }
}

// The waiter frees the Completion the moment Wait returns, while the thread that completed it
// may still be inside Done: ASan and TSan builds catch a touch after that.
TEST(CompletionTest, MayBeDestroyedAsSoonAsWaitReturns) {
  Engine engine(EngineOptions{.workers = 2});
  for (int round = 0; round < 2000; ++round) {
    auto done = std::make_unique<Completion>(2);
    engine.Submit(GaloisMulTask{}, done->Callback());  // Fails fast: an empty matrix.
    engine.Submit(GaloisMulTask{}, done->Callback());
    // Sleeping at once, polling, and (on a machine of at most 2 CPUs) running tasks itself.
    const absl::Status status = round % 3 == 0   ? done->Wait(microseconds(0))
                                : round % 3 == 1 ? done->Wait(microseconds(50))
                                                 : done->Wait(engine);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    done.reset();
  }
}

}  // namespace
}  // namespace ecd::ec
