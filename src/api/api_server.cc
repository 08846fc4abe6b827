#include "trainyard/api/api_server.h"

#include <httplib.h>

#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

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

// Whether the request on this worker thread reached a route handler (set per request).
thread_local bool routed = false;

// Latency histogram buckets (seconds), Prometheus convention.
constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                             0.05,   0.1,   0.25,   0.5,   1.0,  2.5};

struct RouteMetrics {
  std::map<int, uint64_t> by_code;
  std::array<uint64_t, kBuckets.size()> buckets{};
  uint64_t count = 0;
  double sum = 0;
};

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
        out << "trainyard_api_requests_total{method=\"" << key.first << "\",route=\"" << key.second
            << "\",code=\"" << code << "\"} " << n << "\n";
      }
    }
    out << "# HELP trainyard_api_request_duration_seconds API request latency.\n"
        << "# TYPE trainyard_api_request_duration_seconds histogram\n";
    for (const auto& [key, m] : routes_) {
      std::string labels = "method=\"" + key.first + "\",route=\"" + key.second + "\"";
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

// Project ids as Google Cloud allows them (letters, digits, '-', also domain-scoped "a.com:b"),
// starting with a letter: keeps "..", "/" and control bytes out of paths built from them.
Status ValidateProject(const std::string& project) {
  bool ok = !project.empty() && project.size() <= 100 &&
            std::isalpha(static_cast<unsigned char>(project[0]));
  for (char c : project) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == ':')) {
      ok = false;
    }
  }
  if (ok) return Status::Ok();
  return Status(StatusCode::kInvalidArgument,
                "Invalid project id in the resource name: it must start with a letter and "
                "contain only letters, digits, '-', '_', '.' and ':'")
      .AddViolation("name", "invalid project id");
}

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

json LogEntryJson(const model::LogEntry& e) {
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

struct Route {
  const char* method;
  const char* pattern;  // regex over the path
  const char* help;
  bool mutating;
};

// The ml v1 route table (order matters: the first match wins).
constexpr Route kRoutes[] = {
    {"POST", R"(/v1/projects/([^/]+)/jobs/([^/:]+):cancel)", "projects.jobs.cancel: cancel a job",
     true},
    {"GET", R"(/v1/projects/([^/]+)/jobs/([^/:]+)/logs)",
     "job log entries after a cursor (afterInsertId, taskName, pageSize)", false},
    {"GET", R"(/v1/projects/([^/]+)/jobs/([^/:]+))", "projects.jobs.get: describe a job", false},
    {"PATCH", R"(/v1/projects/([^/]+)/jobs/([^/:]+))",
     "projects.jobs.patch: replace labels (updateMask=labels,etag)", true},
    {"POST", R"(/v1/projects/([^/]+)/jobs)", "projects.jobs.create: submit a training job", true},
    {"GET", R"(/v1/projects/([^/]+)/jobs)",
     "projects.jobs.list: list jobs (filter, pageSize, pageToken)", false},
    {"GET", R"(/v1/admin/admission)", "admission state {\"paused\": bool}", false},
    {"PUT", R"(/v1/admin/admission)", "pause or resume admission {\"paused\": bool}", true},
    {"GET", R"(/v1/help)", "this table", false},
    {"GET", R"(/healthz)", "liveness: 200 while the process serves", false},
    {"GET", R"(/readyz)", "readiness: 200 once jobs are accepted", false},
    {"GET", R"(/metrics)", "Prometheus metrics", false},
};

}  // namespace

std::string RouteTableHelp() {
  std::string out;
  for (const auto& r : kRoutes) {
    out += std::string(r.method) + " " + r.pattern + "  " + (r.mutating ? "[mutating] " : "") +
           r.help + "\n";
  }
  return out;
}

struct ApiServer::Impl {
  ApiOptions options;
  scheduler::Scheduler& scheduler;
  store::JobStore& store;
  storage::BucketStore& buckets;
  httplib::Server server;
  Metrics metrics;
  std::atomic<bool> ready{false};
  model::Capabilities caps;

  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  Impl(ApiOptions o, scheduler::Scheduler& s, store::JobStore& st, storage::BucketStore& b)
      : options(std::move(o)), scheduler(s), store(st), buckets(b) {}

