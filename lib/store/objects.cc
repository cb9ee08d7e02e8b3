// Store::Stat, List and Delete: what the catalog says of objects, checked against the devices
// on request, and their removal.
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

absl::StatusOr<ObjectStatus> StoreCore::Health(const ObjectRecord& object, bool with_blocks,
                                               bool verify, bool per_stripe,
                                               const Interrupt& interrupt) {
  ObjectStatus status;
  status.object = object;
  const uint32_t m = object.data_blocks;
  const uint32_t width = m + object.parity_blocks;
  StripeSet buffers;
  StripeBuffer* buffer = nullptr;
  if (verify) {
    absl::StatusOr<StripeSet> allocated =
        AllocateStripes({static_cast<int>(width)}, object.block_size, 0, interrupt);
    if (!allocated.ok()) return allocated.status();
    buffers = std::move(*allocated);
    buffer = &buffers[0];
  }
  for (uint64_t batch = 0; batch < object.stripe_count; batch += kStripeBatch) {
    if (absl::Status s = interrupt.Check(
            absl::StrCat("checking stripe ", batch, " of ", object.stripe_count, "; stat stopped"));
        !s.ok()) {
      return s;
    }
    const uint64_t count = std::min(kStripeBatch, object.stripe_count - batch);
    absl::StatusOr<std::vector<BlockRecord>> blocks = catalog_->GetBlocks(object.id, batch, count);
    if (!blocks.ok()) return blocks.status();
    size_t row = 0;
    for (uint64_t stripe = batch; stripe < batch + count; ++stripe) {
      StripeStatus ss;
      ss.index = stripe;
      const size_t first = row;
      while (row < blocks->size() && (*blocks)[row].stripe == stripe) ++row;
      std::vector<bool> healthy(row - first);
      std::vector<size_t> to_read;  // positions in `healthy`
      for (size_t j = 0; j < healthy.size(); ++j) {
        const BlockRecord& b = (*blocks)[first + j];
        healthy[j] = !b.corrupt && DeviceOnline(b.device);
        if (healthy[j] && verify) to_read.push_back(j);
      }
      // The stripe's blocks are read together, `width` at a time (one buffer slot each).
      for (size_t at = 0; at < to_read.size(); at += width) {
        BlockReads reads;
        for (size_t j = at; j < std::min<size_t>(to_read.size(), at + width); ++j) {
          reads.blocks.push_back(&(*blocks)[first + to_read[j]]);
          reads.outs.push_back(buffer->block(static_cast<int>(j - at)));
        }
        StartReads(object, reads);
        const std::vector<BlockRead> results = FinishReads(object, reads);
        for (size_t j = 0; j < results.size(); ++j) {
          healthy[to_read[at + j]] = results[j] == BlockRead::kGood;
        }
      }
      for (size_t j = 0; j < healthy.size(); ++j) {
        ss.healthy_blocks += healthy[j];
        if (with_blocks) ss.blocks.push_back(BlockStatus{(*blocks)[first + j], healthy[j]});
      }
      if (ss.healthy_blocks < width) ++status.degraded_stripes;
      if (ss.healthy_blocks < m) ++status.lost_stripes;
      if (per_stripe) status.stripes.push_back(std::move(ss));
    }
  }
  return status;
}

absl::StatusOr<ObjectStatus> StoreCore::Stat(absl::string_view name, bool with_blocks, bool verify,
                                             const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/false, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> object = catalog_->GetObject(name);
  if (!object.ok()) return LookupError(object.status(), name, options_.max_name_length);
  return Health(*object, with_blocks, verify, /*per_stripe=*/true, interrupt);
}

absl::StatusOr<std::optional<ObjectStatus>> StoreCore::ListedHealth(const ObjectRecord& o) {
  // No object lock (a repair or scrub batch may hold one for long). An object deleted or
  // updated since the listing would show its vanished blocks as lost: such an object is looked
  // up again, and skipped or measured as it is now.
  absl::StatusOr<ObjectStatus> s = Health(o, false, false, /*per_stripe=*/false);
  if (!s.ok()) return s.status();
  if (s->lost_stripes == 0) return *std::move(s);
  absl::StatusOr<ObjectRecord> now = catalog_->GetObject(o.name);
  if (absl::IsNotFound(now.status())) return std::nullopt;  // deleted meanwhile
  if (!now.ok()) return now.status();
  if (now->id == o.id && now->version == o.version) return *std::move(s);
  s = Health(*now, false, false, /*per_stripe=*/false);
  if (!s.ok()) return s.status();
  return *std::move(s);
}

absl::StatusOr<ObjectListing> StoreCore::List(const ListQuery& query, bool with_health) {
  absl::StatusOr<ListPage> page = ListPageOf(
      query, [this](absl::string_view from, bool after, absl::string_view before, size_t limit) {
        return catalog_->ListObjectsFrom(from, after, before, limit);
      });
  if (!page.ok()) return page.status();
  ObjectListing out;
  out.common_prefixes = std::move(page->common_prefixes);
  out.next_page_token = std::move(page->next_page_token);
  for (ObjectRecord& o : page->objects) {
    if (!with_health) {
      out.objects.push_back(ObjectStatus{.object = std::move(o)});
      continue;
    }
    absl::StatusOr<std::optional<ObjectStatus>> s = ListedHealth(o);
    if (!s.ok()) return s.status();
    if (s->has_value()) out.objects.push_back(**std::move(s));
  }
  return out;
}

absl::StatusOr<uint64_t> StoreCore::Delete(absl::string_view name, const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/true, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> object = catalog_->GetObject(name);
  if (!object.ok()) return LookupError(object.status(), name, options_.max_name_length);
  std::vector<BlockRecord> blocks;
  if (absl::Status s =
          catalog_->ForEachBlockOf(object->id, [&](const BlockRecord& b) { blocks.push_back(b); });
      !s.ok()) {
    return s;
  }
  // A tombstone on every device, flushed before the delete is acknowledged, so that a catalog
  // rebuilt from the devices keeps the object deleted.
  std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
  std::vector<uint32_t> devices;
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    if (DeviceOnline(d)) devices.push_back(d);
  }
  op->DeleteObject(object->id, std::move(devices));
  std::vector<bool> touched(devices_.size(), false);
  if (absl::Status s = op->Write(touched); !s.ok()) return s;
  if (absl::Status s = FlushDevices(touched); !s.ok()) return s;
  if (absl::Status s = catalog_->DeleteObject(object->id, op->seq()); !s.ok()) {
    if (IsCommitOutcomeUnknown(s)) op->LeaveUnresolved();  // Its extents stay allocated.
    return s;
  }
  op->Commit();
  CountStripes(object->parity_blocks, -static_cast<int64_t>(object->stripe_count));
  CountObjects(-1, -static_cast<int64_t>(object->size));
  uint64_t freed = 0;
  for (const BlockRecord& b : blocks) {
    freed += static_cast<uint64_t>(b.lba_count) * options_.lba_size;
    if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) ns->Deallocate(b.lba, b.lba_count);
  }
  FreeExtents(blocks);
  return freed;
}

}  // namespace ecd::store
