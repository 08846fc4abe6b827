// The tuning controller: hyperparameter tuning jobs in the scheduler (compat §3, §4, §6, §7;
// docs/tuning.md).
//
// A tuning job is admitted like any job, for the demand of one trial. From then on it runs
// trials: each trial is the job's whole cluster, admitted as a gang of its own (resource owner
// "<project>/<job>#<trial>"), with `--<param>=<value>` arguments and the trial's environment.
// Up to maxParallelTrials run at once; the study (trainyard/tuning) suggests each trial's
// parameters when it starts, so it knows every result that came in before. The job ends when
// maxTrials trials have ended (or the study has nothing left to suggest), when too many trials
// failed, or when it is cancelled.
//
// Metrics arrive as executor events (OnReplicaMetrics: every record of the trial's metric tag
// so far); a trial's records are those of its first replica in cluster order that reported any.
//
// Suggestions: the GP fit behind Study::Suggest takes ~200 ms at 400 trials, so it is not done
// under the scheduler's lock. PrepareSuggestions snapshots a study (config and trials) under
// the lock, replays it into a fresh Study outside, asks it, and keeps the suggestion with the
// study's fingerprint; StartTrialsLocked uses it only while the study is unchanged (Suggest is
// a function of config and trials, so the suggestion is the one the study itself would make).
//
// What survives a daemon restart: the trials are stored in trainingOutput (written whenever a
// trial starts or ends), the measurements are kept by the executor (ReplicaMetrics), a stop by
// the median rule is the stop reason the executor keeps with the replica, and the study is
// rebuilt by replaying all of it. The study's seed is derived from the job's name, so the
// rebuilt study goes on as the lost one would have.

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "scheduler_core.h"
#include "trainyard/core/hash.h"
#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/model/state_machine.h"
#include "tuning_state.h"

