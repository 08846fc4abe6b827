// Runs replicas and reports what happened to them. One interface for every backend (local
// processes now; containers and Slurm later), modelled on Mesos's Containerizer: launch, kill
// with grace, recover after a daemon restart.
//
// Every replica runs under `trainyard-launcher` (src/launcher), which prepares the Python
// environment, runs the trainer, writes every output line to the replica's log file and its exit
// to exit.json. The daemon never depends on being the launcher's parent, which is what lets a
// restarted daemon re-attach to replicas that kept running. The per-replica work directory is
// described in docs/on-disk-layout.md and launcher_protocol.h.
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

// How a custom-container replica runs (compat §2 ReplicaConfig, issue 5). The launcher runs
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
};

// Everything the launcher needs; written to <work_dir>/spec.json.
struct ReplicaSpec {
  ReplicaKey key;
  std::string work_dir;                   // per-replica directory, created by the executor
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

// How a replica ended.
struct ReplicaExit {
  int exit_code = 0;               // the trainer's exit status (or the launcher's, see phase)
  int signal = 0;                  // terminating signal of the trainer, 0 if it exited
  bool killed_by_request = false;  // Kill() was called for it
  std::string phase;               // "install" (environment failed), "run" (trainer ran), "launch"
  std::string message;             // install failure text (pip's message) or launcher error
  std::string error_tail;          // tail of the trainer's stderr, traceback first (may be "")
  bool oom_killed = false;         // the replica's memory cgroup recorded an OOM kill
  // The launcher had been asked to stop (SIGTERM) before the trainer ended. A trainer that
  // ended on its own just before a stop request arrived has this false.
  bool stop_requested = false;
};

// Callbacks from the executor. Called on executor threads; implementations must be quick and
// thread-safe (they post to the scheduler).
class ExecutorListener {
 public:
  virtual ~ExecutorListener() = default;
  // The environment is ready and the trainer process started.
  virtual void OnReplicaRunning(const ReplicaKey& key) = 0;
  // New log lines (task_name, severity, timestamp, message filled; insert ids not yet).
  // Returns OK once they are stored; on an error the executor delivers the same lines again
  // on its next poll (the replica's log offset only advances past stored lines). The entries
  // belong to the executor, which reuses them after the call (the callee may set insert ids).
  virtual Status OnReplicaLogs(std::span<model::LogEntry> entries) = 0;
  // The replica ended; all of its log lines were delivered before this call.
  virtual void OnReplicaExit(const ReplicaKey& key, const ReplicaExit& exit) = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Starts the replica. Returns once the launcher process exists (not when the trainer runs).
  virtual Status Launch(const ReplicaSpec& spec) = 0;
  // SIGTERM to the whole replica (launcher, trainer and every descendant), SIGKILL after
  // `grace`. OnReplicaExit follows with killed_by_request = true. No-op for unknown keys.
  virtual void Kill(const ReplicaKey& key, Duration grace) = 0;
  // After a daemon restart: re-attaches to the replicas whose work dirs are given if their
  // launcher still runs (events then flow as usual), and reports OnReplicaExit for the others
  // (from exit.json when present, else with phase "lost"). Returns the keys re-attached.
  virtual std::vector<ReplicaKey> Recover(const std::vector<std::string>& work_dirs) = 0;
  // Number of replicas currently running (for /metrics).
  virtual int RunningCount() const = 0;
  // Stops threads; running replicas are left running (recovered on restart).
  virtual void Shutdown() = 0;
};

struct LocalExecutorOptions {
  std::string launcher_path;               // path of trainyard-launcher
  Duration log_poll_interval = 20 * 1000;  // how often replica log files are tailed
};

std::unique_ptr<Executor> NewLocalExecutor(const LocalExecutorOptions& options,
                                           ExecutorListener* listener);

}  // namespace trainyard::executor
