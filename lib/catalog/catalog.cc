// The SQLite catalog: opening it (schema, migrations), SQLite errors as statuses, and integrity
// checks and backups. Writes are in catalog_writes.cc, queries in catalog_queries.cc.
#include "lib/catalog/catalog.h"

#include <sqlite3.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/catalog/sqlite_statement.h"

namespace ecd::store {
namespace {

// Version 1 is created by kSchema; each later version is reached by one migration below, run in
// order in its own transaction at Open.
constexpr int kSchemaVersion = 3;

// Migrations[v - 2] takes a catalog from schema version v - 1 to v.
constexpr const char* kMigrations[] = {
    // 2: object versions, bumped by each committed update.
    "ALTER TABLE objects ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
    // 3: the repair finds corrupt blocks without a scan of every block.
    "CREATE INDEX IF NOT EXISTS blocks_corrupt ON blocks(object_id, stripe) WHERE corrupt = 1",
};

static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion - 1);

// The version 1 schema (a new catalog starts here and is migrated like an old one).
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS devices(
  id         INTEGER PRIMARY KEY,
  path       TEXT NOT NULL UNIQUE,
  size_bytes INTEGER NOT NULL,
  lba_size   INTEGER NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('online', 'failed')));
CREATE TABLE IF NOT EXISTS objects(
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  name            TEXT NOT NULL UNIQUE,
  state           TEXT NOT NULL CHECK (state IN ('pending', 'committed')),
  size            INTEGER NOT NULL,
  data_blocks     INTEGER NOT NULL,
  parity_blocks   INTEGER NOT NULL,
  matrix          TEXT NOT NULL CHECK (matrix IN ('cauchy', 'vandermonde')),
  block_size      INTEGER NOT NULL,
  stripe_count    INTEGER NOT NULL,
  created_unix_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS blocks(
  object_id INTEGER NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
  stripe    INTEGER NOT NULL,
  idx       INTEGER NOT NULL,
  device_id INTEGER NOT NULL REFERENCES devices(id),
  lba       INTEGER NOT NULL,
  lba_count INTEGER NOT NULL,
  crc32c    INTEGER NOT NULL,
  corrupt   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (object_id, stripe, idx)) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS blocks_by_extent ON blocks(device_id, lba);
)sql";

// The counters of each open connection, so that an error found deep in a statement is counted
// for its catalog. Touched on open, close and errors only.
Mutex counters_mu;
std::map<sqlite3*, Catalog::Counters*>& CountersByDb() {
  static auto* by_db = new std::map<sqlite3*, Catalog::Counters*>;
  return *by_db;
}

constexpr char kDamagePayload[] = "type.ecd/catalog-damaged";

}  // namespace

namespace catalog_internal {

absl::Status SqliteError(sqlite3* db, absl::string_view what) {
  const int code = sqlite3_extended_errcode(db);
  std::string message = absl::StrCat("catalog ", what, ": ", sqlite3_errmsg(db));
  if ((code & 0xff) == SQLITE_CONSTRAINT) return absl::AlreadyExistsError(message);
  {
    MutexLock lock(counters_mu);
    auto it = CountersByDb().find(db);
    if (it != CountersByDb().end()) it->second->errors.fetch_add(1, std::memory_order_relaxed);
  }
  if ((code & 0xff) == SQLITE_FULL) return absl::ResourceExhaustedError(message);
  if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB) {
    absl::Status damaged = absl::DataLossError(message);
    damaged.SetPayload(kDamagePayload, absl::Cord("1"));
    return damaged;
  }
  return absl::InternalError(message);
}

}  // namespace catalog_internal

using catalog_internal::SqliteError;
using catalog_internal::Statement;
using catalog_internal::Transaction;

bool IsCatalogDamage(const absl::Status& status) {
  return status.GetPayload(kDamagePayload).has_value();
}

const char* DeviceStateName(DeviceState state) {
  switch (state) {
    case DeviceState::kOnline:
      return "online";
    case DeviceState::kFailing:
      return "failing";
    case DeviceState::kFailed:
      return "failed";
    case DeviceState::kDown:
      return "down";
  }
  return "online";
}

