// AI Platform's machine types, scale tiers and accelerators (compat §8) as data, and the
// replica plan of a TrainingInput: which roles run, how many of each, on what machine shape.
// Pure functions over constant tables; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/model/job.h"

namespace trainyard::model {

struct MachineType {
  std::string_view name;  // "standard", "n1-standard-4"
  bool legacy = false;    // AI Platform's own names (compat §8.2) vs Compute Engine (§8.3)
  int vcpus = 0;
  double memory_gib = 0;         // GCE "GB" are GiB
  std::string_view gpu_type;     // fixed GPUs of legacy GPU types and a2 shapes ("" = none)
  int gpu_count = 0;             // fixed GPUs (acceleratorConfig adds to Compute Engine types)
  double ml_units_per_hour = 0;  // training units per hour (2019 table; see docs/scheduling.md)
};

// nullptr for an unknown name and for cloud_tpu (Trainyard has no TPUs).
const MachineType* FindMachineType(std::string_view name);
// Every known machine type, legacy ones first.
const std::vector<MachineType>& MachineTypes();

// Training units per hour of one accelerator of `type` attached to a Compute Engine type
// (0 for unknown types).
double AcceleratorUnitsPerHour(std::string_view type);

// One role of a job's cluster.
struct ReplicaGroup {
  std::string task_type;         // "master", "worker", "ps", "evaluator"
  int count = 0;                 // replicas of this role (master: 1)
  std::string machine_type;      // effective type: the tier's, or the *Type the user gave
  int vcpus = 0;                 // per replica
  int64_t memory_bytes = 0;      // per replica
  std::string gpu_type;          // "" = no GPU
  int gpu_count = 0;             // per replica: the type's fixed GPUs + acceleratorConfig.count
  double ml_units_per_hour = 0;  // per replica: machine + accelerators
};

// The replica groups of a validated spec, in TF_CONFIG order: master, worker, ps, evaluator
// (roles with count 0 omitted). Scale tiers expand per compat §8.1: BASIC = 1 standard;
// STANDARD_1 = 1 complex_model_s master + 4 complex_model_s workers + 3 standard ps;
// PREMIUM_1 = 1 complex_model_m master + 19 complex_model_m workers + 11 large_model ps;
// BASIC_GPU = 1 standard_gpu; CUSTOM = the *Type/*Count fields. An unknown machine type
// (never true for a validated spec) plans as "standard".
std::vector<ReplicaGroup> PlanCluster(const TrainingSpec& spec);

}  // namespace trainyard::model
