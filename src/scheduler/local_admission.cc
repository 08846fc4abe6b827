// Admission for the local executor: gangs start when they fit in this node's ResourcePool
// (admission.h states the order rules).
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
