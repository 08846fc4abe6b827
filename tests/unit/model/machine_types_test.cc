#include "trainyard/model/machine_types.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/model/job_json.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

constexpr int64_t kGiB = int64_t{1} << 30;

// compat §8.2 and §8.3, copied here so the catalog is checked against the spec, not itself.
constexpr std::string_view kLegacyNames[] = {"standard",
                                             "large_model",
                                             "complex_model_s",
                                             "complex_model_m",
                                             "complex_model_l",
                                             "standard_gpu",
                                             "complex_model_m_gpu",
                                             "complex_model_l_gpu",
                                             "standard_p100",
                                             "complex_model_m_p100",
                                             "standard_v100",
                                             "large_model_v100",
                                             "complex_model_m_v100",
                                             "complex_model_l_v100"};
constexpr std::string_view kComputeEngineNames[] = {
    "n1-standard-4",  "n1-standard-8", "n1-standard-16", "n1-standard-32", "n1-standard-64",
    "n1-standard-96", "n1-highmem-2",  "n1-highmem-4",   "n1-highmem-8",   "n1-highmem-16",
    "n1-highmem-32",  "n1-highmem-64", "n1-highmem-96",  "n1-highcpu-16",  "n1-highcpu-32",
    "n1-highcpu-64",  "n1-highcpu-96", "a2-highgpu-1g",  "a2-highgpu-2g",  "a2-highgpu-4g",
    "a2-highgpu-8g",  "a2-megagpu-16g"};

TrainingSpec Tier(const std::string& tier) {
  TrainingSpec s;
  s.scale_tier = tier;
  return s;
}

ReplicaRoleSpec Role(const std::string& type, int64_t count, const std::string& acc_type = "",
                     int64_t acc_count = 0) {
  ReplicaRoleSpec r;
  r.machine_type = type;
  r.count = count;
  r.accelerator.type = acc_type;
  r.accelerator.count = acc_count;
  return r;
}

// Checks one group's role, count and type; the shape comes from the catalog entry of `type`.
void ExpectGroup(const ReplicaGroup& g, const std::string& task_type, int count,
                 const std::string& type) {
  SCOPED_TRACE(task_type);
  EXPECT_EQ(g.task_type, task_type);
  EXPECT_EQ(g.count, count);
  EXPECT_EQ(g.machine_type, type);
  const MachineType* m = FindMachineType(type);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(g.vcpus, m->vcpus);
  EXPECT_EQ(g.memory_bytes, std::llround(m->memory_gib * static_cast<double>(kGiB)));
}

// ---- Catalog ------------------------------------------------------------------------------------

