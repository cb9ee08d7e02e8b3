// Store::Encode: a client's bytes cut into stripes, encoded, written to M+K devices and committed.
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

// One call of Store::Encode: the request, its stripe buffers and the stripes in flight, with a
// method per phase. The phases run in Run's order, each once (EncodeStripes loops over the
// stripes). Until Begin has created the pending object an error leaves nothing behind; from
// then on every method that fails has already dropped the object (Fail) before it returns.
// Errors are those of Store::Encode.
class EncodeFlow {
 public:
  // REQUIRES: every argument outlives the flow.
  EncodeFlow(StoreCore& store, const EncodeParams& params, ByteSource& source,
             const Interrupt& interrupt)
      : store_(store), params_(params), source_(source), interrupt_(interrupt) {}

  // Stores the object and returns its record as committed. REQUIRES: called once.
  absl::StatusOr<ObjectRecord> Run();

 private:
  // One stripe between its submit and the end of its writes. `blocks` are placed (extents
  // allocated) before the submit; the encode's callback fills their CRCs and starts the writes,
  // then sets `started`; this thread touches blocks and write only after `started` is ready.
  struct InFlight {
    StripeBuffer* buffer = nullptr;
    std::vector<BlockRecord> blocks;
    std::vector<uint32_t> checksums;  // Of blocks, filled by the encode.
    StoreCore::StripeWrite write;
    std::future<absl::Status> started;
  };

  // Validates the name and fills object_ (defaults applied), m_, k_ and stride_.
  // InvalidArgument for a bad name, shape or block size.
  absl::Status ResolveShape();
  // InvalidArgument when the store has fewer than M+K devices, FailedPrecondition when fewer
  // are online. Takes the store's mutex. REQUIRES: ResolveShape succeeded.
  absl::Status CheckDevices();
  // Refuses a stripe over max_stripe_bytes (InvalidArgument) or an object the memory budget
  // could not update or repair; sets codec_. REQUIRES: CheckDevices succeeded.
  absl::Status CheckLimits();
  // Waits for the source's first bytes (or its end), reserves and allocates the first stripe
  // buffer (waiting until interrupt_ fires), then creates the pending object. An error leaves
  // nothing behind. REQUIRES: CheckLimits succeeded.
  absl::Status Begin();
  // Fills, encodes and writes stripes until the source ends. On error, Fail has run.
  absl::Status EncodeStripes();
  // Makes idle_ non-empty: grows the buffers while the source has more and the budget allows,
  // else waits for the oldest stripe (FinishOldest). On error, Fail has run.
  absl::Status MakeRoom();
  // Reads up to M blocks of the source into `buffer`, zero-padding the last stripe; returns
  // the bytes read (0: the source had ended) and sets eof_ at the end. On error, Fail has run.
  absl::StatusOr<uint64_t> FillStripe(StripeBuffer& buffer);
  // Places stripe stripe_ of `buffer` (taken from idle_), then submits its encode, whose
  // callback starts its writes. On error, Fail has run.
  absl::Status SubmitStripe(StripeBuffer& buffer);
  // Waits for the oldest stripe's parity and writes; its buffer is idle again and its blocks go
  // to records_ (added to the catalog by batches). Its error is returned, Fail not run.
  // REQUIRES: in_flight_ not empty.
  absl::Status FinishOldest();
  // Finishes every stripe in flight and adds the last block records. On error, Fail has run.
  absl::Status Drain();
  // Writes the block records and flushes the devices written, then commits the object: the
  // moment it exists. On error, Fail has run. REQUIRES: Drain succeeded.
  absl::Status Commit();
  // Drops the pending object: waits for the stripes in flight, deletes the object's rows and
  // discards its extents. Returns `status`. REQUIRES: Begin succeeded.
  absl::Status Fail(absl::Status status);

  StoreCore& store_;
  const EncodeParams& params_;
  ByteSource& source_;
  const Interrupt& interrupt_;
  ObjectRecord object_;
  int m_ = 0;
  int k_ = 0;
  uint64_t stride_ = 0;
  std::shared_ptr<const ec::Codec> codec_;
  size_t depth_ = 0;  // Stripe buffers the pipeline may grow to.
  absl::StatusOr<StripeSet> buffers_;
  // After buffers_, so destroyed first: a stripe's writes end before its buffer goes.
  std::deque<std::unique_ptr<InFlight>> in_flight_;
  std::vector<StripeBuffer*> idle_;
  std::vector<BlockRecord> records_;  // Written, not yet in the catalog.
  std::vector<bool> touched_;
  uint64_t unflushed_ = 0;  // Bytes written since the last flush (FlushEvery).
  uint64_t size_ = 0;
  uint64_t stripe_ = 0;
  bool eof_ = false;
};

