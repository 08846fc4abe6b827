// Typed REST client for trainyardd (ml v1 jobs, job logs, the Cloud Storage JSON API subset and
// the admin endpoints). Used by the `trainyard` CLI and by integration tests.
//
// Resources cross this header as JSON text (the API's own shapes, compat §1 and §5); only the
// log entries are decoded, because every caller needs the same gcloud field-resolution rules.
//
// Errors: an HTTP error answer becomes a Status with the code named by the body's
// `error.status` (or derived from the HTTP status when the body has none) and the body's
// `error.message`. A daemon that cannot be reached becomes UNAVAILABLE with a message naming the
// endpoint; IsConnectionError() tells the two UNAVAILABLE kinds apart.
//
// A Client is not thread-safe; use one per thread. Every call is blocking.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::client {

inline constexpr char kDefaultEndpoint[] = "http://127.0.0.1:8470";
inline constexpr char kDefaultProject[] = "default";

struct ClientOptions {
  // scheme://host[:port][/base-path]; "http://" is assumed when the scheme is missing.
  std::string endpoint = kDefaultEndpoint;
  std::string project = kDefaultProject;
  // Sent as `Authorization: Bearer <token>` when not empty.
  std::string token;
  int connect_timeout_s = 5;
  int read_timeout_s = 120;
  int write_timeout_s = 300;
};

// Fills endpoint/project/token from TRAINYARD_ENDPOINT, TRAINYARD_PROJECT and TRAINYARD_TOKEN
// (or the first line of the file TRAINYARD_TOKEN_FILE names), falling back to the defaults above.
ClientOptions OptionsFromEnvironment();

// One page of projects.jobs.list.
struct JobPage {
  std::vector<std::string> jobs;  // Job JSON objects
  std::string next_page_token;    // "" on the last page
};

// A job log entry, resolved the way gcloud's log_utils does: task name from
// resource.labels.task_name, labels.task_name, labels["ml.googleapis.com/task_name"], else
// "unknown_task"; trial id from labels.trial_id or labels["ml.googleapis.com/trial_id"];
// message from jsonPayload.message, else textPayload; severity "DEFAULT" when unset.
struct LogEntry {
  std::string insert_id;
  std::string timestamp;  // RFC 3339 as sent by the server
  std::string severity;
  std::string task_name;
  std::string trial_id;  // "" when absent
  std::string message;
  std::string json;  // the entry as the server sent it (for --format json)
};

// GET /v1/projects/{p}/jobs/{id}/logs parameters (docs/api.md, "Job logs"). Unset or empty
// values are not sent.
struct JobLogsRequest {
  // Set: follow mode, the lines stored after this cursor in ingestion order ("0" = all).
  // Unset: a listing in (timestamp, insertId) order.
  std::optional<std::string> after_insert_id;
  bool descending = false;  // listing order
  std::string page_token;   // listing: the previous page's next_page_token
  std::string task_name;
  std::optional<std::string> trial_id;  // "" = lines outside any trial
  std::string min_severity;             // e.g. "WARNING"
  std::string start_time;               // RFC 3339: lines at or after it
  int page_size = 0;                    // 0 = the server's default (1000)
};

struct LogPage {
  std::vector<LogEntry> entries;     // follow mode: by insertId; listing: in the order asked for
  std::string next_after_insert_id;  // follow mode: cursor for the next call
  std::string next_page_token;       // listing: "" on the last page
  std::string snapshot_insert_id;    // listing: follow from here once the listing is read
};

// GET /v1/projects/{p}/jobs/{id}/logs:search parameters (docs/api.md "Log search").
struct LogSearchRequest {
  std::string text;
  int64_t after_line_offset = -1;  // matches after this 0-based line (-1: from the first)
  int page_size = 0;               // 0 = the server's default (1)
  bool match_case = false;
  std::string task_name;
  std::optional<std::string> trial_id;
  std::string snapshot_insert_id;  // "" = the lines stored now
};

struct LogMatch {
  int64_t line_offset = 0;  // 0-based, among the lines the request selects
  LogEntry entry;
};

