// jobs logs / jobs stream-logs (and submit --stream-logs through StreamJobLogs).
#include "log_commands.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "commands.h"
#include "log_format.h"
#include "printers.h"
#include "trainyard/model/job.h"

namespace trainyard::cli {

using json = nlohmann::json;

namespace {

constexpr int kLogPageSize = 1000;
constexpr int kMaxServerPageSize = 10000;

std::string JobField(const std::string& job_json, const char* key) {
  json j = json::parse(job_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

bool Interrupted(const StreamOptions& o) { return o.interrupted && o.interrupted->load(); }

// Sleeps `seconds` in small steps; false when interrupted.
bool Sleep(const StreamOptions& o, double seconds) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  while (std::chrono::steady_clock::now() < deadline) {
    if (Interrupted(o)) return false;
    auto left = deadline - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(50)));
  }
  return !Interrupted(o);
}

bool Retryable(const Status& s) {
  return client::IsConnectionError(s) || s.code() == StatusCode::kUnavailable;
}

// Runs `call` until it answers or fails with something other than "the daemon cannot be
// reached"; while it cannot, retries with backoff for up to o.reconnect_for_s.
template <typename Call>
auto WithReconnect(const Invocation& inv, const StreamOptions& o, Call call) -> decltype(call()) {
  double backoff = o.backoff_first_s;
  std::optional<std::chrono::steady_clock::time_point> lost;
  while (true) {
    auto r = call();
    if (r.ok() || !Retryable(r.status())) {
      if (lost && r.ok()) inv.Err() << "Reconnected to the daemon; resuming the logs.\n";
      return r;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!lost) {
      lost = now;
      inv.Err() << "Lost the connection to the daemon (" << r.status().message()
                << "); reconnecting...\n";
    } else if (now - *lost >
               std::chrono::microseconds(static_cast<int64_t>(o.reconnect_for_s * 1e6))) {
      return r;
    }
    if (!Sleep(o, backoff)) return Status(StatusCode::kCancelled, "interrupted");
    backoff = std::min(backoff * 2, o.backoff_max_s);
  }
}

void Print(const StreamOptions& o, const std::vector<client::LogEntry>& entries) {
  for (const auto& e : entries) {
    for (const auto& line : FormatLogEntry(e, o.allow_multiline)) *o.log_out << line;
  }
  o.log_out->flush();
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Result<double> ParsePollingInterval(const std::optional<std::string>& text) {
  if (!text) return 1.0;
  char* end = nullptr;
  double v = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !(v > 0)) {
    return InvalidArgument(
        "argument --polling-interval: Value must be a positive number of "
        "seconds; received: " +
        *text);
  }
  return v;
}

Result<Timestamp> ParseSince(const std::string& text, Timestamp now) {
  auto bad = [&] {
    return InvalidArgument(
        "argument --since: expected an RFC 3339 time "
        "(2024-01-01T12:00:00Z) or a duration like 30s, 10m, 2h, 1d or "
        "1h30m; received: " +
        text);
  };
  if (text.empty()) return bad();
  if (text.find('T') != std::string::npos || text.find('-') != std::string::npos) {
    auto t = ParseRfc3339(text);
    if (!t.ok()) return bad();
    return *t;
  }
  Duration total = 0;
  size_t i = 0;
  while (i < text.size()) {
    int64_t n = 0;
    auto r = std::from_chars(text.data() + i, text.data() + text.size(), n);
    if (r.ec != std::errc() || r.ptr == text.data() + text.size() || n < 0) return bad();
    i = static_cast<size_t>(r.ptr - text.data());
    int64_t unit = 0;
    switch (text[i]) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      default:
        return bad();
    }
    ++i;
    if (n > (int64_t{1} << 40) / unit) return bad();
    total += n * unit * kMicrosPerSecond;
  }
  return now - total;
}

