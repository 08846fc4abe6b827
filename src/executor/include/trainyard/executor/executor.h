// Runs replicas and reports what happened to them. One interface for every backend (local
// processes now; Slurm next), modelled on Mesos's Containerizer: launch, kill with grace,
// recover after a daemon restart. A backend is written against this header alone; the
// scheduler knows nothing else of it (no work-dir files, no processes).
//
// Every replica runs under `trainyard-launcher` (src/launcher), which prepares the Python
// environment, runs the trainer, records every output line and its exit. The daemon never
// depends on being the launcher's parent, which is what lets a restarted daemon re-attach to
// replicas that kept running. The local backend's per-replica work directory is described in
// docs/on-disk-layout.md and launcher_protocol.h; it is the executor's own business.
//
// The contract, for every backend:
//  - Threads. Launch, Kill, Recover, ReplicaMetrics and RunningCount may be called from any
//    thread, concurrently. Listener callbacks come from executor threads, never from inside a
//    call of the caller (Launch, Kill and Recover never call the listener before they return),
//    so a caller may hold its own lock across those calls.
//  - Order per replica. OnReplicaRunning, then OnReplicaLogs and OnReplicaMetrics as they come,
//    then OnReplicaExit, delivered one at a time: the events of one replica never overlap, and
//    every log line and the last metric report of a run come before its exit.
//  - Re-entrancy. The listener may call Launch (a restart with the same key and spec) and Kill
//    from inside OnReplicaExit: the replica is forgotten before OnReplicaExit is called. It must
//    not call Shutdown from a callback.
//  - Identity. A replica is its ReplicaKey. A restart reuses the key and the spec (so the same
//    address and port); `attempt` counts the launches and comes back from Recover.
//  - Durability. What Recover returns survives a daemon crash: the spec as last launched (with
//    its attempt), whether a kill was requested and why, and how the replica ended.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/model/job.h"

namespace trainyard::executor {

// Identifies one replica of one job (or trial) across restarts.
struct ReplicaKey {
  std::string project;
  std::string job_id;
  std::string trial_id;   // "" outside tuning
  std::string task_type;  // "master", "worker", "ps", "evaluator"
  int index = 0;

