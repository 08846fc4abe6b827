// The list filter language of projects.jobs.list as AI Platform and gcloud use it:
//   jobId:census*            (":" is "has": prefix match with a trailing *, else equality)
//   state:FAILED  state=RUNNING  state!=QUEUED
//   labels.owner=alice  labels.owner:*   (label present)
//   createTime>"2024-01-01T00:00:00Z"  (also <, <=, >=, =, for createTime/startTime/endTime)
//   NOT x, -x, x AND y, x OR y, x y (implicit AND), parentheses, quoted values
// OR binds tighter than AND, as in Google's filter grammar (AIP-160).
// Filterable fields: jobId, state, createTime, startTime, endTime, errorMessage, labels.KEY,
// labels:KEY (key present), trainingInput.{scaleTier,region,pythonModule,runtimeVersion,
// pythonVersion,masterType,jobDir}; snake_case spellings are accepted too. The full semantics
// (wildcards, time granularity, absent values) are documented at the top of filter.cc.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"
#include "trainyard/model/job.h"

namespace trainyard::model {

class Filter {
 public:
  virtual ~Filter() = default;
  virtual bool Matches(const Job& job) const = 0;
  // When the filter requires state == s (a top-level conjunct), that state; else unset.
  // Lets the store narrow a scan.
  virtual std::optional<JobState> RequiredState() const = 0;
  // When the filter requires jobId to start with a prefix (a top-level conjunct), that prefix.
  virtual std::optional<std::string> RequiredJobIdPrefix() const = 0;
  // When a top-level conjunct bounds createTime from below (createTime >, >=, = or : a time),
  // the largest such time: no job created before it matches. Lets the store narrow a scan.
  virtual std::optional<Timestamp> CreateTimeFloor() const = 0;
};

// INVALID_ARGUMENT naming the position and the problem on a syntax error or unknown field.
// An empty or all-whitespace text yields a filter that matches everything.
Result<std::unique_ptr<Filter>> ParseFilter(std::string_view text);

}  // namespace trainyard::model
