// NVMe submission and completion queues: fixed rings of packed entries with doorbell semantics.
//
// Submission queue: the host writes entries at its tail and makes them visible by ringing the
// tail doorbell; the controller consumes from its head up to the doorbell value and reports its
// head back in each completion (SQHD), which is how the host learns that slots are free. One slot
// is always left empty, so a queue of N entries holds at most N - 1 commands.
//
// Completion queue: the controller writes entries at its tail with the current phase tag and
// inverts the tag each time it wraps; the host consumes entries whose phase tag matches the one
// it expects (starting at 1) and rings the head doorbell to release the slots.
//
// Thread safety: none; the owner serialises access (the host driver and the controller each hold
// their own lock around their side).
#ifndef ECD_LIB_NVME_QUEUE_H_
#define ECD_LIB_NVME_QUEUE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "lib/nvme/command.h"

namespace ecd::nvme {

class SubmissionQueue {
 public:
  // REQUIRES: 2 <= entries <= 65536.
  explicit SubmissionQueue(uint32_t entries);
  uint32_t entries() const { return static_cast<uint32_t>(slots_.size()); }

  // Host side.
  // True when no slot is free as far as the host knows (from the last SQHD it saw).
  bool Full() const { return Next(host_tail_) == host_head_; }
  // Writes `e` at the host tail. REQUIRES: !Full(). Not visible to the controller until
  // RingTailDoorbell.
  void Push(const SubmissionEntry& e);
  // Makes every pushed entry visible; returns the doorbell value written.
  uint32_t RingTailDoorbell();
  // Records the controller's head from a completion's SQHD field.
  void UpdateHead(uint32_t sq_head) { host_head_ = sq_head % entries(); }

  // Controller side: pops the next visible entry; false when head reached the doorbell.
  bool Pop(SubmissionEntry* e);
  uint32_t controller_head() const { return head_; }

 private:
  uint32_t Next(uint32_t i) const { return (i + 1) % entries(); }
  std::vector<std::array<uint8_t, 64>> slots_;
  uint32_t host_tail_ = 0;
  uint32_t host_head_ = 0;
  uint32_t doorbell_tail_ = 0;
  uint32_t head_ = 0;
};

class CompletionQueue {
 public:
  // REQUIRES: 2 <= entries <= 65536.
  explicit CompletionQueue(uint32_t entries);
  uint32_t entries() const { return static_cast<uint32_t>(slots_.size()); }

  // Controller side.
  // True when posting would overwrite an entry the host has not released.
  bool Full() const { return (tail_ + 1) % entries() == doorbell_head_; }
  // Writes `e` at the tail with the controller's phase tag (e.phase is ignored).
  // REQUIRES: !Full().
  void Post(CompletionEntry e);

  // Host side.
  // Reads the entry at the host head if its phase tag is the expected one.
  bool Peek(CompletionEntry* e) const;
  // Consumes the entry at the head (flipping the expected phase at the wrap).
  void Advance();
  // Releases consumed slots to the controller; returns the doorbell value written.
  uint32_t RingHeadDoorbell();

 private:
  std::vector<std::array<uint8_t, 16>> slots_;
  uint32_t tail_ = 0;
  bool phase_ = true;  // controller's current phase tag
  uint32_t doorbell_head_ = 0;
  uint32_t host_head_ = 0;
  bool expected_phase_ = true;
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_QUEUE_H_
