// Admission: when a queued gang (a job, or one trial of a tuning job) may start, and what it
// holds while it runs. One strategy per backend:
//
//  - local (NewLocalAdmission): admits against this node's ResourcePool. Order is kept per
//    resource: once a gang ahead is short of CPU or memory nothing behind it starts (every gang
//    needs both), so a big job is not starved by a stream of small ones; a gang short only of
//    GPUs keeps the GPUs for itself (no gang behind it that needs a GPU starts) but lets
//    CPU-only gangs behind it run. Each replica is given its own GPU indices. A gang bigger
//    than the node follows the OversizePolicy below.
//  - a cluster backend (Slurm) hands every gang to the cluster at once and lets the cluster's
//    queue decide: Consider() always admits, Reserve() assigns no devices (the cluster does),
//    NeverFits() reports what no node of the cluster could ever hold.
//
// The scheduler owns the queue order (priority, then age); the strategy only answers for the
// gang in front of it. Not thread-safe: the scheduler calls it under its lock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/scheduler/resources.h"

namespace trainyard::scheduler {

class Admission {
 public:
  virtual ~Admission() = default;

  // Why a gang with this demand could never start on this backend ("" when it could). A job
  // asking for that is refused at create; one queued before the backend shrank fails at
  // admission.
  virtual std::string NeverFits(const JobDemand& demand) const = 0;

  // One admission pass walks the queue in order. BeginPass() resets what the pass learned;
  // Consider() answers for the next gang: start it now, pass over it (look at the ones behind),
  // or end the pass (nothing behind it may start).
  enum class Verdict { kAdmit, kSkip, kStop };
  virtual void BeginPass() = 0;
  virtual Verdict Consider(const JobDemand& demand) = 0;
  // Whether a gang fits right now, outside a pass (the next trial of a running tuning job).
  virtual bool Fits(const JobDemand& demand) const = 0;
  // For a gang bigger than this backend that it runs anyway (OversizePolicy::kRunAlone): what
  // exceeds and how it runs, for a WARNING in the job's log. "" for a gang of normal size.
  virtual std::string Oversize(const JobDemand& /*demand*/) const { return ""; }
  // Why a gang with this demand cannot start right now, in words for the job's waitReason
  // ("" when it could start now).
  virtual std::string WhyWaiting(const JobDemand& demand) const = 0;

  // Holds the gang's resources under `owner` (a job, or "<job>#<trial>"): one list of device
  // indices per replica, in order. FAILED_PRECONDITION when it does not fit (nothing is held).
  virtual Result<std::vector<std::vector<int>>> Reserve(
      const std::string& owner, const std::vector<ReplicaDemand>& replicas) = 0;
  // After a daemon restart: what a recovered gang held. Over-subscription is allowed.
  virtual void Restore(const std::string& owner, const std::vector<ReplicaDemand>& replicas,
                       const std::vector<std::vector<int>>& devices) = 0;
  // Frees what `owner` holds (no-op for unknown owners).
  virtual void Release(const std::string& owner) = 0;

  // For /metrics and the console's queue page: what is free now, and of how much (the node's
  // capacity after overcommit, or the cluster's partition in machine-type units; 0 = unknown).
  virtual int64_t free_cpu_millis() const = 0;
  virtual int64_t free_memory_bytes() const = 0;
  virtual int free_gpus() const = 0;
  virtual int64_t total_cpu_millis() const = 0;
  virtual int64_t total_memory_bytes() const = 0;
  virtual int total_gpus() const = 0;
};

// What a cluster offers, in machine-type units (vCPUs and bytes as AI Platform counts them,
// after the backend's scales): only for refusing what it could never hold.
struct ClusterCapacity {
  int64_t cpu_millis = 0;    // 0 = unknown (not checked)
  int64_t memory_bytes = 0;  // 0 = unknown
  int gpus = 0;
  int max_submitted = 0;  // gangs handed to the cluster at once; 0 = no cap
};

// Admission for a cluster backend that queues gangs itself (Slurm): see cluster_admission.cc.
std::unique_ptr<Admission> NewClusterAdmission(const ClusterCapacity& cluster);

// What local admission does with a gang whose CPUs or memory exceed the whole node (overcommit
// included), such as PREMIUM_1's 31 replicas on a laptop: setting oversize_jobs
// (docs/scheduling.md, "Jobs bigger than the machine"). GPUs are never part of it: a gang
// asking for more GPUs than the node has is refused under every policy.
enum class OversizePolicy {
  // Accepted; it waits until nothing else runs on the node, then runs alone, holding the whole
  // node, its replicas sharing the node's CPUs and memory (its reservation scaled down to the
  // node), with a WARNING in the job's log. Nothing behind it starts while it waits or runs.
  kRunAlone,
  // Refused at create with 400 naming what exceeds (the strict choice for a shared server).
  kRefuse,
};
// "run_alone" / "refuse"; INVALID_ARGUMENT naming the accepted values otherwise.
Result<OversizePolicy> ParseOversizePolicy(const std::string& text);
const char* OversizePolicyName(OversizePolicy policy);

// Admission against the resources of this node (the local executor's backend).
std::unique_ptr<Admission> NewLocalAdmission(const NodeCapacity& node, bool exact_gpu_type,
                                             OversizePolicy oversize = OversizePolicy::kRunAlone);

}  // namespace trainyard::scheduler
