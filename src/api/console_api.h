// The API additions the web console needs (docs/console.md, docs/api.md "Console additions"),
// each a public REST route any client may call. Private to ty_api; api_server.cc routes to
// these.
#pragma once

#include <string>

#include "logging_api.h"
#include "trainyard/core/status.h"
#include "trainyard/scheduler/job_service.h"
#include "trainyard/store/job_store.h"

namespace trainyard::api {

// GET /v1/projects/P/jobs:summary: {"jobStateCounts": {"QUEUED": "3", ...}, "totalJobs": "N"}
// (int64 as strings, as in every Google JSON API; states with no job are absent).
Result<std::string> JobsSummary(store::JobStore& store, const std::string& project);

// GET /v1/projects/P/jobs/J/logs:summary: how many lines the job has, per stream, at a
// snapshot: {"lineCount", "snapshotInsertId", "streams": [{"taskName", "trialId",
// "lineCount"}]}; lineCount counts the streams that taskName / trialId (optional) select.
// Following with afterInsertId=snapshotInsertId reads every later line exactly once.
Result<std::string> LogsSummary(store::JobStore& store, const std::string& project,
                                const std::string& job_id, const QueryParams& params);

// GET /v1/projects/P/jobs/J/logs:lines?lineOffset=K: the job's lines from the K-th (0-based)
// in insert-id (ingestion) order, at most pageSize (default 1000, at most 5000), optionally of
// one task / trial and up to a snapshot (snapshotInsertId, default: now):
// {"entries": [...], "lineOffset": "K", "snapshotInsertId": "S"}. Positional access is what
// lets a viewer jump to any line of a million-line log with one request.
Result<std::string> LogLines(store::JobStore& store, const std::string& project,
                             const std::string& job_id, const QueryParams& params);

// GET /v1/projects/P/jobs/J/trials: a tuning job's trials (HyperparameterOutput, compat §4) with
// `allMetrics` filled from the intermediate reports (the job's GET leaves it empty, as AI
// Platform does: 1,000 trials of 100 reports would make every GET megabytes). In trial id
// order, pageSize (default 100, at most 1000) per page, pageToken = the previous page's
// nextPageToken, trialId = that trial only: {"trials": [...], "nextPageToken",
// "hyperparameterMetricTag"}; {} for a job without trials.
Result<std::string> TrialsPage(scheduler::JobService& jobs, const std::string& project,
                               const std::string& job_id, const QueryParams& params);

// GET /v1/projects/P/jobs:queue: what runs and what waits (docs/api.md "Console additions"):
// admission (paused, held and why), the node's capacity and what is free, every GPU and which
// of the project's jobs holds it, the project's admitted jobs with their replicas, and a page
// of its queued jobs in admission order with jobPosition and waitReason (pageSize default 50,
// at most 500; pageToken).
Result<std::string> QueuePage(scheduler::JobService& jobs, const std::string& project,
                              const QueryParams& params);
// GET /v1/projects/P/jobs/J/history: the job's state changes, oldest first, from the store's
// state history: {"stateChanges": [{"state": "QUEUED", "time": createTime}, {"state",
// "fromState", "time", "reason"?}, ...]} (the first entry is the creation). What the console's
// job page shows as "State history"; AI Platform's Job has no such field.
Result<std::string> StateHistory(store::JobStore& store, const std::string& project,
                                 const std::string& job_id, const QueryParams& params);

// GET /v1/projects/P/jobs/J/logs:search?text=T: the lines whose message contains T (ASCII
// case-insensitive unless matchCase=true) among the lines logs:lines counts (taskName,
// trialId, snapshotInsertId as there), nearest first: after afterLineOffset (exclusive; absent:
// from the first line) or, with beforeLineOffset, before it (backward). At most pageSize
// (default 1, at most 1000). countMatches=true adds totalMatches (every match of the
// selection; reads the whole log) and matchIndex (how many matches precede the first one
// returned: a viewer shows "matchIndex + 1 of totalMatches"). {"matches": [{"lineOffset": "K",
// "entry": {...}}], "totalMatches": "N", "snapshotInsertId": "S"}: what a viewer's find next /
// previous asks.
Result<std::string> SearchLogs(store::JobStore& store, const std::string& project,
                               const std::string& job_id, const QueryParams& params);

// GET /v1/projects/P/jobs/J/logs:download: the job's lines as text, in ingestion order, read
// from the store batch by batch while the answer streams (no size limit). One line per entry:
// "TIMESTAMP<TAB>SEVERITY<TAB>TASK<TAB>MESSAGE" (TASK "master-replica-0", or
// "master-replica-0/trial-3" in a trial), or only the message with format=message. Filters:
// taskName, trialId, minSeverity, startTime (inclusive) / endTime (exclusive), RFC 3339;
// snapshotInsertId
// (default: now) bounds it.
class LogDownload {
 public:
  // Checks the parameters and the job (NOT_FOUND); the first batch is read by Next.
  static Result<LogDownload> Start(store::JobStore& store, const std::string& project,
                                   const std::string& job_id, const QueryParams& params);
  // The next piece of text ("" once every line is out).
  Result<std::string> Next();
  // The file name a browser saves it as: JOB[-TASK][-trial-N].log.
  const std::string& file_name() const { return file_name_; }

 private:
  store::JobStore* store_ = nullptr;
  store::LogQuery query_;
  bool message_only_ = false;
  bool done_ = false;
  std::string file_name_;
};

}  // namespace trainyard::api
