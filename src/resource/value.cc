#include "trainyard/resource/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "lexer.h"

namespace trainyard::resource {
namespace {

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// gcloud's ConvertToCamelCase: "job_id" -> "jobId" (each later part title-cased).
std::string CamelCase(std::string_view name) {
  std::string out;
  size_t start = 0;
  bool first = true;
  while (start <= name.size()) {
    size_t us = name.find('_', start);
    std::string_view part =
        name.substr(start, us == std::string_view::npos ? std::string_view::npos : us - start);
    if (first) {
      out.append(part);
    } else {
      // str.title(): upper-case a letter that follows a non-letter, lower-case the others.
      bool prev_letter = false;
      for (char c : part) {
        bool letter = IsUpper(c) || IsLower(c);
        if (letter) {
          c = prev_letter ? static_cast<char>(std::tolower(c)) : static_cast<char>(std::toupper(c));
        }
        out.push_back(c);
        prev_letter = letter;
      }
    }
    first = false;
    if (us == std::string_view::npos) break;
    start = us + 1;
  }
  return out;
}

// gcloud's ConvertToSnakeCase: an "_" before an upper-case run that follows a lower-case
// letter or digit (ending before an upper+lower pair or at the end), and before an upper-case
// letter followed by a lower-case one (not at the start); then lower case.
std::string SnakeCase(std::string_view name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    char c = name[i];
    if (IsUpper(c)) {
      bool after_lower = i > 0 && (IsLower(name[i - 1]) || IsDigit(name[i - 1]));
      if (after_lower) {
        // The longest upper-case run [i, j) such that what follows is Upper+lower or the end.
        size_t j = i;
        while (j < name.size() && IsUpper(name[j])) ++j;
        size_t end = std::string::npos;
        for (size_t k = j; k > i; --k) {
          bool at_end = k == name.size();
          bool upper_lower = k + 1 < name.size() && IsUpper(name[k]) && IsLower(name[k + 1]);
          if (at_end || upper_lower) {
            end = k;
            break;
          }
        }
        if (end != std::string::npos) {
          out.push_back('_');
          for (size_t k = i; k < end; ++k) out.push_back(static_cast<char>(std::tolower(name[k])));
          i = end;
          continue;
        }
      }
      if (i > 0 && i + 1 < name.size() && IsLower(name[i + 1])) out.push_back('_');
    }
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    ++i;
  }
  return out;
}

const Json* FindName(const Json& obj, const std::string& name) {
  auto it = obj.find(name);
  if (it != obj.end()) return &*it;
  for (const std::string& alt : {CamelCase(name), SnakeCase(name)}) {
    it = obj.find(alt);
    if (it != obj.end()) return &*it;
  }
  return nullptr;
}

Json GetFrom(const Json& resource, const Key& key, size_t at) {
  const Json* r = &resource;
  for (size_t i = at; i < key.size(); ++i) {
    const KeyPart& part = key[i];
    const bool more = i + 1 < key.size();
    if (r->is_null()) return nullptr;
    if (r->is_object()) {
      if (part.kind == KeyPart::Kind::kSlice) {
        if (!more) return *r;
        Json out = Json::array();
        for (auto it = r->begin(); it != r->end(); ++it) {
          Key sub{{KeyPart::Kind::kName, it.key(), 0}};
          sub.insert(sub.end(), key.begin() + static_cast<long>(i) + 1, key.end());
          out.push_back(GetFrom(*r, sub, 0));
        }
        return out;
      }
      if (part.kind == KeyPart::Kind::kName) {
        const Json* next = FindName(*r, part.name);
        if (next == nullptr) return nullptr;
        r = next;
        continue;
      }
      return nullptr;
    }
    if (r->is_array() || r->is_string()) {
      const int64_t len = r->is_array()
                              ? static_cast<int64_t>(r->size())
                              : static_cast<int64_t>(r->get_ref<const std::string&>().size());
      if (part.kind == KeyPart::Kind::kSlice) {
        if (!more) return *r;
        Json out = Json::array();
        for (int64_t k = 0; k < len; ++k) {
          Key sub{{KeyPart::Kind::kIndex, "", k}};
          sub.insert(sub.end(), key.begin() + static_cast<long>(i) + 1, key.end());
          out.push_back(GetFrom(*r, sub, 0));
        }
        return out;
      }
      if (part.kind == KeyPart::Kind::kName) {
        // `list.name` on a list of objects: every item's value.
        if (r->is_array() && !r->empty() && (*r)[0].is_object()) {
          if ((*r)[0].contains(part.name)) {
            Json out = Json::array();
            for (const Json& item : *r) {
              Key sub{part};
              sub.insert(sub.end(), key.begin() + static_cast<long>(i) + 1, key.end());
              out.push_back(GetFrom(item, sub, 0));
            }
            return out;
          }
          Json out = Json::array();
          for (const Json& item : *r) {
            if (!item.is_object()) continue;
            auto it = item.find(part.name);
            if (it != item.end() && !IsFalsy(*it)) out.push_back(*it);
          }
          if (out.empty()) return nullptr;
          return out;
        }
        return nullptr;
      }
      int64_t index = part.index;
      if (index < -len || index >= len) return nullptr;
      if (index < 0) index += len;
      if (r->is_string()) {
        // A character (a byte here; job fields are ASCII).
        return std::string(1, r->get_ref<const std::string&>()[static_cast<size_t>(index)]);
      }
      r = &(*r)[static_cast<size_t>(index)];
      continue;
    }
    return nullptr;
  }
  return *r;
}

std::string PyQuote(const std::string& s) {
  // Python's repr of a str: single quotes unless the text has ' and no ".
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(q)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

std::string PyRepr(const Json& v) {
  if (v.is_string()) return PyQuote(v.get<std::string>());
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += PyQuote(it.key()) + ": " + PyRepr(*it);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    bool first = true;
    for (const Json& item : v) {
      if (!first) out += ", ";
      first = false;
      out += PyRepr(item);
    }
    return out + "]";
  }
  return PyStr(v);
}

// Python's repr of a float: the shortest text that reads back to the same double.
std::string PyFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string sci = buf;
  size_t e = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  bool negative = false;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] == '-') negative = true;
    if (IsDigit(sci[i])) digits.push_back(sci[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
             digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

bool IsTruthy(const Json& v) { return !IsFalsy(v); }

std::string Kwarg(const Call& c, size_t pos, std::string_view name, std::string def) {
  for (const auto& [k, v] : c.kwargs) {
    if (k == name) return v;
  }
  if (pos < c.args.size()) return c.args[pos];
  return def;
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Seconds since the epoch of a broken-down time in UTC (timegm without its range limits).
int64_t UtcSeconds(int64_t y, int mon, int d, int h, int mi, int s) {
  return DaysFromCivil(y, static_cast<unsigned>(mon), static_cast<unsigned>(d)) * 86400 + h * 3600 +
         mi * 60 + s;
}

bool ParseDigits(std::string_view s, size_t& i, size_t n, int& out) {
  if (i + n > s.size()) return false;
  int v = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!IsDigit(s[i + k])) return false;
    v = v * 10 + (s[i + k] - '0');
  }
  out = v;
  i += n;
  return true;
}

std::optional<ParsedTime> ParseIsoTime(std::string_view s, bool local_default) {
  size_t i = 0;
  int y = 0, mon = 0, d = 0, h = 0, mi = 0, sec = 0;
  int64_t micros = 0;
  if (!ParseDigits(s, i, 4, y) || i >= s.size() || s[i] != '-') return std::nullopt;
  ++i;
  if (!ParseDigits(s, i, 2, mon) || i >= s.size() || s[i] != '-') return std::nullopt;
  ++i;
  if (!ParseDigits(s, i, 2, d)) return std::nullopt;
  if (mon < 1 || mon > 12 || d < 1 || d > 31) return std::nullopt;
  bool has_zone = false;
  int offset = 0;
  if (i < s.size() && (s[i] == 'T' || s[i] == 't' || s[i] == ' ')) {
    ++i;
    if (!ParseDigits(s, i, 2, h)) return std::nullopt;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!ParseDigits(s, i, 2, mi)) return std::nullopt;
      if (i < s.size() && s[i] == ':') {
        ++i;
        if (!ParseDigits(s, i, 2, sec)) return std::nullopt;
        if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
          ++i;
          int64_t scale = 100000;
          size_t start = i;
          while (i < s.size() && IsDigit(s[i])) {
            if (scale > 0) micros += (s[i] - '0') * scale;
            scale /= 10;
            ++i;
          }
          if (i == start) return std::nullopt;
        }
      }
    }
    if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
  }
  if (i < s.size()) {
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == s.size()) {
      has_zone = true;
      ++i;
    } else if (s[i] == '+' || s[i] == '-') {
      int sign = s[i] == '-' ? -1 : 1;
      ++i;
      int oh = 0, om = 0;
      if (!ParseDigits(s, i, 2, oh)) return std::nullopt;
      if (i < s.size() && s[i] == ':') ++i;
      if (i < s.size() && !ParseDigits(s, i, 2, om)) return std::nullopt;
      offset = sign * (oh * 3600 + om * 60);
      has_zone = true;
    }
  }
  if (i != s.size()) return std::nullopt;
  int64_t secs = UtcSeconds(y, mon, d, h, mi, sec);
  if (has_zone) {
    secs -= offset;
  } else if (local_default) {
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    tm.tm_isdst = -1;
    secs = static_cast<int64_t>(std::mktime(&tm));
  }
  return ParsedTime{secs * kMicrosPerSecond + micros, has_zone};
}

