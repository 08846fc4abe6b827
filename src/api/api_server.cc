#include "trainyard/api/api_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "api_util.h"
#include "console_api.h"
#include "discovery.h"
#include "field_mask.h"
#include "http_cache.h"
#include "http_server.h"
#include "iam_api.h"
#include "logging_api.h"
#include "routes.h"
#include "trainyard/console/console.h"
#include "trainyard/core/etag.h"
#include "trainyard/core/log.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/model/filter.h"
#include "trainyard/model/job_json.h"
#include "trainyard/storage/storage_http.h"

namespace trainyard::api {

using nlohmann::json;

namespace {

constexpr const char* kLog = "api";

// Request bodies above this are refused with 413 before they are read, except on the storage
// upload routes, which stream objects of any size to disk.
constexpr uint64_t kMaxApiBody = 8 << 20;
// How long a console session lasts (docs/security.md "The console").
constexpr int64_t kSessionSeconds = 12 * 3600;

// Latency histogram buckets (seconds), Prometheus convention.
constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                             0.05,   0.1,   0.25,   0.5,   1.0,  2.5};

struct RouteMetrics {
  std::map<int, uint64_t> by_code;
  std::array<uint64_t, kBuckets.size()> buckets{};
  uint64_t count = 0;
  double sum = 0;
};

// A Prometheus label value: backslash and double quote escaped (route patterns are regexes).
std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

class Metrics {
 public:
  void Record(const std::string& route, const std::string& method, int code, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& m = routes_[{method, route}];
    m.by_code[code]++;
    m.count++;
    m.sum += seconds;
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      if (seconds <= kBuckets[i]) m.buckets[i]++;
    }
  }
  void Render(std::ostringstream& out) {
    std::lock_guard<std::mutex> lock(mu_);
    out << "# HELP trainyard_api_requests_total API requests by route, method and HTTP code.\n"
        << "# TYPE trainyard_api_requests_total counter\n";
    for (const auto& [key, m] : routes_) {
      for (const auto& [code, n] : m.by_code) {
        out << "trainyard_api_requests_total{method=\"" << key.first << "\",route=\""
            << EscapeLabel(key.second) << "\",code=\"" << code << "\"} " << n << "\n";
      }
    }
    out << "# HELP trainyard_api_request_duration_seconds API request latency.\n"
        << "# TYPE trainyard_api_request_duration_seconds histogram\n";
    for (const auto& [key, m] : routes_) {
      std::string labels = "method=\"" + key.first + "\",route=\"" + EscapeLabel(key.second) + "\"";
      for (size_t i = 0; i < kBuckets.size(); ++i) {
        out << "trainyard_api_request_duration_seconds_bucket{" << labels << ",le=\"" << kBuckets[i]
            << "\"} " << m.buckets[i] << "\n";
      }
      out << "trainyard_api_request_duration_seconds_bucket{" << labels << ",le=\"+Inf\"} "
          << m.count << "\n";
      out << "trainyard_api_request_duration_seconds_sum{" << labels << "} " << m.sum << "\n";
      out << "trainyard_api_request_duration_seconds_count{" << labels << "} " << m.count << "\n";
    }
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, RouteMetrics> routes_;
};

// JSON text that never throws: bytes that are not UTF-8 (a percent-decoded path, say) are
// replaced rather than aborting the request.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// google.rpc.Status JSON error body with the canonical HTTP status (compat §0).
void WriteError(httplib::Response& res, const Status& st) {
  json err = {{"code", HttpStatusForCode(st.code())},
              {"message", st.message()},
              {"status", StatusCodeName(st.code())}};
  json details = json::array();
  if (!st.violations().empty()) {
    json fv = json::array();
    for (const auto& v : st.violations())
      fv.push_back({{"field", v.field}, {"description", v.description}});
    details.push_back(
        {{"@type", "type.googleapis.com/google.rpc.BadRequest"}, {"fieldViolations", fv}});
  }
  if (!details.empty()) err["details"] = details;
  res.status = HttpStatusForCode(st.code());
  res.set_content(Dump(json{{"error", err}}), "application/json; charset=UTF-8");
}

void WriteJson(httplib::Response& res, const std::string& body) {
  res.status = 200;
  res.set_content(body, "application/json; charset=UTF-8");
}

// A handler's JSON answer, or its error.
void WriteResult(httplib::Response& res, const Result<std::string>& body) {
  if (!body.ok()) return WriteError(res, body.status());
  WriteJson(res, *body);
}

Result<int64_t> ParseIntParam(const httplib::Request& req, const char* name, int64_t def) {
  if (!req.has_param(name)) return def;
  std::string v = req.get_param_value(name);
  int64_t out = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("Invalid value for ") + name + ": \"" + v + "\" is not an integer")
        .AddViolation(name, "must be an integer");
  }
  return out;
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The body limit of a request, known from its path before any body byte is read.
uint64_t BodyLimit(const httplib::Request& req) {
  if (StartsWith(req.path, "/upload/storage/v1/") ||
      StartsWith(req.path, "/resumable/upload/storage/v1/")) {
    return std::numeric_limits<uint64_t>::max();
  }
  return kMaxApiBody;
}

// The answer to a request refused before its handler: 413 (body over the limit), 411 or 400
// (bad framing), with a google.rpc.Status body.
void RefuseBody(const httplib::Request&, httplib::Response& res, int status,
                const std::string& message) {
  json err = {{"code", status}, {"message", message}, {"status", "INVALID_ARGUMENT"}};
  res.status = status;
  res.set_content(Dump(json{{"error", err}}), "application/json; charset=UTF-8");
}

}  // namespace

// Every handler of the route table; owns what they share.
class Handlers {
 public:
  Handlers(const ApiOptions& options, scheduler::JobService& s, store::JobStore& st)
      : options_(options), scheduler_(s), store_(st) {}

  void CreateJob(const httplib::Request& req, httplib::Response& res) {
    std::string project = req.matches[1];
    auto job = model::ParseJobForCreate(req.body, project, caps_);
    if (!job.ok()) return WriteError(res, job.status());
    if (Status st = CheckServiceAccount(project, JobServiceAccount(*job)); !st.ok()) {
      return WriteError(res, st);
    }
    Status runnable = scheduler_.CheckRunnable(*job);
    if (!runnable.ok()) return WriteError(res, runnable);
    auto stored = scheduler_.Submit(std::move(job).value());
    if (!stored.ok()) return WriteError(res, stored.status());
    // The creator owns the job (compat §13.3).
    if (auth_ != nullptr && context_.authenticated && !context_.principal.email.empty()) {
      auto owned = auth_->PutPolicy(auth::JobResource(project, stored->job_id),
                                    auth::CreatorPolicy(context_.principal.member()));
      if (!owned.ok()) {
        TY_LOG_ERROR(kLog, "job {}/{}: cannot bind roles/ml.jobOwner to {}: {}", project,
                     stored->job_id, context_.principal.email, owned.status().message());
      }
    }
    WriteJson(res, model::JobToJson(*stored));
  }

  static std::string JobServiceAccount(const model::Job& job) {
    json ti = json::parse(job.training_input_json, nullptr, false);
    if (!ti.is_object() || !ti.contains("serviceAccount") || !ti["serviceAccount"].is_string()) {
      return "";
    }
    return ti["serviceAccount"].get<std::string>();
  }

  // A job that names trainingInput.serviceAccount runs as it (compat §13.3): with
  // authentication on, the account must be a Trainyard service account and the caller must
  // hold iam.serviceAccounts.actAs on the project (roles/iam.serviceAccountUser).
  Status CheckServiceAccount(const std::string& project, const std::string& account) {
    if (account.empty() || !options_.auth || auth_ == nullptr) return Status::Ok();
    auto sa = auth_->GetPrincipal(account);
    if (!sa.ok() || sa->kind != auth::PrincipalKind::kServiceAccount || sa->disabled) {
      return Status(StatusCode::kInvalidArgument,
                    "Service account " + account +
                        " does not exist or is disabled (trainyard admin principals create " +
                        account + " --service-account).")
          .AddViolation("trainingInput.serviceAccount", "an enabled Trainyard service account");
    }
    if (!Allowed(context_.principal, auth::ProjectResource(project), "",
                 "iam.serviceAccounts.actAs")) {
      return Status(StatusCode::kPermissionDenied,
                    "Permission 'iam.serviceAccounts.actAs' denied on service account " + account +
                        " (roles/iam.serviceAccountUser on project " + project + ").");
    }
    return Status::Ok();
  }

  void GetJob(const httplib::Request& req, httplib::Response& res) {
    auto job = scheduler_.GetJob(req.matches[1], req.matches[2]);
    if (!job.ok()) return WriteError(res, job.status());
    WriteJson(res, model::JobToJson(*job));
  }

  void ListJobs(const httplib::Request& req, httplib::Response& res) {
    auto page_size = ParseIntParam(req, "pageSize", 20);
    if (!page_size.ok()) return WriteError(res, page_size.status());
    // proto3 int32: 0 is unset (the default, 20); more than 100 is read as 100 (compat §5.1).
    int64_t ps = *page_size;
    if (ps < 0) {
      return WriteError(res, Status(StatusCode::kInvalidArgument,
                                    "Invalid value for pageSize: " + std::to_string(ps) +
                                        " (must not be negative)")
                                 .AddViolation("pageSize", "must not be negative"));
    }
    if (ps == 0) ps = 20;
    if (ps > 100) ps = 100;
    std::unique_ptr<model::Filter> filter;
    if (req.has_param("filter")) {
      auto f = model::ParseFilter(req.get_param_value("filter"));
      if (!f.ok()) return WriteError(res, f.status());
      filter = std::move(f).value();
    }
    store::ListJobsRequest lr;
    lr.project = req.matches[1];
    lr.filter = filter.get();
    if (filter) lr.filter_text = req.get_param_value("filter");
    lr.page_size = static_cast<int>(ps);
    lr.page_token = req.has_param("pageToken") ? req.get_param_value("pageToken") : "";
    // orderBy: a Trainyard extension (docs/api.md; AI Platform lists newest first only, compat
    // §5.1).
    if (req.has_param("orderBy")) {
      auto order = ParseJobOrder(req.get_param_value("orderBy"));
      if (!order.ok()) return WriteError(res, order.status());
      lr.order = *order;
    }
    auto page = store_.ListJobs(lr);
    if (!page.ok()) return WriteError(res, page.status());
    if (page->jobs.empty() && page->next_page_token.empty()) return WriteJson(res, "{}");
    scheduler_.FillLiveFields(page->jobs);
    std::string body = "{\"jobs\":[";
    for (size_t i = 0; i < page->jobs.size(); ++i) {
      if (i) body += ',';
      body += model::JobToJson(page->jobs[i]);
    }
    body += "]";
    if (!page->next_page_token.empty()) {
      body += ",\"nextPageToken\":" + Dump(json(page->next_page_token));
    }
    body += "}";
    WriteJson(res, body);
  }

