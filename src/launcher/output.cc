#include "output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>

#include "protocol_private.h"
#include "trainyard/core/util.h"

namespace trainyard::launcher {

namespace {

constexpr std::string_view kTracebackHeader = "Traceback (most recent call last):";
// A traceback longer than this is shortened to its first line, "[...]" and its last lines.
constexpr size_t kMaxTracebackLines = 10;
constexpr size_t kTracebackKeepLast = 6;
// Without a traceback, this many of the last stderr lines.
constexpr size_t kPlainTailLines = 5;

bool Indented(const std::string& line) {
  return !line.empty() && (line[0] == ' ' || line[0] == '\t');
}

std::string JoinLines(const std::vector<std::string>& lines, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (!out.empty()) out.push_back('\n');
    out += lines[i];
  }
  return out;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsNameChar(char c) {
  return IsDigit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '.';
}

// The severity a level word names; `any_case` accepts "info", "Info" as well as "INFO".
std::optional<model::Severity> LevelWord(std::string_view w, bool any_case) {
  if (w.size() < 4 || w.size() > 9) return std::nullopt;
  char up[9];
  for (size_t i = 0; i < w.size(); ++i) {
    char c = w[i];
    if (c >= 'a' && c <= 'z') {
      if (!any_case) return std::nullopt;
      c = static_cast<char>(c - 'a' + 'A');
    }
    up[i] = c;
  }
  const std::string_view u(up, w.size());
  using S = model::Severity;
  switch (u[0]) {
    case 'D':
      if (u == "DEBUG") return S::kDebug;
      break;
    case 'T':
      if (u == "TRACE") return S::kDebug;
      break;
    case 'I':
      if (u == "INFO") return S::kInfo;
      break;
    case 'N':
      if (u == "NOTICE") return S::kNotice;
      break;
    case 'W':
      if (u == "WARN" || u == "WARNING") return S::kWarning;
      break;
    case 'E':
      if (u == "ERROR") return S::kError;
      if (u == "EMERGENCY") return S::kEmergency;
      break;
    case 'C':
      if (u == "CRITICAL") return S::kCritical;
      break;
    case 'F':
      if (u == "FATAL") return S::kCritical;
      break;
    case 'A':
      if (u == "ALERT") return S::kAlert;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// "I1121 12:34:56..." (glog, absl C++ and absl-py): the letter, MMDD, a space, HH:MM:.
bool HasGlogPrefix(std::string_view s) {
  return s.size() >= 14 && IsDigit(s[1]) && IsDigit(s[2]) && IsDigit(s[3]) && IsDigit(s[4]) &&
         s[5] == ' ' && IsDigit(s[6]) && IsDigit(s[7]) && s[8] == ':' && IsDigit(s[9]) &&
         IsDigit(s[10]) && s[11] == ':';
}

std::optional<model::Severity> GlogLetter(char c) {
  switch (c) {
    case 'I':
      return model::Severity::kInfo;
    case 'W':
      return model::Severity::kWarning;
    case 'E':
      return model::Severity::kError;
    case 'F':
      return model::Severity::kCritical;
    default:
      return std::nullopt;
  }
}

bool IsLevelEnd(std::string_view s, size_t i) {
  return i == s.size() || s[i] == ' ' || s[i] == ':' || s[i] == ']' || s[i] == '-' || s[i] == '|' ||
         s[i] == '\t' || s[i] == ',' || s[i] == ')';
}

// An upper-case level word at `*i` followed by a separator (advances past the word).
std::optional<model::Severity> BareLevel(std::string_view s, size_t* i) {
  size_t j = *i;
  while (j < s.size() && j - *i < 10 && IsUpper(s[j])) ++j;
  if (!IsLevelEnd(s, j)) return std::nullopt;
  auto level = LevelWord(s.substr(*i, j - *i), false);
  if (level) *i = j;
  return level;
}

// "[INFO]", "[ info ]" at `*i`: the level, or nullopt (advancing past the brackets either way
// when they close within 40 bytes).
std::optional<model::Severity> BracketedLevel(std::string_view s, size_t* i) {
  size_t close = s.find(']', *i);
  if (close == std::string_view::npos || close - *i > 40) return std::nullopt;
  std::string_view inner = s.substr(*i + 1, close - *i - 1);
  while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
  while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
  *i = close + 1;
  return LevelWord(inner, true);
}

void SkipSeparators(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '-' || s[*i] == '|' || s[*i] == ':' ||
                           s[*i] == '\t' || s[*i] == ',')) {
    ++*i;
  }
}

// A date and time at `*i`: "YYYY-MM-DD", then " " or "T" and "HH:MM:SS", an optional fraction
// (".123" or ",123"), an optional zone ("Z", "+01:00", "+0100"). Advances past it.
bool SkipTimestamp(std::string_view s, size_t* i) {
  size_t j = *i;
  auto digits = [&](size_t n) {
    for (size_t k = 0; k < n; ++k, ++j) {
      if (j >= s.size() || !IsDigit(s[j])) return false;
    }
    return true;
  };
  auto lit = [&](char c) {
    if (j >= s.size() || s[j] != c) return false;
    ++j;
    return true;
  };
  if (!digits(4) || !lit('-') || !digits(2) || !lit('-') || !digits(2)) return false;
  if (j >= s.size() || (s[j] != ' ' && s[j] != 'T')) return false;
  ++j;
  if (!digits(2) || !lit(':') || !digits(2) || !lit(':') || !digits(2)) return false;
  if (j < s.size() && (s[j] == '.' || s[j] == ',') && j + 1 < s.size() && IsDigit(s[j + 1])) {
    ++j;
    while (j < s.size() && IsDigit(s[j])) ++j;
  }
  if (j < s.size() && s[j] == 'Z') {
    ++j;
  } else if (j + 4 < s.size() && (s[j] == '+' || s[j] == '-') && IsDigit(s[j + 1]) &&
             IsDigit(s[j + 2])) {
    j += 3;
    if (j < s.size() && s[j] == ':') ++j;
    if (!digits(2)) return false;
  }
  *i = j;
  return true;
}

// A line that starts with a timestamp (optionally in brackets): the level after it, allowing
// one logger name or bracketed field in between. TensorFlow's "<time>: W file] msg" included.
std::optional<model::Severity> LevelAfterTimestamp(std::string_view s) {
  size_t i = 0;
  const bool bracket = s[0] == '[';
  if (bracket) ++i;
  if (!SkipTimestamp(s, &i)) return std::nullopt;
  if (bracket) {
    if (i >= s.size() || s[i] != ']') return std::nullopt;
    ++i;
  }
  // TensorFlow C++: ": W tensorflow/..." (one letter, then a space).
  if (i + 3 < s.size() && s[i] == ':' && s[i + 1] == ' ' && s[i + 3] == ' ') {
    if (auto level = GlogLetter(s[i + 2])) return level;
  }
  for (int field = 0; field < 3 && i < s.size(); ++field) {
    SkipSeparators(s, &i);
    if (i >= s.size()) break;
    if (s[i] == '[') {
      const size_t before = i;
      if (auto level = BracketedLevel(s, &i)) return level;
      if (i == before) break;  // no closing bracket nearby
      continue;
    }
    if (IsUpper(s[i])) {
      if (auto level = BareLevel(s, &i)) return level;
    }
    // A field that is not a level: a logger name ("root", "my.module") or a process id.
    size_t j = i;
    while (j < s.size() && j - i < 64 && IsNameChar(s[j])) ++j;
    if (j == i || j - i >= 64 || !IsLevelEnd(s, j)) break;
    i = j;
  }
  return std::nullopt;
}

// The severity of a JSON line's "severity", "level" or "levelname" string field.
std::optional<model::Severity> JsonLevel(std::string_view s) {
  for (std::string_view key : {"\"severity\"", "\"level\"", "\"levelname\""}) {
    size_t k = s.find(key);
    if (k == std::string_view::npos) continue;
    size_t i = k + key.size();
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (i >= s.size() || s[i] != ':') continue;
    ++i;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (i >= s.size() || s[i] != '"') continue;
    size_t end = s.find('"', i + 1);
    if (end == std::string_view::npos) continue;
    if (auto level = LevelWord(s.substr(i + 1, end - i - 1), true)) return level;
  }
  return std::nullopt;
}

}  // namespace

model::Severity ClassifyLine(std::string_view line, bool is_stderr) {
  const model::Severity fallback = is_stderr ? model::Severity::kError : model::Severity::kInfo;
  if (line.size() < 4) return fallback;
  const char c = line[0];
  if (IsUpper(c)) {
    // glog / absl: "I1121 12:34:56.789012 ...".
    if (IsDigit(line[1]) && HasGlogPrefix(line)) {
      if (auto level = GlogLetter(c)) return *level;
      return fallback;
    }
    // "INFO:root:msg", "WARNING some text", "ERROR: x".
    size_t i = 0;
    if (auto level = BareLevel(line, &i)) return *level;
    return fallback;
  }
  if (IsDigit(c) || (c == '[' && IsDigit(line[1]))) {
    if (auto level = LevelAfterTimestamp(line)) return *level;
    return fallback;
  }
  if (c == '[') {
    size_t i = 0;
    if (auto level = BracketedLevel(line, &i)) return *level;
    return fallback;
  }
  if (c == '{') {
    if (auto level = JsonLevel(line.substr(0, 4096))) return *level;
  }
  return fallback;
}

std::vector<std::string> StderrTail::Lines() const {
  std::vector<std::string> out;
  const size_t n = std::min(next_, ring_.size());
  out.reserve(n);
  for (size_t i = next_ - n; i < next_; ++i) out.push_back(ring_[i % ring_.size()]);
  return out;
}

std::string BuildErrorTail(const std::vector<std::string>& lines) {
  size_t header = lines.size();
  for (size_t i = lines.size(); i-- > 0;) {
    if (StartsWith(lines[i], kTracebackHeader)) {
      header = i;
      break;
    }
  }
  if (header == lines.size()) {
    size_t end = lines.size();
    while (end > 0 && lines[end - 1].empty()) --end;
    size_t begin = end > kPlainTailLines ? end - kPlainTailLines : 0;
    return JoinLines(lines, begin, end);
  }
  // The traceback runs from its header to the first line that is not indented: the exception.
  size_t end = header + 1;
  while (end < lines.size() && Indented(lines[end])) ++end;
  if (end < lines.size()) ++end;  // the exception line
  if (end - header <= kMaxTracebackLines) return JoinLines(lines, header, end);
  std::string out = lines[header];
  out += "\n[...]\n";
  out += JoinLines(lines, end - kTracebackKeepLast, end);
  return out;
}

LogWriter::~LogWriter() {
  Flush();
  if (fd_ >= 0) ::close(fd_);
}

bool LogWriter::Open(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  buf_.reserve(kFlushBytes + kMaxLineBytes * 2 + 64);
  return fd_ >= 0;
}

void LogWriter::Add(Timestamp ts, model::Severity severity, bool service,
                    std::string_view message) {
  if (buf_.empty()) first_mono_ = MonotonicMicros();
  if (ts < last_ts_) ts = last_ts_;
  last_ts_ = ts;
  if (ts != prefix_ts_ || severity != prefix_severity_ || service != prefix_service_) {
    prefix_.clear();
    executor::AppendLogRecordPrefix(&prefix_, ts, severity, service);
    prefix_ts_ = ts;
    prefix_severity_ = severity;
    prefix_service_ = service;
  }
  buf_.append(prefix_);
  executor::AppendEscapedLogMessage(&buf_, message);
  buf_.push_back('\n');
  if (buf_.size() >= kFlushBytes) Flush();
}

void LogWriter::Flush() {
  if (buf_.empty() || fd_ < 0) {
    buf_.clear();
    return;
  }
  size_t off = 0;
  while (off < buf_.size()) {
    ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC || errno == EDQUOT) disk_full_ = true;
      dropped_bytes_ += buf_.size() - off;
      if (!write_failed_) {
        std::perror("trainyard-launcher: cannot write the log");
        write_failed_ = true;
      }
      break;  // the lines are lost; the trainer must not block on a full disk
    }
    off += static_cast<size_t>(n);
  }
  buf_.clear();
}

}  // namespace trainyard::launcher
