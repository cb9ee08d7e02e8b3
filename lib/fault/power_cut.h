// Power cuts at the namespace seam, for tests. PowerCutNamespace keeps an undo journal per
// device: before each write is issued, the bytes it will overwrite are appended to a journal
// file, and a successful flush empties the journal. ApplyPowerCut replays a journal as a power
// cut would have treated those writes: each write not covered by a completed flush vanishes (its
// old bytes come back), survives, or is torn (a prefix of its sectors new and the rest old, or a
// mix of new and old sectors), from a seeded RNG. The journal survives the process being killed
// (it is written with write(2)), so a killed ecd plus ApplyPowerCut is a power cut of the
// machine as far as the namespaces are concerned; the catalog, fsynced at every commit, is not
// touched. docs/fuzzing.md describes the tests that use it.
#ifndef ECD_LIB_STORE_POWER_CUT_H_
#define ECD_LIB_STORE_POWER_CUT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/devices/namespace.h"
#include "lib/util/mutex.h"

namespace ecd::store {

struct PowerCutOptions {
  uint64_t seed = 1;           // Decides each write's fate; the same seed, the same cut.
  uint32_t sector_size = 512;  // The unit of a torn write: a power of two, 512..the LBA size.
};

// What a cut did to one journal's writes.
struct PowerCutReport {
  uint64_t writes = 0;    // Writes in the journal: issued and not covered by a flush.
  uint64_t vanished = 0;  // Old bytes back in every sector.
  uint64_t survived = 0;  // New bytes in every sector.
  uint64_t torn = 0;      // Some sectors new, the others old.
  uint64_t bytes_restored = 0;
  // The journal ended in a partial record: the process died while appending it, before the
  // write it describes was issued. It is ignored.
  bool partial_tail = false;
};

// One write of an undo journal: the LBAs it wrote and the bytes they held before it.
struct UndoRecord {
  uint64_t lba = 0;
  uint32_t lba_count = 0;
  std::vector<uint8_t> old;  // lba_count x lba_size bytes; empty when they were all zero.
};

// An undo journal as read back. Format (integers little-endian):
//   header  "ECDUNDO1", u32 version (1), u32 LBA size, u32 path length, the namespace file's path
//   record  u32 magic 0x4f444e55 ("UNDO"), u32 flags (bit 0: the old bytes were all zero and
//           are left out), u64 first LBA, u32 LBA count, the old bytes (LBA count x LBA size,
//           unless bit 0), u32 CRC32C of the record from its magic to its last old byte
// Records are in the order their writes were issued.
struct UndoJournal {
  std::string namespace_path;
  uint32_t lba_size = 0;
  std::vector<UndoRecord> records;
  bool partial_tail = false;  // See PowerCutReport.
};

// Reads a journal. NotFound when there is no file; Internal when it cannot be read;
// InvalidArgument when it is not one (bad header, a record whose CRC fails before the last
// one); a short or bad last record is left out and sets partial_tail.
absl::StatusOr<UndoJournal> ReadUndoJournal(const std::string& path);

// Decides the fate of every write of `records` (oldest first) from options.seed and calls
// `restore` with the byte offset and the old bytes of each run of sectors that gets its old
// bytes back. Per sector the result is the state after some prefix of the writes to it: the
// writes are undone newest first, and a sector whose write survives is not touched by the older
// writes' undo. REQUIRES: lba_size is a multiple of options.sector_size.
PowerCutReport CutWrites(
    const std::vector<UndoRecord>& records, uint32_t lba_size, const PowerCutOptions& options,
    const std::function<void(uint64_t offset, absl::Span<const uint8_t>)>& restore);

// Cuts the power of the namespace file the journal at `journal_path` names: CutWrites, the
// restored bytes written to the file and fsynced, then the journal emptied (its header kept).
// Running it again with the same seed before the journal is emptied gives the same result.
// NotFound without a journal; InvalidArgument for a bad one or sector size; Internal for I/O
// (the journal is then kept). REQUIRES: no I/O to the namespace file meanwhile.
absl::StatusOr<PowerCutReport> ApplyPowerCut(const std::string& journal_path,
                                             const PowerCutOptions& options);

// ApplyPowerCut on every `*.undo` journal in `journal_dir`, in name order, each with a seed of
// its own derived from options.seed and its name. Returns each journal's file name and report.
// NotFound when the directory cannot be listed; otherwise the first journal's error stops it
// (the journals before that one are already cut).
absl::StatusOr<std::vector<std::pair<std::string, PowerCutReport>>> ApplyPowerCutToDir(
    const std::string& journal_dir, const PowerCutOptions& options);

// A namespace whose writes are journaled for a power cut. Writes and flushes are forwarded to
// `inner`; each write's old bytes are read from `inner` and appended to the journal before the
// write is issued. A flush waits for the writes in flight, holds new ones back, and empties the
// journal once the inner flush succeeds (so a flush covers every write issued before it).
// Thread safety: as Namespace. REQUIRES: no two writes in flight overlap (the store never
// issues such writes).
class PowerCutNamespace final : public Namespace {
 public:
  // Creates the journal at `journal_path` (emptying one that exists: writes before this open
  // survived) for the namespace file at `namespace_path`. The namespace owns `inner`. Internal
  // when the journal cannot be created or its header written.
  static absl::StatusOr<std::unique_ptr<PowerCutNamespace>> Create(
      std::unique_ptr<Namespace> inner, const std::string& namespace_path,
      const std::string& journal_path);
  ~PowerCutNamespace() override;

