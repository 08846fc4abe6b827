#include "logging_api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "api_util.h"
#include "log_filter.h"
#include "trainyard/core/time.h"

namespace trainyard::api {

using nlohmann::json;

namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;
constexpr int kReadChunk = 1000;
// Entries examined per request before an ascending page is returned short, with a token.
constexpr int64_t kScanBudget = 200000;

Status BadField(const std::string& field, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message).AddViolation(field, message);
}

struct ListRequest {
  std::string project;
  std::string filter;
  bool descending = false;
  int page_size = kDefaultPageSize;
  std::string page_token;  // "" = first page
};

Result<std::string> StringField(const json& v, const std::string& name) {
  if (!v.is_string()) return BadField(name, "Invalid value at '" + name + "' (TYPE_STRING)");
  return v.get<std::string>();
}

Result<ListRequest> ParseRequest(std::string_view body) {
  json j = json::parse(body.empty() ? std::string_view("{}") : body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(
        "Invalid JSON payload received. Expected a ListLogEntriesRequest object");
  }
  ListRequest r;
  std::vector<std::string> names;
  std::string order_by;
  for (const auto& [key, v] : j.items()) {
    if (key == "resourceNames" || key == "resource_names" || key == "projectIds" ||
        key == "project_ids") {
      if (!v.is_array()) return BadField(key, "Invalid value at '" + key + "': expected a list");
      for (const auto& n : v) {
        TRAINYARD_ASSIGN_OR_RETURN(std::string s, StringField(n, key));
        names.push_back(key.starts_with("project") ? "projects/" + s : s);
      }
    } else if (key == "filter") {
      TRAINYARD_ASSIGN_OR_RETURN(r.filter, StringField(v, key));
    } else if (key == "orderBy" || key == "order_by") {
      TRAINYARD_ASSIGN_OR_RETURN(order_by, StringField(v, key));
    } else if (key == "pageSize" || key == "page_size") {
      int64_t n = 0;
      if (v.is_number_integer()) {
        n = v.get<int64_t>();
      } else if (v.is_string()) {
        std::string s = v.get<std::string>();
        auto res = std::from_chars(s.data(), s.data() + s.size(), n);
        if (res.ec != std::errc() || res.ptr != s.data() + s.size()) {
          return BadField("pageSize", "Invalid value at 'page_size' (TYPE_INT32), \"" + s + "\"");
        }
      } else {
        return BadField("pageSize", "Invalid value at 'page_size' (TYPE_INT32)");
      }
      if (n < 0 || n > kMaxPageSize) {
        return BadField("pageSize",
                        "pageSize must be between 0 and 1000, got " + std::to_string(n));
      }
      r.page_size = n == 0 ? kDefaultPageSize : static_cast<int>(n);
    } else if (key == "pageToken" || key == "page_token") {
      TRAINYARD_ASSIGN_OR_RETURN(r.page_token, StringField(v, key));
    } else {
      return BadField(
          key, "Invalid JSON payload received. Unknown name \"" + key + "\": Cannot find field.");
    }
  }
  if (names.empty()) {
    return BadField("resourceNames",
                    "resourceNames is required: name the project, e.g. "
                    "[\"projects/my-project\"]");
  }
  for (const auto& n : names) {
    if (!n.starts_with("projects/") || n.find('/', 9) != std::string::npos) {
      return BadField("resourceNames", "Unsupported resource name \"" + n +
                                           "\": Trainyard serves projects/PROJECT only");
    }
    std::string p = n.substr(9);
    TRAINYARD_RETURN_IF_ERROR(ValidateProject(p));
    if (!r.project.empty() && p != r.project) {
      return BadField("resourceNames", "Listing several projects at once is not supported");
    }
    r.project = p;
  }
  std::string ob;
  for (char c : order_by)
    ob.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::vector<std::string> words;
  std::string w;
  for (char c : ob + " ") {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w.push_back(c);
    }
  }
  if (words.empty() || (words[0] == "timestamp" && words.size() <= 2 &&
                        (words.size() == 1 || words[1] == "asc" || words[1] == "desc"))) {
    r.descending = words.size() == 2 && words[1] == "desc";
  } else {
    return BadField("orderBy", "Unsupported orderBy \"" + order_by +
                                   "\": use \"timestamp asc\" or \"timestamp desc\"");
  }
  return r;
}

}  // namespace

