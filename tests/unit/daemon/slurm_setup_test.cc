// `executor: slurm` settings and what sinfo says of a partition.
#include "slurm_setup.h"

#include <gtest/gtest.h>

#include "config.h"

namespace trainyard::daemon {
namespace {

constexpr const char* kSinfo =
    "n1|low*|4|2000|gpu:fake:2\n"
    "n2|low*|4|2000|gpu:fake:2(S:0)\n"
    "n3|low*|8|4000|(null)\n"
    "n1|high|4|2000|gpu:fake:2\n";

TEST(SlurmSetupTest, SumsTheDefaultPartition) {
  auto t = SumSinfo(kSinfo, "");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->partition, "low");
  EXPECT_EQ(t->nodes, 3);
  EXPECT_EQ(t->cpus, 16);
  EXPECT_EQ(t->memory_mb, 8000);
  EXPECT_EQ(t->gpus, 4);
}

TEST(SlurmSetupTest, SumsANamedPartitionAndNamesTheOnesThereAre) {
  auto high = SumSinfo(kSinfo, "high");
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(high->nodes, 1);
  EXPECT_EQ(high->gpus, 2);
  auto missing = SumSinfo(kSinfo, "gpu");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "slurm.partition gpu is not a partition of this cluster (partitions: high, low)");
}

