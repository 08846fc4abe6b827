// The grid of a space without DOUBLE parameters: each point as one digit per parameter (an index
// into that parameter's values), walked in a fixed mixed-radix order. Shared by GRID_SEARCH
// (grid.cc) and by RANDOM_SEARCH's duplicate avoidance (random_designer.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainyard/tuning/study.h"

namespace trainyard::tuning::internal {

using GridDigits = std::vector<int64_t>;

struct GridDigitsHash {
  size_t operator()(const GridDigits& d) const;
};

// Number of values of each parameter (0 for DOUBLE: not on any grid).
std::vector<int64_t> GridRadices(const StudyConfig& config);
// The digits of `a` when it is exactly a grid point, else false.
bool GridDigitsOf(const StudyConfig& config, const Assignment& a, GridDigits* out);
Assignment GridAssignment(const StudyConfig& config, const GridDigits& digits);
// The next point, first parameter slowest; false after the last one.
bool NextGridDigits(const std::vector<int64_t>& radices, GridDigits* digits);

}  // namespace trainyard::tuning::internal
