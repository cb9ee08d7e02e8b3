// Store::Read and Store::GetBlock: an object's bytes (degraded where a block is bad), and one
// block as stored.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/records/device_label.h"
#include "lib/store/object_locks.h"
#include "lib/store/object_name.h"
#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::store {

namespace {

// Finishes a sink whose read failed with `status`, and returns that status.
absl::Status FailSink(ByteSink& sink, absl::Status status) {
  (void)sink.Finish(/*ok=*/false);
  return status;
}

}  // namespace

// One call of Store::Read. Finds the object under its shared lock and starts the sink, then
// streams the stripes the range touches through a pipeline of stripe buffers: while the oldest
// stripe's bytes go to the sink, the blocks of the next ones (kReadAhead, or
// StoreOptions::stripes_in_flight, within the memory budget and no more than the read touches)
// are being read. The buffers are shared with the sink's pins (ByteSink::WritePinned) and may
// outlive the call; ~Store waits for them. Holds the object's lock, its record and the pipeline
// until it is destroyed: Store::Read makes one on its stack and runs it once.
class ReadFlow {
 public:
  ReadFlow(StoreCore& store, absl::string_view name, uint64_t offset, uint64_t length,
           ByteSink& sink, const Interrupt& interrupt)
      : store_(store),
        name_(name),
        offset_(offset),
        length_(length),
        sink_(sink),
        interrupt_(interrupt) {}
  ReadFlow(const ReadFlow&) = delete;
  ReadFlow& operator=(const ReadFlow&) = delete;

  // Does the read as Store::Read promises (store.h). Returns the sink's Finish status once every
  // byte was sent; errors before the sink started leave it untouched, later ones finish it not
  // ok (FailSink). REQUIRES: called once.
  absl::Status Run();

 private:
  // The stripe buffers of one read, shared with the sink's pins (ByteSink::WritePinned): a
  // buffer is read into again only once no pin of it is left, and the set lives until the last
  // pin is gone, which may be after the read has returned. Counted in the store's pinned_sets_
  // for its whole life, so that ~Store waits for it; the destructor gives the memory and its
  // budget back before it lets ~Store go on.
  struct PinnedStripes {
    explicit PinnedStripes(StoreCore* store) : store(store) {
      MutexLock lock(store->pinned_mu_);
      ++store->pinned_sets_;
    }
    ~PinnedStripes() {
      { StripeSet gone = std::move(set); }  // Memory and budget back before ~StoreCore may go on.
      MutexLock lock(store->pinned_mu_);
      if (outlived) --store->outlived_sets_;
      if (--store->pinned_sets_ == 0) store->pinned_gone_.NotifyAll();
    }
    PinnedStripes(const PinnedStripes&) = delete;
    PinnedStripes& operator=(const PinnedStripes&) = delete;
    StoreCore* const store;
    StripeSet set;
    Mutex mu;
    CondVar released;                           // Notified each time a pin goes.
    std::vector<int> pins ABSL_GUARDED_BY(mu);  // Live pins per buffer.
    // The read returned before the last pin went.
    bool outlived ABSL_GUARDED_BY(store->pinned_mu_) = false;
  };

  // One pin of buffer `buffer` of a PinnedStripes: while it lives, that buffer is not read into
  // again and the set is not freed. The sink holds it through the copies it keeps of WritePinned's
  // `pin`; the last copy to go wakes a read waiting for the buffer (TakeIdle).
  // REQUIRES: buffer < of->pins.size().
  struct StripePin {
    StripePin(std::shared_ptr<PinnedStripes> of, size_t buffer)
        : of(std::move(of)), buffer(buffer) {
      MutexLock lock(this->of->mu);
      ++this->of->pins[buffer];
    }
    ~StripePin() {
      {
        MutexLock lock(of->mu);
        --of->pins[buffer];
      }
      of->released.NotifyAll();
    }
    StripePin(const StripePin&) = delete;
    StripePin& operator=(const StripePin&) = delete;
    const std::shared_ptr<PinnedStripes> of;
    const size_t buffer;
  };

  // Lets the read's own share `pinned` of its PinnedStripes go when the read returns (after the
  // sink's Finish, every pin made, and the reads into the buffers waited for): the set is then
  // counted as outliving the read (Store::outlived_sets_) if a pin still holds it.
  // REQUIRES: `pinned` is not null and outlives this.
  struct ReleaseOnReturn {
    explicit ReleaseOnReturn(std::shared_ptr<PinnedStripes>& pinned) : pinned(pinned) {}
    ~ReleaseOnReturn() {
      {
        MutexLock lock(pinned->store->pinned_mu_);
        if (pinned.use_count() > 1) {
          pinned->outlived = true;
          ++pinned->store->outlived_sets_;
        }
      }
      pinned.reset();  // Not under pinned_mu_: the last owner's ~PinnedStripes takes it.
    }
    ReleaseOnReturn(const ReleaseOnReturn&) = delete;
    ReleaseOnReturn& operator=(const ReleaseOnReturn&) = delete;
    std::shared_ptr<PinnedStripes>& pinned;
  };

