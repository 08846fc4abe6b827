// The defaults of JobStore's console queries (job_store.h): built on ListJobs and ReadLogs.
#include <map>

#include "store_common.h"
#include "trainyard/store/job_store.h"

namespace trainyard::store {
namespace {

// A scan of the lines `query` selects (its job, task and trial, up to its max_insert_id) in
// pages of 1,000 from the first.
LogQuery StreamScan(const LogQuery& query) {
  LogQuery q;
  q.project = query.project;
  q.job_id = query.job_id;
  q.task_name = query.task_name;
  q.trial_id = query.trial_id;
  q.max_insert_id = query.max_insert_id;
  q.limit = 1000;
  return q;
}

}  // namespace

Result<std::vector<std::pair<model::JobState, int64_t>>> JobStore::CountProjectJobsByState(
    const std::string& project) {
  std::map<model::JobState, int64_t> counts;
  ListJobsRequest req;
  req.project = project;
  req.page_size = 100;
  while (true) {
    TRAINYARD_ASSIGN_OR_RETURN(ListJobsResponse page, ListJobs(req));
    for (const auto& job : page.jobs) counts[job.state]++;
    if (page.next_page_token.empty()) break;
    req.page_token = page.next_page_token;
  }
  return std::vector<std::pair<model::JobState, int64_t>>(counts.begin(), counts.end());
}

Result<std::vector<LogStreamCount>> JobStore::CountLogLines(const LogQuery& query) {
  LogQuery q;
  q.project = query.project;
  q.job_id = query.job_id;
  q.max_insert_id = query.max_insert_id;
  q.limit = 1000;
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  while (true) {
    TRAINYARD_ASSIGN_OR_RETURN(std::vector<model::LogEntry> page, ReadLogs(q));
    for (const auto& e : page) counts[{e.task_name, e.trial_id}]++;
    if (page.size() < 1000) break;
    q.after_insert_id = page.back().insert_id;
  }
  std::vector<LogStreamCount> out;
  for (const auto& [key, n] : counts) out.push_back({key.first, key.second, n});
  return out;
}

Result<int64_t> JobStore::LocateLogLine(const LogQuery& query, int64_t ordinal) {
  if (ordinal < 0) return int64_t{0};
  LogQuery q = StreamScan(query);
  int64_t seen = 0;
  while (true) {
    TRAINYARD_ASSIGN_OR_RETURN(std::vector<model::LogEntry> page, ReadLogs(q));
    if (ordinal - seen < static_cast<int64_t>(page.size())) {
      return page[static_cast<size_t>(ordinal - seen)].insert_id;
    }
    seen += static_cast<int64_t>(page.size());
    if (page.size() < 1000) return int64_t{0};
    q.after_insert_id = page.back().insert_id;
  }
}

Result<LogSearchResult> JobStore::SearchLogLines(const LogQuery& query, const LogSearch& search) {
  LogQuery q = StreamScan(query);
  internal::LogTextMatcher matcher(search.text, search.match_case);
  internal::LogMatchCollector kept(search);
  int64_t ordinal = 0;
  while (!kept.Full()) {
    TRAINYARD_ASSIGN_OR_RETURN(std::vector<model::LogEntry> page, ReadLogs(q));
    for (auto& e : page) {
      if (matcher.Matches(e.message)) {
        kept.Saw(ordinal);
        if (kept.Wants(ordinal)) kept.Add(ordinal, std::move(e));
      }
      ++ordinal;
      if (kept.Full()) break;
    }
    if (page.size() < 1000) break;
    q.after_insert_id = page.back().insert_id;
  }
  return kept.Finish(ordinal);
}

Result<std::vector<FinishedJob>> JobStore::ListFinishedJobs(Timestamp) {
  return Status(StatusCode::kUnimplemented, "this job store keeps no retention index");
}
Status JobStore::DeleteJobLogs(const std::string&, const std::string&) {
  return Status(StatusCode::kUnimplemented, "this job store cannot delete log lines");
}
Status JobStore::DeleteJob(const std::string&, const std::string&) {
  return Status(StatusCode::kUnimplemented, "this job store cannot delete jobs");
}

}  // namespace trainyard::store
