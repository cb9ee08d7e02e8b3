// DataDirLock: the exclusive lock that makes one ecd the only user of a data dir. It is an
// flock(2) on DATA_DIR/ecd.lock, which holds the holder's PID as text (docs/formats.md).
#ifndef ECD_LIB_STORE_DATA_DIR_LOCK_H_
#define ECD_LIB_STORE_DATA_DIR_LOCK_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ecd::store {

// The lock file's name inside the data dir.
inline constexpr char kDataDirLockFile[] = "ecd.lock";

// Holds the lock from Acquire until it is destroyed (or the process ends: the kernel releases an
// flock when its last descriptor closes, so a killed ecd leaves no stale lock). The file itself
// is never removed: removing it would let two processes lock two different files of one name.
//
// Thread safety: thread-safe (nothing changes after Acquire). Ownership: owns the descriptor.
class DataDirLock {
 public:
  // Creates `data_dir` if it does not exist, opens (creating) DATA_DIR/ecd.lock and takes an
  // exclusive flock on it without waiting, then writes this process's PID into it.
  // FailedPrecondition when another open file description holds the lock (another ecd, or
  // another Acquire in this process): the message names the holder's PID as its lock file
  // says, the lock file, and what to do. InvalidArgument when `data_dir` is empty; Internal when
  // the directory or the file cannot be created, opened, locked or written (errno's text), or
  // the lock file is a symbolic link (never followed). A full file system (ENOSPC, EDQUOT) when
  // writing the PID is no error: the lock is held and the file is left empty.
  static absl::StatusOr<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);

  // Empties the lock file (the PID is no longer true) and releases the lock.
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  // DATA_DIR/ecd.lock.
  const std::string& path() const { return path_; }

 private:
  DataDirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  const std::string path_;
  const int fd_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_DATA_DIR_LOCK_H_
