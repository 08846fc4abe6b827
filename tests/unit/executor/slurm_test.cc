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

TEST(SlurmTest, BatchScriptTakesTheGangsOwnPartitionAndAccount) {
  SlurmOptions o;
  o.launcher_path = "/l";
  o.partition = "gpu";
  o.account = "ml";
  SlurmGangPlan plan;
  plan.name = "n";
  plan.gang_dir = "/d";
  plan.plan_path = "/d/plan.json";
  plan.components = {{1, 1, 100, ""}, {1, 2, 100, ""}};
  plan.partition = "debug";
  plan.account = "team-a";
  const std::string s = SlurmBatchScript(o, plan);
  EXPECT_EQ(s.find("--partition=gpu"), std::string::npos) << s;
  EXPECT_EQ(s.find("--account=ml"), std::string::npos) << s;
  // Both components of the heterogeneous job.
  size_t n = 0;
  for (size_t at = s.find("#SBATCH --partition=debug\n#SBATCH --account=team-a\n");
       at != std::string::npos;
       at = s.find("#SBATCH --partition=debug\n#SBATCH --account=team-a\n", at + 1)) {
    ++n;
  }
  EXPECT_EQ(n, 2u) << s;
}

TEST(SlurmTest, ParsesSacctRowsWithWhoCancelled) {
  auto rows = ParseSacct(
      "12|ty-a-j-1|NODE_FAIL|n2\n"
      "13|ty-a-k-2|CANCELLED by 1000|(null)\n"
      "14+0|ty-a-h-3|PREEMPTED|n[1-3]\n"
      "junk\n"
      "|x|COMPLETED|n1\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].state, "NODE_FAIL");
  EXPECT_EQ(rows[0].nodes, "n2");
  EXPECT_EQ(rows[0].name, "ty-a-j-1");
  EXPECT_EQ(rows[1].state, "CANCELLED");
  EXPECT_EQ(rows[1].reason, "by uid 1000");
  EXPECT_EQ(rows[1].nodes, "");
  EXPECT_EQ(rows[2].id, "14+0");
}

TEST(SlurmTest, QueuePositionCountsHigherPriorityThenLowerIdsInThePartition) {
  // As `squeue -h -t PD -o "%i|%Q|%P"` prints them; 20 is a heterogeneous job (one job).
  auto pending = ParsePendingJobs(
      "10|100|low\n"
      "11|100|low\n"
      "12|500|low\n"
      "13|100|high\n"
      "20+0|100|low\n"
      "20+1|100|low\n"
      "21|50|low,high\n"
      "bad\n");
  ASSERT_EQ(pending.size(), 6u);
  EXPECT_EQ(pending[4].id, "20");
  EXPECT_EQ(SlurmQueuePosition(pending, "low", "12"), 1);  // highest priority
  EXPECT_EQ(SlurmQueuePosition(pending, "low", "10"), 2);  // after 12; ties by lower id
  EXPECT_EQ(SlurmQueuePosition(pending, "low", "11"), 3);
  EXPECT_EQ(SlurmQueuePosition(pending, "low", "20"), 4);
  EXPECT_EQ(SlurmQueuePosition(pending, "low", "21"), 5);   // lowest priority
  EXPECT_EQ(SlurmQueuePosition(pending, "high", "13"), 1);  // its own partition only
  EXPECT_EQ(SlurmQueuePosition(pending, "high", "21"), 2);
  // Submitted after the list was taken: behind every listed job with a lower id.
  EXPECT_EQ(SlurmQueuePosition(pending, "low", "30"), 6);
  EXPECT_EQ(SlurmQueuePosition({}, "low", "30"), 1);
}

TEST(SlurmTest, ARefusedAccountOrQosNamesTheSettingThatChoseIt) {
  const std::string account_error =
      "sbatch: error: Batch job submission failed: Invalid account or account/partition "
      "combination specified";
  EXPECT_EQ(SlurmRefusal(account_error, "acct-b", "slurm.project_accounts (project nlp)", ""),
            "Slurm refused the job: " + account_error +
                " (the account acct-b, from slurm.project_accounts (project nlp), is not one "
                "Slurm lets this daemon's user submit to; `sacctmgr show associations "
                "account=acct-b` lists who may)");
  EXPECT_EQ(SlurmRefusal(account_error, "", "slurm.account", ""),
            "Slurm refused the job: " + account_error +
                " (no account was given, and Slurm wants one: set slurm.account or "
                "slurm.project_accounts)");
  const std::string qos_error =
      "sbatch: error: Batch job submission failed: Invalid qos specification";
  EXPECT_EQ(SlurmRefusal(qos_error, "dev", "slurm.account", "gold"),
            "Slurm refused the job: " + qos_error +
                " (the QOS gold, from slurm.qos, is not one the job's account dev may use)");
  // Any other refusal is Slurm's words alone.
  const std::string shape_error =
      "sbatch: error: Batch job submission failed: Requested node configuration is not available";
  EXPECT_EQ(SlurmRefusal(shape_error, "dev", "slurm.account", "gold"),
            "Slurm refused the job: " + shape_error);
}

}  // namespace
TEST(SlurmTest, AnEnvelopesWasteIsSummedOverItsReplicas) {
  // A master with 2 GPUs, 4 CPUs, 1000 MiB and two 1-CPU, 256 MiB workers without GPUs, in an
  // envelope of 4 CPUs, 1000 MiB and 2 GPUs a task.
  const std::vector<SlurmTaskShape> asked = {{4, 1000, 2}, {1, 256, 0}, {1, 256, 0}};
  EXPECT_EQ(SlurmEnvelopeWaste(asked, {4, 1000, 2}),
            "the allocation holds 6 CPUs, 1488 MiB and 4 GPUs more than the replicas asked "
            "for, in total");
  EXPECT_EQ(SlurmEnvelopeWaste({{1, 100, 0}, {2, 100, 0}}, {2, 100, 0}),
            "the allocation holds 1 CPU more than the replicas asked for, in total");
  EXPECT_EQ(SlurmEnvelopeWaste({{2, 100, 0}}, {2, 100, 0}),
            "the allocation holds nothing beyond what the replicas asked for");
}

}  // namespace trainyard::executor