  void CancelJob(const httplib::Request& req, httplib::Response& res) {
    Status st = scheduler_.Cancel(req.matches[1], req.matches[2]);
    if (!st.ok()) return WriteError(res, st);
    WriteJson(res, "{}");
  }

  void PatchJob(const httplib::Request& req, httplib::Response& res) {
    std::string mask = req.has_param("updateMask")    ? req.get_param_value("updateMask")
                       : req.has_param("update_mask") ? req.get_param_value("update_mask")
                                                      : "";
    auto patch = model::ParseJobPatch(req.body, mask);
    if (!patch.ok()) return WriteError(res, patch.status());
    if (patch->etag_in_mask && patch->etag.empty()) {
      return WriteError(res, Status(StatusCode::kInvalidArgument,
                                    "updateMask names etag but the request has no etag")
                                 .AddViolation("etag", "required when the update mask names it"));
    }
    auto job = scheduler_.UpdateLabels(req.matches[1], req.matches[2], patch->labels, patch->etag,
                                       !patch->etag.empty());
    if (!job.ok()) return WriteError(res, job.status());
    WriteJson(res, model::JobToJson(*job));
  }

  void JobLogs(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::ListJobLogs(store_, req.matches[1], req.matches[2], req.params));
  }

  // The web console's additions (console_api.h).
  void JobsSummary(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::JobsSummary(store_, req.matches[1]));
  }
  void LogsSummary(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::LogsSummary(store_, req.matches[1], req.matches[2], req.params));
  }
  void LogLines(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::LogLines(store_, req.matches[1], req.matches[2], req.params));
  }
  void JobTrials(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::TrialsPage(scheduler_, req.matches[1], req.matches[2], req.params));
  }
  void JobHistory(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::StateHistory(store_, req.matches[1], req.matches[2], req.params));
  }
  void JobsQueue(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::QueuePage(scheduler_, req.matches[1], req.params));
  }

  void SearchLogs(const httplib::Request& req, httplib::Response& res) {
    WriteResult(res, api::SearchLogs(store_, req.matches[1], req.matches[2], req.params));
  }
  // Streams the text as the store yields it, batch by batch (console_api.h).
  void DownloadLogs(const httplib::Request& req, httplib::Response& res) {
    auto started = LogDownload::Start(store_, req.matches[1], req.matches[2], req.params);
    if (!started.ok()) return WriteError(res, started.status());
    auto download = std::make_shared<LogDownload>(std::move(started).value());
    // Identity, never httplib's own compression: it would brotli-compress each chunk of text at
    // the highest quality (docs/console.md "How it is served"). The Request is httplib's own
    // non-const object.
    const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
    res.set_header("Content-Disposition", "attachment; filename=\"" + download->file_name() + "\"");
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Content-Type-Options", "nosniff");
    const std::string what = req.path;
    res.set_chunked_content_provider(
        "text/plain; charset=utf-8", [download, what](size_t, httplib::DataSink& sink) {
          auto piece = download->Next();
          if (!piece.ok()) {
            // The answer is cut short (no final chunk): the client sees an incomplete body.
            TY_LOG_ERROR(kLog, "{}: {}", what, piece.status().message());
            return false;
          }
          if (piece->empty()) {
            sink.done();
            return true;
          }
          return sink.write(piece->data(), piece->size());
        });
  }

  void ListLogEntries(const httplib::Request& req, httplib::Response& res) {
    // The audit log (docs/security.md): entries of the project's cloudaudit log.
    auto target = ParseLogListTarget(req.body);
    if (target.ok() && target->filter.find("cloudaudit.googleapis.com") != std::string::npos) {
      if (auth_ == nullptr) return WriteJson(res, "{}");
      auto page = ListAuditEntries(*auth_, target->project, target->page_token, target->page_size);
      if (!page.ok()) return WriteError(res, page.status());
      return WriteJson(res, *page);
    }
    WriteResult(res, api::ListLogEntries(store_, req.body));
  }

  void Discovery(const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("version") && req.get_param_value("version") != "v1") {
      return WriteError(res, NotFound("Discovery document not found for API service: ml "
                                      "version " +
                                      req.get_param_value("version")));
    }
    std::string host = req.get_header_value("Host");
    if (host.empty() || host.find_first_of("/ \"\\") != std::string::npos) {
      host = options_.host + ":" + std::to_string(options_.port);
    }
    std::string root = std::string(req.ssl != nullptr ? "https://" : "http://") + host + "/";
    WriteJson(res, BuildDiscoveryDocument(Routes(), root));
  }

  // --- projects (compat §5.2) --------------------------------------------------------------

  void GetConfig(const httplib::Request& req, httplib::Response& res) {
    WriteJson(res, GetConfigJson(std::string(req.matches[1])));
  }

  std::vector<std::string> Accelerators() {
    std::vector<std::string> out;
    for (const auto& g : scheduler_.node().gpus) out.push_back(g.type);
    return out;
  }

  void ListLocations(const httplib::Request& req, httplib::Response& res) {
    auto page_size = ParseIntParam(req, "pageSize", 20);
    if (!page_size.ok()) return WriteError(res, page_size.status());
    auto acc = Accelerators();
    WriteJson(res, ListLocationsJson(std::string(req.matches[1]), acc));
  }

  void GetLocation(const httplib::Request& req, httplib::Response& res) {
    auto acc = Accelerators();
    WriteResult(res,
                GetLocationJson(std::string(req.matches[1]), std::string(req.matches[2]), acc));
  }

  // Training jobs never use operations (compat §5.2): the list is empty and none exists.
  void ListOperations(const httplib::Request& req, httplib::Response& res) {
    auto page_size = ParseIntParam(req, "pageSize", 0);
    if (!page_size.ok()) return WriteError(res, page_size.status());
    WriteJson(res, "{}");
  }

  void GetOperation(const httplib::Request& req, httplib::Response& res) {
    WriteError(res, NotFound("Operation projects/" + std::string(req.matches[1]) + "/operations/" +
                             std::string(req.matches[2]) + " not found"));
  }

  // --- IAM: jobs, projects, buckets ------------------------------------------------------

  // The policy a route's resource answers with: NOT_FOUND for a job that does not exist (the
  // caller holds the permission, so existence is not a secret to them).
  Status CheckJobExists(const httplib::Request& req) {
    auto job = scheduler_.GetJob(req.matches[1], req.matches[2]);
    return job.ok() ? Status::Ok() : job.status();
  }

  void GetJobIamPolicy(const httplib::Request& req, httplib::Response& res) {
    if (Status st = CheckJobExists(req); !st.ok()) return WriteError(res, st);
    if (Status st = CheckRequestedVersion(req); !st.ok()) return WriteError(res, st);
    WriteJson(res, auth::PolicyToJson(auth_->GetPolicy(auth::JobResource(
                       std::string(req.matches[1]), std::string(req.matches[2])))));
  }

  void SetJobIamPolicy(const httplib::Request& req, httplib::Response& res) {
    if (Status st = CheckJobExists(req); !st.ok()) return WriteError(res, st);
    SetPolicy(auth::JobResource(std::string(req.matches[1]), std::string(req.matches[2])),
              auth::ResourceKind::kJob, req, res);
  }

  void TestJobIamPermissions(const httplib::Request& req, httplib::Response& res) {
    const std::string project = req.matches[1];
    // A job that does not exist: the empty set, not 404 (compat §5.1).
    bool exists = scheduler_.GetJob(project, req.matches[2]).ok();
    TestPermissions(req, res, exists ? auth::ProjectResource(project) : "",
                    exists ? auth::JobResource(project, std::string(req.matches[2])) : "");
  }

  void GetProjectIamPolicy(const httplib::Request& req, httplib::Response& res) {
    WriteJson(res, auth::PolicyToJson(
                       auth_->GetPolicy(auth::ProjectResource(std::string(req.matches[1])))));
  }

  void SetProjectIamPolicy(const httplib::Request& req, httplib::Response& res) {
    SetPolicy(auth::ProjectResource(std::string(req.matches[1])), auth::ResourceKind::kProject, req,
              res);
  }

  void TestProjectIamPermissions(const httplib::Request& req, httplib::Response& res) {
    TestPermissions(req, res, auth::ProjectResource(std::string(req.matches[1])), "");
  }

  void GetBucketIamPolicy(const httplib::Request& req, httplib::Response& res) {
    const std::string bucket = req.matches[1];
    if (auto b = buckets_->GetBucket(bucket); !b.ok()) return WriteError(res, b.status());
    WriteJson(res, BucketPolicyJson(bucket, auth_->GetPolicy(auth::BucketResource(bucket))));
  }

  void SetBucketIamPolicy(const httplib::Request& req, httplib::Response& res) {
    const std::string bucket = req.matches[1];
    if (auto b = buckets_->GetBucket(bucket); !b.ok()) return WriteError(res, b.status());
    auto request = ParseBucketPolicyRequest(req.body);
    if (!request.ok()) return WriteError(res, request.status());
    auto policy = auth_->SetPolicy(auth::BucketResource(bucket), *request);
    if (!policy.ok()) return WriteError(res, policy.status());
    WriteJson(res, BucketPolicyJson(bucket, *policy));
  }

  void TestBucketIamPermissions(const httplib::Request& req, httplib::Response& res) {
    const std::string bucket = req.matches[1];
    auto b = buckets_->GetBucket(bucket);
    std::vector<std::string> asked;
    for (auto [it, end] = req.params.equal_range("permissions"); it != end; ++it) {
      asked.push_back(it->second);
    }
    json granted = json::array();
    if (b.ok()) {
      const std::string project = b->project.empty() ? options_.default_project : b->project;
      for (const auto& p : asked) {
        if (Allowed(context_.principal, auth::ProjectResource(project),
                    auth::BucketResource(bucket), p)) {
          granted.push_back(p);
        }
      }
    }
    json out = {{"kind", "storage#testIamPermissionsResponse"}};
    if (!granted.empty()) out["permissions"] = granted;
    WriteJson(res, Dump(out));
  }

  Status CheckRequestedVersion(const httplib::Request& req) {
    for (const char* name : {"options.requestedPolicyVersion", "optionsRequestedPolicyVersion"}) {
      if (!req.has_param(name)) continue;
      std::string v = req.get_param_value(name);
      if (v != "0" && v != "1" && v != "3") {
        return Status(StatusCode::kInvalidArgument,
                      "Invalid value for options.requestedPolicyVersion: \"" + v + "\" (0, 1 or 3)")
            .AddViolation("options.requestedPolicyVersion", "must be 0, 1 or 3");
      }
    }
    return Status::Ok();
  }

  void SetPolicy(const std::string& resource, auth::ResourceKind kind, const httplib::Request& req,
                 httplib::Response& res) {
    auto request = auth::ParseSetPolicyRequest(req.body, kind);
    if (!request.ok()) return WriteError(res, request.status());
    auto policy = auth_->SetPolicy(resource, *request);
    if (!policy.ok()) return WriteError(res, policy.status());
    WriteJson(res, auth::PolicyToJson(*policy));
  }

  // testIamPermissions: the subset of the asked permissions the caller holds.
  void TestPermissions(const httplib::Request& req, httplib::Response& res,
                       const std::string& project_resource, const std::string& resource) {
    auto asked = auth::ParseTestPermissionsRequest(req.body);
    if (!asked.ok()) return WriteError(res, asked.status());
    json granted = json::array();
    if (!project_resource.empty() || !resource.empty()) {
      for (const auto& p : *asked) {
        if (Allowed(context_.principal, project_resource, resource, p)) granted.push_back(p);
      }
    }
    WriteJson(res, granted.empty() ? "{}" : Dump(json{{"permissions", granted}}));
  }

  // --- the console's session (docs/security.md "The console") -----------------------------

  // Sign-in: the body's API token is checked, and a session token of its principal, valid for
  // kSessionSeconds, goes back as an HttpOnly cookie the console's scripts never see.
  void CreateSession(const httplib::Request& req, httplib::Response& res) {
    if (!options_.auth || auth_ == nullptr) {
      return WriteJson(res, R"({"authentication":false})");
    }
    if (req.get_header_value(kConsoleHeader) != "1" || !SessionCookieUsable(req)) {
      return WriteError(res, Status(StatusCode::kPermissionDenied,
                                    "Sign-in is accepted only from the console (the " +
                                        std::string(kConsoleHeader) + " header, same origin)."));
    }
    json j = json::parse(req.body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("token") || !j["token"].is_string()) {
      return WriteError(res, Status(StatusCode::kInvalidArgument,
                                    "Invalid JSON payload received: expected {\"token\": "
                                    "\"<Trainyard API token>\"}")
                                 .AddViolation("token", "a Trainyard API token (ty1....)"));
    }
    std::string token = j["token"].get<std::string>();
    if (token.size() > kMaxCredentialBytes) token.resize(kMaxCredentialBytes);
    const Timestamp now = NowMicros();
    auto principal = auth_->Authenticate(token, now);
    if (!principal.ok()) {
      WriteUnauthenticated(res, principal.status().message(), false, "console.sessions.create");
      return;
    }
    context_.principal = *principal;
    context_.authenticated = true;
    auto session = auth_->CreateToken(principal->email, now + kSessionSeconds * kMicrosPerSecond,
                                      "console session", now);
    if (!session.ok()) return WriteError(res, session.status());
    res.set_header("Set-Cookie",
                   SessionCookie(session->secret, kSessionSeconds, req.ssl != nullptr));
    res.set_header("Cache-Control", "no-store");
    WriteJson(res, SessionJson(*principal, session->info.expires));
  }

  // Who the console acts as ({"authentication": false} while authentication is off).
  void GetSession(const httplib::Request& req, httplib::Response& res) {
    if (!options_.auth || auth_ == nullptr) {
      return WriteJson(res, R"({"authentication":false})");
    }
    Timestamp expires = 0;
    const std::string token = BearerToken(req).empty() ? SessionCookieToken(req) : "";
    if (!token.empty()) {
      for (const auto& t : auth_->ListTokens(context_.principal.email)) {
        if (StartsWith(token, "ty1." + t.id + ".")) expires = t.expires;
      }
    }
    res.set_header("Cache-Control", "no-store");
    WriteJson(res, SessionJson(context_.principal, expires));
  }

  // Sign-out: the session's token is revoked and the cookie cleared.
  void DeleteSession(const httplib::Request& req, httplib::Response& res) {
    const std::string token = SessionCookieToken(req);
    if (auth_ != nullptr && BearerToken(req).empty() && StartsWith(token, "ty1.")) {
      std::string id = token.substr(4, token.find('.', 4) - 4);
      if (Status st = auth_->RevokeToken(id, NowMicros());
          !st.ok() && st.code() != StatusCode::kNotFound) {
        return WriteError(res, st);
      }
    }
    res.set_header("Set-Cookie", SessionCookie("", 0, req.ssl != nullptr));
    WriteJson(res, "{}");
  }

  static std::string SessionJson(const auth::Principal& p, Timestamp expires) {
    json out = {{"authentication", true}, {"email", p.email}, {"admin", p.admin}};
    if (expires != 0) out["expireTime"] = FormatRfc3339(expires);
    return Dump(out);
  }

  // --- administration: principals and tokens (docs/security.md) --------------------------

  void ListPrincipals(const httplib::Request&, httplib::Response& res) {
    std::string body = "{\"principals\":[";
    bool first = true;
    for (const auto& p : auth_->ListPrincipals()) {
      if (!first) body += ',';
      first = false;
      body += PrincipalJson(p);
    }
    WriteJson(res, body + "]}");
  }

  void CreatePrincipal(const httplib::Request& req, httplib::Response& res) {
    json j = json::parse(req.body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return WriteError(res, InvalidArgument("Invalid JSON payload received: expected "
                                             "{\"email\", \"kind\", \"admin\", \"description\"}"));
    }
    std::string email, description;
    auth::PrincipalKind kind = auth::PrincipalKind::kUser;
    bool admin = false;
    for (const auto& [k, v] : j.items()) {
      if (k == "email" && v.is_string()) {
        email = v.get<std::string>();
      } else if (k == "description" && v.is_string()) {
        description = v.get<std::string>();
      } else if (k == "kind" && v.is_string()) {
        auto parsed = auth::ParsePrincipalKind(v.get<std::string>());
        if (!parsed.ok()) return WriteError(res, parsed.status());
        kind = *parsed;
      } else if (k == "admin" && v.is_boolean()) {
        admin = v.get<bool>();
      } else {
        return WriteError(res, Status(StatusCode::kInvalidArgument,
                                      "Invalid value or unknown field \"" + k + "\"")
                                   .AddViolation(k,
                                                 "expected email, kind (user|serviceAccount), "
                                                 "admin (bool) or description"));
      }
    }
    auto p = auth_->CreatePrincipal(email, kind, admin, description, NowMicros());
    if (!p.ok()) return WriteError(res, p.status());
    WriteJson(res, PrincipalJson(*p));
  }

  void DisablePrincipal(const httplib::Request& req, httplib::Response& res) {
    SetPrincipalDisabled(req, res, true);
  }
  void EnablePrincipal(const httplib::Request& req, httplib::Response& res) {
    SetPrincipalDisabled(req, res, false);
  }
  void SetPrincipalDisabled(const httplib::Request& req, httplib::Response& res, bool disabled) {
    if (Status st = auth_->SetDisabled(std::string(req.matches[1]), disabled); !st.ok()) {
      return WriteError(res, st);
    }
    WriteJson(res, PrincipalJson(auth_->GetPrincipal(std::string(req.matches[1])).value()));
  }

  void ListTokens(const httplib::Request& req, httplib::Response& res) {
    std::string email = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
    if (!email.empty()) {
      if (auto p = auth_->GetPrincipal(email); !p.ok()) return WriteError(res, p.status());
    }
    std::string body = "{\"tokens\":[";
    bool first = true;
    for (const auto& t : auth_->ListTokens(email)) {
      if (!first) body += ',';
      first = false;
      body += TokenJson(t, "");
    }
    WriteJson(res, body + "]}");
  }

  void CreateToken(const httplib::Request& req, httplib::Response& res) {
    json j = json::parse(req.body.empty() ? std::string("{}") : req.body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return WriteError(res, InvalidArgument("Invalid JSON payload received: expected "
                                             "{\"ttl\": \"3600s\", \"description\": \"...\"}"));
    }
    const Timestamp now = NowMicros();
    Timestamp expires = 0;
    std::string description;
    for (const auto& [k, v] : j.items()) {
      if (k == "ttl" && v.is_string()) {
        auto d = ParseDuration(v.get<std::string>());
        if (!d.ok() || *d <= 0) {
          return WriteError(res, Status(StatusCode::kInvalidArgument,
                                        "Invalid ttl \"" + v.get<std::string>() +
                                            "\": a positive duration in seconds such as \"3600s\"")
                                     .AddViolation("ttl", "a positive duration"));
        }
        expires = now + *d;
      } else if (k == "expireTime" && v.is_string()) {
        auto t = ParseRfc3339(v.get<std::string>());
        if (!t.ok()) {
          return WriteError(res, Status(StatusCode::kInvalidArgument,
                                        "Invalid expireTime: " + t.status().message())
                                     .AddViolation("expireTime", "an RFC 3339 time"));
        }
        expires = *t;
      } else if (k == "description" && v.is_string()) {
        description = v.get<std::string>();
      } else {
        return WriteError(res, Status(StatusCode::kInvalidArgument,
                                      "Invalid value or unknown field \"" + k + "\"")
                                   .AddViolation(k, "expected ttl, expireTime or description"));
      }
    }
    auto t = auth_->CreateToken(std::string(req.matches[1]), expires, description, now);
    if (!t.ok()) return WriteError(res, t.status());
    res.set_header("Cache-Control", "no-store");
    WriteJson(res, TokenJson(t->info, t->secret));
  }

  void RevokeToken(const httplib::Request& req, httplib::Response& res) {
    if (Status st = auth_->RevokeToken(std::string(req.matches[1]), NowMicros()); !st.ok()) {
      return WriteError(res, st);
    }
    WriteJson(res, "{}");
  }

  void ListRoles(const httplib::Request&, httplib::Response& res) {
    json roles = json::array();
    for (const auto& r : auth::PredefinedRoles()) {
      json perms = json::array();
      for (auto p : r.permissions) perms.push_back(std::string(p));
      json on = json::array();
      if (r.on_project) on.push_back("project");
      if (r.on_job) on.push_back("job");
      if (r.on_bucket) on.push_back("bucket");
      roles.push_back({{"name", std::string(r.name)},
                       {"title", std::string(r.title)},
                       {"includedPermissions", perms},
                       {"grantableOn", on}});
    }
    WriteJson(res, Dump(json{{"roles", roles}}));
  }

  void WhoAmI(const httplib::Request&, httplib::Response& res) {
    if (!options_.auth) {
      return WriteJson(res, Dump(json{{"authentication", "off"}, {"admin", true}}));
    }
    WriteJson(res, PrincipalJson(context_.principal));
  }

  void AdminAudit(const httplib::Request& req, httplib::Response& res) {
    auto page_size = ParseIntParam(req, "pageSize", 1000);
    if (!page_size.ok()) return WriteError(res, page_size.status());
    auto page =
        ListAuditEntries(*auth_, req.has_param("project") ? req.get_param_value("project") : "",
                         req.has_param("pageToken") ? req.get_param_value("pageToken") : "",
                         static_cast<int>(std::clamp<int64_t>(*page_size, 1, 1000)));
    if (!page.ok()) return WriteError(res, page.status());
    WriteJson(res, *page);
  }

  void GetAdmission(const httplib::Request&, httplib::Response& res) {
    WriteJson(res, json{{"paused", scheduler_.admission_paused()}}.dump());
  }

  void PutAdmission(const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("paused") ||
        !body["paused"].is_boolean()) {
      return WriteError(
          res, Status(StatusCode::kInvalidArgument, "expected a body {\"paused\": true|false}")
                   .AddViolation("paused", "required boolean"));
    }
    scheduler_.SetAdmissionPaused(body["paused"].get<bool>());
    WriteJson(res, json{{"paused", scheduler_.admission_paused()}}.dump());
  }

  // POST /v1/admin/gc {"dryRun": bool}: garbage collection now (docs/operations.md).
  void RunGc(const httplib::Request& req, httplib::Response& res) {
    json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() ||
        (body.contains("dryRun") && !body["dryRun"].is_boolean())) {
      return WriteError(
          res, Status(StatusCode::kInvalidArgument, "expected a body {\"dryRun\": true|false}")
                   .AddViolation("dryRun", "must be a boolean"));
    }
    if (operations_ == nullptr) {
      return WriteError(res, Status(StatusCode::kUnimplemented, "garbage collection is off"));
    }
    auto report = operations_->Gc(body.value("dryRun", false));
    if (!report.ok()) return WriteError(res, report.status());
    WriteJson(res, *report);
  }

  // POST /v1/admin/purge {"finishedBefore": RFC 3339, "dryRun": bool}: deletes the records of
  // jobs that finished before then, with their logs and work dirs.
  void Purge(const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("finishedBefore") ||
        !body["finishedBefore"].is_string() ||
        (body.contains("dryRun") && !body["dryRun"].is_boolean())) {
      return WriteError(res, Status(StatusCode::kInvalidArgument,
                                    "expected a body {\"finishedBefore\": \"RFC 3339 time\", "
                                    "\"dryRun\": true|false}")
                                 .AddViolation("finishedBefore", "required RFC 3339 time"));
    }
    auto before = ParseRfc3339(body["finishedBefore"].get<std::string>());
    if (!before.ok()) {
      return WriteError(
          res, Status(StatusCode::kInvalidArgument, "finishedBefore: " + before.status().message())
                   .AddViolation("finishedBefore", before.status().message()));
    }
    if (operations_ == nullptr) {
      return WriteError(res, Status(StatusCode::kUnimplemented, "purges are off"));
    }
    auto report = operations_->Purge(*before, body.value("dryRun", false));
    if (!report.ok()) return WriteError(res, report.status());
    WriteJson(res, *report);
  }

  void Help(const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("format") && req.get_param_value("format") == "json") {
      return WriteJson(res, RouteTableJson());
    }
    res.set_content(RouteTableHelp(), "text/plain");
  }

  void Healthz(const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  }

  void Readyz(const httplib::Request&, httplib::Response& res) {
    if (ready_) {
      // The backend away (the Slurm controller): jobs are kept, but none can start or end.
      const scheduler::SchedulerStats stats = scheduler_.Stats();
      if (std::string problem = stats.backend_problem; !problem.empty()) {
        res.status = 503;
        res.set_content("degraded: " + problem + "\n", "text/plain");
        return;
      }
      // Low disk space: jobs are accepted and kept, but none starts (docs/operations.md).
      if (!stats.admission_hold.empty()) {
        res.status = 503;
        res.set_content("degraded: " + stats.admission_hold + "\n", "text/plain");
        return;
      }
      res.set_content("ready\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content("starting\n", "text/plain");
    }
  }

  void RenderMetrics(const httplib::Request&, httplib::Response& res) {
    std::ostringstream out;
    out << "# HELP trainyard_jobs Jobs by state.\n# TYPE trainyard_jobs gauge\n";
    std::map<model::JobState, int64_t> counts;
    if (auto c = store_.CountJobsByState(); c.ok()) {
      for (const auto& [s, n] : *c) counts[s] = n;
    }
    for (int i = 1; i <= 7; ++i) {
      auto s = static_cast<model::JobState>(i);
      out << "trainyard_jobs{state=\"" << model::JobStateName(s) << "\"} " << counts[s] << "\n";
    }
    auto stats = scheduler_.Stats();
    out << "# HELP trainyard_running_replicas Replicas whose processes run.\n"
        << "# TYPE trainyard_running_replicas gauge\n"
        << "trainyard_running_replicas " << stats.running_replicas << "\n"
        << "# HELP trainyard_admission_paused 1 while admission is paused.\n"
        << "# TYPE trainyard_admission_paused gauge\n"
        << "trainyard_admission_paused " << (scheduler_.admission_paused() ? 1 : 0) << "\n";
    out << "# HELP trainyard_node_capacity What admission counts on this node (after "
           "overcommit; on Slurm the partition's): vCPUs, memory bytes, GPUs.\n"
        << "# TYPE trainyard_node_capacity gauge\n"
        << "trainyard_node_capacity{resource=\"cpu\"} "
        << static_cast<double>(stats.total_cpu_millis) / 1000 << "\n"
        << "trainyard_node_capacity{resource=\"memory_bytes\"} " << stats.total_memory_bytes << "\n"
        << "trainyard_node_capacity{resource=\"gpu\"} " << stats.total_gpus << "\n"
        << "# HELP trainyard_node_free What admitted jobs leave free: vCPUs, memory bytes, GPUs.\n"
        << "# TYPE trainyard_node_free gauge\n"
        << "trainyard_node_free{resource=\"cpu\"} "
        << static_cast<double>(stats.free_cpu_millis) / 1000 << "\n"
        << "trainyard_node_free{resource=\"memory_bytes\"} " << stats.free_memory_bytes << "\n"
        << "trainyard_node_free{resource=\"gpu\"} " << stats.free_gpus << "\n"
        << "# HELP trainyard_replica_restarts_total Replicas restarted after a signal Trainyard "
           "did not send (since the daemon started).\n"
        << "# TYPE trainyard_replica_restarts_total counter\n"
        << "trainyard_replica_restarts_total " << stats.replica_restarts << "\n";
    RenderHistogram(out, "trainyard_queue_wait_seconds",
                    "Time admitted jobs waited in the queue (createTime to admission).",
                    stats.queue_wait_seconds);
    RenderHistogram(out, "trainyard_log_ingestion_lag_seconds",
                    "Time from a replica printing a line to its being stored (the oldest line "
                    "of each stored batch).",
                    stats.log_ingestion_lag_seconds);
    if (operations_ != nullptr) out << operations_->MetricsText();
    metrics_.Render(out);
    res.set_content(out.str(), "text/plain; version=0.0.4; charset=utf-8");
  }

  static void RenderHistogram(std::ostringstream& out, const char* name, const char* help,
                              const scheduler::Histogram& h) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      out << name << "_bucket{le=\"" << h.bounds[i] << "\"} " << h.counts[i] << "\n";
    }
    out << name << "_bucket{le=\"+Inf\"} " << h.count << "\n"
        << name << "_sum " << h.sum << "\n"
        << name << "_count " << h.count << "\n";
  }

  // What the request is about, for the permission check and the audit record.
  struct Target {
    std::string project;   // "" for the daemon
    std::string resource;  // the resource name ("projects/p/jobs/j", ...)
    std::string policy;    // the resource whose own policy also applies ("" = the project's only)
  };

  Result<Target> TargetOf(const Route& route, const httplib::Request& req) {
    Target t;
    switch (route.scope) {
      case Scope::kDaemon:
        t.resource = "trainyard";
        return t;
      case Scope::kProject:
      case Scope::kJob:
        t.project = req.matches[1];
        TRAINYARD_RETURN_IF_ERROR(ValidateProject(t.project));
        t.resource = auth::ProjectResource(t.project);
        if (route.scope == Scope::kJob) {
          t.resource = auth::JobResource(t.project, std::string(req.matches[2]));
          t.policy = t.resource;
        }
        return t;
      case Scope::kBucket: {
        std::string bucket = req.matches[1];
        t.resource = auth::BucketResource(bucket);
        t.policy = t.resource;
        if (auto b = buckets_->GetBucket(bucket); b.ok()) {
          t.project = b->project.empty() ? options_.default_project : b->project;
        }
        return t;
      }
      case Scope::kLogEntries: {
        auto target = LogListProject(req.body);
        if (!target.ok()) return target.status();
        t.project = *target;
        t.resource = auth::ProjectResource(t.project);
        return t;
      }
    }
    return t;
  }

  // Authenticates the request and checks the route's permission; writes the refusal (401,
  // 403, or 400 for a malformed resource name) and returns false when it may not proceed.
  // Runs before the handler and before anything about the resource is looked up, so a
  // caller without the permission cannot learn whether a job exists (403 either way).
  bool Authorize(const Route& route, const httplib::Request& req, httplib::Response& res,
                 Target* target) {
    if (route.permission == kPublic) return true;
    const char* permission = route.permission == nullptr ? kAdmin : route.permission;
    auto principal = Authenticate(req);
    if (!principal.ok()) {
      WriteUnauthenticated(res, principal.status().message(), false, permission);
      return false;
    }
    context_.principal = *principal;
    context_.authenticated = true;
    auto t = TargetOf(route, req);
    if (!t.ok()) {
      WriteError(res, t.status());
      return false;
    }
    *target = *t;
    if (permission == kAnyPrincipal) return true;
    const std::string project = t->project.empty() ? "" : auth::ProjectResource(t->project);
    if (!Allowed(*principal, project, t->policy, permission)) {
      WritePermissionDenied(res, permission, "//ml.googleapis.com/" + t->resource, principal->email,
                            false);
      return false;
    }
    return true;
  }

  // The caller: with authentication off, an anonymous administrator.
  Result<auth::Principal> Authenticate(const httplib::Request& req) {
    if (!options_.auth || auth_ == nullptr) {
      auth::Principal anonymous;
      anonymous.admin = true;
      return anonymous;
    }
    std::string token = BearerToken(req);
    if (token.empty()) {
      token = SessionCookieToken(req);
      if (!token.empty() && !SessionCookieUsable(req)) {
        return Status(StatusCode::kUnauthenticated,
                      "The console's session cookie is accepted on this request only with the "
                      "console's " +
                          std::string(kConsoleHeader) +
                          " header from the same origin (docs/security.md).");
      }
      if (StartsWith(token, "ty1j.")) token.clear();  // job credentials never come as cookies
    }
    if (token.empty()) {
      return Status(StatusCode::kUnauthenticated,
                    "Request is missing required authentication credential. Expected OAuth 2 "
                    "access token, login cookie or other valid authentication credential "
                    "(Authorization: Bearer <Trainyard API token>; docs/security.md).");
    }
    if (token.size() > kMaxCredentialBytes) token.resize(kMaxCredentialBytes);
    if (StartsWith(token, "ty1j.")) return AuthenticateJob(token);
    return auth_->Authenticate(token, NowMicros());
  }

  // A running job's credential (docs/security.md): valid while the job is unfinished; acts as
  // the project's service agent (compat §13.3) on the project's buckets.
  Result<auth::Principal> AuthenticateJob(const std::string& token) {
    TRAINYARD_ASSIGN_OR_RETURN(auto subject, auth_->VerifyJobToken(token));
    auto job = scheduler_.GetJob(subject.first, subject.second);
    if (!job.ok() || model::IsTerminal(job->state)) {
      return Status(StatusCode::kUnauthenticated,
                    "Request had invalid authentication credentials: the credential of job " +
                        subject.first + "/" + subject.second + " ended with the job.");
    }
    auth::Principal p;
    const std::string account = JobServiceAccount(*job);
    if (!account.empty()) {
      // The job runs as its trainingInput.serviceAccount: what the policies grant that
      // account, while it exists and is enabled (docs/security.md).
      auto sa = auth_->GetPrincipal(account);
      if (!sa.ok() || sa->disabled) {
        return Status(StatusCode::kUnauthenticated,
                      "Request had invalid authentication credentials: job " + subject.first + "/" +
                          subject.second + " runs as " + account +
                          ", which is disabled or no longer exists.");
      }
      p = *sa;
      p.admin = false;
      p.job_as_service_account = true;
    } else {
      auto config = json::parse(GetConfigJson(subject.first));
      p.email = config["serviceAccount"].get<std::string>();
      p.kind = auth::PrincipalKind::kServiceAccount;
    }
    p.job_project = subject.first;
    p.job_id = subject.second;
    return p;
  }

  bool Allowed(const auth::Principal& p, std::string_view project_resource,
               std::string_view resource, std::string_view permission) const {
    if (p.admin) return true;
    if (auth_ == nullptr) return false;
    return auth_->Check(p, project_resource, resource, permission);
  }

  // Appends the audit record of a mutating request (who, what, when, result).
  void Audit(const std::string& method, const Target& t, const httplib::Request& req,
             const httplib::Response& res) {
    if (auth_ == nullptr) return;
    auth::AuditRecord r;
    r.time = NowMicros();
    r.principal = context_.authenticated ? context_.principal.email : "";
    r.method = method;
    r.resource = t.resource;
    r.project = t.project;
    r.http_status = res.status == -1 ? 200 : res.status;
    r.code = StatusCode::kOk;
    if (r.http_status >= 400) {
      json body = json::parse(res.body, nullptr, false);
      r.code = StatusCode::kUnknown;
      if (body.is_object() && body.contains("error") && body["error"].is_object()) {
        const json& e = body["error"];
        if (e.contains("message") && e["message"].is_string()) {
          r.message = e["message"].get<std::string>().substr(0, 1024);
        }
        if (e.contains("status") && e["status"].is_string()) {
          r.code = CodeFromName(e["status"].get<std::string>());
        } else {
          r.code = CodeFromHttp(r.http_status);
        }
      }
    }
    r.caller_ip = req.remote_addr;
    if (Status st = auth_->AppendAudit(r); !st.ok()) {
      TY_LOG_ERROR(kLog, "cannot write the audit record of {} {}: {}", method, t.resource,
                   st.message());
    }
  }

  static StatusCode CodeFromName(const std::string& name) {
    for (int c = 0; c <= 16; ++c) {
      if (name == StatusCodeName(static_cast<StatusCode>(c))) return static_cast<StatusCode>(c);
    }
    return StatusCode::kUnknown;
  }
  static StatusCode CodeFromHttp(int http) {
    switch (http) {
      case 400:
        return StatusCode::kInvalidArgument;
      case 401:
        return StatusCode::kUnauthenticated;
      case 403:
        return StatusCode::kPermissionDenied;
      case 404:
        return StatusCode::kNotFound;
      case 409:
        return StatusCode::kAborted;
      case 412:
        return StatusCode::kFailedPrecondition;
      default:
        return http >= 500 ? StatusCode::kInternal : StatusCode::kUnknown;
    }
  }

  // The storage API's gate: the same authentication, permission check and audit as the
  // route table's, in GCS's error shape (docs/security.md).
  void StorageGate(const httplib::Request& req, httplib::Response& res,
                   const storage::StorageAccess& a, const std::function<void()>& run) {
    context_ = {};
    const storage::StorageOperation& op = *a.operation;
    Target t;
    if (a.bucket.empty()) {
      t.project = a.project;
      t.resource = auth::ProjectResource(a.project);
    } else {
      t.resource = auth::BucketResource(a.bucket);
      if (!a.object.empty()) t.resource += "/objects/" + a.object;
      t.policy = auth::BucketResource(a.bucket);
      if (auto b = buckets_->GetBucket(a.bucket); b.ok()) {
        t.project = b->project.empty() ? options_.default_project : b->project;
      }
    }
    auto finish = [&] {
      if (op.mutating) Audit(op.name, t, req, res);
    };
    auto principal = Authenticate(req);
    if (!principal.ok()) {
      WriteUnauthenticated(res, principal.status().message(), true, op.permission);
      return finish();
    }
    context_.principal = *principal;
    context_.authenticated = true;
    auto allowed = [&](const std::string& bucket, const char* permission) {
      std::string project = t.project;
      if (bucket != a.bucket) {
        auto b = buckets_->GetBucket(bucket);
        project = b.ok() ? (b->project.empty() ? options_.default_project : b->project) : "";
      }
      return Allowed(*principal, project.empty() ? "" : auth::ProjectResource(project),
                     bucket.empty() ? "" : auth::BucketResource(bucket), permission);
    };
    if (a.bucket.empty() && !IsValidProjectId(a.project)) {
      storage::WriteStorageError(res, 400, "invalid", "Invalid project: '" + a.project + "'");
      return finish();
    }
    if (!allowed(a.bucket, op.permission)) {
      WritePermissionDenied(res, op.permission, t.resource, principal->email, true);
      return finish();
    }
    if (op.source_permission != nullptr && !allowed(a.source_bucket, op.source_permission)) {
      WritePermissionDenied(res, op.source_permission, auth::BucketResource(a.source_bucket),
                            principal->email, true);
      return finish();
    }
    run();
    finish();
  }

  static bool IsValidProjectId(const std::string& project) { return ValidateProject(project).ok(); }

  // The GET routes of the ml API (and its Trainyard additions) answer JSON that the `fields`
  // system parameter can mask and that If-None-Match can revalidate (docs/api.md "Partial
  // responses", "ETag and 304").
  static bool IsPartialGet(const Route& route) {
    return route.kind == RouteKind::kMl && std::string_view(route.method) == "GET";
  }

  // Runs a GET handler with `fields` taken out of the parameters (handlers refuse parameters
  // they do not know), masks its JSON answer, and tags it: a client that sends the tag back in
  // If-None-Match gets 304 and no body when nothing changed, so polling costs no transfer.
  void RunPartialGet(const Route& route, const httplib::Request& req, httplib::Response& res) {
    std::optional<FieldMask> mask;
    if (req.has_param("fields")) {
      auto parsed = ParseFieldMask(req.get_param_value("fields"));
      if (!parsed.ok()) return WriteError(res, parsed.status());
      mask = std::move(parsed).value();
      // The Request is httplib's own non-const object (storage_http.cc does the same).
      const_cast<httplib::Request&>(req).params.erase("fields");
    }
    (this->*route.handler)(req, res);
    if ((res.status != 200 && res.status != -1) || res.content_provider_ || res.body.empty()) {
      return;
    }
    if (mask) {
      auto masked = ApplyFieldMaskToText(res.body, *mask);
      if (!masked.ok()) return WriteError(res, masked.status());
      res.set_content(std::move(masked).value(), "application/json; charset=UTF-8");
    }
    const std::string etag = BodyEtag(res.body);
    res.set_header("ETag", etag);
    if (!res.has_header("Cache-Control")) res.set_header("Cache-Control", "private, no-cache");
    if (IfNoneMatchHits(req.get_header_value("If-None-Match"), etag)) {
      res.status = 304;
      res.body.clear();
    }
  }

  // Wraps a row's handler: admission checks, latency and code metrics, and no exception ever
  // escapes.
  httplib::Server::Handler Wrap(const Route& route) {
    return [this, &route](const httplib::Request& req, httplib::Response& res) {
      int64_t start = MonotonicMicros();
      context_ = {};
      Target target;
      try {
        if (req.body.size() > kMaxApiBody) {
          // A chunked body (its length was not known before reading) over the limit.
          RefuseBody(
              req, res, 413,
              "Request payload size exceeds the limit: " + std::to_string(kMaxApiBody) + " bytes.");
        } else if (Authorize(route, req, res, &target)) {
          if (IsPartialGet(route)) {
            RunPartialGet(route, req, res);
          } else {
            (this->*route.handler)(req, res);
          }
        }
        if (route.mutating) {
          Audit(route.discovery.id != nullptr ? route.discovery.id
                : route.name != nullptr       ? route.name
                                              : route.pattern,
                target, req, res);
        }
      } catch (const std::exception& e) {
        TY_LOG_ERROR(kLog, "{} {}: {}", req.method, req.path, e.what());
        WriteError(res, Internal(std::string("internal error: ") + e.what()));
      }
      // httplib sets 200 only after the handler returns when the handler set no status.
      metrics_.Record(route.pattern, route.method, res.status == -1 ? 200 : res.status,
                      static_cast<double>(MonotonicMicros() - start) / 1e6);
    };
  }

  // Registers every route on `server` (its connection handling is HttpServer's, or
  // HttpServer::Configure's for the TLS listener).
  void Setup(httplib::Server& server) {
    // Responses go out as two writes (headers, body): without TCP_NODELAY, Nagle's algorithm
    // and the client's delayed ACK add ~40 ms to every request on a keep-alive connection.
    server.set_tcp_nodelay(true);
    for (const Route& r : Routes()) {
      auto wrapped = Wrap(r);
      std::string m = r.method;
      if (m == "GET") {
        server.Get(r.pattern, wrapped);
      } else if (m == "POST") {
        server.Post(r.pattern, wrapped);
      } else if (m == "PUT" && StartsWith(r.pattern, "/storage/")) {
        // httplib tries handlers that stream their body before the others: the storage API's
        // PUT /storage/v1/... would win, so this row reads its body the same way.
        server.Put(r.pattern, [wrapped](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& reader) {
          httplib::Request with_body = req;
          reader([&](const char* data, size_t size) {
            with_body.body.append(data, size);
            return with_body.body.size() <= kMaxApiBody;
          });
          wrapped(with_body, res);
        });
      } else if (m == "PUT") {
        server.Put(r.pattern, wrapped);
      } else if (m == "PATCH") {
        server.Patch(r.pattern, wrapped);
      } else if (m == "DELETE") {
        server.Delete(r.pattern, wrapped);
      }
    }
    storage::RegisterStorageRoutes(
        server, *buckets_, options_.default_project,
        [this](const httplib::Request& req, httplib::Response& res, const storage::StorageAccess& a,
               const std::function<void()>& run) { StorageGate(req, res, a, run); });
    console::RegisterConsoleRoutes(server, {.default_project = options_.default_project});
    // Runs for every response >= 400, outside httplib's handler try/catch. Route handlers always
    // write an error body; an empty one means no route answered (no match, or httplib refused
    // the request before routing), which gets a Google error body here.
    server.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (internal::HttpServer::BodyLimitExceeded()) {
        RefuseBody(req, res, 413,
                   "Request payload size exceeds the limit: " + std::to_string(BodyLimit(req)) +
                       " bytes.");
        return;
      }
      if (!res.body.empty() || res.content_provider_) return;
      try {
        if (res.status == 404) {
          WriteError(res,
                     NotFound("The requested URL " + req.path + " was not found on this server"));
        } else {
          int code = res.status;
          WriteError(res, Status(code >= 500 ? StatusCode::kInternal : StatusCode::kInvalidArgument,
                                 "The request was refused (HTTP " + std::to_string(code) + ")"));
          res.status = code;
        }
        metrics_.Record("unmatched", req.method, res.status, 0);
      } catch (...) {
        res.status = 500;
        res.set_content("{\"error\":{\"code\":500,\"status\":\"INTERNAL\"}}", "application/json");
      }
    });
    server.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown error";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          TY_LOG_ERROR(kLog, "{} {}: {}", req.method, req.path, what);
          WriteError(res, Internal("internal error: " + what));
        });
  }

  void set_buckets(storage::BucketStore* b) { buckets_ = b; }
  void set_ready(bool ready) { ready_ = ready; }
  void set_auth_store(auth::AuthStore* a) { auth_ = a; }
  auth::AuthStore* auth_store() const { return auth_; }
  void set_operations(Operations* o) { operations_ = o; }

 private:
  const ApiOptions& options_;
  scheduler::JobService& scheduler_;
  store::JobStore& store_;
  storage::BucketStore* buckets_ = nullptr;
  Metrics metrics_;
  std::atomic<bool> ready_{false};
  Operations* operations_ = nullptr;
  // What this Trainyard runs: multi-replica jobs, GPUs, custom containers (a node without
  // podman or docker refuses container jobs in CheckRunnable) and hyperparameter tuning.
  model::Capabilities caps_{
      .multi_replica = true, .containers = true, .tuning = true, .gpus = true};
  auth::AuthStore* auth_ = nullptr;
  // The request this thread serves: its caller, once authenticated (handlers run on the
  // thread that authorized them).
  struct RequestContext {
    auth::Principal principal;
    bool authenticated = false;
  };
  static thread_local RequestContext context_;
};