  // A stripe whose reads have started into buffer `index` of the set, waiting to be served.
  struct Ahead {
    size_t index;
    StripeBuffer* buffer;
    uint64_t stripe;
    std::vector<const BlockRecord*> by_index;  // Point into the batch's catalog rows.
    uint64_t lo, hi;                           // The bytes of the stripe's data to serve.
    std::vector<int> need;
    std::unique_ptr<StoreCore::BlockReads> reads;
  };

  // Takes the object's lock (shared), looks it up and sets end_. Errors: the lock's
  // (DeadlineExceeded, Cancelled), LookupError's, OutOfRange for an offset past the end.
  absl::Status FindObject();
  // Sets the stripe's shape (m_, width_, bs_, stripe_bytes_) and gets the object's codec.
  // Errors: CodecFor's. REQUIRES: FindObject succeeded.
  absl::Status LoadCodec();
  // Reserves and allocates the pipeline's stripe buffers with the sink's held_bytes, pins them
  // (pinned_, released by release_) and marks them all idle. Errors: AllocateStripes' (no
  // memory, or the interrupt fired while waiting for it). REQUIRES: LoadCodec succeeded.
  absl::Status ReserveStripes();
  // Sends every stripe of the range to the sink, kStripeBatch stripes of catalog rows at a time.
  // Errors: the catalog's, ServeOldest's, TakeIdle's; stripes still ahead are then left to be
  // waited for by ~ReadFlow. REQUIRES: ReserveStripes succeeded.
  absl::Status StreamStripes();
  // StreamStripes for stripes [batch, batch + count): starts each stripe's reads into an idle
  // buffer (serving the oldest when none is idle), then serves them all, since they point into
  // the batch's rows.
  absl::Status StreamBatch(uint64_t batch, uint64_t count);
  // Takes the oldest idle buffer, once the sink holds no pin of it; CANCELLED if the sink's
  // reader goes away meanwhile (its pins may then go only after this read has returned).
  // REQUIRES: idle_ is not empty.
  absl::StatusOr<size_t> TakeIdle();
  // Starts the reads of the blocks of `stripe` that hold bytes of the range into buffer `index`,
  // its rows taken from `blocks` at `row` (TakeStripe), and queues it in ahead_.
  void StartStripe(size_t index, uint64_t stripe, const std::vector<BlockRecord>& blocks,
                   size_t& row);
  // Completes the oldest stripe's blocks (rebuilding what is bad) and sends its bytes, pinned;
  // its buffer goes back to idle_. Errors: LoadBlocks' (DataLoss), the sink's.
  // REQUIRES: ahead_ is not empty.
  absl::Status ServeOldest();

  StoreCore& store_;
  const absl::string_view name_;
  const uint64_t offset_;
  const uint64_t length_;
  ByteSink& sink_;
  const Interrupt& interrupt_;
  std::optional<ObjectLocks::Guard> guard_;  // Before the pipeline: released after it.
  ObjectRecord object_;
  uint64_t end_ = 0;  // The range is [offset_, end_).
  int m_ = 0;
  int width_ = 0;
  std::shared_ptr<const ec::Codec> codec_;
  uint64_t bs_ = 0;
  uint64_t stripe_bytes_ = 0;
  size_t depth_ = 0;
  std::shared_ptr<PinnedStripes> pinned_;
  std::optional<ReleaseOnReturn> release_;  // Of pinned_, once it is made.
  std::deque<size_t> idle_;                 // Oldest first: its pins are the likeliest to be gone.
  std::deque<Ahead> ahead_;                 // Last: destroyed first, waiting for its reads.
};

absl::Status ReadFlow::Run() {
  if (absl::Status s = FindObject(); !s.ok()) return s;
  sink_.SetObject(object_);
  if (absl::Status s = sink_.Start(object_.size); !s.ok()) return FailSink(sink_, s);
  if (offset_ == end_) return sink_.Finish(/*ok=*/true);
  if (absl::Status s = LoadCodec(); !s.ok()) return FailSink(sink_, s);
  if (absl::Status s = ReserveStripes(); !s.ok()) return FailSink(sink_, s);
  if (absl::Status s = StreamStripes(); !s.ok()) return FailSink(sink_, s);
  return sink_.Finish(/*ok=*/true);
}