absl::StatusOr<std::unique_ptr<Catalog>> Catalog::Open(const std::string& path, bool read_only) {
  sqlite3* db = nullptr;
  const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    absl::Status s = absl::InternalError(
        absl::StrCat("open catalog ", path, ": ", db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<Catalog> catalog(new Catalog(db));
  {
    MutexLock lock(counters_mu);
    CountersByDb()[db] = &catalog->counters_;
  }
  sqlite3_busy_timeout(db, 5000);
  // WAL for crash safety and concurrent readers; FULL so that every commit is durable.
  if (read_only) {
    Statement get(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    absl::StatusOr<bool> row = get.Step();
    if (!row.ok()) return row.status();
    if (!*row || get.Text(0) != absl::StrCat(kSchemaVersion)) {
      return absl::FailedPreconditionError(
          absl::StrCat("catalog ", path, " is not at schema version ", kSchemaVersion,
                       "; start ecd on it once to migrate it"));
    }
    return catalog;
  }
  for (const char* pragma :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
    if (absl::Status s = catalog->Exec(pragma); !s.ok()) return s;
  }
  if (absl::Status s = catalog->Exec(kSchema); !s.ok()) return s;

  int version = 1;
  {
    Statement get(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    absl::StatusOr<bool> row = get.Step();
    if (!row.ok()) return row.status();
    if (!*row) {  // A new catalog: kSchema made version 1.
      Statement put(db, "INSERT INTO meta(key, value) VALUES ('schema_version', '1')");
      if (absl::Status s = put.Run(); !s.ok()) return s;
    } else if (!absl::SimpleAtoi(get.Text(0), &version) || version < 1 ||
               version > kSchemaVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("catalog ", path, " has schema version ", get.Text(0),
                       "; this ecd reads 1..", kSchemaVersion, ": use a matching ecd release"));
    }
  }
  // Each migration and its new schema_version commit together: a crash leaves v-1 or v.
  for (; version < kSchemaVersion; ++version) {
    Transaction txn(db, catalog->counters_);
    if (!txn.status().ok()) return txn.status();
    if (absl::Status s = catalog->Exec(kMigrations[version - 1]); !s.ok()) return s;
    Statement put(db, "UPDATE meta SET value = ? WHERE key = 'schema_version'");
    put.Bind(1, absl::StrCat(version + 1));
    if (absl::Status s = put.Run(); !s.ok()) return s;
    if (absl::Status s = txn.Commit(); !s.ok()) return s;
  }
  // The WAL file and its index stay when the catalog closes, at the size the WAL grew to, and a
  // RESTART checkpoint (best effort) makes the next commit write the WAL from its start: a start
  // and the commits after it reuse space the catalog already has, so a file system that filled
  // up while ecd was stopped does not keep it from starting or deleting (docs/operations.md).
  int persist = 1;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  (void)sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_RESTART, nullptr, nullptr);
  return catalog;
}

Catalog::~Catalog() {
  {
    MutexLock lock(counters_mu);
    CountersByDb().erase(db_);
  }
  sqlite3_close(db_);
}

absl::Status Catalog::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat("catalog: ", error ? error : "error"));
    sqlite3_free(error);
    return s;
  }
  return absl::OkStatus();
}

absl::Status Catalog::IntegrityCheck() {
  MutexLock lock(mu_);
  Statement s(db_, "PRAGMA integrity_check");
  std::vector<std::string> problems;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return absl::DataLossError(row.status().message());
    if (!*row) break;
    if (s.Text(0) != "ok" && problems.size() < 3) problems.push_back(s.Text(0));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("SQLite's integrity check fails: ", absl::StrJoin(problems, "; ")));
}

absl::Status Catalog::Backup(const std::string& path) {
  MutexLock lock(mu_);
  sqlite3* to = nullptr;
  if (sqlite3_open_v2(path.c_str(), &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    absl::Status s = absl::InternalError(
        absl::StrCat("open ", path, ": ", to ? sqlite3_errmsg(to) : "out of memory"));
    sqlite3_close(to);
    return s;
  }
  sqlite3_backup* backup = sqlite3_backup_init(to, "main", db_, "main");
  if (backup == nullptr) {
    absl::Status s =
        absl::InternalError(absl::StrCat("backup to ", path, ": ", sqlite3_errmsg(to)));
    sqlite3_close(to);
    return s;
  }
  const int rc = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  absl::Status s =
      rc == SQLITE_DONE
          ? absl::OkStatus()
          : absl::InternalError(absl::StrCat("backup to ", path, ": ", sqlite3_errmsg(to)));
  sqlite3_close(to);
  return s;
}

}  // namespace ecd::store
