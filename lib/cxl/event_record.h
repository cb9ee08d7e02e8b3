// CXL memory-device event records, everything callers use: the codec (event_record_codec.h),
// the tracepoint names and warnings (event_record_names.h) and the JSON rendering
// (event_record_json.h).
#ifndef ECD_LIB_CXL_EVENT_RECORD_H_
#define ECD_LIB_CXL_EVENT_RECORD_H_

#include "lib/cxl/event_record_codec.h"  // IWYU pragma: export
#include "lib/cxl/event_record_json.h"   // IWYU pragma: export
#include "lib/cxl/event_record_names.h"  // IWYU pragma: export

#endif  // ECD_LIB_CXL_EVENT_RECORD_H_
