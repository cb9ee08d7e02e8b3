// The SQLite catalog: schema, transactions and queries.
#include "lib/catalog/catalog.h"

#include <sqlite3.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

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
std::mutex counters_mu;
std::map<sqlite3*, Catalog::Counters*>& CountersByDb() {
  static auto* by_db = new std::map<sqlite3*, Catalog::Counters*>;
  return *by_db;
}

constexpr char kDamagePayload[] = "type.ecd/catalog-damaged";

absl::Status SqliteError(sqlite3* db, absl::string_view what) {
  const int code = sqlite3_extended_errcode(db);
  std::string message = absl::StrCat("catalog ", what, ": ", sqlite3_errmsg(db));
  if ((code & 0xff) == SQLITE_CONSTRAINT) return absl::AlreadyExistsError(message);
  {
    std::lock_guard lock(counters_mu);
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

// A prepared statement, finalized on destruction.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    status_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) == SQLITE_OK
                  ? absl::OkStatus()
                  : SqliteError(db, "prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  const absl::Status& status() const { return status_; }

  Statement& Bind(int i, int64_t v) {
    if (status_.ok() && sqlite3_bind_int64(stmt_, i, v) != SQLITE_OK) {
      status_ = SqliteError(db_, "bind");
    }
    return *this;
  }
  Statement& Bind(int i, absl::string_view v) {
    if (status_.ok() && sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()),
                                          SQLITE_TRANSIENT) != SQLITE_OK) {
      status_ = SqliteError(db_, "bind");
    }
    return *this;
  }

  // Steps once. Returns true when a row is available, false when done.
  absl::StatusOr<bool> Step() {
    if (!status_.ok()) return status_;
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    status_ = SqliteError(db_, "step");
    return status_;
  }
  // Runs a statement that returns no rows.
  absl::Status Run() {
    absl::StatusOr<bool> row = Step();
    return row.ok() ? absl::OkStatus() : row.status();
  }
  absl::Status Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return status_;
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  int Type(int col) const { return sqlite3_column_type(stmt_, col); }
  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t == nullptr ? std::string()
                        : std::string(reinterpret_cast<const char*>(t),
                                      static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  absl::Status status_;
};

// A write transaction (BEGIN IMMEDIATE), rolled back unless committed.
class Transaction {
 public:
  Transaction(sqlite3* db, Catalog::Counters& counters) : db_(db), counters_(counters) {
    status_ = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK
                  ? absl::OkStatus()
                  : SqliteError(db, "begin");
  }
  ~Transaction() {
    if (status_.ok() && !done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  const absl::Status& status() const { return status_; }
  absl::Status Commit() {
    done_ = true;
    const auto start = std::chrono::steady_clock::now();
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      absl::Status s = SqliteError(db_, "commit");
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return s;
    }
    counters_.commits.fetch_add(1, std::memory_order_relaxed);
    if (counters_.on_commit) counters_.on_commit(std::chrono::steady_clock::now() - start);
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  Catalog::Counters& counters_;
  absl::Status status_;
  bool done_ = false;
};

// Within a transaction: raises meta('commit_seq') to `seq` (never lowers it). 0: no-op.
absl::Status RaiseCommitSeq(sqlite3* db, uint64_t seq) {
  if (seq == 0) return absl::OkStatus();
  Statement s(db,
              "INSERT INTO meta(key, value) VALUES ('commit_seq', ?1) ON CONFLICT(key) DO UPDATE "
              "SET value = ?1 WHERE CAST(value AS INTEGER) < CAST(?1 AS INTEGER)");
  s.Bind(1, absl::StrCat(seq));
  return s.Run();
}

// Reads the columns of one row into a record's fields, checking that each value fits its field:
// an INTEGER in the field's range, TEXT, or a name the store knows. The first one that does not
// (a NULL, a real, a blob, a negative size, an unknown state) makes status() DataLoss naming the
// row and the column. Such a row was not written by ecd: the store must not act on it (a zero
// block size would divide by zero, an unknown matrix would decode with the wrong one). The row is
// named by its `key` columns, read only on failure: reading a column as text converts it, after
// which its type is no longer reliable.
class RowDecoder {
 public:
  RowDecoder(const Statement& s, const char* table,
             std::initializer_list<std::pair<const char*, int>> key)
      : s_(s), table_(table), key_(key) {}

  int64_t Int(int col, const char* name, int64_t min = INT64_MIN, int64_t max = INT64_MAX) {
    if (!status_.ok()) return 0;
    if (s_.Type(col) != SQLITE_INTEGER) {
      Fail(name, absl::StrCat("holds ", Describe(col), ", not an integer"));
      return 0;
    }
    const int64_t v = s_.Int(col);
    if (v < min || v > max) {
      Fail(name, absl::StrCat("holds ", v, ", outside ", min, "..", max));
      return 0;
    }
    return v;
  }
  std::string Text(int col, const char* name) {
    if (!status_.ok()) return "";
    if (s_.Type(col) != SQLITE_TEXT) {
      Fail(name, absl::StrCat("holds ", Describe(col), ", not text"));
      return "";
    }
    return s_.Text(col);
  }
  void Fail(const char* name, absl::string_view why) {
    if (!status_.ok()) return;
    std::string row = table_;
    for (const auto& [column, index] : key_)
      absl::StrAppend(&row, " ", column, "=", s_.Text(index));
    status_ = absl::DataLossError(
        absl::StrCat("catalog row ", row, ": ", name, " ", why,
                     "; the catalog was changed outside ecd or is damaged (docs/catalog.md)"));
  }
  const absl::Status& status() const { return status_; }

 private:
  std::string Describe(int col) const {
    switch (s_.Type(col)) {
      case SQLITE_NULL:
        return "NULL";
      case SQLITE_FLOAT:
        return absl::StrCat("the real ", s_.Text(col));
      case SQLITE_BLOB:
        return "a blob";
      case SQLITE_TEXT:
        return absl::StrCat("the text \"", s_.Text(col), "\"");
      default:
        return s_.Text(col);
    }
  }

  const Statement& s_;
  const char* const table_;
  const std::vector<std::pair<const char*, int>> key_;
  absl::Status status_;
};

constexpr int64_t kU32Max = UINT32_MAX;

absl::StatusOr<ObjectRecord> ReadObject(const Statement& s) {
  RowDecoder r(s, "objects", {{"id", 0}});
  ObjectRecord o;
  o.id = r.Int(0, "id");
  o.name = r.Text(1, "name");
  o.size = static_cast<uint64_t>(r.Int(2, "size", 0));
  o.data_blocks = static_cast<uint32_t>(r.Int(3, "data_blocks", 0, kU32Max));
  o.parity_blocks = static_cast<uint32_t>(r.Int(4, "parity_blocks", 0, kU32Max));
  const std::string matrix = r.Text(5, "matrix");
  o.block_size = static_cast<uint64_t>(r.Int(6, "block_size", 0));
  o.stripe_count = static_cast<uint64_t>(r.Int(7, "stripe_count", 0));
  o.created_unix_ms = r.Int(8, "created_unix_ms");
  o.version = static_cast<uint64_t>(r.Int(9, "version", 0));
  if (!r.status().ok()) return r.status();
  if (matrix == "vandermonde") {
    o.matrix = ec::MatrixType::kVandermonde;
  } else if (matrix == "cauchy") {
    o.matrix = ec::MatrixType::kCauchy;
  } else {
    r.Fail("matrix", absl::StrCat("is \"", matrix, "\", not cauchy or vandermonde"));
  }
  if (absl::Status v =
          ec::ValidateShape(static_cast<int>(std::min<uint32_t>(o.data_blocks, INT_MAX)),
                            static_cast<int>(std::min<uint32_t>(o.parity_blocks, INT_MAX)));
      !v.ok()) {
    r.Fail("data_blocks/parity_blocks", absl::StrCat("are not a shape ecd writes: ", v.message()));
  }
  if (absl::Status v = ec::ValidateBlockSize(o.block_size); !v.ok()) {
    r.Fail("block_size", absl::StrCat("is not one ecd writes: ", v.message()));
  }
  if (!r.status().ok()) return r.status();
  return o;
}

constexpr const char* kObjectColumns =
    "id, name, size, data_blocks, parity_blocks, matrix, block_size, stripe_count, "
    "created_unix_ms, version";

// Reads kBlockColumns starting at column `at`.
absl::StatusOr<BlockRecord> ReadBlock(const Statement& s, int at = 0) {
  RowDecoder r(s, "blocks", {{"object_id", at + 7}, {"stripe", at}, {"idx", at + 1}});
  BlockRecord b;
  b.stripe = static_cast<uint64_t>(r.Int(at, "stripe", 0));
  b.index = static_cast<uint32_t>(r.Int(at + 1, "idx", 0, kU32Max));
  b.device = static_cast<uint32_t>(r.Int(at + 2, "device_id", 0, kU32Max));
  b.lba = static_cast<uint64_t>(r.Int(at + 3, "lba", 0));
  b.lba_count = static_cast<uint32_t>(r.Int(at + 4, "lba_count", 0, kU32Max));
  b.crc32c = static_cast<uint32_t>(r.Int(at + 5, "crc32c", 0, kU32Max));
  b.corrupt = r.Int(at + 6, "corrupt") != 0;
  if (!r.status().ok()) return r.status();
  return b;
}

// object_id last: only ReadBlock's error message reads it.
constexpr const char* kBlockColumns =
    "stripe, idx, device_id, lba, lba_count, crc32c, corrupt, object_id";

}  // namespace

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
    std::lock_guard lock(counters_mu);
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
    std::lock_guard lock(counters_mu);
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

absl::StatusOr<std::vector<DeviceRecord>> Catalog::ListDevices() {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT id, path, size_bytes, lba_size, state FROM devices ORDER BY id");
  std::vector<DeviceRecord> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    RowDecoder r(s, "devices", {{"id", 0}});
    DeviceRecord d;
    d.id = static_cast<uint32_t>(r.Int(0, "id", 0, kU32Max));
    d.path = r.Text(1, "path");
    d.size_bytes = static_cast<uint64_t>(r.Int(2, "size_bytes", 0));
    d.lba_size = static_cast<uint32_t>(r.Int(3, "lba_size", 0, kU32Max));
    const std::string state = r.Text(4, "state");
    if (r.status().ok() && state != "online" && state != "failed") {
      r.Fail("state", absl::StrCat("is \"", state, "\", not online or failed"));
    }
    if (!r.status().ok()) return r.status();
    d.state = state == "failed" ? DeviceState::kFailed : DeviceState::kOnline;
    out.push_back(std::move(d));
  }
  Statement failing(db_, "SELECT key FROM meta WHERE key LIKE 'device_failing/%'");
  for (;;) {
    absl::StatusOr<bool> row = failing.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    uint32_t id = 0;
    if (absl::SimpleAtoi(failing.Text(0).substr(strlen("device_failing/")), &id)) {
      for (DeviceRecord& d : out) {
        if (d.id == id && d.state == DeviceState::kOnline) d.state = DeviceState::kFailing;
      }
    }
  }
  // "device_down/<id>" = "<unix ms> <reason>".
  Statement down(db_, "SELECT key, value FROM meta WHERE key LIKE 'device_down/%'");
  for (;;) {
    absl::StatusOr<bool> row = down.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    uint32_t id = 0;
    const std::string value = down.Text(1);
    const size_t space = value.find(' ');
    int64_t since = 0;
    if (!absl::SimpleAtoi(down.Text(0).substr(strlen("device_down/")), &id) ||
        !absl::SimpleAtoi(value.substr(0, space), &since)) {
      continue;
    }
    for (DeviceRecord& d : out) {
      if (d.id != id || d.state == DeviceState::kFailed) continue;
      d.state = DeviceState::kDown;
      d.down_since_unix_ms = since;
      d.down_reason = space == std::string::npos ? "" : value.substr(space + 1);
    }
  }
  return out;
}

absl::Status Catalog::AddDevice(const DeviceRecord& d) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "INSERT INTO devices(id, path, size_bytes, lba_size, state) VALUES (?, ?, ?, ?, ?)");
  s.Bind(1, d.id).Bind(2, d.path).Bind(3, static_cast<int64_t>(d.size_bytes));
  s.Bind(4, d.lba_size).Bind(5, DeviceStateName(d.state));
  return s.Run();
}

