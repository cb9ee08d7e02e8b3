// RecordKeeper: numbering, writing and resolving operations' block records.
#include "lib/records/record_keeper.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::store {

RecordKeeper::RecordKeeper(Hooks hooks, uint64_t next_seq)
    : hooks_(std::move(hooks)), next_seq_(std::max<uint64_t>(next_seq, 1)) {}

RecordKeeper::~RecordKeeper() = default;

void RecordKeeper::SetLog(uint32_t device, std::shared_ptr<RecordLog> log) {
  MutexLock lock(mu_);
  if (log == nullptr) {
    logs_.erase(device);
  } else {
    logs_[device] = std::move(log);
  }
}

std::shared_ptr<RecordLog> RecordKeeper::log(uint32_t device) const {
  MutexLock lock(mu_);
  auto it = logs_.find(device);
  return it == logs_.end() ? nullptr : it->second;
}

uint64_t RecordKeeper::CommittedThroughLocked() const {
  return in_flight_.empty() ? next_seq_ - 1 : *in_flight_.begin() - 1;
}

uint64_t RecordKeeper::committed_through() const {
  MutexLock lock(mu_);
  return CommittedThroughLocked();
}

uint64_t RecordKeeper::max_seq() const {
  MutexLock lock(mu_);
  return next_seq_ - 1;
}

absl::Status RecordKeeper::Snapshot(uint32_t device) {
  std::shared_ptr<RecordLog> log = this->log(device);
  if (log == nullptr) return absl::OkStatus();
  std::lock_guard turn(turnstile_);
  std::unique_lock gate(gate_);
  return SnapshotLocked(device, log);
}

// With the gate held exclusively no operation has records written and unresolved: the catalog
// is exactly what the device holds, and every record of the snapshot carries the highest
// number given out, above every resolved operation and below every later one.
absl::Status RecordKeeper::SnapshotLocked(uint32_t device, const std::shared_ptr<RecordLog>& log) {
  uint64_t mark;
  {
    MutexLock lock(mu_);
    mark = next_seq_ - 1;
  }
  auto source = [&](PageBuilder& page, const std::function<absl::Status()>& page_full) {
    int64_t current = -1;
    ObjectHeader header;
    header.seq = mark;
    absl::Status s = hooks_.blocks_on_device(
        device, [&](const ObjectRecord& object, const BlockRecord& b) -> absl::Status {
          BlockEntry e{mark,  object.id,   b.stripe, b.index,
                       b.lba, b.lba_count, b.crc32c, object.block_size};
          if (object.id != current) {
            header.object = object;
            current = object.id;
            if (!page.AddObject(header)) {
              if (absl::Status s = page_full(); !s.ok()) return s;
              page.AddObject(header);
            }
          }
          if (!page.AddBlock(e)) {
            if (absl::Status s = page_full(); !s.ok()) return s;
            page.AddObject(header);
            page.AddBlock(e);
          }
          return absl::OkStatus();
        });
    if (!s.ok() || !hooks_.empty_objects) return s;
    return hooks_.empty_objects([&](const ObjectRecord& object) -> absl::Status {
      header.object = object;
      if (!page.AddObject(header)) {
        if (absl::Status full = page_full(); !full.ok()) return full;
        page.AddObject(header);
      }
      return absl::OkStatus();
    });
  };
  return log->Snapshot(source, mark, mark);
}

