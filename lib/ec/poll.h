// Internal: the bounded busy-wait that engine workers and Completion use before they sleep,
// and the CPUs the process may use.
#ifndef ECD_LIB_EC_POLL_H_
#define ECD_LIB_EC_POLL_H_

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace ecd::ec::internal {

// Calls `done()` until it returns true or `window` has passed, and returns its last value.
// Between calls it yields the CPU (sched_yield): when there are more pollers and workers than
// cores, the thread that would make `done()` true gets to run instead of waiting for a spinner's
// time slice to end. Reads the clock once every 16 calls only.
template <typename Done>
bool PollFor(std::chrono::microseconds window, Done done) {
  if (window.count() <= 0) return done();
  const auto until = std::chrono::steady_clock::now() + window;
  for (int spins = 0;; ++spins) {
    if (done()) return true;
    std::this_thread::yield();
    if ((spins & 15) == 15 && std::chrono::steady_clock::now() >= until) return done();
  }
}

// The CPUs this process may run on (its affinity mask, so a cpuset or taskset counts), in
// ascending order; CPUs 0..hardware_concurrency-1 (at least CPU 0) when the mask cannot be read.
inline std::vector<int> UsableCpuList() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) {
    for (int c = 0; c < static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); ++c) {
      cpus.push_back(c);
    }
  }
  return cpus;
}

// How many CPUs this process may run on, at least 1.
inline int UsableCpus() { return static_cast<int>(UsableCpuList().size()); }

}  // namespace ecd::ec::internal

#endif  // ECD_LIB_EC_POLL_H_
