#include "time_format.h"

#include <ctime>

#include "trainyard/core/time.h"

namespace trainyard::cli {

std::string FormatLocalTime(std::string_view rfc3339, const char* strftime_format) {
  auto ts = ParseRfc3339(rfc3339);
  if (!ts.ok()) return std::string(rfc3339);
  int64_t secs = *ts / kMicrosPerSecond;
  if (*ts % kMicrosPerSecond < 0) secs -= 1;
  time_t t = static_cast<time_t>(secs);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return std::string(rfc3339);
  char buf[128];
  size_t n = std::strftime(buf, sizeof buf, strftime_format, &tm);
  return n == 0 ? std::string(rfc3339) : std::string(buf, n);
}

std::string LocalDateTime(std::string_view rfc3339) {
  return FormatLocalTime(rfc3339, "%Y-%m-%dT%H:%M:%S");
}

std::string LocalLogTime(std::string_view rfc3339) {
  return FormatLocalTime(rfc3339, "%Y-%m-%d %H:%M:%S %z");
}

}  // namespace trainyard::cli
