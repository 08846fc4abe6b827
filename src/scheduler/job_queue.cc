#include "trainyard/scheduler/job_queue.h"

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

namespace trainyard::scheduler {

struct JobQueue::Tree {
  __gnu_pbds::tree<QueueKey, JobDemand, std::less<QueueKey>, __gnu_pbds::rb_tree_tag,
                   __gnu_pbds::tree_order_statistics_node_update>
      t;
};

JobQueue::JobQueue() : tree_(std::make_unique<Tree>()) {}
JobQueue::~JobQueue() = default;

void JobQueue::Add(const QueueKey& key, const JobDemand& demand) { tree_->t[key] = demand; }

bool JobQueue::Remove(const QueueKey& key) { return tree_->t.erase(key); }

bool JobQueue::Contains(const QueueKey& key) const { return tree_->t.find(key) != tree_->t.end(); }

std::optional<JobDemand> JobQueue::Demand(const QueueKey& key) const {
  auto it = tree_->t.find(key);
  if (it == tree_->t.end()) return std::nullopt;
  return it->second;
}

int64_t JobQueue::Position(const QueueKey& key) const {
  if (!Contains(key)) return 0;
  return static_cast<int64_t>(tree_->t.order_of_key(key)) + 1;
}

size_t JobQueue::size() const { return tree_->t.size(); }

std::optional<JobQueue::Entry> JobQueue::First() const {
  if (tree_->t.empty()) return std::nullopt;
  auto it = tree_->t.begin();
  return Entry{it->first, it->second};
}

std::optional<JobQueue::Entry> JobQueue::After(const QueueKey& key) const {
  auto it = tree_->t.upper_bound(key);
  if (it == tree_->t.end()) return std::nullopt;
  return Entry{it->first, it->second};
}

}  // namespace trainyard::scheduler
