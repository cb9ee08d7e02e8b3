// The catalog's writes: devices and their states, meta rows, and the objects and blocks that are
// created, committed, updated, replaced, restored and deleted.
#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "lib/catalog/catalog.h"
#include "lib/catalog/sqlite_statement.h"

namespace ecd::store {

using catalog_internal::Statement;
using catalog_internal::Transaction;

namespace {

// Within a transaction: raises meta('commit_seq') to `seq` (never lowers it). 0: no-op.
absl::Status RaiseCommitSeq(sqlite3* db, uint64_t seq) {
  if (seq == 0) return absl::OkStatus();
  Statement s(db,
              "INSERT INTO meta(key, value) VALUES ('commit_seq', ?1) ON CONFLICT(key) DO UPDATE "
              "SET value = ?1 WHERE CAST(value AS INTEGER) < CAST(?1 AS INTEGER)");
  s.Bind(1, absl::StrCat(seq));
  return s.Run();
}

// Statements of the device-state transactions; each REQUIRES an open transaction.
absl::Status SetDeviceRow(sqlite3* db, uint32_t id, const char* state) {
  Statement s(db, "UPDATE devices SET state = ? WHERE id = ?");
  s.Bind(1, state).Bind(2, id);
  if (absl::Status st = s.Run(); !st.ok()) return st;
  if (sqlite3_changes(db) == 0)
    return absl::NotFoundError(absl::StrCat("device ", id, " not found"));
  return absl::OkStatus();
}

absl::Status DeleteMetaRow(sqlite3* db, const std::string& key) {
  Statement s(db, "DELETE FROM meta WHERE key = ?");
  s.Bind(1, key);
  return s.Run();
}

absl::Status PutMetaRow(sqlite3* db, const std::string& key, const std::string& value) {
  Statement s(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
  s.Bind(1, key).Bind(2, value);
  return s.Run();
}

std::string FailingKey(uint32_t id) { return absl::StrCat("device_failing/", id); }
std::string DownKey(uint32_t id) { return absl::StrCat("device_down/", id); }

}  // namespace

absl::Status Catalog::AddDevice(const DeviceRecord& d) {
  MutexLock lock(mu_);
  Statement s(db_,
              "INSERT INTO devices(id, path, size_bytes, lba_size, state) VALUES (?, ?, ?, ?, ?)");
  s.Bind(1, d.id).Bind(2, d.path).Bind(3, static_cast<int64_t>(d.size_bytes));
  s.Bind(4, d.lba_size).Bind(5, DeviceStateName(d.state));
  return s.RunAutocommit();
}

absl::Status Catalog::SetDeviceState(uint32_t id, DeviceState state) {
  MutexLock lock(mu_);
  // The devices table's CHECK allows 'online' and 'failed' only (schema version 1), so a failing
  // or down device is stored as online plus a meta row "device_failing/<id>" or
  // "device_down/<id>"; one transaction keeps them in step. See docs/catalog.md.
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  if (absl::Status st = SetDeviceRow(db_, id, state == DeviceState::kFailed ? "failed" : "online");
      !st.ok()) {
    return st;
  }
  absl::Status st = state == DeviceState::kFailing ? PutMetaRow(db_, FailingKey(id), "1")
                                                   : DeleteMetaRow(db_, FailingKey(id));
  if (!st.ok()) return st;
  if (absl::Status st = DeleteMetaRow(db_, DownKey(id)); !st.ok()) return st;
  return txn.Commit();
}

absl::Status Catalog::SetDeviceDown(uint32_t id, int64_t since_unix_ms, absl::string_view reason) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  if (absl::Status st = SetDeviceRow(db_, id, "online"); !st.ok()) return st;
  if (absl::Status st = DeleteMetaRow(db_, FailingKey(id)); !st.ok()) return st;
  if (absl::Status st = PutMetaRow(db_, DownKey(id), absl::StrCat(since_unix_ms, " ", reason));
      !st.ok()) {
    return st;
  }
  return txn.Commit();
}

absl::Status Catalog::PrepareReplacement(uint32_t id) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  Statement mark(db_, "UPDATE blocks SET corrupt = 1 WHERE device_id = ?");
  mark.Bind(1, id);
  if (absl::Status st = mark.Run(); !st.ok()) return st;
  if (absl::Status st = DeleteMetaRow(db_, absl::StrCat("device_label/", id)); !st.ok()) {
    return st;
  }
  return txn.Commit();
}

