// Study: one search space, its trials (kept sorted by id) and the designer the algorithm names.
#include "trainyard/tuning/study.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "designer.h"
#include "space.h"

namespace trainyard::tuning {
namespace {

// Why `value` is not a feasible value of `spec`, or "" when it is.
std::string CheckValue(const ParameterSpec& spec, const ParameterValue& value) {
  switch (spec.type) {
    case ParameterType::kCategorical:
      if (value.category < 0 ||
          value.category >= static_cast<int>(spec.categorical_values.size())) {
        return "category index out of range";
      }
      return "";
    case ParameterType::kDiscrete:
      if (std::find(spec.discrete_values.begin(), spec.discrete_values.end(), value.number) ==
          spec.discrete_values.end()) {
        return "not one of discreteValues";
      }
      return "";
    case ParameterType::kInteger:
      if (value.number != std::floor(value.number)) return "not an integer";
      [[fallthrough]];
    case ParameterType::kDouble:
      if (!std::isfinite(value.number) || value.number < spec.min_value ||
          value.number > spec.max_value) {
        return "outside [minValue, maxValue]";
      }
      return "";
  }
  return "unknown type";
}

}  // namespace

struct Study::Impl {
  explicit Impl(StudyConfig c) : config(std::move(c)), space(config) {}

  Trial* Find(int64_t id) {
    auto it = std::lower_bound(trials.begin(), trials.end(), id,
                               [](const Trial& t, int64_t v) { return t.id < v; });
    return it != trials.end() && it->id == id ? &*it : nullptr;
  }

  StudyConfig config;  // Space and the designer refer to it: Impl never moves (heap, owned)
  Space space;
  std::unique_ptr<Designer> designer;
  std::vector<Trial> trials;  // sorted by id
};

Result<std::unique_ptr<Study>> Study::Create(StudyConfig config) {
  TRAINYARD_RETURN_IF_ERROR(ValidateStudyConfig(config));
  auto impl = std::make_unique<Impl>(std::move(config));
  switch (impl->config.algorithm) {
    case Algorithm::kGridSearch:
      impl->designer = MakeGridDesigner(impl->config, impl->space);
      break;
    case Algorithm::kRandomSearch:
      impl->designer = MakeRandomDesigner(impl->config, impl->space);
      break;
    case Algorithm::kUnspecified:
      impl->designer = MakeGpUcbPeDesigner(impl->config, impl->space);
      break;
  }
  return std::unique_ptr<Study>(new Study(std::move(impl)));
}

Study::Study(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Study::~Study() = default;

const StudyConfig& Study::config() const { return impl_->config; }
const std::vector<Trial>& Study::trials() const { return impl_->trials; }

std::vector<Trial> Study::Suggest(int count) {
  std::vector<Trial> out;
  if (count <= 0) return out;
  std::vector<Assignment> assignments = impl_->designer->Suggest(impl_->trials, count);
  int64_t next_id = impl_->trials.empty() ? 1 : impl_->trials.back().id + 1;
  for (Assignment& a : assignments) {
    Trial t;
    t.id = next_id++;
    t.params = std::move(a);
    impl_->trials.push_back(t);  // ids grow, so the vector stays sorted
    out.push_back(std::move(t));
  }
  return out;
}

Status Study::AddTrial(int64_t id, Assignment params, std::vector<Measurement> measurements) {
  if (id <= 0) return InvalidArgument("trial id must be positive, got " + std::to_string(id));
  if (impl_->Find(id) != nullptr) {
    return InvalidArgument("trial " + std::to_string(id) + " already exists");
  }
  const std::vector<ParameterSpec>& specs = impl_->config.params;
  if (params.size() != specs.size()) {
    return InvalidArgument("trial " + std::to_string(id) + " has " + std::to_string(params.size()) +
                           " parameter values, the study has " + std::to_string(specs.size()) +
                           " parameters");
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string why = CheckValue(specs[i], params[i]);
    if (!why.empty()) {
      return InvalidArgument("trial " + std::to_string(id) + ": " + specs[i].name + ": " + why);
    }
  }
  Trial t;
  t.id = id;
  t.params = std::move(params);
  for (const Measurement& m : measurements) {
    if (std::isfinite(m.value)) t.measurements.push_back(m);
  }
  auto it = std::lower_bound(impl_->trials.begin(), impl_->trials.end(), id,
                             [](const Trial& a, int64_t v) { return a.id < v; });
  impl_->trials.insert(it, std::move(t));
  return Status::Ok();
}

Status Study::Complete(int64_t id, std::optional<double> value, bool stopped_early) {
  Trial* t = impl_->Find(id);
  if (t == nullptr) return NotFound("trial " + std::to_string(id) + " not found");
  if (t->state != TrialState::kPending) {
    return FailedPrecondition("trial " + std::to_string(id) + " is not pending");
  }
  // A NaN or infinite objective is no measurement: the trial counts as failed (infeasible).
  if (value.has_value() && std::isfinite(*value)) {
    t->state = TrialState::kCompleted;
    t->value = value;
  } else {
    t->state = TrialState::kFailed;
    t->value.reset();
  }
  t->stopped_early = stopped_early;
  return Status::Ok();
}

bool Study::Report(int64_t id, int64_t step, double value, StopVerdict* verdict) {
  Trial* t = impl_->Find(id);
  if (t == nullptr || t->state != TrialState::kPending || !std::isfinite(value)) return false;
  t->measurements.push_back({step, value});
  if (!impl_->config.early_stopping) return false;
  // Near the best finished trial the median rule is off: there only the predicted-final rule,
  // which says the trial cannot become the best, stops a trial (docs/tuning.md, "Early stopping").
  const Goal goal = impl_->config.goal;
  StopVerdict why;
  const bool stop = (MedianRuleSaysStop(*t, impl_->trials, goal, &why) &&
                     !NearTheBestTrial(*t, impl_->trials, impl_->space, goal)) ||
                    PredictedFinalSaysStop(*t, impl_->trials, goal, &why);
  if (stop && verdict != nullptr) *verdict = why;
  return stop;
}

int Study::StoppingReferenceCount() const {
  int n = 0;
  for (const Trial& t : impl_->trials) n += IsStoppingReference(t) ? 1 : 0;
  return n;
}

}  // namespace trainyard::tuning
