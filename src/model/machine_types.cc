#include "trainyard/model/machine_types.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace trainyard::model {
namespace {

// ---- Where the numbers come from ----------------------------------------------------------------
//
// DERIVED AND UNVERIFIED (compat §8.5): AI Platform never published a formula for
// consumedMLUnits. The figures below are Trainyard's best reconstruction and are what
// docs/scheduling.md cites; change them here only.
//
// - Legacy types (compat §8.2): "training units per hour" from the pricing page, 2019 column where
//   the table has one, else the 2018 column (*_p100, *_v100 and complex_model_l_gpu only
//   appear in 2018; their units are therefore about 1.46x the 2019 scale).
// - Compute Engine n1 types (compat §8.3): linear in vCPUs within a family, from the 2019
//   anchors n1-standard-4 = 0.3878, n1-highmem-2 = 0.2416, n1-highcpu-16 (= complex_model_m) =
//   1.1576. They are computed as the 2019 list price per vCPU-hour divided by the Americas rate
//   of $0.49 per unit-hour and rounded to the table's 4 decimals; that reproduces every published
//   entry exactly (n1-standard-8 0.7755, -96 9.3061, complex_model_l 2.3151, large_model 0.9665),
//   where scaling the rounded anchor would be off in the last digit.
// - a2 types: list price / $0.49, a2-highgpu-1g $3.67/h (GPU included) scaling linearly with the
//   GPU count, a2-megagpu-16g $55.74/h.
// - Accelerators attached via acceleratorConfig: 2019 list price per GPU-hour / $0.49.
// - Host shapes of the legacy GPU types are guesses: *_gpu run on n1-standard-8/16/32 (what the
//   price arithmetic suggests); *_p100 and *_v100 on the CPU-only shape they are "equivalent" to.

constexpr double kUsdPerUnit = 0.49;  // $ per training-unit-hour, Americas, 2018-2019

constexpr double kN1StandardUsdPerVcpu = 0.19 / 4;    // n1-standard-4 $0.19/h
constexpr double kN1HighmemUsdPerVcpu = 0.1184 / 2;   // n1-highmem-2 $0.1184/h
constexpr double kN1HighcpuUsdPerVcpu = 0.5672 / 16;  // n1-highcpu-16 $0.5672/h
constexpr double kA2HighgpuUsdPerGpu = 3.67;          // a2-highgpu-1g
constexpr double kA2Megagpu16gUsd = 55.74;

constexpr std::string_view kK80 = "NVIDIA_TESLA_K80";
constexpr std::string_view kP100 = "NVIDIA_TESLA_P100";
constexpr std::string_view kV100 = "NVIDIA_TESLA_V100";
constexpr std::string_view kA100 = "NVIDIA_TESLA_A100";

struct AcceleratorPrice {
  std::string_view type;
  double usd_per_hour;
};

constexpr AcceleratorPrice kAcceleratorPrices[] = {
    {kK80, 0.45},
    {kP100, 1.46},
    {kV100, 2.48},
    {"NVIDIA_TESLA_P4", 0.60},
    {"NVIDIA_TESLA_T4", 0.35},
    {kA100, 2.93},
};

// Units as the pricing table prints them (4 decimals).
double Units(double usd_per_hour) { return std::round(usd_per_hour / kUsdPerUnit * 1e4) / 1e4; }

std::vector<MachineType> BuildCatalog() {
  std::vector<MachineType> t;
  auto legacy = [&t](std::string_view name, int vcpus, double gib, double units,
                     std::string_view gpu = {}, int gpus = 0) {
    t.push_back({name, true, vcpus, gib, gpu, gpus, units});
  };
  // compat §8.2. CPU-only shapes: n1-standard-4, n1-highmem-8, n1-highcpu-8/16/32.
  legacy("standard", 4, 15, 0.3878);
  legacy("large_model", 8, 52, 0.9665);
  legacy("complex_model_s", 8, 7.2, 0.5788);
  legacy("complex_model_m", 16, 14.4, 1.1576);
  legacy("complex_model_l", 32, 28.8, 2.3151);
  legacy("standard_gpu", 8, 30, 1.6939, kK80, 1);
  legacy("complex_model_m_gpu", 16, 60, 5.2245, kK80, 4);
  legacy("complex_model_l_gpu", 32, 120, 15.2555, kK80, 8);  // 2018 units
  legacy("standard_p100", 4, 15, 5.4824, kP100, 1);          // 2018 units
  legacy("complex_model_m_p100", 16, 14.4, 19.6653, kP100, 4);
  legacy("standard_v100", 4, 15, 8.5216, kV100, 1);
  legacy("large_model_v100", 8, 52, 8.8005, kV100, 1);
  legacy("complex_model_m_v100", 16, 14.4, 31.8220, kV100, 4);
  legacy("complex_model_l_v100", 32, 28.8, 63.6441, kV100, 8);

  // compat §8.3: exactly the Compute Engine types the validator accepts.
  auto n1 = [&t](std::string_view name, int vcpus, double gib_per_vcpu, double usd_per_vcpu) {
    t.push_back({name, false, vcpus, gib_per_vcpu * vcpus, {}, 0, Units(usd_per_vcpu * vcpus)});
  };
  n1("n1-standard-4", 4, 3.75, kN1StandardUsdPerVcpu);
  n1("n1-standard-8", 8, 3.75, kN1StandardUsdPerVcpu);
  n1("n1-standard-16", 16, 3.75, kN1StandardUsdPerVcpu);
  n1("n1-standard-32", 32, 3.75, kN1StandardUsdPerVcpu);
  n1("n1-standard-64", 64, 3.75, kN1StandardUsdPerVcpu);
  n1("n1-standard-96", 96, 3.75, kN1StandardUsdPerVcpu);
  n1("n1-highmem-2", 2, 6.5, kN1HighmemUsdPerVcpu);
  n1("n1-highmem-4", 4, 6.5, kN1HighmemUsdPerVcpu);
  n1("n1-highmem-8", 8, 6.5, kN1HighmemUsdPerVcpu);
  n1("n1-highmem-16", 16, 6.5, kN1HighmemUsdPerVcpu);
  n1("n1-highmem-32", 32, 6.5, kN1HighmemUsdPerVcpu);
  n1("n1-highmem-64", 64, 6.5, kN1HighmemUsdPerVcpu);
  n1("n1-highmem-96", 96, 6.5, kN1HighmemUsdPerVcpu);
  n1("n1-highcpu-16", 16, 0.9, kN1HighcpuUsdPerVcpu);
  n1("n1-highcpu-32", 32, 0.9, kN1HighcpuUsdPerVcpu);
  n1("n1-highcpu-64", 64, 0.9, kN1HighcpuUsdPerVcpu);
  n1("n1-highcpu-96", 96, 0.9, kN1HighcpuUsdPerVcpu);
  auto a2 = [&t](std::string_view name, int gpus, int vcpus, double gib, double usd) {
    t.push_back({name, false, vcpus, gib, kA100, gpus, Units(usd)});
  };
  a2("a2-highgpu-1g", 1, 12, 85, kA2HighgpuUsdPerGpu);
  a2("a2-highgpu-2g", 2, 24, 170, 2 * kA2HighgpuUsdPerGpu);
  a2("a2-highgpu-4g", 4, 48, 340, 4 * kA2HighgpuUsdPerGpu);
  a2("a2-highgpu-8g", 8, 96, 680, 8 * kA2HighgpuUsdPerGpu);
  a2("a2-megagpu-16g", 16, 96, 1360, kA2Megagpu16gUsd);
  return t;
}

constexpr std::string_view kFallbackType = "standard";

// Scale tiers other than CUSTOM (compat §8.1).
struct TierPlan {
  std::string_view tier;
  std::string_view master;
  std::string_view worker;
  int workers;
  std::string_view ps;
  int ps_count;
};

constexpr TierPlan kTiers[] = {
    {"BASIC", "standard", {}, 0, {}, 0},
    {"STANDARD_1", "complex_model_s", "complex_model_s", 4, "standard", 3},
    {"PREMIUM_1", "complex_model_m", "complex_model_m", 19, "large_model", 11},
    {"BASIC_GPU", "standard_gpu", {}, 0, {}, 0},
};

int ClampCount(int64_t n) {
  if (n <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max()));
}

