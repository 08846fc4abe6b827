#include "console_api.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "trainyard/model/job.h"

namespace trainyard::api {

using nlohmann::json;

namespace {

constexpr int64_t kDefaultLines = 1000;
constexpr int64_t kMaxLines = 5000;

Status BadParam(const std::string& name, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message).AddViolation(name, message);
}

Status CheckKnown(const QueryParams& params, std::initializer_list<const char*> known) {
  for (const auto& param : params) {
    const std::string& name = param.first;
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return name == k; })) {
      std::string list;
      for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
      return BadParam(name, "Unknown parameter \"" + name + "\" (known: " + list + ")");
    }
  }
  return Status::Ok();
}

// The task and trial a log request selects (absent = every one).
void SelectStream(const QueryParams& params, store::LogQuery* q) {
  if (const std::string* t = QueryParam(params, "taskName")) q->task_name = *t;
  if (const std::string* t = QueryParam(params, "trialId")) q->trial_id = *t;
}

}  // namespace

Result<std::string> JobsSummary(store::JobStore& store, const std::string& project) {
  TRAINYARD_ASSIGN_OR_RETURN(auto counts, store.CountProjectJobsByState(project));
  json by_state = json::object();
  int64_t total = 0;
  for (const auto& [state, n] : counts) {
    by_state[model::JobStateName(state)] = std::to_string(n);
    total += n;
  }
  return json{{"jobStateCounts", by_state}, {"totalJobs", std::to_string(total)}}.dump();
}

Result<std::string> LogsSummary(store::JobStore& store, const std::string& project,
                                const std::string& job_id, const QueryParams& params) {
  TRAINYARD_RETURN_IF_ERROR(CheckKnown(params, {"taskName", "trialId"}));
  TRAINYARD_RETURN_IF_ERROR(store.GetJob(project, job_id).status());
  // The snapshot first: every chunk at or below it is complete (chunks commit whole).
  TRAINYARD_ASSIGN_OR_RETURN(int64_t snapshot, store.LastLogInsertId());
  store::LogQuery q;
  q.project = project;
  q.job_id = job_id;
  q.max_insert_id = std::max<int64_t>(snapshot, 1);
  SelectStream(params, &q);
  std::vector<store::LogStreamCount> streams;
  if (snapshot > 0) {
    TRAINYARD_ASSIGN_OR_RETURN(streams, store.CountLogLines(q));
  }
  int64_t selected = 0;
  json list = json::array();
  for (const auto& s : streams) {
    if ((q.task_name.empty() || s.task_name == q.task_name) &&
        (!q.trial_id || s.trial_id == *q.trial_id)) {
      selected += s.lines;
    }
    json row = {{"taskName", s.task_name}, {"lineCount", std::to_string(s.lines)}};
    if (!s.trial_id.empty()) row["trialId"] = s.trial_id;
    list.push_back(std::move(row));
  }
  return json{{"lineCount", std::to_string(selected)},
              {"snapshotInsertId", std::to_string(snapshot)},
              {"streams", list}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> LogLines(store::JobStore& store, const std::string& project,
                             const std::string& job_id, const QueryParams& params) {
  TRAINYARD_RETURN_IF_ERROR(
      CheckKnown(params, {"lineOffset", "pageSize", "taskName", "trialId", "snapshotInsertId"}));
  if (QueryParam(params, "lineOffset") == nullptr) {
    return BadParam("lineOffset", "lineOffset is required: the 0-based line to start from");
  }
  TRAINYARD_ASSIGN_OR_RETURN(int64_t offset, IntQueryParam(params, "lineOffset", 0));
  if (offset < 0) return BadParam("lineOffset", "lineOffset must not be negative");
  TRAINYARD_ASSIGN_OR_RETURN(int64_t limit, IntQueryParam(params, "pageSize", kDefaultLines));
  if (limit == 0) limit = kDefaultLines;
  if (limit < 0 || limit > kMaxLines) {
    return BadParam("pageSize", "pageSize must be between 0 and " + std::to_string(kMaxLines) +
                                    ", got " + std::to_string(limit));
  }
  TRAINYARD_ASSIGN_OR_RETURN(int64_t snapshot, IntQueryParam(params, "snapshotInsertId", 0));
  if (snapshot < 0) return BadParam("snapshotInsertId", "snapshotInsertId must not be negative");
  if (QueryParam(params, "snapshotInsertId") == nullptr) {
    TRAINYARD_ASSIGN_OR_RETURN(snapshot, store.LastLogInsertId());
  }
  store::LogQuery q;
  q.project = project;
  q.job_id = job_id;
  q.max_insert_id = std::max<int64_t>(snapshot, 1);
  SelectStream(params, &q);
  std::string out = "{\"entries\":[";
  int64_t first = 0;
  if (snapshot > 0) {
    TRAINYARD_ASSIGN_OR_RETURN(first, store.LocateLogLine(q, offset));
  }
  if (first > 0) {
    q.order = store::LogOrder::kInsertId;
    q.after_insert_id = first - 1;
    q.limit = static_cast<int>(limit);
    TRAINYARD_ASSIGN_OR_RETURN(auto entries, store.ReadLogs(q));
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += ',';
      out += JobLogEntryToJson(entries[i]);
    }
  } else {
    TRAINYARD_RETURN_IF_ERROR(store.GetJob(project, job_id).status());
  }
  out += "],\"lineOffset\":\"" + std::to_string(offset) + "\",\"snapshotInsertId\":\"" +
         std::to_string(snapshot) + "\"}";
  return out;
}

}  // namespace trainyard::api
