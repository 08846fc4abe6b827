#include "logging_api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <deque>
#include <nlohmann/json.hpp>
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
  int64_t cursor = 0;  // 0 = first page
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
      TRAINYARD_ASSIGN_OR_RETURN(std::string token, StringField(v, key));
      if (!token.empty()) {
        auto res = std::from_chars(token.data(), token.data() + token.size(), r.cursor);
        if (res.ec != std::errc() || res.ptr != token.data() + token.size() || r.cursor < 1) {
          return BadField("pageToken", "Invalid page token \"" + token + "\"");
        }
      }
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

Result<std::string> ListLogEntries(store::JobStore& store, std::string_view body) {
  TRAINYARD_ASSIGN_OR_RETURN(ListRequest r, ParseRequest(body));
  TRAINYARD_ASSIGN_OR_RETURN(LogFilter filter, LogFilter::Parse(r.filter));
  store::LogQuery q;
  q.project = r.project;
  filter.PushDown(&q);
  q.limit = kReadChunk;
  const size_t page_size = static_cast<size_t>(r.page_size);

  std::deque<model::LogEntry> page;
  int64_t next_token = 0;
  if (!r.descending) {
    q.after_insert_id = std::max(q.after_insert_id, r.cursor);
    int64_t scanned = 0;
    bool done = false;
    while (!done) {
      TRAINYARD_ASSIGN_OR_RETURN(auto chunk, store.ReadLogs(q));
      for (auto& e : chunk) {
        ++scanned;
        q.after_insert_id = e.insert_id;
        if (!filter.Matches(e)) continue;
        page.push_back(std::move(e));
        if (page.size() == page_size) {
          next_token = page.back().insert_id;
          done = true;
          break;
        }
      }
      if (done || chunk.size() < static_cast<size_t>(kReadChunk)) break;
      if (scanned >= kScanBudget) {
        next_token = q.after_insert_id;
        break;
      }
    }
  } else {
    // Newest first: scan forward up to the cursor, keeping the last page_size matches.
    bool dropped = false;
    bool done = false;
    while (!done) {
      TRAINYARD_ASSIGN_OR_RETURN(auto chunk, store.ReadLogs(q));
      for (auto& e : chunk) {
        if (r.cursor != 0 && e.insert_id >= r.cursor) {
          done = true;
          break;
        }
        q.after_insert_id = e.insert_id;
        if (!filter.Matches(e)) continue;
        page.push_back(std::move(e));
        if (page.size() > page_size) {
          page.pop_front();
          dropped = true;
        }
      }
      if (chunk.size() < static_cast<size_t>(kReadChunk)) break;
    }
    std::reverse(page.begin(), page.end());
    if (dropped) next_token = page.back().insert_id;
  }

  // Cloud Logging orders by timestamp; the store keeps arrival order, which for a job with
  // several replicas interleaves their lines a little out of timestamp order. gcloud's
  // stream-logs drops any entry older than one it has already printed, so a page is sorted by
  // (timestamp, insertId) in the direction asked for. (Pages are still cut in arrival order.)
  std::stable_sort(page.begin(), page.end(),
                   [desc = r.descending](const model::LogEntry& a, const model::LogEntry& b) {
                     if (a.timestamp != b.timestamp) {
                       return desc ? a.timestamp > b.timestamp : a.timestamp < b.timestamp;
                     }
                     return desc ? a.insert_id > b.insert_id : a.insert_id < b.insert_id;
                   });
  if (page.empty() && next_token == 0) return std::string("{}");
  std::string out = "{\"entries\":[";
  for (size_t i = 0; i < page.size(); ++i) {
    if (i) out += ',';
    out += LogEntryToJson(page[i]);
  }
  out += "]";
  if (next_token != 0) out += ",\"nextPageToken\":\"" + std::to_string(next_token) + "\"";
  out += "}";
  return out;
}

}  // namespace trainyard::api
