// InMemoryJobStore: the JobStore contract over std containers behind one mutex. Same semantics
// as the SQLite store (tests/unit/store runs one suite against both), no durability.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "store_common.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::store {
namespace {

using model::Job;
using model::JobState;
using model::LogEntry;

class InMemoryJobStore final : public JobStore {
 public:
  Result<int64_t> CreateJob(const Job& job) override {
    std::lock_guard lock(mu_);
    auto key = std::make_pair(job.project, job.job_id);
    if (index_.count(key)) return internal::JobAlreadyExists(job.project, job.job_id);
    int64_t seq = ++last_seq_;
    Job stored = job;
    stored.seq = seq;
    stored.job_position = 0;
    projects_[job.project].emplace(seq, std::move(stored));
    index_.emplace(std::move(key), seq);
    return seq;
  }

  Result<Job> GetJob(const std::string& project, const std::string& job_id) override {
    std::lock_guard lock(mu_);
    const Job* job = Find(project, job_id);
    if (job == nullptr) return internal::JobNotFound(project, job_id);
    return *job;
  }

  Status UpdateJob(const Job& job, const std::optional<StateChange>& change) override {
    std::lock_guard lock(mu_);
    Job* stored = Find(job.project, job.job_id);
    if (stored == nullptr) return internal::JobNotFound(job.project, job.job_id);
    stored->state = job.state;
    stored->start_time = job.start_time;
    stored->end_time = job.end_time;
    stored->error_message = job.error_message;
    stored->labels = job.labels;
    stored->etag = job.etag;
    stored->consumed_ml_units = job.consumed_ml_units;
    stored->consumed_ml_units_set = job.consumed_ml_units_set;
    stored->training_output_json = job.training_output_json;
    if (change) history_[stored->seq].push_back(*change);
    return Status::Ok();
  }

  Result<ListJobsResponse> ListJobs(const ListJobsRequest& request) override {
    TRAINYARD_ASSIGN_OR_RETURN(std::optional<internal::JobCursor> cursor,
                               internal::DecodePageToken(request));
    const size_t page_size = static_cast<size_t>(std::max(1, request.page_size));
    const JobOrder& order = request.order;
    ListJobsResponse response;
    std::lock_guard lock(mu_);
    auto project = projects_.find(request.project);
    if (project == projects_.end()) return response;
    // Every match after the cursor, sorted: a linear pass (this store serves unit tests).
    std::vector<std::pair<internal::JobCursor, const Job*>> matches;
    for (const auto& [seq, job] : project->second) {
      internal::JobCursor at = internal::CursorOf(job, order.key);
      if (cursor && !internal::CursorLess(order, *cursor, at)) continue;
      if (request.filter != nullptr && !request.filter->Matches(job)) continue;
      matches.emplace_back(std::move(at), &job);
    }
    std::sort(matches.begin(), matches.end(), [&order](const auto& a, const auto& b) {
      return internal::CursorLess(order, a.first, b.first);
    });
    for (const auto& [at, job] : matches) {
      if (response.jobs.size() == page_size) {
        response.next_page_token = internal::EncodePageToken(request, response.jobs.back());
        break;
      }
      response.jobs.push_back(*job);
    }
    return response;
  }

  Result<std::vector<Job>> ListActiveJobs() override {
    std::lock_guard lock(mu_);
    std::vector<Job> out;
    for (const auto& [project, jobs] : projects_) {
      for (const auto& [seq, job] : jobs) {
        if (!model::IsTerminal(job.state)) out.push_back(job);
      }
    }
    std::sort(out.begin(), out.end(), [](const Job& a, const Job& b) { return a.seq < b.seq; });
    return out;
  }

  Result<std::vector<StateChange>> GetStateHistory(const std::string& project,
                                                   const std::string& job_id) override {
    std::lock_guard lock(mu_);
    const Job* job = Find(project, job_id);
    if (job == nullptr) return internal::JobNotFound(project, job_id);
    auto it = history_.find(job->seq);
    if (it == history_.end()) return std::vector<StateChange>();
    return it->second;
  }

