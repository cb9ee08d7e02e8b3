// Engine: erasure-coding work as tasks submitted to a pool of workers, in the model of NVIDIA
// DOCA Erasure Coding (doca_ec): four task kinds, submitted one at a time or held and flushed as
// a batch, completed asynchronously with an absl::Status.
//
// Task semantics (DOCA's, over GF(2^8) with polynomial 0x11d):
// - CreateTask: M data blocks -> K redundancy blocks (doca_ec_task_create).
// - UpdateTask: (old_i, new_i) for each changed data block i, plus the K old redundancy blocks
//   -> K new redundancy blocks, equal byte for byte to re-encoding the new data
//   (doca_ec_task_update).
// - RecoverTask: M+K block buffers of which `available` (at least M) hold good bytes, and the
//   indices to rebuild (data or redundancy) -> those blocks (doca_ec_task_recover; DOCA rebuilds
//   only data blocks, this engine rebuilds redundancy blocks too).
// - GaloisMulTask: R x C coefficients times C source blocks -> R destination blocks
//   (doca_ec_task_galois_mul), for custom updates or regenerating parity.
//
// Buffers: the caller owns every buffer of a task and must neither touch nor free it from
// Submit until the task completes. Debug builds (or EngineOptions::check_buffers) checksum each
// task's source blocks at submit and fail the task with FailedPrecondition if they changed
// before it ran.
// Threads: tasks run on the engine's workers, and also on callers that lend their thread:
// Run() runs one task on the caller (no hand-off, for a caller that would only wait for it) and
// Progress() lets a caller that waits for a batch run queued tasks meanwhile (as a DOCA progress
// engine is driven by its caller). A thread hand-off costs two wake-ups (tens of microseconds
// on a VM), which is a third of a 16-stripe 4+2 batch of 64 KiB blocks, unless both sides poll:
// workers watch for the next flush for EngineOptions::poll before they sleep, and a submitter
// that waits with Completion::Wait(engine) (completion.h) watches its batch's countdown before
// it sleeps (when the workers occupy every CPU, it first runs queued tasks itself).
// Thread safety: every method may be called from any thread. Completion callbacks and the
// on_task_done hook run on the thread that ran the task: a worker, or a caller inside Progress
// (Completion::Wait(engine) is one, and may run other callers' tasks). They must not block for
// long, nor take a lock that a caller may hold while it waits for its tasks.
#ifndef ECD_LIB_EC_ENGINE_H_
#define ECD_LIB_EC_ENGINE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <variant>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "lib/ec/codec.h"
#include "lib/util/mutex.h"

