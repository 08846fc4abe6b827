#include "trainyard/client/client.h"

#include <httplib.h>

#include <charconv>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>

#include "trainyard/core/util.h"

namespace trainyard::client {

using json = nlohmann::json;

namespace {

constexpr char kConnectionErrorMarker[] = "Could not reach trainyardd at ";

std::string DescribeTransportError(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "could not connect";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
      return "the connection broke while reading the answer";
    case httplib::Error::Write:
      return "the connection broke while sending the request";
    case httplib::Error::SSLConnection:
      return "TLS connection failed";
    case httplib::Error::SSLServerVerification:
      return "TLS server verification failed";
    default:
      return httplib::to_string(e);
  }
}

struct HttpAnswer {
  int status = 0;
  std::string body;
};

std::string EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string(fallback);
}

// Splits "scheme://host:port/base" into "scheme://host:port" and "/base" (no trailing slash).
void SplitEndpoint(const std::string& endpoint, std::string* origin, std::string* base_path) {
  std::string e = endpoint;
  if (e.find("://") == std::string::npos) e = "http://" + e;
  size_t host_start = e.find("://") + 3;
  size_t slash = e.find('/', host_start);
  if (slash == std::string::npos) {
    *origin = e;
    base_path->clear();
  } else {
    *origin = e.substr(0, slash);
    *base_path = e.substr(slash);
  }
  while (!base_path->empty() && base_path->back() == '/') base_path->pop_back();
}

// Text of a JSON value that should be a string; numbers are accepted too (insertId, int64).
std::string StringOf(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (j.is_number_unsigned()) return std::to_string(j.get<uint64_t>());
  if (j.is_number()) return j.dump();
  return "";
}

std::string LabelOf(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  return StringOf(*it);
}

bool HasLabel(const json& obj, const char* key) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

LogEntry DecodeLogEntry(const json& e) {
  LogEntry out;
  out.insert_id = e.contains("insertId") ? StringOf(e["insertId"]) : "";
  out.timestamp = e.contains("timestamp") ? StringOf(e["timestamp"]) : "";
  std::string severity = e.contains("severity") ? StringOf(e["severity"]) : "";
  out.severity = severity.empty() ? "DEFAULT" : severity;

  const json empty = json::object();
  const json& labels = e.contains("labels") && e["labels"].is_object() ? e["labels"] : empty;
  const json* resource_labels = &empty;
  if (e.contains("resource") && e["resource"].is_object() && e["resource"].contains("labels") &&
      e["resource"]["labels"].is_object()) {
    resource_labels = &e["resource"]["labels"];
  }
  if (HasLabel(*resource_labels, "task_name")) {
    out.task_name = LabelOf(*resource_labels, "task_name");
  } else if (HasLabel(labels, "task_name")) {
    out.task_name = LabelOf(labels, "task_name");
  } else if (HasLabel(labels, "ml.googleapis.com/task_name")) {
    out.task_name = LabelOf(labels, "ml.googleapis.com/task_name");
  } else {
    out.task_name = "unknown_task";
  }
  if (HasLabel(labels, "trial_id")) {
    out.trial_id = LabelOf(labels, "trial_id");
  } else if (HasLabel(labels, "ml.googleapis.com/trial_id")) {
    out.trial_id = LabelOf(labels, "ml.googleapis.com/trial_id");
  }
  if (e.contains("jsonPayload") && e["jsonPayload"].is_object()) {
    const json& p = e["jsonPayload"];
    if (p.contains("message") && p["message"].is_string()) out.message = p["message"];
  } else if (e.contains("textPayload")) {
    out.message = StringOf(e["textPayload"]);
  }
  return out;
}

}  // namespace

