// The API additions the web console needs (docs/console.md, docs/api.md "Console additions"),
// each a public REST route any client may call. Private to ty_api; api_server.cc routes to
// these.
#pragma once

#include <string>

#include "logging_api.h"
#include "trainyard/core/status.h"
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

}  // namespace trainyard::api
