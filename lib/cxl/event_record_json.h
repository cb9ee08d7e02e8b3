// RecordToJson: a CXL event record as one compact JSON object, keyed like the Linux cxl
// tracepoints' fields.
#ifndef ECD_LIB_CXL_EVENT_RECORD_JSON_H_
#define ECD_LIB_CXL_EVENT_RECORD_JSON_H_

#include <string>
#include <string_view>

#include "lib/cxl/event_record_codec.h"

namespace ecd::cxl {

// One compact JSON object for the record, in the shape of ndctl's `cxl monitor` output: "system"
// ("cxl"), "event" (the tracepoint name: cxl_general_media, cxl_dram, cxl_memory_module,
// cxl_generic_event), "log" (log_name, as a string), then the tracepoint's fields by their names
// and in their declaration order, with raw integer values, hdr_uuid as a canonical UUID string
// and byte arrays (comp_id, cor_mask, data) as arrays of integers. Host-side fields that are not
// in the record (memdev, host, serial, hpa, region) are omitted. As in the kernel, "dpa" is the
// address with bits 5:0 cleared and "dpa_flags" is bits 1:0.
//
// The output is valid UTF-8 JSON with no whitespace: in log_name, quotes, backslashes and
// control characters are escaped (\", \\, \b, \f, \n, \r, \t, otherwise \u00xx), other valid
// UTF-8 passes through unchanged, and each byte that is not part of valid UTF-8 becomes U+FFFD.
std::string RecordToJson(const EventRecord& record, std::string_view log_name);

}  // namespace ecd::cxl

#endif  // ECD_LIB_CXL_EVENT_RECORD_JSON_H_