namespace ecd::ec {

// A task's lists of blocks and of block indices. Up to kInlineBlocks entries live inside the
// task itself, so a task for a stripe of up to 20 blocks (16+4) allocates nothing: a task is
// built on one thread and destroyed on a worker, and heap blocks that cross threads that way
// would make the submitter and the worker contend for the allocator's lock at every task.
// Longer lists spill to the heap and work the same.
inline constexpr size_t kInlineBlocks = 20;
using ConstBlocks = absl::InlinedVector<absl::Span<const uint8_t>, kInlineBlocks>;
using MutableBlocks = absl::InlinedVector<absl::Span<uint8_t>, kInlineBlocks>;
using BlockIndices = absl::InlinedVector<int, kInlineBlocks>;

struct CreateTask {
  std::shared_ptr<const Codec> codec;
  ConstBlocks data;      // M blocks.
  MutableBlocks parity;  // K blocks, written.
  // Empty, or M + K values, written: each block's CRC32C, as Codec::Encode computes them.
  // Owned by the caller, like the blocks, until the task's callback has run.
  absl::Span<uint32_t> checksums = {};
};

struct UpdateTask {
  std::shared_ptr<const Codec> codec;
  BlockIndices changed;      // Ascending data indices.
  ConstBlocks old_data;      // One per changed index.
  ConstBlocks new_data;      // One per changed index.
  ConstBlocks old_parity;    // K blocks.
  MutableBlocks new_parity;  // K blocks, written (may be old_parity).
};

struct RecoverTask {
  std::shared_ptr<const Codec> codec;
  MutableBlocks blocks;    // All M+K blocks of the stripe, in index order.
  BlockIndices available;  // Indices holding good bytes (>= M).
  BlockIndices wanted;     // Indices to rebuild.
};

struct GaloisMulTask {
  std::vector<uint8_t> coefficients;  // rows x cols, row-major.
  int rows = 0;
  int cols = 0;
  ConstBlocks src;    // cols blocks.
  MutableBlocks dst;  // rows blocks, written.
};

using Task = std::variant<CreateTask, UpdateTask, RecoverTask, GaloisMulTask>;

// The kind of a task, in the order of Task's alternatives.
enum class TaskKind { kCreate, kUpdate, kRecover, kMultiply };
inline TaskKind KindOf(const Task& task) { return static_cast<TaskKind>(task.index()); }
// "create", "update", "recover", "multiply".
const char* TaskKindName(TaskKind kind);

// dst[r] = sum_c coefficients[r * cols + c] * src[c] over GF(2^8). Block rules as for Codec.
absl::Status GaloisMultiply(absl::Span<const uint8_t> coefficients, int rows, int cols,
                            absl::Span<const absl::Span<const uint8_t>> src,
                            absl::Span<const absl::Span<uint8_t>> dst);

// Runs one task on the calling thread.
absl::Status RunTask(const Task& task);

enum class SubmitFlag {
  kFlush,  // Start this task and every task held before it (DOCA_TASK_SUBMIT_FLAG_FLUSH).
  kNone,   // Hold it until the next kFlush submit or Flush() (DOCA_TASK_SUBMIT_FLAG_NONE).
};

struct EngineOptions {
  int workers = 1;  // Threads that run tasks, 1..256.
  // Checksum source blocks at submit and fail tasks whose sources changed before they ran.
  // On by default in debug builds; costs one CRC pass over the sources.
#ifdef NDEBUG
  bool check_buffers = false;
#else
  bool check_buffers = true;
#endif
  // Called on the thread that ran each task (see Threads above), after the task and before its
  // completion, with the task's kind and the time from Submit to the end of its run (queueing
  // included). May be empty; must be cheap and thread-safe (metrics).
  std::function<void(TaskKind kind, std::chrono::nanoseconds latency)> on_task_done = nullptr;
  // How long a worker that ran out of tasks watches for the next flush before it sleeps
  // (0..10 ms; 0: sleeps at once). A flush within that window reaches a polling worker with no
  // futex wake-up; the price is up to that much CPU each time the engine goes idle. Pair it with
  // Completion::Wait's poll on the submitter's side: batches that follow each other closely then
  // pay no thread hand-off at all.
  std::chrono::microseconds poll{100};
  // When the workers are as many as the CPUs this process may use (its affinity mask, as a
  // cpuset, taskset or systemd CPUAffinity= leaves it), 2 or more, pin worker i to the i-th of
  // those CPUs (as SPDK pins its reactors to its core mask). Unpinned, the scheduler was seen to
  // leave two busy workers sharing one CPU for tens of milliseconds while the other idled
  // (docs/benchmarks.md, "EC engine beside raw ISA-L"). Fewer workers than CPUs stay unpinned:
  // the scheduler has CPUs to spare, and processes that each pinned to the first CPUs would pile up
  // on them while others idle. Best effort: a worker whose pinning fails runs unpinned.
  bool pin_workers = true;
};

class Engine {
 public:
  using Callback = std::function<void(absl::Status)>;

