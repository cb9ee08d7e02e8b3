// StoreCore::Device: one device slot of the store as Store's flows see it (its record, namespace,
// extent allocator and health counters). Private to the Store's own source files.
#ifndef ECD_LIB_STORE_STORE_DEVICE_H_
#define ECD_LIB_STORE_STORE_DEVICE_H_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "lib/catalog/catalog.h"
#include "lib/devices/extent_allocator.h"
#include "lib/devices/namespace.h"
#include "lib/store/store_core.h"

namespace ecd::store {

// Fields are guarded by StoreCore::mu_, except the atomics. Owned by StoreCore::devices_.
struct StoreCore::Device {
  DeviceRecord record;
  // Null when it could not be opened. Shared so that I/O in flight keeps a handle alive while
  // `device online` reopens a replaced device.
  std::shared_ptr<Namespace> ns;
  ExtentAllocator allocator;
  uint64_t flush_failures = 0;
  // Where its label is (catalog meta `device_label/<id>`); nullopt until one is written.
  std::optional<uint64_t> label_lba;
  // Where its block-record log is, from its label; empty when it has none (yet).
  RecordLogPlace log_place;
  // Writes that failed since the last one that succeeded.
  std::atomic<uint32_t> write_errors_in_a_row{0};

  Device(DeviceRecord r, std::unique_ptr<Namespace> n)
      : record(std::move(r)), ns(std::move(n)), allocator(record.size_bytes / record.lba_size) {}
};

// The namespace path of a device: `path` as the catalog has it, relative to the data dir unless
// it starts with '/'. Pure; thread-safe.
inline std::string DevicePath(const std::string& data_dir, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return (std::filesystem::path(data_dir) / path).string();
}

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_DEVICE_H_
