// ParseSize and FormatSize.
#include "lib/util/size.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ecd {

absl::StatusOr<uint64_t> ParseSize(absl::string_view text) {
  const auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid size \"", text,
                     "\": use a number with an optional K, M, G or T suffix (e.g. 64K, 1M)"));
  };
  absl::string_view s = absl::StripAsciiWhitespace(text);
  size_t digits = 0;
  uint64_t value = 0;
  while (digits < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[digits]))) {
    const uint64_t d = static_cast<uint64_t>(s[digits] - '0');
    if (value > (UINT64_MAX - d) / 10) return invalid();
    value = value * 10 + d;
    ++digits;
  }
  if (digits == 0) return invalid();
  std::string suffix = absl::AsciiStrToUpper(s.substr(digits));
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else {
    const char unit = suffix[0];
    const std::string rest = suffix.substr(1);
    if (rest != "" && rest != "B" && rest != "IB") return invalid();
    switch (unit) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        return invalid();
    }
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return invalid();
  return value << shift;
}

std::string FormatSize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (v >= 1023.95 && unit < 5) {  // 1023.95 and up would print as "1024.0"
    v /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", v, kUnits[unit]);
}

}  // namespace ecd