  std::string TaskName() const {  // "master-replica-0"
    return task_type + "-replica-" + std::to_string(index);
  }
  bool operator<(const ReplicaKey& o) const;
  bool operator==(const ReplicaKey& o) const;
};

// Resource limits of one replica, enforced with cgroup v1 by the launcher (0 = no limit).
struct ResourceLimits {
  int64_t memory_bytes = 0;  // memory.limit_in_bytes
  int64_t cpu_millis = 0;    // cpu.cfs_quota_us = cpu_millis * 100 (period 100 ms)
};

// How a container replica's image gets into the engine's local storage before it runs
// (docs/containers.md, "Registries"): planned by the scheduler from the daemon's registry
// settings (trainyard/registry/image_reference.h), carried out by the launcher on the machine
// that runs the replica, under a lock shared by every replica there.
struct ImagePull {
  std::string policy;      // "never", "missing" or "always"; "" (a spec from before pulls): never
  std::string reference;   // what a pull asks for: the image or its mirror, fully qualified; ""
                           // when the image is a local name (localhost/...) with no registry
  std::string registry;    // the registry (host[:port]) `reference` is pulled from
  std::string mirror;      // "PREFIX=TARGET" of the registry_mirrors rule that mapped the image
  bool tls_verify = true;  // false: an insecure registry (podman --tls-verify=false)
  std::string auth_file;   // credentials (auth.json) for the engine; "" = the engine's own
  std::string token;       // one per job: with "always", the job's replicas share one pull
};

// How a custom-container replica runs (compat §2 ReplicaConfig, issue 5). The launcher gets the
// image (`pull`), then runs
//   <engine> run --name <name> --pull=never --network=host --env-file <work_dir>/container.env
//       [-v mount]... [--device dev]... [--cpus N --memory B] [--entrypoint JSON] <image> <args>...
// instead of `python -m module`, then reads the container's OOMKilled state and removes it.
struct ContainerSpec {
  std::string engine;  // podman or docker executable (path or name on PATH)
  // Environment of the engine CLI itself (not the container's), e.g. CONTAINERS_CONF.
  std::map<std::string, std::string> engine_env;
  std::string image;  // as the user gave it (masterConfig.imageUri or the role's own)
  // containerCommand: replaces the image's ENTRYPOINT (and drops its CMD) when set.
  std::optional<std::vector<std::string>> entrypoint;
  // After the image: containerArgs, else TrainingInput.args (+ --job-dir DIR). Empty with no
  // entrypoint keeps the image's CMD.
  std::vector<std::string> args;
  std::string name;                  // container name, unique per replica
  std::vector<std::string> mounts;   // "HOST:CONTAINER[:ro]"
  std::vector<std::string> devices;  // e.g. /dev/nvidia0 for an assigned GPU
  ImagePull pull;
};

// Everything the launcher needs (the local backend writes it to <work_dir>/spec.json).
struct ReplicaSpec {
  ReplicaKey key;
  // The replica's directory: "" = the executor chooses (the local backend:
  // <jobs_dir>/<project>/<job>[/trial-<id>]/<task>-replica-<i>); set when the spec is launched.
  std::string work_dir;
  // 0 for the first launch of the replica, n for its n-th restart (kept with the spec).
  int attempt = 0;
  // A tuning trial's replica: the hypertune metric tag (compat §7). The executor gives the
  // trainer a metric file of its own (CLOUD_ML_HP_METRIC_FILE) and reports what it writes
  // through OnReplicaMetrics. "" = no metric file.
  std::string metric_tag;
  std::string python;                     // runtime interpreter, e.g. /usr/bin/python3
  std::vector<std::string> packages;      // local paths of package files (already resolved)
  std::vector<std::string> package_uris;  // the URIs as the user gave them (for log lines)
  std::string python_module;              // run as `python -m <module>`
  std::vector<std::string> args;          // full trainer argv after the module (incl. --job-dir)
  std::map<std::string, std::string>
      env;                    // TF_CONFIG, CLOUD_ML_JOB_ID, ... (added to the daemon's)
  std::string env_cache_dir;  // where environments are cached by content hash
  std::string pip_index_url;  // "" = install with --no-index
  std::vector<std::string> pip_find_links;
  std::string cwd;  // working directory of the trainer ("" = work_dir)
  // cgroup v1 mount root (e.g. /sys/fs/cgroup); "" = run without cgroups. The launcher creates
  // <root>/{memory,cpu,cpuacct?}/<cgroup_name>, applies `limits`, runs every child in it, kills
  // what is left in it at the end and removes it.
  std::string cgroup_root;
  std::string cgroup_name;  // e.g. "trainyard/default.job1.worker-replica-0.1"
  ResourceLimits limits;
  // Set (image non-empty) for custom-container replicas: python/packages/module are unused,
  // `env` goes into the container, `limits` become --cpus/--memory and no cgroup is made by
  // the launcher (the engine makes the container's).
  ContainerSpec container;
};

// What a gang (a job, or one trial of a tuning job: every replica of one run) needs from a
// backend that allocates whole gangs (Slurm), beyond each replica's spec.
struct GangSpec {
  // One entry per spec, in the same order: what the replica's machine type asks for.
  struct Shape {
    int64_t cpu_millis = 0;
    int64_t memory_bytes = 0;
    int gpus = 0;
    std::string gpu_type;  // AI Platform's accelerator type, "" when gpus == 0
  };
  std::vector<Shape> shapes;
  // The run's cluster plan (cluster_env::RunPlanToJson): a backend that learns the replicas'
  // addresses only once they are placed rebuilds their cluster environment from it.
  std::string run_plan_json;
  Duration max_running_time = 0;  // the scheduler enforces it; a backend may add a backstop
  // The job's labels: a backend may route by some (Slurm: `slurm-partition`, docs/slurm.md).
  std::map<std::string, std::string> labels;
};

// How a replica ended.
struct ReplicaExit {
  int exit_code = 0;               // the trainer's exit status (or the launcher's, see phase)
  int signal = 0;                  // terminating signal of the trainer, 0 if it exited
  bool killed_by_request = false;  // Kill() was called for it
  std::string phase;               // "install" (environment failed), "run" (trainer ran), "launch"
  std::string message;             // install failure text (pip's message) or launcher error
  std::string error_tail;          // tail of the trainer's stderr, traceback first (may be "")
  bool oom_killed = false;         // the replica's memory cgroup recorded an OOM kill
  // The replica ran out of disk space (ENOSPC/EDQUOT): its launcher could not write its log,
  // the trainer's error names "No space left on device", or the launcher vanished while the
  // work dir's filesystem was full. Such a failure is not retried (it would fail the same way).
  bool disk_full = false;
  // The launcher had been asked to stop (SIGTERM) before the trainer ended. A trainer that
  // ended on its own just before a stop request arrived has this false.
  bool stop_requested = false;
  // The SIGTERM that stopped it was not asked for by Trainyard (no `kill` request was written
  // for the replica when it came): Slurm preempted the job, its node failed, or someone ran
  // scancel. A trainer that exits 0 then did not finish (docs/slurm.md).
  bool stop_unrequested = false;
  // The reason given to Kill() ("" when none was asked for, or none given).
  std::string stop_reason;
  // When it ended: exit.json's modification time (written as the launcher's last act); 0 when
  // unknown (no report). The order of two replicas' ends decides a run whose exits are read
  // together, as after a daemon restart (compat §12), and dates the job's end.
  Timestamp ended_at = 0;
};

// One record of a hypertune metric file (compat §7).
struct MetricRecord {
  double timestamp = 0;
  int64_t step = 0;
  double value = 0;
};

// What a running replica uses now, from the cgroups its launcher made (for /metrics).
struct ReplicaUsage {
  ReplicaKey key;
  int64_t memory_bytes = -1;  // memory.usage_in_bytes of its memory group; -1 = unknown
  // CPU time of its processes since it started (cpuacct.usage where the cpu and cpuacct
  // controllers share a hierarchy, else sampled from the group's processes); -1 = unknown.
  double cpu_seconds = -1;
};

// What Recover found of a replica launched before the daemon restarted.
struct RecoveredReplica {
  // As last launched (work_dir and attempt filled); only the key when the stored spec could
  // not be read (work_dir "": the replica cannot be launched again).
  ReplicaSpec spec;
  bool running = false;         // re-attached: its events flow as usual
  bool kill_requested = false;  // Kill() was called for this attempt
  std::string stop_reason;      // the reason given to it
};

// Callbacks from the executor (see the contract above). Implementations must be quick and
// thread-safe.
class ExecutorListener {
 public:
  virtual ~ExecutorListener() = default;
  // A backend with a queue of its own (Executor::QueuesGangs) allocated the replica's gang: it
  // no longer waits there. At most once per launch, before OnReplicaRunning when the backend
  // sees the allocation first; never for a gang that ended while it waited.
  virtual void OnReplicaAllocated(const ReplicaKey& key) { (void)key; }
  // The environment is ready and the trainer process started.
  virtual void OnReplicaRunning(const ReplicaKey& key) = 0;
  // New log lines (task_name, severity, timestamp, message filled; insert ids not yet).
  // Returns OK once they are stored; on an error the executor delivers the same lines again
  // later (nothing is skipped). The entries belong to the executor, which reuses them after the
  // call (the callee may set insert ids).
  virtual Status OnReplicaLogs(std::span<model::LogEntry> entries) = 0;
  // Every record of the replica's metric tag its trainer has reported so far, in file order
  // (the file is rewritten whole; hypertune keeps the last 100). Only for specs with a
  // metric_tag; called when they change while the replica runs, and once more after its
  // trainer ended (`ended`: these are the last records, OnReplicaExit follows) when they
  // changed since.
  virtual void OnReplicaMetrics(const ReplicaKey& key, std::span<const MetricRecord> records,
                                bool ended) = 0;
  // The replica ended; all of its log lines and metrics were delivered before this call.
  virtual void OnReplicaExit(const ReplicaKey& key, const ReplicaExit& exit) = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Starts the replica. Returns once the start is accepted, without waiting for it: the
  // backend starts it on a thread of its own (the local backend: work dir, spec and launcher
  // process; Slurm: sbatch), so a caller may hold its lock across the call. A start that fails
  // later is reported as OnReplicaExit with phase "launch" and the reason; a Kill before the
  // start skips it (OnReplicaExit follows, killed_by_request). An error returned here means
  // nothing was accepted. ALREADY_EXISTS while the key is still running (or starting).
  virtual Status Launch(const ReplicaSpec& spec) = 0;
  // Starts every replica of one gang. A backend that allocates gangs at once (Slurm) makes one
  // allocation for all of them; the default launches them one by one. On an error,
  // `*launched` (when given) says how many of the first specs were started anyway.
  virtual Status LaunchGang(std::span<const ReplicaSpec> specs, const GangSpec& gang,
                            size_t* launched) {
    (void)gang;
    size_t n = 0;
    for (const ReplicaSpec& spec : specs) {
      Status st = Launch(spec);
      if (!st.ok()) {
        if (launched != nullptr) *launched = n;
        return st;
      }
      ++n;
    }
    if (launched != nullptr) *launched = n;
    return Status::Ok();
  }
  // Stops the whole replica: SIGTERM to the launcher, the trainer and every descendant, SIGKILL
  // after `grace`. OnReplicaExit follows with killed_by_request = true and `reason` as its
  // stop_reason (also after a daemon restart). A second call only shortens the grace. No-op for
  // unknown keys.
  virtual void Kill(const ReplicaKey& key, Duration grace, const std::string& reason) = 0;
  // After a daemon restart: looks for the replicas with these keys (any the scheduler may have
  // launched). Those found are returned; the ones still running are re-attached (their events
  // flow as usual), and for the others OnReplicaExit follows once their remaining log lines are
  // delivered (how they ended, else phase "lost"). Keys never launched are not returned; a
  // member of a gang LaunchGang accepted counts as launched even if the daemon stopped before it
  // started it (then it is reported lost, with a spec to restart it).
  virtual std::vector<RecoveredReplica> Recover(const std::vector<ReplicaKey>& keys) = 0;
  // The metric records of `tag` a replica's trainer reported, also long after it ended (a
  // study rebuilt after a restart, or resumed by another job). Empty when there are none.
  virtual std::vector<MetricRecord> ReplicaMetrics(const ReplicaKey& key,
                                                   const std::string& tag) = 0;
  // The metric tags in a replica's metric file, sorted (MetricTagsInFile): what its trainer
  // reported under other tags when it reported none under the job's. Empty when there is no
  // file or the backend cannot say.
  virtual std::vector<std::string> ReplicaMetricTags(const ReplicaKey& key) {
    (void)key;
    return {};
  }
  // What keeps the backend from working right now ("" = nothing), e.g. a cluster controller
  // that does not answer. Replicas are kept as they were meanwhile (for /readyz).
  virtual std::string Problem() const { return ""; }
  // Why a launched replica waits to start on a backend with its own queue (Slurm's pending
  // reason, in words); "" when it does not wait or the backend has no queue.
  virtual std::string PendingReason(const ReplicaKey& key) const {
    (void)key;
    return "";
  }
  // Whether launched gangs wait in the backend's own queue until it allocates them (Slurm's
  // PENDING): the scheduler then keeps an admitted job QUEUED until OnReplicaAllocated, and a
  // restarted daemon asks Recover about its QUEUED jobs too.
  virtual bool QueuesGangs() const { return false; }
  // The place of a launched replica's gang in the backend's queue (1 = next to start), 0 when
  // it does not wait there or the backend cannot say.
  virtual int64_t QueuePosition(const ReplicaKey& key) const {
    (void)key;
    return 0;
  }
  // Whether the lost replica `key`, which ended as `exit`, is restarted with its whole run
  // (every replica of the job, or of the trial, stopped and launched again together with
  // LaunchGang); asked from within ExecutorListener::OnReplicaExit, before Launch. A backend
  // that gives each gang attempt one allocation (Slurm) cannot add a replica to a running gang
  // elsewhere, and its peers would keep the old address: there, only a replica killed inside a
  // healthy allocation gets a new step on its node (Launch). false (local): the lost replica
  // alone is launched again (Launch), with the same identity and address.
  virtual bool RestartsWholeRun(const ReplicaKey& key, const ReplicaExit& exit) const {
    (void)key;
    (void)exit;
    return false;
  }
  // Number of replicas currently running (for /metrics).
  virtual int RunningCount() const = 0;
  // Resource use of the running replicas that have cgroups (for /metrics); empty where the
  // backend cannot say (Slurm, containers, no cgroups).
  virtual std::vector<ReplicaUsage> Usage() { return {}; }
  // Stops threads; running replicas are left running (recovered on restart).
  virtual void Shutdown() = 0;
};

struct LocalExecutorOptions {
  std::string launcher_path;                // path of trainyard-launcher
  std::string jobs_dir;                     // where replica work dirs are made (see ReplicaSpec)
  Duration log_poll_interval = 20 * 1000;   // how often replica log files are tailed
  Duration metrics_interval = 1000 * 1000;  // how often trials' metric files are read
};

std::unique_ptr<Executor> NewLocalExecutor(const LocalExecutorOptions& options,
                                           ExecutorListener* listener);

}  // namespace trainyard::executor
