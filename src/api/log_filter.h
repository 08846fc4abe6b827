// The subset of Cloud Logging's filter language that `gcloud ai-platform jobs stream-logs` and
// `gcloud logging read` send to `entries:list` (compat §11): comparisons `FIELD OP VALUE` with
// OP one of = != < <= > >= : (has), joined by AND, OR, NOT, `-`, parentheses and implicit AND.
// Fields are the ones a Trainyard log entry has (resource.type, resource.labels.job_id,
// resource.labels.task_name, labels.task_name, timestamp, insertId, severity, logName, ...);
// a field an entry does not have makes a comparison false. Private to ty_api.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"
#include "trainyard/model/job.h"
#include "trainyard/store/job_store.h"

namespace trainyard::api {

// Width of the zero-padded decimal insertId the Logging API writes: gcloud compares insert ids
// as strings, so they must sort lexicographically in insertion order.
constexpr int kInsertIdWidth = 20;
std::string PaddedInsertId(int64_t insert_id);

// The value of a filterable field of `entry`; nullopt when the entry has no such field.
// `path` is the dotted field path with quoted segments unquoted
// (`labels."ml.googleapis.com/trial_id"` -> `labels.ml.googleapis.com/trial_id`).
std::optional<std::string> LogEntryField(const model::LogEntry& entry, std::string_view path);

class LogFilter {
 public:
  struct Node;

  // Parses `text`; an empty or blank filter matches everything. INVALID_ARGUMENT naming the
  // problem (and its position) otherwise.
  static Result<LogFilter> Parse(std::string_view text);

  LogFilter(LogFilter&&) noexcept;
  LogFilter& operator=(LogFilter&&) noexcept;
  ~LogFilter();

  bool Matches(const model::LogEntry& entry) const;

  // Narrows `query` by what every matching entry must satisfy (job id, task name, timestamp
  // bounds, insert id cursor). Never narrows past the filter: Matches() still decides.
  void PushDown(store::LogQuery* query) const;

  // The job every matching entry belongs to, when the filter implies one
  // (`resource.labels.job_id="X"` as a conjunct, or in every branch of an OR).
  std::optional<std::string> ImpliedJobId() const;

  // Removes every top-level conjunct `timestamp<"T"` or `timestamp<="T"` with T >= `from` (an
  // upper bound that the whole filter ANDs in; bounds inside OR or NOT stay). Returns how many
  // it removed. ListLogEntries uses it for the freshness bound of a finished job
  // (logging_api.h).
  int LiftUpperTimeBounds(Timestamp from);

 private:
  LogFilter();
  std::unique_ptr<Node> root_;  // nullptr = match all
};

}  // namespace trainyard::api
