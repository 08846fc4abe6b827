// What a node offers and what a job asks for: vCPUs, memory and GPUs. The ResourcePool does the
// bookkeeping behind gang admission (every replica of a job fits, or none starts) and assigns
// each GPU to one replica at a time. Not thread-safe; the scheduler calls it under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::scheduler {

struct Gpu {
  int index = 0;     // what CUDA_VISIBLE_DEVICES names
  std::string type;  // AcceleratorConfig type, e.g. "NVIDIA_TESLA_T4" (detected: from the name)
  std::string name;  // nvidia-smi's name, e.g. "NVIDIA H200" ("" when configured)
};

// What one node can hold, already multiplied by the overcommit factors.
struct NodeCapacity {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  std::vector<Gpu> gpus;
  // For messages: the raw figures and factors the capacity came from.
  int cpus = 0;
  int64_t physical_memory_bytes = 0;
  double cpu_overcommit = 1;
  double memory_overcommit = 1;
};

// One replica's needs.
struct ReplicaDemand {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int gpus = 0;
  std::string gpu_type;  // "" when gpus == 0
};

// A whole job's (or trial's) needs, summed: what the queue keeps per queued job.
struct JobDemand {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int gpus = 0;
  std::vector<std::pair<std::string, int>> gpus_by_type;  // sorted by type

  static JobDemand Sum(const std::vector<ReplicaDemand>& replicas);
};

class ResourcePool {
 public:
  // exact_gpu_type: a request for NVIDIA_TESLA_T4 takes only GPUs of that type; otherwise any
  // GPU serves any request (a development machine has whatever GPU it has).
  ResourcePool(NodeCapacity capacity, bool exact_gpu_type);

  const NodeCapacity& capacity() const { return capacity_; }

  // Why the job could never run here, even on an empty node ("" when it could).
  std::string NeverFits(const JobDemand& demand) const;
  // The same, per kind of resource: each "" when the node could hold that part of the demand.
  struct Misfit {
    std::string gpus;
    std::string cpu;
    std::string memory;
    std::string All() const;  // what NeverFits says: the non-empty parts, "; "-joined
  };
  Misfit Exceeds(const JobDemand& demand) const;
  // Nothing is held (no running gang): an oversize gang may run alone now.
  bool idle() const { return holdings_.empty(); }
  // Whether it fits in what is free now.
  bool Fits(const JobDemand& demand) const;
  // Which kinds of resource are short for `demand` right now.
  struct Shortage {
    bool cpu = false;
    bool memory = false;
    bool gpu = false;
  };
  Shortage Short(const JobDemand& demand) const;

  // Reserves the gang under `owner` and picks GPUs: one index list per replica (in order).
  // FAILED_PRECONDITION when it does not fit now (nothing is reserved then).
  Result<std::vector<std::vector<int>>> Allocate(const std::string& owner,
                                                 const std::vector<ReplicaDemand>& replicas);
  // Re-reserves a gang recovered after a daemon restart, with the GPUs it was given then.
  // GPUs unknown to this inventory are ignored; over-subscription is allowed (it already runs).
  void Restore(const std::string& owner, const std::vector<ReplicaDemand>& replicas,
               const std::vector<std::vector<int>>& gpus);
  // Frees everything `owner` holds (no-op for unknown owners).
  void Release(const std::string& owner);

  int64_t free_cpu_millis() const { return capacity_.cpu_millis - used_cpu_; }
  int64_t free_memory_bytes() const { return capacity_.memory_bytes - used_memory_; }
  int free_gpus() const;

 private:
  struct Holding {
    int64_t cpu_millis = 0;
    int64_t memory_bytes = 0;
    std::vector<int> gpus;  // indices into capacity_.gpus
  };
  bool GpuMatches(const Gpu& gpu, const std::string& type) const;
  // Free GPUs able to serve `type`.
  int FreeGpusFor(const std::string& type) const;

  NodeCapacity capacity_;
  bool exact_gpu_type_;
  int64_t used_cpu_ = 0;
  int64_t used_memory_ = 0;
  std::vector<bool> gpu_used_;  // by position in capacity_.gpus
  std::map<std::string, Holding> holdings_;
};

// The accelerator type of an nvidia-smi GPU name ("Tesla T4" -> NVIDIA_TESLA_T4,
// "NVIDIA A100-SXM4-40GB" -> NVIDIA_TESLA_A100; others "NVIDIA_" + the name in upper case with
// non-alphanumerics as "_", e.g. "NVIDIA H200" -> NVIDIA_H200).
std::string AcceleratorTypeForGpuName(const std::string& name);
// Parses `nvidia-smi --query-gpu=index,name --format=csv,noheader` output.
std::vector<Gpu> ParseNvidiaSmi(const std::string& output);
// Runs nvidia-smi; an empty list (and the reason) when there is none or it fails.
std::vector<Gpu> DetectGpus(std::string* note);
// The configured inventory: "none", or a comma list of accelerator types, one per GPU, indices
// 0..n-1 ("2xNVIDIA_TESLA_T4" is shorthand for two). INVALID_ARGUMENT naming the bad entry.
Result<std::vector<Gpu>> ParseGpuList(const std::string& text);

}  // namespace trainyard::scheduler