absl::Status Catalog::SetMeta(absl::string_view key, absl::string_view value) {
  MutexLock lock(mu_);
  Statement s(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
  s.Bind(1, key).Bind(2, value);
  return s.RunAutocommit();
}

absl::Status Catalog::DeleteMeta(absl::string_view key) {
  MutexLock lock(mu_);
  Statement s(db_, "DELETE FROM meta WHERE key = ?");
  s.Bind(1, key);
  return s.RunAutocommit();
}

absl::StatusOr<int64_t> Catalog::CreatePendingObject(const ObjectRecord& o) {
  MutexLock lock(mu_);
  Statement s(
      db_,
      "INSERT INTO objects(name, state, size, data_blocks, parity_blocks, matrix, "
      "block_size, stripe_count, created_unix_ms) VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?)");
  s.Bind(1, o.name).Bind(2, static_cast<int64_t>(o.size)).Bind(3, o.data_blocks);
  s.Bind(4, o.parity_blocks).Bind(5, ec::MatrixTypeName(o.matrix));
  s.Bind(6, static_cast<int64_t>(o.block_size)).Bind(7, static_cast<int64_t>(o.stripe_count));
  s.Bind(8, o.created_unix_ms);
  if (absl::Status st = s.RunAutocommit(); !st.ok()) {
    if (absl::IsAlreadyExists(st)) {
      return absl::AlreadyExistsError(absl::StrCat(
          "object \"", o.name, "\" already exists (or is being encoded); choose another name or ",
          "delete it first"));
    }
    return st;
  }
  return sqlite3_last_insert_rowid(db_);
}

absl::Status Catalog::AddBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  Statement s(db_,
              "INSERT INTO blocks(object_id, stripe, idx, device_id, lba, lba_count, crc32c, "
              "corrupt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  for (const BlockRecord& b : blocks) {
    s.Bind(1, object_id).Bind(2, static_cast<int64_t>(b.stripe)).Bind(3, b.index);
    s.Bind(4, b.device).Bind(5, static_cast<int64_t>(b.lba)).Bind(6, b.lba_count);
    s.Bind(7, static_cast<int64_t>(b.crc32c)).Bind(8, b.corrupt ? 1 : 0);
    if (absl::Status st = s.Run(); !st.ok()) return st;
    if (absl::Status st = s.Reset(); !st.ok()) return st;
  }
  return txn.Commit();
}

absl::Status Catalog::CommitObject(int64_t object_id, uint64_t size, uint64_t stripe_count,
                                   uint64_t seq) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);  // One statement; a transaction so that its commit is timed.
  if (!txn.status().ok()) return txn.status();
  Statement s(db_,
              "UPDATE objects SET state = 'committed', size = ?, stripe_count = ? "
              "WHERE id = ? AND state = 'pending'");
  s.Bind(1, static_cast<int64_t>(size)).Bind(2, static_cast<int64_t>(stripe_count));
  s.Bind(3, object_id);
  if (absl::Status st = s.Run(); !st.ok()) return st;
  if (sqlite3_changes(db_) != 1) {
    return absl::InternalError(absl::StrCat("object ", object_id, " is not pending"));
  }
  if (absl::Status st = RaiseCommitSeq(db_, seq); !st.ok()) return st;
  return txn.Commit();
}

absl::Status Catalog::DeleteObject(int64_t object_id, uint64_t seq) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  Statement s(db_, "DELETE FROM objects WHERE id = ?");
  s.Bind(1, object_id);
  // Blocks go with it (ON DELETE CASCADE), in the same statement.
  if (absl::Status st = s.Run(); !st.ok()) return st;
  if (absl::Status st = RaiseCommitSeq(db_, seq); !st.ok()) return st;
  return txn.Commit();
}

absl::StatusOr<int> Catalog::DropPendingObjects() {
  MutexLock lock(mu_);
  Statement s(db_, "DELETE FROM objects WHERE state = 'pending'");
  if (absl::Status st = s.RunAutocommit(); !st.ok()) return st;
  return sqlite3_changes(db_);
}

absl::Status Catalog::ReplaceBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks,
                                    uint64_t seq) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  Statement s(db_,
              "UPDATE blocks SET device_id = ?, lba = ?, lba_count = ?, crc32c = ?, corrupt = 0 "
              "WHERE object_id = ? AND stripe = ? AND idx = ?");
  for (const BlockRecord& b : blocks) {
    s.Bind(1, b.device).Bind(2, static_cast<int64_t>(b.lba)).Bind(3, b.lba_count);
    s.Bind(4, static_cast<int64_t>(b.crc32c)).Bind(5, object_id);
    s.Bind(6, static_cast<int64_t>(b.stripe)).Bind(7, b.index);
    if (absl::Status st = s.Run(); !st.ok()) return st;
    if (sqlite3_changes(db_) != 1) {
      return absl::InternalError(absl::StrCat("block ", b.stripe, "/", b.index, " of object ",
                                              object_id, " is not in the catalog"));
    }
    if (absl::Status st = s.Reset(); !st.ok()) return st;
  }
  if (absl::Status st = RaiseCommitSeq(db_, seq); !st.ok()) return st;
  return txn.Commit();
}