Status StreamJobLogs(const Invocation& inv, client::Client& c, const StreamOptions& o) {
  client::JobLogsRequest req;
  req.task_name = o.task_name;
  req.page_size = kLogPageSize;
  // 1. The lines stored now, in time order: a listing of one snapshot, page by page.
  std::string cursor;
  while (true) {
    auto page = WithReconnect(inv, o, [&] { return c.ListJobLogs(o.job, req); });
    if (!page.ok()) return page.status();
    if (cursor.empty()) cursor = page->snapshot_insert_id.empty() ? "0" : page->snapshot_insert_id;
    Print(o, page->entries);
    if (page->next_page_token.empty()) break;
    req.page_token = page->next_page_token;
    if (Interrupted(o)) return Status(StatusCode::kCancelled, "interrupted");
  }
  // 2. Everything stored after the snapshot, by the ingestion cursor: a line stored late (a
  // replica's batch behind another's) is still printed, once.
  req.page_token.clear();
  std::string last_state;
  while (true) {
    auto job_text = WithReconnect(inv, o, [&] { return c.GetJob(o.job); });
    if (!job_text.ok()) return job_text.status();
    std::string state = JobField(*job_text, "state");
    bool ended = !JobField(*job_text, "endTime").empty();
    if (inv.err_is_tty && state != last_state) {
      std::string position = JobField(*job_text, "jobPosition");
      inv.Err() << "Job [" << o.job << "] is " << state;
      if (state == "QUEUED" && !position.empty() && position != "0") {
        inv.Err() << " (position " << position << " in the queue)";
      }
      inv.Err() << (ended ? ".\n" : "...\n");
      last_state = state;
    }
    while (true) {
      req.after_insert_id = cursor;
      auto page = WithReconnect(inv, o, [&] { return c.ListJobLogs(o.job, req); });
      if (!page.ok()) return page.status();
      std::stable_sort(page->entries.begin(), page->entries.end(),
                       [](const client::LogEntry& a, const client::LogEntry& b) {
                         return a.timestamp < b.timestamp;
                       });
      Print(o, page->entries);
      bool advanced = !page->next_after_insert_id.empty() && page->next_after_insert_id != cursor;
      if (advanced) cursor = page->next_after_insert_id;
      if (page->entries.size() < static_cast<size_t>(kLogPageSize) || !advanced) break;
      if (Interrupted(o)) return Status(StatusCode::kCancelled, "interrupted");
    }
    if (ended) return Status::Ok();
    if (!Sleep(o, o.interval_s)) return Status(StatusCode::kCancelled, "interrupted");
  }
}

// --- jobs stream-logs ------------------------------------------------------------------------

int RunStreamLogs(const Invocation& inv, const StreamLogsArgs& a) {
  auto interval = ParsePollingInterval(a.polling_interval);
  if (!interval.ok()) return inv.Fail(interval.status().message());
  auto c = inv.MakeClient();
  StreamOptions so;
  so.job = a.job;
  so.task_name = a.task_name.value_or("");
  so.interval_s = *interval;
  so.allow_multiline = a.allow_multiline_logs;
  so.log_out = inv.out;
  Status s = StreamJobLogs(inv, *c, so);
  if (!s.ok()) return inv.Fail(s);
  return kExitOk;
}

// --- jobs logs -------------------------------------------------------------------------------

