// Store::Encode: a client's bytes cut into stripes, encoded, written to M+K devices and committed.
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

absl::StatusOr<ObjectRecord> Store::Encode(const EncodeParams& params, ByteSource& source,
                                           const Interrupt& interrupt) {
  if (absl::Status s = ValidateObjectName(params.name, options_.max_name_length); !s.ok()) {
    return s;
  }
  ObjectRecord object;
  object.name = params.name;
  object.data_blocks = params.data_blocks ? params.data_blocks : options_.default_data_blocks;
  object.parity_blocks =
      params.parity_blocks ? params.parity_blocks : options_.default_parity_blocks;
  object.block_size = params.block_size ? params.block_size : options_.default_block_size;
  object.matrix = params.matrix;
  object.created_unix_ms = absl::ToUnixMillis(absl::Now());
  // Clamped so that absurd requests still get ValidateShape's message, without int overflow.
  const int m = static_cast<int>(std::min<uint32_t>(object.data_blocks, 1u << 20));
  const int k = static_cast<int>(std::min<uint32_t>(object.parity_blocks, 1u << 20));
  if (absl::Status s = ec::ValidateShape(m, k); !s.ok()) return s;
  if (absl::Status s = ec::ValidateBlockSize(object.block_size); !s.ok()) return s;
  const uint64_t stride = LbasPerBlock(object.block_size) * options_.lba_size;
  {
    std::lock_guard lock(mu_);
    size_t online = 0;
    for (const auto& d : devices_) {
      online += d->record.state == DeviceState::kOnline && d->ns != nullptr;
    }
    const size_t width = static_cast<size_t>(m) + static_cast<size_t>(k);
    if (width > devices_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          m, "+", k, " puts ", m + k, " blocks of each stripe on distinct devices, but ecd has ",
          devices_.size(), "; use fewer data or parity blocks, or start ecd with more devices"));
    }
    if (width > online) {
      return absl::FailedPreconditionError(
          absl::StrCat(m, "+", k, " needs ", m + k, " online devices but only ", online,
                       " are online; bring devices online (`ecctl device online`) or use a "
                       "narrower stripe"));
    }
  }
  if (static_cast<uint64_t>(m + k) * stride > options_.max_stripe_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a stripe of ", m + k, " x ", object.block_size, " bytes exceeds the stripe memory limit (",
        options_.max_stripe_bytes, " bytes); use a smaller --block-size"));
  }
  // Never store an object that could not be updated or repaired within the memory limit.
  if (absl::Status s = budget_->CheckFits(LeastStripeMemory(m, k, stride)); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = CodecFor(object.matrix, m, k);
  if (!codec.ok()) return codec.status();

  // Stripes pipeline: while stripe n is being filled from the source on this (the caller's)
  // thread, the stripes before it are encoded and written: the EC worker that encodes a stripe
  // also computes its blocks' CRC32C in the same pass (CreateTask::checksums) and stages them
  // for the devices (StartBlockWrites), so this thread only copies the source's bytes in. Memory is
  // at most (workers + 1 + kWritesInFlight) stripes (or stripes_in_flight) whatever the object's
  // size, taken as the source delivers: the first stripe once it has bytes (or has ended), one
  // more whenever every buffer is in use and the source has more, only if the budget has it free
  // at once (GrowStripes: waiting for more while holding some could deadlock two encodes).
  const uint64_t unit = RoundUpToPage(static_cast<uint64_t>(m + k) * stride);
  const size_t depth = budget_->Fit(
      unit, PipelineDepth(static_cast<size_t>(engine_->workers()) + 1 + kWritesInFlight, unit));
  if (absl::StatusOr<bool> more = source.Await(); !more.ok()) return more.status();
  absl::StatusOr<StripeSet> buffers = AllocateStripes({m + k}, object.block_size, 0, interrupt);
  if (!buffers.ok()) return buffers.status();

  absl::StatusOr<int64_t> id = catalog_->CreatePendingObject(object);
  if (!id.ok()) return id.status();
  object.id = *id;

  // One stripe between its submit and the end of its writes. `blocks` are placed (extents
  // allocated) before the submit; the encode's callback fills their CRCs and starts the writes,
  // then sets `started`; this thread touches blocks and write only after `started` is ready.
  struct InFlight {
    StripeBuffer* buffer = nullptr;
    std::vector<BlockRecord> blocks;
    std::vector<uint32_t> checksums;  // Of blocks, filled by the encode.
    StripeWrite write;
    std::future<absl::Status> started;
  };
  std::deque<std::unique_ptr<InFlight>> in_flight;
  std::vector<StripeBuffer*> idle;
  for (auto& b : buffers->buffers) idle.push_back(b.get());

  std::vector<BlockRecord> records;  // Written, not yet in the catalog.
  std::vector<bool> touched(devices_.size(), false);
  uint64_t unflushed = 0;  // Bytes written since the last flush (FlushEvery).
  auto fail = [&](absl::Status status) -> absl::Status {
    for (auto& f : in_flight) {
      f->started.wait();  // The engine still uses the buffer, then the writes do.
      (void)f->write.Finish();
      DiscardExtents(f->blocks);
    }
    std::vector<BlockRecord> stored;
    (void)catalog_->ForEachBlockOf(object.id, [&](const BlockRecord& b) { stored.push_back(b); });
    absl::Status deleted = catalog_->DeleteObject(object.id);
    if (deleted.ok()) DiscardExtents(stored);  // Else they stay used until the next start.
    DiscardExtents(records);
    return status;
  };
  // Waits for the oldest stripe's parity and writes; its buffer is free again.
  auto finish_oldest = [&]() -> absl::Status {
    std::unique_ptr<InFlight> f = std::move(in_flight.front());
    in_flight.pop_front();
    // With a CPU the workers leave free, run queued stripes here rather than sleep until a
    // worker has; without one, this thread would only take CPU time from the workers.
    if (engine_->spare_cpu()) engine_->Progress();
    absl::Status s = f->started.get();
    absl::Status written = f->write.Finish();
    if (s.ok()) s = written;
    if (s.ok()) s = FlushEvery(f->blocks.size() * object.block_size, unflushed, touched);
    idle.push_back(f->buffer);
    records.insert(records.end(), f->blocks.begin(), f->blocks.end());  // fail() frees them.
    if (s.ok() && records.size() >= kStripeBatch * static_cast<size_t>(m + k)) {
      s = catalog_->AddBlocks(object.id, records);
      if (s.ok()) records.clear();  // Else fail() frees them: the insert was rolled back.
    }
    return s;
  };

  uint64_t size = 0;
  uint64_t stripe = 0;
  bool eof = false;
  while (!eof) {
    if (idle.empty() && buffers->buffers.size() < depth) {
      absl::StatusOr<bool> more = source.Await();
      if (!more.ok()) return fail(more.status());
      if (*more) {
        if (StripeBuffer* grown = GrowStripes(*buffers, m + k, object.block_size)) {
          idle.push_back(grown);
        }
      }
    }
    if (idle.empty()) {
      if (absl::Status s = finish_oldest(); !s.ok()) return fail(s);
    }
    StripeBuffer& buffer = *idle.back();
    uint64_t filled = 0;
    for (int i = 0; i < m && !eof; ++i) {
      absl::Span<uint8_t> block = buffer.block(i);
      size_t at = 0;
      while (at < block.size()) {
        absl::StatusOr<size_t> n = source.Read(block.subspan(at));
        if (!n.ok()) return fail(n.status());
        if (*n == 0) {
          eof = true;
          break;
        }
        at += *n;
      }
      filled += at;
      if (at < block.size()) std::memset(block.data() + at, 0, block.size() - at);
    }
    if (filled == 0) break;
    for (int i = static_cast<int>((filled + object.block_size - 1) / object.block_size); i < m;
         ++i) {
      std::memset(buffer.block(i).data(), 0, object.block_size);  // Padding of the last stripe.
    }
    auto f = std::make_unique<InFlight>();
    f->buffer = &buffer;
    if (absl::Status s = PlaceStripe(object, stripe, f->blocks); !s.ok()) return fail(s);
    if (absl::Status s = PrepareWrites(f->blocks, touched, f->write); !s.ok()) {
      FreeExtents(f->blocks);
      return fail(s);
    }
    idle.pop_back();
    f->checksums.resize(f->blocks.size());
    ec::CreateTask task{*codec, {}, {}, absl::MakeSpan(f->checksums)};
    for (int i = 0; i < m; ++i) task.data.push_back(buffer.block(i));
    for (int j = 0; j < k; ++j) task.parity.push_back(buffer.block(m + j));
    // The callback owns the promise: this thread may drop `f` as soon as `started` is ready.
    auto started = std::make_shared<std::promise<absl::Status>>();
    f->started = started->get_future();
    InFlight* raw = f.get();
    in_flight.push_back(std::move(f));
    // On the thread that ran the encode: the CRCs and the writes of its blocks, then `started`.
    engine_->Submit(std::move(task), [this, raw, started](absl::Status s) {
      if (s.ok()) {
        StartBlockWrites(*raw->buffer, absl::MakeSpan(raw->blocks), raw->write, raw->checksums);
      }
      started->set_value(std::move(s));
    });
    size += filled;
    ++stripe;
  }
  while (!in_flight.empty()) {
    if (absl::Status s = finish_oldest(); !s.ok()) return fail(s);
  }
  if (absl::Status s = catalog_->AddBlocks(object.id, records); !s.ok()) return fail(s);
  records.clear();
  object.size = size;
  object.stripe_count = stripe;
  // Each device written gets the records of its blocks, flushed with them.
  std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
  op->SetObject(object);
  if (absl::Status s =
          catalog_->ForEachBlockOf(object.id, [&](const BlockRecord& b) { op->AddBlock(b); });
      !s.ok()) {
    return fail(s);
  }
  if (stripe == 0) {  // An empty object: its record goes on every online device.
    std::vector<uint32_t> online;
    for (uint32_t d = 0; d < devices_.size(); ++d) {
      if (DeviceOnline(d)) online.push_back(d);
    }
    op->AlsoOn(std::move(online));
  }
  if (absl::Status s = op->Write(touched); !s.ok()) return fail(s);
  // Data first, then the catalog: the commit below is the moment the object exists.
  if (absl::Status s = FlushDevices(touched); !s.ok()) return fail(s);
  if (absl::Status s = source.BeforeCommit(); !s.ok()) return fail(s);
  if (absl::Status s = catalog_->CommitObject(object.id, size, stripe, op->seq()); !s.ok()) {
    return fail(s);
  }
  op->Commit();
  CountStripes(object.parity_blocks, static_cast<int64_t>(stripe));
  return object;
}

}  // namespace ecd::store
