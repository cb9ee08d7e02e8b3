// Completion: waits for a batch of engine tasks, polling briefly before it sleeps.
//
// A caller that submits N tasks makes a Completion of N, passes Callback() as each task's
// completion, and calls Wait(). Wait first watches the count for `poll` (as a DOCA progress
// loop polls its completion queue) and only then sleeps on a futex, so a batch that ends within
// the poll window costs no wake-up of the waiting thread (tens of microseconds on a VM, a third
// of a 16-stripe batch of 64 KiB blocks). Together with the engine workers' own poll window
// (EngineOptions::poll) a stream of batches pays no thread hand-off at all. Wait(engine) also
// lends the waiting thread to the engine when its workers occupy every CPU (see there).
//
// Thread safety: Callback()'s callbacks may run on any threads, concurrently; Wait() may be
// called by one thread at a time. The Completion must outlive every callback it handed out
// (Wait() returning guarantees that the last one has finished touching it).
#ifndef ECD_LIB_EC_COMPLETION_H_
#define ECD_LIB_EC_COMPLETION_H_

#include <atomic>
#include <chrono>

#include "absl/status/status.h"
#include "lib/ec/engine.h"
#include "lib/util/mutex.h"

namespace ecd::ec {

class Completion {
 public:
  // How long Wait() polls by default before it sleeps.
  static constexpr std::chrono::microseconds kDefaultPoll{1000};

  // REQUIRES: tasks >= 0; exactly `tasks` callbacks (or Done calls) will follow.
  explicit Completion(int tasks) : left_(tasks), finished_(tasks <= 0 ? 1 : 0) {}
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  // A callback for one task, to pass to Engine::Submit.
  Engine::Callback Callback() {
    return [this](absl::Status status) { Done(std::move(status)); };
  }
  // Records one task's status.
  void Done(absl::Status status);

  // Blocks until every task has completed; returns the first non-OK status, else OK. Polls for
  // `poll` before sleeping (0: sleeps at once).
  absl::Status Wait(std::chrono::microseconds poll = kDefaultPoll);
  // As above, for tasks of `engine`, waiting as suits its workers (Engine::spare_cpu):
  // - When they leave a CPU free, polls for kDefaultPoll, then sleeps. The tasks are left to
  //   the workers: a waiter that ran them too would add a thread to the pool the operator
  //   configured.
  // - When they occupy every CPU, first runs queued tasks itself (Engine::Progress) until this
  //   countdown ends or none is queued, then polls for the tasks the workers still run, then
  //   sleeps. The waiter takes a worker's turn on a CPU instead of sleeping through the batch
  //   and paying a cross-thread wake-up at its end, which is a large share of a short batch's
  //   time. Whatever is
  //   queued is run in order, tasks of other callers (and their callbacks) included; the
  //   waiter takes none once this countdown has ended, so it returns at most one task's run
  //   after it. A caller must not hold a lock that any callback of the engine takes.
  absl::Status Wait(Engine& engine);

  // True once every task has completed (never blocks).
  bool ready() const { return finished_.load(std::memory_order_acquire) != 0; }

 private:
  // Counted down by the tasks' threads; on its own cache line, so the waiter's polling of
  // finished_ does not take the line from them at every task.
  alignas(64) std::atomic<int> left_;
  // The waiter polls and sleeps on `finished_` (0 -> 1 after the last Done), not on left_, so
  // the last callback's store and notify are its final touches of this object.
  alignas(64) std::atomic<int> finished_;
  std::atomic<bool> failed_{false};
  Mutex mu_;  // Taken on failure only.
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::ec

#endif  // ECD_LIB_EC_COMPLETION_H_