  // Wraps a handler: latency and code metrics, and no exception ever escapes.
  Handler Wrap(const Route& route, Handler h) {
    std::string label = std::string(route.pattern);
    std::string method = route.method;
    const bool has_project = label.rfind("/v1/projects/", 0) == 0;
    return
        [this, label, method, h, has_project](const httplib::Request& req, httplib::Response& res) {
          int64_t start = MonotonicMicros();
          routed = true;
          try {
            Status project_ok = has_project ? ValidateProject(req.matches[1]) : Status::Ok();
            if (!project_ok.ok()) {
              WriteError(res, project_ok);
            } else {
              h(req, res);
            }
          } catch (const std::exception& e) {
            TY_LOG_ERROR(kLog, "{} {}: {}", req.method, req.path, e.what());
            WriteError(res, Internal(std::string("internal error: ") + e.what()));
          }
          metrics.Record(label, method, res.status,
                         static_cast<double>(MonotonicMicros() - start) / 1e6);
        };
  }

  void Register(const Route& r, Handler h) {
    auto wrapped = Wrap(r, std::move(h));
    std::string m = r.method;
    if (m == "GET")
      server.Get(r.pattern, wrapped);
    else if (m == "POST")
      server.Post(r.pattern, wrapped);
    else if (m == "PUT")
      server.Put(r.pattern, wrapped);
    else if (m == "PATCH")
      server.Patch(r.pattern, wrapped);
    else if (m == "DELETE")
      server.Delete(r.pattern, wrapped);
  }

  void CreateJob(const httplib::Request& req, httplib::Response& res) {
    std::string project = req.matches[1];
    auto job = model::ParseJobForCreate(req.body, project, caps);
    if (!job.ok()) return WriteError(res, job.status());
    Status runnable = scheduler.CheckRunnable(*job);
    if (!runnable.ok()) return WriteError(res, runnable);
    auto stored = scheduler.Submit(std::move(job).value());
    if (!stored.ok()) return WriteError(res, stored.status());
    WriteJson(res, model::JobToJson(*stored));
  }

  void GetJob(const httplib::Request& req, httplib::Response& res) {
    auto job = scheduler.GetJob(req.matches[1], req.matches[2]);
    if (!job.ok()) return WriteError(res, job.status());
    WriteJson(res, model::JobToJson(*job));
  }

  void ListJobs(const httplib::Request& req, httplib::Response& res) {
    auto page_size = ParseIntParam(req, "pageSize", 20);
    if (!page_size.ok()) return WriteError(res, page_size.status());
    int64_t ps = *page_size;
    if (ps <= 0) ps = 20;
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
    auto page = store.ListJobs(lr);
    if (!page.ok()) return WriteError(res, page.status());
    if (page->jobs.empty() && page->next_page_token.empty()) return WriteJson(res, "{}");
    scheduler.FillLiveFields(page->jobs);
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
    Status st = scheduler.Cancel(req.matches[1], req.matches[2]);
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
    auto job = scheduler.UpdateLabels(req.matches[1], req.matches[2], patch->labels, patch->etag,
                                      !patch->etag.empty());
    if (!job.ok()) return WriteError(res, job.status());
    WriteJson(res, model::JobToJson(*job));
  }

  void JobLogs(const httplib::Request& req, httplib::Response& res) {
    std::string project = req.matches[1];
    std::string job_id = req.matches[2];
    auto job = scheduler.GetJob(project, job_id);
    if (!job.ok()) return WriteError(res, job.status());
    auto after = ParseIntParam(req, "afterInsertId", 0);
    if (!after.ok()) return WriteError(res, after.status());
    auto limit = ParseIntParam(req, "pageSize", 1000);
    if (!limit.ok()) return WriteError(res, limit.status());
    store::LogQuery q;
    q.project = project;
    q.job_id = job_id;
    q.task_name = req.has_param("taskName") ? req.get_param_value("taskName") : "";
    q.after_insert_id = *after;
    q.limit = static_cast<int>(std::clamp<int64_t>(*limit, 1, 10000));
    auto entries = store.ReadLogs(q);
    if (!entries.ok()) return WriteError(res, entries.status());
    json out;
    out["entries"] = json::array();
    int64_t cursor = *after;
    for (const auto& e : *entries) {
      out["entries"].push_back(LogEntryJson(e));
      cursor = std::max(cursor, e.insert_id);
    }
    out["nextAfterInsertId"] = std::to_string(cursor);
    WriteJson(res, Dump(out));
  }

