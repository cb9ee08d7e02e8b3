// ByteSource and ByteSink: where Store::Encode and Store::Update pull an object's bytes from, and
// where Store::Read and Store::GetBlock push them to. Implemented by the wire layer and by tests.
//
// Ownership: the caller owns both; a Store method uses one for the length of the call only and
// keeps no reference to it afterwards (a sink's pins may outlive the call: WritePinned).
// Thread safety: the store calls a source or a sink from the request's thread, one method at a
// time; only the copies of WritePinned's `pin` may be dropped on any thread.
// Errors: a status a method returns ends the request with that status (Finish(false) excepted).
#ifndef ECD_LIB_STORE_BYTE_STREAM_H_
#define ECD_LIB_STORE_BYTE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/catalog/catalog.h"

namespace ecd::store {

// Where Encode and Update pull an object's bytes from.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills a prefix of `buffer`; returns the number of bytes, 0 at the end of the object.
  virtual absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) = 0;
  // Waits until Read can return without waiting for whoever feeds the source: true when it
  // will return bytes, false at the end of the object; errors as Read's. Encode and Update call
  // it before they reserve stripe memory, so that a source that delivers nothing holds none.
  // The default, for a source that never waits, returns true at once.
  virtual absl::StatusOr<bool> Await() { return true; }
  // Called once after the last Read, just before the commit; an error abandons the operation
  // as any other would (nothing stored). E.g. a network stream whose end turns out to have been
  // a failure rather than the client's clean close.
  virtual absl::Status BeforeCommit() { return absl::OkStatus(); }
};

// Where Read and GetBlock push an object's bytes to.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Called once before Start with the object being read, as committed: its id and version name
  // the bytes served.
  virtual void SetObject(const ObjectRecord& object) {}
  // Called once before any data, with the whole object's size (Read) or the block's (GetBlock).
  virtual absl::Status Start(uint64_t object_size) = 0;
  // Consecutive bytes of the requested range; `reconstructed` blocks were rebuilt to serve them.
  virtual absl::Status Write(absl::Span<const uint8_t> data, uint32_t reconstructed) = 0;
  // Write for a sink that can pass bytes on without copying them (Read uses it; GetBlock does
  // not). `data` lies in a stripe buffer of the read and stays valid and unchanged for as long
  // as the sink holds a copy of `pin`: the read reuses the buffer only once every copy is gone,
  // and if copies outlive the read, its buffers (and their share of the memory budget) are
  // released when the last one goes. A sink may keep copies after the call and after Finish, but
  // must drop them as it sends, without waiting for the read to go on (the read may be waiting
  // for them). The Store's destructor waits for the last of them. The default copies through
  // Write.
  virtual absl::Status WritePinned(absl::Span<const uint8_t> data, uint32_t reconstructed,
                                   const std::shared_ptr<const void>& pin) {
    return Write(data, reconstructed);
  }
  // True once whoever the sink sends to is gone (a cancelled call): a read waiting for the
  // sink's pins then stops with CANCELLED instead (the pins may only go when the call does).
  // Called from the read's thread, while Write is not running.
  virtual bool Gone() const { return false; }
  // The most bytes of buffers of its own the sink holds while it takes `length` bytes and until
  // Finish returns (messages being filled and sent). Read and GetBlock reserve them from the
  // stripe-memory budget with their stripes.
  virtual uint64_t held_bytes(uint64_t length) const { return 0; }
  // Called once after Start, before Read or GetBlock returns, while the memory of held_bytes is
  // still reserved. `ok`: every byte was written; the sink sends what it buffered and waits
  // until it is sent, and its status is the read's. Not ok: the read failed; the sink may drop
  // what it buffered, must stop using its buffers before it returns, and its status is ignored.
  virtual absl::Status Finish(bool ok) { return absl::OkStatus(); }
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_BYTE_STREAM_H_