Result<LogListTarget> ParseLogListTarget(std::string_view body) {
  TRAINYARD_ASSIGN_OR_RETURN(ListRequest r, ParseRequest(body));
  return LogListTarget{r.project, r.filter, r.page_token, r.page_size};
}

namespace {

// A page token: where the previous page stopped in the (timestamp, insertId) order, the
// direction, and the snapshot (the highest insert id when the first page was read), so every
// page of one listing reads the same set of entries even while a job is still logging.
struct PageToken {
  bool descending = false;
  store::LogPosition position;
  int64_t snapshot = 0;
};

// "a<timestamp>.<insertId>.<snapshot>" ("d" when descending): URL-safe as it is, so clients can
// put it into a query string without encoding. Opaque to clients all the same.
std::string EncodePageToken(const PageToken& t) {
  return std::string(t.descending ? "d" : "a") + std::to_string(t.position.timestamp) + "." +
         std::to_string(t.position.insert_id) + "." + std::to_string(t.snapshot);
}

Result<PageToken> DecodePageToken(const std::string& token, bool descending,
                                  const std::string& field) {
  Status invalid = BadField(field, "Invalid " + field + " \"" + token +
                                       "\": pass the nextPageToken of the previous page");
  const std::string* text = &token;
  if (text->size() < 6 || text->size() > 64) return invalid;
  PageToken t;
  if ((*text)[0] != 'a' && (*text)[0] != 'd') return invalid;
  t.descending = (*text)[0] == 'd';
  int64_t* fields[] = {&t.position.timestamp, &t.position.insert_id, &t.snapshot};
  const char* p = text->data() + 1;
  const char* end = text->data() + text->size();
  for (size_t i = 0; i < 3; ++i) {
    auto r = std::from_chars(p, end, *fields[i]);
    if (r.ec != std::errc()) return invalid;
    p = r.ptr;
    if (i < 2) {
      if (p == end || *p != '.') return invalid;
      ++p;
    }
  }
  if (p != end || t.snapshot < 1 || EncodePageToken(t) != token) return invalid;
  if (t.descending != descending) {
    return BadField(field, "The page token was issued for orderBy \"timestamp " +
                               std::string(t.descending ? "desc" : "asc") +
                               "\": pass the same orderBy as the first page");
  }
  return t;
}

// One page of entries in (timestamp, insertId) order (the direction in `q.order`) with insert
// ids up to `snapshot` that pass `matches`, starting after `position` (nullopt = from the
// first). Reads the store in chunks; gives up after kScanBudget entries, returning a short
// page with a token. `store_filters_all`: the store query already holds every filter (matches
// accepts every line it returns), so each read asks for no more lines than the page still
// needs; otherwise lines are read kReadChunk at a time, since many may not match. (Reading
// kReadChunk lines for a page of 100 made a job-log tail page cost 10x the store work it
// needed: bench/bench_load.py, docs/benchmarks.md.)
template <typename Matches>
Result<std::pair<std::vector<model::LogEntry>, std::optional<PageToken>>> ReadOrderedPage(
    store::JobStore& store, store::LogQuery q, std::optional<store::LogPosition> position,
    int64_t snapshot, size_t page_size, bool store_filters_all, const Matches& matches) {
  const bool descending = q.order == store::LogOrder::kTimestampDesc;
  std::vector<model::LogEntry> page;
  std::optional<PageToken> next;
  if (snapshot <= 0) return std::make_pair(std::move(page), next);  // no line stored yet
  q.position = position;
  q.max_insert_id = snapshot;
  int64_t scanned = 0;
  while (true) {
    q.limit = store_filters_all
                  ? static_cast<int>(std::min<size_t>(kReadChunk, page_size - page.size()))
                  : kReadChunk;
    TRAINYARD_ASSIGN_OR_RETURN(auto chunk, store.ReadLogs(q));
    bool done = false;
    for (auto& e : chunk) {
      ++scanned;
      q.position = store::LogPosition{e.timestamp, e.insert_id};
      if (!matches(e)) continue;
      page.push_back(std::move(e));
      if (page.size() == page_size) {
        done = true;
        break;
      }
    }
    if (done || (chunk.size() == static_cast<size_t>(q.limit) && scanned >= kScanBudget)) {
      next = PageToken{descending, *q.position, snapshot};
      break;
    }
    if (chunk.size() < static_cast<size_t>(q.limit)) break;
  }
  return std::make_pair(std::move(page), next);
}

// The snapshot and start position of a listing: the token's, or the newest insert id now.
Result<std::pair<int64_t, std::optional<store::LogPosition>>> Start(
    store::JobStore& store, const std::optional<PageToken>& token) {
  if (token) return std::make_pair(token->snapshot, std::optional(token->position));
  TRAINYARD_ASSIGN_OR_RETURN(int64_t snapshot, store.LastLogInsertId());
  return std::make_pair(snapshot, std::optional<store::LogPosition>());
}

}  // namespace