// An ISO 8601 duration (gcloud's iso_duration: optional sign, P optional meaning T, "," or "."
// fractions, ms/us/ns suffixes) added to `now` on the local wall clock.
std::optional<ParsedTime> ParseRelative(std::string_view text, Timestamp now) {
  std::string s;
  for (char c : text) s.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  bool negative = false;
  size_t i = 0;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    ++i;
  }
  bool t_implied = false, t_seen = false;
  if (i < s.size() && s[i] == 'P') {
    ++i;
  } else {
    t_implied = true;
  }
  double years = 0, months = 0, days = 0, hours = 0, minutes = 0, seconds = 0;
  std::string amount;
  bool any = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (IsDigit(c)) {
      amount.push_back(c);
    } else if (c == '.' || c == ',') {
      amount.push_back('.');
    } else if (c == 'T') {
      if (t_seen) return std::nullopt;
      t_seen = t_implied = true;
    } else if (amount.empty()) {
      return std::nullopt;
    } else {
      char* end = nullptr;
      double n = std::strtod(amount.c_str(), &end);
      if (end == amount.c_str() || *end != '\0' || !std::isfinite(n)) return std::nullopt;
      amount.clear();
      any = true;
      if (c == 'Y') {
        years += n;
      } else if (c == 'W') {
        days += 7 * n;
      } else if (c == 'D') {
        days += n;
      } else if ((c == 'M' || c == 'U' || c == 'N') && i + 2 == s.size() && s[i + 1] == 'S') {
        seconds += n / (c == 'M' ? 1e3 : c == 'U' ? 1e6 : 1e9);
        break;
      } else if (c == 'M' && !t_implied) {
        t_implied = true;
        months += n;
      } else {
        t_implied = true;
        if (c == 'H') {
          hours += n;
        } else if (c == 'M') {
          minutes += n;
        } else if (c == 'S') {
          seconds += n;
        } else {
          return std::nullopt;
        }
      }
    }
  }
  if (!amount.empty()) {
    std::string rest = s.substr(s[0] == '-' || s[0] == '+' ? 1 : 0);
    if (rest != "P0") return std::nullopt;
  }
  if (!any && amount.empty() && s.find('P') == std::string::npos) return std::nullopt;
  // Bounded so the arithmetic below cannot overflow (a duration of a million years is not a
  // filter anyone means).
  constexpr double kMaxYears = 1e6;
  if (years > kMaxYears || months > 12 * kMaxYears || days > 366 * kMaxYears ||
      hours > 8784 * kMaxYears || minutes > 527040 * kMaxYears || seconds > 31622400 * kMaxYears) {
    return std::nullopt;
  }
  const double sign = negative ? -1 : 1;
  // Fractions of the calendar units go down to days, the rest to seconds.
  double whole_years = std::trunc(years);
  days += (years - whole_years) * 365.2422;
  double whole_months = std::trunc(months);
  days += std::trunc((months - whole_months) * 365.2422 / 12);
  double whole_days = std::trunc(days);
  seconds += (days - whole_days) * 86400 + hours * 3600 + minutes * 60;

  time_t now_s = static_cast<time_t>(now / kMicrosPerSecond);
  std::tm tm{};
  localtime_r(&now_s, &tm);
  tm.tm_year += static_cast<int>(sign * whole_years);
  tm.tm_mon += static_cast<int>(sign * whole_months);
  tm.tm_mday += static_cast<int>(sign * whole_days);
  tm.tm_isdst = -1;
  int64_t secs = static_cast<int64_t>(std::mktime(&tm));
  int64_t micros = secs * kMicrosPerSecond + now % kMicrosPerSecond +
                   static_cast<int64_t>(std::llround(sign * seconds * 1e6));
  return ParsedTime{micros, true};
}

}  // namespace

