// RecordToJson: one compact JSON object per CXL event record, keyed like the Linux cxl
// tracepoints' fields.
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/cxl/event_record_json.h"
#include "lib/cxl/event_record_fields.h"

namespace ecd::cxl {
namespace {

using internal::Raw;

// Minimal JSON object writer: keys and values appended in order, no whitespace.
class JsonObject {
 public:
  JsonObject() : out_("{") {}

  void Str(std::string_view key, std::string_view value) {
    Key(key);
    AppendQuoted(value);
  }
  void Uint(std::string_view key, uint64_t value) {
    Key(key);
    absl::StrAppend(&out_, value);
  }
  void Int(std::string_view key, int64_t value) {
    Key(key);
    absl::StrAppend(&out_, value);
  }
  template <size_t N>
  void Bytes(std::string_view key, const std::array<uint8_t, N>& bytes) {
    Key(key);
    out_.push_back('[');
    for (size_t i = 0; i < N; ++i) {
      if (i != 0) out_.push_back(',');
      absl::StrAppend(&out_, bytes[i]);
    }
    out_.push_back(']');
  }
  std::string Finish() && {
    out_.push_back('}');
    return std::move(out_);
  }

 private:
  void Key(std::string_view key) {
    if (out_.size() > 1) out_.push_back(',');
    AppendQuoted(key);
    out_.push_back(':');
  }
  // RFC 8259 escaping: quote, backslash and control characters; other bytes pass through.
  void AppendQuoted(std::string_view s) {
    out_.push_back('"');
    for (char c : s) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\b':
          out_ += "\\b";
          break;
        case '\f':
          out_ += "\\f";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            absl::StrAppend(&out_, absl::StrFormat("\\u%04x", static_cast<unsigned char>(c)));
          } else {
            out_.push_back(c);
          }
      }
    }
    out_.push_back('"');
  }

  std::string out_;
};

// Fields common to every cxl event tracepoint (CXL_EVT_TP_entry), minus memdev/host/serial.
void HeaderJson(JsonObject& j, std::string_view event, std::string_view log_name, const Uuid& uuid,
                const EventHeader& h) {
  j.Str("system", "cxl");
  j.Str("event", event);
  j.Str("log", log_name);
  j.Str("hdr_uuid", uuid.ToString());
  j.Uint("hdr_flags", h.flags & kFlagsMask);
  j.Uint("hdr_handle", h.handle);
  j.Uint("hdr_related_handle", h.related_handle);
  j.Uint("hdr_timestamp", h.timestamp);
  j.Uint("hdr_length", h.length);
  j.Uint("hdr_maint_op_class", h.maint_op_class);
  j.Uint("hdr_maint_op_sub_class", h.maint_op_sub_class);
}

}  // namespace

std::string RecordToJson(const EventRecord& record, std::string_view log_name) {
  JsonObject j;
  if (const auto* g = std::get_if<GeneralMediaRecord>(&record)) {
    HeaderJson(j, "cxl_general_media", log_name, kGeneralMediaUuid, g->header);
    j.Uint("dpa", g->dpa());
    j.Uint("descriptor", g->descriptor);
    j.Uint("type", Raw(g->type));
    j.Uint("transaction_type", Raw(g->transaction_type));
    j.Uint("channel", g->channel);
    j.Uint("device", g->device);
    j.Bytes("comp_id", g->component_id);
    j.Uint("validity_flags", g->validity_flags);
    j.Uint("rank", g->rank);
    j.Uint("dpa_flags", g->dpa_flags());
    j.Uint("cme_count", g->cme_count);
    j.Uint("sub_type", Raw(g->sub_type));
    j.Uint("cme_threshold_ev_flags", g->cme_threshold_ev_flags);
  } else if (const auto* d = std::get_if<DramRecord>(&record)) {
    HeaderJson(j, "cxl_dram", log_name, kDramUuid, d->header);
    j.Uint("dpa", d->dpa());
    j.Uint("descriptor", d->descriptor);
    j.Uint("type", Raw(d->type));
    j.Uint("transaction_type", Raw(d->transaction_type));
    j.Uint("channel", d->channel);
    j.Uint("validity_flags", d->validity_flags);
    j.Uint("column", d->column);
    j.Uint("nibble_mask", d->nibble_mask);
    j.Uint("row", d->row);
    j.Bytes("cor_mask", d->correction_mask);
    j.Uint("rank", d->rank);
    j.Uint("bank_group", d->bank_group);
    j.Uint("bank", d->bank);
    j.Uint("dpa_flags", d->dpa_flags());
    j.Bytes("comp_id", d->component_id);
    j.Uint("cvme_count", d->cvme_count);
    j.Uint("sub_type", Raw(d->sub_type));
    j.Uint("sub_channel", d->sub_channel);
    j.Uint("cme_threshold_ev_flags", d->cme_threshold_ev_flags);
  } else if (const auto* m = std::get_if<MemoryModuleRecord>(&record)) {
    HeaderJson(j, "cxl_memory_module", log_name, kMemoryModuleUuid, m->header);
    j.Uint("event_type", Raw(m->event_type));
    j.Uint("health_status", m->health.health_status);
    j.Uint("media_status", Raw(m->health.media_status));
    j.Uint("life_used", m->health.life_used);
    j.Uint("dirty_shutdown_cnt", m->health.dirty_shutdown_count);
    j.Uint("cor_vol_err_cnt", m->health.corrected_volatile_error_count);
    j.Uint("cor_per_err_cnt", m->health.corrected_persistent_error_count);
    j.Int("device_temp", m->health.device_temp);
    j.Uint("add_status", m->health.additional_status);
    j.Uint("event_sub_type", Raw(m->event_sub_type));
    j.Bytes("comp_id", m->component_id);
    j.Uint("validity_flags", m->validity_flags);
  } else {
    const auto& x = std::get<GenericRecord>(record);
    HeaderJson(j, "cxl_generic_event", log_name, x.uuid, x.header);
    j.Bytes("data", x.data);
  }
  return std::move(j).Finish();
}

}  // namespace ecd::cxl