struct LogSearchPage {
  std::vector<LogMatch> matches;  // in line order
  std::string snapshot_insert_id;
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const { return options_; }

  // --- projects.jobs -----------------------------------------------------------------------
  // POST /v1/projects/{p}/jobs; returns the created Job JSON.
  Result<std::string> CreateJob(std::string_view job_json);
  // GET /v1/projects/{p}/jobs/{id}.
  Result<std::string> GetJob(std::string_view job_id);
  // GET /v1/projects/{p}/jobs; page_size 0 = server default; empty strings are not sent.
  // order_by: Trainyard's orderBy extension ("startTime desc"; docs/api.md).
  Result<JobPage> ListJobs(std::string_view filter, int page_size, std::string_view page_token,
                           std::string_view order_by = "");
  // POST /v1/projects/{p}/jobs/{id}:cancel.
  Status CancelJob(std::string_view job_id);
  // PATCH /v1/projects/{p}/jobs/{id}?updateMask=labels[,etag] with {"labels":..., "etag":...}.
  // labels_json is a JSON object of string values; etag "" omits it from body and mask.
  Result<std::string> PatchJobLabels(std::string_view job_id, std::string_view labels_json,
                                     std::string_view etag);

  // --- job logs ----------------------------------------------------------------------------
  // GET /v1/projects/{p}/jobs/{id}/logs.
  Result<LogPage> ListJobLogs(std::string_view job_id, const JobLogsRequest& request);
  // GET /v1/projects/{p}/jobs/{id}/logs:search.
  Result<LogSearchPage> SearchJobLogs(std::string_view job_id, const LogSearchRequest& request);
  // GET /v1/projects/{p}/jobs/{id}/logs:download (task_name, trial_id and min_severity of
  // `request`; format=message when message_only): the text goes to `sink` as it arrives.
  Status DownloadJobLogs(std::string_view job_id, const JobLogsRequest& request, bool message_only,
                         const std::function<bool(std::string_view)>& sink);

  // --- storage (Cloud Storage JSON API subset) -------------------------------------------
  Status CreateBucket(std::string_view bucket);
  // NOT_FOUND maps to false.
  Result<bool> BucketExists(std::string_view bucket);
  // Bucket names of the project.
  Result<std::vector<std::string>> ListBuckets();
  // Uploads bytes as gs://bucket/object; returns the object resource JSON.
  Result<std::string> UploadObject(std::string_view bucket, std::string_view object,
                                   std::string_view data);
  // Object names under prefix (follows nextPageToken).
  Result<std::vector<std::string>> ListObjects(std::string_view bucket, std::string_view prefix);
  Result<std::string> DownloadObject(std::string_view bucket, std::string_view object);
  Status DeleteObject(std::string_view bucket, std::string_view object);

  // --- any JSON route (administration, IAM) ----------------------------------------------
  // One request to `path` (already percent-encoded) with a JSON body ("" = none); returns the
  // answer's body, or the error as a Status like every other call.
  Result<std::string> CallJson(std::string_view method, std::string_view path,
                               std::string_view body = "");

  // --- admin -------------------------------------------------------------------------------
  // GET/PUT /v1/admin/admission; both return whether admission is paused.
  Result<bool> GetAdmissionPaused();
  Result<bool> SetAdmissionPaused(bool paused);
  // POST /v1/admin/gc and /v1/admin/purge: the daemon's JSON report (docs/operations.md).
  Result<std::string> RunGc(bool dry_run);
  Result<std::string> Purge(std::string_view finished_before, bool dry_run);

 private:
  struct Impl;
  ClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

// True for the UNAVAILABLE status the client returns when it could not talk to the daemon at all
// (as opposed to an UNAVAILABLE answer from the daemon).
bool IsConnectionError(const Status& status);

// Maps a google.rpc.Code name ("NOT_FOUND") to a code; nullopt-like kUnknown for unknown names.
StatusCode StatusCodeFromName(std::string_view name);
// Maps an HTTP status to the canonical code (404 -> NOT_FOUND, 409 -> ALREADY_EXISTS, ...).
StatusCode StatusCodeFromHttp(int http_status);

}  // namespace trainyard::client