absl::StatusOr<ObjectRecord> EncodeFlow::Run() {
  if (absl::Status s = ResolveShape(); !s.ok()) return s;
  if (absl::Status s = CheckDevices(); !s.ok()) return s;
  if (absl::Status s = CheckLimits(); !s.ok()) return s;
  if (absl::Status s = Begin(); !s.ok()) return s;
  if (absl::Status s = EncodeStripes(); !s.ok()) return s;
  if (absl::Status s = Drain(); !s.ok()) return s;
  if (absl::Status s = Commit(); !s.ok()) return s;
  return std::move(object_);
}

absl::Status EncodeFlow::ResolveShape() {
  const StoreOptions& options = store_.options_;
  if (absl::Status s = ValidateObjectName(params_.name, options.max_name_length); !s.ok()) {
    return s;
  }
  object_.name = params_.name;
  object_.data_blocks = params_.data_blocks ? params_.data_blocks : options.default_data_blocks;
  object_.parity_blocks =
      params_.parity_blocks ? params_.parity_blocks : options.default_parity_blocks;
  object_.block_size = params_.block_size ? params_.block_size : options.default_block_size;
  object_.matrix = params_.matrix;
  object_.created_unix_ms = absl::ToUnixMillis(absl::Now());
  // Clamped so that absurd requests still get ValidateShape's message, without int overflow.
  m_ = static_cast<int>(std::min<uint32_t>(object_.data_blocks, 1u << 20));
  k_ = static_cast<int>(std::min<uint32_t>(object_.parity_blocks, 1u << 20));
  if (absl::Status s = ec::ValidateShape(m_, k_); !s.ok()) return s;
  if (absl::Status s = ec::ValidateBlockSize(object_.block_size); !s.ok()) return s;
  stride_ = store_.LbasPerBlock(object_.block_size) * options.lba_size;
  return absl::OkStatus();
}

absl::Status EncodeFlow::CheckDevices() {
  const int m = m_;
  const int k = k_;
  MutexLock lock(store_.mu_);
  size_t online = 0;
  for (const auto& d : store_.devices_) {
    online += d->record.state == DeviceState::kOnline && d->ns != nullptr;
  }
  const size_t width = static_cast<size_t>(m) + static_cast<size_t>(k);
  if (width > store_.devices_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        m, "+", k, " puts ", m + k, " blocks of each stripe on distinct devices, but ecd has ",
        store_.devices_.size(),
        "; use fewer data or parity blocks, or start ecd with more devices"));
  }
  if (width > online) {
    return absl::FailedPreconditionError(
        absl::StrCat(m, "+", k, " needs ", m + k, " online devices but only ", online,
                     " are online; bring devices online (`ecctl device online`) or use a "
                     "narrower stripe"));
  }
  return absl::OkStatus();
}

absl::Status EncodeFlow::CheckLimits() {
  const uint64_t max_stripe_bytes = store_.options_.max_stripe_bytes;
  if (static_cast<uint64_t>(m_ + k_) * stride_ > max_stripe_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a stripe of ", m_ + k_, " x ", object_.block_size,
                     " bytes exceeds the stripe memory limit (", max_stripe_bytes,
                     " bytes); use a smaller --block-size"));
  }
  // Never store an object that could not be updated or repaired within the memory limit.
  if (absl::Status s = store_.budget_->CheckFits(LeastStripeMemory(m_, k_, stride_)); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = store_.CodecFor(object_.matrix, m_, k_);
  if (!codec.ok()) return codec.status();
  codec_ = *std::move(codec);
  return absl::OkStatus();
}

