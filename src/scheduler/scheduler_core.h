// The scheduler core behind JobService: the state of every admitted, unfinished job, the one
// mutex that guards it, and the paths that change it (admission, executor events, deadlines,
// cancel). Private to the scheduler module.
//
// What runs under the lock (mu_), and why:
//  - every change of in-memory job state, with its store write (UpdateJob with the state
//    change) and the service lines before it (FlushServiceLogsLocked): the stored history and
//    the service log are in transition order, a terminal state is never stored before the
//    lines that explain it, and a label patch cannot overwrite a state change;
//  - Executor::Launch, which only queues the start (executor.h: every backend starts replicas
//    on a thread of its own, so no file system work, process start or sbatch happens under
//    mu_); its result (accepted or refused) decides the job's fate in the same transition, and
//    the executor contract says Launch never calls back into the listener. A start that fails
//    later arrives as OnReplicaExit (phase "launch") like any other exit.
// What does not:
//  - Executor::Kill: stop requests are queued under the lock (kills_) and sent by whoever
//    releases it (Unlocker). A kill is only ever queued once a run is ending (cancel, failure,
//    master done, trial stopped), and an ending run is never restarted, so a kill sent late
//    cannot hit a restarted replica. Kills are sent in the order they were queued.
//  - OnReplicaLogs (trainer lines go straight to the store; nothing in memory changes).
//  - Tuning suggestions (the GP fit, ~200 ms at 400 trials): computed by the scheduler thread
//    (or Step) on a replayed copy of the study, outside the lock, and used only if the study
//    has not changed meanwhile (tuning_controller.cc).
//  - Reading a finished or queued job from the store for GetJob (positions are read under the
//    lock afterwards).
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/executor/executor.h"
#include "trainyard/model/job.h"
#include "trainyard/scheduler/admission.h"
#include "trainyard/scheduler/clock.h"
#include "trainyard/scheduler/job_queue.h"
#include "trainyard/scheduler/job_service.h"
#include "trainyard/scheduler/options.h"
#include "trainyard/scheduler/outcome.h"
#include "trainyard/storage/bucket_store.h"
#include "trainyard/store/job_store.h"

namespace trainyard::scheduler {

struct TuningState;  // tuning_state.h: the trials of a hyperparameter tuning job
struct TrialRun;
struct PreparedSuggestion;

class SchedulerCore {
 public:
  SchedulerCore(SchedulerOptions options, store::JobStore& store, executor::Executor& executor,
                storage::BucketStore& buckets);
  ~SchedulerCore();

  Status Start();  // recovery.cc
  void Stop();
  void SetStorageEndpoint(std::string endpoint) { storage_endpoint_ = std::move(endpoint); }
  Status CheckRunnable(const model::Job& job) const;  // launch_plan.cc
  Result<model::Job> Submit(model::Job job);
  Status Cancel(const std::string& project, const std::string& job_id);
  Result<model::Job> UpdateLabels(const std::string& project, const std::string& job_id,
                                  const std::map<std::string, std::string>& labels,
                                  const std::string& etag, bool check_etag);
  Result<model::Job> GetJob(const std::string& project, const std::string& job_id);
  void FillLiveFields(std::vector<model::Job>& jobs);
  int RunAdmissionPass();
  const NodeCapacity& node() const { return options_.node; }
  void SetAdmissionPaused(bool paused);
  bool admission_paused() const;
  void SetAdmissionHold(const std::string& reason);
  SchedulerStats Stats() const;
  // The console's views (console_views.cc).
  Result<QueueView> Queue(const std::string& project, const std::string& page_token, int page_size);
  std::map<std::string, std::vector<executor::MetricRecord>> TrialMeasurements(
      const model::Job& job, const std::string& metric_tag,
      const std::vector<std::string>& trial_ids);
  bool Step();

  void OnReplicaAllocated(const executor::ReplicaKey& key);
  void OnReplicaRunning(const executor::ReplicaKey& key);
  Status OnReplicaLogs(std::span<model::LogEntry> entries);
  void OnReplicaMetrics(const executor::ReplicaKey& key,
                        std::span<const executor::MetricRecord> records, bool ended);
  void OnReplicaExit(const executor::ReplicaKey& key, const executor::ReplicaExit& exit);

