// Offline catalog tools over a stopped store's data dir: rebuild the catalog from the block
// records on the devices, or check the catalog against them. Rules and guarantees:
// docs/formats.md, "Rebuilding the catalog".
//
// REQUIRES: the caller holds the data dir's lock (DataDirLock), so that no Store has it open.
// Thread safety: one call per data dir at a time (the lock sees to it); `progress` is called on
// the calling thread.
#ifndef ECD_LIB_STORE_CATALOG_REBUILD_H_
#define ECD_LIB_STORE_CATALOG_REBUILD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/devices/namespace.h"
#include "lib/records/record_resolver.h"

namespace ecd::store {

struct CatalogToolOptions {
  std::string data_dir;
  NamespaceFactory namespace_factory;  // null: OpenNvmeNamespace with default options
  // One line per step (a device read, the catalog written), for a terminal.
  std::function<void(const std::string& line)> progress;
};

struct RebuildReport {
  Resolution resolution;
  std::vector<std::string> devices;  // a line per device: what was read, or why not
  uint64_t blocks = 0;               // block rows written
  std::string kept_aside;            // where the old catalog went ("" when there was none)
};

// Reads every device namespace under data_dir/devices, resolves their records and writes a new
// catalog.db holding every committed object at its newest committed version. The store id is the
// one most labels carry (on a tie, the smallest); a namespace without a label, or labelled for
// another store or slot, is not used and its device is recorded down; one whose record log cannot
// be read adds no records. The old catalog (with its -wal and -shm files) is renamed to
// catalog.db.replaced-<unix ms>; the next start snapshots every record log and runs SQLite's
// integrity check. FailedPrecondition when no device carries a label. A failure to write the new
// catalog returns the catalog's status with the old one untouched; a failure to move the old one
// aside or the new one into place (or to sync the directory) returns that error.
absl::StatusOr<RebuildReport> RebuildCatalog(const CatalogToolOptions& options);

struct CheckReport {
  Resolution resolution;
  std::vector<std::string> devices;
  std::vector<std::string> differences;  // a line each; empty when catalog and devices agree
  uint64_t objects = 0;                  // objects in the catalog
};

// Compares the catalog (opened read-only) with what the devices' records say. Changes nothing.
// A catalog that cannot be opened is reported as a difference, not an error. FailedPrecondition
// when no device carries a label; the catalog's status when a query of it fails.
absl::StatusOr<CheckReport> CheckCatalog(const CatalogToolOptions& options);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_CATALOG_REBUILD_H_
