// RANDOM_SEARCH (tuning.md §5.7): uniform in the unit-encoded space, so log and reverse-log scales
// are respected (Space::Decode of uniform coordinates; categories uniform). When the space has no
// DOUBLE parameter it is a grid, and known points are avoided: redraw a few times, then pick
// among what is left (enumerated when the grid is small, else the next free point after a random
// one). Once every point of a finite space is taken, fewer assignments come back.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <unordered_set>
#include <vector>

#include "designer.h"
#include "grid.h"

namespace trainyard::tuning {

namespace {

using internal::GridDigits;
using TakenSet = std::unordered_set<GridDigits, internal::GridDigitsHash>;

constexpr int kRedraws = 64;                  // before falling back to picking among free points
constexpr int64_t kEnumerateLimit = 1 << 16;  // grids up to this size list their free points

// Uniform in [0, 1) from 53 random bits: the same on every standard library, unlike
// std::uniform_real_distribution.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int64_t UniformIndex(std::mt19937_64& rng, int64_t n) {
  auto i = static_cast<int64_t>(Uniform(rng) * static_cast<double>(n));
  return i < n ? i : n - 1;
}

class RandomDesigner : public Designer {
 public:
  explicit RandomDesigner(const StudyConfig& config)
      : config_(config), space_(config_), radices_(internal::GridRadices(config_)) {
    grid_ = !config_.params.empty();
    for (int64_t r : radices_) grid_ = grid_ && r > 0;
    size_ = grid_ ? space_.FiniteSize() : -1;
  }

  std::vector<Assignment> Suggest(const std::vector<Trial>& trials, int count) override {
    std::vector<Assignment> out;
    int64_t next_id = 1;
    for (const Trial& t : trials) next_id = std::max(next_id, t.id + 1);

    TakenSet taken;
    GridDigits digits;
    if (grid_) {
      for (const Trial& t : trials) {
        if (internal::GridDigitsOf(config_, t.params, &digits)) taken.insert(digits);
      }
    }
    for (int k = 0; k < count; ++k) {
      // One generator per suggested trial, seeded by the id it will get: a batch of n draws what
      // n single calls would have drawn (apart from duplicate avoidance).
      std::mt19937_64 rng(MixSeed(config_.seed, static_cast<uint64_t>(next_id + k)));
      if (!grid_) {
        out.push_back(Draw(rng));
        continue;
      }
      if (size_ > 0 && static_cast<int64_t>(taken.size()) >= size_) break;  // exhausted
      std::optional<Assignment> a = DrawFree(rng, taken);
      if (!a) break;
      internal::GridDigitsOf(config_, *a, &digits);
      taken.insert(digits);
      out.push_back(std::move(*a));
    }
    return out;
  }

 private:
  Assignment Draw(std::mt19937_64& rng) const {
    Point p;
    for (int i = 0; i < space_.num_continuous(); ++i) p.cont.push_back(Uniform(rng));
    for (int j = 0; j < space_.num_categorical(); ++j) {
      p.cat.push_back(static_cast<int>(UniformIndex(rng, space_.num_categories(j))));
    }
    return space_.Decode(p);
  }

  std::optional<Assignment> DrawFree(std::mt19937_64& rng, const TakenSet& taken) const {
    GridDigits digits;
    Assignment a;
    for (int attempt = 0; attempt < kRedraws; ++attempt) {
      a = Draw(rng);
      if (internal::GridDigitsOf(config_, a, &digits) && !taken.contains(digits)) return a;
    }
    if (size_ > 0 && size_ <= kEnumerateLimit) {
      // Small and crowded: uniform among the free points.
      std::vector<GridDigits> free;
      digits.assign(radices_.size(), 0);
      do {
        if (!taken.contains(digits)) free.push_back(digits);
      } while (internal::NextGridDigits(radices_, &digits));
      if (free.empty()) return std::nullopt;
      return internal::GridAssignment(
          config_, free[static_cast<size_t>(UniformIndex(rng, static_cast<int64_t>(free.size())))]);
    }
    // Large and (improbably) crowded: the next free point after the last draw, wrapping around.
    // Fewer than size_ points are taken, so this ends within taken.size() + 1 steps.
    if (!internal::GridDigitsOf(config_, a, &digits)) digits.assign(radices_.size(), 0);
    while (taken.contains(digits)) {
      if (!internal::NextGridDigits(radices_, &digits)) digits.assign(radices_.size(), 0);
    }
    return internal::GridAssignment(config_, digits);
  }

  const StudyConfig config_;
  const Space space_;
  const std::vector<int64_t> radices_;
  bool grid_ = false;  // no DOUBLE parameter: finitely many values per parameter
  int64_t size_ = -1;  // number of grid points when it fits in an int64, else -1
};

}  // namespace

std::unique_ptr<Designer> MakeRandomDesigner(const StudyConfig& config, const Space& /*space*/) {
  return std::make_unique<RandomDesigner>(config);
}

}  // namespace trainyard::tuning
