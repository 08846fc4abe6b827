// The HTTP surface of trainyardd: AI Platform's ml v1 projects.jobs routes, the job-log route,
// the Cloud Storage JSON API subset (from the storage module), admin routes and the operational
// endpoints (/healthz, /readyz, /metrics). Every ml v1 route is registered from one table
// (method, path, help line, mutating or not); GET /v1/help prints it.
#pragma once

#include <memory>
#include <string>

#include "trainyard/core/status.h"
#include "trainyard/scheduler/scheduler.h"
#include "trainyard/storage/bucket_store.h"
#include "trainyard/store/job_store.h"

namespace trainyard::api {

struct ApiOptions {
  std::string host = "127.0.0.1";
  int port = 8470;  // 0 = any free port
  int threads = 16;
  std::string default_project = "default";
};

class ApiServer {
 public:
  ApiServer(ApiOptions options, scheduler::Scheduler& scheduler, store::JobStore& store,
            storage::BucketStore& buckets);
  ~ApiServer();

  // Binds the listening socket; returns the bound port.
  Result<int> Bind();
  // Serves until Stop(); call after Bind().
  void Serve();
  void Stop();
  // /readyz answers 200 once set (the daemon sets it after recovery).
  void SetReady(bool ready);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The route table as text (also served at GET /v1/help), for docs/api.md.
std::string RouteTableHelp();

}  // namespace trainyard::api
