// RecordKeeper: the store's side of block records. It numbers operations, writes each one's
// records to the record logs of the devices it wrote blocks to, keeps the committed-through
// mark every page carries, and snapshots a device's log from the catalog when it fills.
// Protocol and guarantees: docs/formats.md, "Block records" and "The commit point".
#ifndef ECD_LIB_STORE_RECORD_KEEPER_H_
#define ECD_LIB_STORE_RECORD_KEEPER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "lib/catalog/catalog.h"
#include "lib/records/block_record.h"
#include "lib/records/record_log.h"
#include "lib/util/mutex.h"

namespace ecd::store {

// Thread safety: all methods are thread-safe; an Op is not (see Op).
// Ownership: the keeper shares each device's RecordLog; it must outlive every Op it made.
class RecordKeeper {
 public:
  // The store's callbacks. blocks_on_device and empty_objects run inside Snapshot (on the thread
  // that snapshots, possibly within an Op's Write) with the snapshot gate held exclusively and
  // the log's lock held: they must not write an Op, snapshot, or call into that log. Their
  // errors end the snapshot. blocks_on_device is required; empty_objects and advance_catalog may
  // be null.
  struct Hooks {
    // Calls `fn` for every block of a committed object on `device`, grouped by object.
    std::function<absl::Status(uint32_t device, const std::function<absl::Status(
                                                    const ObjectRecord&, const BlockRecord&)>& fn)>
        blocks_on_device;
    // Calls `fn` for every committed object without blocks; their headers go on every device.
    std::function<absl::Status(const std::function<absl::Status(const ObjectRecord&)>& fn)>
        empty_objects;
    // Records in the catalog that operation `seq` is over without a commit (so that the
    // catalog is never behind the mark its devices carry). Called by Op::Abort.
    std::function<absl::Status(uint64_t seq)> advance_catalog;
  };

  // `next_seq`: the first sequence number to give out (at least 1), above every one a device or
  // the catalog has seen.
  RecordKeeper(Hooks hooks, uint64_t next_seq);
  ~RecordKeeper();

  // Sets (or, with null, removes) the log of a device.
  void SetLog(uint32_t device, std::shared_ptr<RecordLog> log);
  std::shared_ptr<RecordLog> log(uint32_t device) const;

  // Every operation numbered up to it has committed or aborted.
  uint64_t committed_through() const;
  uint64_t max_seq() const;

  // Rewrites a device's log as a snapshot of what the catalog says it holds, from the hooks.
  // Waits for the operations whose records are written but not yet resolved. No log: nothing to do.
  // Errors: the hooks', ResourceExhausted when the records do not fit in a half, the namespace's.
  // REQUIRES: the calling thread holds no unresolved Op (the snapshot would wait for it forever).
  absl::Status Snapshot(uint32_t device);
  // At a clean stop: every log's checkpoint says clean, with the final mark. Every log is
  // tried; returns the first error (the namespace's). REQUIRES: no operation in flight.
  absl::Status CloseClean();
  // After a start: the checkpoint of `device`'s log says running. No log: nothing to do.
  // Errors: the namespace's.
  absl::Status MarkRunning(uint32_t device);

  // One operation's records: collected, written by Write, then resolved by Commit or Abort
  // (the destructor aborts one that was written and not committed). From Write until it is
  // resolved the Op holds the keeper's snapshot gate shared, so snapshots wait for it.
  // Thread safety: not thread-safe; one thread at a time. REQUIRES: Write, and Commit, Abort or
  // the destructor after it, run on one thread (the gate is a std::shared_mutex).
  class Op {
   public:
    ~Op();
    Op(const Op&) = delete;
    Op& operator=(const Op&) = delete;

    // The object as the operation leaves it (version, size and stripe count after it).
    void SetObject(const ObjectRecord& object);
    // A block the operation wrote (on block.device). REQUIRES: SetObject was called.
    void AddBlock(const BlockRecord& block);
    // The object record goes on each of `devices` that has a log even where no block was
    // written (an object without blocks).
    void AlsoOn(std::vector<uint32_t> devices) { also_on_ = std::move(devices); }
    // The object is deleted: a tombstone on each of `devices` that has a log.
    void DeleteObject(int64_t object_id, std::vector<uint32_t> devices);

    // Numbers the operation and writes its records (not flushed); sets touched[d] for each
    // device written. Devices without a log are skipped. A full log is snapshotted first.
    // Errors: ResourceExhausted when a log has no room even after a snapshot; Snapshot's
    // errors; the namespace's for a page write (some devices may then hold the records: resolve
    // the Op with Abort or its destructor). REQUIRES: called once, after SetObject or
    // DeleteObject; touched.size() exceeds every device id involved; the calling thread holds
    // no other unresolved Op.
    absl::Status Write(std::vector<bool>& touched);
    uint64_t seq() const { return seq_; }
    // The catalog committed the operation (with seq() as its commit_seq). REQUIRES: Write
    // returned OK.
    void Commit();
    // The operation will not commit: its records are voided (an abort record, flushed, on each
    // device written) and the catalog told. Best effort: a failure is logged, and then
    // committed_through() stays below seq() for the keeper's lifetime (a restart drops the
    // records).
    void Abort();
    // The catalog cannot tell whether the operation committed (IsCommitOutcomeUnknown): its
    // records are left as written, neither committed nor voided, as a crash at that moment
    // would leave them, and committed_through() stays below seq() for the keeper's lifetime. The
    // next start resolves them against the catalog as it then reads. REQUIRES: Write was called.
    void LeaveUnresolved();

   private:
    friend class RecordKeeper;
    explicit Op(RecordKeeper& keeper) : keeper_(keeper) {}
    // Encodes the records of one device into pages.
    std::vector<std::unique_ptr<PageBuilder>> Pages(uint32_t device, size_t page_bytes,
                                                    uint64_t total_blocks) const;
    // Snapshots `device`'s log unless it has room for `pages` already; ResourceExhausted when
    // even a fresh snapshot leaves less. REQUIRES: the gate is not held.
    absl::Status SnapshotForRoom(uint32_t device, uint32_t pages);
    void Resolve();

    RecordKeeper& keeper_;
    std::optional<ObjectRecord> object_;
    std::map<uint32_t, std::vector<BlockRecord>> blocks_;
    std::optional<int64_t> deleted_;
    std::vector<uint32_t> tombstone_devices_;
    std::vector<uint32_t> also_on_;
    uint64_t seq_ = 0;
    std::vector<uint32_t> written_;
    std::shared_lock<std::shared_mutex> gate_;
    bool resolved_ = false;
  };
  std::unique_ptr<Op> NewOp() { return std::unique_ptr<Op>(new Op(*this)); }

 private:
  absl::Status SnapshotLocked(uint32_t device, const std::shared_ptr<RecordLog>& log);
  uint64_t CommittedThroughLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Hooks hooks_;
  // Held shared by an operation from the write of its records until it is resolved, and
  // exclusively by a snapshot, which must see no unresolved records.
  std::shared_mutex gate_;
  // Passed through by an operation before it takes gate_ shared, and held by a snapshot while
  // it waits for gate_: a stream of operations cannot starve a snapshot, as they could with
  // glibc's reader-preferring shared mutex alone. Never taken with gate_ held shared.
  std::mutex turnstile_;
  mutable Mutex mu_;
  std::map<uint32_t, std::shared_ptr<RecordLog>> logs_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_RECORD_KEEPER_H_
