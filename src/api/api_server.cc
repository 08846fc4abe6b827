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
#include <sstream>
#include <thread>
#include <tuple>

#include "api_util.h"
#include "console_api.h"
#include "discovery.h"
#include "http_server.h"
#include "logging_api.h"
#include "routes.h"
#include "trainyard/console/console.h"
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

// What a request presented as credentials (all of it ignored while authentication is off).
RequestCredentials CredentialsOf(const httplib::Request& req) {
  RequestCredentials c;
  std::string auth = req.get_header_value("Authorization");
  if (auth.size() > 7 &&
      (auth.compare(0, 7, "Bearer ") == 0 || auth.compare(0, 7, "bearer ") == 0)) {
    c.bearer_token = auth.substr(7);
  } else if (req.has_param("access_token")) {
    c.bearer_token = req.get_param_value("access_token");
  } else if (req.has_param("oauth_token")) {
    c.bearer_token = req.get_param_value("oauth_token");
  }
  if (req.has_param("key")) c.api_key = req.get_param_value("key");
  return c;
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

class AllowAllAuthenticator : public Authenticator {
 public:
  Status Authenticate(const RequestCredentials&) override { return Status::Ok(); }
};

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
    Status runnable = scheduler_.CheckRunnable(*job);
    if (!runnable.ok()) return WriteError(res, runnable);
    auto stored = scheduler_.Submit(std::move(job).value());
    if (!stored.ok()) return WriteError(res, stored.status());
    WriteJson(res, model::JobToJson(*stored));
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
    lr.page_size = static_cast<int>(ps);
    lr.page_token = req.has_param("pageToken") ? req.get_param_value("pageToken") : "";
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
    auto body = api::ListJobLogs(store_, req.matches[1], req.matches[2], req.params);
    if (!body.ok()) return WriteError(res, body.status());
    WriteJson(res, *body);
  }

  // The web console's additions (console_api.h).
  void JobsSummary(const httplib::Request& req, httplib::Response& res) {
    auto body = api::JobsSummary(store_, req.matches[1]);
    if (!body.ok()) return WriteError(res, body.status());
    WriteJson(res, *body);
  }
  void LogsSummary(const httplib::Request& req, httplib::Response& res) {
    auto body = api::LogsSummary(store_, req.matches[1], req.matches[2], req.params);
    if (!body.ok()) return WriteError(res, body.status());
    WriteJson(res, *body);
  }
  void LogLines(const httplib::Request& req, httplib::Response& res) {
    auto body = api::LogLines(store_, req.matches[1], req.matches[2], req.params);
    if (!body.ok()) return WriteError(res, body.status());
    WriteJson(res, *body);
  }

  void ListLogEntries(const httplib::Request& req, httplib::Response& res) {
    auto body = api::ListLogEntries(store_, req.body);
    if (!body.ok()) return WriteError(res, body.status());
    WriteJson(res, *body);
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

  void Help(const httplib::Request&, httplib::Response& res) {
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
    const scheduler::NodeCapacity& node = scheduler_.node();
    out << "# HELP trainyard_node_capacity What admission counts on this node (after "
           "overcommit): vCPUs, memory bytes, GPUs.\n"
        << "# TYPE trainyard_node_capacity gauge\n"
        << "trainyard_node_capacity{resource=\"cpu\"} "
        << static_cast<double>(node.cpu_millis) / 1000 << "\n"
        << "trainyard_node_capacity{resource=\"memory_bytes\"} " << node.memory_bytes << "\n"
        << "trainyard_node_capacity{resource=\"gpu\"} " << node.gpus.size() << "\n"
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

  // Checks that run before a route's handler: body size, credentials, the project id.
  Status Admit(const Route& route, const httplib::Request& req) {
    if (route.kind == RouteKind::kOther) return Status::Ok();
    TRAINYARD_RETURN_IF_ERROR(authenticator_->Authenticate(CredentialsOf(req)));
    if (route.kind == RouteKind::kMl && req.matches.size() > 1) {
      return ValidateProject(req.matches[1]);
    }
    return Status::Ok();
  }

  // Wraps a row's handler: admission checks, latency and code metrics, and no exception ever
  // escapes.
  httplib::Server::Handler Wrap(const Route& route) {
    return [this, &route](const httplib::Request& req, httplib::Response& res) {
      int64_t start = MonotonicMicros();
      try {
        Status admitted = Admit(route, req);
        if (req.body.size() > kMaxApiBody) {
          // A chunked body (its length was not known before reading) over the limit.
          RefuseBody(
              req, res, 413,
              "Request payload size exceeds the limit: " + std::to_string(kMaxApiBody) + " bytes.");
        } else if (!admitted.ok()) {
          WriteError(res, admitted);
        } else {
          (this->*route.handler)(req, res);
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
      } else if (m == "PUT") {
        server.Put(r.pattern, wrapped);
      } else if (m == "PATCH") {
        server.Patch(r.pattern, wrapped);
      } else if (m == "DELETE") {
        server.Delete(r.pattern, wrapped);
      }
    }
    storage::RegisterStorageRoutes(server, *buckets_, options_.default_project);
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
  void set_operations(Operations* o) { operations_ = o; }
  void set_authenticator(std::unique_ptr<Authenticator> a) { authenticator_ = std::move(a); }

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
  std::unique_ptr<Authenticator> authenticator_ = std::make_unique<AllowAllAuthenticator>();
};

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
};
constexpr ParamSpec kPatchParams[] = {
    kName,
    {"updateMask", "query", "string", "google-fieldmask", nullptr, false,
     "Required. labels, or labels,etag."},
};

using H = Handlers;
constexpr const char* kJob = "GoogleCloudMlV1__Job";

// trainyardd's routes (the first match wins). The ml v1 rows carry their discovery metadata.
const Route kRoutes[] = {
    {"POST",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+):cancel)",
     "projects.jobs.cancel: cancel a job",
     true,
     RouteKind::kMl,
     &H::CancelJob,
     {"ml.projects.jobs.cancel", "v1/{+name}:cancel",
      "v1/projects/{projectsId}/jobs/{jobsId}:cancel", kNameParams,
      "GoogleCloudMlV1__CancelJobRequest", "GoogleProtobuf__Empty", "Cancels a running job."}},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs)",
     "job log entries: listed in time order (orderBy, pageToken) or followed after a cursor "
     "(afterInsertId); taskName, trialId, minSeverity, startTime, endTime, pageSize",
     false,
     RouteKind::kMl,
     &H::JobLogs,
     {}},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+))",
     "projects.jobs.get: describe a job",
     false,
     RouteKind::kMl,
     &H::GetJob,
     {"ml.projects.jobs.get", "v1/{+name}", "v1/projects/{projectsId}/jobs/{jobsId}", kNameParams,
      nullptr, kJob, "Describes a job."}},
    {"PATCH",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+))",
     "projects.jobs.patch: replace labels (updateMask=labels,etag)",
     true,
     RouteKind::kMl,
     &H::PatchJob,
     {"ml.projects.jobs.patch", "v1/{+name}", "v1/projects/{projectsId}/jobs/{jobsId}",
      kPatchParams, kJob, kJob, "Updates a specific job resource (labels only)."}},
    {"POST",
     R"(/v1/projects/([^/]+)/jobs)",
     "projects.jobs.create: submit a training job",
     true,
     RouteKind::kMl,
     &H::CreateJob,
     {"ml.projects.jobs.create", "v1/{+parent}/jobs", "v1/projects/{projectsId}/jobs",
      kParentParams, kJob, kJob, "Creates a training job."}},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs)",
     "projects.jobs.list: list jobs (filter, pageSize, pageToken)",
     false,
     RouteKind::kMl,
     &H::ListJobs,
     {"ml.projects.jobs.list", "v1/{+parent}/jobs", "v1/projects/{projectsId}/jobs", kListParams,
      nullptr, "GoogleCloudMlV1__ListJobsResponse",
      "Lists the jobs in the project, newest first."}},
    {"POST",
     R"(/v2/entries:list)",
     "Cloud Logging entries.list: job log entries (resourceNames, filter, orderBy, pageSize, "
     "pageToken)",
     false,
     RouteKind::kLogging,
     &H::ListLogEntries,
     {}},
    {"GET",
     R"(/discovery/v1/apis/ml/v1/rest)",
     "the ml v1 discovery document",
     false,
     RouteKind::kOther,
     &H::Discovery,
     {}},
    {"GET",
     R"(/\$discovery/rest)",
     "the ml v1 discovery document (?version=v1)",
     false,
     RouteKind::kOther,
     &H::Discovery,
     {}},
    {"GET",
     R"(/v1/admin/admission)",
     "admission state {\"paused\": bool}",
     false,
     RouteKind::kOther,
     &H::GetAdmission,
     {}},
    {"PUT",
     R"(/v1/admin/admission)",
     "pause or resume admission {\"paused\": bool}",
     true,
     RouteKind::kOther,
     &H::PutAdmission,
     {}},
    {"POST",
     R"(/v1/admin/gc)",
     "garbage collection by the retention policy now {\"dryRun\": bool}; the report",
     true,
     RouteKind::kOther,
     &H::RunGc,
     {}},
    {"POST",
     R"(/v1/admin/purge)",
     "delete the records of jobs finished before a time {\"finishedBefore\": RFC 3339, "
     "\"dryRun\": bool}",
     true,
     RouteKind::kOther,
     &H::Purge,
     {}},
    {"GET", R"(/v1/help)", "this table", false, RouteKind::kOther, &H::Help, {}},
    {"GET",
     R"(/healthz)",
     "liveness: 200 while the process serves",
     false,
     RouteKind::kOther,
     &H::Healthz,
     {}},
    {"GET",
     R"(/readyz)",
     "readiness: 200 once jobs are accepted",
     false,
     RouteKind::kOther,
     &H::Readyz,
     {}},
    {"GET", R"(/metrics)", "Prometheus metrics", false, RouteKind::kOther, &H::RenderMetrics, {}},
    // The web console's additions (console_api.h, docs/api.md "Console additions").
    {"GET",
     R"(/v1/projects/([^/]+)/jobs:summary)",
     "jobs summary: the project's job counts by state",
     false,
     RouteKind::kMl,
     &H::JobsSummary,
     {}},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs:summary)",
     "job log summary: line count per task and trial at a snapshot (taskName, trialId)",
     false,
     RouteKind::kMl,
     &H::LogsSummary,
     {}},
    {"GET",
     R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs:lines)",
     "job log lines by position: from the lineOffset-th line in ingestion order (pageSize, "
     "taskName, trialId, snapshotInsertId)",
     false,
     RouteKind::kMl,
     &H::LogLines,
     {}},
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

void ApiServer::SetAuthenticator(std::unique_ptr<Authenticator> authenticator) {
  impl_->handlers.set_authenticator(std::move(authenticator));
}

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
  // Authentication is off in this version: anyone who reaches the port can act as any user.
  for (const auto& [host, port, what] :
       {std::tuple{o.host, o.port, "API"}, std::tuple{o.tls_host, o.tls_port, "TLS API"}}) {
    if (port >= 0 && !IsLoopbackHost(host)) {
      TY_LOG_WARN(kLog,
                  "the {} listens on {}, which is not a loopback address, and authentication is "
                  "off: anyone who can reach it can submit and cancel jobs, read every job's "
                  "logs and read and write the buckets. Listen on 127.0.0.1 unless this network "
                  "is trusted.",
                  what, host);
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