  explicit Engine(EngineOptions options);
  // Runs every task already submitted and flushed, then stops the workers. Held (unflushed)
  // tasks are completed with Cancelled.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues `task`; `done` is called once with its status. The task's buffers are the caller's
  // until then (see the file comment).
  void Submit(Task task, Callback done, SubmitFlag flag = SubmitFlag::kFlush);
  // As above, completing a future instead of a callback.
  std::future<absl::Status> Submit(Task task, SubmitFlag flag = SubmitFlag::kFlush);
  // Starts every held task.
  void Flush();

  // Runs `task` on the calling thread now, with the on_task_done hook of a submitted task
  // (no buffer check: the caller cannot touch the buffers while it runs), and returns its
  // status. For a caller that would submit one task and wait.
  absl::Status Run(const Task& task);

  // Runs flushed tasks that no worker has taken yet on the calling thread, one at a time, until
  // none is left; returns how many it ran. Their callbacks run on this thread. A caller about
  // to wait for its batch calls this first, so its thread works instead of sleeping; it never
  // blocks on a task a worker is running.
  int Progress();
  // As above, and also stops as soon as `stop()` returns true. It is asked before each task,
  // with the engine's lock held: it must be cheap (an atomic load) and must not call the engine.
  int Progress(absl::FunctionRef<bool()> stop);

  int workers() const { return static_cast<int>(threads_.size()); }
  // The CPU each worker was asked to run on, in worker order; empty when unpinned.
  const std::vector<int>& worker_cpus() const { return worker_cpus_; }

  // True when the workers leave a CPU of this process free (its affinity mask when the engine
  // was built). Its two users lend their thread on opposite sides of it:
  // - A caller that keeps the engine busy (the store's encode pipeline) runs queued tasks
  //   through Progress() only when it is true: with a worker on every CPU, it would compete
  //   with the workers for the CPUs and leave them to poll idle.
  // - Completion::Wait(Engine&), which waits for one batch with nothing else to do, runs
  //   queued tasks only when it is false: it then takes a worker's turn on a CPU instead of
  //   sleeping and being woken; with a CPU free, it polls and leaves the tasks to the workers.
  bool spare_cpu() const { return spare_cpu_; }

 private:
  struct Pending {
    Task task;
    Callback done;
    uint64_t source_checksum = 0;                     // With check_buffers only.
    std::chrono::steady_clock::time_point submitted;  // With on_task_done only.
  };
  void Work();
  // Runs one taken task: the buffer check, the task, the hook, then its callback.
  void Complete(Pending& p);
  // Moves the held tasks to the queue and wakes idle workers. Takes held_mu_ then mu_.
  void FlushHeld();

  const bool check_buffers_;
  const int workers_;
  const std::function<void(TaskKind, std::chrono::nanoseconds)> on_task_done_;
  const std::chrono::microseconds poll_;
  const bool spare_cpu_;
  const std::vector<int> worker_cpus_;
  std::atomic<uint64_t> flushes_{0};  // Bumped (under mu_) by every flush that queues tasks.
  // held_ has its own lock so that held (kNone) submits never contend with the workers.
  Mutex held_mu_;
  std::vector<Pending> held_ ABSL_GUARDED_BY(held_mu_);  // Submitted with kNone, not yet flushed.
  Mutex mu_;
  CondVar ready_;
  // Flushed tasks: [head_, size) wait for a worker. A worker takes a chunk of them per lock
  // (all of them when it is the only worker); the vector's capacity is reused, so a steady
  // stream of tasks allocates nothing here.
  std::vector<Pending> queue_ ABSL_GUARDED_BY(mu_);
  size_t head_ ABSL_GUARDED_BY(mu_) = 0;
  int idle_ ABSL_GUARDED_BY(mu_) =
      0;  // Workers waiting on ready_; a flush notifies only when some are.
  int helping_ ABSL_GUARDED_BY(mu_) =
      0;  // Callers inside Progress(); workers leave them a share of the queue.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace ecd::ec

#endif  // ECD_LIB_EC_ENGINE_H_
