#include "console_api.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "trainyard/core/time.h"
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

namespace {

constexpr int kMaxSearchMatches = 1000;
constexpr size_t kMaxSearchText = 1000;
constexpr int kDownloadBatch = 5000;

Result<bool> BoolParam(const QueryParams& params, const char* name) {
  const std::string* v = QueryParam(params, name);
  if (v == nullptr || v->empty() || *v == "false" || *v == "0") return false;
  if (*v == "true" || *v == "1") return true;
  return BadParam(name, std::string(name) + " must be true or false, got \"" + *v + "\"");
}

Result<int64_t> SnapshotParam(store::JobStore& store, const QueryParams& params) {
  TRAINYARD_ASSIGN_OR_RETURN(int64_t snapshot, IntQueryParam(params, "snapshotInsertId", 0));
  if (snapshot < 0) return BadParam("snapshotInsertId", "snapshotInsertId must not be negative");
  if (QueryParam(params, "snapshotInsertId") == nullptr) {
    TRAINYARD_ASSIGN_OR_RETURN(snapshot, store.LastLogInsertId());
  }
  return snapshot;
}

// A file name's part from an id: letters, digits, '-', '_' and '.' kept, anything else '_'.
std::string FileNamePart(const std::string& s) {
  std::string out;
  for (char c : s) {
    out.push_back(
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_');
  }
  return out;
}

}  // namespace

Result<std::string> SearchLogs(store::JobStore& store, const std::string& project,
                               const std::string& job_id, const QueryParams& params) {
  TRAINYARD_RETURN_IF_ERROR(
      CheckKnown(params, {"text", "afterLineOffset", "beforeLineOffset", "pageSize", "matchCase",
                          "countMatches", "taskName", "trialId", "snapshotInsertId"}));
  const std::string* text = QueryParam(params, "text");
  if (text == nullptr || text->empty()) {
    return BadParam("text", "text is required: the string to find in the job's lines");
  }
  if (text->size() > kMaxSearchText) {
    return BadParam("text", "text must be at most " + std::to_string(kMaxSearchText) + " bytes");
  }
  store::LogSearch search;
  search.text = *text;
  const bool after = QueryParam(params, "afterLineOffset") != nullptr;
  const bool before = QueryParam(params, "beforeLineOffset") != nullptr;
  if (after && before) {
    return BadParam("beforeLineOffset",
                    "give afterLineOffset (search forward) or beforeLineOffset (backward), not "
                    "both");
  }
  if (after) {
    TRAINYARD_ASSIGN_OR_RETURN(search.from, IntQueryParam(params, "afterLineOffset", -1));
    if (search.from < -1) {
      return BadParam("afterLineOffset", "afterLineOffset must be -1 or more");
    }
  }
  if (before) {
    search.backward = true;
    TRAINYARD_ASSIGN_OR_RETURN(search.from, IntQueryParam(params, "beforeLineOffset", 0));
    if (search.from < 0)
      return BadParam("beforeLineOffset", "beforeLineOffset must not be negative");
  }
  TRAINYARD_ASSIGN_OR_RETURN(int64_t limit, IntQueryParam(params, "pageSize", 1));
  if (limit == 0) limit = 1;
  if (limit < 0 || limit > kMaxSearchMatches) {
    return BadParam("pageSize", "pageSize must be between 0 and " +
                                    std::to_string(kMaxSearchMatches) + ", got " +
                                    std::to_string(limit));
  }
  search.max_matches = static_cast<int>(limit);
  TRAINYARD_ASSIGN_OR_RETURN(search.match_case, BoolParam(params, "matchCase"));
  TRAINYARD_ASSIGN_OR_RETURN(search.count, BoolParam(params, "countMatches"));
  TRAINYARD_ASSIGN_OR_RETURN(int64_t snapshot, SnapshotParam(store, params));
  TRAINYARD_RETURN_IF_ERROR(store.GetJob(project, job_id).status());
  store::LogQuery q;
  q.project = project;
  q.job_id = job_id;
  q.max_insert_id = std::max<int64_t>(snapshot, 1);
  SelectStream(params, &q);
  store::LogSearchResult found;
  if (snapshot > 0) {
    TRAINYARD_ASSIGN_OR_RETURN(found, store.SearchLogLines(q, search));
  }
  std::string out = "{\"matches\":[";
  for (size_t i = 0; i < found.matches.size(); ++i) {
    if (i) out += ',';
    out += "{\"lineOffset\":\"" + std::to_string(found.matches[i].ordinal) +
           "\",\"entry\":" + JobLogEntryToJson(found.matches[i].entry) + "}";
  }
  out += "]";
  if (search.count) {
    out += ",\"totalMatches\":\"" + std::to_string(std::max<int64_t>(found.total, 0)) + "\"";
    if (found.index >= 0) out += ",\"matchIndex\":\"" + std::to_string(found.index) + "\"";
  }
  out += ",\"snapshotInsertId\":\"" + std::to_string(snapshot) + "\"}";
  return out;
}

Result<LogDownload> LogDownload::Start(store::JobStore& store, const std::string& project,
                                       const std::string& job_id, const QueryParams& params) {
  TRAINYARD_RETURN_IF_ERROR(
      CheckKnown(params, {"taskName", "trialId", "minSeverity", "format", "snapshotInsertId"}));
  LogDownload d;
  d.store_ = &store;
  if (const std::string* f = QueryParam(params, "format"); f != nullptr && !f->empty()) {
    if (*f != "text" && *f != "message") {
      return BadParam("format",
                      "format must be text (time, severity, task, message) or "
                      "message (the message only), got \"" +
                          *f + "\"");
    }
    d.message_only_ = *f == "message";
  }
  if (const std::string* s = QueryParam(params, "minSeverity"); s != nullptr && !s->empty()) {
    std::string upper;
    for (char c : *s)
      upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    auto sev = model::ParseSeverity(upper);
    if (!sev) {
      return BadParam("minSeverity", "Invalid value for minSeverity: \"" + *s +
                                         "\" (DEFAULT, DEBUG, INFO, NOTICE, WARNING, ERROR, "
                                         "CRITICAL, ALERT or EMERGENCY)");
    }
    d.query_.min_severity = *sev;
  }
  TRAINYARD_ASSIGN_OR_RETURN(int64_t snapshot, SnapshotParam(store, params));
  TRAINYARD_RETURN_IF_ERROR(store.GetJob(project, job_id).status());
  d.query_.project = project;
  d.query_.job_id = job_id;
  d.query_.order = store::LogOrder::kInsertId;
  d.query_.max_insert_id = std::max<int64_t>(snapshot, 1);
  d.query_.limit = kDownloadBatch;
  SelectStream(params, &d.query_);
  d.done_ = snapshot == 0;
  d.file_name_ = FileNamePart(job_id);
  if (!d.query_.task_name.empty()) d.file_name_ += "-" + FileNamePart(d.query_.task_name);
  if (d.query_.trial_id && !d.query_.trial_id->empty()) {
    d.file_name_ += "-trial-" + FileNamePart(*d.query_.trial_id);
  }
  d.file_name_ += ".log";
  return d;
}

Result<std::string> LogDownload::Next() {
  if (done_) return std::string();
  TRAINYARD_ASSIGN_OR_RETURN(auto entries, store_->ReadLogs(query_));
  if (entries.size() < static_cast<size_t>(kDownloadBatch)) done_ = true;
  std::string out;
  for (const auto& e : entries) {
    if (!message_only_) {
      out += FormatRfc3339Micros(e.timestamp);
      out += '\t';
      out += model::SeverityName(e.severity);
      out += '\t';
      out += e.task_name;
      if (!e.trial_id.empty()) out += "/trial-" + e.trial_id;
      out += '\t';
    }
    out += e.message;
    out += '\n';
  }
  if (!entries.empty()) query_.after_insert_id = entries.back().insert_id;
  if (entries.empty()) done_ = true;
  return out;
}

}  // namespace trainyard::api
