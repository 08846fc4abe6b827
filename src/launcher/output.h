// The launcher's output path: splitting child output into lines, writing log records with
// buffered writes, and the stderr tail that becomes ReplicaExit.error_tail.
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/time.h"
#include "trainyard/model/job.h"

namespace trainyard::launcher {

// The severity of one line of the trainer's output (compat §11.1: stdout is INFO, stderr is
// ERROR), unless the line says otherwise in a common log format, as Cloud Logging's agents
// recognise them:
//  * Python logging: "INFO:root:msg" (the default), "2024-01-01 12:00:00,123 INFO msg",
//    "2024-01-01 12:00:00,123 - name - WARNING - msg", "[2024-01-01 12:00:00,123][name][INFO]";
//  * glog / absl: "I1124 12:00:00.123456 ..." (I, W, E, F); TensorFlow's C++ logging
//    "2024-01-01 12:00:00.123456: W tensorflow/...";
//  * a level word or bracketed level first: "WARNING ...", "ERROR: ...", "[INFO] ...";
//  * JSON lines with a "severity", "level" or "levelname" string field.
// Level words are DEBUG, TRACE, INFO, NOTICE, WARN(ING), ERROR, CRITICAL, FATAL, ALERT and
// EMERGENCY: upper case when bare, any case in brackets and JSON. Only a bounded prefix of the
// line is examined, and most lines are decided by their first byte.
model::Severity ClassifyLine(std::string_view line, bool is_stderr);

// The longest message of one log record; longer lines are split into several records.
inline constexpr size_t kMaxLineBytes = 256 * 1024;

// Splits a byte stream into lines. "\n" and "\r\n" end a line; a lone "\r" (progress bars)
// ends one too, but the empty lines that "\r" alone would produce are dropped. Lines longer
// than max_line are cut (at a UTF-8 boundary) into several lines.
class LineAssembler {
 public:
  explicit LineAssembler(size_t max_line = kMaxLineBytes) : max_line_(max_line) {}

  // Calls fn(std::string_view) for every line completed by `data`.
  template <typename Fn>
  void Feed(std::string_view data, Fn&& fn) {
    const char* p = data.data();
    const char* end = p + data.size();
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      const char* seg_end = nl != nullptr ? nl : end;
      const char* cr = static_cast<const char*>(std::memchr(p, '\r', seg_end - p));
      const char* q = cr != nullptr ? cr : nl;
      if (q == nullptr) {
        Append(p, end, fn);
        after_cr_ = false;
        return;
      }
      const bool empty = p == q && pending_.empty();
      if (*q == '\n') {
        if (!(empty && after_cr_)) Emit(p, q, fn);  // "\r\n" ends one line, not two
        after_cr_ = false;
      } else {
        if (!empty) Emit(p, q, fn);
        after_cr_ = true;
      }
      p = q + 1;
    }
  }

  // Emits the pending partial line, if any (at EOF).
  template <typename Fn>
  void Finish(Fn&& fn) {
    if (!pending_.empty()) fn(std::string_view(pending_));
    pending_.clear();
    after_cr_ = false;
  }

 private:
  template <typename Fn>
  void Emit(const char* b, const char* e, Fn& fn) {
    if (pending_.empty() && static_cast<size_t>(e - b) <= max_line_) {
      fn(std::string_view(b, static_cast<size_t>(e - b)));
      return;
    }
    Append(b, e, fn);
    if (!pending_.empty()) fn(std::string_view(pending_));
    pending_.clear();
  }

  template <typename Fn>
  void Append(const char* b, const char* e, Fn& fn) {
    pending_.append(b, static_cast<size_t>(e - b));
    while (pending_.size() > max_line_) {
      size_t cut = max_line_;
      while (cut > 0 && (static_cast<unsigned char>(pending_[cut]) & 0xC0) == 0x80) --cut;
      if (cut == 0) cut = max_line_;
      fn(std::string_view(pending_.data(), cut));
      pending_.erase(0, cut);
    }
  }

  size_t max_line_;
  std::string pending_;
  bool after_cr_ = false;  // the last line ended with a lone "\r"
};

// The last `capacity` lines of the trainer's stderr.
class StderrTail {
 public:
  explicit StderrTail(size_t capacity = 100) : ring_(capacity) {}
  void Add(std::string_view line) {
    ring_[next_ % ring_.size()].assign(line.data(), line.size());
    ++next_;
  }
  std::vector<std::string> Lines() const;

 private:
  std::vector<std::string> ring_;
  size_t next_ = 0;
};

// ReplicaExit.error_tail from the last stderr lines: the last Python traceback ("Traceback
// (most recent call last):" through the exception line), shortened AI Platform style to its
// first line, "[...]" and its last lines when long; without a traceback, the last few lines.
std::string BuildErrorTail(const std::vector<std::string>& stderr_lines);

// Buffered writer of log records: records are appended to a buffer that is written when it
// grows large or when the oldest unwritten record is `max_delay` old, so followers see lines
// promptly while a chatty trainer costs one write() per buffer.
class LogWriter {
 public:
  LogWriter() = default;
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  ~LogWriter();

  bool Open(const std::string& path);
  // Adds a record stamped `ts` (made monotonic: never before the previous record).
  void Add(Timestamp ts, model::Severity severity, bool service, std::string_view message);
  // Writes buffered records now.
  void Flush();
  // Flushes if the buffer is due (size or age); `now_mono` is MonotonicMicros().
  void MaybeFlush(int64_t now_mono) {
    if (!buf_.empty() && (buf_.size() >= kFlushBytes || now_mono >= first_mono_ + max_delay_))
      Flush();
  }
  // Monotonic time by which Flush must run, or -1 when nothing is buffered.
  int64_t FlushDeadline() const { return buf_.empty() ? -1 : first_mono_ + max_delay_; }
  // A write failed because the filesystem is full (ENOSPC, EDQUOT); the lines of that write
  // were dropped (the trainer is never blocked on a full disk).
  bool disk_full() const { return disk_full_; }
  uint64_t dropped_bytes() const { return dropped_bytes_; }

 private:
  static constexpr size_t kFlushBytes = 256 * 1024;
  int fd_ = -1;
  std::string buf_;
  int64_t first_mono_ = 0;
  Duration max_delay_ = 20 * 1000;
  Timestamp last_ts_ = 0;
  bool write_failed_ = false;
  bool disk_full_ = false;
  uint64_t dropped_bytes_ = 0;
  // The record prefix of the previous record (lines of one read share it).
  std::string prefix_;
  Timestamp prefix_ts_ = -1;
  model::Severity prefix_severity_ = model::Severity::kDefault;
  bool prefix_service_ = false;
};

}  // namespace trainyard::launcher