// Stripes pipeline: while stripe n is being filled from the source on this (the caller's)
// thread, the stripes before it are encoded and written: the EC worker that encodes a stripe
// also computes its blocks' CRC32C in the same pass (CreateTask::checksums) and stages them
// for the devices (StartBlockWrites), so this thread only copies the source's bytes in. Memory is
// at most (workers + 1 + kWritesInFlight) stripes (or stripes_in_flight) whatever the object's
// size, taken as the source delivers: the first stripe once it has bytes (or has ended), one
// more whenever every buffer is in use and the source has more, only if the budget has it free
// at once (GrowStripes: waiting for more while holding some could deadlock two encodes).
absl::Status EncodeFlow::Begin() {
  const uint64_t unit = RoundUpToPage(static_cast<uint64_t>(m_ + k_) * stride_);
  depth_ = store_.budget_->Fit(
      unit, store_.PipelineDepth(
                static_cast<size_t>(store_.engine_->workers()) + 1 + kWritesInFlight, unit));
  if (absl::StatusOr<bool> more = source_.Await(); !more.ok()) return more.status();
  buffers_ = store_.AllocateStripes({m_ + k_}, object_.block_size, 0, interrupt_);
  if (!buffers_.ok()) return buffers_.status();

  absl::StatusOr<int64_t> id = store_.catalog_->CreatePendingObject(object_);
  if (!id.ok()) return id.status();
  object_.id = *id;

  for (auto& b : buffers_->buffers) idle_.push_back(b.get());
  touched_.assign(store_.devices_.size(), false);
  return absl::OkStatus();
}

absl::Status EncodeFlow::EncodeStripes() {
  while (!eof_) {
    if (absl::Status s = MakeRoom(); !s.ok()) return s;
    StripeBuffer& buffer = *idle_.back();
    absl::StatusOr<uint64_t> filled = FillStripe(buffer);
    if (!filled.ok()) return filled.status();
    if (*filled == 0) break;
    if (absl::Status s = SubmitStripe(buffer); !s.ok()) return s;
    size_ += *filled;
    ++stripe_;
  }
  return absl::OkStatus();
}

