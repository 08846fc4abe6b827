// Semantics shared by every JobStore implementation: page tokens and error messages.
// Private to src/store (not a contract header).
#pragma once

#include <compare>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/model/job.h"
#include "trainyard/store/job_store.h"

namespace trainyard::store::internal {

// The value a job is ordered by under a JobOrderKey (job_store.h): `number` for times (whole
// seconds, floored; an unset time, 0, as INT64_MAX, after every set one) and states (the rank
// of the name the API shows: JSON omits STATE_UNSPECIFIED, which gcloud reads as "None");
// `text` for jobId. kDefault has none (the order is seq alone).
struct JobSortValue {
  int64_t number = 0;
  std::string text;
  friend bool operator==(const JobSortValue&, const JobSortValue&) = default;
  friend auto operator<=>(const JobSortValue&, const JobSortValue&) = default;
};

constexpr int kJobStateCount = 8;
// A time's sort value; the SQLite store's indexes compute the same (kTimeSortSql).
int64_t TimeSortValue(Timestamp t);
// A state's rank among the names the API shows, alphabetically (CANCELLED first); and back.
int64_t StateSortRank(model::JobState state);
model::JobState StateOfSortRank(int64_t rank);
JobSortValue SortValueOf(const model::Job& job, JobOrderKey key);

// A place in an order: the last job of a page (its sort value and seq).
struct JobCursor {
  JobSortValue value;
  int64_t seq = 0;
};
// Whether (value, seq) `a` comes before `b` in `order` (ties by seq in the key's direction;
// kDefault: seq descending).
bool CursorLess(const JobOrder& order, const JobCursor& a, const JobCursor& b);
inline JobCursor CursorOf(const model::Job& job, JobOrderKey key) {
  return {SortValueOf(job, key), job.seq};
}

// A page token is opaque to clients. Without an order or a filter it is base64 of "s<seq>",
// the seq of the last job returned (the token of every Trainyard before orderBy); else base64
// of "o<key><direction><filter hash>:<seq>:<sort value>", so a token is refused when used
// with another orderBy or filter. EncodePageToken makes the token that continues after `last`.
std::string EncodePageToken(const ListJobsRequest& request, const model::Job& last);
// The token that continues after `cursor` (EncodePageToken of a job at that place).
std::string EncodeCursor(const ListJobsRequest& request, const JobCursor& cursor);
// The place request.page_token continues from; nullopt for "" (first page). INVALID_ARGUMENT
// naming pageToken for a token ListJobs did not make, or made for another order or filter.
Result<std::optional<JobCursor>> DecodePageToken(const ListJobsRequest& request);

// ALREADY_EXISTS "Job projects/P/jobs/ID already exists".
Status JobAlreadyExists(const std::string& project, const std::string& job_id);
// NOT_FOUND "Job projects/P/jobs/ID not found".
Status JobNotFound(const std::string& project, const std::string& job_id);

// The effective limit of a LogQuery: a non-positive limit means the default, 1000.
int EffectiveLogLimit(int limit);

// Whether `e` passes every filter of `query` except project and job (task, id bounds, time
// window, and the position for timestamp orders).
bool LogQueryMatches(const LogQuery& query, const model::LogEntry& e);

// The text test of SearchLogLines: a substring, ASCII case-insensitive unless match_case.
class LogTextMatcher {
 public:
  LogTextMatcher(std::string text, bool match_case);
  bool Matches(std::string_view message) const;

 private:
  std::string text_;  // lower-cased unless match_case
  bool match_case_;
};

// Keeps the matches SearchLogLines returns while it reads lines in ascending ordinal order:
// forward, the first `max` after `from`; backward, the last `max` before it (a ring).
class LogMatchCollector {
 public:
  explicit LogMatchCollector(const LogSearch& search) : search_(search) {}
  // Counts a matching line (every one, kept or not).
  void Saw(int64_t ordinal);
  // Whether a line at `ordinal` would be kept (so the caller builds its entry only then).
  bool Wants(int64_t ordinal) const;
  void Add(int64_t ordinal, model::LogEntry entry);
  // Forward without counting: nothing later can be kept.
  bool Full() const;
  LogSearchResult Finish(int64_t lines_read);

 private:
  const LogSearch& search_;
  std::deque<LogMatch> kept_;
  int64_t total_ = 0;
  int64_t upto_ = 0;  // matches at or before `from` (forward) or before it (backward)
};

// Whether `a` comes before `b` in `order` ((timestamp, insert id) for the timestamp orders).
inline bool LogOrderLess(LogOrder order, const model::LogEntry& a, const model::LogEntry& b) {
  switch (order) {
    case LogOrder::kInsertId:
      return a.insert_id < b.insert_id;
    case LogOrder::kTimestampAsc:
      return LogPosition{a.timestamp, a.insert_id} < LogPosition{b.timestamp, b.insert_id};
    case LogOrder::kTimestampDesc:
      return LogPosition{a.timestamp, a.insert_id} > LogPosition{b.timestamp, b.insert_id};
  }
  return false;
}

// How far into a replica's log files the store has stored lines (LogEntry::source_offset):
// the attempt, and the offset just past the last line stored from its log file.
struct LogCursor {
  int attempt = 0;
  int64_t offset = 0;
  auto operator<=>(const LogCursor&) const = default;
};
// The stream a cursor belongs to: project, job id, trial id, task name.
using LogStream = std::tuple<std::string, std::string, std::string, std::string>;
inline LogStream StreamOf(const model::LogEntry& e) {
  return {e.project, e.job_id, e.trial_id, e.task_name};
}
// Whether AppendLogs stores `e` given its stream's cursor: a line that does not come from a
// log file always, else one past the cursor (a later attempt, or further into the same one).
// A line at or before it was stored already: the executor delivered it again after a crash
// between the store's commit and its own record of how far it had read.
inline bool PastCursor(const std::optional<LogCursor>& cursor, const model::LogEntry& e) {
  return e.source_offset <= 0 || !cursor || LogCursor{e.source_attempt, e.source_offset} > *cursor;
}

}  // namespace trainyard::store::internal