absl::Status RecordKeeper::CloseClean() {
  std::lock_guard turn(turnstile_);
  std::unique_lock gate(gate_);
  std::map<uint32_t, std::shared_ptr<RecordLog>> logs;
  uint64_t mark;
  {
    MutexLock lock(mu_);
    logs = logs_;
    mark = CommittedThroughLocked();
  }
  absl::Status first;
  for (auto& [device, log] : logs) {
    absl::Status s = log->WriteCheckpoint(/*clean=*/true, mark, mark);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

absl::Status RecordKeeper::MarkRunning(uint32_t device) {
  std::shared_ptr<RecordLog> log;
  uint64_t mark;
  {
    MutexLock lock(mu_);
    auto it = logs_.find(device);
    if (it == logs_.end()) return absl::OkStatus();
    log = it->second;
    mark = CommittedThroughLocked();
  }
  return log->WriteCheckpoint(/*clean=*/false, mark, mark);
}

RecordKeeper::Op::~Op() {
  if (!written_.empty() && !resolved_) Abort();
  if (seq_ != 0 && !resolved_) Resolve();
}

void RecordKeeper::Op::SetObject(const ObjectRecord& object) { object_ = object; }

void RecordKeeper::Op::AddBlock(const BlockRecord& block) {
  blocks_[block.device].push_back(block);
}

void RecordKeeper::Op::DeleteObject(int64_t object_id, std::vector<uint32_t> devices) {
  deleted_ = object_id;
  tombstone_devices_ = std::move(devices);
}

std::vector<std::unique_ptr<PageBuilder>> RecordKeeper::Op::Pages(uint32_t device,
                                                                  size_t page_bytes,
                                                                  uint64_t total_blocks) const {
  std::vector<std::unique_ptr<PageBuilder>> pages;
  pages.push_back(std::make_unique<PageBuilder>(page_bytes));
  auto next = [&]() { pages.push_back(std::make_unique<PageBuilder>(page_bytes)); };
  if (deleted_) {
    pages.back()->AddTombstone({seq_, *deleted_});
    return pages;
  }
  ObjectHeader header{seq_, *object_};
  pages.back()->AddObject(header);
  auto it = blocks_.find(device);
  if (it != blocks_.end()) {
    for (const BlockRecord& b : it->second) {
      BlockEntry e{seq_,  object_->id, b.stripe, b.index,
                   b.lba, b.lba_count, b.crc32c, object_->block_size};
      if (!pages.back()->AddBlock(e)) {
        next();
        pages.back()->AddObject(header);
        pages.back()->AddBlock(e);
      }
    }
  }
  if (!pages.back()->AddEnd({seq_, total_blocks})) {
    next();
    pages.back()->AddEnd({seq_, total_blocks});
  }
  return pages;
}

absl::Status RecordKeeper::Op::Write(std::vector<bool>& touched) {
  std::vector<uint32_t> devices;
  uint64_t total = 0;
  if (deleted_) {
    devices = tombstone_devices_;
  } else {
    for (const auto& [d, blocks] : blocks_) {
      devices.push_back(d);
      total += blocks.size();
    }
    for (uint32_t d : also_on_) {
      if (blocks_.count(d) == 0) devices.push_back(d);
    }
  }
  // Each round either writes, or snapshots a full log (which then has room, or the records
  // cannot fit at all): other operations filling logs meanwhile make progress of their own.
  for (;;) {
    { std::lock_guard turn(keeper_.turnstile_); }  // Behind a snapshot that waits.
    gate_ = std::shared_lock(keeper_.gate_);
    std::vector<std::pair<uint32_t, std::shared_ptr<RecordLog>>> logs;
    std::vector<uint32_t> pages;
    std::vector<std::pair<uint32_t, uint32_t>> full;  // device, pages needed
    for (uint32_t d : devices) {
      std::shared_ptr<RecordLog> log = keeper_.log(d);
      if (log == nullptr) continue;  // A device without a log (docs/formats.md).
      const uint32_t n = static_cast<uint32_t>(Pages(d, log->page_bytes(), total).size());
      if (log->Reserve(n)) {
        logs.emplace_back(d, log);
        pages.push_back(n);
      } else {
        full.emplace_back(d, n);
      }
    }
    if (!full.empty()) {
      for (size_t i = 0; i < logs.size(); ++i) logs[i].second->Unreserve(pages[i]);
      gate_.unlock();
      for (const auto& [d, n] : full) {
        if (absl::Status s = SnapshotForRoom(d, n); !s.ok()) return s;
      }
      continue;
    }
    uint64_t mark;
    {
      MutexLock lock(keeper_.mu_);
      seq_ = keeper_.next_seq_++;
      keeper_.in_flight_.insert(seq_);
      mark = keeper_.CommittedThroughLocked();
    }
    absl::Status status;
    for (size_t i = 0; i < logs.size(); ++i) {
      auto& [d, log] = logs[i];
      if (!status.ok()) {
        log->Unreserve(pages[i]);
        continue;
      }
      std::vector<std::unique_ptr<PageBuilder>> built = Pages(d, log->page_bytes(), total);
      std::vector<PageBuilder*> raw;
      raw.reserve(built.size());
      for (auto& p : built) raw.push_back(p.get());
      written_.push_back(d);
      touched[d] = true;
      status = log->Append(raw, mark, pages[i] - static_cast<uint32_t>(raw.size()));
    }
    return status;
  }
}

absl::Status RecordKeeper::Op::SnapshotForRoom(uint32_t device, uint32_t pages) {
  std::shared_ptr<RecordLog> log = keeper_.log(device);
  if (log == nullptr || log->free_pages() >= pages) return absl::OkStatus();  // Done already.
  if (absl::Status s = keeper_.Snapshot(device); !s.ok()) return s;
  if (log->room_after_snapshot() >= pages) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the block-record log of device ", device, " stays full after a snapshot (",
      log->DescribeUse(), "): the records of its blocks do not fit; the request was not done"));
}

void RecordKeeper::Op::Resolve() {
  resolved_ = true;
  {
    MutexLock lock(keeper_.mu_);
    keeper_.in_flight_.erase(seq_);
  }
  if (gate_.owns_lock()) gate_.unlock();
}

void RecordKeeper::Op::Commit() { Resolve(); }

void RecordKeeper::Op::Abort() {
  if (resolved_) return;
  bool voided = true;
  for (uint32_t d : written_) {
    std::shared_ptr<RecordLog> log = keeper_.log(d);
    if (log == nullptr) continue;
    PageBuilder page(log->page_bytes());
    page.AddAbort(seq_);
    absl::Status s = log->Reserve(1) ? log->Append({&page}, keeper_.committed_through(), 0)
                                     : absl::ResourceExhaustedError("record log full");
    if (s.ok()) s = log->Flush();
    if (!s.ok()) {
      voided = false;
      Log(LogLevel::kWarning, "device %d: cannot void the records of operation %d: %s", d, seq_,
          s.message());
    }
  }
  if (voided && keeper_.hooks_.advance_catalog) {
    if (absl::Status s = keeper_.hooks_.advance_catalog(seq_); !s.ok()) voided = false;
  }
  if (!voided) {
    // Its records may look committed once the mark passes it: keep the mark below it until a
    // restart, whose snapshots drop them.
    LeaveUnresolved();
    return;
  }
  Resolve();
}

void RecordKeeper::Op::LeaveUnresolved() {
  resolved_ = true;
  if (gate_.owns_lock()) gate_.unlock();
}

}  // namespace ecd::store
