// Recovery: what a restarted daemon rebuilds. The store says which jobs are unfinished; the
// executor says which of their replicas it had launched, how (the spec, its attempt), whether
// they still run, and whether a stop had been asked for. Queued jobs are queued again, running
// replicas re-attached, replicas that vanished fail their job with a clear message.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "scheduler_core.h"
#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/model/state_machine.h"
#include "tuning_state.h"

namespace trainyard::scheduler {

using model::Job;
using model::JobState;
using nlohmann::json;

namespace {

constexpr const char* kLog = "sched";

// The host GPUs of a replica, from its spec: a container's /dev/nvidia<N> devices (its
// CUDA_VISIBLE_DEVICES is renumbered from 0 inside), else CUDA_VISIBLE_DEVICES.
std::vector<int> SpecGpus(const executor::ReplicaSpec& spec) {
  std::vector<int> gpus;
  if (!spec.container.image.empty()) {
    for (const auto& dev : spec.container.devices) {
      constexpr std::string_view kPrefix = "/dev/nvidia";
      if (!StartsWith(dev, kPrefix) || dev.size() == kPrefix.size()) continue;
      const std::string n = dev.substr(kPrefix.size());
      if (std::all_of(n.begin(), n.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        gpus.push_back(std::atoi(n.c_str()));
      }
    }
    return gpus;
  }
  auto env = spec.env.find("CUDA_VISIBLE_DEVICES");
  if (env == spec.env.end()) return gpus;
  for (const auto& part : Split(env->second, ',')) {
    try {
      if (!part.empty()) gpus.push_back(std::stoi(part));
    } catch (...) {
    }
  }
  return gpus;
}

// The trials a tuning job had running when the daemon stopped (its stored trainingOutput).
std::vector<std::string> RunningTrials(const Job& job) {
  std::vector<std::string> ids;
  const json out = json::parse(job.training_output_json.empty() ? "{}" : job.training_output_json,
                               nullptr, false);
  if (!out.is_object() || !out.contains("trials") || !out["trials"].is_array()) return ids;
  for (const json& t : out["trials"]) {
    if (!t.is_object() || t.value("state", "RUNNING") != "RUNNING") continue;
    if (auto id = t.find("trialId"); id != t.end() && id->is_string()) {
      ids.push_back(id->get<std::string>());
    }
  }
  return ids;
}

}  // namespace

Status SchedulerCore::Start() {
  TRAINYARD_ASSIGN_OR_RETURN(auto jobs, store_.ListActiveJobs());
  // The lock is held throughout, the executor's Recover included: the executor reports the
  // exits of replicas that ended meanwhile only after Recover returns, and they wait for the
  // lock until every job is rebuilt.
  Unlocker lock(this);
  // Every replica any admitted job may have launched, and what the executor knows of them.
  std::vector<executor::ReplicaKey> keys;
  // A backend with a queue of its own may hold the gang of a QUEUED job (admitted, waiting in
  // Slurm): those are asked about too; one never handed over is simply not found.
  const bool backend_queues = executor_.QueuesGangs();
  auto may_have_launched = [&](const Job& job) {
    return job.state != JobState::kQueued || (backend_queues && !job.spec.has_hyperparameters);
  };
  for (const Job& job : jobs) {
    if (!may_have_launched(job)) continue;
    const std::vector<std::string> trials =
        job.spec.has_hyperparameters ? RunningTrials(job) : std::vector<std::string>{""};
    for (const std::string& trial : trials) {
      for (Replica& r : PlanReplicas(job)) {
        r.key.trial_id = trial;
        keys.push_back(r.key);
      }
    }
  }
  for (auto& rec : executor_.Recover(keys)) {
    TY_LOG_INFO(kLog, "{} {} of job {} (attempt {})", rec.running ? "re-attached to" : "found",
                rec.spec.key.TaskName(), rec.spec.key.job_id, rec.spec.attempt);
    executor::ReplicaKey key = rec.spec.key;
    recovered_.emplace(std::move(key), std::move(rec));
  }
  int requeued = 0;
  for (auto& job : jobs) {
    JobKey k{job.project, job.job_id};
    ActiveJob aj;
    aj.job = std::move(job);
    if (aj.job.spec.has_hyperparameters && aj.job.state != JobState::kQueued) {
      // The replicas of its running trials, planned from the stored trials.
      if (Status st = InitTuningLocked(aj, /*recovering=*/true); !st.ok()) {
        TY_LOG_ERROR(kLog, "job {}: cannot rebuild its study: {}", aj.job.job_id, st.ToString());
        aj.job.error_message =
            "The hyperparameter tuning study could not be rebuilt after a restart: " + st.message();
      }
    } else {
      aj.replicas = PlanReplicas(aj.job);
    }
    if (aj.job.state == JobState::kCancelling) aj.cancel_reason = aj.job.error_message;
    bool any_launched = false;
    for (auto& r : aj.replicas) {
      r.launched = may_have_launched(aj.job) && recovered_.count(r.key) != 0;
      any_launched = any_launched || r.launched;
    }
    if (aj.job.state == JobState::kPreparing && !any_launched) {
      aj.job.training_output_json.clear();  // its trials never started
      aj.replicas.clear();
      aj.tuning.reset();
      // Admitted but never started before the daemon stopped: queue it again.
      aj.job.start_time = 0;
      if (TransitionLocked(aj, JobState::kQueued, "requeued after a daemon restart").ok()) {
        ++requeued;
      }
    }
    if (aj.job.state == JobState::kQueued && !any_launched) {
      EnqueueLocked(aj.job);
      continue;
    }
    if (aj.job.state == JobState::kRunning || aj.job.spec.scheduling.max_wait_time) {
      timed_.insert(k);
    }
    if (aj.job.state == JobState::kRunning) {
      // maxRunningTime counts from entering RUNNING (compat §2), not from admission.
      aj.running_since = aj.job.start_time;
      if (auto history = store_.GetStateHistory(aj.job.project, aj.job.job_id); history.ok()) {
        for (const auto& change : *history) {
          if (change.to == JobState::kRunning) aj.running_since = change.time;
        }
      }
    }
    std::map<std::string, std::pair<std::vector<ReplicaDemand>, std::vector<std::vector<int>>>>
        held;  // by owner: the job, or each running trial
    for (auto& r : aj.replicas) {
      r.running = aj.job.state == JobState::kRunning;
      if (r.launched) {
        // The spec as launched: restarts reuse it, and it names the replica's GPUs.
        const executor::RecoveredReplica& rec = recovered_.at(r.key);
        r.spec = rec.spec;
        r.has_spec = !rec.spec.work_dir.empty();
        r.restarts = rec.spec.attempt;
        r.gpus = SpecGpus(r.spec);
      } else {
        r.exited = true;
        r.exit.phase = "lost";
        r.exit.exit_code = -1;
        r.exit.message = "the Trainyard daemon stopped before it was started";
      }
      auto& h = held[r.key.trial_id.empty() ? Owner(aj.job)
                                            : TrialOwner(aj.job, std::stoll(r.key.trial_id))];
      h.first.push_back(r.demand);
      h.second.push_back(r.gpus);
    }
    for (const auto& [owner, h] : held) admission_->Restore(owner, h.first, h.second);
    if (aj.tuning) tuning_jobs_.insert(k);
    if (aj.job.state == JobState::kRunning || aj.job.state == JobState::kCancelling) {
      aj.units_accrued_at = Now();  // time the daemon was down is not counted
      aj.units_persisted_at = aj.units_accrued_at;
    }
    active_.emplace(k, std::move(aj));
  }
  TY_LOG_INFO(kLog, "recovered {} unfinished jobs ({} requeued, {} replicas found)", jobs.size(),
              requeued, recovered_.size());
  recovered_.clear();
  for (auto it = active_.begin(); it != active_.end();) {
    ActiveJob& aj = it->second;
    // A cancel stored before the crash may not have reached the replicas: send it again.
    if (!aj.cancel_reason.empty()) {
      for (auto& r : aj.replicas) StopReplicaLocked(r, options_.cancel_grace);
    }
    if (aj.tuning) {
      // Trials the median rule stopped before the restart: the stop may not have arrived.
      for (auto& r : aj.replicas) {
        if (TrialEndingLocked(aj, r))
          StopReplicaLocked(r, options_.cancel_grace, StopReason(aj, r));
      }
    } else if (aj.job.spec.has_hyperparameters && aj.job.state != JobState::kQueued) {
      FinishLocked(aj, JobState::kFailed, aj.job.error_message);
    }
    MaybeFinishLocked(aj);
    if (model::IsTerminal(aj.job.state)) {
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
  if (!options_.step_mode) thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

}  // namespace trainyard::scheduler
