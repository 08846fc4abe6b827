// The cluster-environment builder: TF_CONFIG, CLUSTER_SPEC, CLOUD_ML_*, torch and CUDA variables
// from a run's tasks and addresses (compat §6).
#include "trainyard/cluster_env/cluster_env.h"

#include <gtest/gtest.h>

namespace trainyard::cluster_env {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

RunPlan CustomRun() {
  RunPlan run;
  run.tasks = {{"master", 0, "127.0.0.1:1000"},
               {"worker", 0, "127.0.0.1:1001"},
               {"worker", 1, "127.0.0.1:1002"},
               {"ps", 0, "127.0.0.1:1003"},
               {"evaluator", 0, "127.0.0.1:1004"}};
  run.project = "p";
  run.job_id = "j";
  run.training_input = json::parse(R"({"scaleTier":"CUSTOM","workerCount":"2"})");
  return run;
}

TEST(ClusterEnvTest, TfConfigIsCompactSortedAndLeavesEvaluatorsOut) {
  RunEnvironment env(CustomRun());
  const auto master = env.ForTask(0, {}, false);
  EXPECT_EQ(master.at("TF_CONFIG"),
            R"({"cluster":{"master":["127.0.0.1:1000"],"ps":["127.0.0.1:1003"],)"
            R"("worker":["127.0.0.1:1001","127.0.0.1:1002"]},"environment":"cloud",)"
            R"("job":{"scaleTier":"CUSTOM","workerCount":"2"},)"
            R"("task":{"cloud":"trainyard-j","index":0,"type":"master"}})");
  const json evaluator = json::parse(env.ForTask(4, {}, false).at("TF_CONFIG"));
  EXPECT_EQ(evaluator["task"]["type"], "evaluator");
  EXPECT_FALSE(evaluator["cluster"].contains("evaluator"));
  EXPECT_EQ(master.at("CLOUD_ML_JOB_ID"), "j");
  EXPECT_EQ(master.at("CLOUD_ML_PROJECT_ID"), "p");
  EXPECT_EQ(master.count("CLUSTER_SPEC"), 0u);
  EXPECT_EQ(master.count("CLOUD_ML_TRIAL_ID"), 0u);
}

TEST(ClusterEnvTest, ThePrimaryNameRenamesTheMasterOnly) {
  RunPlan run = CustomRun();
  run.primary = "chief";
  RunEnvironment env(run);
  const json tf = json::parse(env.ForTask(1, {}, false).at("TF_CONFIG"));
  EXPECT_TRUE(tf["cluster"].contains("chief"));
  EXPECT_FALSE(tf["cluster"].contains("master"));
  EXPECT_EQ(tf["task"]["type"], "worker");
  EXPECT_EQ(json::parse(env.ForTask(0, {}, false).at("TF_CONFIG"))["task"]["type"], "chief");
}

TEST(ClusterEnvTest, TorchRanksCoverThePrimaryAndTheWorkersOnly) {
  RunEnvironment env(CustomRun());
  const auto master = env.ForTask(0, {}, false);
  EXPECT_EQ(master.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(master.at("MASTER_PORT"), "1000");
  EXPECT_EQ(master.at("WORLD_SIZE"), "3");
  EXPECT_EQ(master.at("RANK"), "0");
  EXPECT_EQ(master.at("LOCAL_RANK"), "0");
  EXPECT_EQ(env.ForTask(2, {}, false).at("RANK"), "2");
  for (size_t ps_or_eval : {3u, 4u}) {
    const auto e = env.ForTask(ps_or_eval, {}, false);
    for (const char* name : kTorchEnvNames) EXPECT_EQ(e.count(name), 0u) << name;
  }
}

TEST(ClusterEnvTest, CudaSeesOnlyItsGpusRenumberedInsideAContainer) {
  RunEnvironment env(CustomRun());
  EXPECT_EQ(env.ForTask(0, {2, 3}, false).at("CUDA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(env.ForTask(0, {2, 3}, true).at("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(env.ForTask(0, {}, false).at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(env.ForTask(0, {}, false).at("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
}

TEST(ClusterEnvTest, ContainersGetSnakeCaseJobAndClusterSpecWithEvaluators) {
  RunPlan run = CustomRun();
  run.trial_id = "3";
  run.metric_tag = "accuracy";
  RunEnvironment env(run);
  const auto e = env.ForTask(4, {}, true);
  EXPECT_EQ(e.at("CLOUD_ML_JOB"), R"({"scale_tier":"CUSTOM","worker_count":"2"})");
  const json cs = json::parse(e.at("CLUSTER_SPEC"));
  EXPECT_EQ(cs["cluster"]["evaluator"][0], "127.0.0.1:1004");
  EXPECT_EQ(cs["cluster"]["master"][0], "127.0.0.1:1000");
  EXPECT_EQ(cs["task"], json::parse(R"({"type":"evaluator","index":0,"trial":"3"})"));
  EXPECT_EQ(cs["job"], e.at("CLOUD_ML_JOB"));
  const json tf = json::parse(e.at("TF_CONFIG"));
  EXPECT_EQ(tf["job"], e.at("CLOUD_ML_JOB"));
  EXPECT_EQ(tf["task"]["trial"], "3");
  EXPECT_EQ(e.at("CLOUD_ML_TRIAL_ID"), "3");
  EXPECT_EQ(e.at("CLOUD_ML_HP_METRIC_TAG"), "accuracy");
}

TEST(ClusterEnvTest, PythonStyleMatchesJsonDumps) {
  ordered_json j = ordered_json::object();
  j["job"] = {{"job_name", "m"}, {"args", {"caf\xc3\xa9"}}};
  j["task"] = ordered_json::object();
  EXPECT_EQ(Dump(j, JsonStyle::kPython), R"({"job": {"job_name": "m", "args": ["caf\u00e9"]}, )"
                                         R"("task": {}})");
  EXPECT_EQ(Dump(j, JsonStyle::kCompact),
            "{\"job\":{\"args\":[\"caf\xc3\xa9\"],\"job_name\":\"m\"},\"task\":{}}");
}

TEST(ClusterEnvTest, AlwaysListedRolesComeFirstEvenWhenEmpty) {
  const std::vector<Task> tasks = {{"master", 0, "localhost:1"}, {"worker", 0, "localhost:2"}};
  EXPECT_EQ(Dump(TfCluster(tasks, "chief", {"chief", "ps", "worker"}), JsonStyle::kPython),
            R"({"chief": ["localhost:1"], "ps": [], "worker": ["localhost:2"]})");
}

TEST(ClusterEnvTest, SnakeKeysRecurseIntoObjectsAndArrays) {
  EXPECT_EQ(SnakeKeys(json::parse(R"({"masterConfig":{"imageUri":"x"},"a":[{"bC":1}]})")),
            json::parse(R"({"master_config":{"image_uri":"x"},"a":[{"b_c":1}]})"));
}

TEST(RunPlanJsonTest, RoundTripsAndNamesBadFields) {
  RunPlan plan;
  plan.tasks = {{"master", 0, "vm:2000"}, {"worker", 1, ""}};
  plan.primary = "chief";
  plan.project = "p";
  plan.job_id = "j";
  plan.trial_id = "3";
  plan.metric_tag = "acc";
  plan.training_input = nlohmann::json{{"scaleTier", "CUSTOM"}};
  RunPlan back;
  std::string error;
  ASSERT_TRUE(RunPlanFromJson(RunPlanToJson(plan), &back, &error)) << error;
  EXPECT_EQ(RunPlanToJson(back), RunPlanToJson(plan));
  EXPECT_EQ(back.tasks[1].type, "worker");
  EXPECT_EQ(back.tasks[0].address, "vm:2000");
  EXPECT_FALSE(RunPlanFromJson("[]", &back, &error));
  EXPECT_FALSE(RunPlanFromJson(R"({"tasks": [{"type": "master"}]})", &back, &error));
  EXPECT_EQ(error, "run plan task 0 needs a type and an index");
  EXPECT_FALSE(RunPlanFromJson(R"({"tasks": [], "jobId": 5})", &back, &error));
  EXPECT_EQ(error, "run plan field jobId is not a string");
}

}  // namespace
}  // namespace trainyard::cluster_env
