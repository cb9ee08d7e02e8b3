// RecordLog: a device's block-record log (docs/formats.md, "Block records").
#include "lib/records/record_log.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "lib/util/mutex.h"

namespace ecd::store {

uint64_t RecordLogLbas(uint64_t device_lbas, uint32_t lba_size, size_t page_bytes) {
  const uint64_t lbas_per_page = page_bytes / lba_size;
  uint64_t pages = std::max<uint64_t>(34, device_lbas / 32 / lbas_per_page);
  pages += pages % 2;  // Two checkpoints and two equal halves.
  return pages * lbas_per_page;
}

RecordLog::RecordLog(std::shared_ptr<Namespace> ns, const RecordLogPlace& place,
                     std::string store_id, uint32_t device)
    : ns_(std::move(ns)), place_(place), store_id_(std::move(store_id)), device_(device) {}

uint32_t RecordLog::pages_per_half() const {
  const uint64_t pages = place_.lba_count / (place_.page_bytes / ns_->lba_size());
  return static_cast<uint32_t>((pages - 2) / 2);
}

uint64_t RecordLog::PageLba(uint32_t half, uint32_t index) const {
  const uint64_t lbas_per_page = place_.page_bytes / ns_->lba_size();
  const uint64_t page = 2 + static_cast<uint64_t>(half) * pages_per_half() + index;
  return place_.first_lba + page * lbas_per_page;
}

absl::Status RecordLog::ReadPage(uint64_t lba, std::vector<uint8_t>& page) {
  page.resize(place_.page_bytes);
  return ns_->Read(lba, absl::MakeSpan(page));
}

absl::Status RecordLog::WritePage(uint64_t lba, const std::vector<uint8_t>& page) {
  return ns_->Write(lba, absl::MakeConstSpan(page));
}

absl::Status RecordLog::Flush() { return ns_->Flush(); }

absl::StatusOr<std::unique_ptr<RecordLog>> RecordLog::Create(std::shared_ptr<Namespace> ns,
                                                             const RecordLogPlace& place,
                                                             const std::string& store_id,
                                                             uint32_t device, uint64_t max_seq) {
  std::unique_ptr<RecordLog> log(new RecordLog(std::move(ns), place, store_id, device));
  if (log->pages_per_half() < 16) {
    return absl::InvalidArgumentError("a record log needs at least 34 pages");
  }
  MutexLock lock(log->mu_);
  // Half 1 current at generation 0 and nothing in it: the snapshot below goes to half 0.
  log->checkpoint_ = {
      .store_id = store_id, .device = device, .counter = 0, .generation = 0, .half = 1};
  log->next_page_ = log->pages_per_half();
  return log;
}

absl::StatusOr<std::unique_ptr<RecordLog>> RecordLog::Open(std::shared_ptr<Namespace> ns,
                                                           const RecordLogPlace& place,
                                                           const std::string& store_id,
                                                           uint32_t device) {
  std::unique_ptr<RecordLog> log(new RecordLog(std::move(ns), place, store_id, device));
  std::optional<Checkpoint> best;
  absl::Status damaged;
  std::vector<uint8_t> page;
  for (uint32_t slot = 0; slot < 2; ++slot) {
    const uint64_t lba = place.first_lba + slot * (place.page_bytes / log->ns_->lba_size());
    if (absl::Status s = log->ReadPage(lba, page); !s.ok()) return s;
    absl::StatusOr<Checkpoint> c = DecodeCheckpoint(page);
    if (!c.ok()) {
      if (!absl::IsNotFound(c.status())) damaged = c.status();
      continue;
    }
    if (!best || c->counter > best->counter) best = *c;
  }
  if (!best) {
    if (!damaged.ok()) return damaged;
    return absl::NotFoundError("no record-log checkpoint");
  }
  if (best->store_id != store_id || best->device != device) {
    return absl::FailedPreconditionError(
        absl::StrCat("its record log belongs to store ", best->store_id, " device ", best->device,
                     ", not store ", store_id, " device ", device));
  }
  MutexLock lock(log->mu_);
  log->checkpoint_ = *best;
  log->next_page_ = std::min(best->next_page, log->pages_per_half());
  log->opened_ = {best->clean, best->committed_through, best->max_seq};
  if (!best->clean) {
    if (absl::Status s = log->ScanTail(log->next_page_); !s.ok()) return s;
  }
  return log;
}

absl::Status RecordLog::ScanTail(uint32_t from) {
  std::vector<uint8_t> page;
  for (uint32_t i = from; i < pages_per_half(); ++i) {
    if (absl::Status s = ReadPage(PageLba(checkpoint_.half, i), page); !s.ok()) return s;
    RecordSet records;
    absl::StatusOr<PageHeader> h = DecodePage(page, records);
    if (!h.ok() || h->generation != checkpoint_.generation || h->snapshot) continue;
    next_page_ = i + 1;
    opened_.committed_through = std::max(opened_.committed_through, h->committed_through);
    for (const ObjectHeader& o : records.objects)
      opened_.max_seq = std::max(opened_.max_seq, o.seq);
    for (const Tombstone& t : records.tombstones) {
      opened_.max_seq = std::max(opened_.max_seq, t.seq);
    }
    for (uint64_t a : records.aborted) opened_.max_seq = std::max(opened_.max_seq, a);
  }
  return absl::OkStatus();
}

std::string RecordLog::DescribeUse() const {
  MutexLock lock(mu_);
  return absl::StrCat(checkpoint_.snapshot_pages, " snapshot pages, ",
                      next_page_ - std::min(next_page_, checkpoint_.snapshot_pages), " appended, ",
                      promised_, " promised, of ", pages_per_half(), " pages per half");
}

uint32_t RecordLog::room_after_snapshot() const {
  MutexLock lock(mu_);
  return pages_per_half() - std::min(pages_per_half(), checkpoint_.snapshot_pages);
}

uint32_t RecordLog::free_pages() const {
  MutexLock lock(mu_);
  return pages_per_half() - next_page_ - promised_;
}

bool RecordLog::Reserve(uint32_t pages) {
  MutexLock lock(mu_);
  if (pages_per_half() - next_page_ - promised_ < pages) return false;
  promised_ += pages;
  return true;
}

void RecordLog::Unreserve(uint32_t pages) {
  MutexLock lock(mu_);
  promised_ -= pages;
}

absl::Status RecordLog::Append(const std::vector<PageBuilder*>& pages, uint64_t committed_through,
                               uint32_t unused) {
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> encoded;
  {
    MutexLock lock(mu_);
    promised_ -= static_cast<uint32_t>(pages.size()) + unused;
    for (PageBuilder* p : pages) {
      const uint32_t index = next_page_++;
      encoded.emplace_back(PageLba(checkpoint_.half, index),
                           p->Finish({.store_id = store_id_,
                                      .device = device_,
                                      .generation = checkpoint_.generation,
                                      .index = index,
                                      .committed_through = committed_through}));
    }
  }
  for (const auto& [lba, page] : encoded) {
    if (absl::Status s = WritePage(lba, page); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RecordLog::Snapshot(const PageSource& source, uint64_t committed_through,
                                 uint64_t max_seq) {
  MutexLock lock(mu_);
  const uint32_t half = checkpoint_.half ^ 1;
  const uint64_t generation = checkpoint_.generation + 1;
  uint32_t index = 0;
  PageBuilder builder(place_.page_bytes);
  auto write = [&]() -> absl::Status {
    if (index >= pages_per_half()) {
      return absl::ResourceExhaustedError(absl::StrCat("the block records of device ", device_,
                                                       " do not fit in its record log (",
                                                       pages_per_half(), " pages per half)"));
    }
    const uint32_t at = index++;
    return WritePage(PageLba(half, at), builder.Finish({.store_id = store_id_,
                                                        .device = device_,
                                                        .generation = generation,
                                                        .index = at,
                                                        .snapshot = true,
                                                        .committed_through = committed_through}));
  };
  if (absl::Status s = source(builder, write); !s.ok()) return s;
  if (!builder.empty() || index == 0) {
    if (absl::Status s = write(); !s.ok()) return s;
  }
  if (absl::Status s = ns_->Flush(); !s.ok()) return s;
  const Checkpoint previous = checkpoint_;
  checkpoint_.half = half;
  checkpoint_.generation = generation;
  checkpoint_.snapshot_pages = index;
  if (absl::Status s = WriteCheckpointLocked(false, committed_through, max_seq); !s.ok()) {
    checkpoint_ = previous;
    return s;
  }
  next_page_ = index;
  promised_ = 0;
  return absl::OkStatus();
}

absl::Status RecordLog::WriteCheckpoint(bool clean, uint64_t committed_through, uint64_t max_seq) {
  MutexLock lock(mu_);
  return WriteCheckpointLocked(clean, committed_through, max_seq);
}

absl::Status RecordLog::WriteCheckpointLocked(bool clean, uint64_t committed_through,
                                              uint64_t max_seq) {
  Checkpoint c = checkpoint_;
  c.store_id = store_id_;
  c.device = device_;
  ++c.counter;
  c.next_page = next_page_;
  c.clean = clean;
  c.committed_through = committed_through;
  c.max_seq = max_seq;
  const uint64_t lba = place_.first_lba + (c.counter % 2) * (place_.page_bytes / ns_->lba_size());
  if (absl::Status s = WritePage(lba, EncodeCheckpoint(c, place_.page_bytes)); !s.ok()) return s;
  if (absl::Status s = ns_->Flush(); !s.ok()) return s;
  checkpoint_ = c;
  return absl::OkStatus();
}

absl::StatusOr<RecordSet> RecordLog::ReadAll(uint64_t& committed_through, uint64_t& bad_pages) {
  Checkpoint c;
  {
    MutexLock lock(mu_);
    c = checkpoint_;
  }
  RecordSet out;
  committed_through = c.committed_through;
  std::vector<uint8_t> page;
  for (uint32_t i = 0; i < pages_per_half(); ++i) {
    if (absl::Status s = ReadPage(PageLba(c.half, i), page); !s.ok()) return s;
    RecordSet records;
    absl::StatusOr<PageHeader> h = DecodePage(page, records);
    if (!h.ok()) {
      bad_pages += absl::IsNotFound(h.status()) ? 0 : 1;
      continue;
    }
    // A snapshot page past the snapshot is left by an earlier, interrupted snapshot.
    if (h->generation != c.generation || h->snapshot != (i < c.snapshot_pages)) continue;
    committed_through = std::max(committed_through, h->committed_through);
    out.Append(records);
  }
  return out;
}

}  // namespace ecd::store