namespace trainyard::scheduler {

using model::Job;
using model::JobState;
using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

namespace {

constexpr const char* kLog = "sched";
constexpr const char* kDefaultMetricTag = "training/hptuning/metric";

// int32 fields arrive as JSON numbers (or strings from some clients); unset = `fallback`.
int IntField(const json& obj, const char* key, int fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (it->is_number_integer()) return it->get<int>();
  if (it->is_string()) {
    try {
      return std::stoi(it->get<std::string>());
    } catch (...) {
    }
  }
  return fallback;
}

json HyperparameterSpecOf(const Job& job) {
  json ti = json::parse(job.training_input_json, nullptr, false);
  if (!ti.is_object()) return json::object();
  auto it = ti.find("hyperparameters");
  return it != ti.end() && it->is_object() ? *it : json::object();
}

// A seed that is the same on every run and every build.
uint64_t StableHash(std::string_view s) { return Fnv1a(s, kFnv1aLegacyBasis); }

// "Trainyard decides" (maxFailedTrials 0): a job whose first three trials all fail has a broken
// trainer or spec; otherwise it fails once more than half of maxTrials failed.
bool TooManyFailures(int failed, int succeeded, int max_failed, int max_trials) {
  if (max_failed > 0) return failed > max_failed;
  return (failed >= 3 && succeeded == 0) || 2 * failed > max_trials;
}

std::string FormatMetric(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string ShortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string QuotedList(const std::set<std::string>& tags) {
  std::string out;
  for (const std::string& t : tags) out += (out.empty() ? "'" : ", '") + t + "'";
  return out;
}

// What a trial that ended without a record of the job's metric tag reported instead (compat §7:
// such a trial still completes, without finalMetric).
std::string MissingTagMessage(const std::string& tag, const std::set<std::string>& tags) {
  std::string out = "It reported no metric under the tag '" + tag + "' (hyperparameterMetricTag)";
  if (tags.empty()) return out + " and no other metric either.";
  return out + "; tags reported: " + QuotedList(tags) + ".";
}

// The same for the whole job, when no trial reported the tag.
std::string NoTrialReportedMessage(const std::string& tag, const std::set<std::string>& tags) {
  std::string out = "No trial reported the metric tag '" + tag + "' (hyperparameterMetricTag)";
  if (tags.empty()) return out + "; no trial reported any metric.";
  return out + "; tags reported: " + QuotedList(tags) + ".";
}

std::string StopMessage(const std::string& tag, const tuning::StopVerdict& v) {
  if (v.rule == tuning::StopRule::kPredictedFinal) {
    return "Stopped early at step " + std::to_string(v.step) + ": even an optimistic prediction " +
           "of its final " + tag + ", " + ShortNumber(v.best) + ", was worse than the best of " +
           std::to_string(v.reference_trials) + " completed trials, " + ShortNumber(v.reference) +
           ".";
  }
  return "Stopped early at step " + std::to_string(v.step) + ": its best " + tag + " so far, " +
         ShortNumber(v.best) + ", was worse than the " +
         std::to_string(static_cast<int>(tuning::kMedianRulePercentile)) +
         "th percentile (counted from the best) of " + std::to_string(v.reference_trials) +
         " completed trials at that step, " + ShortNumber(v.reference) + ".";
}

}  // namespace

std::string SchedulerCore::TrialOwner(const Job& job, int64_t trial_id) const {
  return Owner(job) + "#" + std::to_string(trial_id);
}

bool SchedulerCore::TrialEndingLocked(const ActiveJob& aj, const Replica& r) const {
  if (!aj.tuning || r.key.trial_id.empty()) return false;
  auto it = aj.tuning->trials.find(std::stoll(r.key.trial_id));
  return !aj.tuning->failing.empty() ||
         (it != aj.tuning->trials.end() && (it->second.stop_early || !it->second.live));
}

std::string SchedulerCore::StopReason(const ActiveJob& aj, const Replica& r) const {
  if (!aj.tuning || r.key.trial_id.empty()) return "";
  auto it = aj.tuning->trials.find(std::stoll(r.key.trial_id));
  return it != aj.tuning->trials.end() && it->second.stop_early ? kStopEarlyReason : "";
}

std::vector<executor::MetricRecord> SchedulerCore::TrialRecordsLocked(const ActiveJob& aj,
                                                                      int64_t trial_id) {
  // The master's reports count. A trainer that reports from another replica only (say, an
  // evaluator) is read there: the first replica in cluster order that reported anything.
  const std::string id = std::to_string(trial_id);
  for (const Replica& r : aj.replicas) {
    if (r.key.trial_id == id && !r.metrics.empty()) return r.metrics;
  }
  return {};
}

bool SchedulerCore::FeedTrialMetricsLocked(TuningState& ts, TrialRun& t,
                                           const std::vector<executor::MetricRecord>& given) {
  if (given.empty()) return false;
  std::vector<executor::MetricRecord> records = given;
  std::stable_sort(records.begin(), records.end(),
                   [](const executor::MetricRecord& a, const executor::MetricRecord& b) {
                     return a.timestamp < b.timestamp;
                   });
  t.final_metric = LatestRecord(records);
  bool stop = false;
  for (const executor::MetricRecord& r : records) {
    if (r.timestamp <= t.fed_until) continue;
    t.fed_until = r.timestamp;
    tuning::StopVerdict verdict;
    if (ts.study->Report(t.id, r.step, r.value, &verdict)) {
      if (!stop && !t.stop_verdict) t.stop_verdict = verdict;  // the first reason counts
      stop = true;
    }
  }
  return stop;
}

Status SchedulerCore::InitTuningLocked(ActiveJob& aj, bool recovering) {
  const Job& job = aj.job;
  const json hp = HyperparameterSpecOf(job);
  TRAINYARD_ASSIGN_OR_RETURN(tuning::StudyConfig config, tuning::ParseStudyConfig(hp.dump()));
  auto ts = std::make_unique<TuningState>();
  ts->metric_tag = hp.value("hyperparameterMetricTag", "");
  if (ts->metric_tag.empty()) ts->metric_tag = kDefaultMetricTag;
  ts->max_trials = std::max(1, IntField(hp, "maxTrials", 1));
  ts->max_failed = std::max(0, IntField(hp, "maxFailedTrials", 0));

  // A resumed study keeps the seed of the job that began it, and that job's trials.
  std::vector<Job> history;  // resumed jobs, oldest first
  std::string resume = hp.value("resumePreviousJobId", "");
  for (int depth = 0; !resume.empty() && depth < 100; ++depth) {
    auto prev = store_.GetJob(job.project, resume);
    if (!prev.ok()) {
      Status st(prev.status().code(),
                "resumePreviousJobId " + resume + ": " + prev.status().message());
      if (!recovering) return st;
      // A running study goes on without the earlier trials rather than not at all.
      TY_LOG_WARN(kLog, "job {}: {}", job.job_id, st.ToString());
      break;
    }
    resume = HyperparameterSpecOf(*prev).value("resumePreviousJobId", "");
    history.insert(history.begin(), std::move(prev).value());
  }
  config.seed = StableHash(history.empty() ? job.Name() : history.front().Name());
  ts->max_parallel = std::max(1, config.max_parallel_trials);
  TRAINYARD_ASSIGN_OR_RETURN(ts->study, tuning::Study::Create(config));
  for (const Job& prev : history) ReplayTrialsLocked(aj, *ts, prev, /*own=*/false);
  if (recovering) ReplayTrialsLocked(aj, *ts, job, /*own=*/true);
  aj.tuning = std::move(ts);
  UpdateTuningOutputLocked(aj, /*persist=*/false);
  return Status::Ok();
}

// Feeds the stored trials of `owner` (this job's own on recovery, or a resumed job's) to the
// study: {trialId, hyperparameters (strings), state, finalMetric, isTrialStoppedEarly}, with
// the measurements still in their metric files. A stored trial that does not fit is skipped.
void SchedulerCore::ReplayTrialsLocked(ActiveJob& aj, TuningState& ts, const Job& owner, bool own) {
  const Job& job = aj.job;
  const tuning::StudyConfig& cfg = ts.study->config();
  json out = json::parse(owner.training_output_json.empty() ? "{}" : owner.training_output_json,
                         nullptr, false);
  if (!out.is_object() || !out.contains("trials") || !out["trials"].is_array()) return;
  for (const json& tj : out["trials"]) {
    TrialRun t;
    std::optional<MetricRecord> stored_metric;
    std::optional<tuning::StopVerdict> stored_verdict;
    bool stopped = false;
    try {
      t.id = std::stoll(tj.at("trialId").get<std::string>());
      t.state = tj.value("state", "RUNNING");
      const json& hps = tj.at("hyperparameters");
      t.params.resize(cfg.params.size());
      for (size_t i = 0; i < cfg.params.size(); ++i) {
        const std::string text = hps.at(cfg.params[i].name).get<std::string>();
        auto value = tuning::ParseValue(cfg.params[i], text);
        if (!value.ok()) throw std::invalid_argument(value.status().message());
        t.params[i] = *value;
        t.hyperparameters[cfg.params[i].name] = text;
      }
      if (auto st = ParseRfc3339(tj.value("startTime", "")); st.ok()) t.start_time = *st;
      if (auto et = ParseRfc3339(tj.value("endTime", "")); et.ok()) t.end_time = *et;
      if (tj.contains("finalMetric")) {
        const json& fm = tj["finalMetric"];
        MetricRecord m;
        m.value = fm.at("objectiveValue").get<double>();
        m.step = std::stoll(fm.value("trainingStep", "0"));
        stored_metric = m;
      }
      stopped = tj.value("isTrialStoppedEarly", false);
      t.message = tj.value("message", "");
      if (tj.contains("earlyStopping")) {
        const json& es = tj["earlyStopping"];
        tuning::StopVerdict v;
        v.step = std::stoll(es.value("trainingStep", "0"));
        if (es.value("rule", "") == "PREDICTED_FINAL") {
          v.rule = tuning::StopRule::kPredictedFinal;
          v.best = es.at("predictedObjectiveValue").get<double>();
          v.reference = es.at("bestFinalObjectiveValue").get<double>();
        } else {
          v.best = es.at("bestObjectiveValue").get<double>();
          v.reference = es.at("medianObjectiveValue").get<double>();
        }
        v.reference_trials = std::stoi(es.value("referenceTrialCount", "0"));
        stored_verdict = v;
      }
    } catch (const std::exception& e) {
      TY_LOG_WARN(kLog, "job {}: a stored trial of job {} is unreadable ({}); skipped", job.job_id,
                  owner.job_id, e.what());
      continue;
    }
    if (t.params.size() != cfg.params.size() || t.hyperparameters.size() != cfg.params.size()) {
      TY_LOG_WARN(kLog, "job {}: trial {} of job {} does not fit the study; skipped", job.job_id,
                  t.id, owner.job_id);
      continue;
    }
    t.live = own && t.state == "RUNNING";
    std::vector<Replica> plan = PlanReplicas(job);
    for (Replica& r : plan) r.key.trial_id = std::to_string(t.id);
    if (t.live) {
      // Started but never launched (the daemon stopped in between): as if never suggested.
      // A stop by the median rule is what the executor kept with a replica of it.
      bool launched = false;
      for (const Replica& r : plan) {
        auto rec = recovered_.find(r.key);
        if (rec == recovered_.end()) continue;
        launched = true;
        if (rec->second.stop_reason == kStopEarlyReason) t.stop_early = true;
      }
      if (!launched) continue;
    }
    if (Status st = ts.study->AddTrial(t.id, t.params); !st.ok()) {
      TY_LOG_WARN(kLog, "job {}: trial {} of job {}: {}", job.job_id, t.id, owner.job_id,
                  st.ToString());
      continue;
    }
    // The measurements: early stopping needs the curves of completed trials. A verdict reached
    // while replaying a running trial is acted on once the daemon has re-attached it.
    std::vector<executor::MetricRecord> records;
    for (Replica& r : plan) {
      r.metrics = executor_.ReplicaMetrics(
          {owner.project, owner.job_id, r.key.trial_id, r.key.task_type, r.key.index},
          ts.metric_tag);
      if (records.empty()) records = r.metrics;
    }
    if (FeedTrialMetricsLocked(ts, t, records) && t.live) t.stop_early = true;
    if (t.live && t.stop_early && t.stop_verdict)
      t.message = StopMessage(ts.metric_tag, *t.stop_verdict);
    if (!t.live) {
      t.final_metric = stored_metric;
      t.stop_early = stopped;
      t.stop_verdict = stored_verdict;
      if (own && t.state == "SUCCEEDED" && !t.final_metric) {
        for (const Replica& r : plan) {
          for (std::string& tag : executor_.ReplicaMetricTags(r.key)) {
            ts.other_tags.insert(std::move(tag));
          }
        }
      }
      std::optional<double> value;
      if (t.state == "SUCCEEDED" && t.final_metric) value = t.final_metric->value;
      // A trial cancelled without a result says nothing about its point: it stays pending for
      // the model (its neighbourhood is not explored twice at once) instead of infeasible.
      const bool abandoned = t.state == "CANCELLED" && !t.final_metric;
      if (t.state == "CANCELLED" && t.final_metric) value = t.final_metric->value;
      if (!abandoned) (void)ts.study->Complete(t.id, value, stopped);
    }
    if (own) {
      if (t.live) {
        for (Replica& r : plan) aj.replicas.push_back(std::move(r));
      }
      ts.trials.emplace(t.id, std::move(t));
    }
  }
}

int SchedulerCore::StartTrialsLocked(ActiveJob& aj, int max_new, bool allow_sync) {
  TuningState& ts = *aj.tuning;
  int started = 0;
  while (started < max_new && !paused_ && aj.cancel_reason.empty() && ts.failing.empty() &&
         !ts.exhausted && static_cast<int>(ts.trials.size()) < ts.max_trials &&
         !model::IsTerminal(aj.job.state)) {
    int live = 0;
    for (const auto& [id, t] : ts.trials) live += t.live ? 1 : 0;
    if (live >= ts.max_parallel) break;
    std::vector<Replica> plan = PlanReplicas(aj.job);
    std::vector<ReplicaDemand> demands;
    for (const auto& r : plan) demands.push_back(r.demand);
    if (!admission_->Fits(JobDemand::Sum(demands))) break;
    std::vector<tuning::Trial> suggested;
    if (ts.prepared && ts.prepared_for == StudyFingerprint(*ts.study)) {
      // Computed outside the lock for this very study state: register it as Suggest would.
      suggested = std::move(*ts.prepared);
      ts.prepared.reset();
      if (!suggested.empty()) {
        if (Status st = ts.study->AddTrial(suggested[0].id, suggested[0].params); !st.ok()) {
          TY_LOG_WARN(kLog, "job {}: prepared trial: {}", aj.job.job_id, st.ToString());
          suggested = ts.study->Suggest(1);
        }
      }
    } else if (allow_sync) {
      ts.prepared.reset();
      suggested = ts.study->Suggest(1);
    } else {
      // The next step computes one outside the lock, then admission comes back here.
      ts.prepared.reset();
      ts.wants_suggestion = true;
      suggestions_wanted_ = true;
      break;
    }
    if (suggested.empty()) {
      ts.exhausted = true;
      ServiceLogLocked(aj.job, model::Severity::kInfo,
                       "Every point of the search space has been tried; no more trials start.");
      break;
    }
    TrialRun t;
    t.id = suggested[0].id;
    t.params = suggested[0].params;
    t.start_time = Now();
    const auto& params = ts.study->config().params;
    std::string summary;
    for (size_t i = 0; i < params.size(); ++i) {
      std::string value = tuning::FormatValue(params[i], t.params[i]);
      summary += (summary.empty() ? "" : ", ") + params[i].name + "=" + value;
      t.hyperparameters[params[i].name] = std::move(value);
    }
    const std::string trial_id = std::to_string(t.id);
    auto gpus = admission_->Reserve(TrialOwner(aj.job, t.id), demands);
    for (size_t i = 0; i < plan.size(); ++i) {
      plan[i].key.trial_id = trial_id;
      if (gpus.ok()) plan[i].gpus = (*gpus)[i];
      aj.replicas.push_back(std::move(plan[i]));
    }
    ts.trials.emplace(t.id, std::move(t));
    ++started;
    // Stored before it launches, so a restarted daemon knows the trial and its parameters.
    UpdateTuningOutputLocked(aj, /*persist=*/true);
    ServiceLogLocked(aj.job, model::Severity::kInfo,
                     "Starting trial " + trial_id + " with " + summary + ".");
    if (std::string big = admission_->Oversize(JobDemand::Sum(demands));
        gpus.ok() && !big.empty()) {
      ServiceLogLocked(aj.job, model::Severity::kWarning, "Trial " + trial_id + ": " + big);
    }
    Status st = gpus.ok() ? LaunchLocked(aj, trial_id) : gpus.status();
    if (!st.ok()) {
      MarkLaunchFailedLocked(aj, trial_id, st);
      break;  // MaybeFinishTuningLocked ends the trial
    }
  }
  return started;
}

bool SchedulerCore::PrepareSuggestions() {
  struct Snapshot {
    JobKey key;
    tuning::StudyConfig config;
    std::vector<tuning::Trial> trials;
    uint64_t fingerprint = 0;
    std::vector<tuning::Trial> suggested;
  };
  std::vector<Snapshot> work;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!suggestions_wanted_) return false;
    suggestions_wanted_ = false;
    for (const JobKey& key : tuning_jobs_) {
      auto it = active_.find(key);
      if (it == active_.end() || !it->second.tuning) continue;
      TuningState& ts = *it->second.tuning;
      if (!ts.wants_suggestion) continue;
      ts.wants_suggestion = false;
      work.push_back(
          {key, ts.study->config(), ts.study->trials(), StudyFingerprint(*ts.study), {}});
    }
  }
  // Outside the lock: the same study, replayed, answers as the original would.
  for (Snapshot& w : work) {
    auto study = tuning::Study::Create(w.config);
    if (!study.ok()) continue;
    for (const tuning::Trial& t : w.trials) {
      // With the measurements: the designer reads the curves of trials stopped early.
      if (!(*study)->AddTrial(t.id, t.params, t.measurements).ok()) continue;
      if (t.state == tuning::TrialState::kPending) continue;
      (void)(*study)->Complete(t.id,
                               t.state == tuning::TrialState::kCompleted ? t.value : std::nullopt,
                               t.stopped_early);
    }
    w.suggested = (*study)->Suggest(1);
  }
  bool made = false;
  std::lock_guard<std::mutex> lock(mu_);
  for (Snapshot& w : work) {
    auto it = active_.find(w.key);
    if (it == active_.end() || !it->second.tuning) continue;
    TuningState& ts = *it->second.tuning;
    if (StudyFingerprint(*ts.study) != w.fingerprint) {
      ts.wants_suggestion = true;  // the study moved on meanwhile: the next step tries again
      suggestions_wanted_ = true;
      continue;
    }
    ts.prepared = std::move(w.suggested);
    ts.prepared_for = w.fingerprint;
    made = true;
  }
  if (made) admission_dirty_ = true;
  return made || suggestions_wanted_;
}