StatusCode StatusCodeFromName(std::string_view name) {
  static const std::pair<const char*, StatusCode> kNames[] = {
      {"OK", StatusCode::kOk},
      {"CANCELLED", StatusCode::kCancelled},
      {"UNKNOWN", StatusCode::kUnknown},
      {"INVALID_ARGUMENT", StatusCode::kInvalidArgument},
      {"DEADLINE_EXCEEDED", StatusCode::kDeadlineExceeded},
      {"NOT_FOUND", StatusCode::kNotFound},
      {"ALREADY_EXISTS", StatusCode::kAlreadyExists},
      {"PERMISSION_DENIED", StatusCode::kPermissionDenied},
      {"RESOURCE_EXHAUSTED", StatusCode::kResourceExhausted},
      {"FAILED_PRECONDITION", StatusCode::kFailedPrecondition},
      {"ABORTED", StatusCode::kAborted},
      {"OUT_OF_RANGE", StatusCode::kOutOfRange},
      {"UNIMPLEMENTED", StatusCode::kUnimplemented},
      {"INTERNAL", StatusCode::kInternal},
      {"UNAVAILABLE", StatusCode::kUnavailable},
      {"DATA_LOSS", StatusCode::kDataLoss},
      {"UNAUTHENTICATED", StatusCode::kUnauthenticated},
  };
  for (const auto& [n, c] : kNames) {
    if (name == n) return c;
  }
  return StatusCode::kUnknown;
}

