// NVMe submission and completion queue rings.
#include "lib/nvme/queue.h"

namespace ecd::nvme {

SubmissionQueue::SubmissionQueue(uint32_t entries) : slots_(entries) {}

void SubmissionQueue::Push(const SubmissionEntry& e) {
  slots_[host_tail_] = e.Pack();
  host_tail_ = Next(host_tail_);
}

uint32_t SubmissionQueue::RingTailDoorbell() {
  doorbell_tail_ = host_tail_;
  return doorbell_tail_;
}

bool SubmissionQueue::Pop(SubmissionEntry* e) {
  if (head_ == doorbell_tail_) return false;
  *e = SubmissionEntry::Unpack(slots_[head_]);
  head_ = Next(head_);
  return true;
}

CompletionQueue::CompletionQueue(uint32_t entries) : slots_(entries) {
  // Zeroed slots carry phase 0, so the host (expecting 1) sees nothing before the first post.
}

void CompletionQueue::Post(CompletionEntry e) {
  e.phase = phase_;
  slots_[tail_] = e.Pack();
  tail_ = (tail_ + 1) % entries();
  if (tail_ == 0) phase_ = !phase_;
}

bool CompletionQueue::Peek(CompletionEntry* e) const {
  const CompletionEntry c = CompletionEntry::Unpack(slots_[host_head_]);
  if (c.phase != expected_phase_) return false;
  *e = c;
  return true;
}

void CompletionQueue::Advance() {
  host_head_ = (host_head_ + 1) % entries();
  if (host_head_ == 0) expected_phase_ = !expected_phase_;
}

uint32_t CompletionQueue::RingHeadDoorbell() {
  doorbell_head_ = host_head_;
  return doorbell_head_;
}

}  // namespace ecd::nvme