thread_local Handlers::RequestContext Handlers::context_;

namespace {

constexpr ParamSpec kParent = {"parent",
                               "path",
                               "string",
                               nullptr,
                               "^projects/[^/]+$",
                               true,
                               "Required. The project name, projects/PROJECT."};
constexpr ParamSpec kName = {"name",
                             "path",
                             "string",
                             nullptr,
                             "^projects/[^/]+/jobs/[^/]+$",
                             true,
                             "Required. The job name, projects/PROJECT/jobs/JOB."};
constexpr ParamSpec kParentParams[] = {kParent};
constexpr ParamSpec kNameParams[] = {kName};
constexpr ParamSpec kListParams[] = {
    kParent,
    {"filter", "query", "string", nullptr, nullptr, false,
     "Optional. Jobs to list, e.g. jobId:census* AND state:FAILED."},
    {"pageSize", "query", "integer", "int32", nullptr, false,
     "Optional. Jobs per page: default 20, at most 100."},
    {"pageToken", "query", "string", nullptr, nullptr, false,
     "Optional. The nextPageToken of the previous page."},
    {"orderBy", "query", "string", nullptr, nullptr, false,
     "Optional (Trainyard extension). createTime, startTime, endTime, jobId or state, then asc "
     "or desc, e.g. \"startTime desc\". Default: newest first."},
};
constexpr ParamSpec kPatchParams[] = {
    kName,
    {"updateMask", "query", "string", "google-fieldmask", nullptr, false,
     "Required. labels, or labels,etag."},
};

constexpr ParamSpec kProjectName = {"name",
                                    "path",
                                    "string",
                                    nullptr,
                                    "^projects/[^/]+$",
                                    true,
                                    "Required. The project name, projects/PROJECT."};
constexpr ParamSpec kProjectNameParams[] = {kProjectName};
constexpr ParamSpec kLocationParams[] = {{"name", "path", "string", nullptr,
                                          "^projects/[^/]+/locations/[^/]+$", true,
                                          "Required. The name of the location."}};
constexpr ParamSpec kOperationParams[] = {{"name", "path", "string", nullptr,
                                           "^projects/[^/]+/operations/[^/]+$", true,
                                           "The name of the operation resource."}};
constexpr ParamSpec kResourceParams[] = {
    {"resource", "path", "string", nullptr, "^projects/[^/]+/jobs/[^/]+$", true,
     "REQUIRED: The resource the policy is for, projects/PROJECT/jobs/JOB."}};

using H = Handlers;
constexpr const char* kJob = "GoogleCloudMlV1__Job";

// trainyardd's routes (the first match wins). The ml v1 rows carry their discovery metadata.
const Route kRoutes[] = {
    {"GET",
     R"(/v1/projects/([^/:]+):getConfig)",
     "projects.getConfig: the project's service account",
     false,
     RouteKind::kMl,
     &H::GetConfig,
     {"ml.projects.getConfig", "v1/{+name}:getConfig", "v1/projects/{projectsId}:getConfig",
      kProjectNameParams, nullptr, "GoogleCloudMlV1__GetConfigResponse",
      "Get the service account information associated with your project."},
     "ml.projects.getConfig",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/:]+)/locations)",
     "projects.locations.list: the regions and their capabilities",
     false,
     RouteKind::kMl,
     &H::ListLocations,
     {"ml.projects.locations.list", "v1/{+parent}/locations", "v1/projects/{projectsId}/locations",
      kParentParams, nullptr, "GoogleCloudMlV1__ListLocationsResponse",
      "List all locations that provides at least one type of CMLE capability."},
     "ml.locations.list",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/:]+)/locations/([^/:]+))",
     "projects.locations.get: one region",
     false,
     RouteKind::kMl,
     &H::GetLocation,
     {"ml.projects.locations.get", "v1/{+name}", "v1/projects/{projectsId}/locations/{locationsId}",
      kLocationParams, nullptr, "GoogleCloudMlV1__Location",
      "Get the complete list of CMLE capabilities in a location."},
     "ml.locations.get",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/:]+)/operations)",
     "projects.operations.list: always empty (training jobs use no operations)",
     false,
     RouteKind::kMl,
     &H::ListOperations,
     {"ml.projects.operations.list", "v1/{+name}/operations", "v1/projects/{projectsId}/operations",
      kProjectNameParams, nullptr, "GoogleLongrunning__ListOperationsResponse",
      "Lists operations."},
     "ml.operations.list",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/:]+)/operations/([^/:]+))",
     "projects.operations.get: NOT_FOUND (training jobs use no operations)",
     false,
     RouteKind::kMl,
     &H::GetOperation,
     {"ml.projects.operations.get", "v1/{+name}",
      "v1/projects/{projectsId}/operations/{operationsId}", kOperationParams, nullptr,
      "GoogleLongrunning__Operation", "Gets the latest state of a long-running operation."},
     "ml.operations.get",
     Scope::kProject},
    {"POST",
     R"(/v1/projects/([^/:]+)/operations/([^/:]+):cancel)",
     "projects.operations.cancel: NOT_FOUND (training jobs use no operations)",
     true,
     RouteKind::kMl,
     &H::GetOperation,
     {"ml.projects.operations.cancel", "v1/{+name}:cancel",
      "v1/projects/{projectsId}/operations/{operationsId}:cancel", kOperationParams, nullptr,
      "GoogleProtobuf__Empty", "Starts asynchronous cancellation on a long-running operation."},
     "ml.operations.cancel",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+):getIamPolicy)",
     "projects.jobs.getIamPolicy: the job's policy",
     false,
     RouteKind::kMl,
     &H::GetJobIamPolicy,
     {"ml.projects.jobs.getIamPolicy", "v1/{+resource}:getIamPolicy",
      "v1/projects/{projectsId}/jobs/{jobsId}:getIamPolicy", kResourceParams, nullptr,
      "GoogleIamV1__Policy", "Gets the access control policy for a resource."},
     "ml.jobs.getIamPolicy",
     Scope::kJob},
    {"POST",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+):getIamPolicy)",
     "projects.jobs.getIamPolicy (POST form)",
     false,
     RouteKind::kMl,
     &H::GetJobIamPolicy,
     {},
     "ml.jobs.getIamPolicy",
     Scope::kJob},
    {"POST",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+):setIamPolicy)",
     "projects.jobs.setIamPolicy: replace the job's policy {policy, updateMask} (etag checked)",
     true,
     RouteKind::kMl,
     &H::SetJobIamPolicy,
     {"ml.projects.jobs.setIamPolicy", "v1/{+resource}:setIamPolicy",
      "v1/projects/{projectsId}/jobs/{jobsId}:setIamPolicy", kResourceParams,
      "GoogleIamV1__SetIamPolicyRequest", "GoogleIamV1__Policy",
      "Sets the access control policy on the specified resource."},
     "ml.jobs.setIamPolicy",
     Scope::kJob},
    {"POST",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+):testIamPermissions)",
     "projects.jobs.testIamPermissions: which of {permissions} the caller holds on the job",
     false,
     RouteKind::kMl,
     &H::TestJobIamPermissions,
     {"ml.projects.jobs.testIamPermissions", "v1/{+resource}:testIamPermissions",
      "v1/projects/{projectsId}/jobs/{jobsId}:testIamPermissions", kResourceParams,
      "GoogleIamV1__TestIamPermissionsRequest", "GoogleIamV1__TestIamPermissionsResponse",
      "Returns permissions that a caller has on the specified resource."},
     kAnyPrincipal,
     Scope::kJob},
    {"POST",
     R"(/v1/projects/([^/:]+):getIamPolicy)",
     "Resource Manager projects.getIamPolicy: the project's policy",
     false,
     RouteKind::kMl,
     &H::GetProjectIamPolicy,
     {},
     "resourcemanager.projects.getIamPolicy",
     Scope::kProject,
     "cloudresourcemanager.projects.getIamPolicy"},
    {"POST",
     R"(/v1/projects/([^/:]+):setIamPolicy)",
     "Resource Manager projects.setIamPolicy: replace the project's policy {policy, updateMask}",
     true,
     RouteKind::kMl,
     &H::SetProjectIamPolicy,
     {},
     "resourcemanager.projects.setIamPolicy",
     Scope::kProject,
     "cloudresourcemanager.projects.setIamPolicy"},
    {"POST",
     R"(/v1/projects/([^/:]+):testIamPermissions)",
     "Resource Manager projects.testIamPermissions: which of {permissions} the caller holds",
     false,
     RouteKind::kMl,
     &H::TestProjectIamPermissions,
     {},
     kAnyPrincipal,
     Scope::kProject,
     "cloudresourcemanager.projects.testIamPermissions"},
    {"GET",
     R"(/storage/v1/b/([^/]+)/iam)",
     "storage buckets.getIamPolicy: the bucket's policy",
     false,
     RouteKind::kOther,
     &H::GetBucketIamPolicy,
     {},
     "storage.buckets.getIamPolicy",
     Scope::kBucket,
     "storage.buckets.getIamPolicy"},
    {"PUT",
     R"(/storage/v1/b/([^/]+)/iam)",
     "storage buckets.setIamPolicy: replace the bucket's policy",
     true,
     RouteKind::kOther,
     &H::SetBucketIamPolicy,
     {},
     "storage.buckets.setIamPolicy",
     Scope::kBucket,
     "storage.buckets.setIamPolicy"},
    {"GET",
     R"(/storage/v1/b/([^/]+)/iam/testPermissions)",
     "storage buckets.testIamPermissions: which of ?permissions= the caller holds",
     false,
     RouteKind::kOther,
     &H::TestBucketIamPermissions,
     {},
     kAnyPrincipal,
     Scope::kBucket,
     "storage.buckets.testIamPermissions"},
    {"GET",
     R"(/v1/admin/principals)",
     "principals (users and service accounts)",
     false,
     RouteKind::kOther,
     &H::ListPrincipals,
     {},
     kAdmin,
     Scope::kDaemon},
    {"POST",
     R"(/v1/admin/principals)",
     "create a principal {email, kind: user|serviceAccount, admin, description}",
     true,
     RouteKind::kOther,
     &H::CreatePrincipal,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.createPrincipal"},
    {"POST",
     R"(/v1/admin/principals/([^/:]+):disable)",
     "disable a principal (its tokens stop working)",
     true,
     RouteKind::kOther,
     &H::DisablePrincipal,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.disablePrincipal"},
    {"POST",
     R"(/v1/admin/principals/([^/:]+):enable)",
     "enable a disabled principal",
     true,
     RouteKind::kOther,
     &H::EnablePrincipal,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.enablePrincipal"},
    {"GET",
     R"(/v1/admin/principals/([^/:]+)/tokens)",
     "a principal's API tokens (ids, never secrets)",
     false,
     RouteKind::kOther,
     &H::ListTokens,
     {},
     kAdmin,
     Scope::kDaemon},
    {"POST",
     R"(/v1/admin/principals/([^/:]+)/tokens)",
     "create an API token {ttl, expireTime, description}; the answer holds the secret once",
     true,
     RouteKind::kOther,
     &H::CreateToken,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.createToken"},
    {"GET",
     R"(/v1/admin/tokens)",
     "every API token (ids, never secrets)",
     false,
     RouteKind::kOther,
     &H::ListTokens,
     {},
     kAdmin,
     Scope::kDaemon},
    {"POST",
     R"(/v1/admin/tokens/([0-9a-f]+):revoke)",
     "revoke an API token",
     true,
     RouteKind::kOther,
     &H::RevokeToken,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.revokeToken"},
    {"GET",
     R"(/v1/admin/audit)",
     "audit records of every project (project, pageToken, pageSize)",
     false,
     RouteKind::kOther,
     &H::AdminAudit,
     {},
     kAdmin,
     Scope::kDaemon},
    {"GET",
     R"(/v1/roles)",
     "the predefined roles and their permissions",
     false,
     RouteKind::kOther,
     &H::ListRoles,
     {},
     kAnyPrincipal,
     Scope::kDaemon},
    {"GET",
     R"(/v1/whoami)",
     "the caller's principal",
     false,
     RouteKind::kOther,
     &H::WhoAmI,
     {},
     kAnyPrincipal,
     Scope::kDaemon},
    {"POST",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+):cancel)",
     "projects.jobs.cancel: cancel a job",
     true,
     RouteKind::kMl,
     &H::CancelJob,
     {"ml.projects.jobs.cancel", "v1/{+name}:cancel",
      "v1/projects/{projectsId}/jobs/{jobsId}:cancel", kNameParams,
      "GoogleCloudMlV1__CancelJobRequest", "GoogleProtobuf__Empty", "Cancels a running job."},
     "ml.jobs.cancel",
     Scope::kJob},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs)",
     "job log entries: listed in time order (orderBy, pageToken) or followed after a cursor "
     "(afterInsertId); taskName, trialId, minSeverity, startTime, endTime, pageSize",
     false,
     RouteKind::kMl,
     &H::JobLogs,
     {},
     "ml.jobs.get",
     Scope::kJob},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+))",
     "projects.jobs.get: describe a job",
     false,
     RouteKind::kMl,
     &H::GetJob,
     {"ml.projects.jobs.get", "v1/{+name}", "v1/projects/{projectsId}/jobs/{jobsId}", kNameParams,
      nullptr, kJob, "Describes a job."},
     "ml.jobs.get",
     Scope::kJob},
    {"PATCH",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+))",
     "projects.jobs.patch: replace labels (updateMask=labels,etag)",
     true,
     RouteKind::kMl,
     &H::PatchJob,
     {"ml.projects.jobs.patch", "v1/{+name}", "v1/projects/{projectsId}/jobs/{jobsId}",
      kPatchParams, kJob, kJob, "Updates a specific job resource (labels only)."},
     "ml.jobs.update",
     Scope::kJob},
    {"POST",
     R"(/v1/projects/([^/]+)/jobs)",
     "projects.jobs.create: submit a training job",
     true,
     RouteKind::kMl,
     &H::CreateJob,
     {"ml.projects.jobs.create", "v1/{+parent}/jobs", "v1/projects/{projectsId}/jobs",
      kParentParams, kJob, kJob, "Creates a training job."},
     "ml.jobs.create",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs)",
     "projects.jobs.list: list jobs (filter, pageSize, pageToken, orderBy)",
     false,
     RouteKind::kMl,
     &H::ListJobs,
     {"ml.projects.jobs.list", "v1/{+parent}/jobs", "v1/projects/{projectsId}/jobs", kListParams,
      nullptr, "GoogleCloudMlV1__ListJobsResponse", "Lists the jobs in the project, newest first."},
     "ml.jobs.list",
     Scope::kProject},
    {"POST",
     R"(/v2/entries:list)",
     "Cloud Logging entries.list: job log entries (resourceNames, filter, orderBy, pageSize, "
     "pageToken)",
     false,
     RouteKind::kLogging,
     &H::ListLogEntries,
     {},
     "logging.logEntries.list",
     Scope::kLogEntries},
    {"GET",
     R"(/discovery/v1/apis/ml/v1/rest)",
     "the ml v1 discovery document",
     false,
     RouteKind::kOther,
     &H::Discovery,
     {},
     kPublic,
     Scope::kDaemon},
    {"GET",
     R"(/\$discovery/rest)",
     "the ml v1 discovery document (?version=v1)",
     false,
     RouteKind::kOther,
     &H::Discovery,
     {},
     kPublic,
     Scope::kDaemon},
    {"GET",
     R"(/v1/admin/admission)",
     "admission state {\"paused\": bool}",
     false,
     RouteKind::kOther,
     &H::GetAdmission,
     {},
     kAdmin,
     Scope::kDaemon},
    {"PUT",
     R"(/v1/admin/admission)",
     "pause or resume admission {\"paused\": bool}",
     true,
     RouteKind::kOther,
     &H::PutAdmission,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.setAdmission"},
    {"POST",
     R"(/v1/admin/gc)",
     "garbage collection by the retention policy now {\"dryRun\": bool}; the report",
     true,
     RouteKind::kOther,
     &H::RunGc,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.gc"},
    {"POST",
     R"(/v1/admin/purge)",
     "delete the records of jobs finished before a time {\"finishedBefore\": RFC 3339, "
     "\"dryRun\": bool}",
     true,
     RouteKind::kOther,
     &H::Purge,
     {},
     kAdmin,
     Scope::kDaemon,
     "trainyard.admin.purge"},
    {"GET",
     R"(/v1/help)",
     "this table",
     false,
     RouteKind::kOther,
     &H::Help,
     {},
     kPublic,
     Scope::kDaemon},
    {"GET",
     R"(/healthz)",
     "liveness: 200 while the process serves",
     false,
     RouteKind::kOther,
     &H::Healthz,
     {},
     kPublic,
     Scope::kDaemon},
    {"GET",
     R"(/readyz)",
     "readiness: 200 once jobs are accepted",
     false,
     RouteKind::kOther,
     &H::Readyz,
     {},
     kPublic,
     Scope::kDaemon},
    {"GET",
     R"(/metrics)",
     "Prometheus metrics",
     false,
     RouteKind::kOther,
     &H::RenderMetrics,
     {},
     kAdmin,
     Scope::kDaemon},
    // The web console's additions (console_api.h, docs/api.md "Console additions").
    {"GET",
     R"(/v1/projects/([^/]+)/jobs:summary)",
     "jobs summary: the project's job counts by state",
     false,
     RouteKind::kMl,
     &H::JobsSummary,
     {},
     "ml.jobs.list",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs:summary)",
     "job log summary: line count per task and trial at a snapshot (taskName, trialId)",
     false,
     RouteKind::kMl,
     &H::LogsSummary,
     {},
     "ml.jobs.get",
     Scope::kJob},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs:lines)",
     "job log lines by position: from the lineOffset-th line in ingestion order (pageSize, "
     "taskName, trialId, snapshotInsertId)",
     false,
     RouteKind::kMl,
     &H::LogLines,
     {},
     "ml.jobs.get",
     Scope::kJob},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs:search)",
     "job log search: the positions of lines containing text, after afterLineOffset or before "
     "beforeLineOffset (pageSize, matchCase, countMatches, taskName, trialId, snapshotInsertId)",
     false,
     RouteKind::kMl,
     &H::SearchLogs,
     {},
     "ml.jobs.get",
     Scope::kJob},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs:download)",
     "job log download: every line as text/plain, streamed (taskName, trialId, minSeverity, "
     "format=text|message, snapshotInsertId)",
     false,
     RouteKind::kMl,
     &H::DownloadLogs,
     {},
     "ml.jobs.get",
     Scope::kJob},  // The console's session (docs/security.md "The console").
    {"POST",
     R"(/console/session)",
     "console sign-in: {token} -> an HttpOnly session cookie",
     true,
     RouteKind::kOther,
     &H::CreateSession,
     {},
     kPublic,
     Scope::kDaemon,
     "console.sessions.create"},
    {"GET",
     R"(/console/session)",
     "the console session's principal",
     false,
     RouteKind::kOther,
     &H::GetSession,
     {},
     kAnyPrincipal,
     Scope::kDaemon},
    {"DELETE",
     R"(/console/session)",
     "console sign-out: revokes the session's token",
     true,
     RouteKind::kOther,
     &H::DeleteSession,
     {},
     kAnyPrincipal,
     Scope::kDaemon,
     "console.sessions.delete"},
    // The console's Trials tab and Queue page (console_api.h, docs/api.md).
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/trials)",
     "a tuning job's trials with allMetrics, the intermediate reports (pageSize, pageToken, "
     "trialId)",
     false,
     RouteKind::kMl,
     &H::JobTrials,
     {},
     "ml.jobs.get",
     Scope::kJob},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs:queue)",
     "queue and capacity: admission, the node's capacity and GPUs, the project's admitted jobs "
     "with their replicas, its queued jobs in admission order (pageSize, pageToken)",
     false,
     RouteKind::kMl,
     &H::JobsQueue,
     {},
     "ml.jobs.list",
     Scope::kProject},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/history)",
     "a job's state changes, oldest first (the console's state history)",
     false,
     RouteKind::kMl,
     &H::JobHistory,
     {},
     "ml.jobs.get",
     Scope::kJob},
};

}  // namespace

