// Admission for a cluster backend (Slurm): the cluster's own queue decides when a gang starts,
// so Trainyard never double-queues. It only meters how many gangs are handed to the cluster at
// once (`max_submitted`, so the controller is never flooded; the rest wait in Trainyard's queue
// in priority order) and refuses what the whole cluster could never hold.
#include <map>

#include "trainyard/scheduler/admission.h"

namespace trainyard::scheduler {
namespace {

class ClusterAdmission final : public Admission {
 public:
  explicit ClusterAdmission(const ClusterCapacity& cluster) : cluster_(cluster) {}

  std::string NeverFits(const JobDemand& demand) const override {
    auto gib = [](int64_t b) { return std::to_string(b / (1LL << 30)) + " GiB"; };
    if (cluster_.cpu_millis > 0 && demand.cpu_millis > cluster_.cpu_millis) {
      return "it asks for " + std::to_string(demand.cpu_millis / 1000) +
             " vCPUs and the whole cluster has " + std::to_string(cluster_.cpu_millis / 1000);
    }
    if (cluster_.memory_bytes > 0 && demand.memory_bytes > cluster_.memory_bytes) {
      return "it asks for " + gib(demand.memory_bytes) + " of memory and the whole cluster has " +
             gib(cluster_.memory_bytes);
    }
    if (demand.gpus > cluster_.gpus) {
      return "it asks for " + std::to_string(demand.gpus) + " GPUs and the whole cluster has " +
             std::to_string(cluster_.gpus);
    }
    return "";
  }

  void BeginPass() override {}

  Verdict Consider(const JobDemand&) override {
    if (cluster_.max_submitted > 0 && static_cast<int>(held_.size()) >= cluster_.max_submitted) {
      return Verdict::kStop;
    }
    return Verdict::kAdmit;
  }

  bool Fits(const JobDemand&) const override {
    return cluster_.max_submitted <= 0 || static_cast<int>(held_.size()) < cluster_.max_submitted;
  }

  std::string WhyWaiting(const JobDemand& demand) const override {
    const std::string never = NeverFits(demand);
    if (!never.empty()) return "It can never run on this cluster: " + never + ".";
    if (Fits(demand)) return "";
    return "The Slurm submission cap is reached: " + std::to_string(held_.size()) +
           " jobs are in Slurm and max_submitted_jobs is " +
           std::to_string(cluster_.max_submitted) + ".";
  }

  Result<std::vector<std::vector<int>>> Reserve(
      const std::string& owner, const std::vector<ReplicaDemand>& replicas) override {
    if (!Fits(JobDemand{})) {
      return FailedPrecondition("the Slurm submission cap (max_submitted_jobs) is reached");
    }
    held_[owner] = JobDemand::Sum(replicas);
    return std::vector<std::vector<int>>(replicas.size());  // the cluster assigns devices
  }
  void Restore(const std::string& owner, const std::vector<ReplicaDemand>& replicas,
               const std::vector<std::vector<int>>&) override {
    held_[owner] = JobDemand::Sum(replicas);
  }
  void Release(const std::string& owner) override { held_.erase(owner); }

  int64_t free_cpu_millis() const override {
    int64_t used = 0;
    for (const auto& [o, d] : held_) used += d.cpu_millis;
    return cluster_.cpu_millis - used;
  }
  int64_t free_memory_bytes() const override {
    int64_t used = 0;
    for (const auto& [o, d] : held_) used += d.memory_bytes;
    return cluster_.memory_bytes - used;
  }
  int free_gpus() const override {
    int used = 0;
    for (const auto& [o, d] : held_) used += d.gpus;
    return cluster_.gpus - used;
  }
  int64_t total_cpu_millis() const override { return cluster_.cpu_millis; }
  int64_t total_memory_bytes() const override { return cluster_.memory_bytes; }
  int total_gpus() const override { return cluster_.gpus; }

 private:
  ClusterCapacity cluster_;
  std::map<std::string, JobDemand> held_;
};

}  // namespace

std::unique_ptr<Admission> NewClusterAdmission(const ClusterCapacity& cluster) {
  return std::make_unique<ClusterAdmission>(cluster);
}

}  // namespace trainyard::scheduler
