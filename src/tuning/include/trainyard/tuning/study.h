// The tuning engine behind HyperparameterSpec (compat §3, ../docs/tuning.md): a pure library, no
// I/O and no threads. A Study holds one search space, the trials suggested so far and their
// results, and answers "what next?" with the algorithm the spec names:
//
//   ALGORITHM_UNSPECIFIED  GP-UCB-PE (a Vizier-style Gaussian-process bandit; batches by pure
//                          exploration of the posterior variance given the pending trials)
//   RANDOM_SEARCH          uniform in the scaled space
//   GRID_SEARCH            exact enumeration of INTEGER/DISCRETE/CATEGORICAL values
//
// Determinism: what Suggest returns is a function of the config (seed included), the trials the
// study knows (ids, assignments, states, values, measurements) and `count` only. Nothing from
// earlier Suggest calls is carried over except through those trials, so a restarted daemon that
// replays its stored trials (AddTrial/Complete/Report) gets the same suggestions it would have
// got without the restart, and a resumed study goes on numbering after the highest id.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::tuning {

enum class ParameterType { kDouble, kInteger, kCategorical, kDiscrete };
enum class ScaleType { kNone, kLinear, kLog, kReverseLog };  // kNone behaves as kLinear
enum class Goal { kMaximize, kMinimize };
enum class Algorithm { kUnspecified, kGridSearch, kRandomSearch };

// ParameterSpec (compat §3).
struct ParameterSpec {
  std::string name;
  ParameterType type = ParameterType::kDouble;
  double min_value = 0;  // DOUBLE, INTEGER
  double max_value = 0;
  std::vector<std::string> categorical_values;  // CATEGORICAL
  std::vector<double> discrete_values;          // DISCRETE, strictly increasing
  ScaleType scale = ScaleType::kNone;
};

struct StudyConfig {
  Goal goal = Goal::kMaximize;
  std::vector<ParameterSpec> params;
  Algorithm algorithm = Algorithm::kUnspecified;
  int max_parallel_trials = 1;
  bool early_stopping = false;  // enableTrialEarlyStopping: the median stopping rule
  uint64_t seed = 0;
};

// Parses a HyperparameterSpec JSON object (AI Platform's camelCase names; snake_case accepted
// too), plus an optional "seed". Reads goal (unset/GOAL_TYPE_UNSPECIFIED = MAXIMIZE), params,
// algorithm, maxParallelTrials and enableTrialEarlyStopping; other HyperparameterSpec fields
// (maxTrials, maxFailedTrials, hyperparameterMetricTag, resumePreviousJobId) are the service's
// business and ignored here. INVALID_ARGUMENT naming the field ("params[1].minValue: ...") when
// ValidateStudyConfig refuses it or the JSON is malformed.
Result<StudyConfig> ParseStudyConfig(std::string_view json_text);
// The compat §10 rules: unique non-empty names, known types, min < max (min <= max for INTEGER
// with integral bounds), LOG scales on positive ranges, CATEGORICAL with values and no scale,
// DISCRETE strictly increasing with at most 1000 values, GRID_SEARCH without DOUBLE.
Status ValidateStudyConfig(const StudyConfig& config);

// One parameter's value. DOUBLE, INTEGER and DISCRETE use `number` (INTEGER values are
// integral, DISCRETE values are one of discrete_values); CATEGORICAL uses `category`, an index
// into categorical_values.
struct ParameterValue {
  double number = 0;
  int category = -1;
};
using Assignment = std::vector<ParameterValue>;  // in StudyConfig::params order

// The value as AI Platform prints it in trainingOutput.trials[].hyperparameters and as the trial's
// `--name=value` argument: DOUBLE at full precision ("%.17g", e.g. "0.40692436410083732"),
// INTEGER without a decimal point ("283"), DISCRETE in its shortest exact form ("64", "0.1"),
// CATEGORICAL as the category string.
std::string FormatValue(const ParameterSpec& spec, const ParameterValue& value);
// The inverse, for replaying stored trials. INVALID_ARGUMENT when `text` is not a value of spec.
Result<ParameterValue> ParseValue(const ParameterSpec& spec, std::string_view text);