namespace {

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

absl::Status Catalog::SetDeviceState(uint32_t id, DeviceState state) {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
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

absl::StatusOr<std::optional<std::string>> Catalog::GetMeta(absl::string_view key) {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT value FROM meta WHERE key = ?");
  s.Bind(1, key);
  absl::StatusOr<bool> row = s.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(s.Text(0));
}

absl::Status Catalog::SetMeta(absl::string_view key, absl::string_view value) {
  std::lock_guard lock(mu_);
  Statement s(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
  s.Bind(1, key).Bind(2, value);
  return s.Run();
}

absl::Status Catalog::DeleteMeta(absl::string_view key) {
  std::lock_guard lock(mu_);
  Statement s(db_, "DELETE FROM meta WHERE key = ?");
  s.Bind(1, key);
  return s.Run();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Catalog::MetaWithPrefix(
    absl::string_view prefix) {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key");
  s.Bind(1, static_cast<int64_t>(prefix.size())).Bind(2, prefix);
  std::vector<std::pair<std::string, std::string>> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.emplace_back(s.Text(0), s.Text(1));
  }
  return out;
}

absl::StatusOr<int64_t> Catalog::CreatePendingObject(const ObjectRecord& o) {
  std::lock_guard lock(mu_);
  Statement s(
      db_,
      "INSERT INTO objects(name, state, size, data_blocks, parity_blocks, matrix, "
      "block_size, stripe_count, created_unix_ms) VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?)");
  s.Bind(1, o.name).Bind(2, static_cast<int64_t>(o.size)).Bind(3, o.data_blocks);
  s.Bind(4, o.parity_blocks).Bind(5, ec::MatrixTypeName(o.matrix));
  s.Bind(6, static_cast<int64_t>(o.block_size)).Bind(7, static_cast<int64_t>(o.stripe_count));
  s.Bind(8, o.created_unix_ms);
  if (absl::Status st = s.Run(); !st.ok()) {
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
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  Statement s(db_, "DELETE FROM objects WHERE state = 'pending'");
  if (absl::Status st = s.Run(); !st.ok()) return st;
  return sqlite3_changes(db_);
}

absl::StatusOr<ObjectRecord> Catalog::GetObject(absl::string_view name) {
  std::lock_guard lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kObjectColumns,
                                " FROM objects WHERE name = ? AND state = 'committed'")
                       .c_str());
  s.Bind(1, name);
  absl::StatusOr<bool> row = s.Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    return absl::NotFoundError(
        absl::StrCat("object \"", name, "\" not found; `ecctl ls` lists the stored objects"));
  }
  return ReadObject(s);
}

absl::StatusOr<std::vector<ObjectRecord>> Catalog::ListObjects() {
  std::lock_guard lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kObjectColumns,
                                " FROM objects WHERE state = 'committed' ORDER BY name")
                       .c_str());
  std::vector<ObjectRecord> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<ObjectRecord> o = ReadObject(s);
    if (!o.ok()) return o.status();
    out.push_back(*std::move(o));
  }
  return out;
}

