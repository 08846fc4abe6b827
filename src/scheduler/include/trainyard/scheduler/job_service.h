// JobService: what the API (and the daemon) see of the scheduler. Every write to a job goes
// through it (the API never writes jobs to the store directly), so state changes and label
// patches cannot race.
//
// Behind it, one part per job (docs/architecture.md has the map):
//   job_queue.h        the queue (priority, then age) and jobPosition
//   admission.h        when a gang starts, per backend (local_admission.cc: the ResourcePool)
//   outcome.h          which exit decides, restart or fail, AI Platform's messages
//   cluster_env        TF_CONFIG, CLUSTER_SPEC, torch and CUDA variables (src/cluster_env)
//   launch_plan.cc     a job's replicas and their ReplicaSpecs
//   tuning_controller  trials, suggestions (computed outside the lock), metrics, early stopping
//   recovery.cc        what a restarted daemon rebuilds from the store and the executor
//   scheduler_core.*   the state of admitted jobs, transitions, deadlines, the one mutex
//
// Threads: every method is thread-safe. Executor events (the ExecutorListener methods) arrive
// on executor threads. See scheduler_core.h for what is done under the lock and the ordering
// guarantees.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/executor/executor.h"
#include "trainyard/model/job.h"
#include "trainyard/scheduler/options.h"
#include "trainyard/storage/bucket_store.h"
#include "trainyard/store/job_store.h"

namespace trainyard::scheduler {

class SchedulerCore;

// What the web console's Queue page shows (GET /v1/projects/P/jobs:queue, docs/api.md): one
// project's admitted jobs with their replicas, a page of its queued jobs in admission order, and
// the node's capacity, what is free and who holds each GPU.
struct QueueReplica {
  std::string task_name;  // "master-replica-0"
  std::string trial_id;   // "" outside tuning
  bool running = false;   // the trainer runs (else its environment is being prepared)
  bool stopping = false;  // a stop was sent
  ReplicaDemand demand;
  std::vector<int> gpus;  // device indices on this node
};
struct QueueAdmittedJob {
  model::Job job;  // live fields filled
  std::vector<QueueReplica> replicas;
};
struct QueueGpu {
  Gpu gpu;
  bool held = false;
  // The holder, only when it is a job of the project asked about (other projects' jobs are not
  // named): job id, trial id, task name.
  std::string job_id, trial_id, task_name;
};
struct QueueView {
  bool paused = false;
  int max_running_jobs = 0;
  SchedulerStats stats;  // daemon-wide counts, free resources, hold reason, backend problem
  std::vector<QueueGpu> gpus;
  std::vector<QueueAdmittedJob> admitted;  // the project's, by job id
  std::vector<model::Job> queued;          // the project's, admission order, live fields filled
  std::string next_page_token;             // "" = no more of the project's queued jobs
};

class JobService final : public executor::ExecutorListener {
 public:
  JobService(SchedulerOptions options, store::JobStore& store, executor::Executor& executor,
             storage::BucketStore& buckets);
  ~JobService() override;
  JobService(const JobService&) = delete;
  JobService& operator=(const JobService&) = delete;

  // Loads unfinished jobs, re-attaches or fails running replicas (recovery.cc), then starts the
  // background thread (not in step mode).
  Status Start();
  // Stops the background thread. Running replicas keep running (recovered on restart).
  void Stop();
  // The storage API address given to trainers as STORAGE_EMULATOR_HOST (known once the API
  // has bound its port). Call before Start().
  void SetStorageEndpoint(std::string endpoint);

  // Checks what the model cannot: a runtime serves the job (or, for a custom-container job, a
  // container engine is configured), package URIs resolve to files, jobDir is valid, the
  // backend could ever run it, a resumed study exists and fits. INVALID_ARGUMENT with field
  // violations.
  Status CheckRunnable(const model::Job& job) const;
  // Stores the job (QUEUED, createTime now) and queues it. Returns the stored job.
  // ALREADY_EXISTS for a duplicate id.
  Result<model::Job> Submit(model::Job job);
  // The job with live fields (jobPosition, consumedMLUnits, trials) filled.
  Result<model::Job> GetJob(const std::string& project, const std::string& job_id);
  // Fills live fields of jobs read from the store (for list).
  void FillLiveFields(std::vector<model::Job>& jobs);
  // Cancels a job; a finished job is left alone (success). NOT_FOUND if absent.
  Status Cancel(const std::string& project, const std::string& job_id);
  // Replaces the labels (compat §5.1 patch). ABORTED when `etag` is given and does not match.
  Result<model::Job> UpdateLabels(const std::string& project, const std::string& job_id,
                                  const std::map<std::string, std::string>& labels,
                                  const std::string& etag, bool check_etag);

  // The console's Queue page (QueueView above): `page_size` queued jobs of `project` after
  // `page_token` (a previous answer's next_page_token). INVALID_ARGUMENT for a bad token.
  Result<QueueView> Queue(const std::string& project, const std::string& page_token, int page_size);
  // The intermediate reports of a tuning job's trials under `metric_tag` (compat §4 allMetrics),
  // as the executor keeps them (the last 100 of each trial's hypertune file), in report order:
  // trial id -> records (trials with none are absent). Reads files; takes no lock while it does.
  std::map<std::string, std::vector<executor::MetricRecord>> TrialMeasurements(
      const model::Job& job, const std::string& metric_tag,
      const std::vector<std::string>& trial_ids);

  // Admin.
  void SetAdmissionPaused(bool paused);
  bool admission_paused() const;
  // Holds admission for a reason of the daemon's own (a full disk), apart from the admin pause:
  // queued jobs stay QUEUED and say why (their errorMessage while they wait); "" resumes.
  void SetAdmissionHold(const std::string& reason);
  SchedulerStats Stats() const;
  const NodeCapacity& node() const;
  // One admission pass now, whatever changed and even while paused (benchmarks). Returns the
  // jobs admitted.
  int RunAdmissionPass();

  // Step mode (SchedulerOptions::step_mode). One step: suggestions for tuning jobs (computed
  // outside the lock), then admission, deadlines, consumedMLUnits and service-log flushes, as
  // the background thread does each tick. Returns true when more work is ready right away.
  bool Step();
  // Steps until nothing is left to do without time passing or an executor event.
  void RunUntilIdle();

  // ExecutorListener.
  void OnReplicaAllocated(const executor::ReplicaKey& key) override;
  void OnReplicaRunning(const executor::ReplicaKey& key) override;
  Status OnReplicaLogs(std::span<model::LogEntry> entries) override;
  void OnReplicaMetrics(const executor::ReplicaKey& key,
                        std::span<const executor::MetricRecord> records, bool ended) override;
  void OnReplicaExit(const executor::ReplicaKey& key, const executor::ReplicaExit& exit) override;

 private:
  std::unique_ptr<SchedulerCore> core_;
};

}  // namespace trainyard::scheduler