absl::Status Catalog::CommitUpdate(int64_t object_id, uint64_t expected_version,
                                   absl::Span<const BlockRecord> replaced,
                                   absl::Span<const BlockRecord> added, uint64_t size,
                                   uint64_t stripe_count, uint64_t seq) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  Statement object(db_,
                   "UPDATE objects SET size = ?, stripe_count = ?, version = version + 1 "
                   "WHERE id = ? AND state = 'committed' AND version = ?");
  object.Bind(1, static_cast<int64_t>(size)).Bind(2, static_cast<int64_t>(stripe_count));
  object.Bind(3, object_id).Bind(4, static_cast<int64_t>(expected_version));
  if (absl::Status st = object.Run(); !st.ok()) return st;
  if (sqlite3_changes(db_) != 1) {
    return absl::AbortedError(absl::StrCat("object ", object_id, " is not at version ",
                                           expected_version, " any more; retry the update"));
  }
  Statement replace(db_,
                    "UPDATE blocks SET device_id = ?, lba = ?, lba_count = ?, crc32c = ?, "
                    "corrupt = 0 WHERE object_id = ? AND stripe = ? AND idx = ?");
  for (const BlockRecord& b : replaced) {
    replace.Bind(1, b.device).Bind(2, static_cast<int64_t>(b.lba)).Bind(3, b.lba_count);
    replace.Bind(4, static_cast<int64_t>(b.crc32c)).Bind(5, object_id);
    replace.Bind(6, static_cast<int64_t>(b.stripe)).Bind(7, b.index);
    if (absl::Status st = replace.Run(); !st.ok()) return st;
    if (sqlite3_changes(db_) != 1) {
      return absl::InternalError(absl::StrCat("block ", b.stripe, "/", b.index, " of object ",
                                              object_id, " is not in the catalog"));
    }
    if (absl::Status st = replace.Reset(); !st.ok()) return st;
  }
  Statement add(db_,
                "INSERT INTO blocks(object_id, stripe, idx, device_id, lba, lba_count, crc32c, "
                "corrupt) VALUES (?, ?, ?, ?, ?, ?, ?, 0)");
  for (const BlockRecord& b : added) {
    add.Bind(1, object_id).Bind(2, static_cast<int64_t>(b.stripe)).Bind(3, b.index);
    add.Bind(4, b.device).Bind(5, static_cast<int64_t>(b.lba)).Bind(6, b.lba_count);
    add.Bind(7, static_cast<int64_t>(b.crc32c));
    if (absl::Status st = add.Run(); !st.ok()) return st;
    if (absl::Status st = add.Reset(); !st.ok()) return st;
  }
  if (absl::Status st = RaiseCommitSeq(db_, seq); !st.ok()) return st;
  return txn.Commit();
}

absl::Status Catalog::AdvanceCommitSeq(uint64_t seq) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  if (absl::Status st = RaiseCommitSeq(db_, seq); !st.ok()) return st;
  return txn.Commit();
}

absl::Status Catalog::RestoreObjects(absl::Span<const ObjectWithBlocks> objects) {
  MutexLock lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  Statement o(db_,
              "INSERT INTO objects(id, name, state, size, data_blocks, parity_blocks, matrix, "
              "block_size, stripe_count, created_unix_ms, version) "
              "VALUES (?, ?, 'committed', ?, ?, ?, ?, ?, ?, ?, ?)");
  Statement add(db_,
                "INSERT INTO blocks(object_id, stripe, idx, device_id, lba, lba_count, crc32c, "
                "corrupt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  for (const ObjectWithBlocks& each : objects) {
    const ObjectRecord& object = each.object;
    o.Bind(1, object.id).Bind(2, object.name).Bind(3, static_cast<int64_t>(object.size));
    o.Bind(4, object.data_blocks).Bind(5, object.parity_blocks);
    o.Bind(6, object.matrix == ec::MatrixType::kVandermonde ? "vandermonde" : "cauchy");
    o.Bind(7, static_cast<int64_t>(object.block_size));
    o.Bind(8, static_cast<int64_t>(object.stripe_count)).Bind(9, object.created_unix_ms);
    o.Bind(10, static_cast<int64_t>(object.version));
    if (absl::Status st = o.Run(); !st.ok()) return st;
    if (absl::Status st = o.Reset(); !st.ok()) return st;
    for (const BlockRecord& b : each.blocks) {
      add.Bind(1, object.id).Bind(2, static_cast<int64_t>(b.stripe)).Bind(3, b.index);
      add.Bind(4, b.device).Bind(5, static_cast<int64_t>(b.lba)).Bind(6, b.lba_count);
      add.Bind(7, static_cast<int64_t>(b.crc32c)).Bind(8, b.corrupt ? 1 : 0);
      if (absl::Status st = add.Run(); !st.ok()) return st;
      if (absl::Status st = add.Reset(); !st.ok()) return st;
    }
  }
  return txn.Commit();
}

absl::Status Catalog::SetBlockCorrupt(int64_t object_id, uint64_t stripe, uint32_t index,
                                      bool corrupt) {
  MutexLock lock(mu_);
  Statement s(db_, "UPDATE blocks SET corrupt = ? WHERE object_id = ? AND stripe = ? AND idx = ?");
  s.Bind(1, corrupt ? 1 : 0).Bind(2, object_id).Bind(3, static_cast<int64_t>(stripe));
  s.Bind(4, index);
  return s.RunAutocommit();
}

}  // namespace ecd::store
