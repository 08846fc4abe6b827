// The queue (priority, then age; jobPosition) and the local admission strategy's verdicts.
#include "trainyard/scheduler/job_queue.h"

#include <gtest/gtest.h>

#include "trainyard/scheduler/admission.h"

namespace trainyard::scheduler {
namespace {

QueueKey Key(const std::string& id, int priority, int64_t seq) {
  return {-priority, seq, {"p", id}};
}

JobDemand Demand(int64_t cpu_millis, int gpus = 0) {
  JobDemand d;
  d.cpu_millis = cpu_millis;
  d.memory_bytes = 1 << 30;
  d.gpus = gpus;
  if (gpus > 0) d.gpus_by_type = {{"NVIDIA_TESLA_T4", gpus}};
  return d;
}

TEST(JobQueueTest, OrdersByPriorityThenAgeAndReportsPositions) {
  JobQueue q;
  q.Add(Key("low", 0, 1), Demand(1000));
  q.Add(Key("high", 500, 2), Demand(1000));
  q.Add(Key("low2", 0, 3), Demand(1000));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.Position(Key("high", 500, 2)), 1);
  EXPECT_EQ(q.Position(Key("low", 0, 1)), 2);
  EXPECT_EQ(q.Position(Key("low2", 0, 3)), 3);
  EXPECT_EQ(q.Position(Key("absent", 0, 9)), 0) << "0: not queued (compat §1)";
  std::vector<std::string> order;
  for (auto e = q.First(); e; e = q.After(e->key)) order.push_back(e->key.job.second);
  EXPECT_EQ(order, (std::vector<std::string>{"high", "low", "low2"}));
  EXPECT_TRUE(q.Remove(Key("low", 0, 1)));
  EXPECT_FALSE(q.Remove(Key("low", 0, 1)));
  EXPECT_EQ(q.Position(Key("low2", 0, 3)), 2);
  // After() works from a key that is no longer queued.
  EXPECT_EQ(q.After(Key("low", 0, 1))->key.job.second, "low2");
}

NodeCapacity Node(int64_t cpu_millis, int gpus) {
  NodeCapacity n;
  n.cpu_millis = cpu_millis;
  n.memory_bytes = 64LL << 30;
  n.cpus = static_cast<int>(cpu_millis / 1000);
  n.physical_memory_bytes = n.memory_bytes;
  for (int i = 0; i < gpus; ++i) n.gpus.push_back({i, "NVIDIA_TESLA_T4", ""});
  return n;
}

TEST(LocalAdmissionTest, CpuShortageStopsThePassGpuShortageOnlyBlocksGpuJobs) {
  auto a = NewLocalAdmission(Node(8000, 1), /*exact_gpu_type=*/false);
  ASSERT_TRUE(a->Reserve("holder", {{4000, 1 << 30, 1, "NVIDIA_TESLA_T4"}}).ok());
  a->BeginPass();
  EXPECT_EQ(a->Consider(Demand(1000, 1)), Admission::Verdict::kSkip) << "short of GPUs";
  EXPECT_EQ(a->Consider(Demand(1000, 0)), Admission::Verdict::kAdmit);
  EXPECT_EQ(a->Consider(Demand(1000, 1)), Admission::Verdict::kSkip)
      << "the GPUs stay for the first GPU job, even if they were free";
  EXPECT_EQ(a->Consider(Demand(6000, 0)), Admission::Verdict::kStop) << "short of CPU";
  a->BeginPass();
  a->Release("holder");
  EXPECT_EQ(a->Consider(Demand(1000, 1)), Admission::Verdict::kAdmit);
  EXPECT_EQ(a->Consider(Demand(1000, 5)), Admission::Verdict::kAdmit)
      << "admitted to fail: it can never fit";
  EXPECT_NE(a->NeverFits(Demand(1000, 5)), "");
}

// oversize_jobs: run_alone (the default): a gang bigger than the node waits for an idle node,
// holding back the queue, then holds the whole node with its reservation scaled down.
TEST(LocalAdmissionTest, AnOversizeGangRunsAloneOnAnIdleNode) {
  auto a = NewLocalAdmission(Node(8000, 1), /*exact_gpu_type=*/false);
  const std::vector<ReplicaDemand> big = {{6000, 40LL << 30, 1, "NVIDIA_TESLA_T4"},
                                          {6000, 40LL << 30, 0, ""}};  // 12 vCPUs, 80 GiB
  const JobDemand big_sum = JobDemand::Sum(big);
  EXPECT_EQ(a->NeverFits(big_sum), "") << "accepted at create";
  EXPECT_NE(a->Oversize(big_sum).find("12 vCPUs in all but this Trainyard offers 8"),
            std::string::npos)
      << a->Oversize(big_sum);
  EXPECT_NE(a->Oversize(big_sum).find("80.0 GiB of memory"), std::string::npos);
  EXPECT_EQ(a->Oversize(Demand(1000)), "") << "a gang that fits is not oversize";

  ASSERT_TRUE(a->Reserve("small", {{1000, 1 << 30, 0, ""}}).ok());
  a->BeginPass();
  EXPECT_EQ(a->Consider(big_sum), Admission::Verdict::kStop) << "waits for an idle node";
  EXPECT_EQ(a->Consider(Demand(1000)), Admission::Verdict::kAdmit)
      << "a new pass; the scheduler ends a pass at kStop, so nothing behind the big gang starts";
  EXPECT_FALSE(a->Fits(big_sum));
  a->Release("small");

  a->BeginPass();
  EXPECT_EQ(a->Consider(big_sum), Admission::Verdict::kAdmit);
  EXPECT_TRUE(a->Fits(big_sum));
  auto gpus = a->Reserve("big", big);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_EQ((*gpus)[0], std::vector<int>{0});
  EXPECT_TRUE((*gpus)[1].empty());
  // It holds the node: nothing is left for anyone else, and nothing is over-subscribed.
  EXPECT_GE(a->free_cpu_millis(), 0);
  EXPECT_LT(a->free_cpu_millis(), 1000);
  EXPECT_GE(a->free_memory_bytes(), 0);
  EXPECT_LT(a->free_memory_bytes(), 1LL << 30);
  EXPECT_FALSE(a->Fits(Demand(1000)));
  a->BeginPass();
  EXPECT_EQ(a->Consider(Demand(1000)), Admission::Verdict::kStop);
  a->Release("big");
  EXPECT_EQ(a->free_cpu_millis(), 8000);

  // After a daemon restart the recovered gang holds the same (scaled) share.
  a->Restore("big", big, {{0}, {}});
  EXPECT_GE(a->free_cpu_millis(), 0);
  EXPECT_FALSE(a->Fits(Demand(1000)));
  a->Release("big");

  // GPUs are never scaled: more GPUs than the node has is refused under every policy.
  const JobDemand two_gpus = JobDemand::Sum({{1000, 1 << 30, 2, "NVIDIA_TESLA_T4"}});
  EXPECT_NE(a->NeverFits(two_gpus), "");
}

TEST(LocalAdmissionTest, OversizeRefuseRefusesAtCreate) {
  auto a = NewLocalAdmission(Node(8000, 0), /*exact_gpu_type=*/false, OversizePolicy::kRefuse);
  const JobDemand big = JobDemand::Sum({{12000, 1 << 30, 0, ""}});
  EXPECT_EQ(a->NeverFits(big),
            "the job's replicas need 12 vCPUs in all but this Trainyard offers 8 (8 CPUs x "
            "cpu_overcommit 1)");
  EXPECT_EQ(a->Oversize(big), "");
  a->BeginPass();
  EXPECT_EQ(a->Consider(big), Admission::Verdict::kAdmit) << "admitted to fail, as before";
}

TEST(LocalAdmissionTest, OversizePolicyNames) {
  EXPECT_EQ(*ParseOversizePolicy("run_alone"), OversizePolicy::kRunAlone);
  EXPECT_EQ(*ParseOversizePolicy("refuse"), OversizePolicy::kRefuse);
  EXPECT_EQ(OversizePolicyName(OversizePolicy::kRefuse), std::string("refuse"));
  auto bad = ParseOversizePolicy("scale");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "must be run_alone or refuse, not \"scale\"");
}

}  // namespace
}  // namespace trainyard::scheduler