absl::StatusOr<std::vector<BlockRecord>> Catalog::GetBlocks(int64_t object_id,
                                                            uint64_t first_stripe,
                                                            uint64_t stripe_count) {
  std::lock_guard lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kBlockColumns,
                                " FROM blocks WHERE object_id = ? AND stripe >= ? AND stripe < ? "
                                "ORDER BY stripe, idx")
                       .c_str());
  s.Bind(1, object_id).Bind(2, static_cast<int64_t>(first_stripe));
  s.Bind(3, static_cast<int64_t>(first_stripe + stripe_count));
  std::vector<BlockRecord> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    out.push_back(*b);
  }
  return out;
}

absl::Status Catalog::ForEachBlock(const std::function<void(const BlockRecord&)>& fn) {
  std::lock_guard lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kBlockColumns, " FROM blocks").c_str());
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    fn(*b);
  }
}

absl::Status Catalog::ForEachBlockOf(int64_t object_id,
                                     const std::function<void(const BlockRecord&)>& fn) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              absl::StrCat("SELECT ", kBlockColumns, " FROM blocks WHERE object_id = ?").c_str());
  s.Bind(1, object_id);
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    fn(*b);
  }
}

absl::StatusOr<std::vector<std::string>> Catalog::ObjectsOnDevice(uint32_t device,
                                                                  uint64_t first_lba,
                                                                  uint64_t lba_count) {
  std::lock_guard lock(mu_);
  const int64_t end = lba_count == 0 ? INT64_MAX : static_cast<int64_t>(first_lba + lba_count);
  Statement s(db_,
              "SELECT DISTINCT o.name FROM blocks b JOIN objects o ON o.id = b.object_id "
              "WHERE o.state = 'committed' AND b.device_id = ? AND b.lba < ? "
              "AND b.lba + b.lba_count > ? ORDER BY o.name");
  s.Bind(1, device).Bind(2, end).Bind(3, static_cast<int64_t>(first_lba));
  std::vector<std::string> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(s.Text(0));
  }
}

