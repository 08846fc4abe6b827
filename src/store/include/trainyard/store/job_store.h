// Durable state behind one interface: jobs, their state history, and job log lines.
//
// Contract: every method is thread-safe. A method that returns OK has made its write durable
// against a crash of the daemon process (SQLite WAL: the commit is in the OS before returning).
// Implementations: SqliteJobStore (store_sqlite.h, the embedded default) and InMemoryJobStore
// (for unit tests of other modules).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/model/filter.h"
#include "trainyard/model/job.h"

namespace trainyard::store {

// What ListJobs can order by (projects.jobs.list's orderBy, a Trainyard extension: docs/api.md).
// Each key compares the value as the API shows it, which is what gcloud's client-side
// --sort-by compares: times at whole seconds (an unset time after every set one), a state by
// its name (alphabetically), a job id by its bytes.
enum class JobOrderKey {
  kDefault,  // newest first (seq descending), the listing without orderBy
  kCreateTime,
  kStartTime,
  kEndTime,
  kJobId,
  kState,
};

// Jobs whose keys are equal come in creation order (seq), in the direction of the key:
// ascending, oldest first; descending, newest first. (key, seq) is unique, so pages never
// repeat or skip a job.
struct JobOrder {
  JobOrderKey key = JobOrderKey::kDefault;
  bool descending = false;  // ignored for kDefault
  friend bool operator==(const JobOrder&, const JobOrder&) = default;
};

struct ListJobsRequest {
  std::string project;
  const model::Filter* filter = nullptr;  // nullptr = all
  int page_size = 20;                     // already clamped by the caller to [1, 100]
  std::string page_token;                 // "" = first page; opaque, produced by ListJobs
  JobOrder order;
  // The text `filter` was parsed from: a page token is valid only with the same text and order
  // (INVALID_ARGUMENT naming pageToken otherwise).
  std::string filter_text;
};

struct ListJobsResponse {
  std::vector<model::Job> jobs;  // in request.order
  std::string next_page_token;   // "" = no more
};

struct StateChange {
  model::JobState from;
  model::JobState to;
  Timestamp time = 0;
  std::string reason;
};

// The order ReadLogs returns entries in.
enum class LogOrder {
  kInsertId,       // ingestion order: insert ids ascending (followers' cursor)
  kTimestampAsc,   // (timestamp, insert id) ascending: the one global order of a job's lines
  kTimestampDesc,  // (timestamp, insert id) descending
};

// A place in the (timestamp, insert id) order.
struct LogPosition {
  Timestamp timestamp = 0;
  int64_t insert_id = 0;
  friend bool operator==(const LogPosition&, const LogPosition&) = default;
  friend auto operator<=>(const LogPosition&, const LogPosition&) = default;
};

struct LogQuery {
  std::string project;
  std::string job_id;           // "" = every job of the project
  std::string task_name;        // "" = every task
  int64_t after_insert_id = 0;  // entries with insert_id > this (the cursor of kInsertId)
  int64_t max_insert_id = 0;    // entries with insert_id <= this (0 = no bound): a snapshot
  Timestamp min_timestamp = 0;  // entries with timestamp >= this (0 = no bound)
  Timestamp max_timestamp = 0;  // entries with timestamp < this (0 = no bound)
  LogOrder order = LogOrder::kInsertId;
  // Timestamp orders only: entries strictly after this position in the order asked for
  // (ascending: above it; descending: below it). nullopt = from the first entry of the order.
  std::optional<LogPosition> position;
  std::optional<std::string> trial_id;  // lines of this trial ("" = lines outside tuning)
  model::Severity min_severity = model::Severity::kDefault;  // lines at least this severe
  int limit = 1000;
};

// The number of lines of one stream of a job (CountLogLines).
struct LogStreamCount {
  std::string task_name;
  std::string trial_id;
  int64_t lines = 0;
};

// A text search over a job's lines by position (SearchLogLines).
struct LogSearch {
  std::string text;         // what to find in each message (not empty)
  bool match_case = false;  // false: ASCII letters compare case-insensitively
  bool backward = false;    // false: matches after `from`, nearest first; true: before it
  int64_t from = -1;        // a line ordinal, excluded (forward from -1 = from the first line)
  int max_matches = 1;      // at most this many matches
  bool count = false;       // also count every match of the selection (reads every line)
};

// A line SearchLogLines found: its ordinal among the selected lines and the line.
struct LogMatch {
  int64_t ordinal = 0;
  model::LogEntry entry;
};

struct LogSearchResult {
  std::vector<LogMatch> matches;  // nearest to `from` first
  int64_t total = -1;             // every match of the selection (LogSearch::count), else -1
  int64_t index = -1;             // with count and a match: how many matches precede matches[0]
  int64_t lines_read = 0;         // lines decoded and compared (for measurements)
};

// A job in a terminal state, for retention (ListFinishedJobs).
struct FinishedJob {
  std::string project;
  std::string job_id;
  Timestamp end_time = 0;
  int64_t log_bytes = 0;  // stored size of its log lines (0 once they were deleted)
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Assigns job.seq (returned) and stores the job. ALREADY_EXISTS when (project, job_id) exists.
  virtual Result<int64_t> CreateJob(const model::Job& job) = 0;
  // NOT_FOUND when absent.
  virtual Result<model::Job> GetJob(const std::string& project, const std::string& job_id) = 0;
  // Replaces every mutable field of an existing job (state, times, error, labels, etag, output).
  // When `change` is set, appends it to the job's state history in the same transaction.
  virtual Status UpdateJob(const model::Job& job, const std::optional<StateChange>& change) = 0;
  virtual Result<ListJobsResponse> ListJobs(const ListJobsRequest& request) = 0;
  // Every job not in a terminal state, oldest first (start-up recovery).
  virtual Result<std::vector<model::Job>> ListActiveJobs() = 0;
  virtual Result<std::vector<StateChange>> GetStateHistory(const std::string& project,
                                                           const std::string& job_id) = 0;
  // Number of jobs per state (for /metrics); states with no job are absent.
  virtual Result<std::vector<std::pair<model::JobState, int64_t>>> CountJobsByState() = 0;

