// Designers: the algorithms that turn a trial history into new assignments. Internal to the tuning
// library; Study (study.cc) owns one and feeds it the trials it knows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "space.h"
#include "trainyard/tuning/study.h"

namespace trainyard::tuning {

class Designer {
 public:
  virtual ~Designer() = default;
  // `count` new assignments (fewer only when the space is exhausted), given every known trial:
  // completed ones (value nullopt = failed, infeasible; raw values, the designer applies the
  // goal), pending ones (running, no value yet) and earlier suggestions of this same call are
  // all to be avoided as duplicates. The result must be a function of (config, trials, count):
  // seed any randomness from config.seed and the next trial id (max id + 1).
  virtual std::vector<Assignment> Suggest(const std::vector<Trial>& trials, int count) = 0;
};

std::unique_ptr<Designer> MakeGpUcbPeDesigner(const StudyConfig& config, const Space& space);
std::unique_ptr<Designer> MakeRandomDesigner(const StudyConfig& config, const Space& space);
std::unique_ptr<Designer> MakeGridDesigner(const StudyConfig& config, const Space& space);

// The median stopping rule (tuning.md §5.6): should `trial` (pending, measurements so far) stop,
// given the other trials? Completed trials with measurements form the reference.
// *verdict (when given) says why when it does.
bool MedianRuleSaysStop(const Trial& trial, const std::vector<Trial>& trials, Goal goal,
                        StopVerdict* verdict = nullptr);
// The references' report noise near `step`, as one report's standard deviation: for every
// reference with enough reports, the second difference of the three centred on its first report
// at or after `step` (its first three when `step` precedes them); the median absolute one, times
// 1.4826 / sqrt(6) (a second difference of white noise has sqrt(6) times its standard deviation).
// A curve's own bend counts as noise too, so the early steps, where curves bend most, are the
// most cautious. 0 without such references. The median rule stops a trial only when it stands
// beyond its reference by more than this (docs/tuning.md, "Early stopping").
double ReportNoise(const Trial& trial, const std::vector<Trial>& trials, int64_t step);
// Whether `t` can serve as a reference of the rule (completed, not stopped, with reports).
bool IsStoppingReference(const Trial& t);
// The predicted-final rule (tuning.md §5.6, Vizier's performance-curve rule in a simple form):
// across the reference trials, regress the final value on the value at the trial's newest step
// (each smoothed over its last three reports there) and stop the trial when even an optimistic
// prediction of its final value (the prediction minus about a 95 % interval) is worse than the
// best reference's final value: it cannot be the study's best. The trial enters the prediction
// with its best smoothed value so far, so that a transient bad patch does not stop it. Needs the
// median rule's reference and report counts; no verdict when the references all stood at the same
// value.
bool PredictedFinalSaysStop(const Trial& trial, const std::vector<Trial>& trials, Goal goal,
                            StopVerdict* verdict = nullptr);
// The predicted-final rule's regression at the trial's newest step: the predicted final value
// (`mean`, in the study's own direction), the prediction's standard error (`spread`), the
// interval's multiplier `z`, and the best reference's final value. nullopt where the rule decides
// nothing (too few reports or references, or references that all stood at one value).
struct FinalPrediction {
  int64_t step = 0;
  double mean = 0;
  double spread = 0;
  double z = 0;
  double best_final = 0;
  int references = 0;
};
std::optional<FinalPrediction> PredictFinal(const Trial& trial, const std::vector<Trial>& trials,
                                            Goal goal);
// Both rules: the median rule, else the predicted-final rule (Study::Report applies the median
// rule only away from the best trial, NearTheBestTrial).
bool StoppingRulesSayStop(const Trial& trial, const std::vector<Trial>& trials, Goal goal,
                          StopVerdict* verdict = nullptr);

// Trials near the best one are not stopped by the median rule (docs/tuning.md, "Early
// stopping"), only by the predicted-final rule, and such a trial stopped is labelled with
// PredictFinal's prediction: true when `trial` lies closer to the best finished trial (the best
// final value among the references) than kNearBestShare times the median distance of the other
// finished trials to it. Distances are root mean squares over the search space's unit
// coordinates (space.h), a differing category counting 1. A stopped trial's quantile label
// (ImputedFinalValue) regresses toward the middle; near the best trial, where the designer refines
// the optimum, such labels misled it (mean cost of stopping about 0.1 decade of best final value
// on development learning curves, none with this).
inline constexpr double kNearBestShare = 0.45;
bool NearTheBestTrial(const Trial& trial, const std::vector<Trial>& trials, const Space& space,
                      Goal goal);

// The final value a trial stopped early (or any trial with reports) would most likely have
// reached: its standing among the reference trials at its last reported step (the share of them
// whose value there was better, each side smoothed over its last three reports), mapped onto the
// same quantile of their final values. A stopped trial's own value is an intermediate one,
// worse than any final it would have reached, and the designers should not mistake it for one.
// The standing is first shrunk toward the middle by the references' rank correlation between
// their values at that step and their final values (clamped at 0: no information, the median).
// nullopt with fewer than kMinImputeReferences references reporting by that step.
inline constexpr size_t kMinImputeReferences = 3;
std::optional<double> ImputedFinalValue(const Trial& trial, const std::vector<Trial>& trials,
                                        Goal goal);

// Spearman's rank correlation of a and b (same length; ties get mean ranks); 0 when either is
// constant or shorter than 2.
double RankCorrelation(const std::vector<double>& a, const std::vector<double>& b);

// A 64-bit seed mixing the study seed with a salt (e.g. the next trial id); splitmix64.
uint64_t MixSeed(uint64_t seed, uint64_t salt);

}  // namespace trainyard::tuning
