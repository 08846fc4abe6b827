// The Cloud Logging filter of entries:list (gcloud ai-platform jobs stream-logs, gcloud logging
// read): parse, evaluate against entries, push down into a store query. A pushed-down query never
// excludes an entry the filter matches.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "log_filter.h"

namespace {
trainyard::model::LogEntry Entry(int64_t id, const char* task, trainyard::Timestamp ts,
                                 const char* trial) {
  trainyard::model::LogEntry e;
  e.insert_id = id;
  e.project = "p";
  e.job_id = "census_1";
  e.timestamp = ts;
  e.severity = trainyard::model::Severity::kWarning;
  e.task_name = task;
  e.trial_id = trial;
  e.message = "step 10 loss=0.5";
  return e;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto filter = trainyard::api::LogFilter::Parse(text);
  if (!filter.ok()) return 0;
  trainyard::store::LogQuery q;
  q.project = "p";
  filter->PushDown(&q);
  for (const auto& e : {Entry(7, "master-replica-0", 1700000000000000, ""),
                        Entry(12, "service", 1700000001500000, "3")}) {
    if (!filter->Matches(e)) continue;
    // The store would have returned e: the query must not exclude it.
    bool excluded = (!q.job_id.empty() && q.job_id != e.job_id) ||
                    (!q.task_name.empty() && q.task_name != e.task_name) ||
                    e.insert_id <= q.after_insert_id ||
                    (q.min_timestamp != 0 && e.timestamp < q.min_timestamp) ||
                    (q.max_timestamp != 0 && e.timestamp >= q.max_timestamp);
    if (excluded) std::abort();
  }
  return 0;
}
