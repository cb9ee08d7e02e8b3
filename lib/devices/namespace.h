// Namespace: the seam between the store and a block device. A namespace is a fixed number of
// fixed-size logical blocks (LBAs), read and written whole, as an NVMe namespace is.
//
// The one production implementation keeps a namespace in a (sparse) regular file or a block
// device and moves every block as NVMe commands (lib/nvme); tests wrap it to inject faults.
#ifndef ECD_LIB_STORE_NAMESPACE_H_
#define ECD_LIB_STORE_NAMESPACE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/nvme/device.h"

namespace ecd::store {

// A fixed array of LBAs read and written whole.
// Thread safety: every method may be called from any thread, concurrently, provided the I/Os in
// flight at once (reads, writes, Deallocate, Reserve) touch distinct LBA ranges.
// Errors of the implementations in lib/devices and lib/fault: InvalidArgument for a size that is
// not a multiple of lba_size(), OutOfRange for LBAs past the end, DataLoss for a media error
// (a read that failed, a write or flush fault), ResourceExhausted when there is no room (for a
// namespace file, a FileSystemFullError), Internal otherwise.
class Namespace {
 public:
  // REQUIRES: no I/O is in flight on the namespace.
  virtual ~Namespace() = default;

  virtual uint32_t lba_size() const = 0;
  virtual uint64_t lba_count() const = 0;
  uint64_t size_bytes() const { return lba_count() * lba_size(); }

  // Reads out.size() bytes starting at `lba` into `out`, which the caller owns.
  // REQUIRES: out.size() is a multiple of lba_size().
  virtual absl::Status Read(uint64_t lba, absl::Span<uint8_t> out) = 0;

  // Writes data.size() bytes starting at `lba`; not durable until Flush returns OK.
  // REQUIRES: data.size() is a multiple of lba_size().
  virtual absl::Status Write(uint64_t lba, absl::Span<const uint8_t> data) = 0;

  // As Read and Write, but may return before the I/O completes; `done` then runs exactly once
  // with its status, on any thread (possibly before this returns). The buffer must stay valid
  // and untouched until `done` runs; `done` must be cheap and must not wait for other I/O. The
  // default runs the synchronous call; NVMe namespaces overlap the I/O with the caller's work.
  // Errors are those of Read and Write, passed to `done`.
  using Done = std::function<void(absl::Status)>;
  virtual void ReadAsync(uint64_t lba, absl::Span<uint8_t> out, Done done) { done(Read(lba, out)); }
  virtual void WriteAsync(uint64_t lba, absl::Span<const uint8_t> data, Done done) {
    done(Write(lba, data));
  }

  // Makes every completed Write durable. An error means earlier writes may be lost: the caller
  // must fail the request that depended on them, never retry into success. In the NVMe
  // namespace a failed flush is sticky: every later Flush fails too (Internal).
  virtual absl::Status Flush() = 0;

  // Tells the device the LBAs no longer hold data (like NVMe Deallocate). Best effort: errors
  // are ignored, and what the LBAs read afterwards is unspecified.
  virtual void Deallocate(uint64_t lba, uint64_t count) {}

  // Makes the LBAs take their space now, so that later writes to them cannot fail for want of
  // it (fallocate of a sparse namespace file; what they read is unchanged). OK where space is
  // not taken on write (the default; a block device). ResourceExhausted when the file system
  // cannot hold them; Internal when it fails otherwise.
  virtual absl::Status Reserve(uint64_t lba, uint64_t count) { return absl::OkStatus(); }

  // The LBA ranges, ascending and disjoint, that take space on the device: those of a sparse
  // namespace file that are not holes. Empty when there are none or the namespace cannot tell
  // (the default; a block device). Used to give back the space of free extents at start-up.
  struct LbaRange {
    uint64_t lba = 0;
    uint64_t count = 0;
    friend bool operator==(const LbaRange&, const LbaRange&) = default;
  };
  virtual std::vector<LbaRange> AllocatedRanges() const { return {}; }

  // Named counters of the device's data path (commands, PRP fetches, errors by status, ...),
  // for `ecctl device ls --json` and metrics. Thread-safe.
  virtual std::vector<std::pair<std::string, uint64_t>> Counters() const { return {}; }
};

// Opens (creating it if `create` and it does not exist) a namespace file of `size_bytes`
// (a multiple of lba_size) at `path`, or a block device of at least that size, behind a
// simulated NVMe controller with the given options. An existing file keeps its data and must be
// at least size_bytes long; a created one is sized, fsynced and its directory entry synced
// before this returns. The caller owns the namespace.
// Errors: InvalidArgument when size_bytes is not a positive multiple of lba_size, `path` is
// neither a regular file nor a block device, or the block device is too small;
// FailedPrecondition when an existing file is shorter than size_bytes; Internal (with errno
// text) when open, stat or sizing fails; and those of nvme::Device::Open.
absl::StatusOr<std::unique_ptr<Namespace>> OpenNvmeNamespace(
    const std::string& path, uint64_t size_bytes, uint32_t lba_size, bool create,
    const nvme::DeviceOptions& options = {});

// Opens the namespace of one device, as OpenNvmeNamespace does; the caller owns the result. The
// seam where tests inject faulty devices.
using NamespaceFactory = std::function<absl::StatusOr<std::unique_ptr<Namespace>>(
    const std::string& path, uint64_t size_bytes, uint32_t lba_size, bool create)>;

// The production factory: OpenNvmeNamespace with `options` (what Store::Open uses by default).
NamespaceFactory NvmeNamespaceFactory(const nvme::DeviceOptions& options);

// Makes the directory entry of `path` durable (fsync of its parent directory), as a newly
// created file needs before anything that depends on it is acknowledged. Internal (with errno
// text) when the directory cannot be opened or fsynced.
absl::Status SyncParentDir(const std::string& path);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_NAMESPACE_H_
