// A tiny in-memory stand-in for trainyardd's REST API (jobs, logs, storage, admission) on a free
// loopback port, for client and CLI tests. Speaks the contract in src/client's header; it is not
// a reference implementation (no validation beyond what the tests need).
#pragma once

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace trainyard::testing {

class FakeDaemon {
 public:
  using json = nlohmann::json;

  struct Request {
    std::string method;
    std::string path;  // with the query, as sent
    std::string body;
    std::string authorization;
  };

  FakeDaemon() {
    Routes();
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeDaemon() {
    // stop() is a no-op until the accept loop runs, so wait for it first.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  // --- state the tests arrange and inspect (all under mu_) ---
  void PutJob(const std::string& project, const json& job) {
    std::lock_guard<std::mutex> l(mu_);
    jobs_[project][job["jobId"].get<std::string>()] = job;
    order_[project].push_back(job["jobId"].get<std::string>());
  }
  json GetJob(const std::string& project, const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    return jobs_[project][id];
  }
  void AddLog(const std::string& job_id, const std::string& severity, const std::string& task,
              const std::string& message, const std::string& trial = "",
              const std::string& timestamp = "2026-11-21T10:00:00.123456Z") {
    std::lock_guard<std::mutex> l(mu_);
    json e = {{"insertId", std::to_string(++next_insert_id_)},
              {"timestamp", timestamp},
              {"severity", severity},
              {"resource",
               {{"type", "ml_job"},
                {"labels", {{"job_id", job_id}, {"task_name", task}, {"project_id", "p"}}}}},
              {"jsonPayload", {{"message", message}}}};
    if (!trial.empty()) e["labels"] = {{"trial_id", trial}};
    logs_[job_id].push_back(e);
  }
  // Ends the job (sets endTime/state) the next time its logs are read `after_reads` times.
  void EndJobAfterLogReads(const std::string& project, const std::string& id, int after_reads,
                           const std::string& state) {
    std::lock_guard<std::mutex> l(mu_);
    pending_end_[id] = {project, after_reads, state};
  }
  std::map<std::string, std::string> Objects() {
    std::lock_guard<std::mutex> l(mu_);
    return objects_;
  }
  std::vector<Request> Requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  bool paused() {
    std::lock_guard<std::mutex> l(mu_);
    return paused_;
  }
  int list_page_size_cap = 100;
  // After `after` more log requests, the next `n` answer 503 UNAVAILABLE (a daemon
  // restarting); when `then_add` is set, that line is stored once they have been answered.
  void FailLogRequests(int after, int n, std::optional<json> then_add = std::nullopt) {
    std::lock_guard<std::mutex> l(mu_);
    unavailable_after_ = after;
    unavailable_requests_ = n;
    add_after_outage_ = std::move(then_add);
  }

 private:
  struct PendingEnd {
    std::string project;
    int reads_left;
    std::string state;
  };

  static void Error(httplib::Response& res, int code, const std::string& status,
                    const std::string& message) {
    res.status = code;
    json body = {{"error", {{"code", code}, {"message", message}, {"status", status}}}};
    res.set_content(body.dump(), "application/json");
  }

  void Record(const httplib::Request& req) {
    std::string path = req.path;
    std::string sep = "?";
    for (const auto& [k, v] : req.params) {
      path += sep + k + "=" + v;
      sep = "&";
    }
    requests_.push_back({req.method, path, req.body, req.get_header_value("Authorization")});
  }

  void Routes() {
    using httplib::Request;
    using httplib::Response;
    server_.Post(R"(/v1/projects/([^/]+)/jobs)", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      json job = json::parse(req.body, nullptr, false);
      if (job.is_discarded() || !job.contains("jobId")) {
        return Error(res, 400, "INVALID_ARGUMENT", "bad job");
      }
      std::string p = req.matches[1];
      std::string id = job["jobId"];
      if (jobs_[p].count(id)) {
        return Error(res, 409, "ALREADY_EXISTS", "Resource already exists in the project: " + id);
      }
      job["state"] = "QUEUED";
      job["createTime"] = "2026-11-21T10:00:00Z";
      job["etag"] = "ZXRhZzE=";
      jobs_[p][id] = job;
      order_[p].push_back(id);
      res.set_content(job.dump(), "application/json");
    });
    server_.Post(R"(/v1/projects/([^/]+)/jobs/([^/]+):cancel)",
                 [this](const Request& req, Response& res) {
                   std::lock_guard<std::mutex> l(mu_);
                   Record(req);
                   std::string p = req.matches[1], id = req.matches[2];
                   if (!jobs_[p].count(id)) return Error(res, 404, "NOT_FOUND", "no job " + id);
                   jobs_[p][id]["state"] = "CANCELLING";
                   res.set_content("{}", "application/json");
                 });
    server_.Get(R"(/v1/projects/([^/]+)/jobs/([^/]+)/logs)", [this](const Request& req,
                                                                    Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      if (unavailable_after_ > 0) {
        --unavailable_after_;
      } else if (unavailable_requests_ > 0) {
        if (--unavailable_requests_ == 0 && add_after_outage_) {
          json e = *add_after_outage_;
          e["insertId"] = std::to_string(++next_insert_id_);
          logs_[req.matches[2]].push_back(e);
        }
        return Error(res, 503, "UNAVAILABLE", "restarting");
      }
      std::string id = req.matches[2];
      std::string task = req.get_param_value("taskName");
      std::string severity = req.get_param_value("minSeverity");
      std::string start = req.get_param_value("startTime");
      auto matches = [&](const json& e) {
        if (!task.empty() && e["resource"]["labels"]["task_name"] != task) return false;
        if (req.has_param("trialId") && e.value("labels", json::object()).value("trial_id", "") !=
                                            req.get_param_value("trialId")) {
          return false;
        }
        if (!severity.empty() && Rank(e["severity"]) < Rank(severity)) return false;
        // Same-width RFC 3339 strings compare as times.
        if (!start.empty() && e["timestamp"].get<std::string>() < start) return false;
        return true;
      };
      json entries = json::array();
      json body;
      if (req.has_param("afterInsertId")) {
        // Follow mode: ingestion order after the cursor.
        long long after = std::stoll(req.get_param_value("afterInsertId"));
        std::string next = std::to_string(after);
        for (const auto& e : logs_[id]) {
          long long ins = std::stoll(e["insertId"].get<std::string>());
          if (ins <= after) continue;
          next = e["insertId"];
          if (matches(e)) entries.push_back(e);
        }
        auto pe = pending_end_.find(id);
        if (pe != pending_end_.end() && --pe->second.reads_left <= 0) {
          json& job = jobs_[pe->second.project][id];
          job["state"] = pe->second.state;
          job["endTime"] = "2026-11-21T11:00:00Z";
          pending_end_.erase(pe);
        }
        body = {{"entries", entries}, {"nextAfterInsertId", next}};
      } else {
        // A listing in (timestamp, insertId) order; the token is the offset into it.
        if (logs_[id].empty() && !jobs_[req.matches[1]].count(id)) {
          return Error(res, 404, "NOT_FOUND", "no job " + id);
        }
        std::vector<json> all;
        for (const auto& e : logs_[id]) {
          if (matches(e)) all.push_back(e);
        }
        std::stable_sort(all.begin(), all.end(), [](const json& a, const json& b) {
          return a["timestamp"].get<std::string>() < b["timestamp"].get<std::string>();
        });
        if (req.get_param_value("orderBy") == "timestamp desc") {
          std::reverse(all.begin(), all.end());
        }
        size_t offset =
            req.has_param("pageToken") ? std::stoul(req.get_param_value("pageToken").substr(1)) : 0;
        size_t size =
            req.has_param("pageSize") ? std::stoul(req.get_param_value("pageSize")) : 1000;
        for (size_t i = offset; i < all.size() && i < offset + size; ++i) {
          entries.push_back(all[i]);
        }
        body = {{"entries", entries}, {"snapshotInsertId", std::to_string(next_insert_id_)}};
        if (offset + size < all.size()) body["nextPageToken"] = "o" + std::to_string(offset + size);
      }
      res.set_content(body.dump(), "application/json");
    });
    server_.Get(R"(/v1/projects/([^/]+)/jobs/([^/]+))", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      std::string p = req.matches[1], id = req.matches[2];
      if (!jobs_[p].count(id)) {
        return Error(res, 404, "NOT_FOUND", "Field: name Error: The specified job does not exist.");
      }
      res.set_content(jobs_[p][id].dump(), "application/json");
    });
    server_.Patch(R"(/v1/projects/([^/]+)/jobs/([^/]+))",
                  [this](const Request& req, Response& res) {
                    std::lock_guard<std::mutex> l(mu_);
                    Record(req);
                    std::string p = req.matches[1], id = req.matches[2];
                    if (!jobs_[p].count(id)) return Error(res, 404, "NOT_FOUND", "no job");
                    json body = json::parse(req.body, nullptr, false);
                    json& job = jobs_[p][id];
                    if (body.contains("etag") && body["etag"] != job["etag"]) {
                      return Error(res, 409, "ABORTED", "etag mismatch");
                    }
                    job["labels"] = body["labels"];
                    job["etag"] = "ZXRhZzI=";
                    res.set_content(job.dump(), "application/json");
                  });
    server_.Get(R"(/v1/projects/([^/]+)/jobs)", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      std::string p = req.matches[1];
      size_t size = req.has_param("pageSize") ? std::stoul(req.get_param_value("pageSize")) : 20;
      size = std::min<size_t>(size, static_cast<size_t>(list_page_size_cap));
      size_t start = req.has_param("pageToken") ? std::stoul(req.get_param_value("pageToken")) : 0;
      json body = json::object();
      std::vector<std::string> ids = order_[p];
      if (req.has_param("orderBy")) {
        // The daemon's orderBy ("field" or "field desc"): by the value as the JSON shows it
        // ("None" when absent), ties in creation (here: insertion) order in the key's direction.
        std::string order_by = req.get_param_value("orderBy");
        const bool desc = order_by.size() > 5 && order_by.substr(order_by.size() - 5) == " desc";
        const std::string field = desc ? order_by.substr(0, order_by.size() - 5) : order_by;
        auto shown = [&](const std::string& id) {
          const json& j = jobs_[p][id];
          return j.contains(field) && j[field].is_string() ? j[field].get<std::string>()
                                                           : std::string("None");
        };
        if (desc) std::reverse(ids.begin(), ids.end());
        std::stable_sort(ids.begin(), ids.end(), [&](const std::string& a, const std::string& b) {
          return desc ? shown(b) < shown(a) : shown(a) < shown(b);
        });
      }
      json list = json::array();
      for (size_t i = start; i < ids.size() && i < start + size; ++i) {
        list.push_back(jobs_[p][ids[i]]);
      }
      if (!list.empty()) body["jobs"] = list;
      if (start + size < ids.size()) body["nextPageToken"] = std::to_string(start + size);
      res.set_content(body.dump(), "application/json");
    });
    server_.Post("/storage/v1/b", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      json body = json::parse(req.body, nullptr, false);
      std::string name = body.value("name", "");
      if (buckets_.count(name)) return Error(res, 409, "ALREADY_EXISTS", "bucket exists");
      buckets_.insert(name);
      res.set_content(json{{"name", name}}.dump(), "application/json");
    });
    server_.Get("/storage/v1/b", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      json items = json::array();
      for (const auto& b : buckets_) items.push_back({{"name", b}});
      res.set_content(json{{"items", items}}.dump(), "application/json");
    });
    server_.Get(R"(/storage/v1/b/([^/]+))", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      if (!buckets_.count(req.matches[1])) return Error(res, 404, "NOT_FOUND", "no bucket");
      res.set_content(json{{"name", req.matches[1]}}.dump(), "application/json");
    });
    server_.Post(R"(/upload/storage/v1/b/([^/]+)/o)", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      std::string b = req.matches[1];
      if (!buckets_.count(b))
        return Error(res, 404, "NOT_FOUND", "The specified bucket does not exist.");
      std::string name = req.get_param_value("name");
      objects_[b + "/" + name] = req.body;
      res.set_content(json{{"bucket", b}, {"name", name}}.dump(), "application/json");
    });
    server_.Get(R"(/storage/v1/b/([^/]+)/o/(.+))", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      auto it = objects_.find(std::string(req.matches[1]) + "/" + std::string(req.matches[2]));
      if (it == objects_.end()) return Error(res, 404, "NOT_FOUND", "no object");
      res.set_content(it->second, "application/octet-stream");
    });
    server_.Get("/v1/admin/admission", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      res.set_content(json{{"paused", paused_}}.dump(), "application/json");
    });
    server_.Put("/v1/admin/admission", [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      Record(req);
      paused_ = json::parse(req.body, nullptr, false).value("paused", false);
      res.set_content(json{{"paused", paused_}}.dump(), "application/json");
    });
  }

  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::map<std::string, json>> jobs_;
  std::map<std::string, std::vector<std::string>> order_;
  std::map<std::string, std::vector<json>> logs_;
  std::map<std::string, PendingEnd> pending_end_;
  int unavailable_after_ = 0;
  int unavailable_requests_ = 0;
  std::optional<json> add_after_outage_;

  static int Rank(const std::string& severity) {
    static const char* const kOrder[] = {"DEFAULT", "DEBUG",    "INFO",  "NOTICE",   "WARNING",
                                         "ERROR",   "CRITICAL", "ALERT", "EMERGENCY"};
    for (int i = 0; i < 9; ++i) {
      if (severity == kOrder[i]) return i;
    }
    return 0;
  }
  std::set<std::string> buckets_;
  std::map<std::string, std::string> objects_;
  std::vector<Request> requests_;
  bool paused_ = false;
  long long next_insert_id_ = 0;
};

}  // namespace trainyard::testing