 private:
  // key, launched, exited and exit are what the outcome rules read (outcome.h).
  struct Replica : outcome::ReplicaState {
    ReplicaDemand demand;
    double ml_units_per_hour = 0;
    executor::ReplicaSpec spec;  // as launched (restarts reuse it: same identity and port)
    bool has_spec = false;       // spec is known (launched here, or returned by Recover)
    std::vector<int> gpus;       // device indices given to it
    int restarts = 0;
    bool running = false;
    bool stop_sent = false;  // Kill() was asked for this run of the replica
    // Tuning trials: the records of its metric tag reported so far (OnReplicaMetrics).
    std::vector<executor::MetricRecord> metrics;
  };
  struct ActiveJob {
    model::Job job;
    std::vector<Replica> replicas;
    // Runs (trial ids, "" = the job's own) being restarted whole (Executor::RestartsWholeRuns):
    // a replica was lost, the others are being stopped, and all start again together once
    // every one is gone. Nothing is decided about such a run meanwhile.
    std::set<std::string> run_restarts;
    std::string cancel_reason;  // set once a cancel was requested (user or deadline)
    // The terminal state FinishLocked could not store (the store was unavailable), with its
    // message: stored again every tick until it is (CheckDeadlinesLocked).
    std::optional<std::pair<model::JobState, std::string>> finish_pending;
    // Every replica of a run runs but the store refused RUNNING: stored again every tick until
    // it is (CheckDeadlinesLocked), so the job does not say PREPARING for its whole run.
    bool running_pending = false;
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
  struct Kill {
    executor::ReplicaKey key;
    Duration grace = 0;
    std::string reason;
  };
  // Holds mu_; on destruction releases it and then sends the kills queued meanwhile.
  class Unlocker {
   public:
    explicit Unlocker(SchedulerCore* core) : core_(core), lock_(core->mu_) {}
    ~Unlocker();
    std::unique_lock<std::mutex>& lock() { return lock_; }

   private:
    SchedulerCore* core_;
    std::unique_lock<std::mutex> lock_;
  };

  Timestamp Now() const { return clock_->Now(); }
  void Loop();
  // One pass of the background work with mu_ held; true when more is ready right away.
  bool StepLocked();

  // ---- Admission (scheduler_core.cc) ----
  bool AdmitLocked();
  bool AdmitQueueLocked();
  void CheckDeadlinesLocked(Timestamp now);
  void FlushServiceLogsLocked();
  void EnqueueLocked(const model::Job& job);
  // The live Trainyard extensions of a job read for the API: why a queued job waits (or a
  // preparing one a cluster keeps waiting) and what an admitted one holds. `aj` is its
  // admitted state, nullptr when it is not admitted.
  void FillLiveLocked(model::Job& job, const ActiveJob* aj) const;
  Status CancelQueuedLocked(model::Job job, const std::string& reason);

  // ---- Replicas and launches (launch_plan.cc) ----
  // The replicas a job runs (model::PlanCluster), with their demands.
  static std::vector<Replica> PlanReplicas(const model::Job& job);
  static JobDemand DemandOf(const std::vector<Replica>& replicas);
  static std::string Owner(const model::Job& job) { return job.project + "/" + job.job_id; }
  const RuntimeOptions* FindRuntime(const model::TrainingSpec& spec) const;
  // FindRuntime, else for a built-in algorithm's job the first configured runtime.
  const RuntimeOptions* RuntimeFor(const model::TrainingSpec& spec) const;
  // A built-in algorithm's job (builtin_algorithms.h): adds isBuiltInAlgorithmJob and
  // builtInAlgorithmOutput to its trainingOutput `out`, and to each successful trial's entry
  // of a tuning job; modelPath when the job `succeeded` (not a tuning job). Else nothing.
  void AddBuiltInOutputLocked(const ActiveJob& aj, bool succeeded,
                              nlohmann::ordered_json* out) const;
  // The same for a job that is not a tuning job, into its stored trainingOutput text.
  void SetBuiltInOutputLocked(ActiveJob& aj, bool succeeded) const;
  // Launches the replicas of run `trial_id` ("" = the job's own) not launched yet.
  Status LaunchLocked(ActiveJob& aj, const std::string& trial_id);
  // Fails the replicas of `trial_id` not launched after LaunchLocked returned `st`.
  void MarkLaunchFailedLocked(ActiveJob& aj, const std::string& trial_id, const Status& st);

  // ---- Outcomes (scheduler_core.cc, rules in outcome.cc) ----
  struct RunOutcome {
    bool all_gone = true;
    bool succeeded = false;
    std::string failures;
    Timestamp ended_at = 0;  // RunVerdict::ended_at
  };
  // The outcome rules over the replicas of one run; asks the others to stop once decided.
  RunOutcome EvaluateRunLocked(ActiveJob& aj, const std::string& trial_id);
  // Restarts a replica killed from outside when the policy allows; true when it did.
  bool MaybeRestartLocked(ActiveJob& aj, Replica& r);
  // A run being restarted whole: launches it again once every replica is gone. False when
  // the restart was given up (the job is ending, or its master finished meanwhile).
  bool ContinueRunRestartLocked(ActiveJob& aj, const std::string& trial_id);
  // Queues a stop request for a running replica, once per run of it.
  void StopReplicaLocked(Replica& r, Duration grace, const std::string& reason = "");
  void AccrueUnitsLocked(ActiveJob& aj, Timestamp now);
  void AccrueAllLocked(Timestamp now);
  Status TransitionLocked(ActiveJob& aj, model::JobState to, const std::string& reason);
  // An admitted job the backend kept in its own queue (QUEUED, Executor::QueuesGangs) got its
  // allocation: PREPARING from now (startTime too). No-op in any other state.
  void AllocatedLocked(ActiveJob& aj);
  // `ended`: when the job's replicas ended, if known (else now); it dates the job's end.
  void FinishLocked(ActiveJob& aj, model::JobState to, const std::string& message,
                    Timestamp ended = 0);
  void RequestCancelLocked(ActiveJob& aj, const std::string& reason);
  void MaybeFinishLocked(ActiveJob& aj);
  // `once`: the line is stored at most once per job, even when it is written again after a
  // restart (the job's closing line, when the daemon died between it and the terminal state).
  void ServiceLogLocked(const model::Job& job, model::Severity severity, std::string message,
                        bool once = false);

