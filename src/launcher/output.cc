#include "output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

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

}  // namespace

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