uint64_t StudyFingerprint(const tuning::Study& study) {
  uint64_t h = kFnv1aLegacyBasis;
  auto mix = [&h](uint64_t v) { h = Fnv1aMix(h, v); };
  for (const tuning::Trial& t : study.trials()) {
    mix(static_cast<uint64_t>(t.id));
    mix(static_cast<uint64_t>(t.state));
    mix(t.stopped_early ? 1 : 0);
    mix(t.measurements.size());
    mix(t.value ? std::hash<double>{}(*t.value) : 0x9e3779b97f4a7c15ULL);
  }
  mix(study.trials().size());
  return h;
}

std::optional<MetricRecord> LatestRecord(const std::vector<MetricRecord>& records) {
  std::optional<MetricRecord> best;
  for (const auto& r : records) {
    if (!best || r.timestamp > best->timestamp ||
        (r.timestamp == best->timestamp && r.step >= best->step)) {
      best = r;
    }
  }
  return best;
}

bool SchedulerCore::AdmitTrialsLocked(bool first_only) {
  bool starved = false;
  for (auto kit = tuning_jobs_.begin(); kit != tuning_jobs_.end();) {
    auto it = active_.find(*kit);
    if (it == active_.end() || !it->second.tuning || model::IsTerminal(it->second.job.state)) {
      kit = tuning_jobs_.erase(kit);
      continue;
    }
    ++kit;
    ActiveJob& aj = it->second;
    bool any_live = false;
    for (const auto& [id, t] : aj.tuning->trials) any_live = any_live || t.live;
    if (first_only && any_live) continue;
    StartTrialsLocked(aj, first_only ? 1 : aj.tuning->max_parallel, /*allow_sync=*/false);
    any_live = false;
    for (const auto& [id, t] : aj.tuning->trials) any_live = any_live || t.live;
    const TuningState& ts = *aj.tuning;
    if (!any_live && aj.cancel_reason.empty() && ts.failing.empty() && !ts.exhausted &&
        static_cast<int>(ts.trials.size()) < ts.max_trials) {
      starved = true;  // it did not fit
    }
    MaybeFinishLocked(aj);
    if (model::IsTerminal(aj.job.state)) active_.erase(it);
  }
  return starved;
}