  Result<std::vector<std::pair<JobState, int64_t>>> CountJobsByState() override {
    std::lock_guard lock(mu_);
    std::map<int, int64_t> counts;
    for (const auto& [project, jobs] : projects_) {
      for (const auto& [seq, job] : jobs) ++counts[static_cast<int>(job.state)];
    }
    std::vector<std::pair<JobState, int64_t>> out;
    for (const auto& [state, n] : counts) out.emplace_back(static_cast<JobState>(state), n);
    return out;
  }

  Status AppendLogs(std::span<LogEntry> entries) override {
    std::lock_guard lock(mu_);
    for (LogEntry& entry : entries) {
      if (entry.source_offset > 0) {
        // Lines delivered again after a crash are dropped (store_common.h, PastCursor).
        auto [it, added] = cursors_.try_emplace(internal::StreamOf(entry));
        std::optional<internal::LogCursor> cursor;
        if (!added) cursor = it->second;
        if (!internal::PastCursor(cursor, entry)) continue;
        it->second = {entry.source_attempt, entry.source_offset};
      }
      entry.insert_id = ++last_insert_id_;
      logs_[{entry.project, entry.job_id}].push_back(entry);
    }
    return Status::Ok();
  }

  Result<std::vector<LogEntry>> ReadLogs(const LogQuery& query) override {
    const size_t limit = static_cast<size_t>(internal::EffectiveLogLimit(query.limit));
    std::lock_guard lock(mu_);
    std::vector<const std::vector<LogEntry>*> sources;
    if (query.job_id.empty()) {
      for (auto it = logs_.lower_bound({query.project, ""});
           it != logs_.end() && it->first.first == query.project; ++it) {
        sources.push_back(&it->second);
      }
    } else if (auto it = logs_.find({query.project, query.job_id}); it != logs_.end()) {
      sources.push_back(&it->second);
    }
    const bool by_id = query.order == LogOrder::kInsertId;
    std::vector<const LogEntry*> matches;
    for (const auto* entries : sources) {
      auto first = std::upper_bound(entries->begin(), entries->end(), query.after_insert_id,
                                    [](int64_t id, const LogEntry& e) { return id < e.insert_id; });
      size_t taken = 0;  // each source is in id order: only its first `limit` can qualify
      for (auto it = first; it != entries->end() && (!by_id || taken < limit); ++it) {
        if (!internal::LogQueryMatches(query, *it)) continue;
        matches.push_back(&*it);
        ++taken;
      }
    }
    auto less = [order = query.order](const LogEntry* a, const LogEntry* b) {
      return internal::LogOrderLess(order, *a, *b);
    };
    const size_t n = std::min(limit, matches.size());
    std::partial_sort(matches.begin(), matches.begin() + static_cast<ptrdiff_t>(n), matches.end(),
                      less);
    std::vector<LogEntry> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(*matches[i]);
    return out;
  }

  Result<int64_t> LastLogInsertId() override {
    std::lock_guard lock(mu_);
    return last_insert_id_;
  }

 private:
  Job* Find(const std::string& project, const std::string& job_id) {
    auto it = index_.find({project, job_id});
    if (it == index_.end()) return nullptr;
    return &projects_[project].at(it->second);
  }

  std::mutex mu_;
  int64_t last_seq_ = 0;
  int64_t last_insert_id_ = 0;
  std::map<std::string, std::map<int64_t, Job>> projects_;  // project -> seq -> job
  std::map<std::pair<std::string, std::string>, int64_t> index_;
  std::map<int64_t, std::vector<StateChange>> history_;
  std::map<std::pair<std::string, std::string>, std::vector<LogEntry>> logs_;
  std::map<internal::LogStream, internal::LogCursor> cursors_;
};

}  // namespace

std::unique_ptr<JobStore> NewInMemoryJobStore() { return std::make_unique<InMemoryJobStore>(); }

}  // namespace trainyard::store
