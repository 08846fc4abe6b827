// Time as AI Platform writes it: RFC 3339 UTC timestamps and "Ns" durations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"

namespace trainyard {

// Microseconds since the Unix epoch, UTC. 0 means "unset".
using Timestamp = int64_t;
// Microseconds.
using Duration = int64_t;

constexpr Duration kMicrosPerSecond = 1000000;

Timestamp NowMicros();
// Monotonic clock in microseconds (for latencies and deadlines).
int64_t MonotonicMicros();

// "2017-12-18T20:35:21Z" (no fractional part, as the service writes them).
std::string FormatRfc3339(Timestamp ts);
// With fractional seconds, e.g. "2017-12-18T20:35:21.123456Z" (Cloud Logging timestamps).
std::string FormatRfc3339Micros(Timestamp ts);
// Accepts "Z" or "+hh:mm" offsets and optional fractional seconds (up to nanoseconds).
Result<Timestamp> ParseRfc3339(std::string_view text);

// "7200s", "1.5s" (decimal seconds with an "s" suffix, up to 9 fractional digits).
std::string FormatDuration(Duration d);
Result<Duration> ParseDuration(std::string_view text);

}  // namespace trainyard