  // ---- Hyperparameter tuning (tuning_controller.cc) ----
  Status InitTuningLocked(ActiveJob& aj, bool recovering);
  void ReplayTrialsLocked(ActiveJob& aj, TuningState& ts, const model::Job& owner, bool own);
  // Starts up to `max_new` trials while the job wants more and the backend has room; returns
  // how many started. Without a prepared suggestion it computes one under the lock only when
  // `allow_sync`; otherwise it asks the next step to prepare one.
  int StartTrialsLocked(ActiveJob& aj, int max_new, bool allow_sync);
  bool AdmitTrialsLocked(bool first_only);
  void MaybeFinishTuningLocked(ActiveJob& aj);
  void UpdateTuningOutputLocked(ActiveJob& aj, bool persist);
  std::string TrialOwner(const model::Job& job, int64_t trial_id) const;
  bool TrialEndingLocked(const ActiveJob& aj, const Replica& r) const;
  // Feeds a trial's metric records to the study; true when the median rule says stop.
  bool FeedTrialMetricsLocked(TuningState& ts, TrialRun& t,
                              const std::vector<executor::MetricRecord>& given);
  // The records that count for a trial: its first replica in cluster order that reported any.
  std::vector<executor::MetricRecord> TrialRecordsLocked(const ActiveJob& aj, int64_t trial_id);
  // New records of a running trial (live finalMetric, early stopping).
  void OnTrialMetricsLocked(ActiveJob& aj, int64_t trial_id);
  // Outside the lock: suggestions for tuning jobs that want a trial. True when one was made.
  bool PrepareSuggestions();
  // The reason a trial's replica is stopped with: kStopEarlyReason once the median rule said
  // so (the executor keeps it across daemon restarts), else "".
  std::string StopReason(const ActiveJob& aj, const Replica& r) const;

  // Immutable after construction.
  const SchedulerOptions options_;
  store::JobStore& store_;
  executor::Executor& executor_;
  storage::BucketStore& buckets_;
  RealClock real_clock_;
  const Clock* clock_;
  std::unique_ptr<Admission> own_admission_;
  Admission* admission_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool paused_ = false;
  std::string hold_reason_;  // SetAdmissionHold: admission waits while it is not ""
  Histogram queue_wait_{{1, 5, 15, 60, 300, 900, 3600, 14400, 86400}};
  // OnReplicaLogs runs outside mu_: its histogram has a lock of its own.
  mutable std::mutex lag_mu_;
  Histogram log_lag_{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  // Admitted, unfinished jobs (PREPARING, RUNNING, CANCELLING; QUEUED while a backend with a
  // queue of its own holds their gang, Executor::QueuesGangs). Queued jobs are only in queue_.
  std::map<JobKey, ActiveJob> active_;
  JobQueue queue_;
  // Set when an admission pass could admit something it could not before (a job was queued,
  // resources were freed, admission resumed); clear passes are skipped.
  bool admission_dirty_ = true;
  int64_t restarts_total_ = 0;
  // Queued jobs with a maxWaitTime, by deadline (stale entries are skipped when reached).
  std::set<std::pair<Timestamp, QueueKey>> wait_deadlines_;
  // Admitted jobs with a deadline to watch: RUNNING ones (maxRunningTime) and PREPARING ones
  // with a maxWaitTime. Entries of jobs that moved on are dropped lazily.
  std::set<JobKey> timed_;
  std::vector<model::LogEntry> pending_logs_;
  std::vector<Kill> kills_;  // queued stop requests, sent once mu_ is released
  // A tuning job waits for a suggestion (PrepareSuggestions makes it outside the lock).
  bool suggestions_wanted_ = false;
  std::string storage_endpoint_;
  // Active tuning jobs (they may start trials whenever resources are freed).
  std::set<JobKey> tuning_jobs_;
  // During Start() only: what the executor found of the replicas of unfinished jobs.
  std::map<executor::ReplicaKey, executor::RecoveredReplica> recovered_;
  std::thread thread_;
};

}  // namespace trainyard::scheduler