bool IsFalsy(const Json& v) {
  if (v.is_null()) return true;
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>() == 0;
  if (v.is_number_unsigned()) return v.get<uint64_t>() == 0;
  if (v.is_number_float()) return v.get<double>() == 0;
  if (v.is_string()) return v.get_ref<const std::string&>().empty();
  return v.empty();
}

std::string KeyName(const Key& key) {
  std::string out;
  for (const KeyPart& p : key) {
    switch (p.kind) {
      case KeyPart::Kind::kName:
        if (!out.empty()) out += '.';
        out += p.name;
        break;
      case KeyPart::Kind::kIndex:
        out += "[" + std::to_string(p.index) + "]";
        break;
      case KeyPart::Kind::kSlice:
        out += "[]";
        break;
    }
  }
  return out;
}

Json GetKey(const Json& resource, const Key& key) { return GetFrom(resource, key, 0); }

std::string PyStr(const Json& v) {
  if (v.is_null()) return "None";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_float()) return PyFloat(v.get<double>());
  if (v.is_number()) return v.dump();
  return PyRepr(v);
}

std::string GcloudFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // Round to 6 significant digits first, as Python's formatting does, to find the exponent.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.5e", value);
  std::string sci = buf;
  size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  if (exponent >= 5 && exponent < 9) {
    std::snprintf(buf, sizeof buf, "%.1f", value);
    return buf;
  }
  if (exponent < -4 || exponent >= 9) {
    std::string mantissa = sci.substr(0, e);
    while (!mantissa.empty() && mantissa.back() == '0') mantissa.pop_back();
    if (!mantissa.empty() && mantissa.back() == '.') mantissa.pop_back();
    return mantissa + "e" + sci.substr(e + 1);
  }
  std::snprintf(buf, sizeof buf, "%.*f", 5 - exponent, value);
  std::string fixed = buf;
  if (fixed.find('.') != std::string::npos) {
    while (fixed.back() == '0') fixed.pop_back();
    if (fixed.back() == '.') fixed += "0";
  } else {
    fixed += ".0";
  }
  return fixed;
}