StatusCode StatusCodeFromHttp(int http_status) {
  switch (http_status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kAlreadyExists;
    case 412:
      return StatusCode::kFailedPrecondition;
    case 429:
      return StatusCode::kResourceExhausted;
    case 499:
      return StatusCode::kCancelled;
    case 501:
      return StatusCode::kUnimplemented;
    case 503:
      return StatusCode::kUnavailable;
    case 504:
      return StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  if (http_status >= 200 && http_status < 300) return StatusCode::kOk;
  if (http_status >= 500) return StatusCode::kInternal;
  if (http_status >= 400) return StatusCode::kFailedPrecondition;
  return StatusCode::kUnknown;
}

bool IsConnectionError(const Status& status) {
  return status.code() == StatusCode::kUnavailable &&
         status.message().rfind(kConnectionErrorMarker, 0) == 0;
}

ClientOptions OptionsFromEnvironment() {
  ClientOptions o;
  o.endpoint = EnvOr("TRAINYARD_ENDPOINT", kDefaultEndpoint);
  o.project = EnvOr("TRAINYARD_PROJECT", kDefaultProject);
  o.token = EnvOr("TRAINYARD_TOKEN", "");
  if (o.token.empty()) {
    std::string file = EnvOr("TRAINYARD_TOKEN_FILE", "");
    if (!file.empty()) {
      if (auto text = ReadFile(file); text.ok()) o.token = Trim(text->substr(0, text->find('\n')));
    }
  }
  return o;
}

struct Client::Impl {
  std::string origin;
  std::string base_path;
  std::unique_ptr<httplib::Client> http;
  httplib::Headers headers;

  // One HTTP exchange. Transport failures become UNAVAILABLE (IsConnectionError); any answer,
  // error or not, is returned as is.
  Result<HttpAnswer> Send(const std::string& method, const std::string& path,
                          const std::string* body, const std::string& content_type) {
    if (!http || !http->is_valid()) {
      return Status(StatusCode::kInvalidArgument,
                    "invalid endpoint '" + origin + "': expected http://HOST:PORT");
    }
    std::string full = base_path + path;
    httplib::Result r = [&]() -> httplib::Result {
      if (method == "GET") return http->Get(full, headers);
      if (method == "POST") return http->Post(full, headers, body ? *body : "", content_type);
      if (method == "PUT") return http->Put(full, headers, body ? *body : "", content_type);
      if (method == "PATCH") return http->Patch(full, headers, body ? *body : "", content_type);
      return http->Delete(full, headers);
    }();
    if (!r) {
      return ConnectionError(r.error());
    }
    return HttpAnswer{r->status, r->body};
  }

  // The daemon could not be reached (IsConnectionError recognises the message).
  Status ConnectionError(httplib::Error e) const {
    return Status(StatusCode::kUnavailable,
                  std::string(kConnectionErrorMarker) + origin + ": " + DescribeTransportError(e) +
                      ". Is the daemon running? Start it with `trainyardd`, or point "
                      "--endpoint or TRAINYARD_ENDPOINT at a running daemon.");
  }

  // A GET whose 2xx body goes to `sink` piece by piece as it arrives (a download of any
  // size); error answers become a Status as in Call. `sink` returning false stops it
  // (CANCELLED).
  Status Stream(const std::string& path, const std::function<bool(std::string_view)>& sink) {
    if (!http || !http->is_valid()) {
      return Status(StatusCode::kInvalidArgument,
                    "invalid endpoint '" + origin + "': expected http://HOST:PORT");
    }
    int status = 0;
    std::string error_body;
    bool stopped = false;
    httplib::Result r = http->Get(
        base_path + path, headers,
        [&](const httplib::Response& res) {
          status = res.status;
          return true;
        },
        [&](const char* data, size_t size) {
          if (status < 200 || status >= 300) {
            if (error_body.size() < (1 << 20)) error_body.append(data, size);
            return true;
          }
          if (!sink(std::string_view(data, size))) stopped = true;
          return !stopped;
        });
    if (stopped) return Status(StatusCode::kCancelled, "the download was stopped");
    if (!r) {
      return ConnectionError(r.error());
    }
    if (status >= 200 && status < 300) return Status::Ok();
    return ErrorOf(HttpAnswer{status, std::move(error_body)}).status();
  }

  // Send + error mapping: non-2xx answers become a Status from the Google error body.
  Result<std::string> Call(const std::string& method, const std::string& path,
                           const std::string* body = nullptr,
                           const std::string& content_type = "application/json") {
    TRAINYARD_ASSIGN_OR_RETURN(HttpAnswer a, Send(method, path, body, content_type));
    return ErrorOf(std::move(a));
  }

  static Result<std::string> ErrorOf(HttpAnswer a) {
    if (a.status >= 200 && a.status < 300) return std::move(a.body);
    StatusCode code = StatusCodeFromHttp(a.status);
    std::string message;
    json err = json::parse(a.body, nullptr, /*allow_exceptions=*/false);
    if (err.is_object() && err.contains("error") && err["error"].is_object()) {
      const json& e = err["error"];
      if (e.contains("status") && e["status"].is_string()) {
        StatusCode named = StatusCodeFromName(e["status"].get<std::string>());
        if (named != StatusCode::kUnknown || e["status"] == "UNKNOWN") code = named;
      }
      if (e.contains("message") && e["message"].is_string()) message = e["message"];
    }
    if (message.empty()) {
      message = "HTTP " + std::to_string(a.status);
      std::string text = a.body.substr(0, 200);
      if (!text.empty()) message += ": " + text;
    }
    if (code == StatusCode::kOk) code = StatusCode::kUnknown;
    return Status(code, message);
  }
};

namespace {

Result<json> ParseObject(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(StatusCode::kInternal,
                  "the daemon answered with invalid JSON: " + text.substr(0, 200));
  }
  return j;
}

}  // namespace

Client::Client(ClientOptions options) : options_(std::move(options)), impl_(new Impl) {
  SplitEndpoint(options_.endpoint, &impl_->origin, &impl_->base_path);
  impl_->http = std::make_unique<httplib::Client>(impl_->origin);
  impl_->http->set_connection_timeout(options_.connect_timeout_s, 0);
  impl_->http->set_read_timeout(options_.read_timeout_s, 0);
  impl_->http->set_write_timeout(options_.write_timeout_s, 0);
  impl_->http->set_keep_alive(true);
  impl_->http->set_tcp_nodelay(true);  // see the API server: avoids ~40 ms per request
  impl_->headers.emplace("User-Agent", "trainyard-client");
  if (!options_.token.empty()) {
    impl_->headers.emplace("Authorization", "Bearer " + options_.token);
  }
}

