// Admission for the local executor: gangs start when they fit in this node's ResourcePool
// (admission.h states the order rules).
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "trainyard/scheduler/admission.h"

namespace trainyard::scheduler {
namespace {

class LocalAdmission final : public Admission {
 public:
  LocalAdmission(const NodeCapacity& node, bool exact_gpu_type) : pool_(node, exact_gpu_type) {}

  std::string NeverFits(const JobDemand& demand) const override { return pool_.NeverFits(demand); }

  void BeginPass() override { gpu_blocked_ = false; }

  Verdict Consider(const JobDemand& demand) override {
    if (gpu_blocked_ && demand.gpus > 0) return Verdict::kSkip;
    // A gang that can never fit is admitted, only to fail with the reason.
    if (!pool_.NeverFits(demand).empty()) return Verdict::kAdmit;
    const ResourcePool::Shortage short_of = pool_.Short(demand);
    if (short_of.cpu || short_of.memory) return Verdict::kStop;
    if (short_of.gpu) {
      gpu_blocked_ = true;  // the GPUs stay for this gang
      return Verdict::kSkip;
    }
    return Verdict::kAdmit;
  }

  bool Fits(const JobDemand& demand) const override { return pool_.Fits(demand); }

  std::string WhyWaiting(const JobDemand& demand) const override {
    const std::string never = pool_.NeverFits(demand);
    if (!never.empty()) return "It can never run here: " + never + ".";
    const ResourcePool::Shortage s = pool_.Short(demand);
    auto gib = [](int64_t b) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1LL << 30));
      return std::string(buf);
    };
    auto cpus = [](int64_t millis) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(millis) / 1000);
      return std::string(buf);
    };
    std::string why;
    auto add = [&why](const std::string& part) { why += (why.empty() ? "" : "; ") + part; };
    if (s.cpu) {
      add("not enough free CPUs: it needs " + cpus(demand.cpu_millis) + " vCPUs, " +
          cpus(std::max<int64_t>(0, pool_.free_cpu_millis())) + " of " +
          cpus(pool_.capacity().cpu_millis) + " are free");
    }
    if (s.memory) {
      add("not enough free memory: it needs " + gib(demand.memory_bytes) + ", " +
          gib(std::max<int64_t>(0, pool_.free_memory_bytes())) + " of " +
          gib(pool_.capacity().memory_bytes) + " are free");
    }
    if (s.gpu) {
      add("not enough free GPUs: it needs " + std::to_string(demand.gpus) + ", " +
          std::to_string(pool_.free_gpus()) + " of " +
          std::to_string(pool_.capacity().gpus.size()) + " are free");
    }
    if (why.empty()) return "";
    why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
    return why + ".";
  }

  Result<std::vector<std::vector<int>>> Reserve(
      const std::string& owner, const std::vector<ReplicaDemand>& replicas) override {
    return pool_.Allocate(owner, replicas);
  }
  void Restore(const std::string& owner, const std::vector<ReplicaDemand>& replicas,
               const std::vector<std::vector<int>>& devices) override {
    pool_.Restore(owner, replicas, devices);
  }
  void Release(const std::string& owner) override { pool_.Release(owner); }

  int64_t free_cpu_millis() const override { return pool_.free_cpu_millis(); }
  int64_t free_memory_bytes() const override { return pool_.free_memory_bytes(); }
  int free_gpus() const override { return pool_.free_gpus(); }

 private:
  ResourcePool pool_;
  bool gpu_blocked_ = false;
};

}  // namespace

std::unique_ptr<Admission> NewLocalAdmission(const NodeCapacity& node, bool exact_gpu_type) {
  return std::make_unique<LocalAdmission>(node, exact_gpu_type);
}

}  // namespace trainyard::scheduler
