// The state of a hyperparameter tuning job inside the scheduler (compat §3, §4): the study that
// suggests trials and the trials this job ran or runs. Private to the scheduler module.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "hp_metrics.h"
#include "trainyard/core/time.h"
#include "trainyard/tuning/study.h"

namespace trainyard::scheduler {

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
};

}  // namespace trainyard::scheduler
