// GRID_SEARCH (tuning.md §5.7): the Cartesian product of every parameter's values, first parameter
// slowest, values ascending (INTEGER, DISCRETE) or in listed order (CATEGORICAL). The grid is
// walked lazily with a mixed-radix counter, so a 10^12-point grid costs only the points visited:
// each visited point is either suggested or taken by a known trial, hence O(count + trials).
#include "grid.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "designer.h"

namespace trainyard::tuning {
namespace internal {

size_t GridDigitsHash::operator()(const GridDigits& d) const {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int64_t x : d) h ^= static_cast<uint64_t>(x) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

// Number of values of each parameter (0 for DOUBLE: not on any grid).
std::vector<int64_t> GridRadices(const StudyConfig& config) {
  std::vector<int64_t> radices;
  for (const ParameterSpec& s : config.params) {
    switch (s.type) {
      case ParameterType::kDouble:
        radices.push_back(0);
        break;
      case ParameterType::kInteger: {
        double n = std::floor(s.max_value) - std::ceil(s.min_value) + 1;
        radices.push_back(n < 1 ? 0 : static_cast<int64_t>(n));
        break;
      }
      case ParameterType::kCategorical:
        radices.push_back(static_cast<int64_t>(s.categorical_values.size()));
        break;
      case ParameterType::kDiscrete:
        radices.push_back(static_cast<int64_t>(s.discrete_values.size()));
        break;
    }
  }
  return radices;
}

// The digits of `a` when it is exactly a grid point, else false (compared exactly: an INTEGER
// value must be that integer, a DISCRETE one that listed double).
bool GridDigitsOf(const StudyConfig& config, const Assignment& a, GridDigits* out) {
  if (a.size() != config.params.size()) return false;
  out->assign(a.size(), 0);
  for (size_t i = 0; i < a.size(); ++i) {
    const ParameterSpec& s = config.params[i];
    switch (s.type) {
      case ParameterType::kDouble:
        return false;
      case ParameterType::kInteger: {
        double lo = std::ceil(s.min_value);
        double v = a[i].number;
        if (v != std::trunc(v) || v < lo || v > std::floor(s.max_value)) return false;
        (*out)[i] = static_cast<int64_t>(v - lo);
        break;
      }
      case ParameterType::kCategorical:
        if (a[i].category < 0 ||
            static_cast<size_t>(a[i].category) >= s.categorical_values.size()) {
          return false;
        }
        (*out)[i] = a[i].category;
        break;
      case ParameterType::kDiscrete: {
        const std::vector<double>& vals = s.discrete_values;
        auto it = std::lower_bound(vals.begin(), vals.end(), a[i].number);
        if (it == vals.end() || *it != a[i].number) return false;
        (*out)[i] = it - vals.begin();
        break;
      }
    }
  }
  return true;
}

Assignment GridAssignment(const StudyConfig& config, const GridDigits& digits) {
  Assignment a(config.params.size());
  for (size_t i = 0; i < digits.size(); ++i) {
    const ParameterSpec& s = config.params[i];
    switch (s.type) {
      case ParameterType::kDouble:
        break;
      case ParameterType::kInteger:
        a[i].number = std::ceil(s.min_value) + static_cast<double>(digits[i]);
        break;
      case ParameterType::kCategorical:
        a[i].category = static_cast<int>(digits[i]);
        break;
      case ParameterType::kDiscrete:
        a[i].number = s.discrete_values[static_cast<size_t>(digits[i])];
        break;
    }
  }
  return a;
}

// Advances the mixed-radix counter (last digit fastest); false once it wraps past the end.
bool NextGridDigits(const std::vector<int64_t>& radices, GridDigits* digits) {
  for (size_t i = digits->size(); i-- > 0;) {
    if (++(*digits)[i] < radices[i]) return true;
    (*digits)[i] = 0;
  }
  return false;
}

}  // namespace internal

namespace {

using internal::GridDigits;

class GridDesigner : public Designer {
 public:
  explicit GridDesigner(const StudyConfig& config)
      : config_(config), radices_(internal::GridRadices(config_)) {}

  std::vector<Assignment> Suggest(const std::vector<Trial>& trials, int count) override {
    std::vector<Assignment> out;
    if (count <= 0 || radices_.empty()) return out;
    for (int64_t r : radices_) {
      if (r <= 0) return out;  // a DOUBLE (refused by validation) or an empty parameter
    }
    std::unordered_set<GridDigits, internal::GridDigitsHash> taken;
    GridDigits digits;
    for (const Trial& t : trials) {
      if (internal::GridDigitsOf(config_, t.params, &digits)) taken.insert(digits);
    }
    digits.assign(radices_.size(), 0);
    do {
      if (!taken.contains(digits)) {
        out.push_back(internal::GridAssignment(config_, digits));
        if (static_cast<int>(out.size()) == count) break;
      }
    } while (internal::NextGridDigits(radices_, &digits));
    return out;
  }

 private:
  const StudyConfig config_;
  const std::vector<int64_t> radices_;
};

}  // namespace

std::unique_ptr<Designer> MakeGridDesigner(const StudyConfig& config, const Space& /*space*/) {
  return std::make_unique<GridDesigner>(config);
}

}  // namespace trainyard::tuning
