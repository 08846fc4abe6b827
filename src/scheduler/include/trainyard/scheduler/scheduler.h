// The Scheduler owns the state of every job that is not finished: the queue, admission, the
// job -> replicas plan, and the outcome rules. Every write to a job goes through it (the API
// never writes jobs to the store directly), so state changes and label patches cannot race.
//
// Thread model: public methods are thread-safe (one mutex guards the in-memory state; store
// writes of state changes happen under it, so the stored history is in transition order). A
// background thread runs admission passes, deadline checks and batched service-log writes.
// Executor callbacks arrive on executor threads.
#pragma once

#include <condition_variable>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/executor/executor.h"
#include "trainyard/model/job.h"
#include "trainyard/scheduler/resources.h"
#include "trainyard/storage/bucket_store.h"
#include "trainyard/store/job_store.h"

namespace trainyard::scheduler {

struct TuningState;  // tuning_state.h: the trials of a hyperparameter tuning job
struct TrialRun;

// A configured Python runtime. A job's runtimeVersion and pythonVersion select the first
// runtime whose lists match ("*" matches anything, including unset).
struct RuntimeOptions {
  std::string name = "default";
  std::string python = "/usr/bin/python3";
  std::vector<std::string> runtime_versions = {"*"};
  std::vector<std::string> python_versions = {"*"};
};

struct SchedulerOptions {
  std::string jobs_dir;       // replica work dirs: <jobs_dir>/<project>/<job>/<task_name>
  std::string env_cache_dir;  // cached Python environments
  std::vector<RuntimeOptions> runtimes = {RuntimeOptions{}};
  Duration cancel_grace = 10 * kMicrosPerSecond;  // SIGTERM -> SIGKILL
  int max_running_jobs = 0;                       // 0 = no limit besides resources
  bool admission_paused = false;
  // What this node offers (after overcommit) and how GPU requests match GPUs.
  NodeCapacity node;
  bool exact_gpu_type = false;
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
  // A directory appended to every Python replica's PYTHONPATH: the `hypertune` module lives
  // there ("" = none).
  std::string python_support_dir;
  // How often the metric files of running trials are read (early stopping, live finalMetric).
  Duration metrics_interval = 1000 * 1000;
  Duration tick = 200 * 1000;  // deadline checks
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
  int64_t replica_restarts = 0;  // since start
};

class Scheduler : public executor::ExecutorListener {
 public:
  Scheduler(SchedulerOptions options, store::JobStore& store, executor::Executor& executor,
            storage::BucketStore& buckets);
  ~Scheduler() override;

  // Loads unfinished jobs, re-attaches or fails running replicas, starts the background thread.
  Status Start();
  // Stops the background thread. Running replicas keep running (recovered on restart).
  void Stop();
  // The storage API address given to trainers as STORAGE_EMULATOR_HOST (known once the API
  // has bound its port). Call before Start().
  void SetStorageEndpoint(std::string endpoint) { storage_endpoint_ = std::move(endpoint); }

  // Checks what the model cannot: a runtime serves the job (or, for a custom-container job, a
  // container engine is configured), package URIs resolve to files, jobDir is valid.
  // INVALID_ARGUMENT with field violations.
  Status CheckRunnable(const model::Job& job) const;
  // Stores the job (QUEUED, createTime now) and queues it. Returns the stored job.
  // ALREADY_EXISTS for a duplicate id.
  Result<model::Job> Submit(model::Job job);
  // Cancels a job; a finished job is left alone (success). NOT_FOUND if absent.
  Status Cancel(const std::string& project, const std::string& job_id);
  // Replaces the labels (compat §5.1 patch). ABORTED when `etag` is given and does not match.
  Result<model::Job> UpdateLabels(const std::string& project, const std::string& job_id,
                                  const std::map<std::string, std::string>& labels,
                                  const std::string& etag, bool check_etag);
  // The job with live fields (jobPosition) filled.
  Result<model::Job> GetJob(const std::string& project, const std::string& job_id);
  // Fills live fields of jobs read from the store (jobPosition while QUEUED).
  void FillLiveFields(std::vector<model::Job>& jobs);

