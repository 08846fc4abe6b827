// ParameterSpec builders shared by the tuning tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainyard/tuning/study.h"

namespace trainyard::tuning::testing_support {

inline ParameterSpec Double(std::string name, double min, double max,
                            ScaleType scale = ScaleType::kNone) {
  ParameterSpec s;
  s.name = std::move(name);
  s.type = ParameterType::kDouble;
  s.min_value = min;
  s.max_value = max;
  s.scale = scale;
  return s;
}

inline ParameterSpec Integer(std::string name, double min, double max,
                             ScaleType scale = ScaleType::kNone) {
  ParameterSpec s = Double(std::move(name), min, max, scale);
  s.type = ParameterType::kInteger;
  return s;
}

inline ParameterSpec Categorical(std::string name, std::vector<std::string> values) {
  ParameterSpec s;
  s.name = std::move(name);
  s.type = ParameterType::kCategorical;
  s.categorical_values = std::move(values);
  return s;
}

inline ParameterSpec Discrete(std::string name, std::vector<double> values,
                              ScaleType scale = ScaleType::kNone) {
  ParameterSpec s;
  s.name = std::move(name);
  s.type = ParameterType::kDiscrete;
  s.discrete_values = std::move(values);
  s.scale = scale;
  return s;
}

}  // namespace trainyard::tuning::testing_support