std::span<const Route> Routes() { return kRoutes; }

std::string RouteTableHelp() {
  std::string out;
  for (const auto& r : kRoutes) {
    out += std::string(r.method) + " " + r.pattern + "  " + (r.mutating ? "[mutating] " : "") +
           r.help + "\n";
  }
  return out;
}

const char* ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kDaemon:
      return "daemon";
    case Scope::kProject:
      return "project";
    case Scope::kJob:
      return "job";
    case Scope::kBucket:
      return "bucket";
    case Scope::kLogEntries:
      return "logEntries";
  }
  return "daemon";
}

std::string RouteTableJson() {
  json routes = json::array();
  for (const auto& r : kRoutes) {
    routes.push_back({{"method", r.method},
                      {"pattern", r.pattern},
                      {"permission", r.permission == nullptr ? json(nullptr) : json(r.permission)},
                      {"scope", ScopeName(r.scope)},
                      {"mutating", r.mutating},
                      {"help", r.help}});
  }
  json ops = json::array();
  for (const auto& o : storage::StorageOperations()) {
    ops.push_back({{"name", o.name},
                   {"method", o.method},
                   {"example", o.example},
                   {"permission", o.permission},
                   {"sourcePermission",
                    o.source_permission == nullptr ? json(nullptr) : json(o.source_permission)},
                   {"mutating", o.mutating}});
  }
  return Dump(json{{"routes", routes}, {"storageOperations", ops}});
}

