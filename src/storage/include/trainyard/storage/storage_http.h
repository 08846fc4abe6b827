// The Cloud Storage JSON API subset that `gsutil`, `gcloud storage`, gcloud's package upload and
// the `trainyard` CLI use, served over a BucketStore: buckets insert/get/list/delete; objects
// insert (media, multipart, resumable), get (metadata and alt=media with Range), list (prefix,
// delimiter, paging), delete, copy, rewrite, compose and patch. Paths are exactly GCS's
// (/storage/v1/..., /upload/storage/v1/..., /download/storage/v1/...). Authorization headers are
// ignored. See docs/storage.md.
#pragma once

#include <string>

#include "trainyard/storage/bucket_store.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace trainyard::storage {

// Adds the routes to `server`. `store` must outlive the server. Handlers run on httplib's worker
// threads and are safe to run concurrently. `default_project` names the project of buckets
// created without ?project=.
void RegisterStorageRoutes(httplib::Server& server, BucketStore& store,
                           std::string default_project);

}  // namespace trainyard::storage
