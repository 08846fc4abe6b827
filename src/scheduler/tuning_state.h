// The state of a hyperparameter tuning job inside the scheduler (compat §3, §4): the study that
// suggests trials and the trials this job ran or runs. Private to the scheduler module.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainyard/core/time.h"
#include "trainyard/executor/executor.h"
#include "trainyard/tuning/study.h"

namespace trainyard::scheduler {

using executor::MetricRecord;

// The stop reason of a trial's replicas stopped by the median rule (kept by the executor, so
// a restarted daemon still counts the trial's end as a stop).
inline constexpr const char* kStopEarlyReason = "stopped early by the median stopping rule";

// The record finalMetric reports: the latest timestamp, ties broken by the highest step.
std::optional<MetricRecord> LatestRecord(const std::vector<MetricRecord>& records);

// What a study's suggestions depend on (Study::Suggest is a function of the config and the
// trials' ids, assignments, states and values): a suggestion made for one fingerprint is the
// one the study would make while it has that fingerprint.
uint64_t StudyFingerprint(const tuning::Study& study);

// One trial of this job (HyperparameterOutput).
struct TrialRun {
  int64_t id = 0;
  tuning::Assignment params;
  std::map<std::string, std::string> hyperparameters;  // parameterName -> value as printed
  std::string state = "RUNNING";                       // SUCCEEDED, FAILED, CANCELLED at the end
  Timestamp start_time = 0;
  Timestamp end_time = 0;
  bool live = true;         // replicas still run (or are being stopped)
  bool stop_early = false;  // the median rule asked it to stop; its replicas were told
  std::optional<MetricRecord> final_metric;
  double fed_until = -1;  // timestamp of the newest record given to the study
  std::string error;      // why it failed
  // Trainyard extensions of HyperparameterOutput (docs/api.md): what to know about how it ended
  // (it reported no record of the metric tag, or the median rule stopped it, and why).
  std::string message;
  std::optional<tuning::StopVerdict> stop_verdict;
};

struct TuningState {
  std::unique_ptr<tuning::Study> study;
  std::string metric_tag;
  int max_trials = 1;
  int max_parallel = 1;
  int max_failed = 0;                  // 0 = Trainyard decides (see FailedTrialLimit)
  std::map<int64_t, TrialRun> trials;  // this job's own trials, by id
  bool exhausted = false;              // the study has nothing more to suggest
  std::string failing;                 // errorMessage once too many trials failed
  // The metric tags that trials which did not report metric_tag reported instead.
  std::set<std::string> other_tags;
  // A suggestion computed outside the lock (PrepareSuggestions): Suggest(1)'s answer (empty =
  // the space is exhausted) for the study with fingerprint `prepared_for`.
  std::optional<std::vector<tuning::Trial>> prepared;
  uint64_t prepared_for = 0;
  bool wants_suggestion = false;  // a trial could start but no suggestion was ready
};

}  // namespace trainyard::scheduler
