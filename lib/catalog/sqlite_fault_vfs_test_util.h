// A SQLite VFS for tests that fails the WAL's fsync on demand, so that a catalog commit ends
// with its outcome unknown, as on a disk that reports a failed flush.
//
// Thread safety: fail_wal_sync may be set from any thread; Install and Uninstall are not
// thread-safe. REQUIRES: Install before the catalogs under test are opened, and not again
// before Uninstall; Uninstall after they are closed. All state is static.
#ifndef ECD_LIB_CATALOG_SQLITE_FAULT_VFS_TEST_UTIL_H_
#define ECD_LIB_CATALOG_SQLITE_FAULT_VFS_TEST_UTIL_H_

#include <sqlite3.h>

#include <atomic>

namespace ecd::store {

// A VFS that wraps the default one and, while `fail_wal_sync` is set, fails every fsync of a WAL
// file with SQLITE_IOERR_FSYNC, without syncing: the frames were written but are not durable,
// as when a disk reports a failed flush.
namespace fault_vfs {

inline std::atomic<bool> fail_wal_sync{false};
inline sqlite3_vfs* real_vfs = nullptr;
inline sqlite3_vfs vfs;

struct File {
  sqlite3_file base;
  sqlite3_file* real;  // the wrapped file, stored right after this struct
  bool wal;
};

inline sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }
inline const sqlite3_io_methods* M(sqlite3_file* f) { return Real(f)->pMethods; }

inline int Close(sqlite3_file* f) { return M(f)->xClose(Real(f)); }
inline int Read(sqlite3_file* f, void* p, int n, sqlite3_int64 off) {
  return M(f)->xRead(Real(f), p, n, off);
}
inline int Write(sqlite3_file* f, const void* p, int n, sqlite3_int64 off) {
  return M(f)->xWrite(Real(f), p, n, off);
}
inline int Truncate(sqlite3_file* f, sqlite3_int64 size) { return M(f)->xTruncate(Real(f), size); }
inline int Sync(sqlite3_file* f, int flags) {
  if (reinterpret_cast<File*>(f)->wal && fail_wal_sync.load()) return SQLITE_IOERR_FSYNC;
  return M(f)->xSync(Real(f), flags);
}
inline int FileSize(sqlite3_file* f, sqlite3_int64* size) { return M(f)->xFileSize(Real(f), size); }
inline int Lock(sqlite3_file* f, int level) { return M(f)->xLock(Real(f), level); }
inline int Unlock(sqlite3_file* f, int level) { return M(f)->xUnlock(Real(f), level); }
inline int CheckReservedLock(sqlite3_file* f, int* out) {
  return M(f)->xCheckReservedLock(Real(f), out);
}
inline int FileControl(sqlite3_file* f, int op, void* arg) {
  return M(f)->xFileControl(Real(f), op, arg);
}
inline int SectorSize(sqlite3_file* f) { return M(f)->xSectorSize(Real(f)); }
inline int DeviceCharacteristics(sqlite3_file* f) { return M(f)->xDeviceCharacteristics(Real(f)); }
inline int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** p) {
  return M(f)->xShmMap(Real(f), region, size, extend, p);
}
inline int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return M(f)->xShmLock(Real(f), offset, n, flags);
}
inline void ShmBarrier(sqlite3_file* f) { M(f)->xShmBarrier(Real(f)); }
inline int ShmUnmap(sqlite3_file* f, int del) { return M(f)->xShmUnmap(Real(f), del); }
inline int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** p) {
  return M(f)->xFetch(Real(f), off, n, p);
}
inline int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return M(f)->xUnfetch(Real(f), off, p);
}

// Version 3, as the wrapped files' methods must be (Open checks).
inline const sqlite3_io_methods kMethods = {
    .iVersion = 3,
    .xClose = Close,
    .xRead = Read,
    .xWrite = Write,
    .xTruncate = Truncate,
    .xSync = Sync,
    .xFileSize = FileSize,
    .xLock = Lock,
    .xUnlock = Unlock,
    .xCheckReservedLock = CheckReservedLock,
    .xFileControl = FileControl,
    .xSectorSize = SectorSize,
    .xDeviceCharacteristics = DeviceCharacteristics,
    .xShmMap = ShmMap,
    .xShmLock = ShmLock,
    .xShmBarrier = ShmBarrier,
    .xShmUnmap = ShmUnmap,
    .xFetch = Fetch,
    .xUnfetch = Unfetch,
};

inline int Open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  File* f = reinterpret_cast<File*>(file);
  f->real = reinterpret_cast<sqlite3_file*>(f + 1);
  f->wal = (flags & SQLITE_OPEN_WAL) != 0;
  const int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
  f->base.pMethods = f->real->pMethods != nullptr ? &kMethods : nullptr;
  if (rc == SQLITE_OK && f->real->pMethods->iVersion < 3) return SQLITE_CANTOPEN;
  return rc;
}

// Makes the wrapper SQLite's default VFS, so that Catalog::Open uses it.
inline void Install() {
  real_vfs = sqlite3_vfs_find(nullptr);
  vfs = *real_vfs;  // its other methods, and the app data they read, are the real VFS's
  vfs.pNext = nullptr;
  vfs.zName = "ecd-fault";
  vfs.szOsFile = static_cast<int>(sizeof(File)) + real_vfs->szOsFile;
  vfs.xOpen = Open;
  sqlite3_vfs_register(&vfs, /*makeDflt=*/1);
}

inline void Uninstall() {
  fail_wal_sync = false;
  sqlite3_vfs_unregister(&vfs);
  sqlite3_vfs_register(real_vfs, /*makeDflt=*/1);
}

}  // namespace fault_vfs

}  // namespace ecd::store

#endif  // ECD_LIB_CATALOG_SQLITE_FAULT_VFS_TEST_UTIL_H_