int RunJobLogs(const Invocation& inv, const LogsArgs& a) {
  bool as_json = false;
  bool message_only = false;
  if (a.format) {
    std::string f = *a.format;
    if (f == "json") {
      as_json = true;
    } else if (f == "message" && a.download) {
      message_only = true;
    } else if (f != "text" && !f.empty()) {
      return inv.Fail(
          "argument --format: expected json or text (or message with --download); "
          "received: " +
          f);
    }
  }
  if (a.download && (a.tail || a.since || a.search || as_json)) {
    return inv.Fail(
        "argument --download: cannot be combined with --tail, --since, --search or --format "
        "json");
  }
  if (a.search && (a.tail || a.since || as_json || a.severity)) {
    return inv.Fail(
        "argument --search: cannot be combined with --tail, --since, --severity or --format "
        "json");
  }
  if (a.search && a.search->empty()) {
    return inv.Fail("argument --search: expected the text to find");
  }
  int64_t tail = 0;
  if (a.tail) {
    auto r = std::from_chars(a.tail->data(), a.tail->data() + a.tail->size(), tail);
    if (r.ec != std::errc() || r.ptr != a.tail->data() + a.tail->size() || tail < 1) {
      return inv.Fail("argument --tail: expected a positive number of lines; received: " + *a.tail);
    }
  }
  client::JobLogsRequest req;
  req.task_name = a.task_name.value_or("");
  req.trial_id = a.trial;
  if (a.severity) {
    req.min_severity = Upper(*a.severity);
    if (!model::ParseSeverity(req.min_severity)) {
      return inv.Fail(
          "argument --severity: expected one of DEFAULT, DEBUG, INFO, NOTICE, "
          "WARNING, ERROR, CRITICAL, ALERT, EMERGENCY; received: " +
          *a.severity);
    }
  }
  if (a.since) {
    auto since = ParseSince(*a.since, NowMicros());
    if (!since.ok()) return inv.Fail(since.status().message());
    req.start_time = FormatRfc3339Micros(*since);
  }
  if (a.download) {
    // The daemon formats and streams the text (logs:download): no size limit, constant memory.
    auto c = inv.MakeClient();
    Status st = c->DownloadJobLogs(a.job, req, message_only, [&](std::string_view piece) {
      inv.Out().write(piece.data(), static_cast<std::streamsize>(piece.size()));
      return inv.Out().good();
    });
    if (!st.ok()) return inv.Fail(st);
    inv.Out().flush();
    return kExitOk;
  }
  if (a.search) {
    // Every match, in line order, a page of up to 1000 at a time (logs:search), all from the
    // snapshot of the first page.
    auto c = inv.MakeClient();
    client::LogSearchRequest sr;
    sr.text = *a.search;
    sr.match_case = a.match_case;
    sr.task_name = req.task_name;
    sr.trial_id = req.trial_id;
    sr.page_size = 1000;
    while (true) {
      auto page = c->SearchJobLogs(a.job, sr);
      if (!page.ok()) return inv.Fail(page.status());
      sr.snapshot_insert_id = page->snapshot_insert_id;
      for (const auto& m : page->matches) {
        bool first_line = true;
        for (const auto& line : FormatLogEntry(m.entry, a.allow_multiline_logs)) {
          if (first_line) inv.Out() << (m.line_offset + 1) << ':';
          inv.Out() << line;
          first_line = false;
        }
        sr.after_line_offset = m.line_offset;
      }
      if (page->matches.size() < static_cast<size_t>(sr.page_size)) break;
    }
    inv.Out().flush();
    return kExitOk;
  }
  req.descending = tail > 0;
  req.page_size =
      tail > 0 ? static_cast<int>(std::min<int64_t>(tail, kMaxServerPageSize)) : kLogPageSize;
  auto c = inv.MakeClient();
  std::vector<client::LogEntry> entries;
  bool first = true;
  auto emit = [&](const std::vector<client::LogEntry>& page) {
    for (const auto& e : page) {
      if (as_json) {
        inv.Out() << (first ? "[\n  " : ",\n  ") << e.json;
        first = false;
      } else {
        for (const auto& line : FormatLogEntry(e, a.allow_multiline_logs)) inv.Out() << line;
      }
    }
  };
  while (true) {
    auto page = c->ListJobLogs(a.job, req);
    if (!page.ok()) return inv.Fail(page.status());
    if (tail > 0) {
      for (auto& e : page->entries) {
        if (static_cast<int64_t>(entries.size()) < tail) entries.push_back(std::move(e));
      }
      if (static_cast<int64_t>(entries.size()) >= tail) break;
    } else {
      emit(page->entries);  // printed page by page: no limit on the job's size
    }
    if (page->next_page_token.empty()) break;
    req.page_token = page->next_page_token;
  }
  if (tail > 0) {
    std::reverse(entries.begin(), entries.end());
    emit(entries);
  }
  if (as_json) inv.Out() << (first ? "[]\n" : "\n]\n");
  inv.Out().flush();
  return kExitOk;
}

}  // namespace trainyard::cli
