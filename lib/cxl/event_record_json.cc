// RecordToJson: one compact JSON object per CXL event record, keyed like the Linux cxl
// tracepoints' fields, built with nlohmann::ordered_json so keys keep their insertion order.
#include "lib/cxl/event_record_json.h"

#include <string>
#include <string_view>
#include <variant>

#include "lib/cxl/event_record_fields.h"
#include "nlohmann/json.hpp"

namespace ecd::cxl {
namespace {

using internal::Raw;
using Json = nlohmann::ordered_json;

// Fields common to every cxl event tracepoint (CXL_EVT_TP_entry), minus memdev/host/serial.
void HeaderJson(Json& j, std::string_view event, std::string_view log_name, const Uuid& uuid,
                const EventHeader& h) {
  j["system"] = "cxl";
  j["event"] = event;
  j["log"] = log_name;
  j["hdr_uuid"] = uuid.ToString();
  j["hdr_flags"] = h.flags & kFlagsMask;
  j["hdr_handle"] = h.handle;
  j["hdr_related_handle"] = h.related_handle;
  j["hdr_timestamp"] = h.timestamp;
  j["hdr_length"] = h.length;
  j["hdr_maint_op_class"] = h.maint_op_class;
  j["hdr_maint_op_sub_class"] = h.maint_op_sub_class;
}

void GeneralMediaJson(Json& j, const GeneralMediaRecord& g, std::string_view log_name) {
  HeaderJson(j, "cxl_general_media", log_name, kGeneralMediaUuid, g.header);
  j["dpa"] = g.dpa();
  j["descriptor"] = g.descriptor;
  j["type"] = Raw(g.type);
  j["transaction_type"] = Raw(g.transaction_type);
  j["channel"] = g.channel;
  j["device"] = g.device;
  j["comp_id"] = g.component_id;
  j["validity_flags"] = g.validity_flags;
  j["rank"] = g.rank;
  j["dpa_flags"] = g.dpa_flags();
  j["cme_count"] = g.cme_count;
  j["sub_type"] = Raw(g.sub_type);
  j["cme_threshold_ev_flags"] = g.cme_threshold_ev_flags;
}

void DramJson(Json& j, const DramRecord& d, std::string_view log_name) {
  HeaderJson(j, "cxl_dram", log_name, kDramUuid, d.header);
  j["dpa"] = d.dpa();
  j["descriptor"] = d.descriptor;
  j["type"] = Raw(d.type);
  j["transaction_type"] = Raw(d.transaction_type);
  j["channel"] = d.channel;
  j["validity_flags"] = d.validity_flags;
  j["column"] = d.column;
  j["nibble_mask"] = d.nibble_mask;
  j["row"] = d.row;
  j["cor_mask"] = d.correction_mask;
  j["rank"] = d.rank;
  j["bank_group"] = d.bank_group;
  j["bank"] = d.bank;
  j["dpa_flags"] = d.dpa_flags();
  j["comp_id"] = d.component_id;
  j["cvme_count"] = d.cvme_count;
  j["sub_type"] = Raw(d.sub_type);
  j["sub_channel"] = d.sub_channel;
  j["cme_threshold_ev_flags"] = d.cme_threshold_ev_flags;
}

void MemoryModuleJson(Json& j, const MemoryModuleRecord& m, std::string_view log_name) {
  HeaderJson(j, "cxl_memory_module", log_name, kMemoryModuleUuid, m.header);
  j["event_type"] = Raw(m.event_type);
  j["health_status"] = m.health.health_status;
  j["media_status"] = Raw(m.health.media_status);
  j["life_used"] = m.health.life_used;
  j["dirty_shutdown_cnt"] = m.health.dirty_shutdown_count;
  j["cor_vol_err_cnt"] = m.health.corrected_volatile_error_count;
  j["cor_per_err_cnt"] = m.health.corrected_persistent_error_count;
  j["device_temp"] = m.health.device_temp;
  j["add_status"] = m.health.additional_status;
  j["event_sub_type"] = Raw(m.event_sub_type);
  j["comp_id"] = m.component_id;
  j["validity_flags"] = m.validity_flags;
}

}  // namespace

std::string RecordToJson(const EventRecord& record, std::string_view log_name) {
  Json j = Json::object();
  if (const auto* g = std::get_if<GeneralMediaRecord>(&record)) {
    GeneralMediaJson(j, *g, log_name);
  } else if (const auto* d = std::get_if<DramRecord>(&record)) {
    DramJson(j, *d, log_name);
  } else if (const auto* m = std::get_if<MemoryModuleRecord>(&record)) {
    MemoryModuleJson(j, *m, log_name);
  } else {
    const auto& x = std::get<GenericRecord>(record);
    HeaderJson(j, "cxl_generic_event", log_name, x.uuid, x.header);
    j["data"] = x.data;
  }
  // Compact, UTF-8 passed through, bytes that are not valid UTF-8 replaced (never throws).
  return j.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                Json::error_handler_t::replace);
}

}  // namespace ecd::cxl
