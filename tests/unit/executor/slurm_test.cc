// The Slurm executor's pure parts: squeue rows, job names, the batch script.
#include "trainyard/executor/slurm.h"

#include <gtest/gtest.h>

namespace trainyard::executor {
namespace {

TEST(SlurmTest, ParsesSqueueRowsAndSkipsMalformedOnes) {
  auto rows = ParseSqueue(
      "12|RUNNING|None|n[1-2]|ty-abcd1234-job1-00ff\n"
      "garbage\n"
      " 13|PENDING|Resources||ty-abcd1234-job2-t3-0011 \n"
      "|RUNNING|None|n1|nameless-id\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, "12");
  EXPECT_EQ(rows[0].state, "RUNNING");
  EXPECT_EQ(rows[0].name, "ty-abcd1234-job1-00ff");
  EXPECT_EQ(rows[0].nodes, "n[1-2]");
  EXPECT_EQ(rows[1].nodes, "");
  EXPECT_EQ(rows[1].reason, "Resources");
  EXPECT_EQ(rows[1].name, "ty-abcd1234-job2-t3-0011");
}

TEST(SlurmTest, KnowsWhichStatesAreFinal) {
  for (const char* live : {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"}) {
    EXPECT_FALSE(SlurmStateEnded(live)) << live;
  }
  for (const char* ended : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                            "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}) {
    EXPECT_TRUE(SlurmStateEnded(ended)) << ended;
  }
}

TEST(SlurmTest, JobNamesKeepOnlyWhatSlurmAccepts) {
  ReplicaKey key{"p", "my job/1", "7", "master", 0};
  EXPECT_EQ(SlurmJobName("ty-0000abcd-", key, "ff00"), "ty-0000abcd-my_job_1-t7-ff00");
  key.trial_id = "";
  EXPECT_EQ(SlurmJobName("ty-0000abcd-", key, "ff00"), "ty-0000abcd-my_job_1-ff00");
}

TEST(SlurmTest, BatchScriptHasTheGangShapeAndNeverTrainyardsProtectedFlagsTwice) {
  SlurmOptions o;
  o.launcher_path = "/opt/ty/trainyard-launcher";
  o.partition = "gpu";
  o.account = "ml";
  o.extra_sbatch_args = {"--constraint=a100"};
  SlurmGangPlan plan;
  plan.name = "ty-1-j-2";
  plan.gang_dir = "/shared/jobs/p/j/slurm-2";
  plan.plan_path = "/shared/jobs/p/j/slurm-2/plan.json";
  plan.components = {{3, 4, 3840, "a100:2"}};
  plan.time_minutes = 62;
  plan.signal_seconds = 100;
  const std::string s = SlurmBatchScript(o, plan);
  EXPECT_EQ(s,
            "#!/bin/bash\n"
            "#SBATCH --job-name=ty-1-j-2\n"
            "#SBATCH --output=/shared/jobs/p/j/slurm-2/driver.out\n"
            "#SBATCH --open-mode=append\n"
            "#SBATCH --no-requeue\n"
            "#SBATCH --time=62\n"
            "#SBATCH --signal=B:USR1@100\n"
            "#SBATCH --partition=gpu\n"
            "#SBATCH --account=ml\n"
            "#SBATCH --ntasks=3\n"
            "#SBATCH --cpus-per-task=4\n"
            "#SBATCH --mem-per-cpu=3840M\n"
            "#SBATCH --gpus-per-task=a100:2\n"
            "#SBATCH --constraint=a100\n"
            "exec /opt/ty/trainyard-launcher slurm-driver --plan "
            "/shared/jobs/p/j/slurm-2/plan.json\n");
  // Two shapes: a heterogeneous job, every component naming its partition again.
  plan.components = {{1, 8, 1000, "a100:2"}, {2, 2, 500, ""}};
  const std::string het = SlurmBatchScript(o, plan);
  EXPECT_NE(het.find("#SBATCH --gpus-per-task=a100:2\n#SBATCH --constraint=a100\n"
                     "#SBATCH hetjob\n#SBATCH --partition=gpu\n#SBATCH --account=ml\n"
                     "#SBATCH --ntasks=2\n#SBATCH --cpus-per-task=2\n"
                     "#SBATCH --mem-per-cpu=500M\n#SBATCH --constraint=a100\nexec "),
            std::string::npos)
      << het;
}

}  // namespace
}  // namespace trainyard::executor