absl::Status ReadFlow::FindObject() {
  guard_.emplace(*store_.locks_, name_, /*exclusive=*/false, interrupt_);
  if (!guard_->status().ok()) return guard_->status();
  absl::StatusOr<ObjectRecord> found = store_.catalog_->GetObject(name_);
  if (!found.ok()) return LookupError(found.status(), name_, store_.options_.max_name_length);
  object_ = *std::move(found);
  if (offset_ > object_.size) {
    return absl::OutOfRangeError(absl::StrCat("offset ", offset_, " is past the end of \"", name_,
                                              "\" (", object_.size, " bytes)"));
  }
  end_ = length_ == 0 || length_ > object_.size - offset_ ? object_.size : offset_ + length_;
  return absl::OkStatus();
}

absl::Status ReadFlow::LoadCodec() {
  m_ = static_cast<int>(object_.data_blocks);
  width_ = m_ + static_cast<int>(object_.parity_blocks);
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec =
      store_.CodecFor(object_.matrix, m_, static_cast<int>(object_.parity_blocks));
  if (!codec.ok()) return codec.status();
  codec_ = *std::move(codec);
  bs_ = object_.block_size;
  stripe_bytes_ = bs_ * static_cast<uint64_t>(m_);
  return absl::OkStatus();
}

absl::Status ReadFlow::ReserveStripes() {
  // Read-ahead: while one stripe's bytes go to the sink, the blocks of the next kReadAhead
  // stripes (stripes_in_flight - 1) are being read.
  // The sink's own buffers are reserved with the stripes, and it is finished (Run) while
  // they still are.
  // No more stripes than the read touches.
  const uint64_t held = sink_.held_bytes(end_ - offset_);
  const uint64_t unit = RoundUpToPage(static_cast<uint64_t>(width_) * store_.LbasPerBlock(bs_) *
                                      store_.options_.lba_size);
  const uint64_t touched = (end_ - 1) / stripe_bytes_ - offset_ / stripe_bytes_ + 1;
  depth_ = store_.budget_->Fit(
      unit,
      static_cast<size_t>(std::min<uint64_t>(store_.PipelineDepth(kReadAhead + 1, unit), touched)),
      held);
  absl::StatusOr<StripeSet> buffers =
      store_.AllocateStripes(std::vector<int>(depth_, width_), bs_, held, interrupt_);
  if (!buffers.ok()) return buffers.status();
  pinned_ = std::make_shared<PinnedStripes>(&store_);
  pinned_->set = *std::move(buffers);
  {
    MutexLock lock(pinned_->mu);  // Not shared yet; taken for the analysis (uncontended).
    pinned_->pins.assign(depth_, 0);
  }
  release_.emplace(pinned_);
  for (size_t i = 0; i < depth_; ++i) idle_.push_back(i);
  return absl::OkStatus();
}

