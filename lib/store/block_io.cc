// The Store's block I/O: starting and finishing a stripe's writes and reads, flushes, and giving
// extents back.
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

absl::Status StoreCore::PrepareWrites(absl::Span<const BlockRecord> blocks,
                                      std::vector<bool>& touched, StripeWrite& write) {
  write.Reset(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    write.devices[i] = NamespaceOf(blocks[i].device, /*online_only=*/false);
    if (write.devices[i] == nullptr) {
      write.devices.clear();
      return absl::UnavailableError(absl::StrCat("device ", blocks[i].device, " is gone"));
    }
    touched[blocks[i].device] = true;
  }
  return absl::OkStatus();
}

void StoreCore::StartBlockWrites(StripeBuffer& buffer, absl::Span<BlockRecord> blocks,
                                 StripeWrite& write, absl::Span<const uint32_t> checksums) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    blocks[i].crc32c = checksums.empty() ? Crc32c(buffer.block(static_cast<int>(i))) : checksums[i];
    write.devices[i]->WriteAsync(blocks[i].lba, buffer.padded(static_cast<int>(i)),
                                 TrackWrite(blocks[i].device, write.batch.Track(&write.status[i])));
  }
}

absl::Status StoreCore::StartWriteStripe(const ObjectRecord& object, uint64_t stripe,
                                         StripeBuffer& buffer, std::vector<BlockRecord>& records,
                                         std::vector<bool>& touched, StripeWrite& write) {
  const size_t first = records.size();
  if (absl::Status s = PlaceStripe(object, stripe, records); !s.ok()) return s;
  const absl::Span<BlockRecord> blocks = absl::MakeSpan(records).subspan(first);
  if (absl::Status s = PrepareWrites(blocks, touched, write); !s.ok()) return s;
  StartBlockWrites(buffer, blocks, write);
  return absl::OkStatus();
}

void StoreCore::BlockIo::Reset(size_t n) {
  status.assign(n, absl::OkStatus());
  devices.assign(n, nullptr);
}

absl::Status StoreCore::BlockIo::Finish() {
  batch.Wait();
  devices.clear();
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status StoreCore::WriteStripe(const ObjectRecord& object, uint64_t stripe,
                                    StripeBuffer& buffer, std::vector<BlockRecord>& records,
                                    std::vector<bool>& touched) {
  StripeWrite write;
  absl::Status started = StartWriteStripe(object, stripe, buffer, records, touched, write);
  absl::Status finished = write.Finish();
  return started.ok() ? finished : started;
}

absl::Status StoreCore::FlushEvery(uint64_t wrote, uint64_t& unflushed,
                                   const std::vector<bool>& touched) {
  if (options_.flush_bytes == 0) return absl::OkStatus();
  unflushed += wrote;
  if (unflushed < options_.flush_bytes) return absl::OkStatus();
  unflushed = 0;
  return FlushDevices(touched);
}

absl::Status StoreCore::FlushDevices(const std::vector<bool>& touched) {
  for (size_t d = 0; d < touched.size(); ++d) {
    if (!touched[d]) continue;
    std::shared_ptr<Namespace> ns = NamespaceOf(static_cast<uint32_t>(d), /*online_only=*/false);
    absl::Status s = ns == nullptr ? absl::UnavailableError("the device is gone") : ns->Flush();
    if (!s.ok()) {
      // After a failed flush the device may have dropped any write since its last good one, and
      // a later flush may "succeed" without them: it takes no new blocks from now on.
      {
        MutexLock lock(mu_);
        ++devices_[d]->flush_failures;
      }
      MarkSuspect(static_cast<uint32_t>(d), absl::StrCat("flush failed: ", s.message()));
      return absl::UnavailableError(absl::StrCat(
          "flush of device ", d, " failed (", s.message(),
          "); nothing was committed and the device is now failing (suspect: it takes no new "
          "blocks and is being evacuated). Retry: the data will go to other devices"));
    }
  }
  return absl::OkStatus();
}

void StoreCore::FreeExtents(absl::Span<const BlockRecord> blocks) {
  MutexLock lock(mu_);
  for (const BlockRecord& b : blocks) {
    if (b.device >= devices_.size()) continue;
    space_->Release(b.device, b.lba, b.lba_count);
    absl::Status s = devices_[b.device]->allocator.Free(b.lba, b.lba_count);
    if (!s.ok()) Log(LogLevel::kError, "device %d: %s", b.device, s.message());
  }
}

void StoreCore::DiscardExtents(absl::Span<const BlockRecord> blocks) {
  for (const BlockRecord& b : blocks) {
    if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) ns->Deallocate(b.lba, b.lba_count);
  }
  FreeExtents(blocks);
}

