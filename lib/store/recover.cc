// Store::Recover: every stripe of an object checked (or only the ones a repair names) and what
// is bad rebuilt onto healthy devices.
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
#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"

namespace ecd::store {

absl::StatusOr<StoreCore::StripeFindings> StoreCore::RebuildStripe(
    const StripeRef& at, const std::vector<int>& need, const std::vector<int>& evict,
    StripeBuffer& buffer, std::unique_ptr<BlockReads> reads, bool repair, RecoverProgress& p) {
  const auto& [object, stripe, codec, by_index] = at;
  StripeFindings found;
  LoadReport report;
  report.repair = repair;
  absl::StatusOr<std::vector<int>> rebuilt =
      LoadBlocks(at, need, buffer, " Other stripes are still rebuilt.", std::move(reads), &report);
  p.blocks_checked += report.blocks_read;
  p.bytes_checked += report.good_reads * object.block_size;
  p.blocks_corrupt += report.corrupt_reads;
  p.blocks_unreadable += report.blocks_read - report.good_reads - report.corrupt_reads;
  if (!rebuilt.ok()) {
    if (!absl::IsDataLoss(rebuilt.status())) return rebuilt.status();
    Log(LogLevel::kError, "object %s: %s", object.name, rebuilt.status().message());
    ++p.lost_stripes;
    found.lost = true;
    return found;
  }
  found.bad = std::move(*rebuilt);
  const ec::BlockMask read = MaskOf(report.read);
  for (int i : found.bad) {
    // Known bad and never read: counted here (the reads counted what they found).
    if (read.test(i)) continue;
    if (by_index[i]->corrupt) {
      ++p.blocks_corrupt;
    } else if (!DeviceOnline(by_index[i]->device)) {
      ++p.blocks_unreadable;
    }
  }
  const ec::BlockMask bad = MaskOf(found.bad);
  for (int i : evict) {  // Read good, but chosen to move.
    if (!bad.test(i)) found.evicted.push_back(i);
  }
  return found;
}

absl::StatusOr<StoreCore::StripeFindings> StoreCore::CheckStripe(const StripeRef& at,
                                                                 StripeBuffer& buffer,
                                                                 BlockReads& reads,
                                                                 const RecoverOptions& options,
                                                                 RecoverProgress& p) {
  const auto& [object, stripe, codec, by_index] = at;
  StripeFindings found;
  std::vector<int> available;
  const std::vector<BlockRead> results = FinishReads(object, reads);
  for (size_t i = 0; i < by_index.size(); ++i) {
    const BlockRecord* b = by_index[i];
    ++p.blocks_checked;
    if (results[i] == BlockRead::kGood) {
      p.bytes_checked += object.block_size;
      available.push_back(static_cast<int>(i));
      if (options.evict && options.evict(*b)) found.evicted.push_back(static_cast<int>(i));
      if (b->corrupt && options.repair) {  // It reads back good now (a transient error).
        (void)catalog_->SetBlockCorrupt(object.id, stripe, b->index, false);
      }
    } else {
      found.bad.push_back(static_cast<int>(i));
      ++(results[i] == BlockRead::kCorrupt ? p.blocks_corrupt : p.blocks_unreadable);
    }
  }
  if (static_cast<int>(available.size()) < codec->data_blocks()) {
    if (!found.bad.empty()) ++p.lost_stripes;
    found.lost = true;
    return found;
  }
  if (found.bad.empty()) return found;
  // Never store a rebuilt block that does not match its checksum. (A block missing from the
  // catalog has no checksum; Recover fails if it would store one.)
  absl::StatusOr<int> failed = RebuildInBuffer(at, buffer, available, found.bad);
  if (!failed.ok()) return failed.status();
  if (*failed >= 0) {
    Log(LogLevel::kError, "object %s stripe %d block %d rebuilt with a wrong checksum", object.name,
        stripe, *failed);
    ++p.lost_stripes;
    found.lost = true;
  }
  return found;
}

absl::Status StoreCore::VerifyParity(const StripeRef& at, StripeBuffer& buffer,
                                     StripeBuffer& parity, bool repair, StripeFindings& found,
                                     RecoverProgress& p) {
  const auto& [object, stripe, codec, by_index] = at;
  const int m = static_cast<int>(object.data_blocks);
  const int k = static_cast<int>(object.parity_blocks);
  // Data blocks that pass their checksum are what the client wrote: they decide.
  ec::CreateTask task{codec, {}, {}};
  for (int i = 0; i < m; ++i) task.data.push_back(buffer.block(i));
  for (int j = 0; j < k; ++j) task.parity.push_back(parity.block(j));
  if (absl::Status s = engine_->Run(task); !s.ok()) return s;
  const ec::BlockMask bad = MaskOf(found.bad);
  for (int j = 0; j < k; ++j) {
    const int i = m + j;
    if (bad.test(i)) continue;
    if (std::equal(parity.block(j).begin(), parity.block(j).end(), buffer.block(i).begin())) {
      continue;
    }
    ++p.parity_mismatches;
    Log(LogLevel::kWarning,
        "object %s stripe %d parity block %d passes its CRC32C but does not match the data%s",
        object.name, stripe, i, repair ? "; rewriting it" : "");
    std::copy(parity.block(j).begin(), parity.block(j).end(), buffer.block(i).begin());
    found.mismatch.push_back(i);
  }
  return absl::OkStatus();
}

// One call of Store::Recover: the object's stripes walked one batch (kStripeBatch stripes) at a
// time, each batch under the object's exclusive lock, so that reads and updates of the object
// proceed between batches (and `progress`, which may sleep to keep a rate, runs without the
// lock). Each batch reads the object afresh: an update between batches is seen, a delete ends
// the walk. Within a batch, up to kRecoverStripes (or stripes_in_flight) stripe buffers, at
// least 2, as the memory limit allows: while one stripe is checked, rebuilt and written, the
// next ones' blocks are read. The stripe memory is released at the end of each batch.
// Not thread-safe: one object per call, used by that call only.
class RecoverFlow {
 public:
  // REQUIRES: store, name, progress and options outlive the flow.
  RecoverFlow(StoreCore& store, absl::string_view name,
              const std::function<void(const RecoverProgress&)>& progress,
              const RecoverOptions& options)
      : store_(store),
        name_(name),
        progress_(progress),
        options_(options),
        check_all_(options.check_all || options.verify_parity),
        listed_(options.stripes),
        interrupt_{.cancelled = options.cancelled} {}

