// Logging for ecd: one line per event on stderr, "<time> <level> <message>". The one logging
// approach of the project (abseil 20220623 has no absl/log); lib/ code logs only what an
// operator must see, and returns everything else as absl::Status.
//
// Thread safety: safe to call from any thread; each line is written with a single write(2).
#ifndef ECD_LIB_UTIL_LOG_H_
#define ECD_LIB_UTIL_LOG_H_

#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ecd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

inline std::atomic<int>& MinLogLevel() {
  static std::atomic<int> level{static_cast<int>(LogLevel::kInfo)};
  return level;
}

template <typename... Args>
void Log(LogLevel level, const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (static_cast<int>(level) < MinLogLevel().load(std::memory_order_relaxed)) return;
  static constexpr const char* kNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  std::string line =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ ", absl::Now(), absl::UTCTimeZone()),
                   kNames[static_cast<int>(level)], " ", absl::StrFormat(format, args...), "\n");
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace ecd

#endif  // ECD_LIB_UTIL_LOG_H_