std::string LogEntryToJson(const model::LogEntry& e) {
  std::string ts = FormatRfc3339Micros(e.timestamp);
  json labels = {{"task_name", e.task_name}, {"ml.googleapis.com/task_name", e.task_name}};
  if (!e.trial_id.empty()) {
    labels["trial_id"] = e.trial_id;
    labels["ml.googleapis.com/trial_id"] = e.trial_id;
  }
  json j = {
      {"logName", *LogEntryField(e, "logName")},
      {"resource",
       {{"type", "ml_job"},
        {"labels", {{"job_id", e.job_id}, {"task_name", e.task_name}, {"project_id", e.project}}}}},
      {"timestamp", ts},
      {"receiveTimestamp", ts},
      {"severity", model::SeverityName(e.severity)},
      {"insertId", PaddedInsertId(e.insert_id)},
      {"labels", labels},
  };
  if (e.task_name == "service") {
    j["textPayload"] = e.message;
  } else {
    j["jsonPayload"] = {{"message", e.message}, {"levelname", model::SeverityName(e.severity)}};
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> ListLogEntries(store::JobStore& store, std::string_view body, Timestamp now) {
  TRAINYARD_ASSIGN_OR_RETURN(ListRequest r, ParseRequest(body));
  TRAINYARD_ASSIGN_OR_RETURN(LogFilter filter, LogFilter::Parse(r.filter));
  std::optional<PageToken> token;
  if (!r.page_token.empty()) {
    TRAINYARD_ASSIGN_OR_RETURN(token, DecodePageToken(r.page_token, r.descending, "pageToken"));
  }
  // A finished job's freshness bound (logging_api.h). gcloud's stream-logs asks only for
  // lines older than its now - 5 s, to leave late lines time to arrive, and stops once the job
  // has an endTime and two polls came back empty (compat §11.2); a job that ends within 5 s of
  // its last lines would otherwise lose them. The state is read before the snapshot (Start):
  // the scheduler stores a job's closing service line before its terminal state, and a
  // replica's lines are stored before its exit, so every line of a job read as terminal here
  // is at or below the snapshot, and no line of it is stored after. Bounds further in the past
  // than the window are the caller's own and stay.
  if (auto job_id = filter.ImpliedJobId()) {
    auto job = store.GetJob(r.project, *job_id);
    if (job.ok() && model::IsTerminal(job->state)) {
      filter.LiftUpperTimeBounds(now - kFreshUpperBoundWindow);
    }
  }
  store::LogQuery q;
  q.project = r.project;
  filter.PushDown(&q);
  // Cloud Logging orders by timestamp, then insertId (compat §11.2): one order over every
  // page, whatever order the replicas' lines were stored in. gcloud's stream-logs resumes
  // from the last (timestamp, insertId) it printed and drops anything ordered before it.
  q.order = r.descending ? store::LogOrder::kTimestampDesc : store::LogOrder::kTimestampAsc;
  TRAINYARD_ASSIGN_OR_RETURN(auto start, Start(store, token));
  TRAINYARD_ASSIGN_OR_RETURN(
      auto result,
      ReadOrderedPage(store, q, start.second, start.first, static_cast<size_t>(r.page_size),
                      /*store_filters_all=*/false,
                      [&](const model::LogEntry& e) { return filter.Matches(e); }));
  auto& [page, next] = result;
  if (page.empty() && !next) return std::string("{}");
  std::string out = "{\"entries\":[";
  for (size_t i = 0; i < page.size(); ++i) {
    if (i) out += ',';
    out += LogEntryToJson(page[i]);
  }
  out += "]";
  if (next) out += ",\"nextPageToken\":\"" + EncodePageToken(*next) + "\"";
  out += "}";
  return out;
}

namespace {

// The JSON of a line in Trainyard's own logs API (the Cloud Logging shape, insertId unpadded).
json JobLogEntryJson(const model::LogEntry& e) {
  json j = {
      {"insertId", std::to_string(e.insert_id)},
      {"timestamp", FormatRfc3339Micros(e.timestamp)},
      {"severity", model::SeverityName(e.severity)},
      {"resource",
       {{"type", "ml_job"},
        {"labels", {{"job_id", e.job_id}, {"task_name", e.task_name}, {"project_id", e.project}}}}},
      {"logName", "projects/" + e.project + "/logs/" +
                      (e.task_name == "service" ? "ml.googleapis.com%2F" + e.job_id : e.task_name)},
      {"jsonPayload", {{"message", e.message}}}};
  if (!e.trial_id.empty()) j["labels"] = {{"trial_id", e.trial_id}};
  return j;
}

}  // namespace

Result<Timestamp> TimeParam(const QueryParams& params, const char* name) {
  const std::string* v = QueryParam(params, name);
  if (v == nullptr || v->empty()) return Timestamp{0};
  auto t = ParseRfc3339(*v);
  if (!t.ok() || *t <= 0) {
    return BadField(name, std::string("Invalid value for ") + name + ": \"" + *v +
                              "\" is not an RFC 3339 time (e.g. 2024-01-01T12:00:00Z)");
  }
  return *t;
}

std::string JobLogEntryToJson(const model::LogEntry& entry) {
  return JobLogEntryJson(entry).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> ListJobLogs(store::JobStore& store, const std::string& project,
                                const std::string& job_id, const QueryParams& params) {
  static const char* const kKnown[] = {"afterInsertId", "pageSize",  "pageToken",
                                       "orderBy",       "taskName",  "trialId",
                                       "minSeverity",   "startTime", "endTime"};
  for (const auto& param : params) {
    const std::string& name = param.first;  // clang 14 cannot capture a structured binding
    if (std::find_if(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return name == k; }) == std::end(kKnown)) {
      return BadField(name, "Unknown parameter \"" + name +
                                "\" (known: afterInsertId, pageSize, "
                                "pageToken, orderBy, taskName, trialId, "
                                "minSeverity, startTime, endTime)");
    }
  }
  TRAINYARD_ASSIGN_OR_RETURN(int64_t limit, IntQueryParam(params, "pageSize", 1000));
  if (limit == 0) limit = 1000;  // 0 = the default, as in every Google list method
  if (limit < 0 || limit > 10000) {
    return BadField("pageSize",
                    "pageSize must be between 0 and 10000, got " + std::to_string(limit));
  }
  store::LogQuery q;
  q.project = project;
  q.job_id = job_id;
  if (const std::string* t = QueryParam(params, "taskName")) q.task_name = *t;
  if (const std::string* t = QueryParam(params, "trialId")) q.trial_id = *t;
  TRAINYARD_ASSIGN_OR_RETURN(auto min_severity, MinSeverityParam(params));
  if (min_severity) q.min_severity = *min_severity;
  TRAINYARD_ASSIGN_OR_RETURN(q.min_timestamp, TimeParam(params, "startTime"));
  TRAINYARD_ASSIGN_OR_RETURN(q.max_timestamp, TimeParam(params, "endTime"));

  json out;
  out["entries"] = json::array();
  if (QueryParam(params, "afterInsertId") != nullptr) {
    // Followers: ingestion order after a cursor. Every line has one insert id and ids are
    // committed in order, so resuming after the last id seen reads each line exactly once,
    // however late a replica's lines were stored relative to their timestamps.
    if (QueryParam(params, "pageToken") != nullptr || QueryParam(params, "orderBy") != nullptr) {
      return BadField("afterInsertId",
                      "afterInsertId (follow in ingestion order) cannot be combined with "
                      "pageToken or orderBy");
    }
    TRAINYARD_ASSIGN_OR_RETURN(int64_t after, IntQueryParam(params, "afterInsertId", 0));
    if (after < 0) return BadField("afterInsertId", "afterInsertId must not be negative");
    // The snapshot first: when the page is short, every line up to it has been examined, so
    // the cursor moves there even if the filters skipped the newest lines.
    TRAINYARD_ASSIGN_OR_RETURN(int64_t snapshot, store.LastLogInsertId());
    q.after_insert_id = after;
    q.max_insert_id = std::max<int64_t>(snapshot, 1);
    q.limit = static_cast<int>(limit);
    std::vector<model::LogEntry> entries;
    if (snapshot > after) {
      TRAINYARD_ASSIGN_OR_RETURN(entries, store.ReadLogs(q));
    }
    if (entries.empty()) TRAINYARD_RETURN_IF_ERROR(store.GetJob(project, job_id).status());
    int64_t cursor = std::max(after, entries.size() < static_cast<size_t>(limit) ? snapshot : 0);
    for (const auto& e : entries) {
      out["entries"].push_back(JobLogEntryJson(e));
      cursor = std::max(cursor, e.insert_id);
    }
    out["nextAfterInsertId"] = std::to_string(cursor);
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  // Listing: one (timestamp, insertId) order over every page, like entries:list.
  bool descending = false;
  if (const std::string* order = QueryParam(params, "orderBy")) {
    std::string o;
    for (char c : *order)
      o.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (o == "timestamp desc") {
      descending = true;
    } else if (o != "timestamp" && o != "timestamp asc" && !o.empty()) {
      return BadField("orderBy", "Unsupported orderBy \"" + *order +
                                     "\": use \"timestamp asc\" or \"timestamp desc\"");
    }
  }
  std::optional<PageToken> token;
  if (const std::string* t = QueryParam(params, "pageToken"); t != nullptr && !t->empty()) {
    TRAINYARD_ASSIGN_OR_RETURN(token, DecodePageToken(*t, descending, "pageToken"));
  }
  q.order = descending ? store::LogOrder::kTimestampDesc : store::LogOrder::kTimestampAsc;
  TRAINYARD_ASSIGN_OR_RETURN(auto start, Start(store, token));
  TRAINYARD_ASSIGN_OR_RETURN(
      auto result,
      ReadOrderedPage(store, q, start.second, start.first, static_cast<size_t>(limit),
                      /*store_filters_all=*/true, [](const model::LogEntry&) { return true; }));
  auto& [page, next] = result;
  if (page.empty()) TRAINYARD_RETURN_IF_ERROR(store.GetJob(project, job_id).status());
  for (const auto& e : page) out["entries"].push_back(JobLogEntryJson(e));
  if (next) out["nextPageToken"] = EncodePageToken(*next);
  // After the last page, follow with afterInsertId = snapshotInsertId: together the listing
  // and the follower read every line exactly once.
  out["snapshotInsertId"] = std::to_string(start.first);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

const std::string* QueryParam(const QueryParams& params, const char* name) {
  auto it = params.find(name);
  return it == params.end() ? nullptr : &it->second;
}

Result<int64_t> IntQueryParam(const QueryParams& params, const char* name, int64_t def) {
  const std::string* v = QueryParam(params, name);
  if (v == nullptr) return def;
  int64_t out = 0;
  auto r = std::from_chars(v->data(), v->data() + v->size(), out);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size()) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("Invalid value for ") + name + ": \"" + *v + "\" is not an integer")
        .AddViolation(name, "must be an integer");
  }
  return out;
}

Result<std::optional<model::Severity>> MinSeverityParam(const QueryParams& params) {
  const std::string* s = QueryParam(params, "minSeverity");
  if (s == nullptr || s->empty()) return std::optional<model::Severity>();
  std::string upper;
  for (char c : *s) upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  auto sev = model::ParseSeverity(upper);
  if (!sev) {
    return BadField("minSeverity", "Invalid value for minSeverity: \"" + *s +
                                       "\" (DEFAULT, DEBUG, INFO, NOTICE, WARNING, ERROR, "
                                       "CRITICAL, ALERT or EMERGENCY)");
  }
  return std::optional<model::Severity>(*sev);
}

}  // namespace trainyard::api
