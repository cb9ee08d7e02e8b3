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

absl::StatusOr<UpdateResult> Store::Update(absl::string_view name, uint64_t offset,
                                           ByteSource& data, bool append,
                                           const Interrupt& interrupt) {
  // The object's lock and the stripes' memory are taken once the source has bytes: a source
  // that sends nothing holds neither.
  if (absl::StatusOr<bool> more = data.Await(); !more.ok()) return more.status();
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/true, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
  if (!found.ok()) return LookupError(found.status(), name, options_.max_name_length);
  ObjectRecord object = *found;
  if (offset > object.size) {
    return absl::OutOfRangeError(
        absl::StrCat("offset ", offset, " is past the end of \"", name, "\" (", object.size,
                     " bytes); an update starts inside the object, or at its end (", object.size,
                     ") with append"));
  }
  const int m = static_cast<int>(object.data_blocks);
  const int k = static_cast<int>(object.parity_blocks);
  const int width = m + k;
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = CodecFor(object.matrix, m, k);
  if (!codec.ok()) return codec.status();
  const uint64_t bs = object.block_size;
  const uint64_t stripe_bytes = bs * static_cast<uint64_t>(m);
  // `old` holds a stripe's current blocks as read; `fresh` its new data and parity blocks.
  absl::StatusOr<StripeSet> buffers = AllocateStripes({width, width}, bs, 0, interrupt);
  if (!buffers.ok()) return buffers.status();
  StripeBuffer& old = (*buffers)[0];
  StripeBuffer& fresh = (*buffers)[1];

  UpdateResult result;
  std::vector<BlockRecord> replaced;    // New extents of rewritten blocks, to commit.
  std::vector<BlockRecord> superseded;  // Their old extents, freed after the commit.
  std::vector<BlockRecord> added;       // Blocks of appended stripes, to commit.
  std::vector<bool> touched(devices_.size(), false);
  uint64_t unflushed = 0;  // Bytes written since the last flush (FlushEvery).
  // Nothing uncommitted is in the catalog, so giving back the new extents undoes everything.
  auto abandon = [&](absl::Status status) -> absl::Status {
    DiscardExtents(replaced);
    DiscardExtents(added);
    return status;
  };
  const uint64_t limit = append ? std::numeric_limits<uint64_t>::max() : object.size;
  uint64_t pos = offset;  // The object offset of the next byte of `data`.
  bool eof = false;
  for (uint64_t stripe = offset / stripe_bytes; !eof; ++stripe) {
    const uint64_t base = stripe * stripe_bytes;
    const uint64_t lo = pos - base;
    uint64_t hi = lo;  // The source's bytes go to [lo, hi) of this stripe's data.
    while (hi < stripe_bytes) {
      absl::StatusOr<size_t> n = data.Read(fresh.block(static_cast<int>(hi / bs)).subspan(hi % bs));
      if (!n.ok()) return abandon(n.status());
      if (*n == 0) {
        eof = true;
        break;
      }
      hi += *n;
    }
    if (hi == lo) break;
    if (base + hi > limit) {
      return abandon(absl::OutOfRangeError(absl::StrCat(
          "the update runs past the end of \"", name, "\" (", object.size,
          " bytes); nothing was changed. Send at most ", object.size - offset,
          " bytes from offset ", offset, ", or pass append (`ecctl update --append`) to grow it")));
    }
    pos = base + hi;
    result.bytes_written += hi - lo;
    const int first = static_cast<int>(lo / bs);
    const int last = static_cast<int>((hi - 1) / bs);

    if (stripe >= object.stripe_count) {  // Past the old end (lo is 0): encode it fresh.
      std::memset(fresh.block(last).data() + (hi - static_cast<uint64_t>(last) * bs), 0,
                  static_cast<uint64_t>(last + 1) * bs - hi);
      for (int i = last + 1; i < m; ++i) std::memset(fresh.block(i).data(), 0, bs);
      ec::CreateTask task{*codec, {}, {}};
      for (int i = 0; i < m; ++i) task.data.push_back(fresh.block(i));
      for (int j = 0; j < k; ++j) task.parity.push_back(fresh.block(m + j));
      if (absl::Status s = engine_->Run(task); !s.ok()) return abandon(s);
      if (absl::Status s = WriteStripe(object, stripe, fresh, added, touched); !s.ok()) {
        return abandon(s);
      }
      if (absl::Status s = FlushEvery(static_cast<uint64_t>(width) * bs, unflushed, touched);
          !s.ok()) {
        return abandon(s);
      }
      ++result.stripes_appended;
      continue;
    }

    // An existing stripe. Overwritten whole: encoded fresh, nothing read. Otherwise the old
    // touched data blocks and the old parity in, the delta through the engine.
    absl::StatusOr<std::vector<BlockRecord>> rows = catalog_->GetBlocks(object.id, stripe, 1);
    if (!rows.ok()) return abandon(rows.status());
    size_t row = 0;
    const std::vector<const BlockRecord*> by_index = TakeStripe(*rows, row, stripe, width);
    std::vector<int> need;  // The blocks rewritten: the changed data blocks and the parity.
    if (lo == 0 && hi == stripe_bytes) {
      for (int i = 0; i < width; ++i) need.push_back(i);
      ec::CreateTask task{*codec, {}, {}};
      for (int i = 0; i < m; ++i) task.data.push_back(fresh.block(i));
      for (int j = 0; j < k; ++j) task.parity.push_back(fresh.block(m + j));
      if (absl::Status s = engine_->Run(task); !s.ok()) return abandon(s);
    } else {
      std::vector<int> changed;
      for (int i = first; i <= last; ++i) changed.push_back(i);
      need = changed;
      for (int j = 0; j < k; ++j) need.push_back(m + j);
      if (absl::StatusOr<std::vector<int>> rebuilt =
              LoadBlocks(object, stripe, *codec, by_index, need, old, " Nothing was changed.");
          !rebuilt.ok()) {
        return abandon(rebuilt.status());
      }
      ec::UpdateTask task{*codec, {changed.begin(), changed.end()}, {}, {}, {}, {}};
      for (int i : changed) {
        // The new block: the source's bytes in [from, to), the old bytes around them.
        const uint64_t block_lo = static_cast<uint64_t>(i) * bs;
        const uint64_t from = std::max(lo, block_lo) - block_lo;
        const uint64_t to = std::min(hi, block_lo + bs) - block_lo;
        std::memcpy(fresh.block(i).data(), old.block(i).data(), from);
        std::memcpy(fresh.block(i).data() + to, old.block(i).data() + to, bs - to);
        task.old_data.push_back(old.block(i));
        task.new_data.push_back(fresh.block(i));
      }
      for (int j = 0; j < k; ++j) {
        task.old_parity.push_back(old.block(m + j));
        task.new_parity.push_back(fresh.block(m + j));
      }
      if (absl::Status s = engine_->Run(task); !s.ok()) return abandon(s);
    }

    // Copy-on-write: every changed block to a new extent; the live ones are not touched.
    std::map<uint32_t, int> occupied;
    for (const BlockRecord* b : by_index) {
      if (b != nullptr) ++occupied[b->device];
    }
    for (int i : need) {
      if (by_index[i] == nullptr) {
        return abandon(absl::DataLossError(
            absl::StrCat("the catalog has no block ", i, " for stripe ", stripe, " of \"", name,
                         "\"; nothing was changed. Run `ecctl recover ", name, "`")));
      }
      absl::StatusOr<BlockRecord> copy = AllocateCopy(name, *by_index[i], occupied);
      if (!copy.ok()) return abandon(copy.status());
      copy->crc32c = Crc32c(fresh.block(i));
      replaced.push_back(*copy);
      std::shared_ptr<Namespace> ns = NamespaceOf(copy->device, /*online_only=*/false);
      if (ns == nullptr) {
        return abandon(absl::UnavailableError(absl::StrCat("device ", copy->device, " is gone")));
      }
      if (absl::Status s = ns->Write(copy->lba, fresh.padded(i)); !s.ok()) return abandon(s);
      touched[copy->device] = true;
      superseded.push_back(*by_index[i]);
    }
    if (absl::Status s = FlushEvery(need.size() * bs, unflushed, touched); !s.ok()) {
      return abandon(s);
    }
    ++result.stripes_updated;
  }
  if (result.bytes_written == 0) {
    result.object = object;
    return result;
  }

  const uint64_t size = std::max(object.size, pos);
  const uint64_t stripes = std::max(object.stripe_count, (size + stripe_bytes - 1) / stripe_bytes);
  ObjectRecord after = object;
  after.size = size;
  after.stripe_count = stripes;
  after.version = object.version + 1;
  std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
  op->SetObject(after);
  for (const BlockRecord& b : replaced) op->AddBlock(b);
  for (const BlockRecord& b : added) op->AddBlock(b);
  if (absl::Status s = op->Write(touched); !s.ok()) return abandon(s);
  // Data first, then the catalog: the commit below is the moment the new version exists.
  if (absl::Status s = FlushDevices(touched); !s.ok()) return abandon(s);
  if (absl::Status s = data.BeforeCommit(); !s.ok()) return abandon(s);
  if (absl::Status s = catalog_->CommitUpdate(object.id, object.version, replaced, added, size,
                                              stripes, op->seq());
      !s.ok()) {
    return abandon(s);
  }
  op->Commit();
  CountStripes(object.parity_blocks,
               static_cast<int64_t>(stripes) - static_cast<int64_t>(object.stripe_count));
  for (const BlockRecord& b : superseded) {
    if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) ns->Deallocate(b.lba, b.lba_count);
  }
  FreeExtents(superseded);
  object.size = size;
  object.stripe_count = stripes;
  ++object.version;
  result.object = object;
  return result;
}

}  // namespace ecd::store
