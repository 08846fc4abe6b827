// The Cloud Logging v2 `entries:list` subset over the job store's log lines (compat §11), what
// `gcloud ai-platform jobs stream-logs` and `gcloud logging read` call. Private to ty_api.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/model/job.h"
#include "trainyard/store/job_store.h"

namespace trainyard::api {

// Cloud Logging's LogEntry JSON of a stored line: insertId zero-padded (log_filter.h),
// jsonPayload {message, levelname} for replica lines, textPayload for service lines.
std::string LogEntryToJson(const model::LogEntry& entry);

// Answers `POST /v2/entries:list` with body `body` (ListLogEntriesRequest: resourceNames,
// filter, orderBy, pageSize, pageToken): the ListLogEntriesResponse JSON, or INVALID_ARGUMENT
// naming the field. Entries come in one (timestamp, insertId) order across pages (ascending or
// descending); a page token holds the position after which the next page starts and the
// snapshot of the first page. A page may come back short (with a token) when a sparse filter
// made the scan long.
//
// A finished job's freshness bound is lifted: when the filter implies one job
// (resource.labels.job_id="X") and that job's stored state is terminal, each top-level
// conjunct `timestamp<"T"` / `timestamp<="T"` with T no more than kFreshUpperBoundWindow
// before `now` (the server's clock) is dropped for this request. gcloud's stream-logs bounds
// every poll by its own now - 5 s to wait for late lines; a finished job has every line it will
// ever have stored already, so its last lines come back on the next poll instead of being cut
// off when gcloud stops (docs/gcloud.md, docs/api.md "Log order").
inline constexpr Duration kFreshUpperBoundWindow = 10 * kMicrosPerSecond;
Result<std::string> ListLogEntries(store::JobStore& store, std::string_view body,
                                   Timestamp now = NowMicros());

// What an entries:list body asks for, parsed as ListLogEntries parses it (the authorizer checks
// logging.logEntries.list on `project`; filters naming the audit log are answered from it).
struct LogListTarget {
  std::string project;
  std::string filter;
  std::string page_token;
  int page_size = 0;
};
Result<LogListTarget> ParseLogListTarget(std::string_view body);
// The project of an entries:list body (INVALID_ARGUMENT naming resourceNames).
inline Result<std::string> LogListProject(std::string_view body) {
  auto t = ParseLogListTarget(body);
  if (!t.ok()) return t.status();
  return t->project;
}

// A request's query parameters (httplib::Params is this type).
using QueryParams = std::multimap<std::string, std::string>;
// The value of query parameter `name` (nullptr when absent).
const std::string* QueryParam(const QueryParams& params, const char* name);
// An integer query parameter, `def` when absent; INVALID_ARGUMENT naming it when not an integer.
Result<int64_t> IntQueryParam(const QueryParams& params, const char* name, int64_t def);
// The minSeverity query parameter, case-insensitive (nullopt when absent or empty);
// INVALID_ARGUMENT naming it and the severities when it is none of them.
Result<std::optional<model::Severity>> MinSeverityParam(const QueryParams& params);
// An RFC 3339 time query parameter (startTime, endTime) in microseconds, 0 when absent or
// empty; INVALID_ARGUMENT naming it when it is not such a time.
Result<Timestamp> TimeParam(const QueryParams& params, const char* name);

// Answers `GET /v1/projects/P/jobs/J/logs` (docs/api.md, "Job logs"). Two modes:
//  * afterInsertId=N (followers): lines with insert ids above N in ingestion order, and
//    nextAfterInsertId, the cursor to resume from: every line exactly once.
//  * otherwise a listing in (timestamp, insertId) order (orderBy "timestamp asc|desc"),
//    paged by nextPageToken, with snapshotInsertId: the listing holds exactly the lines up to
//    it, and afterInsertId=snapshotInsertId follows on from there.
// Filters in both: taskName, trialId, minSeverity, startTime/endTime (RFC 3339; [start, end)).
// NOT_FOUND when the job does not exist.
// One line as the job-log routes write it (Cloud Logging's shape, insertId unpadded).
std::string JobLogEntryToJson(const model::LogEntry& entry);

Result<std::string> ListJobLogs(store::JobStore& store, const std::string& project,
                                const std::string& job_id, const QueryParams& params);

}  // namespace trainyard::api