void StoreCore::StartReads(const ObjectRecord& object, BlockReads& reads) {
  const size_t n = reads.blocks.size();
  BlockIo& io = reads.io;
  io.Reset(n);
  reads.checksum_failed.assign(n, 0);
  for (size_t j = 0; j < n; ++j) {
    const BlockRecord* b = reads.blocks[j];
    if (b == nullptr) continue;
    if (b->lba_count != LbasPerBlock(object.block_size)) {
      // A catalog row that disagrees with its object: reading it would overrun the block's room
      // in the stripe buffer. Unreadable, so the block is rebuilt from the others.
      Log(LogLevel::kError,
          "object %s stripe %d block %d: the catalog gives %d LBAs where a %d-byte block has "
          "%d; not read (run `ecctl recover %s`)",
          object.name, b->stripe, b->index, b->lba_count, object.block_size,
          LbasPerBlock(object.block_size), object.name);
      continue;
    }
    io.devices[j] = NamespaceOf(b->device, /*online_only=*/true);
    if (io.devices[j] == nullptr) continue;
    const absl::Span<uint8_t> padded(reads.outs[j].data(),
                                     static_cast<size_t>(b->lba_count) * options_.lba_size);
    // The check runs before the batch counts the read done, so FinishReads sees its verdict.
    io.devices[j]->ReadAsync(
        b->lba, padded,
        [done = io.batch.Track(&io.status[j]),
         bytes = padded.first(std::min<size_t>(padded.size(), object.block_size)),
         expected = b->crc32c, failed = &reads.checksum_failed[j]](absl::Status s) {
          if (s.ok() && Crc32c(bytes) != expected) {
            *failed = 1;
            s = absl::DataLossError("checksum mismatch");
          }
          done(std::move(s));
        });
  }
}

std::vector<StoreCore::BlockRead> StoreCore::FinishReads(const ObjectRecord& object,
                                                         BlockReads& reads) {
  BlockIo& io = reads.io;
  io.batch.Wait();
  const size_t n = reads.blocks.size();
  std::vector<BlockRead> results(n, BlockRead::kUnreadable);
  bool marked = false;
  for (size_t j = 0; j < n; ++j) {
    if (io.devices[j] == nullptr) continue;
    io.devices[j] = nullptr;
    const BlockRecord& b = *reads.blocks[j];
    absl::Status& s = io.status[j];
    if (reads.checksum_failed[j]) {
      Log(LogLevel::kWarning,
          "object %s stripe %d block %d on device %d LBA %d fails its CRC32C; not served, "
          "marked for rebuild",
          object.name, b.stripe, b.index, b.device, b.lba);
    } else if (!s.ok()) {
      Log(LogLevel::kWarning, "object %s stripe %d block %d: %s", object.name, b.stripe, b.index,
          s.message());
    }
    if (!s.ok()) {
      if (!b.corrupt) {
        (void)catalog_->SetBlockCorrupt(object.id, b.stripe, b.index, true);
        marked = true;
      }
      results[j] = absl::IsDataLoss(s) ? BlockRead::kCorrupt : BlockRead::kUnreadable;
    } else {
      results[j] = BlockRead::kGood;
    }
  }
  if (marked) NotifyRepair();  // Heal on read: the repair planner rebuilds the stripe.
  return results;
}

StoreCore::BlockRead StoreCore::ReadBlock(const ObjectRecord& object, const BlockRecord& b,
                                          absl::Span<uint8_t> out) {
  BlockReads reads;
  reads.blocks.push_back(&b);
  reads.outs.push_back(out);
  StartReads(object, reads);
  return FinishReads(object, reads)[0];
}

}  // namespace ecd::store
