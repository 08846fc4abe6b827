// Designers: the algorithms that turn a trial history into new assignments. Internal to the tuning
// library; Study (study.cc) owns one and feeds it the trials it knows.
#pragma once

#include <memory>
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
// Whether `t` can serve as a reference of the rule (completed, not stopped, with reports).
bool IsStoppingReference(const Trial& t);

// A 64-bit seed mixing the study seed with a salt (e.g. the next trial id); splitmix64.
uint64_t MixSeed(uint64_t seed, uint64_t salt);

}  // namespace trainyard::tuning