  // The whole walk, then its outcome: Store::Recover's contract. Call once.
  absl::StatusOr<RecoverProgress> Run();

 private:
  // One batch, from stripe batch_, under the object's lock: the object looked up, stripe memory
  // reserved, the stripes checked or rebuilt and the new blocks committed, the memory released.
  // Returns false when the walk is over (the object was deleted, or has no stripe at batch_);
  // it then holds no stripe memory. An error ends the call (the batch abandoned once its I/O
  // started). The lock is released on return.
  absl::StatusOr<bool> Batch();
  // Looks the object up afresh and sets object_, codec_ and its shape (k_, width_, lbas_).
  // Returns false when there is nothing left to walk. An error of the first lookup is
  // LookupError's; later, only a deletion (NotFound) ends the walk quietly.
  absl::StatusOr<bool> FindObject();
  // Reserves and allocates the stripe buffers (and the K parity blocks verify_parity needs)
  // unless held already. May wait for memory until interrupt_ fires (Cancelled,
  // DeadlineExceeded). REQUIRES: FindObject returned true.
  absl::Status ReserveStripes();
  // Reads the batch's blocks from the catalog and resets the batch's state: its stripes by
  // index, the work to do in it (ChooseWork), nothing written or replaced yet.
  // REQUIRES: ReserveStripes succeeded.
  absl::Status PlanBatch();
  // Sets work_ to the stripes to work on, as offsets in the batch, and for a rebuild needs_ to
  // the blocks of each that need a new home (evicts_: those `evict` chose): all stripes (among
  // the listed ones) when checking every block.
  void ChooseWork();
  // Checks or rebuilds work_'s stripes in turn, reading ahead into the other buffers, and
  // starts the writes of their rebuilt blocks. Sets p_.stripes_done to the batch's end.
  // An error is returned abandoned (Abandon): nothing of the batch will commit.
  absl::Status WalkStripes();
  // Starts the reads of work_[w] into buffer w % depth_: every block of the stripe, or for a
  // rebuild what LoadBlocks reads first.
  std::unique_ptr<StoreCore::BlockReads> StartStripe(size_t w);
  // Starts reads into every buffer not being read, except the one of the stripe just worked on
  // while its rebuilt blocks are still being written (they overlap the next stripe's work; that
  // buffer is read into once they are done). An error is a failed write (FinishWrites).
  absl::Status ReadAhead();
  // Checks or rebuilds stripe work_[w] (and verifies its parity), then with options_.repair
  // writes what it rebuilt (Rewrite). REQUIRES: ahead_.front() holds the reads of work_[w].
  // An error is returned abandoned. A stripe with too few good blocks is counted lost, not an
  // error.
  absl::Status WorkOn(size_t w);
  // Gives the bad, evicted and recomputed blocks of `found` new homes on devices that hold no
  // other block of the stripe and starts their writes from `buffer` on writes_[w % depth_].
  // A block that finds no room is skipped (no_space_ says why, returned at the end). An error (a
  // block missing from the catalog, a device gone) is returned abandoned.
  absl::Status Rewrite(size_t w, uint64_t stripe, const std::vector<const BlockRecord*>& by_index,
                       StripeBuffer& buffer, const StoreCore::StripeFindings& found);
  // The error Recover ends with when a rebuilt block of `stripe` finds no room: `placed` itself
  // when a file system is full or no device is outside the stripe, else ResourceExhausted.
  absl::Status NoSpace(const absl::Status& placed, uint64_t stripe) const;
  // Waits for the writes of the batch, writes the new blocks' records, flushes the devices
  // written and commits the new blocks to the catalog, then frees the old ones. An error is
  // returned abandoned: the old blocks stay where they were.
  absl::Status CommitBatch();
  // Waits for the writes on `io` (null: none) and lets it go. A failed write loses nothing:
  // Unavailable (not the device's DataLoss) says that nothing of the batch was committed; a
  // full file system is returned as it is.
  absl::Status FinishWrites(std::unique_ptr<StoreCore::BlockIo>& io);
  // Ends a failed batch: waits for its writes and reads, and discards the new blocks' extents.
  // Returns `s`. Call once per failed batch, with the object's lock held.
  absl::Status Abandon(absl::Status s);
  // Releases the stripe memory: never wait for the object's lock (the next batch) while holding
  // it, as a request holding that lock may be waiting for the memory.
  void ReleaseStripes();
  // Moves batch_ to the next batch to walk; false when none is left.
  bool NextBatch();
  // What the walk ends with: DataLoss when stripes were lost, else the no-room error of the last
  // block that found no room, else the progress.
  absl::StatusOr<RecoverProgress> Outcome() const;

