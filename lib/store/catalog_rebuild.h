// Offline catalog tools over a stopped store's data dir: rebuild the catalog from the block
// records on the devices, or check the catalog against them. The caller holds the data dir's
// lock. Rules and guarantees: docs/formats.md, "Rebuilding the catalog".
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
// catalog.db holding every committed object at its newest committed version. The old catalog
// (with its -wal and -shm files) is renamed to catalog.db.replaced-<unix ms>; the next start
// snapshots every record log and runs SQLite's integrity check. FailedPrecondition when no
// device carries a label, or labels of several stores are found with none in the majority.
absl::StatusOr<RebuildReport> RebuildCatalog(const CatalogToolOptions& options);

struct CheckReport {
  Resolution resolution;
  std::vector<std::string> devices;
  std::vector<std::string> differences;  // a line each; empty when catalog and devices agree
  uint64_t objects = 0;                  // objects in the catalog
};

// Compares the catalog (opened read-only) with what the devices' records say. Changes nothing.
absl::StatusOr<CheckReport> CheckCatalog(const CatalogToolOptions& options);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_CATALOG_REBUILD_H_
