// The Store's stripe loader: reads the blocks of a stripe a flow needs, and rebuilds the bad
// ones from the others.
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

std::unique_ptr<Store::BlockReads> Store::StartLoad(const ObjectRecord& object,
                                                    const std::vector<const BlockRecord*>& by_index,
                                                    const std::vector<int>& need,
                                                    StripeBuffer& buffer) {
  const size_t m = object.data_blocks;
  auto reads = std::make_unique<BlockReads>();
  std::vector<bool> chosen(by_index.size(), false);
  auto readable = [&](size_t i) {
    const BlockRecord* b = by_index[i];
    return b != nullptr && !b->corrupt && DeviceOnline(b->device);
  };
  auto add = [&](size_t i) {
    chosen[i] = true;
    reads->indices.push_back(static_cast<int>(i));
    reads->blocks.push_back(by_index[i]);
    reads->outs.push_back(buffer.block(static_cast<int>(i)));
  };
  for (int i : need) {
    if (readable(i)) add(i);
  }
  if (reads->indices.size() < need.size()) {  // Some will be rebuilt: read M blocks in all.
    for (size_t i = 0; i < by_index.size() && reads->indices.size() < m; ++i) {
      if (!chosen[i] && readable(i)) add(i);
    }
  }
  StartReads(object, *reads);
  return reads;
}

absl::StatusOr<std::vector<int>> Store::LoadBlocks(const ObjectRecord& object, uint64_t stripe,
                                                   const std::shared_ptr<const ec::Codec>& codec,
                                                   const std::vector<const BlockRecord*>& by_index,
                                                   const std::vector<int>& need,
                                                   StripeBuffer& buffer, absl::string_view outcome,
                                                   std::unique_ptr<BlockReads> first,
                                                   LoadReport* report) {
  const int m = static_cast<int>(object.data_blocks);
  const int width = static_cast<int>(by_index.size());
  for (int i : need) {
    if (by_index[i] == nullptr) {  // Nothing to check a rebuilt block against.
      return absl::DataLossError(absl::StrCat("the catalog has no block ", i, " of stripe ", stripe,
                                              " of \"", object.name, "\".", outcome,
                                              " Run `ecctl recover ", object.name, "`"));
    }
  }
  if (first == nullptr) first = StartLoad(object, by_index, need, buffer);
  std::vector<bool> tried(width, false);
  std::vector<int> available;
  auto in_need = [&](int i) { return std::find(need.begin(), need.end(), i) != need.end(); };
  // Counts one finished read of block i (for `report`).
  auto count = [&](int i, BlockRead result) {
    if (report == nullptr) return;
    ++report->blocks_read;
    if (std::find(report->read.begin(), report->read.end(), i) == report->read.end()) {
      report->read.push_back(i);
    }
    if (result == BlockRead::kGood) {
      ++report->good_reads;
      return;
    }
    if (result == BlockRead::kCorrupt) ++report->corrupt_reads;
    if (!in_need(i) && std::find(report->found_bad.begin(), report->found_bad.end(), i) ==
                           report->found_bad.end()) {
      report->found_bad.push_back(i);
    }
  };
  auto finish = [&](BlockReads& reads) {
    const std::vector<BlockRead> results = FinishReads(object, reads);
    for (size_t j = 0; j < results.size(); ++j) {
      tried[reads.indices[j]] = true;
      if (results[j] == BlockRead::kGood) available.push_back(reads.indices[j]);
      if (reads.blocks[j] != nullptr && DeviceOnline(reads.blocks[j]->device)) {
        count(reads.indices[j], results[j]);
      }
    }
  };
  finish(*first);
  auto good = [&](int i) {
    return std::find(available.begin(), available.end(), i) != available.end();
  };
  if (std::all_of(need.begin(), need.end(), good)) return std::vector<int>{};
  // More blocks, as many at a time as are still missing, until M are good.
  while (static_cast<int>(available.size()) < m) {
    BlockReads more;
    for (int i = 0; i < width && static_cast<int>(available.size() + more.indices.size()) < m;
         ++i) {
      if (tried[i] || by_index[i] == nullptr || by_index[i]->corrupt) continue;
      more.indices.push_back(i);
      more.blocks.push_back(by_index[i]);
      more.outs.push_back(buffer.block(i));
    }
    if (more.indices.empty()) break;
    StartReads(object, more);
    finish(more);
  }
  // Last resort: blocks flagged corrupt earlier (perhaps by a transient read error); their
  // checksum still decides. One that reads good again is trusted again.
  for (int i = 0; i < width && static_cast<int>(available.size()) < m; ++i) {
    const BlockRecord* b = by_index[i];
    if (b == nullptr || !b->corrupt) continue;  // The others were tried above.
    const BlockRead result = ReadBlock(object, *b, buffer.block(i));
    if (DeviceOnline(b->device)) count(i, result);
    if (result == BlockRead::kGood) {
      available.push_back(i);
      if (report == nullptr || report->repair) {
        (void)catalog_->SetBlockCorrupt(object.id, stripe, b->index, false);
      }
      if (report != nullptr) {
        auto& bad = report->found_bad;
        bad.erase(std::remove(bad.begin(), bad.end(), i), bad.end());
      }
    }
  }
  if (static_cast<int>(available.size()) < m) {
    return absl::DataLossError(absl::StrCat(
        "stripe ", stripe, " of \"", object.name, "\" has only ", available.size(),
        " readable blocks of the ", m, " needed: more than ", object.parity_blocks,
        " blocks are lost.", outcome,
        " Bring failed devices back online (`ecctl device online`) and retry; otherwise "
        "restore this object from a backup"));
  }
  // What to rebuild is decided only now, after every read: a block of `need` that StartLoad
  // could not read (its device was offline then) may have read good since.
  std::vector<int> wanted;
  for (int i : need) {
    if (!good(i)) wanted.push_back(i);
  }
  if (report != nullptr) {  // Rebuild what read bad on the way too.
    for (int i : report->found_bad) {
      if (!good(i) && by_index[i] != nullptr) wanted.push_back(i);
    }
  }
  if (wanted.empty()) return wanted;
  std::sort(available.begin(), available.end());
  absl::StatusOr<int> failed = RebuildInBuffer(codec, by_index, buffer, available, wanted);
  if (!failed.ok()) return failed.status();
  if (*failed >= 0) {
    return absl::DataLossError(absl::StrCat(
        "stripe ", stripe, " block ", *failed, " of \"", object.name,
        "\" rebuilt to bytes that fail its checksum: more blocks are damaged than their "
        "checksums show.",
        outcome, " Run `ecctl recover ", object.name, "` and check the devices"));
  }
  return wanted;
}

absl::StatusOr<int> Store::RebuildInBuffer(const std::shared_ptr<const ec::Codec>& codec,
                                           const std::vector<const BlockRecord*>& by_index,
                                           StripeBuffer& buffer, const std::vector<int>& available,
                                           const std::vector<int>& wanted) {
  ec::RecoverTask task{codec,
                       {buffer.views.begin(), buffer.views.end()},
                       {available.begin(), available.end()},
                       {wanted.begin(), wanted.end()}};
  if (absl::Status s = engine_->Run(task); !s.ok()) return s;
  for (int i : wanted) {
    if (by_index[i] != nullptr && Crc32c(buffer.block(i)) != by_index[i]->crc32c) return i;
  }
  return -1;
}

}  // namespace ecd::store
