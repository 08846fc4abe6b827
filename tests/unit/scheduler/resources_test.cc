#include "trainyard/scheduler/resources.h"

#include <gtest/gtest.h>

namespace trainyard::scheduler {
namespace {

NodeCapacity Node(int64_t cpu_millis, int64_t memory_bytes, std::vector<Gpu> gpus = {}) {
  NodeCapacity n;
  n.cpus = static_cast<int>(cpu_millis / 1000);
  n.cpu_millis = cpu_millis;
  n.physical_memory_bytes = memory_bytes;
  n.memory_bytes = memory_bytes;
  n.gpus = std::move(gpus);
  return n;
}

ReplicaDemand Cpu(int64_t millis, int64_t bytes = 1) { return {millis, bytes, 0, ""}; }
ReplicaDemand Gpus(int n, const std::string& type) { return {1000, 1, n, type}; }

TEST(JobDemandTest, SumsReplicasAndGroupsGpusByType) {
  JobDemand d = JobDemand::Sum({Cpu(4000, 10), Gpus(2, "NVIDIA_TESLA_T4"),
                                Gpus(1, "NVIDIA_TESLA_V100"), Gpus(1, "NVIDIA_TESLA_T4")});
  EXPECT_EQ(d.cpu_millis, 7000);
  EXPECT_EQ(d.memory_bytes, 13);
  EXPECT_EQ(d.gpus, 4);
  ASSERT_EQ(d.gpus_by_type.size(), 2u);
  EXPECT_EQ(d.gpus_by_type[0], std::make_pair(std::string("NVIDIA_TESLA_T4"), 3));
  EXPECT_EQ(d.gpus_by_type[1], std::make_pair(std::string("NVIDIA_TESLA_V100"), 1));
}

TEST(ResourcePoolTest, AllocatesWholeGangsAndReleasesThem) {
  ResourcePool pool(Node(8000, 100), false);
  auto a = pool.Allocate("a", {Cpu(4000, 40), Cpu(2000, 40)});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(pool.free_cpu_millis(), 2000);
  EXPECT_EQ(pool.free_memory_bytes(), 20);
  // Three more vCPUs do not fit: nothing of the gang is taken.
  auto b = pool.Allocate("b", {Cpu(1000), Cpu(2000)});
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(pool.free_cpu_millis(), 2000);
  auto s = pool.Short(JobDemand::Sum({Cpu(3000, 30)}));
  EXPECT_TRUE(s.cpu);
  EXPECT_TRUE(s.memory);
  EXPECT_FALSE(s.gpu);
  pool.Release("a");
  pool.Release("a");  // twice is harmless
  EXPECT_EQ(pool.free_cpu_millis(), 8000);
  EXPECT_TRUE(pool.Allocate("b", {Cpu(1000), Cpu(2000)}).ok());
}

TEST(ResourcePoolTest, EachGpuGoesToOneReplica) {
  ResourcePool pool(
      Node(64000, 1 << 30,
           {{0, "NVIDIA_TESLA_T4", ""}, {1, "NVIDIA_TESLA_T4", ""}, {2, "NVIDIA_TESLA_T4", ""}}),
      false);
  auto a = pool.Allocate("a", {Gpus(2, "NVIDIA_TESLA_T4"), Cpu(1000)});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)[0], (std::vector<int>{0, 1}));
  EXPECT_TRUE((*a)[1].empty());
  auto b = pool.Allocate("b", {Gpus(1, "NVIDIA_TESLA_V100")});  // "any" matching
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0], (std::vector<int>{2}));
  EXPECT_EQ(pool.free_gpus(), 0);
  EXPECT_TRUE(pool.Short(JobDemand::Sum({Gpus(1, "NVIDIA_TESLA_T4")})).gpu);
  pool.Release("a");
  auto c = pool.Allocate("c", {Gpus(1, "NVIDIA_TESLA_T4"), Gpus(1, "NVIDIA_TESLA_T4")});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[0], (std::vector<int>{0}));
  EXPECT_EQ((*c)[1], (std::vector<int>{1}));
}