void SchedulerCore::MaybeFinishTuningLocked(ActiveJob& aj) {
  TuningState& ts = *aj.tuning;
  bool changed = false;
  for (auto& [id, t] : ts.trials) {
    if (!t.live) continue;
    const std::string trial_id = std::to_string(id);
    RunOutcome run = EvaluateRunLocked(aj, trial_id);
    if (!run.failures.empty() && t.error.empty()) t.error = run.failures;
    if (!run.all_gone) continue;
    // Its replicas are gone: the trial's outcome is known.
    // A trial told to stop early succeeded, however its trainer took the SIGTERM.
    if (run.succeeded || t.stop_early) {
      t.state = "SUCCEEDED";
    } else if (!t.error.empty()) {
      t.state = "FAILED";
    } else {
      t.state = "CANCELLED";  // stopped because the job is ending
    }
    t.live = false;
    t.end_time = Now();
    FeedTrialMetricsLocked(ts, t, TrialRecordsLocked(aj, id));
    if (t.state == "SUCCEEDED" && !t.final_metric) {
      // Say what it reported instead: a wrong tag is the usual cause (compat §7).
      std::set<std::string> tags;
      for (const Replica& r : aj.replicas) {
        if (r.key.trial_id != trial_id) continue;
        for (std::string& tag : executor_.ReplicaMetricTags(r.key)) tags.insert(std::move(tag));
      }
      t.message = MissingTagMessage(ts.metric_tag, tags);
      ts.other_tags.insert(tags.begin(), tags.end());
    }
    std::optional<double> value;
    if (t.state == "SUCCEEDED" && t.final_metric) value = t.final_metric->value;
    if (Status st = ts.study->Complete(id, value, t.stop_early); !st.ok()) {
      TY_LOG_WARN(kLog, "job {}: trial {}: {}", aj.job.job_id, id, st.ToString());
    }
    admission_->Release(TrialOwner(aj.job, id));
    std::erase_if(aj.replicas, [&](const Replica& r) { return r.key.trial_id == trial_id; });
    std::string line = "Trial " + trial_id + " ";
    model::Severity severity = model::Severity::kInfo;
    if (t.state == "SUCCEEDED") {
      line += t.stop_early ? "was stopped early" : "completed";
      if (t.final_metric) {
        line += " with " + ts.metric_tag + " = " + FormatMetric(t.final_metric->value) +
                " at step " + std::to_string(t.final_metric->step) + ".";
      } else {
        line += ". " + t.message;
        severity = model::Severity::kWarning;
      }
    } else if (t.state == "FAILED") {
      severity = model::Severity::kError;
      line += "failed: " + t.error;
    } else {
      line += "was cancelled.";
    }
    ServiceLogLocked(aj.job, severity, std::move(line));
    changed = true;
  }

  int live = 0, failed = 0, succeeded = 0;
  bool any_metric = false;
  std::string last_error;
  for (const auto& [id, t] : ts.trials) {
    if (t.live) ++live;
    if (t.final_metric) any_metric = true;
    if (t.state == "FAILED") {
      ++failed;
      last_error = t.error;
    }
    if (t.state == "SUCCEEDED") ++succeeded;
  }
  if (ts.failing.empty() && aj.cancel_reason.empty() &&
      TooManyFailures(failed, succeeded, ts.max_failed, ts.max_trials)) {
    ts.failing = std::to_string(failed) + " of " + std::to_string(ts.trials.size()) +
                 " trials failed, more than the job allows (maxFailedTrials " +
                 (ts.max_failed > 0 ? std::to_string(ts.max_failed)
                                    : std::string("0: Trainyard decides, see docs/tuning.md")) +
                 "). The last failure: " + last_error;
    ServiceLogLocked(aj.job, model::Severity::kError, "Stopping the tuning job: " + ts.failing);
    for (auto& r : aj.replicas) StopReplicaLocked(r, options_.cancel_grace);
  }

  std::optional<JobState> end;
  std::string message;
  if (live == 0) {
    if (!aj.cancel_reason.empty()) {
      end = JobState::kCancelled;
      message = aj.cancel_reason;
    } else if (!ts.failing.empty()) {
      end = JobState::kFailed;
      message = ts.failing;
    } else if (static_cast<int>(ts.trials.size()) >= ts.max_trials || ts.exhausted) {
      if (succeeded > 0) {
        // Trials without the metric succeed, and so does the job (compat §7), but it says so:
        // the optimiser had nothing to go by.
        end = JobState::kSucceeded;
        if (!any_metric) {
          message = NoTrialReportedMessage(ts.metric_tag, ts.other_tags);
          ServiceLogLocked(aj.job, model::Severity::kWarning, message);
        }
      } else {
        end = JobState::kFailed;
        message = "No trial succeeded. " +
                  (last_error.empty() ? std::string("Every trial was cancelled.") : last_error);
      }
    }
  }
  if (changed || end) UpdateTuningOutputLocked(aj, /*persist=*/!end);
  if (end) {
    FinishLocked(aj, *end, message);  // stores trainingOutput with the final state (through
                                      // RUNNING if no trial's replicas all ran)
    return;
  }
  if (changed) {
    admission_dirty_ = true;  // the next trial may start
    cv_.notify_all();
  }
}

