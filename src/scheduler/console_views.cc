// The web console's views of the scheduler (docs/console.md): the Queue page (what runs where,
// what waits and why, who holds each GPU) and the intermediate metrics of a tuning job's
// trials. Read-only: nothing here changes a job.

#include <algorithm>
#include <charconv>

#include "scheduler_core.h"

namespace trainyard::scheduler {

using model::Job;
using model::JobState;

namespace {

// A queued job's place as a page token: "<-priority>:<seq>:<job id>" (job ids have no ':').
std::string QueueToken(const QueueKey& key) {
  return std::to_string(key.neg_priority) + ":" + std::to_string(key.seq) + ":" + key.job.second;
}

Result<QueueKey> ParseQueueToken(const std::string& project, const std::string& token) {
  auto bad = [&] {
    return Status(StatusCode::kInvalidArgument,
                  "Invalid pageToken \"" + token + "\": use the nextPageToken of an answer")
        .AddViolation("pageToken", "not a token this route gave");
  };
  const size_t a = token.find(':');
  const size_t b = a == std::string::npos ? a : token.find(':', a + 1);
  if (b == std::string::npos || b + 1 >= token.size()) return bad();
  QueueKey key;
  auto r1 = std::from_chars(token.data(), token.data() + a, key.neg_priority);
  auto r2 = std::from_chars(token.data() + a + 1, token.data() + b, key.seq);
  if (r1.ec != std::errc() || r1.ptr != token.data() + a || r2.ec != std::errc() ||
      r2.ptr != token.data() + b) {
    return bad();
  }
  key.job = {project, token.substr(b + 1)};
  return key;
}

}  // namespace

Result<QueueView> SchedulerCore::Queue(const std::string& project, const std::string& page_token,
                                       int page_size) {
  std::optional<QueueKey> after;
  if (!page_token.empty()) {
    TRAINYARD_ASSIGN_OR_RETURN(QueueKey key, ParseQueueToken(project, page_token));
    after = std::move(key);
  }
  QueueView view;
  view.stats = Stats();  // takes the lock itself
  std::vector<QueueKey> page;
  {
    Unlocker lock(this);
    view.paused = paused_;
    view.max_running_jobs = options_.max_running_jobs;
    // Who holds each GPU: any admitted job's replica; named only for this project's jobs. A
    // backend with its own queue (Slurm) places GPUs on its nodes: the daemon's host has none
    // to show.
    std::map<int, QueueGpu> by_index;
    if (!executor_.QueuesGangs()) {
      for (const Gpu& g : options_.node.gpus) by_index[g.index].gpu = g;
    }
    for (const auto& [key, aj] : active_) {
      const bool own = key.first == project;
      QueueAdmittedJob* shown = nullptr;
      if (own) {
        view.admitted.push_back({aj.job, {}});
        shown = &view.admitted.back();
        FillLiveLocked(shown->job, &aj);
      }
      for (const Replica& r : aj.replicas) {
        for (int index : r.gpus) {
          QueueGpu& g = by_index[index];
          g.gpu.index = index;
          g.held = true;
          if (own) {
            g.job_id = key.second;
            g.trial_id = r.key.trial_id;
            g.task_name = r.key.TaskName();
          }
        }
        if (shown == nullptr) continue;
        QueueReplica q;
        q.task_name = r.key.TaskName();
        q.trial_id = r.key.trial_id;
        q.running = r.running && !r.exited;
        q.stopping = r.stop_sent;
        q.demand = r.demand;
        q.gpus = r.gpus;
        shown->replicas.push_back(std::move(q));
      }
    }
    for (auto& [index, g] : by_index) view.gpus.push_back(std::move(g));
    // The project's queued jobs in admission order, after the token's place (which need not be
    // queued any more). One more is looked for, to know whether a next page exists.
    std::optional<JobQueue::Entry> e = after ? queue_.After(*after) : queue_.First();
    for (; e; e = queue_.After(e->key)) {
      if (e->key.job.first != project) continue;
      if (static_cast<int>(page.size()) == page_size) {
        view.next_page_token = QueueToken(page.back());
        break;
      }
      page.push_back(e->key);
    }
  }
  // The queued jobs from the store (outside the lock), then their position and reason. A job
  // admitted or cancelled meanwhile is left out of the page.
  for (const QueueKey& key : page) {
    auto job = store_.GetJob(key.job.first, key.job.second);
    if (job.ok() && job->state == JobState::kQueued) view.queued.push_back(std::move(job).value());
  }
  FillLiveFields(view.queued);
  std::erase_if(view.queued, [](const Job& j) { return j.state != JobState::kQueued; });
  return view;
}

std::map<std::string, std::vector<executor::MetricRecord>> SchedulerCore::TrialMeasurements(
    const Job& job, const std::string& metric_tag, const std::vector<std::string>& trial_ids) {
  // A trial's records are those of its first replica in cluster order that reported any (the
  // master's, normally), as the tuning controller reads them (tuning_controller.cc).
  std::map<std::string, std::vector<executor::MetricRecord>> out;
  const std::vector<Replica> plan = PlanReplicas(job);
  for (const std::string& id : trial_ids) {
    for (const Replica& r : plan) {
      executor::ReplicaKey key = r.key;
      key.trial_id = id;
      std::vector<executor::MetricRecord> records = executor_.ReplicaMetrics(key, metric_tag);
      if (records.empty()) continue;
      std::stable_sort(records.begin(), records.end(),
                       [](const executor::MetricRecord& a, const executor::MetricRecord& b) {
                         return a.timestamp < b.timestamp;
                       });
      out[id] = std::move(records);
      break;
    }
  }
  return out;
}

}  // namespace trainyard::scheduler
