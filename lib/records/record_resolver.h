// Resolves the block records read from a store's devices into the objects a catalog must hold:
// each committed object at its newest committed version, with the newest record of each of its
// blocks; deleted, voided and uncommitted operations left out. The rules are in
// docs/formats.md, "Rebuilding the catalog".
#ifndef ECD_LIB_STORE_RECORD_RESOLVER_H_
#define ECD_LIB_STORE_RECORD_RESOLVER_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lib/catalog/catalog.h"
#include "lib/records/block_record.h"

namespace ecd::store {

// A block whose record was not found on any device.
inline constexpr uint32_t kNoDevice = std::numeric_limits<uint32_t>::max();

// What one device's record log holds.
struct DeviceRecords {
  uint32_t device = 0;
  RecordSet records;
  uint64_t committed_through = 0;
};

// Blocks are M+K per stripe, ordered by stripe and index. A block without a record has device
// kNoDevice and corrupt set: it must be placed and rebuilt.
using ResolvedObject = ObjectWithBlocks;

// What Resolve restores, and counts of what it left out.
struct Resolution {
  std::vector<ResolvedObject> objects;    // ordered by id
  uint64_t committed_through = 0;         // the highest mark any device carries
  uint64_t max_seq = 0;                   // the highest sequence number any record carries
  uint64_t deleted = 0;                   // objects with a tombstone
  uint64_t uncommitted = 0;               // operations past the mark left out as incomplete
  uint64_t voided = 0;                    // operations with an abort record
  uint64_t superseded_extents = 0;        // records whose extent a newer record took
  uint64_t missing_blocks = 0;            // blocks without a record, in restored objects
  std::vector<std::string> not_restored;  // an object each, with why
};

// Resolves the records of every device into the objects to restore, by the rules in the file
// comment. A pure function of `devices`; it never fails: an object that cannot be restored (a
// stripe with records of fewer than its data blocks, or a newer object with the same name) is
// left out and named in not_restored.
Resolution Resolve(const std::vector<DeviceRecords>& devices);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_RECORD_RESOLVER_H_
