// The HTTP surface of trainyardd: AI Platform's ml v1 projects.jobs routes, the job-log route,
// the Cloud Logging entries:list subset, the ml v1 discovery document, the Cloud Storage JSON
// API subset (from the storage module), admin routes and the operational endpoints (/healthz,
// /readyz, /metrics). trainyardd's own routes come from one table (method, path, handler,
// discovery metadata); GET /v1/help prints it. The same routes are served on the plain
// listener and, when configured, on a TLS listener.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "trainyard/auth/auth_store.h"
#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/scheduler/job_service.h"
#include "trainyard/storage/bucket_store.h"
#include "trainyard/store/job_store.h"

namespace trainyard::api {

struct ApiOptions {
  std::string host = "127.0.0.1";
  int port = 8470;  // 0 = any free port
  // HTTP workers kept ready; more start on demand up to max_threads (requests beyond wait).
  // Idle keep-alive connections hold no worker.
  int threads = 16;
  int max_threads = 1024;
  std::string default_project = "default";
  // TLS listener: off while tls_port < 0; 0 = any free port. Both files are PEM.
  std::string tls_host = "127.0.0.1";
  int tls_port = -1;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Authentication and authorization (docs/security.md). Off: every request acts as an
  // administrator, which Bind() allows only on loopback listeners.
  bool auth = false;
  // With authentication on, a plain-HTTP listener on a non-loopback address sends tokens in
  // clear text: Bind() refuses it unless this is set.
  bool allow_insecure_http = false;
};

// The daemon's operator duties the API serves (daemon/ops.h implements it): /metrics' extra
// figures and the admin routes for garbage collection and purges.
class Operations {
 public:
  virtual ~Operations() = default;
  // Prometheus text appended to /metrics.
  virtual std::string MetricsText() = 0;
  // Runs garbage collection (or only reports it); a JSON report (docs/operations.md).
  virtual Result<std::string> Gc(bool dry_run) = 0;
  // Deletes the records of jobs that finished before the time (or only reports them).
  virtual Result<std::string> Purge(Timestamp finished_before, bool dry_run) = 0;
};

class ApiServer {
 public:
  ApiServer(ApiOptions options, scheduler::JobService& scheduler, store::JobStore& store,
            storage::BucketStore& buckets);
  ~ApiServer();

  // The principals, tokens, policies and audit log (required; must outlive the server). Every
  // mutating request is audited there, with authentication on or off. Call before Bind().
  void SetAuthStore(auth::AuthStore* store);
  // Binds the listening socket(s); returns the bound plain port.
  Result<int> Bind();
  // The bound TLS port, or -1 when TLS is off (valid after Bind()).
  int tls_port() const;
  // Serves until Stop(); call after Bind().
  void Serve();
  void Stop();
  // /readyz answers 200 once set (the daemon sets it after recovery).
  void SetReady(bool ready);
  // Operator duties (not owned; must outlive the server). Call before Serve(); without it
  // the admin GC and purge routes answer UNIMPLEMENTED.
  void SetOperations(Operations* operations);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// True for 127.0.0.0/8, ::1 and localhost (with or without [brackets]). Bind() refuses any
// other address while authentication is off.
bool IsLoopbackHost(std::string_view host);

// The route table as text (also served at GET /v1/help), for docs/api.md.
std::string RouteTableHelp();

// Writes a self-signed certificate for localhost, 127.0.0.1 and ::1 (P-256, ten years) and its
// key (mode 0600) unless both files exist already; creates the directory.
Status EnsureSelfSignedCertificate(const std::string& cert_path, const std::string& key_path);

}  // namespace trainyard::api
