// The engine's task runners and its worker pool with held (unflushed) batches.
#include "lib/ec/engine.h"

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/ec/block_checks.h"
#include "lib/ec/poll.h"
#include "lib/util/mutex.h"

namespace ecd::ec {
namespace {

constexpr int kMaxGaloisDimension = kMaxDataBlocks + kMaxParityBlocks;

template <typename Blocks>
void AddChecksum(uint64_t& sum, const Blocks& blocks) {
  for (const auto& b : blocks) {
    sum = sum * 1000003u +
          crc32_iscsi(const_cast<uint8_t*>(b.data()), static_cast<int>(b.size()), 0xFFFFFFFFu);
  }
}

// A checksum of every block the task reads, to catch callers that touch in-flight buffers.
uint64_t SourceChecksum(const Task& task) {
  uint64_t sum = 0;
  std::visit(
      [&](const auto& t) {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, CreateTask>) {
          AddChecksum(sum, t.data);
        } else if constexpr (std::is_same_v<T, UpdateTask>) {
          AddChecksum(sum, t.old_data);
          AddChecksum(sum, t.new_data);
        } else if constexpr (std::is_same_v<T, RecoverTask>) {
          for (int i : t.available) {
            if (i >= 0 && static_cast<size_t>(i) < t.blocks.size()) {
              AddChecksum(sum, absl::MakeConstSpan(&t.blocks[i], 1));
            }
          }
        } else {
          AddChecksum(sum, t.src);
        }
      },
      task);
  return sum;
}

// The CPU of each worker when they are to be pinned (EngineOptions::pin_workers), else none.
std::vector<int> WorkerCpus(bool pin, int workers) {
  if (!pin || workers < 2) return {};
  std::vector<int> cpus = internal::UsableCpuList();
  if (static_cast<int>(cpus.size()) != workers) return {};
  return cpus;
}

}  // namespace

absl::Status GaloisMultiply(absl::Span<const uint8_t> coefficients, int rows, int cols,
                            absl::Span<const absl::Span<const uint8_t>> src,
                            absl::Span<const absl::Span<uint8_t>> dst) {
  if (rows < 1 || rows > kMaxGaloisDimension || cols < 1 || cols > kMaxGaloisDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("a Galois multiply matrix is 1..", kMaxGaloisDimension, " x 1..",
                     kMaxGaloisDimension, ", not ", rows, " x ", cols));
  }
  if (coefficients.size() != static_cast<size_t>(rows) * cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", rows * cols, " coefficients, got ", coefficients.size()));
  }
  size_t len = 0, dst_len = 0;
  if (absl::Status s = internal::CheckBlocks(src, cols, "source", &len); !s.ok()) return s;
  if (absl::Status s = internal::CheckBlocks(dst, rows, "destination", &dst_len); !s.ok()) {
    return s;
  }
  if (len != dst_len) return absl::InvalidArgumentError("source and destination lengths differ");
  // cols sources, then rows destinations.
  std::array<uint8_t*, size_t{2} * kMaxGaloisDimension> blocks;
  for (int c = 0; c < cols; ++c) blocks[c] = const_cast<uint8_t*>(src[c].data());
  for (int r = 0; r < rows; ++r) blocks[cols + r] = dst[r].data();
  std::array<const uint8_t*, size_t{2} * kMaxGaloisDimension> starts;
  std::copy_n(blocks.begin(), rows + cols, starts.begin());
  if (absl::Status s = internal::CheckDisjoint(absl::MakeSpan(starts.data(), rows + cols), len);
      !s.ok()) {
    return s;
  }
  std::vector<uint8_t> tables(32 * static_cast<size_t>(rows) * cols);
  ec_init_tables(cols, rows, const_cast<uint8_t*>(coefficients.data()), tables.data());
  ec_encode_data(static_cast<int>(len), cols, rows, tables.data(), blocks.data(),
                 blocks.data() + cols);
  return absl::OkStatus();
}

const char* TaskKindName(TaskKind kind) {
  switch (kind) {
    case TaskKind::kCreate:
      return "create";
    case TaskKind::kUpdate:
      return "update";
    case TaskKind::kRecover:
      return "recover";
    case TaskKind::kMultiply:
      return "multiply";
  }
  return "unknown";
}

absl::Status RunTask(const Task& task) {
  return std::visit(
      [](const auto& t) -> absl::Status {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, GaloisMulTask>) {
          return GaloisMultiply(t.coefficients, t.rows, t.cols, t.src, t.dst);
        } else {
          if (t.codec == nullptr) return absl::InvalidArgumentError("task has no codec");
          if constexpr (std::is_same_v<T, CreateTask>) {
            return t.codec->Encode(t.data, t.parity, t.checksums);
          } else if constexpr (std::is_same_v<T, UpdateTask>) {
            return t.codec->Update(t.changed, t.old_data, t.new_data, t.old_parity, t.new_parity);
          } else {
            return t.codec->Reconstruct(t.blocks, t.available, t.wanted);
          }
        }
      },
      task);
}