  // One admission pass now, whatever changed (benchmarks and tests). Returns the jobs admitted.
  int RunAdmissionPass();
  const NodeCapacity& node() const { return options_.node; }

  void SetAdmissionPaused(bool paused);
  bool admission_paused() const;
  SchedulerStats Stats() const;

  // ExecutorListener.
  void OnReplicaRunning(const executor::ReplicaKey& key) override;
  Status OnReplicaLogs(std::span<model::LogEntry> entries) override;
  void OnReplicaExit(const executor::ReplicaKey& key, const executor::ReplicaExit& exit) override;

 private:
  struct Replica {
    executor::ReplicaKey key;
    ReplicaDemand demand;
    double ml_units_per_hour = 0;
    executor::ReplicaSpec spec;  // as launched (restarts reuse it: same identity and port)
    std::vector<int> gpus;       // GPU indices given to it
    int restarts = 0;
    bool launched = false;
    bool running = false;
    bool exited = false;
    bool stop_sent = false;  // Kill() was asked for this run of the replica
    executor::ReplicaExit exit;
  };
  struct ActiveJob {
    model::Job job;
    std::vector<Replica> replicas;
    std::string cancel_reason;  // set once a cancel was requested (user or deadline)
    Timestamp running_since = 0;
    Timestamp units_accrued_at = 0;  // consumedMLUnits counted up to here (0 = not running)
    Timestamp units_persisted_at = 0;
    // Hyperparameter tuning jobs only: the study and its trials. `replicas` then holds the
    // replicas of the trials still running, each keyed by its trial id.
    std::unique_ptr<TuningState> tuning;
    ActiveJob();
    ActiveJob(ActiveJob&&) noexcept;
    ActiveJob& operator=(ActiveJob&&) noexcept;
    ~ActiveJob();
  };
  using JobKey = std::pair<std::string, std::string>;  // project, job id

  void Loop();
  bool AdmitLocked();
  bool AdmitQueueLocked();
  void CheckDeadlinesLocked(Timestamp now);
  void FlushServiceLogsLocked();
  // The replicas a job runs (model::PlanCluster), with their demands.
  static std::vector<Replica> PlanReplicas(const model::Job& job);
  static JobDemand DemandOf(const std::vector<Replica>& replicas);
  static std::string Owner(const model::Job& job) { return job.project + "/" + job.job_id; }
  // Restarts a replica killed from outside when the policy allows; true when it did.
  bool MaybeRestartLocked(ActiveJob& aj, Replica& r);
  // Asks the executor to stop a running replica, once per run of it.
  void StopReplicaLocked(Replica& r, Duration grace);
  void AccrueUnitsLocked(ActiveJob& aj, Timestamp now);
  void AccrueAllLocked(Timestamp now);
  // Launches the replicas of run `trial_id` ("" = the job's own) not launched yet.
  Status LaunchLocked(ActiveJob& aj, const std::string& trial_id);
  // Fails the replicas of `trial_id` not launched after LaunchLocked returned `st`.
  void MarkLaunchFailedLocked(ActiveJob& aj, const std::string& trial_id, const Status& st);
  // The outcome rules of compat §12 over the replicas of one run (a job's, or a trial's).
  struct RunOutcome {
    bool all_gone = true;
    bool succeeded = false;  // the master exited 0 on its own and everything is gone
    std::string failures;    // AI Platform's words for the replicas that failed
  };
  RunOutcome EvaluateRunLocked(ActiveJob& aj, const std::string& trial_id);

