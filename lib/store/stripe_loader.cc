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
#include "lib/store/store_core.h"
#include "lib/store/store_device.h"
#include "lib/store/store_flows.h"
#include "lib/store/stripe_buffer.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"

namespace ecd::store {

std::unique_ptr<StoreCore::BlockReads> StoreCore::StartLoad(const StripeRef& at,
                                                            const std::vector<int>& need,
                                                            StripeBuffer& buffer) {
  const ObjectRecord& object = at.object;
  const std::vector<const BlockRecord*>& by_index = at.by_index;  // Captured below.
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

// One LoadBlocks call: the reads of one stripe's blocks and what they found. `available` holds
// the blocks that read good, `tried` the blocks read (or found unreadable) so far.
class StripeLoad {
 public:
  StripeLoad(StoreCore& store, const StripeRef& at, const std::vector<int>& need,
             StripeBuffer& buffer, StoreCore::LoadReport* report)
      : store_(store),
        object_(at.object),
        stripe_(at.stripe),
        by_index_(at.by_index),
        need_(need),
        buffer_(buffer),
        report_(report),
        m_(static_cast<int>(at.object.data_blocks)),
        width_(static_cast<int>(at.by_index.size())),
        need_mask_(MaskOf(need)),
        tried_(width_, false) {
    if (report_ != nullptr) {
      read_mask_ = MaskOf(report_->read);
      bad_mask_ = MaskOf(report_->found_bad);
    }
  }

  // Waits for `reads` and takes in what each read found.
  void Finish(StoreCore::BlockReads& reads) {
    const std::vector<StoreCore::BlockRead> results = store_.FinishReads(object_, reads);
    for (size_t j = 0; j < results.size(); ++j) {
      tried_[reads.indices[j]] = true;
      if (results[j] == StoreCore::BlockRead::kGood) MarkAvailable(reads.indices[j]);
      if (reads.blocks[j] != nullptr && store_.DeviceOnline(reads.blocks[j]->device)) {
        Count(reads.indices[j], results[j]);
      }
    }
  }

  bool Good(int i) const { return available_.test(i); }
  bool AllNeededGood() const {
    return std::all_of(need_.begin(), need_.end(), [this](int i) { return Good(i); });
  }
  bool Enough() const { return static_cast<int>(available_.count()) >= m_; }

  // Reads blocks not tried yet (not flagged corrupt), as many at a time as are still missing,
  // until M are good or none is left.
  void ReadMore() {
    while (!Enough()) {
      StoreCore::BlockReads more;
      for (int i = 0; i < width_ && static_cast<int>(available_.count() + more.indices.size()) < m_;
           ++i) {
        if (tried_[i] || by_index_[i] == nullptr || by_index_[i]->corrupt) continue;
        more.indices.push_back(i);
        more.blocks.push_back(by_index_[i]);
        more.outs.push_back(buffer_.block(i));
      }
      if (more.indices.empty()) return;
      store_.StartReads(object_, more);
      Finish(more);
    }
  }

  // Last resort: blocks flagged corrupt earlier (perhaps by a transient read error); their
  // checksum still decides. One that reads good again is trusted again (its flag is cleared
  // unless the report says not to repair).
  void RetryCorrupt() {
    for (int i = 0; i < width_ && !Enough(); ++i) {
      const BlockRecord* b = by_index_[i];
      if (b == nullptr || !b->corrupt) continue;  // The others were tried already.
      const StoreCore::BlockRead result = store_.ReadBlock(object_, *b, buffer_.block(i));
      if (store_.DeviceOnline(b->device)) Count(i, result);
      if (result != StoreCore::BlockRead::kGood) continue;
      MarkAvailable(i);
      if (report_ == nullptr || report_->repair) {
        (void)store_.catalog_->SetBlockCorrupt(object_.id, stripe_, b->index, false);
      }
      if (report_ != nullptr) {
        auto& bad = report_->found_bad;
        bad.erase(std::remove(bad.begin(), bad.end(), i), bad.end());
        bad_mask_.reset(i);
      }
    }
  }

  // The blocks to rebuild, decided only after every read: a block of `need` that StartLoad
  // could not read (its device was offline then) may have read good since. With a report, the
  // blocks that read bad on the way too.
  std::vector<int> Wanted() const {
    std::vector<int> wanted;
    for (int i : need_) {
      if (!Good(i)) wanted.push_back(i);
    }
    if (report_ != nullptr) {
      for (int i : report_->found_bad) {
        if (!Good(i) && by_index_[i] != nullptr) wanted.push_back(i);
      }
    }
    return wanted;
  }

  // The good blocks, ascending.
  std::vector<int> Available() const {
    std::vector<int> out;
    for (int i = 0; i < width_; ++i) {
      if (available_.test(i)) out.push_back(i);
    }
    return out;
  }
  size_t available_count() const { return available_.count(); }

 private:
  void MarkAvailable(int i) { available_.set(i); }

  // Counts one finished read of block i in the report.
  void Count(int i, StoreCore::BlockRead result) {
    if (report_ == nullptr) return;
    ++report_->blocks_read;
    if (!read_mask_.test(i)) {
      report_->read.push_back(i);
      read_mask_.set(i);
    }
    if (result == StoreCore::BlockRead::kGood) {
      ++report_->good_reads;
      return;
    }
    if (result == StoreCore::BlockRead::kCorrupt) ++report_->corrupt_reads;
    if (!need_mask_.test(i) && !bad_mask_.test(i)) {
      report_->found_bad.push_back(i);
      bad_mask_.set(i);
    }
  }

  StoreCore& store_;
  const ObjectRecord& object_;
  const uint64_t stripe_;
  const std::vector<const BlockRecord*>& by_index_;
  const std::vector<int>& need_;
  StripeBuffer& buffer_;
  StoreCore::LoadReport* const report_;
  const int m_;
  const int width_;
  const ec::BlockMask need_mask_;
  std::vector<bool> tried_;
  ec::BlockMask available_;  // the blocks that read good
  ec::BlockMask read_mask_;  // report_->read, when there is a report
  ec::BlockMask bad_mask_;   // report_->found_bad, likewise
};

absl::StatusOr<std::vector<int>> StoreCore::LoadBlocks(
    const StripeRef& at, const std::vector<int>& need, StripeBuffer& buffer,
    absl::string_view outcome, std::unique_ptr<BlockReads> first, LoadReport* report) {
  const auto& [object, stripe, codec, by_index] = at;
  for (int i : need) {
    if (by_index[i] == nullptr) {  // Nothing to check a rebuilt block against.
      return absl::DataLossError(absl::StrCat("the catalog has no block ", i, " of stripe ", stripe,
                                              " of \"", object.name, "\".", outcome,
                                              " Run `ecctl recover ", object.name, "`"));
    }
  }
  if (first == nullptr) first = StartLoad(at, need, buffer);
  StripeLoad load(*this, at, need, buffer, report);
  load.Finish(*first);
  if (load.AllNeededGood()) return std::vector<int>{};
  load.ReadMore();
  load.RetryCorrupt();
  if (!load.Enough()) {
    return absl::DataLossError(absl::StrCat(
        "stripe ", stripe, " of \"", object.name, "\" has only ", load.available_count(),
        " readable blocks of the ", object.data_blocks, " needed: more than ", object.parity_blocks,
        " blocks are lost.", outcome,
        " Bring failed devices back online (`ecctl device online`) and retry; otherwise "
        "restore this object from a backup"));
  }
  std::vector<int> wanted = load.Wanted();
  if (wanted.empty()) return wanted;
  absl::StatusOr<int> failed = RebuildInBuffer(at, buffer, load.Available(), wanted);
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

absl::StatusOr<int> StoreCore::RebuildInBuffer(const StripeRef& at, StripeBuffer& buffer,
                                               const std::vector<int>& available,
                                               const std::vector<int>& wanted) {
  const auto& [object, stripe, codec, by_index] = at;
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