std::optional<ParsedTime> ParseDateTime(std::string_view text, Timestamp now, bool local_default) {
  std::string_view t = text;
  while (!t.empty() && internal::IsSpace(t.front())) t.remove_prefix(1);
  while (!t.empty() && internal::IsSpace(t.back())) t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  if (auto abs = ParseIsoTime(t, local_default)) return abs;
  return ParseRelative(t, now);
}

std::string FormatDateTime(Timestamp micros, std::string_view format, bool local) {
  int64_t secs = micros / kMicrosPerSecond;
  int64_t frac = micros % kMicrosPerSecond;
  if (frac < 0) {
    frac += kMicrosPerSecond;
    --secs;
  }
  time_t t = static_cast<time_t>(secs);
  std::tm tm{};
  if (local) {
    localtime_r(&t, &tm);
  } else {
    gmtime_r(&t, &tm);
  }
  std::string out;
  auto strftime_piece = [&](const std::string& piece) {
    if (piece.empty()) return;
    char buf[256];
    size_t n = std::strftime(buf, sizeof buf, piece.c_str(), &tm);
    out.append(buf, n);
  };
  std::string pending;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c != '%' || i + 1 >= format.size()) {
      pending.push_back(c);
      continue;
    }
    char n = format[i + 1];
    char micro[16];
    std::snprintf(micro, sizeof micro, "%06lld", static_cast<long long>(frac));
    if (n == 'f') {
      strftime_piece(pending);
      pending.clear();
      out += micro;
      ++i;
    } else if (IsDigit(n) && i + 2 < format.size() && format[i + 2] == 'f') {
      strftime_piece(pending);
      pending.clear();
      int digits = n - '0';
      std::string nine = std::string(micro) + "000";
      out += nine.substr(0, static_cast<size_t>(std::min(digits, 9)));
      i += 2;
    } else if (n == 'E' && i + 2 < format.size() && format[i + 2] == 'z') {
      strftime_piece(pending);
      pending.clear();
      long off = local ? tm.tm_gmtoff : 0;
      char z[40];
      std::snprintf(z, sizeof z, "%c%02ld:%02ld", off < 0 ? '-' : '+', std::labs(off) / 3600,
                    (std::labs(off) % 3600) / 60);
      out += z;
      i += 2;
    } else {
      pending.push_back(c);
      pending.push_back(n);
      ++i;
    }
  }
  strftime_piece(pending);
  return out;
}

bool IsKnownTransform(std::string_view name) {
  static constexpr std::string_view kKnown[] = {"basename", "color", "date", "float",
                                                "join",     "len",   "list", "lower",
                                                "segment",  "upper", "yesno"};
  for (std::string_view k : kKnown) {
    if (k == name) return true;
  }
  return false;
}