void SchedulerCore::OnTrialMetricsLocked(ActiveJob& aj, int64_t id) {
  TuningState& ts = *aj.tuning;
  auto it = ts.trials.find(id);
  if (it == ts.trials.end()) return;
  TrialRun& t = it->second;
  if (!t.live || t.stop_early) return;
  const double before = t.fed_until;
  const bool stop = FeedTrialMetricsLocked(ts, t, TrialRecordsLocked(aj, id));
  if (stop) {
    // The median rule (enableTrialEarlyStopping): stopped gracefully, as a cancel would. The
    // verdict goes with the stop request, so a daemon restarted meanwhile still counts the
    // trial's end as a stop, not a failure.
    t.stop_early = true;
    if (t.stop_verdict) t.message = StopMessage(ts.metric_tag, *t.stop_verdict);
    ServiceLogLocked(aj.job, model::Severity::kInfo,
                     "Stopping trial " + std::to_string(id) + " early. " +
                         (t.message.empty() ? "Its " + ts.metric_tag +
                                                  " is worse than the median of the completed "
                                                  "trials at the same step."
                                            : t.message));
    const std::string trial_id = std::to_string(id);
    for (auto& r : aj.replicas) {
      if (r.key.trial_id == trial_id) {
        StopReplicaLocked(r, options_.cancel_grace, kStopEarlyReason);
      }
    }
  }
  if (t.fed_until != before) UpdateTuningOutputLocked(aj, /*persist=*/false);
}

