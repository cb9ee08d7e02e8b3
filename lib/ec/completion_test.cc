// Tests Completion: it waits for exactly its tasks, reports the first failure, wakes a sleeping
// waiter, and may be destroyed as soon as Wait returns.
#include "lib/ec/completion.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "lib/ec/engine.h"
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

// A waiter polls only when the engine's workers leave it a CPU: on a CPU a worker needs, a
// yielding poller takes a fair share of it.
TEST(CompletionTest, WaitPollsOnlyWhenACpuIsLeftForTheWaiter) {
  const int cpus = internal::UsableCpus();
  ASSERT_GE(cpus, 1);
  Engine all(EngineOptions{.workers = cpus});
  EXPECT_EQ(all.waiter_poll(), microseconds(0));
  EXPECT_FALSE(all.spare_cpu());
  Engine more(EngineOptions{.workers = cpus + 1});
  EXPECT_EQ(more.waiter_poll(), microseconds(0));
  EXPECT_FALSE(more.spare_cpu());
  if (cpus > 1) {
    Engine fewer(EngineOptions{.workers = cpus - 1});
    EXPECT_EQ(fewer.waiter_poll(), Completion::kDefaultPoll);
    EXPECT_TRUE(fewer.spare_cpu());
  }
  for (Engine* engine : {&all, &more}) {
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
    EXPECT_EQ(done->Wait(round % 2 ? microseconds(0) : microseconds(50)).code(),
              absl::StatusCode::kInvalidArgument);
    done.reset();
  }
}

}  // namespace
}  // namespace ecd::ec
