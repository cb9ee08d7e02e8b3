// RecordLog: one device's log of block records, in a region of its own LBAs named by the device
// label: two checkpoint pages, then two halves of record pages. Appends go to the current half;
// when it fills, a snapshot of what the device holds is written to the other half, which then
// becomes current. Format and guarantees: docs/formats.md, "Block records".
#ifndef ECD_LIB_STORE_RECORD_LOG_H_
#define ECD_LIB_STORE_RECORD_LOG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/devices/namespace.h"
#include "lib/records/block_record.h"
#include "lib/util/mutex.h"

namespace ecd::store {

// Where a device's record log is: LBAs [first_lba, first_lba + lba_count), in pages of
// page_bytes. Kept in the device label.
struct RecordLogPlace {
  uint64_t first_lba = 0;
  uint64_t lba_count = 0;
  uint32_t page_bytes = 0;
  bool empty() const { return lba_count == 0; }
};

// The LBAs a device of `device_lbas` LBAs gives its record log: 1/32 of it, at least 34 pages,
// an even number of pages. REQUIRES: page_bytes is a positive multiple of lba_size.
uint64_t RecordLogLbas(uint64_t device_lbas, uint32_t lba_size, size_t page_bytes);

// What a log says about the store when opened.
struct RecordLogState {
  bool clean = false;              // Its last checkpoint was written by a clean stop.
  uint64_t committed_through = 0;  // The highest committed-through mark it carries.
  uint64_t max_seq = 0;            // The highest sequence number it carries.
};

// Thread safety: all methods are thread-safe, within the REQUIRES of Snapshot and ReadAll.
// Ownership: the log shares ownership of its namespace.
class RecordLog {
 public:
  // Produces a snapshot for Snapshot: adds its records to `page`; when one does not fit, calls
  // `page_full` (which writes the page and empties the builder, or fails with ResourceExhausted
  // when the half is full) and adds it again. Its errors end the snapshot. Runs with the log's
  // lock held: it must not call into this log.
  using PageSource = std::function<absl::Status(PageBuilder& page,
                                                const std::function<absl::Status()>& page_full)>;

  // Sets up a new log at `place` without reading or writing the device: nothing is on it until
  // the first Snapshot, which goes to half 0 and writes the first checkpoint. `max_seq` is not
  // used. InvalidArgument when `place` holds fewer than 34 pages.
  // REQUIRES: place.page_bytes is a positive multiple of ns->lba_size().
  static absl::StatusOr<std::unique_ptr<RecordLog>> Create(std::shared_ptr<Namespace> ns,
                                                           const RecordLogPlace& place,
                                                           const std::string& store_id,
                                                           uint32_t device, uint64_t max_seq);
  // Opens the log at `place`: reads the checkpoints and, unless the last stop was clean, the
  // pages appended since, for the marks they carry. NotFound: no checkpoint (never written);
  // DataLoss: no valid checkpoint and a damaged one; FailedPrecondition: another store's or
  // device's log; the namespace's errors when a page cannot be read. Damaged appended pages are
  // skipped. REQUIRES: `place` is that of a log made by Create.
  static absl::StatusOr<std::unique_ptr<RecordLog>> Open(std::shared_ptr<Namespace> ns,
                                                         const RecordLogPlace& place,
                                                         const std::string& store_id,
                                                         uint32_t device);

  const RecordLogState& opened_state() const { return opened_; }
  size_t page_bytes() const { return place_.page_bytes; }
  const RecordLogPlace& place() const { return place_; }
  uint32_t device() const { return device_; }

  // Pages of the current half not yet written nor promised.
  uint32_t free_pages() const;
  // How the current half is used, for messages: "S snapshot pages, A appended, P promised, of H
  // pages per half".
  std::string DescribeUse() const;
  // Pages of the current half its snapshot leaves for appends.
  uint32_t room_after_snapshot() const;
  // Promises `pages` pages to a writer; false, promising nothing, when they are not free.
  bool Reserve(uint32_t pages);
  // Gives back promises that will not be written. REQUIRES: `pages` were promised and not used.
  void Unreserve(uint32_t pages);
  // Writes pages promised by Reserve (one promise each) after the last ones; not flushed.
  // `unused` promises are given back. Each builder is finished (left empty); the caller keeps
  // owning them. REQUIRES: pages.size() + unused promises are outstanding. On a write error
  // (the namespace's) the pages after it are not written, but their places are used up.
  absl::Status Append(const std::vector<PageBuilder*>& pages, uint64_t committed_through,
                      uint32_t unused);
  // Writes a snapshot from `source` into the other half, flushes, then makes it current with a
  // checkpoint, flushed; outstanding promises are dropped. On failure the current half stays
  // current. Errors: `source`'s, ResourceExhausted when the snapshot does not fit in a half,
  // the namespace's. Holds the log's lock throughout. REQUIRES: no appends in flight (the caller
  // excludes them).
  absl::Status Snapshot(const PageSource& source, uint64_t committed_through, uint64_t max_seq);
  // Writes a checkpoint and flushes it (clean: at a clean stop; else after a start). Errors:
  // the namespace's.
  absl::Status WriteCheckpoint(bool clean, uint64_t committed_through, uint64_t max_seq);
  // Flushes the namespace (Namespace::Flush).
  absl::Status Flush();

  // Every record of the current generation (snapshot and appended pages), and the highest
  // committed-through mark among its pages and the checkpoint. Damaged pages are skipped and
  // added to `bad_pages`. Errors: the namespace's when a page cannot be read.
  // REQUIRES: no Append or Snapshot in flight (it would read pages they are writing).
  absl::StatusOr<RecordSet> ReadAll(uint64_t& committed_through, uint64_t& bad_pages);

 private:
  RecordLog(std::shared_ptr<Namespace> ns, const RecordLogPlace& place, std::string store_id,
            uint32_t device);
  uint64_t PageLba(uint32_t half, uint32_t index) const;
  uint32_t pages_per_half() const;
  absl::Status ReadPage(uint64_t lba, std::vector<uint8_t>& page);
  absl::Status WritePage(uint64_t lba, const std::vector<uint8_t>& page);
  absl::Status WriteCheckpointLocked(bool clean, uint64_t committed_through, uint64_t max_seq)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the appended pages of the current half from `from` on: their marks, and where
  // appends go on.
  absl::Status ScanTail(uint32_t from) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<Namespace> ns_;
  const RecordLogPlace place_;
  const std::string store_id_;
  const uint32_t device_;
  RecordLogState opened_;

  mutable Mutex mu_;
  Checkpoint checkpoint_ ABSL_GUARDED_BY(mu_);  // The current one.
  uint32_t next_page_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t promised_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_RECORD_LOG_H_
