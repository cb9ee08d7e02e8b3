// Store::Update: a partial overwrite or append, written copy-on-write with parity deltas and
// committed as a new version.
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

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

namespace ecd::store {

// One call of Store::Update: the request, the object as found, the two stripe buffers and what
// the call has written so far. Run does it all, once. Nothing uncommitted is in the catalog, so
// on any error after the first write, giving back the new extents (Abandon) undoes everything.
// REQUIRES: `name`, `data` and `interrupt` outlive the flow; the flow is used by one thread.
class UpdateFlow {
 public:
  UpdateFlow(StoreCore& store, absl::string_view name, uint64_t offset, ByteSource& data,
             bool append, const Interrupt& interrupt)
      : store_(store),
        name_(name),
        offset_(offset),
        data_(data),
        append_(append),
        interrupt_(interrupt) {}

  // Store::Update, with its errors and results (store.h).
  absl::StatusOr<UpdateResult> Run();

 private:
  // Waits for the source's first bytes, then takes the object's lock, looks the object up,
  // checks the offset and takes the codec and two stripes of memory. Errors (from the source,
  // the lock wait, the lookup, OutOfRange for an offset past the end, the codec or the memory
  // wait) leave nothing to undo.
  absl::Status Begin();
  // Takes the source's bytes stripe by stripe and writes each touched stripe to new extents
  // (recorded in replaced_ and added_, the old ones in superseded_). OutOfRange for bytes past
  // the end without append; else the first error of a read, the engine, a load or a write.
  // REQUIRES: Begin succeeded. On error the new extents are still to be given back (Abandon).
  absl::Status WriteStripes();
  // Reads the source into the data blocks of fresh_ from byte `lo` of the stripe, until the
  // stripe is full or the source ends (then sets eof_). Returns where the bytes read end; `lo`
  // when there were none. Errors are the source's.
  absl::StatusOr<uint64_t> Fill(uint64_t lo);
  // A stripe past the object's old end, filled by the source up to byte `hi`: zero-fills the
  // rest of its data, encodes it and writes it on newly placed extents (added_), then
  // FlushEvery. Errors are the engine's, the placement's, the writes' or the flush's.
  absl::Status AppendStripe(uint64_t stripe, uint64_t hi);
  // An existing stripe whose data bytes [lo, hi) came from the source: computes its new blocks
  // (encoded fresh when overwritten whole, else through the parity delta) and writes each
  // changed block to a new extent (WriteCopies), then FlushEvery. Errors are the catalog's, the
  // engine's, LoadBlocks' (DataLoss), WriteCopies' or the flush's.
  absl::Status UpdateStripe(uint64_t stripe, uint64_t lo, uint64_t hi);
  // Encodes the M data blocks of fresh_ into its K parity blocks. Errors are the engine's.
  absl::Status EncodeFresh();
  // The parity delta of a stripe overwritten in part (bytes [lo, hi) in fresh_): loads the old
  // changed data blocks and the old parity into old_ (rebuilt from the stripe when bad), merges
  // the old bytes around [lo, hi) into fresh_ and runs the EC update into fresh_'s parity. Sets
  // `need` to the blocks to rewrite: the changed data blocks, then the parity. DataLoss when the
  // old blocks cannot be loaded; else the engine's errors.
  absl::Status UpdateParity(uint64_t stripe, uint64_t lo, uint64_t hi,
                            const std::vector<const BlockRecord*>& by_index,
                            std::vector<int>& need);
  // Copy-on-write: writes blocks `need` of fresh_ to new extents (replaced_, marked in
  // touched_), the live ones (superseded_) untouched. DataLoss when the catalog has no block for
  // one of them; AllocateCopy's errors; Unavailable when a device is gone; the write's errors.
  absl::Status WriteCopies(uint64_t stripe, const std::vector<const BlockRecord*>& by_index,
                           const std::vector<int>& need);
  // Writes the new version's block records, flushes every touched device, lets the source
  // confirm its end (ByteSource::BeforeCommit) and commits the new blocks, size, stripe count
  // and version to the catalog. REQUIRES: WriteStripes succeeded with bytes written. On error
  // nothing is committed (the new extents are still to be given back).
  absl::Status Commit();
  // After the commit: counts the new stripes, punches and frees the old extents, and sets
  // result_.object to the object as committed.
  void Finish();
  // Gives back every new extent (DiscardExtents) and returns `status`.
  absl::Status Abandon(absl::Status status);