Client::~Client() = default;

namespace {
std::string JobsPath(const ClientOptions& o) {
  return "/v1/projects/" + PercentEncode(o.project) + "/jobs";
}
}  // namespace

Result<std::string> Client::CreateJob(std::string_view job_json) {
  std::string body(job_json);
  return impl_->Call("POST", JobsPath(options_), &body);
}

Result<std::string> Client::GetJob(std::string_view job_id) {
  return impl_->Call("GET", JobsPath(options_) + "/" + PercentEncode(job_id));
}

Result<JobPage> Client::ListJobs(std::string_view filter, int page_size,
                                 std::string_view page_token, std::string_view order_by) {
  std::string path = JobsPath(options_);
  std::string sep = "?";
  if (!filter.empty()) {
    path += sep + "filter=" + PercentEncode(filter);
    sep = "&";
  }
  if (page_size > 0) {
    path += sep + "pageSize=" + std::to_string(page_size);
    sep = "&";
  }
  if (!page_token.empty()) {
    path += sep + "pageToken=" + PercentEncode(page_token);
    sep = "&";
  }
  if (!order_by.empty()) path += sep + "orderBy=" + PercentEncode(order_by);
  TRAINYARD_ASSIGN_OR_RETURN(std::string text, impl_->Call("GET", path));
  TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(text));
  JobPage page;
  if (j.contains("jobs") && j["jobs"].is_array()) {
    for (const auto& job : j["jobs"]) page.jobs.push_back(job.dump());
  }
  if (j.contains("nextPageToken") && j["nextPageToken"].is_string()) {
    page.next_page_token = j["nextPageToken"];
  }
  return page;
}

