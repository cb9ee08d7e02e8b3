// HealthEventFromJson over nlohmann::json, the JSON library lib/cxl prints records with.
#include "lib/repair/health_event_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/cxl/event_record.h"
#include "lib/cxl/mailbox.h"

namespace ecd::repair {
namespace {

using Json = nlohmann::json;

// A JSON number (as a double) as a T: NaN is 0 and values outside T's range saturate at its
// ends. A plain static_cast is undefined behaviour for those, and a line's numbers are anyone's.
template <typename T>
T Saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// The number under `key`: a JSON number, or a string that parses as one; else 0.
double Number(const Json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end()) return 0;
  if (it->is_number()) return it->get<double>();
  double v = 0;
  if (it->is_string() && absl::SimpleAtod(it->get_ref<const std::string&>(), &v)) return v;
  return 0;
}

// The string under `key`, or "" when there is none.
std::string String(const Json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

// "memN" as the kernel names memory devices: N. Anything else is refused.
absl::StatusOr<uint32_t> MemdevNumber(const Json& memdev) {
  if (!memdev.is_string()) {
    return absl::InvalidArgumentError(
        "\"memdev\" is not a string; give \"memN\" (N a device number)");
  }
  const std::string& name = memdev.get_ref<const std::string&>();
  uint32_t n = 0;
  if (!absl::StartsWith(name, "mem") || name.size() == 3 ||
      !std::all_of(name.begin() + 3, name.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(name.substr(3), &n)) {
    return absl::InvalidArgumentError(absl::StrCat("\"memdev\" is \"", absl::CHexEscape(name),
                                                   "\", not memN (N a device number)"));
  }
  return n;
}

absl::StatusOr<HealthEvent::Kind> KindOf(const std::string& event) {
  if (event == "cxl_general_media") return HealthEvent::Kind::kGeneralMedia;
  if (event == "cxl_dram") return HealthEvent::Kind::kDram;
  if (event == "cxl_memory_module") return HealthEvent::Kind::kMemoryModule;
  if (absl::StartsWith(event, "cxl_")) return HealthEvent::Kind::kOther;
  return absl::InvalidArgumentError(
      absl::StrCat("a line names no cxl_* event (\"event\": \"", event, "\")"));
}

// `cxl monitor` prints the log as a number; the kernel's trace text, and ecd, by name.
absl::StatusOr<int> LogOf(const Json& doc) {
  const auto log = doc.find("log");
  std::string text;
  if (log == doc.end()) {
    text = "missing";
  } else if (log->is_string()) {
    const std::string& given = log->get_ref<const std::string&>();
    const std::string name = absl::AsciiStrToLower(given);
    for (int i = 0; i < 4; ++i) {
      const std::string_view log_name = cxl::EventLogName(static_cast<cxl::EventLog>(i));
      if (name == absl::AsciiStrToLower(std::string(log_name)) || name == absl::StrCat(i)) return i;
    }
    text = absl::StrCat("\"", absl::CHexEscape(given), "\"");
  } else if (log->is_number()) {
    const double v = log->get<double>();
    if (v == 0 || v == 1 || v == 2 || v == 3) return static_cast<int>(v);
    text = absl::StrCat(v);
  } else {
    text = "not a string or a number";
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "\"log\" is ", text, ", not 0..3 or Informational, Warning, Failure or Fatal (any case)"));
}

// The header flags and the GM/DRAM and Memory Module fields, from the line's numbers.
void ReadFields(const Json& doc, HealthEvent& e) {
  const auto flags = Saturate<uint32_t>(Number(doc, "hdr_flags"));
  e.severity = static_cast<int>(flags & cxl::kFlagSeverityMask);
  e.permanent = (flags & cxl::kFlagPermanentCondition) != 0;
  e.maintenance_needed = (flags & cxl::kFlagMaintenanceNeeded) != 0;
  e.performance_degraded = (flags & cxl::kFlagPerformanceDegraded) != 0;
  e.replacement_needed = (flags & cxl::kFlagHardwareReplacementNeeded) != 0;
  e.dpa = Saturate<uint64_t>(Number(doc, "dpa")) & cxl::kDpaMask;
  e.descriptor = Saturate<uint8_t>(Number(doc, "descriptor"));
  e.health_status = Saturate<uint8_t>(Number(doc, "health_status"));
  e.media_status = Saturate<uint8_t>(Number(doc, "media_status"));
  e.additional_status = Saturate<uint8_t>(Number(doc, "add_status"));
  e.life_used = Saturate<uint8_t>(Number(doc, "life_used"));
  e.temperature = Saturate<int16_t>(Number(doc, "device_temp"));
}

}  // namespace

absl::StatusOr<HealthEvent> HealthEventFromJson(const std::string& line, uint32_t default_device) {
  const Json doc = Json::parse(line, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return absl::InvalidArgumentError("a line is not a JSON object");
  HealthEvent e;
  e.device = default_device;
  if (auto it = doc.find("memdev"); it != doc.end()) {
    absl::StatusOr<uint32_t> n = MemdevNumber(*it);
    if (!n.ok()) return n.status();
    e.device = *n;
  }
  absl::StatusOr<HealthEvent::Kind> kind = KindOf(String(doc, "event"));
  if (!kind.ok()) return kind.status();
  e.kind = *kind;
  absl::StatusOr<int> log = LogOf(doc);
  if (!log.ok()) return log.status();
  e.log = *log;
  ReadFields(doc, e);
  e.description = line;
  return e;
}

}  // namespace ecd::repair
