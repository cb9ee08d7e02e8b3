// Internal to lib/catalog: the SQLite statement and write-transaction wrappers and the mapping of
// SQLite errors to statuses, shared by the catalog's source files. Not part of the public API.
//
// Thread safety: not thread-safe. REQUIRES: the caller has the connection to itself for the
// whole life of a Statement or Transaction (it holds the Catalog's mutex, or the catalog is not
// shared yet: SQLite's last error is per connection), and the connection outlives them.
#ifndef ECD_LIB_CATALOG_SQLITE_STATEMENT_H_
#define ECD_LIB_CATALOG_SQLITE_STATEMENT_H_

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/catalog/catalog.h"
#include "lib/catalog/object_catalog.h"

namespace ecd::store::catalog_internal {

// The status for the error SQLite last reported on `db`, `what` naming the failed step:
// AlreadyExists for a constraint violation, ResourceExhausted for a full disk, DataLoss marked as
// catalog damage (IsCatalogDamage) for a damaged file, Internal otherwise. Every one but a
// constraint violation counts as an error of the catalog open on `db`.
absl::Status SqliteError(sqlite3* db, absl::string_view what);

// True when `code`, an extended result code, is an I/O error (the SQLITE_IOERR family).
inline bool IsIoError(int code) { return (code & 0xff) == SQLITE_IOERR; }

// `failed`, the status of a write whose commit ended in SQLite result `code`: an I/O error may
// have struck after the WAL held the whole commit (its fsync failed, say), so the write's outcome
// is unknown (object_catalog.h). A full disk stays ResourceExhausted: the WAL's commit frame is
// written last and checksummed, so a write that found no space left no valid commit behind.
inline absl::Status CommitFailure(int code, absl::Status failed) {
  return IsIoError(code) ? CommitOutcomeUnknownError(failed.message()) : failed;
}

// A prepared statement, finalized on destruction. Errors stick: after a failed prepare, bind or
// step, Step, Run and Reset return that status.
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
    error_code_ = sqlite3_extended_errcode(db_);
    status_ = SqliteError(db_, "step");
    return status_;
  }
  // Runs a statement that returns no rows.
  absl::Status Run() {
    absl::StatusOr<bool> row = Step();
    return row.ok() ? absl::OkStatus() : row.status();
  }
  // Runs a write outside a Transaction. SQLite commits it within the step, so the step's error
  // may be its commit's (CommitFailure).
  absl::Status RunAutocommit() {
    absl::Status s = Run();
    return s.ok() ? s : CommitFailure(error_code_, std::move(s));
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
  int error_code_ = SQLITE_OK;  // of the step that failed
};

// A write transaction (BEGIN IMMEDIATE), rolled back unless committed. Only a failure of COMMIT
// itself can leave the outcome unknown; an error before it changed nothing. REQUIRES: status()
// is OK before the transaction is used; Commit is called at most once. A successful Commit
// counts in `counters` (which must outlive the transaction) and calls its on_commit.
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
      const int code = sqlite3_extended_errcode(db_);
      absl::Status s = SqliteError(db_, "commit");
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return CommitFailure(code, std::move(s));
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

}  // namespace ecd::store::catalog_internal

#endif  // ECD_LIB_CATALOG_SQLITE_STATEMENT_H_