absl::Status EncodeFlow::MakeRoom() {
  if (idle_.empty() && buffers_->buffers.size() < depth_) {
    absl::StatusOr<bool> more = source_.Await();
    if (!more.ok()) return Fail(more.status());
    if (*more) {
      if (StripeBuffer* grown = store_.GrowStripes(*buffers_, m_ + k_, object_.block_size)) {
        idle_.push_back(grown);
      }
    }
  }
  if (idle_.empty()) {
    if (absl::Status s = FinishOldest(); !s.ok()) return Fail(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> EncodeFlow::FillStripe(StripeBuffer& buffer) {
  uint64_t filled = 0;
  for (int i = 0; i < m_ && !eof_; ++i) {
    absl::Span<uint8_t> block = buffer.block(i);
    size_t at = 0;
    while (at < block.size()) {
      absl::StatusOr<size_t> n = source_.Read(block.subspan(at));
      if (!n.ok()) return Fail(n.status());
      if (*n == 0) {
        eof_ = true;
        break;
      }
      at += *n;
    }
    filled += at;
    if (at < block.size()) std::memset(block.data() + at, 0, block.size() - at);
  }
  if (filled == 0) return filled;
  for (int i = static_cast<int>((filled + object_.block_size - 1) / object_.block_size); i < m_;
       ++i) {
    std::memset(buffer.block(i).data(), 0, object_.block_size);  // Padding of the last stripe.
  }
  return filled;
}

absl::Status EncodeFlow::SubmitStripe(StripeBuffer& buffer) {
  auto f = std::make_unique<InFlight>();
  f->buffer = &buffer;
  if (absl::Status s = store_.PlaceStripe(object_, stripe_, f->blocks); !s.ok()) return Fail(s);
  if (absl::Status s = store_.PrepareWrites(f->blocks, touched_, f->write); !s.ok()) {
    store_.FreeExtents(f->blocks);
    return Fail(s);
  }
  idle_.pop_back();
  f->checksums.resize(f->blocks.size());
  ec::CreateTask task{codec_, {}, {}, absl::MakeSpan(f->checksums)};
  for (int i = 0; i < m_; ++i) task.data.push_back(buffer.block(i));
  for (int j = 0; j < k_; ++j) task.parity.push_back(buffer.block(m_ + j));
  // The callback owns the promise: this thread may drop `f` as soon as `started` is ready.
  auto started = std::make_shared<std::promise<absl::Status>>();
  f->started = started->get_future();
  InFlight* raw = f.get();
  in_flight_.push_back(std::move(f));
  // On the thread that ran the encode: the CRCs and the writes of its blocks, then `started`.
  store_.engine_->Submit(std::move(task), [store = &store_, raw, started](absl::Status s) {
    if (s.ok()) {
      store->StartBlockWrites(*raw->buffer, absl::MakeSpan(raw->blocks), raw->write,
                              raw->checksums);
    }
    started->set_value(std::move(s));
  });
  return absl::OkStatus();
}

absl::Status EncodeFlow::FinishOldest() {
  std::unique_ptr<InFlight> f = std::move(in_flight_.front());
  in_flight_.pop_front();
  // With a CPU the workers leave free, run queued stripes here rather than sleep until a
  // worker has; without one, this thread would only take CPU time from the workers.
  if (store_.engine_->spare_cpu()) store_.engine_->Progress();
  absl::Status s = f->started.get();
  absl::Status written = f->write.Finish();
  if (s.ok()) s = written;
  if (s.ok()) s = store_.FlushEvery(f->blocks.size() * object_.block_size, unflushed_, touched_);
  idle_.push_back(f->buffer);
  records_.insert(records_.end(), f->blocks.begin(), f->blocks.end());  // Fail() frees them.
  if (s.ok() && records_.size() >= kStripeBatch * static_cast<size_t>(m_ + k_)) {
    s = store_.catalog_->AddBlocks(object_.id, records_);
    if (s.ok()) records_.clear();  // Else Fail() frees them: the insert was rolled back.
  }
  return s;
}

absl::Status EncodeFlow::Drain() {
  while (!in_flight_.empty()) {
    if (absl::Status s = FinishOldest(); !s.ok()) return Fail(s);
  }
  if (absl::Status s = store_.catalog_->AddBlocks(object_.id, records_); !s.ok()) return Fail(s);
  records_.clear();
  return absl::OkStatus();
}

absl::Status EncodeFlow::Commit() {
  object_.size = size_;
  object_.stripe_count = stripe_;
  // Each device written gets the records of its blocks, flushed with them.
  std::unique_ptr<RecordKeeper::Op> op = store_.records_->NewOp();
  op->SetObject(object_);
  if (absl::Status s = store_.catalog_->ForEachBlockOf(
          object_.id, [&](const BlockRecord& b) { op->AddBlock(b); });
      !s.ok()) {
    return Fail(s);
  }
  if (stripe_ == 0) {  // An empty object: its record goes on every online device.
    std::vector<uint32_t> online;
    for (uint32_t d = 0; d < store_.devices_.size(); ++d) {
      if (store_.DeviceOnline(d)) online.push_back(d);
    }
    op->AlsoOn(std::move(online));
  }
  if (absl::Status s = op->Write(touched_); !s.ok()) return Fail(s);
  // Data first, then the catalog: the commit below is the moment the object exists.
  if (absl::Status s = store_.FlushDevices(touched_); !s.ok()) return Fail(s);
  if (absl::Status s = source_.BeforeCommit(); !s.ok()) return Fail(s);
  if (absl::Status s = store_.catalog_->CommitObject(object_.id, size_, stripe_, op->seq());
      !s.ok()) {
    if (!IsCommitOutcomeUnknown(s)) return Fail(s);
    op->LeaveUnresolved();  // The object may exist: its blocks stay allocated.
    return s;
  }
  op->Commit();
  store_.CountStripes(object_.parity_blocks, static_cast<int64_t>(stripe_));
  store_.CountObjects(1, static_cast<int64_t>(size_));
  return absl::OkStatus();
}

absl::Status EncodeFlow::Fail(absl::Status status) {
  for (auto& f : in_flight_) {
    f->started.wait();  // The engine still uses the buffer, then the writes do.
    (void)f->write.Finish();
    store_.DiscardExtents(f->blocks);
  }
  std::vector<BlockRecord> stored;
  (void)store_.catalog_->ForEachBlockOf(object_.id,
                                        [&](const BlockRecord& b) { stored.push_back(b); });
  absl::Status deleted = store_.catalog_->DeleteObject(object_.id);
  if (deleted.ok()) store_.DiscardExtents(stored);  // Else they stay used until the next start.
  store_.DiscardExtents(records_);
  return status;
}

absl::StatusOr<ObjectRecord> StoreCore::Encode(const EncodeParams& params, ByteSource& source,
                                               const Interrupt& interrupt) {
  EncodeFlow flow(*this, params, source, interrupt);
  return flow.Run();
}

}  // namespace ecd::store