Json ApplyTransforms(const Json& value, const std::vector<Call>& calls) {
  Json r = value;
  for (const Call& c : calls) {
    if (c.name == "basename") {
      if (IsFalsy(r)) {
        r = Kwarg(c, 0, "undefined", "");
        continue;
      }
      std::string s = PyStr(r);
      size_t slash = s.find_last_of("/\\");
      r = slash == std::string::npos ? s : s.substr(slash + 1);
    } else if (c.name == "color") {
      // Colors only matter on a terminal; the value is unchanged.
    } else if (c.name == "date") {
      const std::string format = Kwarg(c, 0, "format", "%Y-%m-%dT%H:%M:%S");
      const std::string undefined = Kwarg(c, 2, "undefined", "");
      const std::string tz = Kwarg(c, 3, "tz", "");
      const std::string tz_default = Kwarg(c, 4, "tz_default", "");
      auto is_local = [](const std::string& z) { return z == "LOCAL" || z == "local"; };
      std::optional<ParsedTime> t;
      bool zone_local = false;
      if (r.is_number()) {
        double unit = std::strtod(Kwarg(c, 1, "unit", "1").c_str(), nullptr);
        if (unit == 0) unit = 1;
        double secs = r.get<double>() / unit;
        if (std::isfinite(secs) && std::fabs(secs) < 1e12) {
          t = ParsedTime{static_cast<Timestamp>(std::llround(secs * 1e6)), true};
          zone_local = tz_default.empty() || is_local(tz_default);
        }
      } else if (r.is_string()) {
        t = ParseIsoTime(r.get<std::string>(), is_local(tz_default));
        // A time printed in its own zone: the API's times are UTC ("Z").
      }
      if (!t) {
        r = undefined;
        continue;
      }
      bool out_local = tz.empty() ? zone_local : is_local(tz);
      r = FormatDateTime(t->micros, format, out_local);
    } else if (c.name == "float") {
      if (r.is_number()) r = GcloudFloat(r.get<double>());
    } else if (c.name == "join" || c.name == "list") {
      const bool join = c.name == "join";
      const std::string sep = join ? Kwarg(c, 0, "sep", "/") : Kwarg(c, 2, "separator", ",");
      const std::string undefined = Kwarg(c, join ? 1 : 1, "undefined", "");
      if (IsFalsy(r)) {
        r = undefined;
        continue;
      }
      std::string out;
      bool first = true;
      if (r.is_object() && !join) {
        for (auto it = r.begin(); it != r.end(); ++it) {
          if (!first) out += sep;
          first = false;
          out += it.key() + "=" + PyStr(*it);
        }
        r = out;
      } else if (r.is_array()) {
        for (const Json& item : r) {
          if (!first) out += sep;
          first = false;
          out += PyStr(item);
        }
        r = out;
      } else if (!join) {
        r = PyStr(r);
      }
    } else if (c.name == "len") {
      if (r.is_string()) {
        // Python counts characters: the UTF-8 lead bytes.
        int64_t n = 0;
        for (unsigned char ch : r.get_ref<const std::string&>()) n += (ch & 0xC0) != 0x80;
        r = n;
      } else if (r.is_array() || r.is_object()) {
        r = static_cast<int64_t>(r.size());
      } else {
        r = 0;
      }
    } else if (c.name == "lower" || c.name == "upper") {
      if (r.is_string()) {
        std::string s = r.get<std::string>();
        for (char& ch : s) {
          ch = c.name == "lower" ? static_cast<char>(std::tolower(static_cast<unsigned char>(ch)))
                                 : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        }
        r = s;
      }
    } else if (c.name == "segment") {
      const std::string undefined = Kwarg(c, 1, "undefined", "");
      if (IsFalsy(r) || !r.is_string()) {
        r = undefined;
        continue;
      }
      long index = std::strtol(Kwarg(c, 0, "index", "-1").c_str(), nullptr, 10);
      std::vector<std::string> parts;
      const std::string& s = r.get_ref<const std::string&>();
      size_t start = 0;
      while (true) {
        size_t slash = s.find('/', start);
        parts.push_back(s.substr(start, slash == std::string::npos ? slash : slash - start));
        if (slash == std::string::npos) break;
        start = slash + 1;
      }
      long n = static_cast<long>(parts.size());
      if (index < -n || index >= n) {
        r = undefined;
      } else {
        r = parts[static_cast<size_t>(index < 0 ? index + n : index)];
      }
    } else if (c.name == "yesno") {
      std::string yes = Kwarg(c, 0, "yes", "");
      std::string no = Kwarg(c, 1, "no", "No");
      r = IsTruthy(r) ? (yes.empty() ? std::string("Yes") : yes) : no;
    }
  }
  return r;
}

}  // namespace trainyard::resource