static internal::HttpLimits LimitsOf(const ApiOptions& o) {
  internal::HttpLimits limits;
  limits.min_threads = static_cast<size_t>(std::max(1, o.threads));
  limits.max_threads = static_cast<size_t>(std::max(o.threads, o.max_threads));
  return limits;
}

struct ApiServer::Impl {
  ApiOptions options;
  Handlers handlers;
  internal::HttpServer server;
  std::unique_ptr<httplib::SSLServer> tls_server;
  int tls_port = -1;

  Impl(ApiOptions o, scheduler::JobService& s, store::JobStore& st, storage::BucketStore& b)
      : options(std::move(o)),
        handlers(options, s, st),
        server(LimitsOf(options), BodyLimit, RefuseBody) {
    handlers.set_buckets(&b);
  }
};

ApiServer::ApiServer(ApiOptions options, scheduler::JobService& scheduler, store::JobStore& store,
                     storage::BucketStore& buckets)
    : impl_(std::make_unique<Impl>(std::move(options), scheduler, store, buckets)) {
  impl_->handlers.Setup(impl_->server);
}

ApiServer::~ApiServer() { Stop(); }

void ApiServer::SetAuthStore(auth::AuthStore* store) { impl_->handlers.set_auth_store(store); }

namespace {

// httplib (as Debian builds it) listens with a backlog of 5: a burst of new connections then
// waits for 1 s SYN retransmits. The socket is captured before bind and given a real backlog
// after it (listen() on a listening socket only updates the backlog).
Result<int> BindServer(httplib::Server& server, const std::string& host, int port) {
  auto fd = std::make_shared<int>(-1);
  server.set_socket_options([fd](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    *fd = sock;
  });
  int bound = port;
  if (port == 0) {
    bound = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound < 0) {
    return Unavailable("cannot listen on " + host + ":" + std::to_string(port) +
                       " (address in use or not permitted)");
  }
  if (*fd >= 0) ::listen(*fd, SOMAXCONN);
  return bound;
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  std::string h(host);
  return ::inet_pton(AF_INET, h.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

Result<int> ApiServer::Bind() {
  const ApiOptions& o = impl_->options;
  // Authentication off means anyone who reaches the port acts as an administrator: allowed on
  // loopback only. With it on, tokens cross a plain-HTTP listener in clear text: refused on
  // a non-loopback address unless allow_insecure_http says the network is trusted.
  if (impl_->handlers.auth_store() == nullptr) {
    return FailedPrecondition("the API server has no auth store (SetAuthStore before Bind)");
  }
  for (const auto& [host, port, what, tls] :
       {std::tuple{o.host, o.port, "API", false},
        std::tuple{o.tls_host, o.tls_port, "TLS API", true}}) {
    if (port < 0 || IsLoopbackHost(host)) continue;
    if (!o.auth) {
      return FailedPrecondition(
          std::string("refusing to listen on ") + host + " (the " + what +
          " listener), which is not a loopback address, with authentication off: anyone who "
          "could reach it would act as an administrator. Turn authentication on (auth: true) or "
          "listen on 127.0.0.1 (docs/security.md)");
    }
    if (!tls && !o.allow_insecure_http) {
      return FailedPrecondition(
          std::string("refusing to listen on ") + host +
          " over plain HTTP: API tokens would cross the network in clear text. Serve remote "
          "clients on the TLS listener (tls_listen) and keep listen on 127.0.0.1, or set "
          "allow_insecure_http: true on a trusted network (docs/security.md)");
    }
  }
  if (o.tls_port >= 0) {
    impl_->tls_server =
        std::make_unique<httplib::SSLServer>(o.tls_cert_file.c_str(), o.tls_key_file.c_str());
    if (!impl_->tls_server->is_valid()) {
      impl_->tls_server.reset();
      return InvalidArgument("cannot use the TLS certificate " + o.tls_cert_file + " and key " +
                             o.tls_key_file + " (unreadable, not PEM, or not a pair)");
    }
    internal::HttpServer::Configure(*impl_->tls_server, LimitsOf(o), BodyLimit, RefuseBody);
    impl_->handlers.Setup(*impl_->tls_server);
    auto port = BindServer(*impl_->tls_server, o.tls_host, o.tls_port);
    if (!port.ok()) return port.status();
    impl_->tls_port = *port;
  }
  return BindServer(impl_->server, o.host, o.port);
}

int ApiServer::tls_port() const { return impl_->tls_port; }

void ApiServer::Serve() {
  std::thread tls_thread;
  std::atomic<bool> tls_done{false};
  if (impl_->tls_server) {
    tls_thread = std::thread([this, &tls_done] {
      impl_->tls_server->listen_after_bind();
      tls_done = true;
    });
  }
  impl_->server.listen_after_bind();
  if (tls_thread.joinable()) {
    // stop() is a no-op until the TLS listener runs: keep asking until its thread returns.
    while (!tls_done) {
      impl_->tls_server->stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    tls_thread.join();
  }
}

void ApiServer::Stop() {
  if (!impl_) return;
  impl_->server.stop();
  if (impl_->tls_server) impl_->tls_server->stop();
}

void ApiServer::SetReady(bool ready) { impl_->handlers.set_ready(ready); }

void ApiServer::SetOperations(Operations* operations) {
  impl_->handlers.set_operations(operations);
}

}  // namespace trainyard::api