void SchedulerCore::UpdateTuningOutputLocked(ActiveJob& aj, bool persist) {
  const TuningState& ts = *aj.tuning;
  // Field order as the service prints it (compat §4); int64 as strings, false omitted.
  ordered_json out = ordered_json::object();
  int64_t completed = 0;
  ordered_json trials = ordered_json::array();
  for (const auto& [id, t] : ts.trials) {
    if (t.state == "SUCCEEDED") ++completed;
    ordered_json tj = ordered_json::object();
    tj["trialId"] = std::to_string(id);
    ordered_json hps = ordered_json::object();
    for (const auto& p : ts.study->config().params) {
      auto it = t.hyperparameters.find(p.name);
      if (it != t.hyperparameters.end()) hps[p.name] = it->second;
    }
    tj["hyperparameters"] = std::move(hps);
    if (t.final_metric) {
      tj["finalMetric"] = {{"trainingStep", std::to_string(t.final_metric->step)},
                           {"objectiveValue", t.final_metric->value}};
    }
    if (t.start_time > 0) tj["startTime"] = FormatRfc3339(t.start_time);
    if (t.end_time > 0) tj["endTime"] = FormatRfc3339(t.end_time);
    tj["state"] = t.state;
    if (t.stop_early && t.state == "SUCCEEDED") tj["isTrialStoppedEarly"] = true;
    // Trainyard extensions (docs/api.md): why it stopped early, what it reported instead.
    if (t.stop_early && t.stop_verdict) {
      const tuning::StopVerdict& v = *t.stop_verdict;
      if (v.rule == tuning::StopRule::kPredictedFinal) {
        tj["earlyStopping"] = {{"rule", "PREDICTED_FINAL"},
                               {"trainingStep", std::to_string(v.step)},
                               {"predictedObjectiveValue", v.best},
                               {"bestFinalObjectiveValue", v.reference},
                               {"referenceTrialCount", std::to_string(v.reference_trials)}};
      } else {
        tj["earlyStopping"] = {{"rule", "MEDIAN"},
                               {"trainingStep", std::to_string(v.step)},
                               {"bestObjectiveValue", v.best},
                               {"medianObjectiveValue", v.reference},
                               {"referenceTrialCount", std::to_string(v.reference_trials)}};
      }
    }
    if (!t.message.empty()) tj["message"] = t.message;
    trials.push_back(std::move(tj));
  }
  out["completedTrialCount"] = std::to_string(completed);
  if (!trials.empty()) out["trials"] = std::move(trials);
  out["isHyperparameterTuningJob"] = true;
  out["hyperparameterMetricTag"] = ts.metric_tag;
  if (ts.study->config().early_stopping) {
    // Trainyard extension (docs/api.md): whether the median rule can stop trials yet.
    const int refs = ts.study->StoppingReferenceCount();
    int stopped = 0;
    for (const auto& [id, t] : ts.trials) stopped += t.stop_early ? 1 : 0;
    out["earlyStopping"] = {
        {"active", refs >= tuning::kMedianRuleMinReferenceTrials},
        {"referenceTrialCount", std::to_string(refs)},
        {"minReferenceTrialCount", std::to_string(tuning::kMedianRuleMinReferenceTrials)},
        {"stoppedTrialCount", std::to_string(stopped)}};
  }
  AddBuiltInOutputLocked(aj, false, &out);  // built-in algorithms (compat §4)
  aj.job.training_output_json = out.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!persist) return;
  if (Status st = store_.UpdateJob(aj.job, std::nullopt); !st.ok()) {
    TY_LOG_WARN(kLog, "job {}: cannot store its trials: {}", aj.job.job_id, st.ToString());
  }
}

}  // namespace trainyard::scheduler
