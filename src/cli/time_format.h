// Local-time renderings of the API's RFC 3339 timestamps, as gcloud's `date()` transform prints
// them (tz=LOCAL). Unparseable input is returned unchanged.
#pragma once

#include <string>
#include <string_view>

namespace trainyard::cli {

// strftime-style rendering of an RFC 3339 timestamp in the local time zone (TZ applies).
std::string FormatLocalTime(std::string_view rfc3339, const char* strftime_format);

// "YYYY-MM-DDTHH:MM:SS" (jobs list CREATED, submit's startTime/endTime).
std::string LocalDateTime(std::string_view rfc3339);

// "YYYY-MM-DD HH:MM:SS ±zzzz" (stream-logs).
std::string LocalLogTime(std::string_view rfc3339);

}  // namespace trainyard::cli
