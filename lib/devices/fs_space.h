// FsSpace: the free space of the file systems that hold a store's namespace files and catalog,
// and the bytes the store has promised to block writes not yet made. Namespace files are sparse,
// so the devices' free LBAs overstate what the disk can take; every new extent is claimed here
// first, against the file system's real free space less a reserve kept for the catalog and for
// deletes.
#ifndef ECD_LIB_STORE_FS_SPACE_H_
#define ECD_LIB_STORE_FS_SPACE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/devices/namespace.h"
#include "lib/util/mutex.h"

namespace ecd::store {

// What a claim is for. New data (encode, update) must leave the whole reserve free; a repair
// (rebuild, evacuation, scrub repair), which keeps stored data safe, may use half of it.
enum class SpaceUse { kNewData, kRepair };

// A file system's size and the bytes ecd may still write to it (statvfs: f_bavail x f_frsize,
// which leaves out blocks reserved for root).
struct FsStat {
  uint64_t size_bytes = 0;
  uint64_t free_bytes = 0;
};
// The FsStat of the file system holding `path`. Internal (with errno text) when statvfs fails.
absl::StatusOr<FsStat> StatFileSystem(const std::string& path);

// One file system as FsSpace sees it, for `ecctl device ls`, status and metrics.
struct FileSystemUsage {
  std::string path;  // A directory on it: the data dir, or the directory of namespaces on it.
  uint64_t size_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t reserve_bytes = 0;     // Kept free for the catalog and deletes.
  uint64_t claimed_bytes = 0;     // Promised to block writes not made yet.
  bool catalog = false;           // Holds catalog.db.
  std::vector<uint32_t> devices;  // Namespace files on it, by device id.
};

// An extent a claim covers: `lba_count` LBAs of `bytes` bytes in all, at `lba` of `device`.
struct ClaimedExtent {
  uint32_t device = 0;
  uint64_t lba = 0;
  uint64_t lba_count = 0;
  uint64_t bytes = 0;
};

// A RESOURCE_EXHAUSTED status that says a file system is (nearly) full, with a payload that
// IsFileSystemFull recognizes; `message` is used as is.
absl::Status FileSystemFullError(const std::string& message);
// True for a status made by FileSystemFullError (ResourceExhausted with its payload).
bool IsFileSystemFull(const absl::Status& status);

// The claims of block writes on the file systems under a store's namespaces and catalog; see the
// file comment.
// Thread safety: all methods are thread-safe.
class FsSpace {
 public:
  // `reserve_bytes` stay free on every tracked file system (half of them for repairs).
  // `stat` (tests replace it) reads a file system's size and free bytes; it is called with the
  // internal lock held, so it must not call back into this FsSpace.
  explicit FsSpace(uint64_t reserve_bytes,
                   std::function<absl::StatusOr<FsStat>(const std::string&)> stat = StatFileSystem);

  uint64_t reserve_bytes() const { return reserve_bytes_; }

  // Tracks the file system holding the catalog file at `path` (its directory is named in
  // messages). Internal when it cannot be stat'ed.
  absl::Status SetCatalog(const std::string& path);
  // Tracks the file system holding device `id`'s namespace at `path` (again after a reopen or a
  // replacement). A namespace that is not a regular file (a block device), or that cannot be
  // stat'ed, takes no space from a file system: its claims always succeed. Its outstanding claims
  // are dropped.
  void SetDevice(uint32_t id, const std::string& path);

  // Claims every extent, all or nothing: on each file system involved, the free bytes less the
  // bytes already claimed must still hold the reserve (half for kRepair) after these extents,
  // and the catalog's file system must hold its reserve too. FileSystemFullError when one does
  // not, naming it, its free bytes and the reserve; `stat`'s error (Internal for statvfs) when a
  // file system cannot be read. Extents of devices not on a file system (or never set with
  // SetDevice) claim nothing. REQUIRES: no extent overlaps one already claimed.
  absl::Status Claim(absl::Span<const ClaimedExtent> extents, SpaceUse use);
  // Ends the claims on [lba, lba + lba_count) of `device`: the write was made (its bytes are in
  // the file system's own count now), failed, or the extent was freed unwritten. Every claim
  // that overlaps the range ends whole; parts of the range without a claim are ignored.
  void Release(uint32_t device, uint64_t lba, uint64_t lba_count);

  // Every tracked file system, the catalog's first. Size and free bytes are 0 for one that
  // cannot be stat'ed.
  std::vector<FileSystemUsage> Usage() const;

 private:
  struct Fs {
    dev_t dev = 0;
    std::string path;
    bool catalog = false;
    uint64_t claimed = 0;
  };
  struct Claimed {
    uint64_t lba_count = 0;
    uint64_t bytes = 0;
  };
  // The index of the file system with st_dev `dev`, added (named `path`) if new.
  int FsIndexLocked(dev_t dev, const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The message of a refused claim on fs `i`.
  std::string FullMessage(const Fs& fs, const FsStat& stat, uint64_t reserve, uint64_t needed,
                          SpaceUse use) const;

  const uint64_t reserve_bytes_;
  const std::function<absl::StatusOr<FsStat>(const std::string&)> stat_;
  mutable Mutex mu_;
  std::vector<Fs> fs_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, int> device_fs_ ABSL_GUARDED_BY(mu_);  // -1: not on a file system
  std::map<uint32_t, std::map<uint64_t, Claimed>> claims_
      ABSL_GUARDED_BY(mu_);  // by device, by first LBA
};

// Wraps a device's namespace so that each write's completion (successful or not, Write or
// WriteAsync) releases the claims on its LBAs in `space`. Everything else is forwarded, errors
// unchanged. The wrapper owns `inner` and shares `space`; it is as thread-safe as `inner`.
std::unique_ptr<Namespace> ReleaseClaimsOnWrite(std::unique_ptr<Namespace> inner,
                                                std::shared_ptr<FsSpace> space, uint32_t device);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_FS_SPACE_H_
