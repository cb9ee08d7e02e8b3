// The pieces of the Prometheus text exposition format 0.0.4: name rules, escaping and numbers.
// https://prometheus.io/docs/instrumenting/exposition_formats/ (text format, version 0.0.4).
#ifndef ECD_LIB_METRICS_TEXT_FORMAT_H_
#define ECD_LIB_METRICS_TEXT_FORMAT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ecd::metrics {

// The Content-Type of a text exposition.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(absl::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus itself).
bool IsValidLabelName(absl::string_view name);

// HELP text: backslash and line feed escaped.
std::string EscapeHelp(absl::string_view text);
// Label values: backslash, double quote and line feed escaped.
std::string EscapeLabelValue(absl::string_view value);
// A sample value: integers without exponent or fraction, "+Inf", "-Inf", "NaN", otherwise the
// shortest decimal that reads back as the same double.
std::string FormatValue(double value);

}  // namespace ecd::metrics

#endif  // ECD_LIB_METRICS_TEXT_FORMAT_H_