TEST(MachineTypesTest, CatalogHoldsExactlyTheDocumentedTypesLegacyFirst) {
  std::vector<std::string_view> expected(std::begin(kLegacyNames), std::end(kLegacyNames));
  expected.insert(expected.end(), std::begin(kComputeEngineNames), std::end(kComputeEngineNames));
  std::vector<std::string_view> got;
  for (const MachineType& m : MachineTypes()) got.push_back(m.name);
  EXPECT_EQ(got, expected);
  for (std::string_view name : kLegacyNames) {
    const MachineType* m = FindMachineType(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_TRUE(m->legacy) << name;
    EXPECT_EQ(m->name, name);
  }
  for (std::string_view name : kComputeEngineNames) {
    const MachineType* m = FindMachineType(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_FALSE(m->legacy) << name;
  }
}

TEST(MachineTypesTest, EveryEntryHasAShapeAndAPrice) {
  for (const MachineType& m : MachineTypes()) {
    SCOPED_TRACE(std::string(m.name));
    EXPECT_GT(m.vcpus, 0);
    EXPECT_GT(m.memory_gib, 0);
    EXPECT_GT(m.ml_units_per_hour, 0);
    EXPECT_EQ(m.gpu_type.empty(), m.gpu_count == 0);
    if (m.gpu_count > 0) {
      EXPECT_GT(AcceleratorUnitsPerHour(m.gpu_type), 0);
    }
  }
}

TEST(MachineTypesTest, UnknownNamesAndCloudTpuAreNotInTheCatalog) {
  EXPECT_EQ(FindMachineType("cloud_tpu"), nullptr);
  EXPECT_EQ(FindMachineType(""), nullptr);
  EXPECT_EQ(FindMachineType("n1-standard-3"), nullptr);
  EXPECT_EQ(FindMachineType("Standard"), nullptr);
}

TEST(MachineTypesTest, ShapesFollowTheComputeEngineFamilies) {
  auto expect_shape = [](std::string_view name, int vcpus, double gib) {
    const MachineType* m = FindMachineType(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->vcpus, vcpus) << name;
    EXPECT_DOUBLE_EQ(m->memory_gib, gib) << name;
  };
  expect_shape("standard", 4, 15);
  expect_shape("large_model", 8, 52);
  expect_shape("complex_model_s", 8, 7.2);
  expect_shape("complex_model_m", 16, 14.4);
  expect_shape("complex_model_l", 32, 28.8);
  expect_shape("standard_gpu", 8, 30);
  expect_shape("complex_model_m_gpu", 16, 60);
  expect_shape("complex_model_l_gpu", 32, 120);
  expect_shape("large_model_v100", 8, 52);
  expect_shape("n1-standard-96", 96, 360);
  expect_shape("n1-highmem-2", 2, 13);
  expect_shape("n1-highcpu-64", 64, 57.6);
  expect_shape("a2-highgpu-4g", 48, 340);
  expect_shape("a2-megagpu-16g", 96, 1360);
}

TEST(MachineTypesTest, FixedGpus) {
  auto expect_gpus = [](std::string_view name, std::string_view type, int count) {
    const MachineType* m = FindMachineType(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->gpu_type, type) << name;
    EXPECT_EQ(m->gpu_count, count) << name;
  };
  expect_gpus("standard", "", 0);
  expect_gpus("complex_model_l", "", 0);
  expect_gpus("n1-standard-8", "", 0);
  expect_gpus("standard_gpu", "NVIDIA_TESLA_K80", 1);
  expect_gpus("complex_model_m_gpu", "NVIDIA_TESLA_K80", 4);
  expect_gpus("complex_model_l_gpu", "NVIDIA_TESLA_K80", 8);
  expect_gpus("standard_p100", "NVIDIA_TESLA_P100", 1);
  expect_gpus("complex_model_m_p100", "NVIDIA_TESLA_P100", 4);
  expect_gpus("standard_v100", "NVIDIA_TESLA_V100", 1);
  expect_gpus("large_model_v100", "NVIDIA_TESLA_V100", 1);
  expect_gpus("complex_model_m_v100", "NVIDIA_TESLA_V100", 4);
  expect_gpus("complex_model_l_v100", "NVIDIA_TESLA_V100", 8);
  expect_gpus("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1);
  expect_gpus("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8);
  expect_gpus("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16);
}

TEST(MachineTypesTest, UnitsMatchThePublishedTable) {
  auto units = [](std::string_view name) {
    const MachineType* m = FindMachineType(name);
    return m == nullptr ? -1.0 : m->ml_units_per_hour;
  };
  // Legacy: 2019 column, else 2018.
  EXPECT_DOUBLE_EQ(units("standard"), 0.3878);
  EXPECT_DOUBLE_EQ(units("complex_model_m"), 1.1576);
  EXPECT_DOUBLE_EQ(units("standard_gpu"), 1.6939);
  EXPECT_DOUBLE_EQ(units("complex_model_l_gpu"), 15.2555);
  EXPECT_DOUBLE_EQ(units("complex_model_l_v100"), 63.6441);
  // Compute Engine: linear in vCPUs from the anchors, matching every published 2019 entry.
  EXPECT_DOUBLE_EQ(units("n1-standard-4"), 0.3878);
  EXPECT_DOUBLE_EQ(units("n1-standard-8"), 0.7755);
  EXPECT_DOUBLE_EQ(units("n1-standard-16"), 1.5510);
  EXPECT_DOUBLE_EQ(units("n1-standard-32"), 3.1020);
  EXPECT_DOUBLE_EQ(units("n1-standard-64"), 6.2041);
  EXPECT_DOUBLE_EQ(units("n1-standard-96"), 9.3061);
  EXPECT_DOUBLE_EQ(units("n1-highmem-2"), 0.2416);
  EXPECT_DOUBLE_EQ(units("n1-highmem-8"), units("large_model"));
  EXPECT_DOUBLE_EQ(units("n1-highcpu-16"), units("complex_model_m"));
  EXPECT_DOUBLE_EQ(units("n1-highcpu-32"), units("complex_model_l"));
  EXPECT_DOUBLE_EQ(units("a2-highgpu-1g"), 7.4898);   // $3.67 / $0.49
  EXPECT_DOUBLE_EQ(units("a2-highgpu-2g"), 14.9796);  // $7.34 / $0.49
  EXPECT_DOUBLE_EQ(units("a2-megagpu-16g"), 113.7551);
}

TEST(MachineTypesTest, AcceleratorUnits) {
  EXPECT_DOUBLE_EQ(AcceleratorUnitsPerHour("NVIDIA_TESLA_K80"), 0.9184);
  EXPECT_DOUBLE_EQ(AcceleratorUnitsPerHour("NVIDIA_TESLA_P100"), 2.9796);
  EXPECT_DOUBLE_EQ(AcceleratorUnitsPerHour("NVIDIA_TESLA_V100"), 5.0612);
  EXPECT_DOUBLE_EQ(AcceleratorUnitsPerHour("NVIDIA_TESLA_P4"), 1.2245);
  EXPECT_DOUBLE_EQ(AcceleratorUnitsPerHour("NVIDIA_TESLA_T4"), 0.7143);
  EXPECT_DOUBLE_EQ(AcceleratorUnitsPerHour("NVIDIA_TESLA_A100"), 5.9796);
  EXPECT_EQ(AcceleratorUnitsPerHour("TPU_V2"), 0);
  EXPECT_EQ(AcceleratorUnitsPerHour("ACCELERATOR_TYPE_UNSPECIFIED"), 0);
  EXPECT_EQ(AcceleratorUnitsPerHour(""), 0);
}

// The validator reads the same table: every entry is accepted as masterType, and refused as
// "has GPUs" without the GPU capability exactly when it has fixed GPUs.
TEST(MachineTypesTest, ValidatorAcceptsEveryCatalogType) {
  for (const MachineType& m : MachineTypes()) {
    SCOPED_TRACE(std::string(m.name));
    json body = {{"jobId", "j"},
                 {"trainingInput",
                  {{"region", "us-central1"},
                   {"packageUris", {"gs://b/p.tar.gz"}},
                   {"pythonModule", "m"},
                   {"scaleTier", "CUSTOM"},
                   {"masterType", std::string(m.name)}}}};
    Capabilities all;
    all.gpus = true;
    auto ok = ParseJobForCreate(body.dump(), "p", all);
    EXPECT_TRUE(ok.ok()) << ok.status().ToString();
    auto no_gpus = ParseJobForCreate(body.dump(), "p", Capabilities{});
    if (m.gpu_count > 0) {
      EXPECT_EQ(no_gpus.status().code(), StatusCode::kFailedPrecondition)
          << no_gpus.status().ToString();
    } else {
      EXPECT_TRUE(no_gpus.ok()) << no_gpus.status().ToString();
    }
  }
}

// ---- PlanCluster: scale tiers -------------------------------------------------------------------

TEST(PlanClusterTest, BasicIsOneStandardMaster) {
  for (const TrainingSpec& spec : {TrainingSpec(), Tier("BASIC")}) {
    auto plan = PlanCluster(spec);
    ASSERT_EQ(plan.size(), 1u);
    ExpectGroup(plan[0], "master", 1, "standard");
    EXPECT_EQ(plan[0].vcpus, 4);
    EXPECT_EQ(plan[0].memory_bytes, 15 * kGiB);
    EXPECT_EQ(plan[0].gpu_type, "");
    EXPECT_EQ(plan[0].gpu_count, 0);
    EXPECT_DOUBLE_EQ(plan[0].ml_units_per_hour, 0.3878);
  }
}

TEST(PlanClusterTest, Standard1IsFourWorkersAndThreeParameterServers) {
  auto plan = PlanCluster(Tier("STANDARD_1"));
  ASSERT_EQ(plan.size(), 3u);
  ExpectGroup(plan[0], "master", 1, "complex_model_s");
  ExpectGroup(plan[1], "worker", 4, "complex_model_s");
  ExpectGroup(plan[2], "ps", 3, "standard");
  // The tier's 2019 price, $1.988/h, is 5 complex_model_s + 3 standard (compat §8.1).
  double units = 0;
  for (const ReplicaGroup& g : plan) units += g.count * g.ml_units_per_hour;
  EXPECT_NEAR(units * 0.49, 1.988, 0.001);
}

TEST(PlanClusterTest, Premium1IsNineteenWorkersAndElevenParameterServers) {
  auto plan = PlanCluster(Tier("PREMIUM_1"));
  ASSERT_EQ(plan.size(), 3u);
  ExpectGroup(plan[0], "master", 1, "complex_model_m");
  ExpectGroup(plan[1], "worker", 19, "complex_model_m");
  ExpectGroup(plan[2], "ps", 11, "large_model");
  double units = 0;
  for (const ReplicaGroup& g : plan) units += g.count * g.ml_units_per_hour;
  EXPECT_NEAR(units * 0.49, 16.5536, 0.001);
}

TEST(PlanClusterTest, BasicGpuIsOneK80) {
  auto plan = PlanCluster(Tier("BASIC_GPU"));
  ASSERT_EQ(plan.size(), 1u);
  ExpectGroup(plan[0], "master", 1, "standard_gpu");
  EXPECT_EQ(plan[0].gpu_type, "NVIDIA_TESLA_K80");
  EXPECT_EQ(plan[0].gpu_count, 1);
  EXPECT_DOUBLE_EQ(plan[0].ml_units_per_hour, 1.6939);
}

TEST(PlanClusterTest, PredefinedTiersIgnoreRoleFields) {
  TrainingSpec spec = Tier("STANDARD_1");
  spec.worker = Role("n1-standard-96", 50, "NVIDIA_TESLA_T4", 4);
  auto plan = PlanCluster(spec);
  ASSERT_EQ(plan.size(), 3u);
  ExpectGroup(plan[1], "worker", 4, "complex_model_s");
  EXPECT_EQ(plan[1].gpu_count, 0);
}

// ---- PlanCluster: CUSTOM ------------------------------------------------------------------------

TEST(PlanClusterTest, CustomWithEveryRoleAndAccelerators) {
  TrainingSpec spec = Tier("CUSTOM");
  spec.master = Role("n1-standard-8", 0, "NVIDIA_TESLA_T4", 2);
  spec.worker = Role("n1-highmem-16", 3, "NVIDIA_TESLA_V100", 1);
  spec.parameter_server = Role("n1-standard-4", 2);
  spec.evaluator = Role("n1-standard-16", 1);
  auto plan = PlanCluster(spec);
  ASSERT_EQ(plan.size(), 4u);

  ExpectGroup(plan[0], "master", 1, "n1-standard-8");
  EXPECT_EQ(plan[0].memory_bytes, 30 * kGiB);
  EXPECT_EQ(plan[0].gpu_type, "NVIDIA_TESLA_T4");
  EXPECT_EQ(plan[0].gpu_count, 2);
  EXPECT_DOUBLE_EQ(plan[0].ml_units_per_hour, 0.7755 + 2 * 0.7143);

  ExpectGroup(plan[1], "worker", 3, "n1-highmem-16");
  EXPECT_EQ(plan[1].vcpus, 16);
  EXPECT_EQ(plan[1].memory_bytes, 104 * kGiB);
  EXPECT_EQ(plan[1].gpu_type, "NVIDIA_TESLA_V100");
  EXPECT_EQ(plan[1].gpu_count, 1);
  EXPECT_DOUBLE_EQ(plan[1].ml_units_per_hour, 1.9331 + 5.0612);

  ExpectGroup(plan[2], "ps", 2, "n1-standard-4");
  EXPECT_EQ(plan[2].gpu_count, 0);
  EXPECT_EQ(plan[2].gpu_type, "");
  EXPECT_DOUBLE_EQ(plan[2].ml_units_per_hour, 0.3878);

  ExpectGroup(plan[3], "evaluator", 1, "n1-standard-16");
  EXPECT_EQ(plan[3].gpu_count, 0);
}

TEST(PlanClusterTest, CustomLegacyGpuTypesBringTheirGpus) {
  TrainingSpec spec = Tier("CUSTOM");
  spec.master = Role("complex_model_m_v100", 0);
  spec.worker = Role("standard_p100", 2);
  auto plan = PlanCluster(spec);
  ASSERT_EQ(plan.size(), 2u);
  ExpectGroup(plan[0], "master", 1, "complex_model_m_v100");
  EXPECT_EQ(plan[0].gpu_type, "NVIDIA_TESLA_V100");
  EXPECT_EQ(plan[0].gpu_count, 4);
  EXPECT_DOUBLE_EQ(plan[0].ml_units_per_hour, 31.8220);
  ExpectGroup(plan[1], "worker", 2, "standard_p100");
  EXPECT_EQ(plan[1].gpu_type, "NVIDIA_TESLA_P100");
  EXPECT_EQ(plan[1].gpu_count, 1);
}

TEST(PlanClusterTest, CustomA2ShapesCarryA100s) {
  TrainingSpec spec = Tier("CUSTOM");
  spec.master = Role("a2-highgpu-2g", 0);
  auto plan = PlanCluster(spec);
  ASSERT_EQ(plan.size(), 1u);
  ExpectGroup(plan[0], "master", 1, "a2-highgpu-2g");
  EXPECT_EQ(plan[0].vcpus, 24);
  EXPECT_EQ(plan[0].memory_bytes, 170 * kGiB);
  EXPECT_EQ(plan[0].gpu_type, "NVIDIA_TESLA_A100");
  EXPECT_EQ(plan[0].gpu_count, 2);
}

TEST(PlanClusterTest, CustomOmitsRolesWithoutReplicas) {
  TrainingSpec spec = Tier("CUSTOM");
  spec.master = Role("complex_model_l", 0);
  spec.worker = Role("complex_model_l", 0);  // a type without a count runs nothing
  spec.evaluator = Role("standard", 2);
  auto plan = PlanCluster(spec);
  ASSERT_EQ(plan.size(), 2u);
  ExpectGroup(plan[0], "master", 1, "complex_model_l");
  EXPECT_EQ(plan[0].memory_bytes, std::llround(28.8 * static_cast<double>(kGiB)));
  ExpectGroup(plan[1], "evaluator", 2, "standard");
}

TEST(PlanClusterTest, CustomRoleWithoutTypeUsesTheMastersAndUnknownTypesPlanAsStandard) {
  TrainingSpec spec = Tier("CUSTOM");
  spec.master = Role("complex_model_m", 0);
  spec.worker = Role("", 2);
  spec.parameter_server = Role("no-such-type", 1);
  auto plan = PlanCluster(spec);
  ASSERT_EQ(plan.size(), 3u);
  ExpectGroup(plan[1], "worker", 2, "complex_model_m");
  ExpectGroup(plan[2], "ps", 1, "standard");

  TrainingSpec bare = Tier("CUSTOM");  // no masterType at all
  plan = PlanCluster(bare);
  ASSERT_EQ(plan.size(), 1u);
  ExpectGroup(plan[0], "master", 1, "standard");
}

TEST(PlanClusterTest, PlansAParsedJob) {
  json body = {
      {"jobId", "j"},
      {"trainingInput",
       {{"region", "us-central1"},
        {"packageUris", {"gs://b/p.tar.gz"}},
        {"pythonModule", "m"},
        {"scaleTier", "CUSTOM"},
        {"masterType", "n1-standard-8"},
        {"masterConfig", {{"acceleratorConfig", {{"count", "1"}, {"type", "NVIDIA_TESLA_T4"}}}}},
        {"workerType", "n1-standard-8"},
        {"workerCount", "2"},
        {"evaluatorType", "n1-standard-4"},
        {"evaluatorCount", 1}}}};
  Capabilities caps;
  caps.multi_replica = true;
  caps.gpus = true;
  auto job = ParseJobForCreate(body.dump(), "p", caps);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto plan = PlanCluster(job->spec);
  ASSERT_EQ(plan.size(), 3u);
  ExpectGroup(plan[0], "master", 1, "n1-standard-8");
  EXPECT_EQ(plan[0].gpu_count, 1);
  ExpectGroup(plan[1], "worker", 2, "n1-standard-8");
  EXPECT_EQ(plan[1].gpu_count, 0);
  ExpectGroup(plan[2], "evaluator", 1, "n1-standard-4");
}

}  // namespace
}  // namespace trainyard::model