absl::Status ReadFlow::StreamStripes() {
  const uint64_t first_stripe = offset_ / stripe_bytes_;
  const uint64_t last_stripe = (end_ - 1) / stripe_bytes_;
  for (uint64_t batch = first_stripe; batch <= last_stripe; batch += kStripeBatch) {
    const uint64_t count = std::min(kStripeBatch, last_stripe + 1 - batch);
    if (absl::Status s = StreamBatch(batch, count); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ReadFlow::StreamBatch(uint64_t batch, uint64_t count) {
  absl::StatusOr<std::vector<BlockRecord>> blocks =
      store_.catalog_->GetBlocks(object_.id, batch, count);
  if (!blocks.ok()) return blocks.status();
  size_t row = 0;
  for (uint64_t stripe = batch; stripe < batch + count; ++stripe) {
    if (idle_.empty()) {
      if (absl::Status s = ServeOldest(); !s.ok()) return s;
    }
    absl::StatusOr<size_t> free = TakeIdle();
    if (!free.ok()) return free.status();
    StartStripe(*free, stripe, *blocks, row);
  }
  while (!ahead_.empty()) {  // They point into `blocks`.
    if (absl::Status s = ServeOldest(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> ReadFlow::TakeIdle() {
  const size_t i = idle_.front();
  for (;;) {
    {
      MutexLock lock(pinned_->mu);
      if (pinned_->released.WaitFor(
              pinned_->mu, std::chrono::milliseconds(20),
              [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pinned_->mu) { return pinned_->pins[i] == 0; })) {
        break;
      }
    }
    // Not under pinned_->mu: the sink drops pins under its own lock.
    if (sink_.Gone()) return absl::CancelledError("the reader went away");
  }
  idle_.pop_front();
  return i;
}

void ReadFlow::StartStripe(size_t index, uint64_t stripe, const std::vector<BlockRecord>& blocks,
                           size_t& row) {
  Ahead a;
  a.index = index;
  a.buffer = &pinned_->set[a.index];
  a.stripe = stripe;
  a.by_index = TakeStripe(blocks, row, stripe, width_);
  const uint64_t base = stripe * stripe_bytes_;
  a.lo = std::max(offset_, base) - base;
  a.hi = std::min(end_, base + stripe_bytes_) - base;
  for (int i = static_cast<int>(a.lo / bs_); i <= static_cast<int>((a.hi - 1) / bs_); ++i) {
    a.need.push_back(i);
  }
  a.reads = store_.StartLoad({object_, a.stripe, codec_, a.by_index}, a.need, *a.buffer);
  ahead_.push_back(std::move(a));
}

absl::Status ReadFlow::ServeOldest() {
  Ahead a = std::move(ahead_.front());
  ahead_.pop_front();
  absl::StatusOr<std::vector<int>> wanted = store_.LoadBlocks(
      {object_, a.stripe, codec_, a.by_index}, a.need, *a.buffer, "", std::move(a.reads));
  if (!wanted.ok()) return wanted.status();
  uint32_t reconstructed = static_cast<uint32_t>(wanted->size());
  const std::shared_ptr<const void> pin = std::make_shared<const StripePin>(pinned_, a.index);
  idle_.push_back(a.index);  // Reused once the sink has let go of it.
  for (int i : a.need) {
    const uint64_t block_lo = static_cast<uint64_t>(i) * bs_;
    const uint64_t from = std::max(a.lo, block_lo) - block_lo;
    const uint64_t to = std::min(a.hi, block_lo + bs_) - block_lo;
    if (absl::Status s =
            sink_.WritePinned(a.buffer->block(i).subspan(from, to - from), reconstructed, pin);
        !s.ok()) {
      return s;
    }
    reconstructed = 0;
  }
  return absl::OkStatus();
}

absl::Status StoreCore::Read(absl::string_view name, uint64_t offset, uint64_t length,
                             ByteSink& sink, const Interrupt& interrupt) {
  ReadFlow flow(*this, name, offset, length, sink, interrupt);
  return flow.Run();
}

absl::Status StoreCore::GetBlock(absl::string_view name, uint64_t stripe, uint32_t index,
                                 ByteSink& sink, const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/false, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
  if (!found.ok()) return LookupError(found.status(), name, options_.max_name_length);
  const ObjectRecord& object = *found;
  const int m = static_cast<int>(object.data_blocks);
  const int width = m + static_cast<int>(object.parity_blocks);
  if (stripe >= object.stripe_count || index >= static_cast<uint32_t>(width)) {
    return absl::OutOfRangeError(absl::StrCat("\"", name, "\" has stripes 0..", object.stripe_count,
                                              " (exclusive) and blocks 0..", width - 1,
                                              "; asked for stripe ", stripe, " block ", index));
  }
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec =
      CodecFor(object.matrix, m, static_cast<int>(object.parity_blocks));
  if (!codec.ok()) return codec.status();
  absl::StatusOr<std::vector<BlockRecord>> blocks = catalog_->GetBlocks(object.id, stripe, 1);
  if (!blocks.ok()) return blocks.status();
  size_t row = 0;
  const std::vector<const BlockRecord*> by_index = TakeStripe(*blocks, row, stripe, width);
  absl::StatusOr<StripeSet> buffers =
      AllocateStripes({width}, object.block_size, sink.held_bytes(object.block_size), interrupt);
  if (!buffers.ok()) return buffers.status();
  StripeBuffer& buffer = (*buffers)[0];
  sink.SetObject(object);
  if (absl::Status s = sink.Start(object.block_size); !s.ok()) return FailSink(sink, s);
  absl::StatusOr<std::vector<int>> rebuilt =
      LoadBlocks({object, stripe, *codec, by_index}, {static_cast<int>(index)}, buffer, "");
  if (!rebuilt.ok()) return FailSink(sink, rebuilt.status());
  if (absl::Status s = sink.Write(buffer.block(index), static_cast<uint32_t>(rebuilt->size()));
      !s.ok()) {
    return FailSink(sink, s);
  }
  return sink.Finish(/*ok=*/true);  // While the stripe's reservation still holds.
}

}  // namespace ecd::store