  uint32_t lba_size() const override { return inner_->lba_size(); }
  uint64_t lba_count() const override { return inner_->lba_count(); }
  absl::Status Read(uint64_t lba, absl::Span<uint8_t> out) override {
    return inner_->Read(lba, out);
  }
  void ReadAsync(uint64_t lba, absl::Span<uint8_t> out, Done done) override {
    inner_->ReadAsync(lba, out, std::move(done));
  }
  // Internal ("power-cut journal: ...") when the old bytes cannot be read or journaled; the
  // write is then not issued. Other errors of reading the old bytes (OutOfRange,
  // InvalidArgument) are returned as they are, and the inner write's errors after it. Waits
  // while a Flush runs.
  absl::Status Write(uint64_t lba, absl::Span<const uint8_t> data) override;
  // As Write; a journaling error is passed to `done` on the calling thread.
  void WriteAsync(uint64_t lba, absl::Span<const uint8_t> data, Done done) override;
  // One flush at a time. Errors: the inner flush's (the journal is kept); Internal when the
  // journal cannot be emptied.
  absl::Status Flush() override;
  // Not journaled: the store only deallocates extents no catalog row points at, whose bytes
  // do not matter after a cut.
  void Deallocate(uint64_t lba, uint64_t count) override { inner_->Deallocate(lba, count); }
  absl::Status Reserve(uint64_t lba, uint64_t count) override {
    return inner_->Reserve(lba, count);
  }
  std::vector<LbaRange> AllocatedRanges() const override { return inner_->AllocatedRanges(); }
  // The inner namespace's counters, then power_cut_unflushed_writes and
  // power_cut_journaled_writes.
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

  // Cuts the power now: ApplyPowerCut on this namespace's journal. The namespace then goes on
  // from the state the cut left. REQUIRES: no I/O in progress on it.
  absl::StatusOr<PowerCutReport> PowerCut(const PowerCutOptions& options);
  // Writes issued since the last successful flush.
  uint64_t unflushed_writes() const;

 private:
  PowerCutNamespace(std::unique_ptr<Namespace> inner, std::string journal_path, int fd,
                    uint64_t header_bytes);
  // Waits until no flush holds writes back, then counts a write in flight.
  void BeginWrite();
  void EndWrite();
  // Reads the old bytes of [lba, lba + data.size()) and appends their record to the journal.
  absl::Status Journal(uint64_t lba, size_t bytes);

  const std::unique_ptr<Namespace> inner_;
  const std::string journal_path_;
  const int fd_;  // The journal, O_APPEND.
  const uint64_t header_bytes_;
  Mutex flush_mu_;  // One flush at a time.
  mutable Mutex mu_;
  CondVar cv_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t unflushed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t journaled_ ABSL_GUARDED_BY(mu_) = 0;  // Records appended since this opened.
};

// Wraps every namespace `inner` opens in a PowerCutNamespace whose journal is
// `journal_dir`/<the namespace file's name>.undo (journal_dir is created if missing; an
// existing journal is emptied). Internal when journal_dir cannot be created; errors of `inner`
// and of PowerCutNamespace::Create unchanged.
NamespaceFactory PowerCutJournalFactory(NamespaceFactory inner, std::string journal_dir);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_POWER_CUT_H_