Status Client::CancelJob(std::string_view job_id) {
  std::string body = "{}";
  auto r = impl_->Call("POST", JobsPath(options_) + "/" + PercentEncode(job_id) + ":cancel", &body);
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::string> Client::PatchJobLabels(std::string_view job_id, std::string_view labels_json,
                                           std::string_view etag) {
  json labels = json::parse(labels_json, nullptr, /*allow_exceptions=*/false);
  if (labels.is_discarded() || !labels.is_object()) {
    return InvalidArgument("labels must be a JSON object");
  }
  json body = {{"labels", labels}};
  std::string mask = "labels";
  if (!etag.empty()) {
    body["etag"] = std::string(etag);
    mask += ",etag";
  }
  std::string text = body.dump();
  return impl_->Call(
      "PATCH",
      JobsPath(options_) + "/" + PercentEncode(job_id) + "?updateMask=" + PercentEncode(mask),
      &text);
}

Result<LogPage> Client::ListJobLogs(std::string_view job_id, const JobLogsRequest& r) {
  std::string path = JobsPath(options_) + "/" + PercentEncode(job_id) + "/logs";
  std::string sep = "?";
  auto add = [&](const char* name, std::string_view value) {
    path += sep + name + "=" + PercentEncode(value);
    sep = "&";
  };
  if (r.after_insert_id) {
    add("afterInsertId", r.after_insert_id->empty() ? "0" : *r.after_insert_id);
  } else {
    if (r.descending) add("orderBy", "timestamp desc");
    if (!r.page_token.empty()) add("pageToken", r.page_token);
  }
  if (!r.task_name.empty()) add("taskName", r.task_name);
  if (r.trial_id) add("trialId", *r.trial_id);
  if (!r.min_severity.empty()) add("minSeverity", r.min_severity);
  if (!r.start_time.empty()) add("startTime", r.start_time);
  if (r.page_size > 0) add("pageSize", std::to_string(r.page_size));
  TRAINYARD_ASSIGN_OR_RETURN(std::string text, impl_->Call("GET", path));
  TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(text));
  LogPage page;
  if (j.contains("entries") && j["entries"].is_array()) {
    for (const auto& e : j["entries"]) {
      if (!e.is_object()) continue;
      page.entries.push_back(DecodeLogEntry(e));
      page.entries.back().json = e.dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }
  if (j.contains("nextAfterInsertId")) page.next_after_insert_id = StringOf(j["nextAfterInsertId"]);
  if (j.contains("nextPageToken")) page.next_page_token = StringOf(j["nextPageToken"]);
  if (j.contains("snapshotInsertId")) page.snapshot_insert_id = StringOf(j["snapshotInsertId"]);
  return page;
}

Result<LogSearchPage> Client::SearchJobLogs(std::string_view job_id, const LogSearchRequest& r) {
  std::string path = JobsPath(options_) + "/" + PercentEncode(job_id) +
                     "/logs:search?text=" + PercentEncode(r.text) +
                     "&afterLineOffset=" + std::to_string(r.after_line_offset);
  if (r.page_size > 0) path += "&pageSize=" + std::to_string(r.page_size);
  if (r.match_case) path += "&matchCase=true";
  if (!r.task_name.empty()) path += "&taskName=" + PercentEncode(r.task_name);
  if (r.trial_id) path += "&trialId=" + PercentEncode(*r.trial_id);
  if (!r.snapshot_insert_id.empty()) {
    path += "&snapshotInsertId=" + PercentEncode(r.snapshot_insert_id);
  }
  TRAINYARD_ASSIGN_OR_RETURN(std::string text, impl_->Call("GET", path));
  TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(text));
  LogSearchPage page;
  if (j.contains("matches") && j["matches"].is_array()) {
    for (const auto& m : j["matches"]) {
      if (!m.is_object() || !m.contains("entry") || !m["entry"].is_object()) continue;
      LogMatch match;
      const std::string offset = m.contains("lineOffset") ? StringOf(m["lineOffset"]) : "";
      std::from_chars(offset.data(), offset.data() + offset.size(), match.line_offset);
      match.entry = DecodeLogEntry(m["entry"]);
      match.entry.json = m["entry"].dump(-1, ' ', false, json::error_handler_t::replace);
      page.matches.push_back(std::move(match));
    }
  }
  if (j.contains("snapshotInsertId")) page.snapshot_insert_id = StringOf(j["snapshotInsertId"]);
  return page;
}

Status Client::DownloadJobLogs(std::string_view job_id, const JobLogsRequest& r, bool message_only,
                               const std::function<bool(std::string_view)>& sink) {
  std::string path = JobsPath(options_) + "/" + PercentEncode(job_id) + "/logs:download";
  std::string sep = "?";
  auto add = [&](const char* name, std::string_view value) {
    path += sep + name + "=" + PercentEncode(value);
    sep = "&";
  };
  if (!r.task_name.empty()) add("taskName", r.task_name);
  if (r.trial_id) add("trialId", *r.trial_id);
  if (!r.min_severity.empty()) add("minSeverity", r.min_severity);
  if (message_only) add("format", "message");
  return impl_->Stream(path, sink);
}

Status Client::CreateBucket(std::string_view bucket) {
  std::string body = json{{"name", std::string(bucket)}}.dump();
  auto r = impl_->Call("POST", "/storage/v1/b?project=" + PercentEncode(options_.project), &body);
  return r.ok() ? Status::Ok() : r.status();
}

Result<bool> Client::BucketExists(std::string_view bucket) {
  auto r = impl_->Call("GET", "/storage/v1/b/" + PercentEncode(bucket));
  if (r.ok()) return true;
  if (r.status().code() == StatusCode::kNotFound) return false;
  return r.status();
}