Engine::Engine(EngineOptions options)
    : check_buffers_(options.check_buffers),
      workers_(std::clamp(options.workers, 1, 256)),
      on_task_done_(std::move(options.on_task_done)),
      poll_(
          std::clamp(options.poll, std::chrono::microseconds(0), std::chrono::microseconds(10000))),
      spare_cpu_(workers_ < internal::UsableCpus()),
      worker_cpus_(WorkerCpus(options.pin_workers, workers_)) {
  threads_.reserve(workers_);
  for (int i = 0; i < workers_; ++i) {
    threads_.emplace_back([this, i] {
      if (!worker_cpus_.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(worker_cpus_[i], &set);
        (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // Best effort.
      }
      Work();
    });
  }
}

Engine::~Engine() {
  std::vector<Pending> held;
  {
    MutexLock held_lock(held_mu_);
    held.swap(held_);
    MutexLock lock(mu_);
    stopping_ = true;
    flushes_.fetch_add(1, std::memory_order_release);  // Ends polls at once.
  }
  ready_.NotifyAll();
  for (std::thread& t : threads_) t.join();
  for (Pending& p : held) {
    p.done(absl::CancelledError("the engine stopped before this held task was flushed"));
  }
}

void Engine::Submit(Task task, Callback done, SubmitFlag flag) {
  Pending p{std::move(task), std::move(done), 0, {}};
  if (check_buffers_) p.source_checksum = SourceChecksum(p.task);
  if (on_task_done_) p.submitted = std::chrono::steady_clock::now();
  {
    MutexLock held_lock(held_mu_);
    held_.push_back(std::move(p));
  }
  if (flag == SubmitFlag::kFlush) FlushHeld();
}

std::future<absl::Status> Engine::Submit(Task task, SubmitFlag flag) {
  auto promise = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> future = promise->get_future();
  Submit(
      std::move(task), [promise](absl::Status s) { promise->set_value(std::move(s)); }, flag);
  return future;
}

void Engine::Flush() { FlushHeld(); }

void Engine::FlushHeld() {
  bool wake = false;
  {
    MutexLock held_lock(held_mu_);
    if (held_.empty()) return;
    MutexLock lock(mu_);
    if (head_ == queue_.size()) {
      // Nothing queued: trade buffers, so both keep their capacity.
      queue_.clear();
      head_ = 0;
      queue_.swap(held_);
    } else {
      for (Pending& h : held_) queue_.push_back(std::move(h));
      held_.clear();
    }
    flushes_.fetch_add(1, std::memory_order_release);
    wake = idle_ > 0;
  }
  // A running or polling worker comes back for the queue before it sleeps: no wake-up needed.
  if (wake) ready_.NotifyAll();
}

void Engine::Work() {
  std::vector<Pending> mine;  // This worker's chunk; its capacity is reused.
  for (;;) {
    {
      UniqueMutexLock lock(mu_);
      bool polled = false;
      while (!stopping_ && head_ == queue_.size()) {
        if (!polled && poll_.count() > 0) {
          // Watch for the next flush a while before sleeping, off the lock: a submitter that
          // comes back within the window costs no futex wake-up on either side.
          polled = true;
          const uint64_t seen = flushes_.load(std::memory_order_acquire);
          lock.Unlock();
          internal::PollFor(poll_,
                            [&] { return flushes_.load(std::memory_order_acquire) != seen; });
          lock.Lock();
          continue;
        }
        ++idle_;
        ready_.Wait(mu_);
        --idle_;
      }
      const size_t left = queue_.size() - head_;
      if (left == 0) return;  // Stopping, and nothing flushed is left.
      // Alone (one worker, no caller helping), take all of it. Else factoring self-scheduling:
      // take 1/(2 x threads) of what is left, so a batch spreads over the pool with few trips
      // to the lock and a worker that starts late still finds work. (Taking 1/threads would let
      // the first worker take half a batch and leave it running alone at the end when the
      // second started later.)
      const size_t threads = static_cast<size_t>(workers_) + static_cast<size_t>(helping_);
      const size_t take = threads == 1 ? left : (left + 2 * threads - 1) / (2 * threads);
      for (size_t x = 0; x < take; ++x) mine.push_back(std::move(queue_[head_ + x]));
      head_ += take;
      if (head_ == queue_.size()) {
        queue_.clear();
        head_ = 0;
      }
    }
    for (Pending& p : mine) Complete(p);
    mine.clear();
  }
}

void Engine::Complete(Pending& p) {
  absl::Status status;
  if (check_buffers_ && SourceChecksum(p.task) != p.source_checksum) {
    status = absl::FailedPreconditionError(
        "a source buffer changed between Submit and the task's run; buffers belong to the "
        "engine until the task completes");
  } else {
    status = RunTask(p.task);
  }
  if (on_task_done_) {
    on_task_done_(KindOf(p.task), std::chrono::steady_clock::now() - p.submitted);
  }
  p.done(std::move(status));
}

absl::Status Engine::Run(const Task& task) {
  const auto start =
      on_task_done_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  absl::Status status = RunTask(task);
  if (on_task_done_) on_task_done_(KindOf(task), std::chrono::steady_clock::now() - start);
  return status;
}

int Engine::Progress() {
  return Progress([] { return false; });
}

int Engine::Progress(absl::FunctionRef<bool()> stop) {
  int ran = 0;
  UniqueMutexLock lock(mu_);
  ++helping_;
  while (head_ < queue_.size()) {
    if (stop()) break;
    Pending p = std::move(queue_[head_++]);
    if (head_ == queue_.size()) {
      queue_.clear();
      head_ = 0;
    }
    lock.Unlock();
    Complete(p);
    ++ran;
    lock.Lock();
  }
  --helping_;
  return ran;
}

}  // namespace ecd::ec