  StoreCore& store_;
  const absl::string_view name_;
  const uint64_t offset_;
  ByteSource& data_;
  const bool append_;
  const Interrupt& interrupt_;

  std::optional<ObjectLocks::Guard> guard_;  // The object's, exclusive.
  ObjectRecord object_;                      // As found.
  int m_ = 0;
  int k_ = 0;
  int width_ = 0;
  std::shared_ptr<const ec::Codec> codec_;
  uint64_t bs_ = 0;
  uint64_t stripe_bytes_ = 0;
  absl::StatusOr<StripeSet> buffers_;
  // `old_` holds a stripe's current blocks as read; `fresh_` its new data and parity blocks.
  StripeBuffer* old_ = nullptr;
  StripeBuffer* fresh_ = nullptr;

  UpdateResult result_;
  std::vector<BlockRecord> replaced_;    // New extents of rewritten blocks, to commit.
  std::vector<BlockRecord> superseded_;  // Their old extents, freed after the commit.
  std::vector<BlockRecord> added_;       // Blocks of appended stripes, to commit.
  std::vector<bool> touched_;
  uint64_t unflushed_ = 0;  // Bytes written since the last flush (FlushEvery).
  uint64_t limit_ = 0;      // The end no byte may pass: the object's, or none with append.
  uint64_t pos_ = 0;        // The object offset of the next byte of `data_`.
  bool eof_ = false;        // The source has ended.
  uint64_t size_ = 0;       // The new version's size and stripe count (Commit).
  uint64_t stripes_ = 0;
  // The commit's block records; last, so that an uncommitted one is voided after the new
  // extents are given back and before the memory and the lock go.
  std::unique_ptr<RecordKeeper::Op> op_;
};

absl::StatusOr<UpdateResult> UpdateFlow::Run() {
  if (absl::Status s = Begin(); !s.ok()) return s;
  if (absl::Status s = WriteStripes(); !s.ok()) return Abandon(std::move(s));
  if (result_.bytes_written == 0) {
    result_.object = object_;
    return std::move(result_);
  }
  if (absl::Status s = Commit(); !s.ok()) return Abandon(std::move(s));
  Finish();
  return std::move(result_);
}

absl::Status UpdateFlow::Begin() {
  // The object's lock and the stripes' memory are taken once the source has bytes: a source
  // that sends nothing holds neither.
  if (absl::StatusOr<bool> more = data_.Await(); !more.ok()) return more.status();
  guard_.emplace(*store_.locks_, name_, /*exclusive=*/true, interrupt_);
  if (!guard_->status().ok()) return guard_->status();
  absl::StatusOr<ObjectRecord> found = store_.catalog_->GetObject(name_);
  if (!found.ok()) return LookupError(found.status(), name_, store_.options_.max_name_length);
  object_ = *found;
  if (offset_ > object_.size) {
    return absl::OutOfRangeError(
        absl::StrCat("offset ", offset_, " is past the end of \"", name_, "\" (", object_.size,
                     " bytes); an update starts inside the object, or at its end (", object_.size,
                     ") with append"));
  }
  m_ = static_cast<int>(object_.data_blocks);
  k_ = static_cast<int>(object_.parity_blocks);
  width_ = m_ + k_;
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = store_.CodecFor(object_.matrix, m_, k_);
  if (!codec.ok()) return codec.status();
  codec_ = *std::move(codec);
  bs_ = object_.block_size;
  stripe_bytes_ = bs_ * static_cast<uint64_t>(m_);
  buffers_ = store_.AllocateStripes({width_, width_}, bs_, 0, interrupt_);
  if (!buffers_.ok()) return buffers_.status();
  old_ = &(*buffers_)[0];
  fresh_ = &(*buffers_)[1];
  touched_.assign(store_.devices_.size(), false);
  limit_ = append_ ? std::numeric_limits<uint64_t>::max() : object_.size;
  pos_ = offset_;
  return absl::OkStatus();
}

absl::Status UpdateFlow::WriteStripes() {
  for (uint64_t stripe = offset_ / stripe_bytes_; !eof_; ++stripe) {
    const uint64_t base = stripe * stripe_bytes_;
    const uint64_t lo = pos_ - base;
    absl::StatusOr<uint64_t> hi = Fill(lo);  // The source's bytes are [lo, hi) of the stripe.
    if (!hi.ok()) return hi.status();
    if (*hi == lo) break;
    if (base + *hi > limit_) {
      return absl::OutOfRangeError(absl::StrCat(
          "the update runs past the end of \"", name_, "\" (", object_.size,
          " bytes); nothing was changed. Send at most ", object_.size - offset_,
          " bytes from offset ", offset_, ", or pass append (`ecctl update --append`) to grow it"));
    }
    pos_ = base + *hi;
    result_.bytes_written += *hi - lo;
    if (stripe >= object_.stripe_count) {  // Past the old end (lo is 0): encode it fresh.
      if (absl::Status s = AppendStripe(stripe, *hi); !s.ok()) return s;
      ++result_.stripes_appended;
    } else {
      if (absl::Status s = UpdateStripe(stripe, lo, *hi); !s.ok()) return s;
      ++result_.stripes_updated;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> UpdateFlow::Fill(uint64_t lo) {
  uint64_t hi = lo;
  while (hi < stripe_bytes_) {
    absl::StatusOr<size_t> n =
        data_.Read(fresh_->block(static_cast<int>(hi / bs_)).subspan(hi % bs_));
    if (!n.ok()) return n.status();
    if (*n == 0) {
      eof_ = true;
      break;
    }
    hi += *n;
  }
  return hi;
}

absl::Status UpdateFlow::AppendStripe(uint64_t stripe, uint64_t hi) {
  StripeBuffer& fresh = *fresh_;
  const int last = static_cast<int>((hi - 1) / bs_);
  std::memset(fresh.block(last).data() + (hi - static_cast<uint64_t>(last) * bs_), 0,
              static_cast<uint64_t>(last + 1) * bs_ - hi);
  for (int i = last + 1; i < m_; ++i) std::memset(fresh.block(i).data(), 0, bs_);
  if (absl::Status s = EncodeFresh(); !s.ok()) return s;
  if (absl::Status s = store_.WriteStripe(object_, stripe, fresh, added_, touched_); !s.ok()) {
    return s;
  }
  return store_.FlushEvery(static_cast<uint64_t>(width_) * bs_, unflushed_, touched_);
}

absl::Status UpdateFlow::UpdateStripe(uint64_t stripe, uint64_t lo, uint64_t hi) {
  // Overwritten whole: encoded fresh, nothing read. Otherwise the old touched data blocks and
  // the old parity in, the delta through the engine.
  absl::StatusOr<std::vector<BlockRecord>> rows = store_.catalog_->GetBlocks(object_.id, stripe, 1);
  if (!rows.ok()) return rows.status();
  size_t row = 0;
  const std::vector<const BlockRecord*> by_index = TakeStripe(*rows, row, stripe, width_);
  std::vector<int> need;  // The blocks rewritten: the changed data blocks and the parity.
  if (lo == 0 && hi == stripe_bytes_) {
    for (int i = 0; i < width_; ++i) need.push_back(i);
    if (absl::Status s = EncodeFresh(); !s.ok()) return s;
  } else if (absl::Status s = UpdateParity(stripe, lo, hi, by_index, need); !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteCopies(stripe, by_index, need); !s.ok()) return s;
  return store_.FlushEvery(need.size() * bs_, unflushed_, touched_);
}

absl::Status UpdateFlow::EncodeFresh() {
  ec::CreateTask task{codec_, {}, {}};
  for (int i = 0; i < m_; ++i) task.data.push_back(fresh_->block(i));
  for (int j = 0; j < k_; ++j) task.parity.push_back(fresh_->block(m_ + j));
  return store_.engine_->Run(task);
}

absl::Status UpdateFlow::UpdateParity(uint64_t stripe, uint64_t lo, uint64_t hi,
                                      const std::vector<const BlockRecord*>& by_index,
                                      std::vector<int>& need) {
  StripeBuffer& old = *old_;
  StripeBuffer& fresh = *fresh_;
  const int first = static_cast<int>(lo / bs_);
  const int last = static_cast<int>((hi - 1) / bs_);
  std::vector<int> changed;
  for (int i = first; i <= last; ++i) changed.push_back(i);
  need = changed;
  for (int j = 0; j < k_; ++j) need.push_back(m_ + j);
  if (absl::StatusOr<std::vector<int>> rebuilt = store_.LoadBlocks(
          {object_, stripe, codec_, by_index}, need, old, " Nothing was changed.");
      !rebuilt.ok()) {
    return rebuilt.status();
  }
  ec::UpdateTask task{codec_, {changed.begin(), changed.end()}, {}, {}, {}, {}};
  for (int i : changed) {
    // The new block: the source's bytes in [from, to), the old bytes around them.
    const uint64_t block_lo = static_cast<uint64_t>(i) * bs_;
    const uint64_t from = std::max(lo, block_lo) - block_lo;
    const uint64_t to = std::min(hi, block_lo + bs_) - block_lo;
    std::memcpy(fresh.block(i).data(), old.block(i).data(), from);
    std::memcpy(fresh.block(i).data() + to, old.block(i).data() + to, bs_ - to);
    task.old_data.push_back(old.block(i));
    task.new_data.push_back(fresh.block(i));
  }
  for (int j = 0; j < k_; ++j) {
    task.old_parity.push_back(old.block(m_ + j));
    task.new_parity.push_back(fresh.block(m_ + j));
  }
  return store_.engine_->Run(task);
}

absl::Status UpdateFlow::WriteCopies(uint64_t stripe,
                                     const std::vector<const BlockRecord*>& by_index,
                                     const std::vector<int>& need) {
  std::map<uint32_t, int> occupied;
  for (const BlockRecord* b : by_index) {
    if (b != nullptr) ++occupied[b->device];
  }
  for (int i : need) {
    if (by_index[i] == nullptr) {
      return absl::DataLossError(
          absl::StrCat("the catalog has no block ", i, " for stripe ", stripe, " of \"", name_,
                       "\"; nothing was changed. Run `ecctl recover ", name_, "`"));
    }
    absl::StatusOr<BlockRecord> copy = store_.AllocateCopy(name_, *by_index[i], occupied);
    if (!copy.ok()) return copy.status();
    copy->crc32c = Crc32c(fresh_->block(i));
    replaced_.push_back(*copy);
    std::shared_ptr<Namespace> ns = store_.NamespaceOf(copy->device, /*online_only=*/false);
    if (ns == nullptr) {
      return absl::UnavailableError(absl::StrCat("device ", copy->device, " is gone"));
    }
    if (absl::Status s = ns->Write(copy->lba, fresh_->padded(i)); !s.ok()) return s;
    touched_[copy->device] = true;
    superseded_.push_back(*by_index[i]);
  }
  return absl::OkStatus();
}

absl::Status UpdateFlow::Commit() {
  size_ = std::max(object_.size, pos_);
  stripes_ = std::max(object_.stripe_count, (size_ + stripe_bytes_ - 1) / stripe_bytes_);
  ObjectRecord after = object_;
  after.size = size_;
  after.stripe_count = stripes_;
  after.version = object_.version + 1;
  op_ = store_.records_->NewOp();
  op_->SetObject(after);
  for (const BlockRecord& b : replaced_) op_->AddBlock(b);
  for (const BlockRecord& b : added_) op_->AddBlock(b);
  if (absl::Status s = op_->Write(touched_); !s.ok()) return s;
  // Data first, then the catalog: the commit below is the moment the new version exists.
  if (absl::Status s = store_.FlushDevices(touched_); !s.ok()) return s;
  if (absl::Status s = data_.BeforeCommit(); !s.ok()) return s;
  if (absl::Status s = store_.catalog_->CommitUpdate(object_.id, object_.version, replaced_, added_,
                                                     size_, stripes_, op_->seq());
      !s.ok()) {
    return s;
  }
  op_->Commit();
  return absl::OkStatus();
}

void UpdateFlow::Finish() {
  store_.CountStripes(object_.parity_blocks,
                      static_cast<int64_t>(stripes_) - static_cast<int64_t>(object_.stripe_count));
  store_.CountObjects(0, static_cast<int64_t>(size_) - static_cast<int64_t>(object_.size));
  for (const BlockRecord& b : superseded_) {
    if (auto ns = store_.NamespaceOf(b.device, /*online_only=*/true)) {
      ns->Deallocate(b.lba, b.lba_count);
    }
  }
  store_.FreeExtents(superseded_);
  object_.size = size_;
  object_.stripe_count = stripes_;
  ++object_.version;
  result_.object = object_;
}

absl::Status UpdateFlow::Abandon(absl::Status status) {
  if (IsCommitOutcomeUnknown(status)) {  // Either version may be live: every extent stays.
    if (op_ != nullptr) op_->LeaveUnresolved();
    return status;
  }
  store_.DiscardExtents(replaced_);
  store_.DiscardExtents(added_);
  return status;
}

absl::StatusOr<UpdateResult> StoreCore::Update(absl::string_view name, uint64_t offset,
                                               ByteSource& data, bool append,
                                               const Interrupt& interrupt) {
  UpdateFlow flow(*this, name, offset, data, append, interrupt);
  return flow.Run();
}

}  // namespace ecd::store
