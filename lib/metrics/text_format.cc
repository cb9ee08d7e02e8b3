// Prometheus text format 0.0.4 helpers.
#include "lib/metrics/text_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"

namespace ecd::metrics {
namespace {

bool IsNameChar(char c, bool first, bool colon) {
  if (absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && absl::ascii_isdigit(static_cast<unsigned char>(c));
}

bool IsValidName(absl::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, colon)) return false;
  }
  return true;
}

std::string Escape(absl::string_view in, bool quote) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

bool IsValidMetricName(absl::string_view name) { return IsValidName(name, /*colon=*/true); }

bool IsValidLabelName(absl::string_view name) {
  return IsValidName(name, /*colon=*/false) && !(name.size() >= 2 && name.substr(0, 2) == "__");
}

std::string EscapeHelp(absl::string_view text) { return Escape(text, /*quote=*/false); }

std::string EscapeLabelValue(absl::string_view value) { return Escape(value, /*quote=*/true); }

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  // The shortest of %.15g .. %.17g that reads back exactly.
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

}  // namespace ecd::metrics
