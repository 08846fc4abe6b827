#include "trainyard/core/time.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace trainyard {

Timestamp NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t MonotonicMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

void BreakDown(Timestamp ts, std::tm* tm, int64_t* micros) {
  int64_t secs = ts / kMicrosPerSecond;
  int64_t us = ts % kMicrosPerSecond;
  if (us < 0) {
    us += kMicrosPerSecond;
    secs -= 1;
  }
  time_t t = static_cast<time_t>(secs);
  gmtime_r(&t, tm);
  *micros = us;
}

bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

std::string FormatRfc3339(Timestamp ts) {
  std::tm tm{};
  int64_t us = 0;
  BreakDown(ts, &tm, &us);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string FormatRfc3339Micros(Timestamp ts) {
  std::tm tm{};
  int64_t us = 0;
  BreakDown(ts, &tm, &us);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(us));
  return buf;
}

Result<Timestamp> ParseRfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm); 't' and ' ' accepted as separators.
  auto bad = [&] {
    return InvalidArgument("invalid RFC 3339 timestamp: '" + std::string(text) + "'");
  };
  if (text.size() < 19) return bad();
  int year, mon, day, hour, min, sec;
  if (text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':')
    return bad();
  if (!ParseInt(text.substr(0, 4), &year) || !ParseInt(text.substr(5, 2), &mon) ||
      !ParseInt(text.substr(8, 2), &day) || !ParseInt(text.substr(11, 2), &hour) ||
      !ParseInt(text.substr(14, 2), &min) || !ParseInt(text.substr(17, 2), &sec))
    return bad();
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) return bad();
  size_t i = 19;
  int64_t micros = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    int digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (digits < 6) micros = micros * 10 + (text[i] - '0');
      ++digits;
      ++i;
    }
    if (digits == 0) return bad();
    for (int d = digits; d < 6; ++d) micros *= 10;
  }
  int64_t offset = 0;
  if (i >= text.size()) return bad();
  if (text[i] == 'Z' || text[i] == 'z') {
    ++i;
  } else if (text[i] == '+' || text[i] == '-') {
    int oh, om;
    if (text.size() < i + 6 || text[i + 3] != ':' || !ParseInt(text.substr(i + 1, 2), &oh) ||
        !ParseInt(text.substr(i + 4, 2), &om))
      return bad();
    offset = (oh * 3600 + om * 60) * (text[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return bad();
  }
  if (i != text.size()) return bad();
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  int64_t secs = static_cast<int64_t>(timegm(&tm)) - offset;
  return secs * kMicrosPerSecond + micros;
}

std::string FormatDuration(Duration d) {
  int64_t secs = d / kMicrosPerSecond;
  int64_t us = d % kMicrosPerSecond;
  std::string s = std::to_string(secs);
  if (us != 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(us < 0 ? -us : us));
    std::string frac = buf;
    while (frac.back() == '0') frac.pop_back();
    s += frac;
  }
  return s + "s";
}

Result<Duration> ParseDuration(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument("invalid duration '" + std::string(text) +
                           "': expected seconds with an 's' suffix, e.g. \"7200s\"");
  };
  if (text.size() < 2 || text.back() != 's') return bad();
  std::string_view num = text.substr(0, text.size() - 1);
  bool neg = false;
  if (!num.empty() && num[0] == '-') {
    neg = true;
    num.remove_prefix(1);
  }
  size_t dot = num.find('.');
  std::string_view whole = num.substr(0, dot);
  int64_t secs = 0;
  if (whole.empty() && dot == std::string_view::npos) return bad();
  if (!whole.empty()) {
    auto r = std::from_chars(whole.data(), whole.data() + whole.size(), secs);
    if (r.ec != std::errc() || r.ptr != whole.data() + whole.size()) return bad();
    // protobuf's Duration range (about 10,000 years); also keeps the microseconds in int64.
    if (secs > 315576000000LL) {
      return InvalidArgument("duration '" + std::string(text) + "' is out of range");
    }
  }
  int64_t micros = 0;
  if (dot != std::string_view::npos) {
    std::string_view frac = num.substr(dot + 1);
    if (frac.empty() || frac.size() > 9) return bad();
    int digits = 0;
    for (char c : frac) {
      if (c < '0' || c > '9') return bad();
      if (digits < 6) micros = micros * 10 + (c - '0');
      ++digits;
    }
    for (int d = digits; d < 6; ++d) micros *= 10;
  }
  int64_t total = secs * kMicrosPerSecond + micros;
  return neg ? -total : total;
}

}  // namespace trainyard
