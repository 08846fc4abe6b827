// The queue of jobs waiting for admission: higher scheduling.priority first, then older (lower
// store sequence) first. Each entry keeps the job's summed demand, so an admission pass reads
// no job from the store until it admits one. jobPosition is O(log n) with 100,000 queued jobs
// (an order-statistics tree, kept out of this header). Not thread-safe: the scheduler calls it
// under its lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "trainyard/model/job.h"
#include "trainyard/scheduler/resources.h"

namespace trainyard::scheduler {

// A queued job's place: (-priority, seq, project, job id) in ascending order is admission order.
struct QueueKey {
  int neg_priority = 0;
  int64_t seq = 0;
  std::pair<std::string, std::string> job;  // project, job id

  static QueueKey Of(const model::Job& job) {
    return {-job.spec.scheduling.priority, job.seq, {job.project, job.job_id}};
  }
  auto operator<=>(const QueueKey&) const = default;
};

class JobQueue {
 public:
  JobQueue();
  ~JobQueue();
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // Adds (or replaces) an entry.
  void Add(const QueueKey& key, const JobDemand& demand);
  // Removes it; false when it was not queued.
  bool Remove(const QueueKey& key);
  bool Contains(const QueueKey& key) const;
  // The demand of a queued entry; nullopt when it is not queued.
  std::optional<JobDemand> Demand(const QueueKey& key) const;
  // 1-based position in admission order; 0 when not queued (compat §1: already scheduled).
  int64_t Position(const QueueKey& key) const;
  size_t size() const;
  bool empty() const { return size() == 0; }

  // Walks the queue in admission order: the first entry, then the one after a key (which need
  // not be queued any more). Each step is O(log n).
  struct Entry {
    QueueKey key;
    JobDemand demand;
  };
  std::optional<Entry> First() const;
  std::optional<Entry> After(const QueueKey& key) const;

 private:
  struct Tree;
  std::unique_ptr<Tree> tree_;
};

}  // namespace trainyard::scheduler