Result<std::vector<std::string>> Client::ListBuckets() {
  std::vector<std::string> names;
  std::string token;
  do {
    std::string path = "/storage/v1/b?project=" + PercentEncode(options_.project);
    if (!token.empty()) path += "&pageToken=" + PercentEncode(token);
    TRAINYARD_ASSIGN_OR_RETURN(std::string text, impl_->Call("GET", path));
    TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(text));
    if (j.contains("items") && j["items"].is_array()) {
      for (const auto& b : j["items"]) {
        if (b.is_object() && b.contains("name")) names.push_back(StringOf(b["name"]));
      }
    }
    token = j.contains("nextPageToken") ? StringOf(j["nextPageToken"]) : "";
  } while (!token.empty());
  return names;
}

Result<std::string> Client::UploadObject(std::string_view bucket, std::string_view object,
                                         std::string_view data) {
  std::string body(data);
  return impl_->Call("POST",
                     "/upload/storage/v1/b/" + PercentEncode(bucket) +
                         "/o?uploadType=media&name=" + PercentEncode(object),
                     &body, "application/octet-stream");
}

Result<std::vector<std::string>> Client::ListObjects(std::string_view bucket,
                                                     std::string_view prefix) {
  std::vector<std::string> names;
  std::string token;
  do {
    std::string path = "/storage/v1/b/" + PercentEncode(bucket) + "/o";
    std::string sep = "?";
    if (!prefix.empty()) {
      path += sep + "prefix=" + PercentEncode(prefix);
      sep = "&";
    }
    if (!token.empty()) path += sep + "pageToken=" + PercentEncode(token);
    TRAINYARD_ASSIGN_OR_RETURN(std::string text, impl_->Call("GET", path));
    TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(text));
    if (j.contains("items") && j["items"].is_array()) {
      for (const auto& o : j["items"]) {
        if (o.is_object() && o.contains("name")) names.push_back(StringOf(o["name"]));
      }
    }
    token = j.contains("nextPageToken") ? StringOf(j["nextPageToken"]) : "";
  } while (!token.empty());
  return names;
}

Result<std::string> Client::DownloadObject(std::string_view bucket, std::string_view object) {
  return impl_->Call("GET", "/storage/v1/b/" + PercentEncode(bucket) + "/o/" +
                                PercentEncode(object) + "?alt=media");
}

namespace {
Result<bool> PausedFrom(Result<std::string> r) {
  if (!r.ok()) return r.status();
  TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(*r));
  if (!j.contains("paused") || !j["paused"].is_boolean()) {
    return Status(StatusCode::kInternal, "the daemon's admission answer has no 'paused' field");
  }
  return j["paused"].get<bool>();
}
}  // namespace

Result<bool> Client::GetAdmissionPaused() {
  return PausedFrom(impl_->Call("GET", "/v1/admin/admission"));
}

Result<std::string> Client::CallJson(std::string_view method, std::string_view path,
                                     std::string_view body) {
  std::string b(body);
  return impl_->Call(std::string(method), std::string(path), body.empty() ? nullptr : &b);
}

Result<bool> Client::SetAdmissionPaused(bool paused) {
  std::string body = json{{"paused", paused}}.dump();
  return PausedFrom(impl_->Call("PUT", "/v1/admin/admission", &body));
}

Status Client::DeleteObject(std::string_view bucket, std::string_view object) {
  return impl_
      ->Call("DELETE", "/storage/v1/b/" + PercentEncode(bucket) + "/o/" + PercentEncode(object))
      .status();
}

Result<std::string> Client::RunGc(bool dry_run) {
  std::string body = json{{"dryRun", dry_run}}.dump();
  return impl_->Call("POST", "/v1/admin/gc", &body);
}

Result<std::string> Client::Purge(std::string_view finished_before, bool dry_run) {
  std::string body =
      json{{"finishedBefore", std::string(finished_before)}, {"dryRun", dry_run}}.dump();
  return impl_->Call("POST", "/v1/admin/purge", &body);
}

}  // namespace trainyard::client
