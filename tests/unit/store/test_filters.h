// Test-only model::Filter implementations, so the store tests do not depend on ParseFilter.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "trainyard/core/util.h"
#include "trainyard/model/filter.h"

namespace trainyard::store::testing {

// A filter from a predicate plus the narrowing hints it declares. The hints must be implied by
// the predicate (as ParseFilter guarantees for top-level conjuncts).
class FuncFilter final : public model::Filter {
 public:
  FuncFilter(std::function<bool(const model::Job&)> match,
             std::optional<model::JobState> state = std::nullopt,
             std::optional<std::string> prefix = std::nullopt,
             std::optional<Timestamp> created_from = std::nullopt)
      : match_(std::move(match)),
        state_(state),
        prefix_(std::move(prefix)),
        created_from_(created_from) {}

  bool Matches(const model::Job& job) const override { return match_(job); }
  std::optional<model::JobState> RequiredState() const override { return state_; }
  std::optional<std::string> RequiredJobIdPrefix() const override { return prefix_; }
  std::optional<Timestamp> CreateTimeFloor() const override { return created_from_; }

 private:
  std::function<bool(const model::Job&)> match_;
  std::optional<model::JobState> state_;
  std::optional<std::string> prefix_;
  std::optional<Timestamp> created_from_;
};

// state = s
inline FuncFilter StateIs(model::JobState s) {
  return FuncFilter([s](const model::Job& j) { return j.state == s; }, s);
}

// jobId:prefix*
inline FuncFilter JobIdStartsWith(const std::string& prefix) {
  return FuncFilter([prefix](const model::Job& j) { return StartsWith(j.job_id, prefix); },
                    std::nullopt, prefix);
}

// labels.key = value (no narrowing hint: a full scan in C++)
inline FuncFilter LabelIs(const std::string& key, const std::string& value) {
  return FuncFilter([key, value](const model::Job& j) {
    auto it = j.labels.find(key);
    return it != j.labels.end() && it->second == value;
  });
}

// jobId:prefix* AND state = s
inline FuncFilter JobIdStartsWithAndStateIs(const std::string& prefix, model::JobState s) {
  return FuncFilter(
      [prefix, s](const model::Job& j) { return j.state == s && StartsWith(j.job_id, prefix); }, s,
      prefix);
}

// createTime >= t
inline FuncFilter CreatedFrom(Timestamp t) {
  return FuncFilter([t](const model::Job& j) { return j.create_time >= t; }, std::nullopt,
                    std::nullopt, t);
}

}  // namespace trainyard::store::testing
