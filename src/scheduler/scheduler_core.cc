// The scheduler core: admitted jobs' state and its transitions, admission passes over the
// queue, executor events, deadlines, cancel, consumedMLUnits and service log lines. What is
// done under the lock, and why, is in scheduler_core.h.
#include "scheduler_core.h"

#include <algorithm>
#include <csignal>

#include "trainyard/core/failpoint.h"
#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/model/state_machine.h"
#include "tuning_state.h"

namespace trainyard::scheduler {

using model::Job;
using model::JobState;
using outcome::ExitedCleanly;
using outcome::ExitStatusOf;

namespace {
constexpr const char* kLog = "sched";
}  // namespace

SchedulerCore::SchedulerCore(SchedulerOptions options, store::JobStore& store,
                             executor::Executor& executor, storage::BucketStore& buckets)
    : options_(std::move(options)),
      store_(store),
      executor_(executor),
      buckets_(buckets),
      clock_(options_.clock != nullptr ? options_.clock : &real_clock_),
      own_admission_(
          options_.admission != nullptr
              ? nullptr
              : NewLocalAdmission(options_.node, options_.exact_gpu_type, options_.oversize_jobs)),
      admission_(options_.admission != nullptr ? options_.admission : own_admission_.get()),
      paused_(options_.admission_paused) {}

SchedulerCore::~SchedulerCore() { Stop(); }

SchedulerCore::Unlocker::~Unlocker() {
  std::vector<Kill> kills;
  kills.swap(core_->kills_);
  lock_.unlock();
  for (const Kill& k : kills) core_->executor_.Kill(k.key, k.grace, k.reason);
}

SchedulerCore::ActiveJob::ActiveJob() = default;
SchedulerCore::ActiveJob::ActiveJob(ActiveJob&&) noexcept = default;
SchedulerCore::ActiveJob& SchedulerCore::ActiveJob::operator=(ActiveJob&&) noexcept = default;
SchedulerCore::ActiveJob::~ActiveJob() = default;

void SchedulerCore::Stop() {
  {
    Unlocker lock(this);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Unlocker lock(this);
  FlushServiceLogsLocked();
}

Result<Job> SchedulerCore::Submit(Job job) {
  job.state = JobState::kQueued;
  job.create_time = Now();
  job.etag = RandomEtag();
  Unlocker lock(this);
  TRAINYARD_ASSIGN_OR_RETURN(job.seq, store_.CreateJob(job));
  TY_FAILPOINT("scheduler.submit.after_commit");  // stored, not yet acknowledged
  ServiceLogLocked(job, model::Severity::kInfo, "Validating job requirements...");
  ServiceLogLocked(job, model::Severity::kInfo,
                   "Job creation request has been successfully validated.");
  ServiceLogLocked(job, model::Severity::kInfo, "Job " + job.job_id + " is queued.");
  EnqueueLocked(job);
  job.job_position = queue_.Position(QueueKey::Of(job));
  FillLiveLocked(job, nullptr);
  if (!paused_) cv_.notify_all();
  return job;
}

// Queued jobs live in the store; the scheduler keeps only their queue entry (and a wait
// deadline when they have one), so 100,000 queued jobs cost a few MB here.
void SchedulerCore::EnqueueLocked(const Job& job) {
  const QueueKey key = QueueKey::Of(job);
  queue_.Add(key, DemandOf(PlanReplicas(job)));
  admission_dirty_ = true;
  if (job.spec.scheduling.max_wait_time) {
    wait_deadlines_.insert({job.create_time + *job.spec.scheduling.max_wait_time, key});
  }
}

// Cancels a job that is still in the queue: it never ran, so it goes straight through
// CANCELLING to CANCELLED.
Status SchedulerCore::CancelQueuedLocked(Job job, const std::string& reason) {
  const QueueKey entry = QueueKey::Of(job);
  ActiveJob aj;
  aj.job = std::move(job);
  aj.cancel_reason = reason;
  aj.job.error_message = reason;
  // Leaves the queue only once the store has the cancel: a failed write keeps it queued.
  TRAINYARD_RETURN_IF_ERROR(TransitionLocked(aj, JobState::kCancelling, reason));
  queue_.Remove(entry);
  ServiceLogLocked(aj.job, model::Severity::kInfo, reason);
  FinishLocked(aj, JobState::kCancelled, reason);
  if (!model::IsTerminal(aj.job.state)) {
    // CANCELLING is stored but CANCELLED is not: keep it where the deadline pass finishes it.
    active_.emplace(entry.job, std::move(aj));
    timed_.insert(entry.job);
  }
  return Status::Ok();
}

Status SchedulerCore::Cancel(const std::string& project, const std::string& job_id) {
  Unlocker lock(this);
  auto it = active_.find({project, job_id});
  if (it == active_.end()) {
    // Finished jobs are a successful no-op (gcloud's documented behaviour); absent is 404.
    TRAINYARD_ASSIGN_OR_RETURN(auto job, store_.GetJob(project, job_id));
    if (job.state == JobState::kQueued && queue_.Contains(QueueKey::Of(job))) {
      return CancelQueuedLocked(std::move(job), "The job was cancelled at the user's request.");
    }
    return Status::Ok();
  }
  RequestCancelLocked(it->second, "The job was cancelled at the user's request.");
  MaybeFinishLocked(it->second);
  if (model::IsTerminal(it->second.job.state)) active_.erase(it);
  cv_.notify_all();
  return Status::Ok();
}

void SchedulerCore::RequestCancelLocked(ActiveJob& aj, const std::string& reason) {
  if (!aj.cancel_reason.empty()) return;
  aj.cancel_reason = reason;
  aj.job.error_message = reason;
  (void)TransitionLocked(aj, JobState::kCancelling, reason);
  ServiceLogLocked(aj.job, model::Severity::kInfo, reason);
  for (auto& r : aj.replicas) {
    StopReplicaLocked(r, options_.cancel_grace);
  }
}

Result<Job> SchedulerCore::UpdateLabels(const std::string& project, const std::string& job_id,
                                        const std::map<std::string, std::string>& labels,
                                        const std::string& etag, bool check_etag) {
  Unlocker lock(this);
  Job job;
  auto it = active_.find({project, job_id});
  if (it != active_.end()) {
    job = it->second.job;
  } else {
    TRAINYARD_ASSIGN_OR_RETURN(job, store_.GetJob(project, job_id));
  }
  if (check_etag && etag != job.etag) {
    return Status(StatusCode::kAborted,
                  "The etag of the job does not match: the job was modified since it was read "
                  "(got \"" +
                      etag + "\", current \"" + job.etag + "\")")
        .AddViolation("etag", "does not match the current etag");
  }
  job.labels = labels;
  job.etag = RandomEtag();
  TRAINYARD_RETURN_IF_ERROR(store_.UpdateJob(job, std::nullopt));
  if (it != active_.end()) it->second.job = job;
  return job;
}

Result<Job> SchedulerCore::GetJob(const std::string& project, const std::string& job_id) {
  {
    Unlocker lock(this);
    auto it = active_.find({project, job_id});
    if (it != active_.end()) {
      Job job = it->second.job;
      FillLiveLocked(job, &it->second);
      return job;
    }
  }
  // Not admitted (or finished): the store has it. Read outside the lock; a job admitted
  // meanwhile is then taken from memory, a queued one gets its position.
  TRAINYARD_ASSIGN_OR_RETURN(auto job, store_.GetJob(project, job_id));
  Unlocker lock(this);
  auto it = active_.find({project, job_id});
  if (it != active_.end()) {
    Job live = it->second.job;
    FillLiveLocked(live, &it->second);
    return live;
  }
  if (job.state == JobState::kQueued) job.job_position = queue_.Position(QueueKey::Of(job));
  FillLiveLocked(job, nullptr);
  return job;
}

void SchedulerCore::FillLiveLocked(Job& job, const ActiveJob* aj) const {
  job.wait_reason.clear();
  job.allocation = {};
  if (aj == nullptr) {
    if (job.state != JobState::kQueued) return;
    const QueueKey key = QueueKey::Of(job);
    const std::optional<JobDemand> demand = queue_.Demand(key);
    if (!demand) return;
    std::string why;
    if (paused_) {
      why = "Admission is paused (`trainyard admin resume` resumes it).";
    } else if (!hold_reason_.empty()) {
      why = hold_reason_;  // e.g. low disk space (docs/operations.md); resumes by itself
    } else if (options_.max_running_jobs > 0 &&
               static_cast<int>(active_.size()) >= options_.max_running_jobs) {
      why = "The running-jobs limit is reached: " + std::to_string(active_.size()) +
            " jobs are admitted and max_running_jobs is " +
            std::to_string(options_.max_running_jobs) + ".";
    } else {
      why = admission_->WhyWaiting(*demand);
      if (why.empty()) {
        const int64_t ahead = queue_.Position(key) - 1;
        why = ahead > 0 ? std::to_string(ahead) + (ahead == 1 ? " job is" : " jobs are") +
                              " ahead of it in the queue (jobs start by priority, then age)."
                        : "It starts at the next admission pass.";
      }
    }
    if (const auto& wait = job.spec.scheduling.max_wait_time) {
      why += " It is cancelled if it has not started by " + FormatRfc3339(job.create_time + *wait) +
             " (scheduling.maxWaitTime " + FormatDuration(*wait) + ").";
    }
    job.wait_reason = std::move(why);
    return;
  }
  if (model::IsTerminal(job.state) || aj->replicas.empty()) return;
  Job::Allocation& a = job.allocation;
  a.set = true;
  for (const Replica& r : aj->replicas) {
    a.cpu_millis += r.demand.cpu_millis;
    a.memory_bytes += r.demand.memory_bytes;
    a.gpus += r.demand.gpus;
    a.gpu_indices.insert(a.gpu_indices.end(), r.gpus.begin(), r.gpus.end());
  }
  std::sort(a.gpu_indices.begin(), a.gpu_indices.end());
  // A backend with a queue of its own (Slurm) holds the gang there: its place (while QUEUED)
  // and why it waits (Slurm's pending reason in words), also for a gang restarted whole that
  // waits again in a PREPARING or RUNNING job, or a tuning job's trial.
  std::string why;
  for (const Replica& r : aj->replicas) {
    if (r.exited || !r.launched) continue;
    why = executor_.PendingReason(r.key);
    if (why.empty()) continue;
    if (job.state == JobState::kQueued) job.job_position = executor_.QueuePosition(r.key);
    if (!r.key.trial_id.empty()) why = "Trial " + r.key.trial_id + ": " + why;
    break;
  }
  if (job.state == JobState::kQueued) {
    if (job.job_position <= 0) job.job_position = 1;  // waits for the backend, place unknown
    if (const auto& wait = job.spec.scheduling.max_wait_time) {
      why += std::string(why.empty() ? "" : " ") + "It is cancelled if it has not started by " +
             FormatRfc3339(job.create_time + *wait) + " (scheduling.maxWaitTime " +
             FormatDuration(*wait) + ").";
    }
  }
  job.wait_reason = std::move(why);
}

void SchedulerCore::FillLiveFields(std::vector<Job>& jobs) {
  Unlocker lock(this);
  for (auto& job : jobs) {
    auto it = active_.find({job.project, job.job_id});
    if (it != active_.end()) {
      job = it->second.job;
      FillLiveLocked(job, &it->second);
    } else if (job.state == JobState::kQueued) {
      job.job_position = queue_.Position(QueueKey::Of(job));
      FillLiveLocked(job, nullptr);
    }
  }
}

void SchedulerCore::SetAdmissionPaused(bool paused) {
  {
    Unlocker lock(this);
    paused_ = paused;
    admission_dirty_ = true;
  }
  TY_LOG_INFO(kLog, "admission {}", paused ? "paused" : "resumed");
  cv_.notify_all();
}

void SchedulerCore::SetAdmissionHold(const std::string& reason) {
  {
    Unlocker lock(this);
    if (hold_reason_ == reason) return;
    hold_reason_ = reason;
    admission_dirty_ = true;
  }
  if (reason.empty()) {
    TY_LOG_INFO(kLog, "admission resumed: the reason it was held is gone");
  } else {
    TY_LOG_WARN(kLog, "admission held: {}", reason);
  }
  cv_.notify_all();
}

bool SchedulerCore::admission_paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

SchedulerStats SchedulerCore::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerStats s;
  s.queued = static_cast<int>(queue_.size());
  for (const auto& [k, aj] : active_) {
    switch (aj.job.state) {
      case JobState::kQueued:
        ++s.queued;  // admitted, waiting in the backend's queue
        break;
      case JobState::kPreparing:
        ++s.preparing;
        break;
      case JobState::kRunning:
        ++s.running;
        break;
      case JobState::kCancelling:
        ++s.cancelling;
        break;
      default:
        break;
    }
  }
  s.running_replicas = executor_.RunningCount();
  s.backend_problem = executor_.Problem();
  s.free_cpu_millis = admission_->free_cpu_millis();
  s.free_memory_bytes = admission_->free_memory_bytes();
  s.free_gpus = admission_->free_gpus();
  s.total_cpu_millis = admission_->total_cpu_millis();
  s.total_memory_bytes = admission_->total_memory_bytes();
  s.total_gpus = admission_->total_gpus();
  s.cluster = executor_.QueuesGangs();
  s.replica_restarts = restarts_total_;
  s.admission_hold = hold_reason_;
  s.queue_wait_seconds = queue_wait_;
  std::lock_guard<std::mutex> lag_lock(lag_mu_);
  s.log_ingestion_lag_seconds = log_lag_;
  return s;
}

bool SchedulerCore::StepLocked() {
  const bool more = AdmitLocked();
  const Timestamp now = Now();
  CheckDeadlinesLocked(now);
  AccrueAllLocked(now);
  FlushServiceLogsLocked();
  return more || suggestions_wanted_;
}

bool SchedulerCore::Step() {
  const bool suggested = PrepareSuggestions();
  Unlocker lock(this);
  return StepLocked() || suggested;
}

void SchedulerCore::Loop() {
  while (true) {
    const bool suggested = PrepareSuggestions();
    Unlocker lock(this);
    if (stopping_) return;
    const bool more = StepLocked() || suggested;
    if (more) continue;  // the Unlocker lets API calls and executor events in between batches
    cv_.wait_for(lock.lock(), std::chrono::microseconds(options_.tick));
    if (stopping_) return;
  }
}

// Admits queued jobs in order (priority, then age) when their whole gang fits, at most
// kAdmitBatch per call; returns true when more could be admitted right away.
//
// Order is kept per resource: once a job ahead is short of CPU or memory nothing behind it
// starts (every job needs both), so a big job is not starved by a stream of small ones. A job
// short only of GPUs keeps the GPUs for itself (no job behind it that needs a GPU starts) but
// lets CPU-only jobs behind it run.
bool SchedulerCore::AdmitLocked() {
  if (paused_ || !hold_reason_.empty() || !admission_dirty_) return false;
  admission_dirty_ = false;
  // A tuning job without a running trial gets its next one first: it was admitted earlier, and
  // holds back the queue as a job short of resources would.
  if (AdmitTrialsLocked(/*first_only=*/true)) return false;
  const bool more = !queue_.empty() && AdmitQueueLocked();
  // Further parallel trials take what is left when nobody waits in the queue.
  if (queue_.empty()) AdmitTrialsLocked(/*first_only=*/false);
  return more;
}

bool SchedulerCore::AdmitQueueLocked() {
  constexpr int kAdmitBatch = 16;
  int admitted = 0;
  admission_->BeginPass();
  for (auto next = queue_.First(); next;) {
    if (options_.max_running_jobs > 0 &&
        static_cast<int>(active_.size()) >= options_.max_running_jobs) {
      return false;  // a finishing job sets admission_dirty_ again
    }
    const JobQueue::Entry current = std::move(*next);
    next = queue_.After(current.key);
    const Admission::Verdict verdict = admission_->Consider(current.demand);
    if (verdict == Admission::Verdict::kStop) return false;
    if (verdict == Admission::Verdict::kSkip) continue;
    if (admitted == kAdmitBatch) {
      admission_dirty_ = true;
      return true;
    }
    // A gang that can never fit (the node shrank since it was queued) is admitted only to fail.
    const std::string never = admission_->NeverFits(current.demand);
    const QueueKey& entry = current.key;
    const JobKey& key = entry.job;
    auto stored = store_.GetJob(key.first, key.second);
    if (!stored.ok()) {
      StatusCode code = stored.status().code();
      TY_LOG_ERROR(kLog, "job {}: cannot load it for admission: {}", key.second,
                   stored.status().ToString());
      if (code == StatusCode::kUnavailable || code == StatusCode::kResourceExhausted ||
          code == StatusCode::kAborted) {
        admission_dirty_ = true;
        return false;  // transient: tried again next pass
      }
      queue_.Remove(entry);  // gone or unreadable: it must not block the jobs behind it
      continue;
    }
    queue_.Remove(entry);
    if (stored->state != JobState::kQueued) continue;
    ActiveJob candidate;
    candidate.job = std::move(stored).value();
    // A tuning job's replicas are its trials', planned as each trial starts.
    if (!candidate.job.spec.has_hyperparameters) candidate.replicas = PlanReplicas(candidate.job);
    // A backend with a queue of its own (Slurm) holds the gang there until it allocates it:
    // the job stays QUEUED meanwhile, with the backend's place and reason (FillLiveLocked),
    // and turns PREPARING when it is allocated (AllocatedLocked). Nothing is stored here: a
    // restarted daemon finds the gang through Recover (recovery.cc). A tuning job is PREPARING
    // from admission on, as locally; its trials wait in the backend.
    const bool backend_queues = executor_.QueuesGangs() && !candidate.job.spec.has_hyperparameters;
    if (!backend_queues) candidate.job.start_time = Now();
    if (!backend_queues && !TransitionLocked(candidate, JobState::kPreparing, "admitted").ok()) {
      // The store refused the write: the job stays QUEUED and is tried again next pass.
      queue_.Add(entry, current.demand);
      admission_dirty_ = true;
      return false;
    }
    TY_FAILPOINT("scheduler.admit.after_preparing");  // PREPARING stored, nothing launched
    auto ait = active_.emplace(key, std::move(candidate)).first;
    ActiveJob& aj = ait->second;
    if (aj.job.spec.scheduling.max_wait_time) {
      wait_deadlines_.erase({aj.job.create_time + *aj.job.spec.scheduling.max_wait_time, entry});
      timed_.insert(key);  // PREPARING still counts against maxWaitTime
    }
    ++admitted;
    queue_wait_.Observe(static_cast<double>(aj.job.start_time - aj.job.create_time) /
                        kMicrosPerSecond);
    if (!never.empty()) {
      FinishLocked(aj, JobState::kFailed, "The job cannot run on this Trainyard: " + never);
      if (model::IsTerminal(aj.job.state)) active_.erase(ait);
      continue;
    }
    if (aj.job.spec.has_hyperparameters) {
      ServiceLogLocked(aj.job, model::Severity::kInfo, "Waiting for job to be provisioned.");
      Status st = InitTuningLocked(aj, /*recovering=*/false);
      if (st.ok()) {
        tuning_jobs_.insert(key);
        // More once the queue has had its turn. The first suggestion of a study is cheap (no
        // trial to fit yet), so it may be computed here.
        StartTrialsLocked(aj, 1, /*allow_sync=*/true);
      } else {
        FinishLocked(aj, JobState::kFailed,
                     "The hyperparameter tuning study could not start: " + st.message());
      }
      MaybeFinishLocked(aj);
      if (model::IsTerminal(aj.job.state)) active_.erase(ait);
      continue;
    }
    std::vector<ReplicaDemand> demands;
    for (const auto& r : aj.replicas) demands.push_back(r.demand);
    auto gpus = admission_->Reserve(Owner(aj.job), demands);
    if (gpus.ok()) {
      for (size_t i = 0; i < aj.replicas.size(); ++i) aj.replicas[i].gpus = (*gpus)[i];
      if (std::string big = admission_->Oversize(JobDemand::Sum(demands)); !big.empty()) {
        ServiceLogLocked(aj.job, model::Severity::kWarning, std::move(big));
      }
    }
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Waiting for job to be provisioned.");
    Status st = gpus.ok() ? LaunchLocked(aj, "") : gpus.status();
    if (!st.ok()) {
      MarkLaunchFailedLocked(aj, "", st);
      MaybeFinishLocked(aj);
      if (model::IsTerminal(aj.job.state)) active_.erase(ait);
      continue;
    }
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Waiting for training program to start.");
  }
  return false;
}

int SchedulerCore::RunAdmissionPass() {
  Unlocker lock(this);
  const size_t queued = queue_.size();
  admission_dirty_ = true;
  const bool was_paused = paused_;
  paused_ = false;
  AdmitLocked();
  paused_ = was_paused;
  return static_cast<int>(queued - queue_.size());
}

void SchedulerCore::CheckDeadlinesLocked(Timestamp now) {
  // Queued jobs past their maxWaitTime, earliest deadline first.
  while (!wait_deadlines_.empty() && wait_deadlines_.begin()->first < now) {
    const QueueKey entry = wait_deadlines_.begin()->second;
    wait_deadlines_.erase(wait_deadlines_.begin());
    if (!queue_.Contains(entry)) continue;  // admitted or cancelled meanwhile
    const JobKey key = entry.job;
    auto job = store_.GetJob(key.first, key.second);
    if (!job.ok() && job.status().code() != StatusCode::kNotFound) {
      // The store could not answer: try again at the next pass.
      wait_deadlines_.insert({now + options_.tick, entry});
      break;
    }
    if (!job.ok() || job->state != JobState::kQueued) {
      queue_.Remove(entry);
      continue;
    }
    std::string reason =
        "The job was cancelled because it waited longer than "
        "scheduling.maxWaitTime (" +
        FormatDuration(*job->spec.scheduling.max_wait_time) + ") to start running.";
    if (!CancelQueuedLocked(std::move(job).value(), reason).ok()) {
      wait_deadlines_.insert({now + options_.tick, entry});
      break;
    }
  }
  for (auto kit = timed_.begin(); kit != timed_.end();) {
    auto it = active_.find(*kit);
    if (it == active_.end() || model::IsTerminal(it->second.job.state)) {
      kit = timed_.erase(kit);
      continue;
    }
    ++kit;
    ActiveJob& aj = it->second;
    if (aj.finish_pending) {
      // Its terminal state could not be stored: again (its closing line is stored once).
      const auto [to, message] = *aj.finish_pending;
      FinishLocked(aj, to, message);
      if (model::IsTerminal(aj.job.state)) active_.erase(it);
      continue;
    }
    if (aj.running_pending) {
      // RUNNING could not be stored when the last replica started: again.
      AllocatedLocked(aj);
      if (aj.job.state != JobState::kPreparing ||
          TransitionLocked(aj, JobState::kRunning, "all replicas running").ok()) {
        aj.running_pending = false;
      }
    }
    if (!aj.cancel_reason.empty()) {
      // Already cancelling: finish it once its replicas are gone (retries a failed write).
      MaybeFinishLocked(aj);
      if (model::IsTerminal(aj.job.state)) active_.erase(it);
      continue;
    }
    const auto& sched = aj.job.spec.scheduling;
    if ((aj.job.state == JobState::kQueued || aj.job.state == JobState::kPreparing) &&
        sched.max_wait_time && now - aj.job.create_time > *sched.max_wait_time) {
      RequestCancelLocked(aj,
                          "The job was cancelled because it waited longer than "
                          "scheduling.maxWaitTime (" +
                              FormatDuration(*sched.max_wait_time) + ") to start running.");
    } else if (aj.job.state == JobState::kRunning) {
      Duration limit = sched.max_running_time.value_or(options_.default_max_running_time);
      if (aj.running_since > 0 && now - aj.running_since > limit) {
        RequestCancelLocked(aj,
                            "The job was cancelled because it ran longer than "
                            "scheduling.maxRunningTime (" +
                                FormatDuration(limit) + ").");
      }
    } else {
      continue;
    }
    MaybeFinishLocked(aj);
    if (model::IsTerminal(aj.job.state)) active_.erase(it);
  }
}

Status SchedulerCore::TransitionLocked(ActiveJob& aj, JobState to, const std::string& reason) {
  JobState from = aj.job.state;
  model::JobEvent ev;
  switch (to) {
    case JobState::kPreparing:
      ev = model::JobEvent::kPrepare;
      break;
    case JobState::kRunning:
      ev = model::JobEvent::kRun;
      break;
    case JobState::kSucceeded:
      ev = model::JobEvent::kSucceed;
      break;
    case JobState::kFailed:
      ev = model::JobEvent::kFail;
      break;
    case JobState::kCancelling:
      ev = model::JobEvent::kCancel;
      break;
    case JobState::kCancelled:
      ev = model::JobEvent::kCancelled;
      break;
    case JobState::kQueued:
      ev = model::JobEvent::kRequeue;
      break;
    default:
      return Internal("no event leads to that state");
  }
  auto next = model::Transition(from, ev);
  if (!next.ok()) {
    TY_LOG_ERROR(kLog, "job {}: {}", aj.job.job_id, next.status().message());
    return next.status();
  }
  model::Job updated = aj.job;
  updated.state = *next;
  store::StateChange change{from, updated.state, Now(), reason};
  Status st = store_.UpdateJob(updated, change);
  if (!st.ok()) {
    TY_LOG_ERROR(kLog, "job {}: cannot store state {}: {}", aj.job.job_id,
                 model::JobStateName(updated.state), st.ToString());
    return st;
  }
  aj.job = std::move(updated);
  if (aj.job.state == JobState::kRunning) {
    aj.running_since = change.time;
    aj.units_accrued_at = change.time;
    aj.units_persisted_at = change.time;
    aj.job.consumed_ml_units_set = true;
    timed_.insert({aj.job.project, aj.job.job_id});
  }
  return st;
}

void SchedulerCore::FinishLocked(ActiveJob& aj, JobState to, const std::string& message,
                                 Timestamp ended) {
  // A run that succeeded before RUNNING was stored (its master ended before another replica
  // started, or the store refused RUNNING): RUNNING first, as the state machine has it. Here
  // rather than at the callers, so that a terminal state stored again later (finish_pending,
  // after the store refused both) does it too instead of retrying PREPARING -> SUCCEEDED.
  if (to == JobState::kSucceeded) AllocatedLocked(aj);  // QUEUED in the backend: PREPARING
  if (to == JobState::kSucceeded && aj.job.state == JobState::kPreparing) {
    (void)TransitionLocked(aj, JobState::kRunning, "");
  }
  // The closing service line is stored before the terminal state, so a follower that stops at
  // the job's end has already been able to read it. A daemon killed between the two (or a
  // terminal state the store refused) finishes the job again later: the line is stored once.
  if (to == JobState::kSucceeded) {
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Job completed successfully.", true);
  } else if (to == JobState::kFailed) {
    ServiceLogLocked(aj.job, model::Severity::kError, message, true);
  } else {
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Job cancelled.", true);
  }
  FlushServiceLogsLocked();
  // The replicas' own end when known: a job whose replicas ended while the daemon was down
  // ended then, not when the daemon came back (never before it started, nor in the future).
  aj.job.end_time = Now();
  if (ended > 0) aj.job.end_time = std::max(aj.job.start_time, std::min(ended, aj.job.end_time));
  AccrueUnitsLocked(aj, aj.job.end_time);
  aj.units_accrued_at = 0;
  aj.job.error_message = message;
  SetBuiltInOutputLocked(aj, to == JobState::kSucceeded);  // built-in algorithms (compat §4)
  TY_FAILPOINT("scheduler.finish.before_write");  // replicas gone, terminal state not stored
  if (TransitionLocked(aj, to, message).ok()) {
    aj.finish_pending.reset();
  } else {
    // Nothing else would end the job (its replicas are gone): the next ticks try again.
    aj.finish_pending.emplace(to, message);
    timed_.insert({aj.job.project, aj.job.job_id});
  }
  // Its replicas are gone (or never started): what it held is free for the queue.
  admission_->Release(Owner(aj.job));
  if (aj.tuning) {
    for (const auto& [id, t] : aj.tuning->trials) admission_->Release(TrialOwner(aj.job, id));
  }
  admission_dirty_ = true;
  cv_.notify_all();
}

// The outcome rules of compat §12 over one run's replicas: the master decides; any replica that
// fails fails the run. Asks the other replicas to stop once the run is decided.
SchedulerCore::RunOutcome SchedulerCore::EvaluateRunLocked(ActiveJob& aj,
                                                           const std::string& trial_id) {
  // Being restarted whole: its lost replica is no failure, and nothing is decided until it
  // runs again (or the restart is given up, ContinueRunRestartLocked).
  if (aj.run_restarts.count(trial_id) != 0) return RunOutcome{false, false, ""};
  std::vector<const outcome::ReplicaState*> run;
  for (const auto& r : aj.replicas) {
    if (r.key.trial_id == trial_id) run.push_back(&r);
  }
  const outcome::RunVerdict v = outcome::EvaluateRun(run);
  if (v.stop_others) {
    for (auto& r : aj.replicas) {
      if (r.key.trial_id == trial_id) StopReplicaLocked(r, options_.cancel_grace);
    }
  }
  return RunOutcome{v.all_gone, v.succeeded, v.failures, v.ended_at};
}

// Applies the outcome rules once enough is known: a job ends with its run (compat §12), a
// cancelled job when all its replicas are gone. Tuning jobs end with their trials.
void SchedulerCore::MaybeFinishLocked(ActiveJob& aj) {
  if (model::IsTerminal(aj.job.state)) return;
  if (aj.tuning) {
    MaybeFinishTuningLocked(aj);
    return;
  }
  const RunOutcome run = EvaluateRunLocked(aj, "");
  if (!aj.cancel_reason.empty()) {
    if (run.all_gone) FinishLocked(aj, JobState::kCancelled, aj.cancel_reason, run.ended_at);
    return;
  }
  if (run.succeeded) {
    // Through RUNNING, if it was never stored.
    FinishLocked(aj, JobState::kSucceeded, "", run.ended_at);
    return;
  }
  if (!run.failures.empty()) {
    if (run.all_gone) {
      FinishLocked(aj, JobState::kFailed, run.failures, run.ended_at);
    } else if (aj.job.error_message.empty()) {
      aj.job.error_message = run.failures;  // final once the others are gone
    }
  }
}

void SchedulerCore::AllocatedLocked(ActiveJob& aj) {
  if (aj.job.state != JobState::kQueued) return;
  const Timestamp was = aj.job.start_time;
  aj.job.start_time = Now();
  // A store that refuses keeps it QUEUED: the next event or tick (running_pending) tries again.
  if (TransitionLocked(aj, JobState::kPreparing, "allocated by the backend").ok()) {
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Resources were allocated to the job.");
  } else {
    aj.job.start_time = was;
  }
}

void SchedulerCore::OnReplicaAllocated(const executor::ReplicaKey& key) {
  Unlocker lock(this);
  auto it = active_.find({key.project, key.job_id});
  if (it == active_.end()) return;
  AllocatedLocked(it->second);
}

void SchedulerCore::OnReplicaRunning(const executor::ReplicaKey& key) {
  Unlocker lock(this);
  auto it = active_.find({key.project, key.job_id});
  if (it == active_.end()) return;
  ActiveJob& aj = it->second;
  // A replica runs, so its gang was allocated even if the backend has not said so yet.
  AllocatedLocked(aj);
  // RUNNING once every replica of the job (of a tuning job: of one trial) runs.
  bool all = true;
  for (auto& r : aj.replicas) {
    if (r.key == key) r.running = true;
    if (r.key.trial_id == key.trial_id && !r.running) all = false;
  }
  if (all && aj.job.state == JobState::kQueued) {
    aj.running_pending = true;  // PREPARING was refused by the store: the ticks try both
    timed_.insert({aj.job.project, aj.job.job_id});
  }
  if (all && aj.job.state == JobState::kPreparing) {
    TY_FAILPOINT("scheduler.running.before_write");  // replicas run, RUNNING not yet stored
    if (!TransitionLocked(aj, JobState::kRunning, "all replicas running").ok()) {
      aj.running_pending = true;  // the store refused it: the next ticks try again
      timed_.insert({aj.job.project, aj.job.job_id});
    }
  }
}

Status SchedulerCore::OnReplicaLogs(std::span<model::LogEntry> entries) {
  if (entries.empty()) return Status::Ok();
  Status st = store_.AppendLogs(entries);
  if (!st.ok()) {
    TY_LOG_ERROR(kLog, "cannot store {} log lines: {}", entries.size(), st.ToString());
    return st;
  }
  Timestamp oldest = entries.front().timestamp;
  for (const auto& e : entries) oldest = std::min(oldest, e.timestamp);
  const double lag = std::max<double>(0, static_cast<double>(Now() - oldest) / kMicrosPerSecond);
  std::lock_guard<std::mutex> lag_lock(lag_mu_);
  log_lag_.Observe(lag);
  return st;
}

void SchedulerCore::OnReplicaMetrics(const executor::ReplicaKey& key,
                                     std::span<const executor::MetricRecord> records, bool ended) {
  Unlocker lock(this);
  auto it = active_.find({key.project, key.job_id});
  if (it == active_.end() || !it->second.tuning || key.trial_id.empty()) return;
  ActiveJob& aj = it->second;
  for (auto& r : aj.replicas) {
    if (r.key == key) r.metrics.assign(records.begin(), records.end());
  }
  // The last records of a trainer that ended are the trial's result, fed when the trial ends;
  // the median rule only stops trials that still run.
  if (!ended) OnTrialMetricsLocked(aj, std::stoll(key.trial_id));
}

void SchedulerCore::OnReplicaExit(const executor::ReplicaKey& key,
                                  const executor::ReplicaExit& exit) {
  Unlocker lock(this);
  // While the daemon stops, nothing is decided (or restarted): recovery looks at the replica
  // again on the next start.
  if (stopping_) return;
  auto it = active_.find({key.project, key.job_id});
  if (it == active_.end()) return;
  ActiveJob& aj = it->second;
  TY_LOG_INFO(kLog, "job {}: {} exited (status {}, phase {})", key.job_id, key.TaskName(),
              ExitStatusOf(exit), exit.phase);
  for (auto& r : aj.replicas) {
    if (r.key == key) {
      r.exited = true;
      r.exit = exit;
      if (aj.run_restarts.count(key.trial_id) != 0) {
        // One more replica of a run being restarted whole is gone (stopped, or lost with
        // the others): whatever it reported, the run starts again.
        if (ContinueRunRestartLocked(aj, key.trial_id)) {
          cv_.notify_all();
          return;
        }
        break;  // given up: the usual rules decide
      }
      if (MaybeRestartLocked(aj, r)) return;
    }
  }
  MaybeFinishLocked(aj);
  if (model::IsTerminal(aj.job.state)) active_.erase(it);
  cv_.notify_all();
}

// Compat §12: a replica lost to a signal Trainyard did not send (the OOM killer, someone's
// kill -9, a lost launcher) is restarted with the same identity and port, up to
// replica_restarts times. An exit status of its own (a trainer error) is never retried, and
// nothing is restarted once the job is ending (cancelled, failed, or its master finished).
bool SchedulerCore::MaybeRestartLocked(ActiveJob& aj, Replica& r) {
  outcome::RestartInput in;
  in.replica = &r;
  for (const auto& other : aj.replicas) {
    if (other.key.trial_id == r.key.trial_id) in.run.push_back(&other);
  }
  in.restarts = r.restarts;
  in.max_restarts = options_.replica_restarts;
  in.run_ending = !aj.cancel_reason.empty() || !aj.job.error_message.empty() ||
                  model::IsTerminal(aj.job.state) || !r.has_spec || TrialEndingLocked(aj, r);
  in.whole_run = executor_.RestartsWholeRun(r.key, r.exit);
  const outcome::RestartDecision d = outcome::DecideRestart(in);
  if (d.kind == outcome::RestartDecision::kExhausted ||
      d.kind == outcome::RestartDecision::kPermanent) {
    ServiceLogLocked(aj.job, model::Severity::kError, d.message);
  }
  if (d.kind != outcome::RestartDecision::kRestart) return false;
  if (in.whole_run) {
    // One allocation per run on this backend: every replica stops (the lost one's peers with
    // their grace, to checkpoint), then the run starts again in a new one, each replica with
    // its identity, all with the new addresses (ContinueRunRestartLocked).
    ServiceLogLocked(aj.job, model::Severity::kWarning, d.message);
    aj.run_restarts.insert(r.key.trial_id);
    for (auto& other : aj.replicas) {
      if (&other != &r && other.key.trial_id == r.key.trial_id) {
        StopReplicaLocked(other, options_.cancel_grace);
      }
    }
    return ContinueRunRestartLocked(aj, r.key.trial_id);
  }
  ++r.restarts;
  ++restarts_total_;
  // The executor keeps the attempt with the spec, so a restarted daemon continues the count.
  r.spec.attempt = r.restarts;
  ServiceLogLocked(aj.job, model::Severity::kWarning, d.message);
  FlushServiceLogsLocked();
  Status st = executor_.Launch(r.spec);
  if (!st.ok()) {
    r.exit.phase = "launch";
    r.exit.message = "restart failed: " + st.message();
    return false;
  }
  r.exited = false;
  r.stop_sent = false;
  r.exit = executor::ReplicaExit();
  return true;
}

bool SchedulerCore::ContinueRunRestartLocked(ActiveJob& aj, const std::string& trial_id) {
  // Given up when the run ends anyway: a cancel, a recorded failure, a trial being stopped,
  // or a master that finished on its own before it could be stopped (it decides, compat §12).
  bool give_up =
      !aj.cancel_reason.empty() || !aj.job.error_message.empty() || model::IsTerminal(aj.job.state);
  bool waiting = false;
  for (const auto& r : aj.replicas) {
    if (r.key.trial_id != trial_id) continue;
    if (r.launched && !r.exited) waiting = true;
    if (TrialEndingLocked(aj, r)) give_up = true;
    if (r.key.task_type == "master" && r.exited && !r.exit.killed_by_request &&
        outcome::ExitedCleanly(r.exit)) {
      give_up = true;
    }
  }
  if (give_up) {
    aj.run_restarts.erase(trial_id);
    return false;
  }
  if (waiting) return true;
  aj.run_restarts.erase(trial_id);
  // Every replica starts its next attempt (a new log stream each, a new spec), so the run's
  // restarts count as one restart of each replica against replica_restarts.
  for (auto& r : aj.replicas) {
    if (r.key.trial_id != trial_id) continue;
    ++r.restarts;
    ++restarts_total_;
    r.launched = false;
    r.exited = false;
    r.running = false;
    r.stop_sent = false;
    r.exit = executor::ReplicaExit();
  }
  FlushServiceLogsLocked();
  Status st = LaunchLocked(aj, trial_id);
  if (!st.ok()) {
    MarkLaunchFailedLocked(aj, trial_id, Status(st.code(), "restart failed: " + st.message()));
    return false;
  }
  return true;
}

void SchedulerCore::StopReplicaLocked(Replica& r, Duration grace, const std::string& reason) {
  if (!r.launched || r.exited || r.stop_sent) return;  // one stop request per replica run
  r.stop_sent = true;
  kills_.push_back({r.key, grace, reason});  // sent once the lock is released (Unlocker)
}

void SchedulerCore::AccrueUnitsLocked(ActiveJob& aj, Timestamp now) {
  if (aj.units_accrued_at == 0 || now <= aj.units_accrued_at) return;
  double per_hour = 0;
  for (const auto& r : aj.replicas) per_hour += r.ml_units_per_hour;
  aj.job.consumed_ml_units +=
      per_hour * static_cast<double>(now - aj.units_accrued_at) / (3600.0 * kMicrosPerSecond);
  aj.job.consumed_ml_units_set = true;
  aj.units_accrued_at = now;
}

void SchedulerCore::AccrueAllLocked(Timestamp now) {
  for (auto& [key, aj] : active_) {
    if (aj.units_accrued_at == 0) continue;
    AccrueUnitsLocked(aj, now);
    if (now - aj.units_persisted_at >= options_.ml_units_persist_interval) {
      aj.units_persisted_at = now;
      Status st = store_.UpdateJob(aj.job, std::nullopt);
      if (!st.ok())
        TY_LOG_WARN(kLog, "job {}: cannot store consumedMLUnits: {}", key.second, st.ToString());
    }
  }
}

void SchedulerCore::ServiceLogLocked(const Job& job, model::Severity severity, std::string message,
                                     bool once) {
  model::LogEntry e;
  e.project = job.project;
  e.job_id = job.job_id;
  e.timestamp = Now();
  e.severity = severity;
  e.task_name = "service";
  e.message = std::move(message);
  // The store keeps one cursor per stream and drops a line at or before it: the one service
  // line with an offset is stored once (store_common.h, PastCursor).
  if (once) e.source_offset = 1;
  pending_logs_.push_back(std::move(e));
}

// Service lines are written under the lock, like state changes, so a job's lines are stored
// in the order they happened and before its terminal state.
void SchedulerCore::FlushServiceLogsLocked() {
  if (pending_logs_.empty()) return;
  Status st = store_.AppendLogs(pending_logs_);
  if (!st.ok()) TY_LOG_ERROR(kLog, "cannot store service log lines: {}", st.ToString());
  pending_logs_.clear();
}

}  // namespace trainyard::scheduler
