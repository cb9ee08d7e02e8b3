// Internal to lib/cxl's event record files: the raw-byte view of the enumerated record fields,
// shared by the codec, the names and the JSON rendering. Not part of the public API.
#ifndef ECD_LIB_CXL_EVENT_RECORD_FIELDS_H_
#define ECD_LIB_CXL_EVENT_RECORD_FIELDS_H_

#include <cstdint>

namespace ecd::cxl::internal {

// The byte an enumerated field is stored as on the wire, whether or not it is a named value.
template <typename E>
uint8_t Raw(E v) {
  return static_cast<uint8_t>(v);
}

}  // namespace ecd::cxl::internal

#endif  // ECD_LIB_CXL_EVENT_RECORD_FIELDS_H_
