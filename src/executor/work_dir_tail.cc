#include "work_dir_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "hypertune_metrics.h"
#include "proc_util.h"
#include "protocol_private.h"
#include "trainyard/core/failpoint.h"
#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/launcher_protocol.h"

namespace trainyard::executor {
namespace {

constexpr const char* kLog = "exec";
// The most of a log file read (and delivered) per replica per poll.
constexpr size_t kMaxReadPerPoll = 4 << 20;

std::string Join(const std::string& dir, const char* file) { return dir + "/" + file; }

}  // namespace

void WorkDirTail::PollRunning(ExecutorListener* listener) {
  if (!running_reported && FileExists(Join(work_dir, kRunningFile))) {
    running_reported = true;
    listener->OnReplicaRunning(key);
  }
}

void WorkDirTail::LoadOffset() {
  if (auto off = ReadFile(Join(work_dir, kLogOffsetFile)); off.ok()) {
    std::string_view v = *off;
    while (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    uint64_t o = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), o);
    if (ec == std::errc() && p == v.data() + v.size()) offset = o;
  }
}

void WorkDirTail::CloseLog() {
  if (log_fd >= 0) {
    ::close(log_fd);
    log_fd = -1;
  }
}

Result<ReplicaExit> ReadExitReport(const std::string& work_dir) {
  const std::string path = Join(work_dir, kExitFile);
  struct stat st;
  const bool dated = ::stat(path.c_str(), &st) == 0;
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto exit = ExitFromJson(*text);
  if (exit.ok() && dated) {
    exit->ended_at =
        static_cast<Timestamp>(st.st_mtim.tv_sec) * kMicrosPerSecond + st.st_mtim.tv_nsec / 1000;
  }
  return exit;
}

bool FilesystemFull(const std::string& dir) {
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) != 0) return false;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < (1u << 20);
}

std::string LauncherErrorTail(const std::string& work_dir) {
  auto err = ReadFile(Join(work_dir, kLauncherErrFile));
  if (!err.ok() || err->empty()) return "";
  std::string_view tail = *err;
  if (tail.size() > 2000) tail = tail.substr(tail.size() - 2000);
  while (!tail.empty() && tail.back() == '\n') tail.remove_suffix(1);
  return SanitizeUtf8(tail);
}

bool WorkDirTail::TailLog(ExecutorListener* listener, bool to_end) {
  WorkDirTail& r = *this;
  if (r.log_fd < 0) {
    r.log_fd = ::open(Join(r.work_dir, kLogFile).c_str(), O_RDONLY | O_CLOEXEC);
    if (r.log_fd < 0) return true;
  }
  // One buffer per monitor thread, kept between polls: a fresh 4 MiB string per poll cost page
  // faults and zero-filling on every read of a chatty replica. The same goes for the entries
  // handed to the listener: they are reused, so their strings keep their buffers and a
  // million-line trainer costs no allocation per line here.
  thread_local std::string buf;
  thread_local std::vector<model::LogEntry> batch;
  thread_local LogRecord rec;
  const std::string task_name = r.key.TaskName();
  bool delivered = false;
  bool refused = false;
  while (true) {
    struct stat st;
    if (::fstat(r.log_fd, &st) != 0) return true;
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size <= r.offset) break;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(size - r.offset, kMaxReadPerPoll));
    buf.resize(want);
    ssize_t n = ::pread(r.log_fd, buf.data(), want, static_cast<off_t>(r.offset));
    if (n <= 0) break;
    buf.resize(static_cast<size_t>(n));
    size_t last_nl = buf.rfind('\n');
    if (last_nl == std::string::npos) break;  // a record still being written
    size_t used = 0;
    size_t pos = 0;
    while (pos <= last_nl) {
      size_t nl = buf.find('\n', pos);
      std::string_view line(buf.data() + pos, nl - pos);
      pos = nl + 1;
      Status parsed = ParseLogRecordInto(line, &rec);
      if (!parsed.ok()) {
        TY_LOG_WARN(kLog, "skipping a malformed record in {}/log: {}", r.work_dir,
                    parsed.ToString());
        continue;
      }
      if (used == batch.size()) batch.emplace_back();
      model::LogEntry& e = batch[used++];
      e.insert_id = 0;
      e.project.assign(r.key.project);
      e.job_id.assign(r.key.job_id);
      e.trial_id.assign(r.key.trial_id);
      e.timestamp = rec.ts;
      e.severity = rec.severity;
      // The launcher's own lines ("Running module ...") come from inside the replica, as
      // /runcloudml.py's do on AI Platform: they carry the replica's task name too.
      e.task_name.assign(task_name);
      e.source_offset = static_cast<int64_t>(r.offset + pos);  // just past this line
      e.source_attempt = r.attempt;
      // ASCII lines (nearly all) move through; anything else is made valid UTF-8 first.
      bool ascii = std::all_of(rec.message.begin(), rec.message.end(),
                               [](char c) { return static_cast<unsigned char>(c) < 0x80; });
      if (ascii) {
        e.message.assign(rec.message);
      } else {
        e.message = SanitizeUtf8(rec.message);
      }
    }
    std::span<model::LogEntry> entries(batch.data(), used);
    if (!entries.empty()) {
      Status stored = listener->OnReplicaLogs(entries);
      if (!stored.ok()) {
        // Not advanced: the same lines are delivered again on the next poll.
        TY_LOG_WARN(kLog, "log lines of {} not stored, retrying: {}", r.work_dir,
                    stored.ToString());
        refused = true;
        break;
      }
    }
    TY_FAILPOINT("executor.logs.after_commit");  // lines stored, log.offset not yet advanced
    r.offset += last_nl + 1;
    delivered = true;
    r.delivered_lines = true;
    if (!to_end) break;  // the rest on the next poll; keeps one replica from starving others
  }
  if (delivered) {
    Status s = WriteFileAtomic(Join(r.work_dir, kLogOffsetFile), std::to_string(r.offset) + "\n",
                               /*durable=*/false);
    if (!s.ok()) TY_LOG_WARN(kLog, "{}", s.ToString());
  }
  return !refused;
}

void WorkDirTail::PollMetrics(ExecutorListener* listener, bool final, Duration interval) {
  WorkDirTail& r = *this;
  if (r.metric_tag.empty()) return;
  const int64_t now = MonotonicMicros();
  if (!final && now - r.metrics_read_at < interval) return;
  r.metrics_read_at = now;
  auto text = ReadMetricFile(r.metric_file.empty() ? Join(r.work_dir, kMetricFile) : r.metric_file);
  if (!text || *text == r.metrics_seen) return;
  r.metrics_seen = std::move(*text);
  const std::vector<MetricRecord> records = ParseMetricFile(r.metrics_seen, r.metric_tag);
  if (!records.empty()) listener->OnReplicaMetrics(r.key, records, final);
}

}  // namespace trainyard::executor
