// DeviceLabel: the small versioned record on one LBA of every device (LBA 0 of a device created
// with labels; where the catalog's meta `device_label/<id>` says) that names the store and the
// device slot the namespace belongs to, so that a namespace replaced, swapped or cut short while
// ecd was stopped is recognized and never reported healthy. Format: docs/formats.md.
#ifndef ECD_LIB_STORE_DEVICE_LABEL_H_
#define ECD_LIB_STORE_DEVICE_LABEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/records/record_log.h"

namespace ecd::store {

inline constexpr uint32_t kDeviceLabelVersion = 2;
// Bytes of a label; it fills the start of one LBA (the rest of that LBA is zero).
inline constexpr size_t kDeviceLabelBytes = 128;

struct DeviceLabel {
  std::string store_id;  // 32 lowercase hex digits, the catalog's meta `store_id`
  uint32_t device = 0;   // the device's id (slot) in that store
  uint64_t size_bytes = 0;
  uint32_t lba_size = 0;
  int64_t created_unix_ms = 0;
  // Where the device's block-record log is (version 2; empty in a version 1 label).
  RecordLogPlace log;
};

// A new random store id: 32 lowercase hex digits.
std::string NewStoreId();

// The label's bytes: kDeviceLabelBytes long, version kDeviceLabelVersion, CRC32C last.
// REQUIRES: label.store_id is 32 lowercase hex digits.
std::vector<uint8_t> EncodeDeviceLabel(const DeviceLabel& label);

// Decodes the start of a label LBA. NotFound when the bytes hold no label at all (no magic, or
// fewer than kDeviceLabelBytes: a blank or foreign namespace); DataLoss when the magic is there
// but the CRC32C fails; FailedPrecondition for a version newer than this ecd reads. A version 1
// label decodes with an empty `log`. The store id and device are not checked: the caller
// compares them with the catalog's.
absl::StatusOr<DeviceLabel> DecodeDeviceLabel(absl::Span<const uint8_t> bytes);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_DEVICE_LABEL_H_