  // Appends log lines in one transaction, assigning strictly increasing insert ids (written
  // back into `entries`).
  virtual Status AppendLogs(std::span<model::LogEntry> entries) = 0;
  // Entries matching the query, in query.order, at most query.limit (<= 0 means 1000).
  virtual Result<std::vector<model::LogEntry>> ReadLogs(const LogQuery& query) = 0;
  // The highest insert id stored (0 when there is none). Every id up to it is readable: ids
  // are assigned in commit order, so a query with max_insert_id = this value reads a stable
  // snapshot, and the entries with a higher id are exactly those stored after this call.
  virtual Result<int64_t> LastLogInsertId() = 0;

  // For the web console (docs/console.md). Each has a default built on the methods above
  // (correct, and as slow as reading everything); the SQLite store answers from its indexes.
  //
  // Jobs of one project per state; states with no job are absent.
  virtual Result<std::vector<std::pair<model::JobState, int64_t>>> CountProjectJobsByState(
      const std::string& project);
  // Lines of `query.job_id` (required) per (task, trial) with insert ids up to
  // `query.max_insert_id` (0 = every line); the other fields of `query` are ignored.
  virtual Result<std::vector<LogStreamCount>> CountLogLines(const LogQuery& query);
  // The insert id of the line at `ordinal` (0-based) among the lines of `query.job_id` in
  // insert-id order that match `query.task_name`, `query.trial_id` and `query.max_insert_id`
  // (the other fields are ignored); 0 when there are no more than `ordinal` such lines.
  virtual Result<int64_t> LocateLogLine(const LogQuery& query, int64_t ordinal);
  // The lines of `query.job_id` whose message contains `search.text`, with their ordinals in
  // the order LocateLogLine counts (the lines that `query.task_name`, `query.trial_id` and
  // `query.max_insert_id` select; the other fields are ignored).
  virtual Result<LogSearchResult> SearchLogLines(const LogQuery& query, const LogSearch& search);

  // Retention (docs/operations.md). UNIMPLEMENTED by default.
  //
  // Jobs in a terminal state that ended before `ended_before` (0 = all), oldest end first.
  virtual Result<std::vector<FinishedJob>> ListFinishedJobs(Timestamp ended_before);
  // Deletes a job's log lines; the job record and its state history stay.
  virtual Status DeleteJobLogs(const std::string& project, const std::string& job_id);
  // Deletes a job record with its state history and log lines (an admin purge; AI Platform
  // has no job deletion). NOT_FOUND when absent.
  virtual Status DeleteJob(const std::string& project, const std::string& job_id);
};

}  // namespace trainyard::store
