// Admission for the local executor: gangs start when they fit in this node's ResourcePool
// (admission.h states the order rules), and gangs bigger than the node follow oversize_jobs.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "trainyard/scheduler/admission.h"

namespace trainyard::scheduler {
namespace {

class LocalAdmission final : public Admission {
 public:
  LocalAdmission(const NodeCapacity& node, bool exact_gpu_type, OversizePolicy oversize)
      : pool_(node, exact_gpu_type), oversize_(oversize) {}

  std::string NeverFits(const JobDemand& demand) const override {
    if (oversize_ == OversizePolicy::kRefuse) return pool_.NeverFits(demand);
    return pool_.Exceeds(demand).gpus;  // CPUs and memory: it runs alone instead
  }

  void BeginPass() override { gpu_blocked_ = false; }

  Verdict Consider(const JobDemand& demand) override {
    if (gpu_blocked_ && demand.gpus > 0) return Verdict::kSkip;
    // A gang that can never fit is admitted, only to fail with the reason.
    if (!NeverFits(demand).empty()) return Verdict::kAdmit;
    // An oversize gang waits for an idle node, and holds back everything behind it meanwhile
    // (as a gang short of CPU does), so a stream of small jobs cannot starve it.
    if (IsOversize(demand)) return pool_.idle() ? Verdict::kAdmit : Verdict::kStop;
    const ResourcePool::Shortage short_of = pool_.Short(demand);
    if (short_of.cpu || short_of.memory) return Verdict::kStop;
    if (short_of.gpu) {
      gpu_blocked_ = true;  // the GPUs stay for this gang
      return Verdict::kSkip;
    }
    return Verdict::kAdmit;
  }

  bool Fits(const JobDemand& demand) const override {
    if (IsOversize(demand)) return pool_.idle() && NeverFits(demand).empty();
    return pool_.Fits(demand);
  }

  std::string Oversize(const JobDemand& demand) const override {
    if (!IsOversize(demand)) return "";
    const ResourcePool::Misfit m = pool_.Exceeds(demand);
    std::string what = m.cpu;
    if (!m.memory.empty()) what += (what.empty() ? "" : "; ") + m.memory;
    return "This job is bigger than this Trainyard: " + what +
           ". It runs alone on the node (oversize_jobs: run_alone): its replicas share the "
           "node's CPUs and memory, so it runs slower than on AI Platform, and no other job "
           "starts until it ends. Set oversize_jobs: refuse to refuse such jobs instead.";
  }

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
    return pool_.Allocate(owner, ScaledToNode(replicas));
  }
  void Restore(const std::string& owner, const std::vector<ReplicaDemand>& replicas,
               const std::vector<std::vector<int>>& devices) override {
    pool_.Restore(owner, ScaledToNode(replicas), devices);
  }
  void Release(const std::string& owner) override { pool_.Release(owner); }

  int64_t free_cpu_millis() const override { return pool_.free_cpu_millis(); }
  int64_t free_memory_bytes() const override { return pool_.free_memory_bytes(); }
  int free_gpus() const override { return pool_.free_gpus(); }
  int64_t total_cpu_millis() const override { return pool_.capacity().cpu_millis; }
  int64_t total_memory_bytes() const override { return pool_.capacity().memory_bytes; }
  int total_gpus() const override { return static_cast<int>(pool_.capacity().gpus.size()); }

 private:
  bool IsOversize(const JobDemand& d) const {
    if (oversize_ != OversizePolicy::kRunAlone) return false;
    const ResourcePool::Misfit m = pool_.Exceeds(d);
    return !m.cpu.empty() || !m.memory.empty();
  }

  // An oversize gang's reservation, scaled down so that it holds (at most) the whole node:
  // each replica's CPUs (memory) times node / gang, rounded down. Others are unchanged.
  std::vector<ReplicaDemand> ScaledToNode(std::vector<ReplicaDemand> replicas) const {
    const JobDemand sum = JobDemand::Sum(replicas);
    if (!IsOversize(sum)) return replicas;
    const NodeCapacity& node = pool_.capacity();
    auto scale = [](int64_t value, int64_t have, int64_t want) {
      if (want <= have) return value;
      const long double scaled = static_cast<long double>(value) * have / want;
      return std::min(value, static_cast<int64_t>(scaled));
    };
    for (ReplicaDemand& r : replicas) {
      r.cpu_millis = scale(r.cpu_millis, node.cpu_millis, sum.cpu_millis);
      r.memory_bytes = scale(r.memory_bytes, node.memory_bytes, sum.memory_bytes);
    }
    return replicas;
  }

  ResourcePool pool_;
  OversizePolicy oversize_;
  bool gpu_blocked_ = false;
};

}  // namespace

Result<OversizePolicy> ParseOversizePolicy(const std::string& text) {
  if (text == "run_alone") return OversizePolicy::kRunAlone;
  if (text == "refuse") return OversizePolicy::kRefuse;
  return InvalidArgument("must be run_alone or refuse, not \"" + text + "\"");
}

const char* OversizePolicyName(OversizePolicy policy) {
  return policy == OversizePolicy::kRefuse ? "refuse" : "run_alone";
}

std::unique_ptr<Admission> NewLocalAdmission(const NodeCapacity& node, bool exact_gpu_type,
                                             OversizePolicy oversize) {
  return std::make_unique<LocalAdmission>(node, exact_gpu_type, oversize);
}

}  // namespace trainyard::scheduler