// One group of `count` replicas on `type` (the fallback when unknown) with `acc` attached.
ReplicaGroup Group(std::string_view task_type, int count, std::string_view type,
                   const AcceleratorSpec& acc) {
  const MachineType* m = FindMachineType(type);
  if (m == nullptr) m = FindMachineType(kFallbackType);
  ReplicaGroup g;
  g.task_type = std::string(task_type);
  g.count = count;
  g.machine_type = std::string(m->name);
  g.vcpus = m->vcpus;
  g.memory_bytes = std::llround(m->memory_gib * static_cast<double>(int64_t{1} << 30));
  g.gpu_type = std::string(m->gpu_type);
  g.gpu_count = m->gpu_count;
  g.ml_units_per_hour = m->ml_units_per_hour;
  const int acc_count = ClampCount(acc.count);
  if (acc_count > 0 && !acc.type.empty() && acc.type != "ACCELERATOR_TYPE_UNSPECIFIED") {
    g.gpu_type = acc.type;
    g.gpu_count += acc_count;
    g.ml_units_per_hour += acc_count * AcceleratorUnitsPerHour(acc.type);
  }
  return g;
}

}  // namespace

const std::vector<MachineType>& MachineTypes() {
  static const std::vector<MachineType> kCatalog = BuildCatalog();
  return kCatalog;
}