absl::StatusOr<StripePage> Catalog::StripesWithCorruptBlocks(const StripeCursor& after,
                                                             size_t max_stripes) {
  // Served by the partial index blocks_corrupt.
  return StripesOf(
      "SELECT DISTINCT object_id, stripe, 0 AS at FROM blocks WHERE corrupt = 1 AND "
      "(object_id, stripe) > (?1, ?2) ORDER BY object_id, stripe LIMIT ?3",
      {after.object, static_cast<int64_t>(after.stripe)}, max_stripes);
}

absl::StatusOr<StripePage> Catalog::StripesOnDevice(const DeviceRange& range,
                                                    const StripeCursor& after, size_t max_stripes) {
  // Served by blocks_by_extent (device_id, lba); a stripe has at most one block on a device.
  std::string hits =
      "SELECT object_id, stripe, lba AS at FROM blocks WHERE device_id = ?1 AND lba > ?2";
  if (range.lba_count > 0) {
    absl::StrAppend(&hits, " AND lba < ", range.first_lba + range.lba_count,
                    " AND lba + lba_count > ", range.first_lba);
  }
  absl::StrAppend(&hits, " ORDER BY lba LIMIT ?3");
  return StripesOf(hits, {range.device, after.lba}, max_stripes);
}

absl::StatusOr<StripePage> Catalog::StripesOf(const std::string& hits,
                                              std::pair<int64_t, int64_t> args,
                                              size_t max_stripes) {
  // kBlockColumns names columns of blocks; USING makes object_id and stripe unambiguous.
  const std::string sql =
      absl::StrCat("WITH hit(object_id, stripe, at) AS (", hits, ") SELECT ", kBlockColumns,
                   ", hit.at FROM hit JOIN blocks b USING (object_id, stripe) "
                   "ORDER BY hit.at, object_id, stripe, idx");
  std::lock_guard lock(mu_);
  Statement s(db_, sql.c_str());
  s.Bind(1, args.first).Bind(2, args.second).Bind(3, static_cast<int64_t>(max_stripes));
  std::vector<StripeRows> out;
  StripePage page;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    const int64_t object_id = s.Int(7);
    if (out.empty() || out.back().object.id != object_id || out.back().stripe != b->stripe) {
      out.emplace_back();
      out.back().object.id = object_id;
      out.back().stripe = b->stripe;
      page.next = {object_id, b->stripe, s.Int(8)};
    }
    out.back().blocks.push_back(*b);
  }
  page.more = out.size() == max_stripes;
  // The objects' records; stripes of objects not committed (an encode in progress) are left out.
  std::map<int64_t, ObjectRecord> objects;
  for (StripeRows& r : out) {
    auto it = objects.find(r.object.id);
    if (it == objects.end()) {
      Statement o(db_, absl::StrCat("SELECT ", kObjectColumns,
                                    " FROM objects WHERE id = ? AND state = 'committed'")
                           .c_str());
      o.Bind(1, r.object.id);
      absl::StatusOr<bool> found = o.Step();
      if (!found.ok()) return found.status();
      ObjectRecord record;  // id 0: not committed
      if (*found) {
        absl::StatusOr<ObjectRecord> read = ReadObject(o);
        if (!read.ok()) return read.status();
        record = *std::move(read);
      }
      it = objects.emplace(r.object.id, std::move(record)).first;
    }
    if (it->second.id == 0) continue;
    r.object = it->second;
    page.stripes.push_back(std::move(r));
  }
  return page;
}

