// The Cloud Logging v2 `entries:list` subset over the job store's log lines (compat §11), what
// `gcloud ai-platform jobs stream-logs` and `gcloud logging read` call. Private to ty_api.
#pragma once

#include <string>
#include <string_view>

#include "trainyard/core/status.h"
#include "trainyard/model/job.h"
#include "trainyard/store/job_store.h"

namespace trainyard::api {

// Cloud Logging's LogEntry JSON of a stored line: insertId zero-padded (log_filter.h),
// jsonPayload {message, levelname} for replica lines, textPayload for service lines.
std::string LogEntryToJson(const model::LogEntry& entry);

// Answers `POST /v2/entries:list` with body `body` (ListLogEntriesRequest: resourceNames,
// filter, orderBy, pageSize, pageToken): the ListLogEntriesResponse JSON, or INVALID_ARGUMENT
// naming the field. Page tokens are insert ids; a page may come back short (with a token)
// when a sparse filter made the scan long.
Result<std::string> ListLogEntries(store::JobStore& store, std::string_view body);

}  // namespace trainyard::api
