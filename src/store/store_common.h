// Semantics shared by every JobStore implementation: page tokens and error messages.
// Private to src/store (not a contract header).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainyard/core/status.h"

namespace trainyard::store::internal {

// A page token is opaque to clients: base64 of "s<seq>", where seq is the last job returned.
// The next page holds jobs with a seq strictly below it.
std::string EncodePageToken(int64_t last_seq);
// "" decodes to nullopt (first page). Anything not produced by EncodePageToken is
// INVALID_ARGUMENT "Invalid page token".
Result<std::optional<int64_t>> DecodePageToken(const std::string& token);

// ALREADY_EXISTS "Job projects/P/jobs/ID already exists".
Status JobAlreadyExists(const std::string& project, const std::string& job_id);
// NOT_FOUND "Job projects/P/jobs/ID not found".
Status JobNotFound(const std::string& project, const std::string& job_id);

// The effective limit of a LogQuery: a non-positive limit means the default, 1000.
int EffectiveLogLimit(int limit);

}  // namespace trainyard::store::internal
