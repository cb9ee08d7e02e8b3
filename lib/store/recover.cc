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
#include "lib/store/store.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"

namespace ecd::store {

absl::StatusOr<Store::StripeFindings> Store::RebuildStripe(
    const ObjectRecord& object, uint64_t stripe, const std::shared_ptr<const ec::Codec>& codec,
    const std::vector<const BlockRecord*>& by_index, const std::vector<int>& need,
    const std::vector<int>& evict, StripeBuffer& buffer, std::unique_ptr<BlockReads> reads,
    bool repair, RecoverProgress& p) {
  StripeFindings found;
  LoadReport report;
  report.repair = repair;
  absl::StatusOr<std::vector<int>> rebuilt =
      LoadBlocks(object, stripe, codec, by_index, need, buffer, " Other stripes are still rebuilt.",
                 std::move(reads), &report);
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
  for (int i : found.bad) {
    // Known bad and never read: counted here (the reads counted what they found).
    if (std::find(report.read.begin(), report.read.end(), i) != report.read.end()) continue;
    if (by_index[i]->corrupt) {
      ++p.blocks_corrupt;
    } else if (!DeviceOnline(by_index[i]->device)) {
      ++p.blocks_unreadable;
    }
  }
  for (int i : evict) {  // Read good, but chosen to move.
    if (std::find(found.bad.begin(), found.bad.end(), i) == found.bad.end()) {
      found.evicted.push_back(i);
    }
  }
  return found;
}

absl::StatusOr<Store::StripeFindings> Store::CheckStripe(
    const ObjectRecord& object, uint64_t stripe, const std::shared_ptr<const ec::Codec>& codec,
    const std::vector<const BlockRecord*>& by_index, StripeBuffer& buffer, BlockReads& reads,
    const RecoverOptions& options, RecoverProgress& p) {
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
  absl::StatusOr<int> failed = RebuildInBuffer(codec, by_index, buffer, available, found.bad);
  if (!failed.ok()) return failed.status();
  if (*failed >= 0) {
    Log(LogLevel::kError, "object %s stripe %d block %d rebuilt with a wrong checksum", object.name,
        stripe, *failed);
    ++p.lost_stripes;
    found.lost = true;
  }
  return found;
}

absl::Status Store::VerifyParity(const ObjectRecord& object, uint64_t stripe,
                                 const std::shared_ptr<const ec::Codec>& codec,
                                 StripeBuffer& buffer, StripeBuffer& parity, bool repair,
                                 StripeFindings& found, RecoverProgress& p) {
  const int m = static_cast<int>(object.data_blocks);
  const int k = static_cast<int>(object.parity_blocks);
  // Data blocks that pass their checksum are what the client wrote: they decide.
  ec::CreateTask task{codec, {}, {}};
  for (int i = 0; i < m; ++i) task.data.push_back(buffer.block(i));
  for (int j = 0; j < k; ++j) task.parity.push_back(parity.block(j));
  if (absl::Status s = engine_->Run(task); !s.ok()) return s;
  for (int j = 0; j < k; ++j) {
    const int i = m + j;
    if (std::find(found.bad.begin(), found.bad.end(), i) != found.bad.end()) continue;
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

absl::StatusOr<RecoverProgress> Store::Recover(
    absl::string_view name, const std::function<void(const RecoverProgress&)>& progress,
    const RecoverOptions& options) {
  const bool check_all = options.check_all || options.verify_parity;
  RecoverProgress p;
  int64_t object_id = 0;
  StripeSet buffers;
  // Up to kRecoverStripes (or stripes_in_flight) stripes, at least 2, as the memory limit
  // allows: while one is checked, rebuilt and written, the next ones' blocks are read.
  std::vector<StripeBuffer*> stripe_buffers;
  StripeBuffer* parity = nullptr;  // K blocks: the parity the data encodes to.
  absl::Status no_space;
  // One batch of stripes at a time under the object's exclusive lock, so that reads and
  // updates of the object proceed between batches (and `progress`, which may sleep to keep a
  // rate, runs without the lock). Each batch reads the object afresh: an update between batches
  // is seen, a delete ends the walk.
  const std::vector<uint64_t>& listed = options.stripes;      // empty: every stripe
  const Interrupt interrupt{.cancelled = options.cancelled};  // for the lock and memory waits
  bool first = true;
  for (uint64_t batch = listed.empty() ? 0 : listed.front();; first = false) {
    {
      ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/true, interrupt);
      if (!guard.status().ok()) return guard.status();
      absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
      if (!found.ok()) {
        if (first) return LookupError(found.status(), name, options_.max_name_length);
        if (!absl::IsNotFound(found.status())) return found.status();
        break;  // Deleted meanwhile: nothing left to check.
      }
      const ObjectRecord& object = *found;
      if (first) object_id = object.id;
      if (object.id != object_id) break;  // Deleted and stored again under the same name.
      p.stripes_total = object.stripe_count;
      if (static_cast<uint64_t>(batch) >= object.stripe_count) break;
      const int m = static_cast<int>(object.data_blocks);
      const int k = static_cast<int>(object.parity_blocks);
      const int width = m + k;
      absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = CodecFor(object.matrix, m, k);
      if (!codec.ok()) return codec.status();
      const uint64_t lbas = LbasPerBlock(object.block_size);
      if (stripe_buffers.empty()) {
        const uint64_t stride = lbas * options_.lba_size;
        const uint64_t unit = static_cast<uint64_t>(width) * stride;
        const uint64_t extra = options.verify_parity ? static_cast<uint64_t>(k) * stride : 0;
        // At most a quarter of the memory limit beyond the two stripes every object may ask
        // for: a recover that sized itself to the whole limit would wait for every other
        // request to drain at each batch, and every later request would queue behind it.
        uint64_t depth = WithinQuarter(
            options_.stripes_in_flight != 0 ? options_.stripes_in_flight : kRecoverStripes, unit,
            extra);
        // No more than the object has (but 2, which the walk needs).
        depth = std::min<uint64_t>(depth, std::max<uint64_t>(object.stripe_count, 2));
        std::vector<int> blocks(depth, width);
        if (options.verify_parity) blocks.push_back(k);
        absl::StatusOr<StripeSet> allocated =
            AllocateStripes(blocks, object.block_size, 0, interrupt);
        if (!allocated.ok()) return allocated.status();
        buffers = std::move(*allocated);
        for (uint64_t d = 0; d < depth; ++d) stripe_buffers.push_back(&buffers[d]);
        if (options.verify_parity) parity = &buffers[depth];
      }
      const size_t depth = stripe_buffers.size();
      const uint64_t count = std::min(kStripeBatch, object.stripe_count - batch);
      absl::StatusOr<std::vector<BlockRecord>> blocks =
          catalog_->GetBlocks(object.id, batch, count);
      if (!blocks.ok()) return blocks.status();
      std::vector<BlockRecord> replaced;    // New locations, to commit.
      std::vector<BlockRecord> superseded;  // Old locations, freed after the commit.
      std::vector<bool> touched(devices_.size(), false);
      // By buffer: the writes of the rebuilt blocks of the stripe last worked on in it, waited
      // for before the buffer is read into again and before the batch commits.
      std::vector<std::unique_ptr<BlockIo>> writes(depth);
      // A failed write of a rebuilt block loses nothing: the batch commits nothing and the old
      // blocks stay where they were. Unavailable says so, rather than the device's DataLoss.
      auto finish_writes = [&](std::unique_ptr<BlockIo>& io) {
        if (io == nullptr) return absl::OkStatus();
        absl::Status s = io->Finish();
        io.reset();
        if (s.ok() || IsFileSystemFull(s)) return s;
        return absl::UnavailableError(absl::StrCat(
            "writing a rebuilt block of \"", name, "\" failed (", s.message(),
            "); nothing of this batch was committed and no data was lost. Check the devices "
            "(`ecctl device ls`) and run recover again"));
      };
      auto abandon = [&](absl::Status s) {
        for (std::unique_ptr<BlockIo>& io : writes) (void)finish_writes(io);
        DiscardExtents(replaced);
        return s;
      };
      std::vector<std::vector<const BlockRecord*>> stripes;
      size_t row = 0;
      for (uint64_t stripe = batch; stripe < batch + count; ++stripe) {
        stripes.push_back(TakeStripe(*blocks, row, stripe, width));
      }
      // The stripes to work on, as offsets in the batch, and for a rebuild the blocks of each
      // that need a new home: all stripes when checking every block.
      std::vector<uint64_t> work;
      std::vector<std::vector<int>> needs(count);
      std::vector<std::vector<int>> evicts(count);  // of needs[n], those `evict` chose
      for (uint64_t n = 0; n < count; ++n) {
        if (!listed.empty() && !std::binary_search(listed.begin(), listed.end(), batch + n)) {
          continue;
        }
        if (check_all) {
          work.push_back(n);
          continue;
        }
        for (int i = 0; i < width; ++i) {
          const BlockRecord* b = stripes[n][i];
          if (b != nullptr && options.evict && options.evict(*b)) {
            needs[n].push_back(i);
            evicts[n].push_back(i);
          } else if (b == nullptr || b->corrupt ||
                     (!DeviceOnline(b->device) &&
                      (options.rebuild_down || !DeviceDown(b->device)))) {
            needs[n].push_back(i);
          }
        }
        if (!needs[n].empty()) work.push_back(n);
      }
      // Starts the reads of work[w] into buffer w % depth: every block of the stripe, or for a
      // rebuild what LoadBlocks reads first.
      auto start_stripe = [&](size_t w) {
        const uint64_t n = work[w];
        if (!check_all) return StartLoad(object, stripes[n], needs[n], *stripe_buffers[w % depth]);
        auto reads = std::make_unique<BlockReads>();
        for (int i = 0; i < width; ++i) reads->indices.push_back(i);
        reads->blocks = stripes[n];
        reads->outs = stripe_buffers[w % depth]->views;
        StartReads(object, *reads);
        return reads;
      };
      p.stripes_done = batch;  // Every stripe before this batch; the batch's when it ends.
      std::deque<std::unique_ptr<BlockReads>> ahead;  // work[w ...]: waited for if abandoned
      size_t started = 0;
      // Starts reads into every buffer not being read, except the one of the stripe just
      // worked on while its rebuilt blocks are still being written (they overlap the next
      // stripe's work; that buffer is read into once they are done).
      auto read_ahead = [&]() -> absl::Status {
        while (started < work.size() && ahead.size() < depth) {
          std::unique_ptr<BlockIo>& io = writes[started % depth];
          if (io != nullptr && ahead.size() + 1 == depth) break;
          if (absl::Status s = finish_writes(io); !s.ok()) return s;
          ahead.push_back(start_stripe(started++));
        }
        return absl::OkStatus();
      };
      for (size_t w = 0; w < work.size(); ++w) {
        if (absl::Status s = read_ahead(); !s.ok()) return abandon(s);
        const uint64_t n = work[w];
        const uint64_t stripe = batch + n;
        const std::vector<const BlockRecord*>& by_index = stripes[n];
        StripeBuffer* const buffer = stripe_buffers[w % depth];
        std::unique_ptr<BlockReads> reads = std::move(ahead.front());
        ahead.pop_front();
        absl::StatusOr<StripeFindings> found =
            check_all ? CheckStripe(object, stripe, *codec, by_index, *buffer, *reads, options, p)
                      : RebuildStripe(object, stripe, *codec, by_index, needs[n], evicts[n],
                                      *buffer, std::move(reads), options.repair, p);
        if (!found.ok()) return abandon(found.status());
        if (found->lost) continue;
        if (options.verify_parity) {
          if (absl::Status s =
                  VerifyParity(object, stripe, *codec, *buffer, *parity, options.repair, *found, p);
              !s.ok()) {
            return abandon(s);
          }
        }
        if (!options.repair) continue;
        // Rebuilt, evicted and recomputed blocks all get new homes.
        const std::vector<int>& evicted = found->evicted;
        const std::vector<int>& mismatch = found->mismatch;
        std::vector<int> moves = found->bad;
        moves.insert(moves.end(), evicted.begin(), evicted.end());
        moves.insert(moves.end(), mismatch.begin(), mismatch.end());
        if (moves.empty()) continue;
        // Devices holding a block of this stripe (good or bad, one count per block): a rebuilt
        // block may only go to a device that holds no other block of the stripe.
        std::map<uint32_t, int> occupied;
        for (const BlockRecord* b : by_index) {
          if (b != nullptr) ++occupied[b->device];
        }
        std::unique_ptr<BlockIo>& io = writes[w % depth] = std::make_unique<BlockIo>();
        io->Reset(moves.size());
        for (size_t j = 0; j < moves.size(); ++j) {
          const int i = moves[j];
          const bool forced = std::find(evicted.begin(), evicted.end(), i) != evicted.end();
          const bool recomputed = std::find(mismatch.begin(), mismatch.end(), i) != mismatch.end();
          if (by_index[i] == nullptr) {
            return abandon(absl::InternalError(
                absl::StrCat("stripe ", stripe, " block ", i, " is missing from the catalog")));
          }
          BlockRecord old = *by_index[i];
          // Prefer the block's own device (copy-on-write) unless it is being evicted.
          absl::StatusOr<BlockRecord> placed =
              AllocateCopy(name, old, occupied, /*allow_same_device=*/!forced, SpaceUse::kRepair);
          if (!placed.ok()) {  // Keep going: other blocks and stripes may still find room.
            no_space =
                IsFileSystemFull(placed.status()) || absl::IsFailedPrecondition(placed.status())
                    ? placed.status()
                    : absl::ResourceExhaustedError(absl::StrCat(
                          "no online device outside stripe ", stripe, " has ",
                          lbas * options_.lba_size,
                          " free bytes for a rebuilt block; add or repair devices and run "
                          "recover again"));
            continue;
          }
          BlockRecord fresh = *placed;
          if (recomputed) fresh.crc32c = Crc32c(buffer->block(i));
          replaced.push_back(fresh);
          std::shared_ptr<Namespace> target = NamespaceOf(fresh.device, /*online_only=*/false);
          if (target == nullptr) return abandon(absl::UnavailableError("the device is gone"));
          io->devices[j] = target;
          target->WriteAsync(fresh.lba, buffer->padded(i),
                             TrackWrite(fresh.device, io->batch.Track(&io->status[j])));
          touched[fresh.device] = true;
          superseded.push_back(old);
          ++p.blocks_rebuilt;
          if (forced) ++p.blocks_relocated;
          p.bytes_rebuilt += object.block_size;
        }
      }
      p.stripes_done = batch + count;
      for (std::unique_ptr<BlockIo>& io : writes) {
        if (absl::Status s = finish_writes(io); !s.ok()) return abandon(s);
      }
      std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
      if (!replaced.empty()) {
        op->SetObject(object);
        for (const BlockRecord& b : replaced) op->AddBlock(b);
        if (absl::Status s = op->Write(touched); !s.ok()) return abandon(s);
      }
      if (absl::Status s = FlushDevices(touched); !s.ok()) return abandon(s);
      if (!replaced.empty()) {
        if (absl::Status s = catalog_->ReplaceBlocks(object.id, replaced, op->seq()); !s.ok()) {
          return abandon(s);
        }
        op->Commit();
        for (const BlockRecord& b : superseded) {
          if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) {
            ns->Deallocate(b.lba, b.lba_count);
          }
        }
        FreeExtents(superseded);
      }
      // Never wait for the object's lock (the next batch) while holding stripe memory: a
      // request holding that lock may be waiting for the memory.
      buffers.buffers.clear();
      buffers.reservation.Release();
      stripe_buffers.clear();
      parity = nullptr;
    }
    if (progress) progress(p);
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError(absl::StrCat("stopped after ", p.stripes_done, " of ",
                                               p.stripes_total, " stripes of \"", name, "\""));
    }
    batch += kStripeBatch;
    if (!listed.empty()) {
      auto next = std::lower_bound(listed.begin(), listed.end(), batch);
      if (next == listed.end()) break;
      batch = *next;
    }
  }
  if (p.lost_stripes > 0) {
    return absl::DataLossError(absl::StrCat(
        p.lost_stripes, " of ", p.stripes_total, " stripes of \"", name,
        "\" have too few good blocks to rebuild what is bad (the rest were ",
        options.repair ? "repaired" : "checked",
        "). Bring failed devices back online and run recover again, or restore from a backup"));
  }
  if (!no_space.ok()) return no_space;
  return p;
}

}  // namespace ecd::store
