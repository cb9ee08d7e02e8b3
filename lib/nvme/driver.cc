// Driver: command ids, submission slots and completion dispatch for one queue pair.
#include "lib/nvme/driver.h"

#include <future>

#include "lib/util/mutex.h"

namespace ecd::nvme {

Driver::Driver(Controller* controller)
    : controller_(controller),
      sq_(controller->queue_entries()),
      cq_(controller->queue_entries()),
      callbacks_(controller->queue_entries()) {
  // At most entries - 1 commands fit the submission queue; that many ids are enough.
  for (uint32_t i = controller->queue_entries() - 1; i > 0; --i) {
    free_cids_.push_back(static_cast<uint16_t>(i - 1));
  }
  controller_->AttachQueues(&sq_, &cq_, [this](CompletionQueue& cq) { OnInterrupt(cq); });
}

Driver::~Driver() {
  MutexLock lock(mu_);
  idle_.Wait(mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return free_cids_.size() + 1 == sq_.entries();
  });
}

uint64_t Driver::outstanding() const {
  MutexLock lock(mu_);
  return sq_.entries() - 1 - free_cids_.size();
}

void Driver::Submit(SubmissionEntry e, Callback done) {
  MutexLock lock(mu_);
  slot_free_.Wait(mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    sq_.UpdateHead(sq_head_seen_);
    return !free_cids_.empty() && !sq_.Full();
  });
  e.cid = free_cids_.back();
  free_cids_.pop_back();
  callbacks_[e.cid] = std::move(done);
  sq_.Push(e);
  sq_.RingTailDoorbell();
  // The doorbell write: the controller consumes the new entries now.
  controller_->RingSubmissionDoorbell();
}

NvmeStatus Driver::Execute(SubmissionEntry e) {
  std::promise<NvmeStatus> p;
  std::future<NvmeStatus> f = p.get_future();
  Submit(e, [&p](const CompletionEntry& c) { p.set_value(c.status); });
  return f.get();
}

void Driver::OnInterrupt(CompletionQueue& cq) {
  std::vector<std::pair<Callback, CompletionEntry>> ready;
  CompletionEntry c;
  while (cq.Peek(&c)) {
    cq.Advance();
    ready.emplace_back(nullptr, c);
  }
  cq.RingHeadDoorbell();
  {
    MutexLock lock(mu_);
    for (auto& [cb, entry] : ready) {
      sq_head_seen_ = entry.sq_head;
      cb = std::move(callbacks_[entry.cid]);
      callbacks_[entry.cid] = nullptr;
      free_cids_.push_back(entry.cid);
    }
  }
  slot_free_.NotifyAll();
  idle_.NotifyAll();
  for (auto& [cb, entry] : ready) {
    if (cb) cb(entry);
  }
}

}  // namespace ecd::nvme
