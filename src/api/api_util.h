// Small helpers shared by the API's handlers. Private to ty_api.
#pragma once

#include <string>
#include <string_view>

#include "trainyard/core/status.h"
#include "trainyard/store/job_store.h"

namespace trainyard::api {

// Project ids as Google Cloud allows them (letters, digits, '-', also domain-scoped "a.com:b"),
// starting with a letter: keeps "..", "/" and control bytes out of paths built from them.
Status ValidateProject(const std::string& project);

// projects.jobs.list's orderBy, a Trainyard extension (AI Platform's list has none; docs/api.md,
// compat §5.1): one field of createTime, startTime, endTime, jobId, state (snake_case too), then
// optionally "asc" (the default) or "desc", as Google's APIs spell it ("createTime desc"). Empty
// or blank: the default order, newest first. INVALID_ARGUMENT naming orderBy otherwise.
Result<store::JobOrder> ParseJobOrder(std::string_view text);

}  // namespace trainyard::api
