// Hashes that are the same on every run, build and machine (std::hash promises none of that).
#pragma once

#include <cstdint>
#include <string_view>

namespace trainyard {

// 64-bit FNV-1a (Fowler-Noll-Vo). kFnv1aBasis is FNV's offset basis.
inline constexpr uint64_t kFnv1aBasis = 14695981039346656037ull;
inline constexpr uint64_t kFnv1aPrime = 1099511628211ull;

// The basis that project numbers and tuning seeds have used since they were introduced: FNV's
// with its last digit missing. Any basis hashes as well; this one stays so that a project's
// number and a study's trials do not change with an upgrade.
inline constexpr uint64_t kFnv1aLegacyBasis = 1469598103934665603ull;

// One FNV-1a step over a value (a byte, or a whole 64-bit word for fingerprints of numbers).
constexpr uint64_t Fnv1aMix(uint64_t h, uint64_t v) { return (h ^ v) * kFnv1aPrime; }

constexpr uint64_t Fnv1a(std::string_view s, uint64_t h = kFnv1aBasis) {
  for (char c : s) h = Fnv1aMix(h, static_cast<unsigned char>(c));
  return h;
}

}  // namespace trainyard