TEST(SlurmSetupTest, ConfigKeysAreCheckedAndNamed) {
  DaemonConfig c;
  EXPECT_TRUE(SetConfigValue(c, "executor", "slurm").ok());
  EXPECT_EQ(SetConfigValue(c, "executor", "k8s").message(),
            "config executor: expected local or slurm, got \"k8s\"");
  EXPECT_TRUE(SetConfigValue(c, "slurm.extra_sbatch_args", "--constraint=a100, --exclusive").ok());
  EXPECT_EQ(c.slurm.extra_sbatch_args,
            (std::vector<std::string>{"--constraint=a100", "--exclusive"}));
  // Every flag Trainyard sets, in any spelling sbatch takes: short, long, "=" or a separate
  // value, abbreviated.
  for (const char* bad : {"--time=5",
                          "-n4",
                          "--job-name=x",
                          "--output=/tmp/x",
                          "--gres=gpu:1",
                          "--partition=high",
                          "--partition high",
                          "-p high",
                          "-phigh",
                          "--part=high",
                          "--account=a",
                          "-A a",
                          "--qos=q",
                          "-q q",
                          "--cpus-per-task=2",
                          "--mem=1G",
                          "--nodes=2",
                          "--ntasks=3",
                          "--gpus-per-node=1",
                          "--mem-per-gpu=1G",
                          "--hetjob",
                          "-Qp high",
                          "-C a100 --partition=high"}) {
    Status st = SetConfigValue(c, "slurm.extra_sbatch_args", bad);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("set by Trainyard"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(SetConfigValue(c, "slurm.extra_sbatch_args", "exclusive").ok());
  EXPECT_FALSE(SetConfigValue(c, "slurm.port_range", "30000-20000").ok());
  EXPECT_FALSE(SetConfigValue(c, "slurm.poll_interval", "10").ok());
  EXPECT_FALSE(SetConfigValue(c, "slurm.cpu_scale", "0").ok());
  EXPECT_FALSE(SetConfigValue(c, "slurm.gpu_types", "NVIDIA_TESLA_T4").ok());
  EXPECT_TRUE(
      SetConfigValue(c, "slurm.gpu_types", "NVIDIA_TESLA_T4=t4,NVIDIA_TESLA_A100=a100").ok());
  auto m = ParseKeyValueList(c.slurm.gpu_types);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->at("NVIDIA_TESLA_A100"), "a100");
  EXPECT_TRUE(SetConfigValue(c, "slurm.project_accounts", "proj-a=acct-a,proj-b=acct-b").ok());
  EXPECT_EQ(ParseKeyValueList(c.slurm.project_accounts)->at("proj-b"), "acct-b");
  EXPECT_NE(SetConfigValue(c, "slurm.project_accounts", "proj-a")
                .message()
                .find("slurm.project_accounts"),
            std::string::npos);
  EXPECT_TRUE(SetConfigValue(c, "slurm.label_partitions", "debug, gpu").ok());
  EXPECT_EQ(c.slurm.label_partitions, (std::vector<std::string>{"debug", "gpu"}));
  EXPECT_FALSE(SetConfigValue(c, "slurm.label_partitions", "a b").ok());
}

TEST(SlurmSetupTest, GpuTypesMustBeOnANodeOfThePartitions) {
  EXPECT_TRUE(CheckGpuTypes(kSinfo, {"low"}, {{"NVIDIA_TESLA_T4", "fake"}}).ok());
  EXPECT_TRUE(CheckGpuTypes(kSinfo, {"low"}, {}).ok());
  Status st = CheckGpuTypes(kSinfo, {"low"}, {{"NVIDIA_TESLA_T4", "t4"}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "slurm.gpu_types: NVIDIA_TESLA_T4 maps to the GPU type t4, which no node of "
            "partition low has (their GPU types: fake)");
  // Only the partitions jobs run in count: n3 is in no partition with GPUs here.
  constexpr const char* kMixed = "n1|low*|4|2000|(null)\nn2|gpu|4|2000|gpu:a100:4(S:0-1)\n";
  EXPECT_FALSE(CheckGpuTypes(kMixed, {"low"}, {{"NVIDIA_TESLA_A100", "a100"}}).ok());
  EXPECT_TRUE(CheckGpuTypes(kMixed, {"low", "gpu"}, {{"NVIDIA_TESLA_A100", "a100"}}).ok());
  EXPECT_NE(CheckGpuTypes(kMixed, {"low"}, {{"X", "a100"}})
                .message()
                .find("(their GPU types: "
                      "none)"),
            std::string::npos);
}

TEST(SlurmSetupTest, NeedsASharedDirectory) {
  DaemonConfig c;
  c.executor = "slurm";
  auto setup = PrepareSlurm(c, "/nonexistent/jobs");
  ASSERT_FALSE(setup.ok());
  EXPECT_NE(setup.status().message().find("slurm.shared_dir"), std::string::npos);
}

// Only Slurm's words about the account (or the QOS) blame the setting; a check that fails for
// another reason (nodes not yet back after a controller restart) does not stop the daemon.
TEST(SlurmSetupTest, OnlyARefusedAccountBlamesTheAccountSetting) {
  std::string warning;
  executor::CommandResult ok;
  ok.exit_code = 0;
  EXPECT_TRUE(JudgeAccountCheck("slurm.account", "dev", "", ok, &warning).ok());
  EXPECT_EQ(warning, "");
  executor::CommandResult refused;
  refused.exit_code = 1;
  refused.err =
      "sbatch: error: Batch job submission failed: Invalid account or account/partition "
      "combination specified\n";
  Status st =
      JudgeAccountCheck("slurm.project_accounts (project nlp)", "acct-b", "", refused, &warning);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("slurm.project_accounts (project nlp): Slurm refuses the account "
                               "acct-b (",
                               0),
            0u)
      << st.message();
  executor::CommandResult qos;
  qos.exit_code = 1;
  qos.err = "sbatch: error: Batch job submission failed: Invalid qos specification\n";
  st = JudgeAccountCheck("slurm.account", "dev", "gold", qos, &warning);
  EXPECT_EQ(st.message().rfind("slurm.qos: Slurm refuses the QOS gold for the account dev", 0), 0u)
      << st.message();
  executor::CommandResult busy;
  busy.exit_code = 1;
  busy.err = "allocation failure: Requested node configuration is not available\n";
  st = JudgeAccountCheck("slurm.account", "zzz", "", busy, &warning);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_NE(warning.find("could not check the account zzz (slurm.account)"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("Requested node configuration is not available"), std::string::npos)
      << warning;
}

}  // namespace
}  // namespace trainyard::daemon