const MachineType* FindMachineType(std::string_view name) {
  // 36 entries: a linear scan is as fast as anything fancier. cloud_tpu is not in the table.
  for (const MachineType& m : MachineTypes()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

double AcceleratorUnitsPerHour(std::string_view type) {
  for (const AcceleratorPrice& p : kAcceleratorPrices) {
    if (p.type == type) return Units(p.usd_per_hour);
  }
  return 0;
}

std::vector<ReplicaGroup> PlanCluster(const TrainingSpec& spec) {
  std::vector<ReplicaGroup> plan;
  if (spec.scale_tier != "CUSTOM") {
    const TierPlan* tier = &kTiers[0];  // unknown tiers (BASIC_TPU) never pass validation
    for (const TierPlan& t : kTiers) {
      if (t.tier == spec.scale_tier) tier = &t;
    }
    const AcceleratorSpec none;
    plan.push_back(Group("master", 1, tier->master, none));
    if (tier->workers > 0) plan.push_back(Group("worker", tier->workers, tier->worker, none));
    if (tier->ps_count > 0) plan.push_back(Group("ps", tier->ps_count, tier->ps, none));
    return plan;
  }
  const std::string_view master_type =
      spec.master.machine_type.empty() ? kFallbackType : std::string_view(spec.master.machine_type);
  plan.push_back(Group("master", 1, master_type, spec.master.accelerator));
  const std::pair<std::string_view, const ReplicaRoleSpec*> roles[] = {
      {"worker", &spec.worker}, {"ps", &spec.parameter_server}, {"evaluator", &spec.evaluator}};
  for (const auto& [task_type, role] : roles) {
    const int count = ClampCount(role->count);
    if (count == 0) continue;
    const std::string_view type =
        role->machine_type.empty() ? master_type : std::string_view(role->machine_type);
    plan.push_back(Group(task_type, count, type, role->accelerator));
  }
  return plan;
}

}  // namespace trainyard::model
