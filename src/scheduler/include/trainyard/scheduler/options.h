// Options and figures of the scheduler core (job_service.h is its facade).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trainyard/core/time.h"
#include "trainyard/registry/image_reference.h"
#include "trainyard/scheduler/admission.h"
#include "trainyard/scheduler/clock.h"
#include "trainyard/scheduler/resources.h"

namespace trainyard::scheduler {

// A configured Python runtime. A job's runtimeVersion and pythonVersion select the first
// runtime whose lists match ("*" matches anything, including unset).
struct RuntimeOptions {
  std::string name = "default";
  std::string python = "/usr/bin/python3";
  std::vector<std::string> runtime_versions = {"*"};
  std::vector<std::string> python_versions = {"*"};
};

struct SchedulerOptions {
  // The daemon's jobs directory: only a short hash of it goes into container names, so two
  // daemons of one user never share one (replica work dirs are the executor's business).
  std::string jobs_dir;
  std::string env_cache_dir;  // cached Python environments
  std::vector<RuntimeOptions> runtimes = {RuntimeOptions{}};
  Duration cancel_grace = 10 * kMicrosPerSecond;  // SIGTERM -> SIGKILL
  int max_running_jobs = 0;                       // 0 = no limit besides resources
  bool admission_paused = false;
  // What this node offers (after overcommit) and how GPU requests match GPUs.
  NodeCapacity node;
  bool exact_gpu_type = false;
  // A job bigger than the whole node (admission.h, OversizePolicy; setting oversize_jobs).
  OversizePolicy oversize_jobs = OversizePolicy::kRunAlone;
  // cgroup v1 root for replica limits; "" = run replicas without limits.
  std::string cgroup_root;
  // Restarts of a replica killed by a signal Trainyard did not send, before the job fails.
  int replica_restarts = 5;
  // How often consumedMLUnits of running jobs is written to the store (it is live in GET).
  Duration ml_units_persist_interval = 30 * kMicrosPerSecond;
  std::string pip_index_url;  // "" = pip runs with --no-index
  std::vector<std::string> pip_find_links;
  Duration default_max_running_time = 7LL * 24 * 3600 * kMicrosPerSecond;
  // Custom containers (compat §2 imageUri): the podman or docker executable ("" = none on this
  // machine, container jobs are refused), the engine CLI's own environment (CONTAINERS_CONF),
  // and whether containers get --memory/--cpus from their machine type.
  std::string container_engine;
  std::map<std::string, std::string> container_engine_env;
  bool container_limits = true;
  // Where container images come from: the pull policy, registry mirrors, insecure registries
  // and the credentials file (docs/containers.md, "Registries").
  registry::RegistrySettings registry;
  // A directory appended to every Python replica's PYTHONPATH: the `hypertune` module lives
  // there ("" = none).
  std::string python_support_dir;
  Duration tick = 200 * 1000;  // deadline checks
  // Where time comes from (not owned; must outlive the scheduler). nullptr = the real clock.
  const Clock* clock = nullptr;
  // Step mode (tests): Start() starts no background thread; the owner drives the scheduler with
  // Step() / RunUntilIdle(), so a test decides exactly when admission, deadlines and service-log
  // flushes happen.
  bool step_mode = false;
  // Admission strategy (not owned); nullptr = admission against this node (NewLocalAdmission
  // over `node`).
  Admission* admission = nullptr;
  // The credential a job's replicas get as TRAINYARD_JOB_TOKEN (docs/security.md); unset = none.
  std::function<std::string(const std::string& project, const std::string& job)> job_credential;
};

// A Prometheus-style histogram (cumulative counts per upper bound, plus +Inf = count).
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // counts[i]: observations <= bounds[i]
  uint64_t count = 0;
  double sum = 0;
  explicit Histogram(std::vector<double> b = {}) : bounds(std::move(b)), counts(bounds.size()) {}
  void Observe(double v) {
    ++count;
    sum += v;
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (v <= bounds[i]) ++counts[i];
    }
  }
};

struct SchedulerStats {
  int queued = 0;
  int preparing = 0;
  int running = 0;
  int cancelling = 0;
  int running_replicas = 0;
  int64_t free_cpu_millis = 0;
  int64_t free_memory_bytes = 0;
  int free_gpus = 0;
  // What the free amounts are of: the node's capacity (after overcommit), or with a backend that
  // queues gangs itself (`cluster`, Slurm) its partition's, in machine-type units (0 = unknown).
  int64_t total_cpu_millis = 0;
  int64_t total_memory_bytes = 0;
  int total_gpus = 0;
  bool cluster = false;
  int64_t replica_restarts = 0;  // since start
  std::string backend_problem;   // Executor::Problem(): "" when the backend works
  std::string admission_hold;    // why admission is held (SetAdmissionHold), "" when it is not
  // Seconds from createTime to admission, per admitted job (since start).
  Histogram queue_wait_seconds;
  // Seconds from a replica's line being printed (its launcher timestamp) to its being stored,
  // for the oldest line of each stored batch.
  Histogram log_ingestion_lag_seconds;
};

}  // namespace trainyard::scheduler