  // The call.
  StoreCore& store_;
  const absl::string_view name_;
  const std::function<void(const RecoverProgress&)>& progress_;
  const RecoverOptions& options_;
  const bool check_all_;
  const std::vector<uint64_t>& listed_;  // empty: every stripe
  const Interrupt interrupt_;            // for the lock and memory waits

  // The walk.
  RecoverProgress p_;
  int64_t object_id_ = 0;
  bool first_ = true;
  uint64_t batch_ = 0;  // the first stripe of the batch
  absl::Status no_space_;

  // The batch's stripe memory (declared before the I/O into it, so destroyed after it).
  StripeSet buffers_;
  std::vector<StripeBuffer*> stripe_buffers_;
  StripeBuffer* parity_ = nullptr;  // K blocks: the parity the data encodes to.

  // The batch.
  ObjectRecord object_;
  std::shared_ptr<const ec::Codec> codec_;
  int k_ = 0;
  int width_ = 0;
  uint64_t lbas_ = 0;
  size_t depth_ = 0;    // stripe_buffers_.size()
  uint64_t count_ = 0;  // stripes in the batch
  std::vector<BlockRecord> blocks_;
  std::vector<std::vector<const BlockRecord*>> stripes_;  // by offset in the batch
  std::vector<uint64_t> work_;
  std::vector<std::vector<int>> needs_;
  std::vector<std::vector<int>> evicts_;  // of needs_[n], those `evict` chose
  std::vector<BlockRecord> replaced_;     // New locations, to commit.
  std::vector<BlockRecord> superseded_;   // Old locations, freed after the commit.
  std::vector<bool> touched_;
  // By buffer: the writes of the rebuilt blocks of the stripe last worked on in it, waited for
  // before the buffer is read into again and before the batch commits.
  std::vector<std::unique_ptr<StoreCore::BlockIo>> writes_;
  std::deque<std::unique_ptr<StoreCore::BlockReads>>
      ahead_;  // work_[w ...]: waited for if abandoned
  size_t started_ = 0;
};

absl::StatusOr<RecoverProgress> RecoverFlow::Run() {
  for (batch_ = listed_.empty() ? 0 : listed_.front();; first_ = false) {
    absl::StatusOr<bool> more = Batch();
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (progress_) progress_(p_);
    if (options_.cancelled && options_.cancelled()) {
      return absl::CancelledError(absl::StrCat("stopped after ", p_.stripes_done, " of ",
                                               p_.stripes_total, " stripes of \"", name_, "\""));
    }
    if (!NextBatch()) break;
  }
  return Outcome();
}

absl::StatusOr<bool> RecoverFlow::Batch() {
  ObjectLocks::Guard guard(*store_.locks_, name_, /*exclusive=*/true, interrupt_);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<bool> found = FindObject();
  if (!found.ok() || !*found) return found;
  if (absl::Status s = ReserveStripes(); !s.ok()) return s;
  if (absl::Status s = PlanBatch(); !s.ok()) return s;
  if (absl::Status s = WalkStripes(); !s.ok()) return s;  // abandoned
  if (absl::Status s = CommitBatch(); !s.ok()) return s;  // abandoned
  ReleaseStripes();
  return true;
}

absl::StatusOr<bool> RecoverFlow::FindObject() {
  absl::StatusOr<ObjectRecord> found = store_.catalog_->GetObject(name_);
  if (!found.ok()) {
    if (first_) return LookupError(found.status(), name_, store_.options_.max_name_length);
    if (!absl::IsNotFound(found.status())) return found.status();
    return false;  // Deleted meanwhile: nothing left to check.
  }
  object_ = *std::move(found);
  if (first_) object_id_ = object_.id;
  if (object_.id != object_id_) return false;  // Deleted and stored again under the same name.
  p_.stripes_total = object_.stripe_count;
  if (batch_ >= object_.stripe_count) return false;
  const int m = static_cast<int>(object_.data_blocks);
  k_ = static_cast<int>(object_.parity_blocks);
  width_ = m + k_;
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = store_.CodecFor(object_.matrix, m, k_);
  if (!codec.ok()) return codec.status();
  codec_ = *std::move(codec);
  lbas_ = store_.LbasPerBlock(object_.block_size);
  return true;
}

absl::Status RecoverFlow::ReserveStripes() {
  if (!stripe_buffers_.empty()) return absl::OkStatus();
  const uint64_t stride = lbas_ * store_.options_.lba_size;
  const uint64_t unit = static_cast<uint64_t>(width_) * stride;
  const uint64_t extra = options_.verify_parity ? static_cast<uint64_t>(k_) * stride : 0;
  // At most a quarter of the memory limit beyond the two stripes every object may ask for: a
  // recover that sized itself to the whole limit would wait for every other request to drain
  // at each batch, and every later request would queue behind it.
  uint64_t depth = store_.WithinQuarter(
      store_.options_.stripes_in_flight != 0 ? store_.options_.stripes_in_flight : kRecoverStripes,
      unit, extra);
  // No more than the object has (but 2, which the walk needs).
  depth = std::min<uint64_t>(depth, std::max<uint64_t>(object_.stripe_count, 2));
  std::vector<int> blocks(depth, width_);
  if (options_.verify_parity) blocks.push_back(k_);
  absl::StatusOr<StripeSet> allocated =
      store_.AllocateStripes(blocks, object_.block_size, 0, interrupt_);
  if (!allocated.ok()) return allocated.status();
  buffers_ = std::move(*allocated);
  for (uint64_t d = 0; d < depth; ++d) stripe_buffers_.push_back(&buffers_[d]);
  if (options_.verify_parity) parity_ = &buffers_[depth];
  return absl::OkStatus();
}

absl::Status RecoverFlow::PlanBatch() {
  depth_ = stripe_buffers_.size();
  count_ = std::min(kStripeBatch, object_.stripe_count - batch_);
  absl::StatusOr<std::vector<BlockRecord>> blocks =
      store_.catalog_->GetBlocks(object_.id, batch_, count_);
  if (!blocks.ok()) return blocks.status();
  blocks_ = *std::move(blocks);
  replaced_.clear();
  superseded_.clear();
  touched_.assign(store_.devices_.size(), false);
  writes_.clear();
  writes_.resize(depth_);
  stripes_.clear();
  size_t row = 0;
  for (uint64_t stripe = batch_; stripe < batch_ + count_; ++stripe) {
    stripes_.push_back(TakeStripe(blocks_, row, stripe, width_));
  }
  ChooseWork();
  return absl::OkStatus();
}

void RecoverFlow::ChooseWork() {
  work_.clear();
  needs_.clear();
  needs_.resize(count_);
  evicts_.clear();
  evicts_.resize(count_);
  for (uint64_t n = 0; n < count_; ++n) {
    if (!listed_.empty() && !std::binary_search(listed_.begin(), listed_.end(), batch_ + n)) {
      continue;
    }
    if (check_all_) {
      work_.push_back(n);
      continue;
    }
    for (int i = 0; i < width_; ++i) {
      const BlockRecord* b = stripes_[n][i];
      if (b != nullptr && options_.evict && options_.evict(*b)) {
        needs_[n].push_back(i);
        evicts_[n].push_back(i);
      } else if (b == nullptr || b->corrupt ||
                 (!store_.DeviceOnline(b->device) &&
                  (options_.rebuild_down || !store_.DeviceDown(b->device)))) {
        needs_[n].push_back(i);
      }
    }
    if (!needs_[n].empty()) work_.push_back(n);
  }
}

absl::Status RecoverFlow::WalkStripes() {
  p_.stripes_done = batch_;  // Every stripe before this batch; the batch's when it ends.
  started_ = 0;
  for (size_t w = 0; w < work_.size(); ++w) {
    if (absl::Status s = ReadAhead(); !s.ok()) return Abandon(s);
    if (absl::Status s = WorkOn(w); !s.ok()) return s;  // abandoned
  }
  p_.stripes_done = batch_ + count_;
  return absl::OkStatus();
}

std::unique_ptr<StoreCore::BlockReads> RecoverFlow::StartStripe(size_t w) {
  const uint64_t n = work_[w];
  if (!check_all_) {
    return store_.StartLoad({object_, batch_ + n, codec_, stripes_[n]}, needs_[n],
                            *stripe_buffers_[w % depth_]);
  }
  auto reads = std::make_unique<StoreCore::BlockReads>();
  for (int i = 0; i < width_; ++i) reads->indices.push_back(i);
  reads->blocks = stripes_[n];
  reads->outs = stripe_buffers_[w % depth_]->views;
  store_.StartReads(object_, *reads);
  return reads;
}

absl::Status RecoverFlow::ReadAhead() {
  while (started_ < work_.size() && ahead_.size() < depth_) {
    std::unique_ptr<StoreCore::BlockIo>& io = writes_[started_ % depth_];
    if (io != nullptr && ahead_.size() + 1 == depth_) break;
    if (absl::Status s = FinishWrites(io); !s.ok()) return s;
    ahead_.push_back(StartStripe(started_++));
  }
  return absl::OkStatus();
}

absl::Status RecoverFlow::WorkOn(size_t w) {
  const uint64_t n = work_[w];
  const uint64_t stripe = batch_ + n;
  const std::vector<const BlockRecord*>& by_index = stripes_[n];
  StripeBuffer* const buffer = stripe_buffers_[w % depth_];
  std::unique_ptr<StoreCore::BlockReads> reads = std::move(ahead_.front());
  ahead_.pop_front();
  const StripeRef at{object_, stripe, codec_, by_index};
  absl::StatusOr<StoreCore::StripeFindings> found =
      check_all_ ? store_.CheckStripe(at, *buffer, *reads, options_, p_)
                 : store_.RebuildStripe(at, needs_[n], evicts_[n], *buffer, std::move(reads),
                                        options_.repair, p_);
  if (!found.ok()) return Abandon(found.status());
  if (found->lost) return absl::OkStatus();
  if (options_.verify_parity) {
    if (absl::Status s = store_.VerifyParity(at, *buffer, *parity_, options_.repair, *found, p_);
        !s.ok()) {
      return Abandon(s);
    }
  }
  if (!options_.repair) return absl::OkStatus();
  return Rewrite(w, stripe, by_index, *buffer, *found);
}

absl::Status RecoverFlow::Rewrite(size_t w, uint64_t stripe,
                                  const std::vector<const BlockRecord*>& by_index,
                                  StripeBuffer& buffer, const StoreCore::StripeFindings& found) {
  // Rebuilt, evicted and recomputed blocks all get new homes.
  const std::vector<int>& evicted = found.evicted;
  const std::vector<int>& mismatch = found.mismatch;
  std::vector<int> moves = found.bad;
  moves.insert(moves.end(), evicted.begin(), evicted.end());
  moves.insert(moves.end(), mismatch.begin(), mismatch.end());
  if (moves.empty()) return absl::OkStatus();
  // Devices holding a block of this stripe (good or bad, one count per block): a rebuilt block
  // may only go to a device that holds no other block of the stripe.
  std::map<uint32_t, int> occupied;
  for (const BlockRecord* b : by_index) {
    if (b != nullptr) ++occupied[b->device];
  }
  std::unique_ptr<StoreCore::BlockIo>& io = writes_[w % depth_] =
      std::make_unique<StoreCore::BlockIo>();
  io->Reset(moves.size());
  const ec::BlockMask forced_moves = MaskOf(evicted);
  const ec::BlockMask recomputed_parity = MaskOf(mismatch);
  for (size_t j = 0; j < moves.size(); ++j) {
    const int i = moves[j];
    const bool forced = forced_moves.test(i);
    const bool recomputed = recomputed_parity.test(i);
    if (by_index[i] == nullptr) {
      return Abandon(absl::InternalError(
          absl::StrCat("stripe ", stripe, " block ", i, " is missing from the catalog")));
    }
    BlockRecord old = *by_index[i];
    // Prefer the block's own device (copy-on-write) unless it is being evicted.
    absl::StatusOr<BlockRecord> placed =
        store_.AllocateCopy(name_, old, occupied, /*allow_same_device=*/!forced, SpaceUse::kRepair);
    if (!placed.ok()) {  // Keep going: other blocks and stripes may still find room.
      no_space_ = NoSpace(placed.status(), stripe);
      continue;
    }
    BlockRecord fresh = *placed;
    if (recomputed) fresh.crc32c = Crc32c(buffer.block(i));
    replaced_.push_back(fresh);
    std::shared_ptr<Namespace> target = store_.NamespaceOf(fresh.device, /*online_only=*/false);
    if (target == nullptr) return Abandon(absl::UnavailableError("the device is gone"));
    io->devices[j] = target;
    target->WriteAsync(fresh.lba, buffer.padded(i),
                       store_.TrackWrite(fresh.device, io->batch.Track(&io->status[j])));
    touched_[fresh.device] = true;
    superseded_.push_back(old);
    ++p_.blocks_rebuilt;
    if (forced) ++p_.blocks_relocated;
    p_.bytes_rebuilt += object_.block_size;
  }
  return absl::OkStatus();
}

absl::Status RecoverFlow::NoSpace(const absl::Status& placed, uint64_t stripe) const {
  if (IsFileSystemFull(placed) || absl::IsFailedPrecondition(placed)) return placed;
  return absl::ResourceExhaustedError(absl::StrCat(
      "no online device outside stripe ", stripe, " has ", lbas_ * store_.options_.lba_size,
      " free bytes for a rebuilt block; add or repair devices and run "
      "recover again"));
}

absl::Status RecoverFlow::CommitBatch() {
  for (std::unique_ptr<StoreCore::BlockIo>& io : writes_) {
    if (absl::Status s = FinishWrites(io); !s.ok()) return Abandon(s);
  }
  std::unique_ptr<RecordKeeper::Op> op = store_.records_->NewOp();
  if (!replaced_.empty()) {
    op->SetObject(object_);
    for (const BlockRecord& b : replaced_) op->AddBlock(b);
    if (absl::Status s = op->Write(touched_); !s.ok()) return Abandon(s);
  }
  if (absl::Status s = store_.FlushDevices(touched_); !s.ok()) return Abandon(s);
  if (!replaced_.empty()) {
    if (absl::Status s = store_.catalog_->ReplaceBlocks(object_.id, replaced_, op->seq());
        !s.ok()) {
      if (!IsCommitOutcomeUnknown(s)) return Abandon(s);
      op->LeaveUnresolved();  // Old or new extents may be live: both stay allocated.
      ahead_.clear();
      return s;
    }
    op->Commit();
    for (const BlockRecord& b : superseded_) {
      if (auto ns = store_.NamespaceOf(b.device, /*online_only=*/true)) {
        ns->Deallocate(b.lba, b.lba_count);
      }
    }
    store_.FreeExtents(superseded_);
  }
  return absl::OkStatus();
}

absl::Status RecoverFlow::FinishWrites(std::unique_ptr<StoreCore::BlockIo>& io) {
  if (io == nullptr) return absl::OkStatus();
  absl::Status s = io->Finish();
  io.reset();
  if (s.ok() || IsFileSystemFull(s)) return s;
  return absl::UnavailableError(
      absl::StrCat("writing a rebuilt block of \"", name_, "\" failed (", s.message(),
                   "); nothing of this batch was committed and no data was lost. Check the devices "
                   "(`ecctl device ls`) and run recover again"));
}

absl::Status RecoverFlow::Abandon(absl::Status s) {
  for (std::unique_ptr<StoreCore::BlockIo>& io : writes_) (void)FinishWrites(io);
  store_.DiscardExtents(replaced_);
  ahead_.clear();  // Waits for the reads still in flight into the batch's buffers.
  return s;
}

void RecoverFlow::ReleaseStripes() {
  buffers_.buffers.clear();
  buffers_.reservation.Release();
  stripe_buffers_.clear();
  parity_ = nullptr;
}

bool RecoverFlow::NextBatch() {
  batch_ += kStripeBatch;
  if (!listed_.empty()) {
    auto next = std::lower_bound(listed_.begin(), listed_.end(), batch_);
    if (next == listed_.end()) return false;
    batch_ = *next;
  }
  return true;
}

absl::StatusOr<RecoverProgress> RecoverFlow::Outcome() const {
  if (p_.lost_stripes > 0) {
    return absl::DataLossError(absl::StrCat(
        p_.lost_stripes, " of ", p_.stripes_total, " stripes of \"", name_,
        "\" have too few good blocks to rebuild what is bad (the rest were ",
        options_.repair ? "repaired" : "checked",
        "). Bring failed devices back online and run recover again, or restore from a backup"));
  }
  if (!no_space_.ok()) return no_space_;
  return p_;
}

absl::StatusOr<RecoverProgress> StoreCore::Recover(
    absl::string_view name, const std::function<void(const RecoverProgress&)>& progress,
    const RecoverOptions& options) {
  RecoverFlow flow(*this, name, progress, options);
  return flow.Run();
}

}  // namespace ecd::store