absl::StatusOr<std::map<uint32_t, uint64_t>> Catalog::StripesByParity() {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "SELECT parity_blocks, SUM(stripe_count) FROM objects WHERE state = 'committed' "
              "GROUP BY parity_blocks");
  std::map<uint32_t, uint64_t> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out[static_cast<uint32_t>(s.Int(0))] = static_cast<uint64_t>(s.Int(1));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> Catalog::BlockCountsByDevice() {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT device_id, COUNT(*) FROM blocks GROUP BY device_id");
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    RowDecoder r(s, "blocks", {{"device_id", 0}});
    const auto device = static_cast<uint32_t>(r.Int(0, "device_id", 0, kU32Max));
    if (!r.status().ok()) return r.status();
    out.emplace_back(device, static_cast<uint64_t>(s.Int(1)));
  }
}

absl::Status Catalog::ReplaceBlocks(int64_t object_id, absl::Span<const BlockRecord> blocks,
                                    uint64_t seq) {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
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

absl::StatusOr<uint64_t> Catalog::CommitSeq() {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT value FROM meta WHERE key = 'commit_seq'");
  absl::StatusOr<bool> row = s.Step();
  if (!row.ok()) return row.status();
  uint64_t seq = 0;
  if (*row && !absl::SimpleAtoi(s.Text(0), &seq)) {
    return absl::DataLossError(absl::StrCat("catalog meta commit_seq is \"", s.Text(0),
                                            "\", not a number: the catalog is damaged"));
  }
  return seq;
}

absl::Status Catalog::AdvanceCommitSeq(uint64_t seq) {
  std::lock_guard lock(mu_);
  Transaction txn(db_, counters_);
  if (!txn.status().ok()) return txn.status();
  if (absl::Status st = RaiseCommitSeq(db_, seq); !st.ok()) return st;
  return txn.Commit();
}

absl::Status Catalog::ForEachBlockOnDevice(
    uint32_t device,
    const std::function<absl::Status(const ObjectRecord&, const BlockRecord&)>& fn) {
  std::lock_guard lock(mu_);
  Statement s(db_, absl::StrCat("SELECT o.", absl::StrReplaceAll(kObjectColumns, {{", ", ", o."}}),
                                ", b.", absl::StrReplaceAll(kBlockColumns, {{", ", ", b."}}),
                                " FROM blocks b JOIN objects o ON o.id = b.object_id "
                                "WHERE b.device_id = ? AND o.state = 'committed' "
                                "ORDER BY b.object_id, b.stripe, b.idx")
                       .c_str());
  s.Bind(1, device);
  ObjectRecord object;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    if (s.Int(0) != object.id) {
      absl::StatusOr<ObjectRecord> o = ReadObject(s);
      if (!o.ok()) return o.status();
      object = *std::move(o);
    }
    absl::StatusOr<BlockRecord> b = ReadBlock(s, 10);
    if (!b.ok()) return b.status();
    if (absl::Status st = fn(object, *b); !st.ok()) return st;
  }
}

absl::Status Catalog::ForEachEmptyObject(
    const std::function<absl::Status(const ObjectRecord&)>& fn) {
  std::lock_guard lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kObjectColumns,
                                " FROM objects WHERE state = 'committed' AND stripe_count = 0 "
                                "ORDER BY id")
                       .c_str());
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    absl::StatusOr<ObjectRecord> o = ReadObject(s);
    if (!o.ok()) return o.status();
    if (absl::Status st = fn(*o); !st.ok()) return st;
  }
}

absl::Status Catalog::IntegrityCheck() {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
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

absl::Status Catalog::RestoreObjects(absl::Span<const ObjectWithBlocks> objects) {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  Statement s(db_, "UPDATE blocks SET corrupt = ? WHERE object_id = ? AND stripe = ? AND idx = ?");
  s.Bind(1, corrupt ? 1 : 0).Bind(2, object_id).Bind(3, static_cast<int64_t>(stripe));
  s.Bind(4, index);
  return s.Run();
}

}  // namespace ecd::store
