// The search space in the designers' coordinates (tuning.md §5.2): every DOUBLE, INTEGER and
// DISCRETE parameter becomes one continuous coordinate in [0, 1] (log and reverse-log scales as
// OSS Vizier maps them), every CATEGORICAL parameter one index. INTEGER and DISCRETE coordinates
// are "continuified": a coordinate decodes to the nearest feasible value, and Snap re-encodes it,
// so a designer can score the point that will really run.
//
// DISCRETE coordinates have two encodings. kScaled (the default; random search, grid) places each
// listed value where its scale puts it. kRank (the GP designer) places the k-th of n values at
// k / (n - 1), with the scale's map interpolated linearly in between: every step between
// neighbouring listed values is equally long. The two agree on lists evenly spaced in their scale
// (16, 32, ..., 256 on a log scale), and such a list keeps the scaled coordinates exactly; on an
// uneven list such as warm-up steps 0, 100, 500, 1000, 5000 on a linear scale, kScaled packs the
// first three values into a tenth of the coordinate, where a model with one length scale per
// coordinate cannot tell them apart.
#pragma once

#include <cstdint>
#include <vector>

#include "trainyard/tuning/study.h"

namespace trainyard::tuning {

// A point: continuous coordinates (one per non-categorical parameter, spec order) and category
// indices (one per categorical parameter, spec order).
struct Point {
  std::vector<double> cont;
  std::vector<int> cat;
  bool operator==(const Point&) const = default;
};

enum class DiscreteEncoding { kScaled, kRank };

class Space {
 public:
  explicit Space(const StudyConfig& config, DiscreteEncoding discrete = DiscreteEncoding::kScaled);

  int num_continuous() const { return static_cast<int>(cont_.size()); }
  int num_categorical() const { return static_cast<int>(cat_.size()); }
  // Number of values of categorical parameter j (j < num_categorical()).
  int num_categories(int j) const;
  // Spec of continuous coordinate i / categorical j.
  const ParameterSpec& continuous_spec(int i) const;
  const ParameterSpec& categorical_spec(int j) const;
  // True when continuous coordinate i can take only finitely many values (INTEGER, DISCRETE).
  bool is_discrete(int i) const;
  // Finitely many points in all (no DOUBLE, and the product of value counts fits in an int64);
  // that count, or -1.
  int64_t FiniteSize() const;

  Point Encode(const Assignment& a) const;
  Assignment Decode(const Point& p) const;  // clamps to [0,1], rounds to feasible values
  // Decode then Encode: the point that would really run.
  Point Snap(const Point& p) const;
  double SnapCoordinate(int i, double u) const;
  // The centre of the scaled space, snapped; categories 0 (Vizier's first trial).
  Point Centre() const;

  // One coordinate both ways (exposed for tests).
  double ToUnit(int i, double value) const;
  double FromUnit(int i, double u) const;  // feasible value (rounded for INTEGER/DISCRETE)

 private:
  bool Ranked(int i) const;  // DISCRETE coordinate i encoded by rank (kRank, uneven list)

  std::vector<int> cont_;  // indices into params
  std::vector<int> cat_;
  const StudyConfig& config_;
  std::vector<bool> ranked_;  // per continuous coordinate
};

}  // namespace trainyard::tuning