enum class TrialState { kPending, kCompleted, kFailed };

struct Measurement {
  int64_t step = 0;
  double value = 0;
};

struct Trial {
  int64_t id = 0;  // 1, 2, ...
  Assignment params;
  TrialState state = TrialState::kPending;
  std::optional<double> value;  // objective of a completed trial, as reported (not sign-flipped)
  bool stopped_early = false;
  std::vector<Measurement> measurements;  // intermediate reports, in arrival order
};

// The median stopping rule (enableTrialEarlyStopping, docs/tuning.md): it decides nothing before
// this many completed trials with intermediate reports can serve as references, nor before a
// trial's own kMedianRuleMinReports-th report. Its reference is the references' value at the
// trial's step that kMedianRulePercentile percent of them match or beat: a little stricter than
// their median, which pays for the trials near the best one that it never stops. A trial must
// stand beyond it by more than the references' report noise there (ReportNoise in
// src/tuning/designer.h): among trials that close, the order at one step is a coin toss.
inline constexpr int kMedianRuleMinReferenceTrials = 5;
inline constexpr int kMedianRuleMinReports = 2;
inline constexpr double kMedianRulePercentile = 45;

// Which rule stopped a trial (docs/tuning.md, "Early stopping").
enum class StopRule { kMedian, kPredictedFinal };

// Why a rule stopped a trial, at its report of `step`, given `reference_trials` completed trials.
// kMedian: its best value so far (`best`) was worse than `reference`, the median of the
// references' values at that step. kPredictedFinal: even an optimistic prediction of its final
// value (`best`) was worse than `reference`, the best final value of the references.
struct StopVerdict {
  int64_t step = 0;
  double best = 0;
  double reference = 0;
  int reference_trials = 0;
  StopRule rule = StopRule::kMedian;
};

class Study {
 public:
  // INVALID_ARGUMENT when ValidateStudyConfig refuses the config.
  static Result<std::unique_ptr<Study>> Create(StudyConfig config);
  ~Study();
  Study(const Study&) = delete;
  Study& operator=(const Study&) = delete;

  const StudyConfig& config() const;
  const std::vector<Trial>& trials() const;  // by id

  // Up to `count` new trials, pending from now on, with ids following the highest id known.
  // Fewer (possibly none) once the search space is exhausted (GRID_SEARCH, or every point of a
  // small discrete space already tried). Never repeats an assignment of a known trial while an
  // untried one exists.
  std::vector<Trial> Suggest(int count);
  // Replay: a trial suggested earlier (stored by the service, or from a resumed study), with the
  // intermediate measurements it reported (non-finite ones are dropped, as Report drops them).
  // Pending until Complete. INVALID_ARGUMENT when the id is known or the assignment does not
  // fit the space.
  Status AddTrial(int64_t id, Assignment params, std::vector<Measurement> measurements = {});
  // The result of a pending trial: its objective, or nullopt when it failed or reported no metric
  // (the GP treats it as infeasible). `stopped_early`: the trial was stopped by Report's advice;
  // `value` is then its last measurement. NOT_FOUND for an unknown id, FAILED_PRECONDITION when
  // the trial is not pending.
  Status Complete(int64_t id, std::optional<double> value, bool stopped_early = false);
  // An intermediate measurement of a pending trial. True when early stopping is on and a stopping
  // rule says the trial should stop now: the median rule when the trial does not lie near the best
  // finished trial (NearTheBestTrial in designer.h), else the predicted-final rule (then
  // *verdict, when given, says why). False for unknown or finished trials.
  bool Report(int64_t id, int64_t step, double value, StopVerdict* verdict = nullptr);
  // How many completed trials the median rule can use as references now (not stopped early,
  // with intermediate reports); it is active from kMedianRuleMinReferenceTrials on.
  int StoppingReferenceCount() const;

 private:
  struct Impl;
  explicit Study(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainyard::tuning
