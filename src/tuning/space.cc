#include "space.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainyard::tuning {
namespace {

bool IsLog(ScaleType s) { return s == ScaleType::kLog || s == ScaleType::kReverseLog; }

std::pair<double, double> Bounds(const ParameterSpec& s) {
  if (s.type == ParameterType::kDiscrete) {
    return {s.discrete_values.front(), s.discrete_values.back()};
  }
  return {s.min_value, s.max_value};
}

// The scale's map of a raw value into [0, 1] (OSS Vizier's converters; tuning.md §1.2).
double Forward(const ParameterSpec& s, double v) {
  auto [lo, hi] = Bounds(s);
  if (!(hi > lo)) return 0.5;
  v = std::clamp(v, lo, hi);
  if (IsLog(s.scale) && lo > 0) {
    double span = std::log(hi) - std::log(lo);
    if (s.scale == ScaleType::kLog) return (std::log(v) - std::log(lo)) / span;
    return 1.0 - (std::log(hi + lo - v) - std::log(lo)) / span;
  }
  return (v - lo) / (hi - lo);
}

double Backward(const ParameterSpec& s, double u) {
  auto [lo, hi] = Bounds(s);
  if (!(hi > lo) || u <= 0) return lo;
  if (u >= 1) return hi;  // exactly the bounds, not exp(log(lo)) = lo + 1 ulp
  double v;
  if (IsLog(s.scale) && lo > 0) {
    double span = std::log(hi) - std::log(lo);
    if (s.scale == ScaleType::kLog) {
      v = std::exp(std::log(lo) + u * span);
    } else {
      v = hi + lo - std::exp(std::log(hi) - u * span);
    }
  } else {
    v = lo + u * (hi - lo);
  }
  return std::clamp(v, lo, hi);
}

// kRank (space.h): the position of a raw value between the listed values, each step 1/(n-1).
double RankForward(const ParameterSpec& s, double v) {
  const std::vector<double>& vals = s.discrete_values;
  const double x = Forward(s, v);
  const size_t n = vals.size();
  for (size_t k = 1; k < n; ++k) {
    const double a = Forward(s, vals[k - 1]), b = Forward(s, vals[k]);
    if (x <= b || k + 1 == n) {
      const double t = b > a ? std::clamp((x - a) / (b - a), 0.0, 1.0) : 0.0;
      return (static_cast<double>(k - 1) + t) / static_cast<double>(n - 1);
    }
  }
  return 1.0;
}

}  // namespace

bool Space::Ranked(int i) const { return ranked_[static_cast<size_t>(i)]; }

Space::Space(const StudyConfig& config, DiscreteEncoding discrete) : config_(config) {
  for (size_t i = 0; i < config.params.size(); ++i) {
    (config.params[i].type == ParameterType::kCategorical ? cat_ : cont_)
        .push_back(static_cast<int>(i));
  }
  // kRank changes only uneven lists: a list already evenly spaced in its scale keeps the scale's
  // coordinates bit for bit.
  for (int idx : cont_) {
    const ParameterSpec& s = config.params[idx];
    bool uneven = false;
    if (discrete == DiscreteEncoding::kRank && s.type == ParameterType::kDiscrete &&
        s.discrete_values.size() >= 2) {
      const auto n = static_cast<double>(s.discrete_values.size() - 1);
      for (size_t k = 0; k < s.discrete_values.size(); ++k) {
        uneven = uneven ||
                 std::abs(Forward(s, s.discrete_values[k]) - static_cast<double>(k) / n) > 1e-9;
      }
    }
    ranked_.push_back(uneven);
  }
}

int Space::num_categories(int j) const {
  return static_cast<int>(categorical_spec(j).categorical_values.size());
}
const ParameterSpec& Space::continuous_spec(int i) const { return config_.params[cont_[i]]; }
const ParameterSpec& Space::categorical_spec(int j) const { return config_.params[cat_[j]]; }

bool Space::is_discrete(int i) const { return continuous_spec(i).type != ParameterType::kDouble; }

int64_t Space::FiniteSize() const {
  int64_t size = 1;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 2;
  for (const ParameterSpec& s : config_.params) {
    double n = 0;
    switch (s.type) {
      case ParameterType::kDouble:
        return -1;
      case ParameterType::kInteger:
        n = std::floor(s.max_value) - std::ceil(s.min_value) + 1;
        break;
      case ParameterType::kCategorical:
        n = static_cast<double>(s.categorical_values.size());
        break;
      case ParameterType::kDiscrete:
        n = static_cast<double>(s.discrete_values.size());
        break;
    }
    if (n < 1) return 0;
    if (static_cast<double>(size) * n > static_cast<double>(kMax)) return -1;
    size *= static_cast<int64_t>(n);
  }
  return size;
}

double Space::ToUnit(int i, double value) const {
  return Ranked(i) ? RankForward(continuous_spec(i), value) : Forward(continuous_spec(i), value);
}

double Space::FromUnit(int i, double u) const {
  const ParameterSpec& s = continuous_spec(i);
  if (Ranked(i)) {
    // The nearest listed value in rank positions.
    const auto n = static_cast<double>(s.discrete_values.size() - 1);
    return s.discrete_values[static_cast<size_t>(std::lround(std::clamp(u, 0.0, 1.0) * n))];
  }
  double v = Backward(s, u);
  if (s.type == ParameterType::kInteger) {
    return std::clamp(std::round(v), std::ceil(s.min_value), std::floor(s.max_value));
  }
  if (s.type == ParameterType::kDiscrete) {
    // Nearest listed value in the scaled space, so a log-scaled list splits at geometric means.
    u = std::clamp(u, 0.0, 1.0);
    const std::vector<double>& vals = s.discrete_values;
    auto it = std::lower_bound(vals.begin(), vals.end(), v);
    if (it == vals.end()) return vals.back();
    if (it == vals.begin()) return vals.front();
    double above = *it, below = *(it - 1);
    return std::abs(Forward(s, above) - u) < std::abs(Forward(s, below) - u) ? above : below;
  }
  return v;
}

double Space::SnapCoordinate(int i, double u) const { return ToUnit(i, FromUnit(i, u)); }

Point Space::Encode(const Assignment& a) const {
  Point p;
  p.cont.reserve(cont_.size());
  for (size_t i = 0; i < cont_.size(); ++i) {
    p.cont.push_back(ToUnit(static_cast<int>(i), a[cont_[i]].number));
  }
  for (int idx : cat_) p.cat.push_back(a[idx].category);
  return p;
}

Assignment Space::Decode(const Point& p) const {
  Assignment a(config_.params.size());
  for (size_t i = 0; i < cont_.size(); ++i) {
    a[cont_[i]].number = FromUnit(static_cast<int>(i), p.cont[i]);
  }
  for (size_t j = 0; j < cat_.size(); ++j) {
    int n = num_categories(static_cast<int>(j));
    a[cat_[j]].category = std::clamp(p.cat[j], 0, n - 1);
  }
  return a;
}

Point Space::Snap(const Point& p) const { return Encode(Decode(p)); }

Point Space::Centre() const {
  Point p;
  p.cont.assign(cont_.size(), 0.5);
  p.cat.assign(cat_.size(), 0);
  return Snap(p);
}

}  // namespace trainyard::tuning
