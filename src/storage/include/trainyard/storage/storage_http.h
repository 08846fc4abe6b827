// The Cloud Storage JSON API subset that `gsutil`, `gcloud storage`, gcloud's package upload and
// the `trainyard` CLI use, served over a BucketStore: buckets insert/get/list/delete; objects
// insert (media, multipart, resumable), get (metadata and alt=media with Range), list (prefix,
// delimiter, paging), delete, copy, rewrite, compose and patch. Paths are exactly GCS's
// (/storage/v1/..., /upload/storage/v1/..., /download/storage/v1/...). See docs/storage.md.
//
// Every request is first classified (StorageOperations() is the table of what can be asked and
// the permission each needs) and then passed through the caller's gate, which authorizes and
// audits it (docs/security.md); the gate runs before any byte of the body is read.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "trainyard/storage/bucket_store.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace trainyard::storage {

// One operation of the storage API and the permission it needs.
struct StorageOperation {
  const char* name;        // the JSON API method: "storage.objects.get"
  const char* method;      // HTTP method of the example
  const char* example;     // a request target of this operation on bucket "BUCKET", project "P"
  const char* permission;  // on the bucket (buckets.list/insert: on the project)
  bool mutating;
  const char* source_permission;  // copy, rewrite and compose: also on the source bucket
};
std::span<const StorageOperation> StorageOperations();

// What a request asks for, known from its method and target alone.
struct StorageAccess {
  const StorageOperation* operation = nullptr;
  std::string project;  // buckets.list/insert: ?project=, else the default project
  std::string bucket;   // "" for buckets.list/insert
  std::string object;
  std::string source_bucket;  // copy/rewrite: the source's bucket; compose: the bucket
};
// nullopt for a target no operation matches (the routes answer 400/404 then).
std::optional<StorageAccess> ClassifyStorageRequest(const httplib::Request& req,
                                                    std::string_view default_project);

// Runs around every classified request: calls `run` to serve it, or writes a refusal (and does
// not call it). Without a gate every request is served.
using StorageGate = std::function<void(const httplib::Request&, httplib::Response&,
                                       const StorageAccess&, const std::function<void()>& run)>;

// GCS's JSON error body {"error": {code, message, errors: [{message, domain, reason}]}}.
void WriteStorageError(httplib::Response& res, int code, const std::string& reason,
                       const std::string& message);

// Adds the routes to `server`. `store` must outlive the server. Handlers run on httplib's worker
// threads and are safe to run concurrently. `default_project` names the project of buckets
// created (and listed) without ?project=.
void RegisterStorageRoutes(httplib::Server& server, BucketStore& store, std::string default_project,
                           StorageGate gate = nullptr);

}  // namespace trainyard::storage