TEST(ResourcePoolTest, ExactMatchingKeepsTypesApart) {
  ResourcePool pool(
      Node(64000, 1 << 30, {{0, "NVIDIA_TESLA_T4", ""}, {1, "NVIDIA_TESLA_V100", ""}}), true);
  EXPECT_NE(pool.NeverFits(JobDemand::Sum({Gpus(2, "NVIDIA_TESLA_T4")}))
                .find("(gpu_type_match is exact)"),
            std::string::npos);
  auto a = pool.Allocate("a", {Gpus(1, "NVIDIA_TESLA_V100")});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)[0], (std::vector<int>{1}));
  EXPECT_TRUE(pool.Short(JobDemand::Sum({Gpus(1, "NVIDIA_TESLA_V100")})).gpu);
  EXPECT_FALSE(pool.Short(JobDemand::Sum({Gpus(1, "NVIDIA_TESLA_T4")})).gpu);
}

TEST(ResourcePoolTest, NeverFitsExplainsWhatIsMissing) {
  NodeCapacity n = Node(64000, 192LL << 30);
  n.cpus = 2;
  n.cpu_overcommit = 32;
  n.physical_memory_bytes = 24LL << 30;
  n.memory_overcommit = 8;
  ResourcePool pool(n, false);
  EXPECT_EQ(pool.NeverFits(JobDemand::Sum({Cpu(32000, 120LL << 30)})), "");
  EXPECT_EQ(pool.NeverFits(JobDemand::Sum({Gpus(1, "NVIDIA_TESLA_T4")})),
            "the job asks for 1 GPU(s) but this Trainyard has no GPUs (setting gpus)");
  std::string cpu = pool.NeverFits(JobDemand::Sum({Cpu(65000)}));
  EXPECT_EQ(cpu,
            "the job's replicas need 65 vCPUs in all but this Trainyard offers 64 (2 CPUs x "
            "cpu_overcommit 32)");
  std::string mem = pool.NeverFits(JobDemand::Sum({Cpu(1000, 200LL << 30)}));
  EXPECT_EQ(mem,
            "the job's replicas need 200.0 GiB of memory in all but this Trainyard offers 192.0 "
            "GiB (24.0 GiB x memory_overcommit 8)");
}

TEST(ResourcePoolTest, RestoreReservesWhatRecoveredReplicasHold) {
  ResourcePool pool(Node(8000, 100, {{0, "NVIDIA_TESLA_T4", ""}, {1, "NVIDIA_TESLA_T4", ""}}),
                    false);
  pool.Restore("a", {Gpus(1, "NVIDIA_TESLA_T4")}, {{1}});
  EXPECT_EQ(pool.free_gpus(), 1);
  EXPECT_EQ(pool.free_cpu_millis(), 7000);
  auto b = pool.Allocate("b", {Gpus(1, "NVIDIA_TESLA_T4")});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0], (std::vector<int>{0}));
  pool.Release("a");
  EXPECT_EQ(pool.free_gpus(), 1);
}

TEST(GpuInventoryTest, NamesMapToAcceleratorTypes) {
  EXPECT_EQ(AcceleratorTypeForGpuName("Tesla T4"), "NVIDIA_TESLA_T4");
  EXPECT_EQ(AcceleratorTypeForGpuName("Tesla V100-SXM2-16GB"), "NVIDIA_TESLA_V100");
  EXPECT_EQ(AcceleratorTypeForGpuName("NVIDIA A100-SXM4-40GB"), "NVIDIA_TESLA_A100");
  EXPECT_EQ(AcceleratorTypeForGpuName("Tesla P40"), "NVIDIA_TESLA_P40");
  EXPECT_EQ(AcceleratorTypeForGpuName("NVIDIA H200"), "NVIDIA_H200");
  EXPECT_EQ(AcceleratorTypeForGpuName("NVIDIA GeForce RTX 4090"), "NVIDIA_GEFORCE_RTX_4090");
}

TEST(GpuInventoryTest, ParsesNvidiaSmiOutput) {
  auto gpus = ParseNvidiaSmi("0, NVIDIA H200\n1, Tesla T4\n\ngarbage\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_EQ(gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(gpus[0].type, "NVIDIA_H200");
  EXPECT_EQ(gpus[1].index, 1);
  EXPECT_EQ(gpus[1].type, "NVIDIA_TESLA_T4");
}

TEST(GpuInventoryTest, ParsesConfiguredLists) {
  auto none = ParseGpuList("none");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto list = ParseGpuList("2xNVIDIA_TESLA_T4, NVIDIA_TESLA_V100");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[1].index, 1);
  EXPECT_EQ((*list)[1].type, "NVIDIA_TESLA_T4");
  EXPECT_EQ((*list)[2].type, "NVIDIA_TESLA_V100");
  auto bad = ParseGpuList("tesla t4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"tesla t4\""), std::string::npos);
}

}  // namespace
}  // namespace trainyard::scheduler