  // ---- Hyperparameter tuning (scheduler_tuning.cc) ----
  // Builds the study of a tuning job: its spec, the trials of a resumed job, and (on recovery)
  // its own stored trials with the measurements in their metric files.
  Status InitTuningLocked(ActiveJob& aj, bool recovering);
  void ReplayTrialsLocked(ActiveJob& aj, TuningState& ts, const model::Job& owner, bool own);
  // Starts up to `max_new` trials while the job wants more and the node has room; returns how
  // many started.
  int StartTrialsLocked(ActiveJob& aj, int max_new);
  // Admission of trials of running tuning jobs. `first_only`: only jobs with no trial running,
  // one trial each (they go before the queue); returns true when one of them does not fit.
  // Otherwise every job gets the trials it may run in parallel (after the queue).
  bool AdmitTrialsLocked(bool first_only);
  // Finishes trials whose replicas are gone, then decides the job (tuning jobs only).
  void MaybeFinishTuningLocked(ActiveJob& aj);
  // Reads new metric records of running trials (live finalMetric, early stopping).
  void PollTrialMetricsLocked(ActiveJob& aj, Timestamp now);
  void PollAllMetricsLocked(Timestamp now);
  // trainingOutput of a tuning job from its trials, into aj.job (and the store when `persist`).
  void UpdateTuningOutputLocked(ActiveJob& aj, bool persist);
  std::string TrialOwner(const model::Job& job, int64_t trial_id) const;
  // True when `r` belongs to a trial being stopped (early stopping, or too many failures).
  bool TrialEndingLocked(const ActiveJob& aj, const Replica& r) const;
  // The metric files of every replica of a trial of `job` (its own, or a resumed job's).
  std::vector<std::string> TrialMetricFiles(const model::Job& job, int64_t trial_id) const;
  // Feeds a trial's new metric records to the study; true when the median rule says stop.
  bool FeedTrialMetricsLocked(TuningState& ts, TrialRun& t, const model::Job& job);
  Status TransitionLocked(ActiveJob& aj, model::JobState to, const std::string& reason);
  void FinishLocked(ActiveJob& aj, model::JobState to, const std::string& message);
  void RequestCancelLocked(ActiveJob& aj, const std::string& reason);
  void MaybeFinishLocked(ActiveJob& aj);
  void ServiceLogLocked(const model::Job& job, model::Severity severity, std::string message);
  // <jobs_dir>/<project>/<job>[/trial-<id>]: a run's replicas have their work dirs below it.
  std::string RunDir(const std::string& project, const std::string& job_id,
                     const std::string& trial_id) const;
  std::string WorkDir(const executor::ReplicaKey& key) const;
  const RuntimeOptions* FindRuntime(const model::TrainingSpec& spec) const;
  void EnqueueLocked(const model::Job& job);
  bool IsQueuedLocked(const model::Job& job) const;
  Status CancelQueuedLocked(model::Job job, const std::string& reason);
  // 1-based position of a QUEUED job in the admission order (O(log n)).
  int64_t QueuePositionLocked(const model::Job& job) const;

  // Immutable after construction.
  const SchedulerOptions options_;
  store::JobStore& store_;
  executor::Executor& executor_;
  storage::BucketStore& buckets_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool paused_ = false;
  // Admitted, unfinished jobs (PREPARING, RUNNING, CANCELLING). Queued jobs are only in queue_.
  std::map<JobKey, ActiveJob> active_;
  // Queue order: higher priority first, then older (lower seq) first. An order-statistics tree,
  // so jobPosition is O(log n) with 100,000 queued jobs.
  // Each entry keeps the job's summed demand, so an admission pass reads no job from the store
  // until it admits one.
  using QueueEntry = std::tuple<int, int64_t, JobKey>;
  __gnu_pbds::tree<QueueEntry, JobDemand, std::less<QueueEntry>, __gnu_pbds::rb_tree_tag,
                   __gnu_pbds::tree_order_statistics_node_update>
      queue_;
  ResourcePool pool_;
  // Set when an admission pass could admit something it could not before (a job was queued,
  // resources were freed, admission resumed); clear passes are skipped.
  bool admission_dirty_ = true;
  int64_t restarts_total_ = 0;
  // Queued jobs with a maxWaitTime, by deadline (stale entries are skipped when reached).
  std::set<std::pair<Timestamp, QueueEntry>> wait_deadlines_;
  // Admitted jobs with a deadline to watch: RUNNING ones (maxRunningTime) and PREPARING ones
  // with a maxWaitTime. Entries of jobs that moved on are dropped lazily.
  std::set<JobKey> timed_;
  std::vector<model::LogEntry> pending_logs_;
  std::string storage_endpoint_;
  // Active tuning jobs (they may start trials whenever resources are freed).
  std::set<JobKey> tuning_jobs_;
  Timestamp metrics_polled_at_ = 0;
  std::thread thread_;
};

}  // namespace trainyard::scheduler
