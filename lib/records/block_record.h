// Block records: what every block on a device is, written on that device beside the data, so
// that the catalog can be rebuilt from the devices alone. This file is the byte format of the
// record log's pages and checkpoints (docs/formats.md, "Block records"); RecordLog writes them.
#ifndef ECD_LIB_STORE_BLOCK_RECORD_H_
#define ECD_LIB_STORE_BLOCK_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/catalog/catalog.h"

namespace ecd::store {

// One object's identity and shape as of the operation that wrote a record (its version, size
// and stripe count after that operation).
struct ObjectHeader {
  uint64_t seq = 0;  // The operation's sequence number.
  ObjectRecord object;
};

// One block of an object on the device holding the record.
struct BlockEntry {
  uint64_t seq = 0;
  int64_t object_id = 0;
  uint64_t stripe = 0;
  uint32_t index = 0;
  uint64_t lba = 0;
  uint32_t lba_count = 0;
  uint32_t crc32c = 0;
  uint64_t block_size = 0;  // The stripe's block size.
};

// The last record an operation writes on each device it writes to: how many block entries it
// wrote on all devices together, so that a reader can tell a complete operation from a torn one.
struct OperationEnd {
  uint64_t seq = 0;
  uint64_t blocks = 0;
};

// The object was deleted by operation `seq`.
struct Tombstone {
  uint64_t seq = 0;
  int64_t object_id = 0;
};

// What one page (or a whole log) holds, in the order written.
struct RecordSet {
  std::vector<ObjectHeader> objects;
  std::vector<BlockEntry> blocks;
  std::vector<OperationEnd> ends;
  std::vector<Tombstone> tombstones;
  std::vector<uint64_t> aborted;  // Operations that did not commit: their records are void.

  // Adds every record of `other` after those of this set.
  void Append(const RecordSet& other);
};

// Identity of a record page: which store, device and log generation it belongs to.
struct PageHeader {
  std::string store_id;  // 32 hex digits
  uint32_t device = 0;
  uint64_t generation = 0;
  uint32_t index = 0;  // Page index within its half of the log.
  bool snapshot = false;
  // Every operation with a sequence number up to this one had committed or aborted when the page
  // was written.
  uint64_t committed_through = 0;
};

// Builds the payload of one page: records are added until the page is full. Block entries are
// tied to the object header before them in the same page, so a page that starts in the middle
// of an object's blocks must repeat its header first: the caller adds it again (the builder
// does not).
// Thread safety: not thread-safe; one thread at a time.
class PageBuilder {
 public:
  // REQUIRES: page_bytes >= kMinRecordPageBytes.
  explicit PageBuilder(size_t page_bytes);

  bool empty() const { return used_ == 0; }
  // Each returns false, adding nothing, when the record does not fit in what is left.
  bool AddObject(const ObjectHeader& header);
  bool AddBlock(const BlockEntry& block);  // REQUIRES: an object header was added to this page.
  bool AddEnd(const OperationEnd& end);
  bool AddTombstone(const Tombstone& tombstone);
  bool AddAbort(uint64_t seq);
  // The whole page, `page_bytes` long, header and CRC32C included; the builder is then empty.
  // REQUIRES: header.store_id is 32 lowercase hex digits.
  std::vector<uint8_t> Finish(const PageHeader& header);

 private:
  bool Room(size_t bytes) const;
  size_t page_bytes_;
  size_t used_ = 0;
  std::vector<uint8_t> payload_;
};

// Bytes of the fixed part of a page and of the records; a page must hold a header record with
// the longest name and one block entry.
inline constexpr size_t kRecordPageHeaderBytes = 64;
inline constexpr size_t kObjectRecordFixedBytes = 64;
inline constexpr size_t kMinRecordPageBytes = 4096;

// The smallest page (a multiple of lba_size, at least kMinRecordPageBytes) that holds an object
// record with a name of `max_name_length` bytes and a block entry.
size_t RecordPageBytes(uint32_t lba_size, size_t max_name_length);

// Decodes a page, appending its records to `out` (left unchanged on error). NotFound when it
// holds no page of this format (never written, zeros, or shorter than a page header); DataLoss
// when the magic is there but the CRC32C or a record fails. The header is not checked against
// any store, device or generation: the caller does that.
absl::StatusOr<PageHeader> DecodePage(absl::Span<const uint8_t> page, RecordSet& out);

// One of the log's two checkpoint slots: where the current half is and what the device knew at
// the last clean stop or snapshot.
struct Checkpoint {
  std::string store_id;
  uint32_t device = 0;
  uint64_t counter = 0;         // Written alternately to slots 0 and 1; the higher valid one wins.
  uint64_t generation = 0;      // Of the current half; its pages carry it.
  uint32_t half = 0;            // 0 or 1.
  uint32_t snapshot_pages = 0;  // Pages [0, snapshot_pages) of the half are its snapshot.
  uint32_t next_page = 0;       // Where appends continued when it was written.
  bool clean = false;           // Written by a clean stop; false while ecd runs.
  uint64_t committed_through = 0;
  uint64_t max_seq = 0;  // The highest sequence number any record of the log carries.
};

// The checkpoint as a page of `page_bytes` bytes, CRC32C included.
// REQUIRES: page_bytes >= kMinRecordPageBytes; checkpoint.store_id is 32 lowercase hex digits.
std::vector<uint8_t> EncodeCheckpoint(const Checkpoint& checkpoint, size_t page_bytes);
// Decodes a checkpoint page. NotFound: no checkpoint (no magic, or too short); DataLoss: a
// damaged one.
absl::StatusOr<Checkpoint> DecodeCheckpoint(absl::Span<const uint8_t> page);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_BLOCK_RECORD_H_
