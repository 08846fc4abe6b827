#include "console_api.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "trainyard/core/time.h"
#include "trainyard/model/job.h"
#include "trainyard/model/job_json.h"

namespace trainyard::api {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

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

Result<std::string> StateHistory(store::JobStore& store, const std::string& project,
                                 const std::string& job_id, const QueryParams& params) {
  TRAINYARD_RETURN_IF_ERROR(CheckKnown(params, {}));
  TRAINYARD_ASSIGN_OR_RETURN(model::Job job, store.GetJob(project, job_id));
  TRAINYARD_ASSIGN_OR_RETURN(auto changes, store.GetStateHistory(project, job_id));
  ordered_json list = ordered_json::array();
  list.push_back({{"state", "QUEUED"}, {"time", FormatRfc3339Micros(job.create_time)}});
  for (const store::StateChange& c : changes) {
    ordered_json row = {{"state", model::JobStateName(c.to)},
                        {"fromState", model::JobStateName(c.from)},
                        {"time", FormatRfc3339Micros(c.time)}};
    if (!c.reason.empty()) row["reason"] = c.reason;
    list.push_back(std::move(row));
  }
  return ordered_json{{"stateChanges", std::move(list)}}.dump();
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

constexpr int64_t kDefaultTrials = 100;
constexpr int64_t kMaxTrials = 1000;
constexpr int64_t kDefaultQueued = 50;
constexpr int64_t kMaxQueued = 500;

Result<int64_t> PageSize(const QueryParams& params, int64_t def, int64_t max) {
  TRAINYARD_ASSIGN_OR_RETURN(int64_t n, IntQueryParam(params, "pageSize", def));
  if (n == 0) return def;  // proto3's unset
  if (n < 0 || n > max) {
    return BadParam("pageSize", "pageSize must be between 0 and " + std::to_string(max) + ", got " +
                                    std::to_string(n));
  }
  return n;
}

int64_t TrialNumber(const ordered_json& trial) {
  const auto it = trial.find("trialId");
  if (it == trial.end() || !it->is_string()) return 0;
  try {
    return std::stoll(it->get<std::string>());
  } catch (...) {
    return 0;
  }
}

std::string FormatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

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

Result<std::string> TrialsPage(scheduler::JobService& jobs, const std::string& project,
                               const std::string& job_id, const QueryParams& params) {
  TRAINYARD_RETURN_IF_ERROR(CheckKnown(params, {"pageSize", "pageToken", "trialId"}));
  TRAINYARD_ASSIGN_OR_RETURN(int64_t page_size, PageSize(params, kDefaultTrials, kMaxTrials));
  int64_t after = 0;
  if (const std::string* token = QueryParam(params, "pageToken"); token && !token->empty()) {
    auto n = IntQueryParam(params, "pageToken", 0);
    if (!n.ok() || *n < 0) {
      return BadParam("pageToken",
                      "Invalid pageToken \"" + *token + "\": use the nextPageToken of an answer");
    }
    after = *n;
  }
  const std::string* only = QueryParam(params, "trialId");
  TRAINYARD_ASSIGN_OR_RETURN(model::Job job, jobs.GetJob(project, job_id));
  const ordered_json out = ordered_json::parse(
      job.training_output_json.empty() ? "{}" : job.training_output_json, nullptr, false);
  if (!out.is_object() || !out.contains("trials") || !out["trials"].is_array()) {
    return std::string("{}");
  }
  const std::string tag = out.value("hyperparameterMetricTag", "");
  // The stored trials in id order, the page's ids, then their reports (files, no lock).
  std::vector<const ordered_json*> all;
  for (const ordered_json& t : out["trials"]) {
    if (t.is_object() && TrialNumber(t) > after &&
        (only == nullptr || t.value("trialId", "") == *only)) {
      all.push_back(&t);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const ordered_json* a, const ordered_json* b) {
    return TrialNumber(*a) < TrialNumber(*b);
  });
  const bool more = static_cast<int64_t>(all.size()) > page_size;
  if (more) all.resize(static_cast<size_t>(page_size));
  std::vector<std::string> ids;
  for (const ordered_json* t : all) ids.push_back((*t)["trialId"].get<std::string>());
  const auto reports = jobs.TrialMeasurements(job, tag, ids);
  // HyperparameterOutput in the service's field order (compat §4): allMetrics after finalMetric.
  // Written as text: 1,000 trials of 100 reports are 100,000 small objects.
  std::string body = "{\"trials\":[";
  for (size_t i = 0; i < all.size(); ++i) {
    std::string metrics;
    if (auto it = reports.find(ids[i]); it != reports.end()) {
      for (const auto& r : it->second) {
        metrics += metrics.empty() ? "[" : ",";
        metrics += "{\"trainingStep\":\"" + std::to_string(r.step) +
                   "\",\"objectiveValue\":" + FormatDouble(r.value) + "}";
      }
      if (!metrics.empty()) metrics += "]";
    }
    if (i) body += ',';
    body += '{';
    bool first = true;
    auto field = [&](const std::string& key, const std::string& value) {
      if (!first) body += ',';
      first = false;
      body += json(key).dump() + ":" + value;
    };
    bool placed = metrics.empty();
    for (const auto& [k, v] : all[i]->items()) {
      if (k == "allMetrics") continue;
      if (!placed && k == "startTime") {
        field("allMetrics", metrics);
        placed = true;
      }
      field(k, v.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    if (!placed) field("allMetrics", metrics);
    body += '}';
  }
  body += "]";
  if (more) body += ",\"nextPageToken\":\"" + ids.back() + "\"";
  body += ",\"hyperparameterMetricTag\":" + json(tag).dump() + "}";
  return body;
}

namespace {

// A job as a queue row: who it is, its state and times, its place and why it waits, what it
// holds, and the training input's machines (not the whole resource: a tuning job's trials
// would make every row large).
ordered_json QueueJob(const model::Job& job) {
  const ordered_json full = ordered_json::parse(model::JobToJson(job), nullptr, false);
  ordered_json row = ordered_json::object();
  if (!full.is_object()) return row;
  for (const char* k : {"jobId", "state", "createTime", "startTime", "jobPosition", "waitReason",
                        "allocation", "labels"}) {
    if (full.contains(k)) row[k] = full[k];
  }
  ordered_json ti = ordered_json::object();
  const ordered_json& in = full.contains("trainingInput") ? full["trainingInput"] : ti;
  for (const char* k : {"scaleTier", "masterType", "masterConfig", "workerType", "workerCount",
                        "workerConfig", "parameterServerType", "parameterServerCount",
                        "evaluatorType", "evaluatorCount", "scheduling"}) {
    if (in.contains(k)) ti[k] = in[k];
  }
  if (in.contains("hyperparameters") && in["hyperparameters"].contains("maxTrials")) {
    ti["hyperparameters"] = {{"maxTrials", in["hyperparameters"]["maxTrials"]}};
  }
  row["trainingInput"] = std::move(ti);
  if (full.contains("trainingOutput")) {
    const ordered_json& to = full["trainingOutput"];
    ordered_json o = ordered_json::object();
    for (const char* k : {"completedTrialCount", "isHyperparameterTuningJob"}) {
      if (to.contains(k)) o[k] = to[k];
    }
    if (!o.empty()) row["trainingOutput"] = std::move(o);
  }
  return row;
}

std::string Vcpus(int64_t millis) { return FormatDouble(static_cast<double>(millis) / 1000); }

}  // namespace

Result<std::string> QueuePage(scheduler::JobService& jobs, const std::string& project,
                              const QueryParams& params) {
  TRAINYARD_RETURN_IF_ERROR(CheckKnown(params, {"pageSize", "pageToken"}));
  TRAINYARD_ASSIGN_OR_RETURN(int64_t page_size, PageSize(params, kDefaultQueued, kMaxQueued));
  const std::string* token = QueryParam(params, "pageToken");
  TRAINYARD_ASSIGN_OR_RETURN(scheduler::QueueView view,
                             jobs.Queue(project, token ? *token : "", static_cast<int>(page_size)));
  const scheduler::SchedulerStats& st = view.stats;
  ordered_json out = ordered_json::object();
  ordered_json admission = {{"paused", view.paused}};
  if (!st.admission_hold.empty()) admission["holdReason"] = st.admission_hold;
  if (!st.backend_problem.empty()) admission["backendProblem"] = st.backend_problem;
  if (view.max_running_jobs > 0) admission["maxRunningJobs"] = view.max_running_jobs;
  out["admission"] = std::move(admission);
  // What admission counts: this node's capacity, or with Slurm its partition's (`scope`), where
  // "free" is what Trainyard's own submitted jobs leave of it (others' jobs are Slurm's to count).
  out["node"] = {{"scope", st.cluster ? "cluster" : "node"},
                 {"vcpus", json::parse(Vcpus(st.total_cpu_millis))},
                 {"memoryBytes", std::to_string(st.total_memory_bytes)},
                 {"gpus", st.total_gpus},
                 {"freeVcpus", json::parse(Vcpus(st.free_cpu_millis))},
                 {"freeMemoryBytes", std::to_string(st.free_memory_bytes)},
                 {"freeGpus", st.free_gpus}};
  out["jobCounts"] = {{"queued", st.queued},
                      {"preparing", st.preparing},
                      {"running", st.running},
                      {"cancelling", st.cancelling},
                      {"runningReplicas", st.running_replicas}};
  ordered_json gpus = ordered_json::array();
  for (const scheduler::QueueGpu& g : view.gpus) {
    ordered_json row = {{"index", g.gpu.index}, {"type", g.gpu.type}};
    if (!g.gpu.name.empty()) row["name"] = g.gpu.name;
    row["inUse"] = g.held;
    if (!g.job_id.empty()) row["jobId"] = g.job_id;
    if (!g.trial_id.empty()) row["trialId"] = g.trial_id;
    if (!g.task_name.empty()) row["taskName"] = g.task_name;
    gpus.push_back(std::move(row));
  }
  out["gpus"] = std::move(gpus);
  ordered_json admitted = ordered_json::array();
  for (const scheduler::QueueAdmittedJob& a : view.admitted) {
    ordered_json row = QueueJob(a.job);
    ordered_json replicas = ordered_json::array();
    for (const scheduler::QueueReplica& r : a.replicas) {
      ordered_json rr = {{"taskName", r.task_name}};
      if (!r.trial_id.empty()) rr["trialId"] = r.trial_id;
      rr["state"] = r.stopping ? "STOPPING" : r.running ? "RUNNING" : "STARTING";
      rr["vcpus"] = json::parse(Vcpus(r.demand.cpu_millis));
      rr["memoryBytes"] = std::to_string(r.demand.memory_bytes);
      rr["gpus"] = r.demand.gpus;
      if (!r.demand.gpu_type.empty()) rr["gpuType"] = r.demand.gpu_type;
      if (!r.gpus.empty()) rr["gpuIndices"] = r.gpus;
      replicas.push_back(std::move(rr));
    }
    row["replicas"] = std::move(replicas);
    admitted.push_back(std::move(row));
  }
  out["admitted"] = std::move(admitted);
  ordered_json queued = ordered_json::array();
  for (const model::Job& j : view.queued) queued.push_back(QueueJob(j));
  out["queued"] = std::move(queued);
  if (!view.next_page_token.empty()) out["nextPageToken"] = view.next_page_token;
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

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
  TRAINYARD_RETURN_IF_ERROR(CheckKnown(params, {"taskName", "trialId", "minSeverity", "startTime",
                                                "endTime", "format", "snapshotInsertId"}));
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
  TRAINYARD_ASSIGN_OR_RETURN(auto min_severity, MinSeverityParam(params));
  if (min_severity) d.query_.min_severity = *min_severity;
  // A time range, as the job-log route takes it (the console's time filter).
  TRAINYARD_ASSIGN_OR_RETURN(d.query_.min_timestamp, TimeParam(params, "startTime"));
  TRAINYARD_ASSIGN_OR_RETURN(d.query_.max_timestamp, TimeParam(params, "endTime"));
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
