// Store::Read and Store::GetBlock: an object's bytes (degraded where a block is bad), and one
// block as stored.
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
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
#include "lib/store/store.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"

namespace ecd::store {

namespace {

// Finishes a sink whose read failed with `status`, and returns that status.
absl::Status FailSink(ByteSink& sink, absl::Status status) {
  (void)sink.Finish(/*ok=*/false);
  return status;
}

}  // namespace

absl::Status Store::Read(absl::string_view name, uint64_t offset, uint64_t length, ByteSink& sink,
                         const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/false, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
  if (!found.ok()) return LookupError(found.status(), name, options_.max_name_length);
  const ObjectRecord& object = *found;
  if (offset > object.size) {
    return absl::OutOfRangeError(absl::StrCat("offset ", offset, " is past the end of \"", name,
                                              "\" (", object.size, " bytes)"));
  }
  const uint64_t end = length == 0 || length > object.size - offset ? object.size : offset + length;
  sink.SetObject(object);
  if (absl::Status s = sink.Start(object.size); !s.ok()) return FailSink(sink, s);
  if (offset == end) return sink.Finish(/*ok=*/true);

  const int m = static_cast<int>(object.data_blocks);
  const int width = m + static_cast<int>(object.parity_blocks);
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec =
      CodecFor(object.matrix, m, static_cast<int>(object.parity_blocks));
  if (!codec.ok()) return FailSink(sink, codec.status());
  const uint64_t bs = object.block_size;
  const uint64_t stripe_bytes = bs * static_cast<uint64_t>(m);
  // Read-ahead: while one stripe's bytes go to the sink, the blocks of the next kReadAhead
  // stripes (stripes_in_flight - 1) are being read.
  // The sink's own buffers are reserved with the stripes, and it is finished (below) while
  // they still are.
  // No more stripes than the read touches.
  const uint64_t held = sink.held_bytes(end - offset);
  const uint64_t unit =
      RoundUpToPage(static_cast<uint64_t>(width) * LbasPerBlock(bs) * options_.lba_size);
  const uint64_t touched = (end - 1) / stripe_bytes - offset / stripe_bytes + 1;
  const size_t depth = budget_->Fit(
      unit, static_cast<size_t>(std::min<uint64_t>(PipelineDepth(kReadAhead + 1, unit), touched)),
      held);
  absl::StatusOr<StripeSet> buffers =
      AllocateStripes(std::vector<int>(depth, width), bs, held, interrupt);
  if (!buffers.ok()) return FailSink(sink, buffers.status());
  // The buffers are shared with the sink's pins (ByteSink::WritePinned): a buffer is read into
  // again only once no pin of it is left, and the set lives until the last pin is gone, which
  // may be after this read.
  struct Pinned {
    explicit Pinned(Store* store) : store(store) {
      std::lock_guard lock(store->pinned_mu_);
      ++store->pinned_sets_;
    }
    ~Pinned() {
      { StripeSet gone = std::move(set); }  // Memory and budget back before ~Store may go on.
      std::lock_guard lock(store->pinned_mu_);
      if (outlived) --store->outlived_sets_;
      if (--store->pinned_sets_ == 0) store->pinned_gone_.notify_all();
    }
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;
    Store* const store;
    StripeSet set;
    std::mutex mu;
    std::condition_variable released;
    std::vector<int> pins;  // Live pins per buffer. Guarded by mu.
    bool outlived = false;  // The read returned before the last pin went. Guarded by pinned_mu_.
  };
  struct Pin {
    Pin(std::shared_ptr<Pinned> of, size_t buffer) : of(std::move(of)), buffer(buffer) {
      std::lock_guard lock(this->of->mu);
      ++this->of->pins[buffer];
    }
    ~Pin() {
      {
        std::lock_guard lock(of->mu);
        --of->pins[buffer];
      }
      of->released.notify_all();
    }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    const std::shared_ptr<Pinned> of;
    const size_t buffer;
  };
  auto pinned = std::make_shared<Pinned>(this);
  pinned->set = *std::move(buffers);
  pinned->pins.assign(depth, 0);
  // When the read returns (after the sink's Finish, every pin made), the set is counted as
  // outliving it if a pin still holds it.
  struct Leave {
    ~Leave() {
      {
        std::lock_guard lock(pinned->store->pinned_mu_);
        if (pinned.use_count() > 1) {
          pinned->outlived = true;
          ++pinned->store->outlived_sets_;
        }
      }
      pinned.reset();  // Not under pinned_mu_: the last owner's ~Pinned takes it.
    }
    std::shared_ptr<Pinned>& pinned;
  } leave{pinned};
  std::deque<size_t> idle;  // Oldest first: its pins are the likeliest to be gone.
  for (size_t i = 0; i < depth; ++i) idle.push_back(i);
  // Takes the oldest idle buffer, once the sink holds no pin of it; CANCELLED if the sink's
  // reader goes away meanwhile (its pins may then go only after this read has returned).
  auto take_idle = [&]() -> absl::StatusOr<size_t> {
    const size_t i = idle.front();
    for (;;) {
      {
        std::unique_lock lock(pinned->mu);
        if (pinned->released.wait_for(lock, std::chrono::milliseconds(20),
                                      [&] { return pinned->pins[i] == 0; })) {
          break;
        }
      }
      // Not under pinned->mu: the sink drops pins under its own lock.
      if (sink.Gone()) return absl::CancelledError("the reader went away");
    }
    idle.pop_front();
    return i;
  };
  struct Ahead {
    size_t index;
    StripeBuffer* buffer;
    uint64_t stripe;
    std::vector<const BlockRecord*> by_index;
    uint64_t lo, hi;  // The bytes of the stripe's data to serve.
    std::vector<int> need;
    std::unique_ptr<BlockReads> reads;
  };
  std::deque<Ahead> ahead;  // After `buffers`: destroyed first, waiting for its reads.
  // Completes the oldest stripe's blocks (rebuilding what is bad) and sends its bytes.
  auto serve_oldest = [&]() -> absl::Status {
    Ahead a = std::move(ahead.front());
    ahead.pop_front();
    absl::StatusOr<std::vector<int>> wanted =
        LoadBlocks(object, a.stripe, *codec, a.by_index, a.need, *a.buffer, "", std::move(a.reads));
    if (!wanted.ok()) return wanted.status();
    uint32_t reconstructed = static_cast<uint32_t>(wanted->size());
    const std::shared_ptr<const void> pin = std::make_shared<const Pin>(pinned, a.index);
    idle.push_back(a.index);  // Reused once the sink has let go of it.
    for (int i : a.need) {
      const uint64_t block_lo = static_cast<uint64_t>(i) * bs;
      const uint64_t from = std::max(a.lo, block_lo) - block_lo;
      const uint64_t to = std::min(a.hi, block_lo + bs) - block_lo;
      if (absl::Status s =
              sink.WritePinned(a.buffer->block(i).subspan(from, to - from), reconstructed, pin);
          !s.ok()) {
        return s;
      }
      reconstructed = 0;
    }
    return absl::OkStatus();
  };

  const uint64_t first_stripe = offset / stripe_bytes;
  const uint64_t last_stripe = (end - 1) / stripe_bytes;
  absl::Status streamed = [&]() -> absl::Status {
    for (uint64_t batch = first_stripe; batch <= last_stripe; batch += kStripeBatch) {
      const uint64_t count = std::min(kStripeBatch, last_stripe + 1 - batch);
      absl::StatusOr<std::vector<BlockRecord>> blocks =
          catalog_->GetBlocks(object.id, batch, count);
      if (!blocks.ok()) return blocks.status();
      size_t row = 0;
      for (uint64_t stripe = batch; stripe < batch + count; ++stripe) {
        if (idle.empty()) {
          if (absl::Status s = serve_oldest(); !s.ok()) return s;
        }
        absl::StatusOr<size_t> free = take_idle();
        if (!free.ok()) return free.status();
        Ahead a;
        a.index = *free;
        a.buffer = &pinned->set[a.index];
        a.stripe = stripe;
        a.by_index = TakeStripe(*blocks, row, stripe, width);
        const uint64_t base = stripe * stripe_bytes;
        a.lo = std::max(offset, base) - base;
        a.hi = std::min(end, base + stripe_bytes) - base;
        for (int i = static_cast<int>(a.lo / bs); i <= static_cast<int>((a.hi - 1) / bs); ++i) {
          a.need.push_back(i);
        }
        a.reads = StartLoad(object, a.by_index, a.need, *a.buffer);
        ahead.push_back(std::move(a));
      }
      while (!ahead.empty()) {  // They point into `blocks`.
        if (absl::Status s = serve_oldest(); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }();
  if (!streamed.ok()) return FailSink(sink, streamed);
  return sink.Finish(/*ok=*/true);
}

absl::Status Store::GetBlock(absl::string_view name, uint64_t stripe, uint32_t index,
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
      LoadBlocks(object, stripe, *codec, by_index, {static_cast<int>(index)}, buffer, "");
  if (!rebuilt.ok()) return FailSink(sink, rebuilt.status());
  if (absl::Status s = sink.Write(buffer.block(index), static_cast<uint32_t>(rebuilt->size()));
      !s.ok()) {
    return FailSink(sink, s);
  }
  return sink.Finish(/*ok=*/true);  // While the stripe's reservation still holds.
}

}  // namespace ecd::store