  void RenderMetrics(httplib::Response& res) {
    std::ostringstream out;
    out << "# HELP trainyard_jobs Jobs by state.\n# TYPE trainyard_jobs gauge\n";
    std::map<model::JobState, int64_t> counts;
    if (auto c = store.CountJobsByState(); c.ok()) {
      for (const auto& [s, n] : *c) counts[s] = n;
    }
    for (int i = 1; i <= 7; ++i) {
      auto s = static_cast<model::JobState>(i);
      out << "trainyard_jobs{state=\"" << model::JobStateName(s) << "\"} " << counts[s] << "\n";
    }
    auto stats = scheduler.Stats();
    out << "# HELP trainyard_running_replicas Replicas whose processes run.\n"
        << "# TYPE trainyard_running_replicas gauge\n"
        << "trainyard_running_replicas " << stats.running_replicas << "\n"
        << "# HELP trainyard_admission_paused 1 while admission is paused.\n"
        << "# TYPE trainyard_admission_paused gauge\n"
        << "trainyard_admission_paused " << (scheduler.admission_paused() ? 1 : 0) << "\n";
    metrics.Render(out);
    res.set_content(out.str(), "text/plain; version=0.0.4; charset=utf-8");
  }

  void Setup() {
    server.new_task_queue = [n = options.threads] {
      return new httplib::ThreadPool(static_cast<size_t>(n));
    };
    // Responses go out as two writes (headers, body): without TCP_NODELAY, Nagle's algorithm
    // and the client's delayed ACK add ~40 ms to every request on a keep-alive connection.
    server.set_tcp_nodelay(true);
    server.set_keep_alive_max_count(100000);
    // Idle keep-alive connections hold a worker thread: keep the timeout short.
    server.set_keep_alive_timeout(5);
    server.set_payload_max_length(1ULL << 32);
    const Route* r = kRoutes;
    Register(r[0], [this](const auto& q, auto& s) { CancelJob(q, s); });
    Register(r[1], [this](const auto& q, auto& s) { JobLogs(q, s); });
    Register(r[2], [this](const auto& q, auto& s) { GetJob(q, s); });
    Register(r[3], [this](const auto& q, auto& s) { PatchJob(q, s); });
    Register(r[4], [this](const auto& q, auto& s) { CreateJob(q, s); });
    Register(r[5], [this](const auto& q, auto& s) { ListJobs(q, s); });
    Register(r[6], [this](const auto&, auto& s) {
      WriteJson(s, json{{"paused", scheduler.admission_paused()}}.dump());
    });
    Register(r[7], [this](const auto& q, auto& s) {
      json body = json::parse(q.body, nullptr, false);
      if (body.is_discarded() || !body.is_object() || !body.contains("paused") ||
          !body["paused"].is_boolean()) {
        return WriteError(
            s, Status(StatusCode::kInvalidArgument, "expected a body {\"paused\": true|false}")
                   .AddViolation("paused", "required boolean"));
      }
      scheduler.SetAdmissionPaused(body["paused"].get<bool>());
      WriteJson(s, json{{"paused", scheduler.admission_paused()}}.dump());
    });
    Register(r[8], [](const auto&, auto& s) { s.set_content(RouteTableHelp(), "text/plain"); });
    Register(r[9], [](const auto&, auto& s) { s.set_content("ok\n", "text/plain"); });
    Register(r[10], [this](const auto&, auto& s) {
      if (ready) {
        s.set_content("ready\n", "text/plain");
      } else {
        s.status = 503;
        s.set_content("starting\n", "text/plain");
      }
    });
    Register(r[11], [this](const auto&, auto& s) { RenderMetrics(s); });
    storage::RegisterStorageRoutes(server, buckets, options.default_project);
    server.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
      routed = false;
      return httplib::Server::HandlerResponse::Unhandled;
    });
    // Runs for every response >= 400, routed or not, outside httplib's handler try/catch.
    server.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (routed) return;
      try {
        if (res.status == 404 && res.body.empty()) {
          WriteError(res,
                     NotFound("The requested URL " + req.path + " was not found on this server"));
        }
        metrics.Record("unmatched", req.method, res.status, 0);
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
};

ApiServer::ApiServer(ApiOptions options, scheduler::Scheduler& scheduler, store::JobStore& store,
                     storage::BucketStore& buckets)
    : impl_(std::make_unique<Impl>(std::move(options), scheduler, store, buckets)) {
  impl_->Setup();
}

ApiServer::~ApiServer() { Stop(); }

Result<int> ApiServer::Bind() {
  int port = impl_->options.port;
  if (port == 0) {
    port = impl_->server.bind_to_any_port(impl_->options.host);
  } else if (!impl_->server.bind_to_port(impl_->options.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return Unavailable("cannot listen on " + impl_->options.host + ":" +
                       std::to_string(impl_->options.port) + " (address in use or not permitted)");
  }
  return port;
}

void ApiServer::Serve() { impl_->server.listen_after_bind(); }

void ApiServer::Stop() {
  if (impl_) impl_->server.stop();
}

void ApiServer::SetReady(bool ready) { impl_->ready = ready; }

}  // namespace trainyard::api
