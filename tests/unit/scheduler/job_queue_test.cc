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

}  // namespace
}  // namespace trainyard::scheduler
