#include "trainyard/scheduler/builtin_algorithms.h"

#include <gtest/gtest.h>

namespace trainyard::scheduler {
namespace {

TEST(BuiltInAlgorithms, RecognisesGooglesImagesWithAnyTagOrDigest) {
  const BuiltInAlgorithm* a = FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/boosted_trees:latest");
  ASSERT_NE(a, nullptr);
  EXPECT_STREQ(a->module, "trainyard_algorithms.boosted_trees");
  EXPECT_STREQ(a->framework, "XGBOOST");
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/boosted_trees"), a);
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/boosted_trees@sha256:0123abcd"), a);
  EXPECT_EQ(FindBuiltInAlgorithm("us.gcr.io/cloud-ml-algos/boosted_trees:1.0"), a);

  const BuiltInAlgorithm* d = FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/xgboost_dist:latest");
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->module, "trainyard_algorithms.xgboost_dist");
  const BuiltInAlgorithm* l = FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/linear_learner_cpu:x");
  ASSERT_NE(l, nullptr);
  EXPECT_STREQ(l->module, "trainyard_algorithms.linear_learner");
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/linear_learner_gpu")->module,
            std::string("trainyard_algorithms.linear_learner"));
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/wide_deep_learner_cpu:latest")->module,
            std::string("trainyard_algorithms.wide_deep"));
}

TEST(BuiltInAlgorithms, OtherImagesAreContainers) {
  EXPECT_EQ(FindBuiltInAlgorithm(""), nullptr);
  EXPECT_EQ(FindBuiltInAlgorithm("boosted_trees"), nullptr);
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io/my-project/boosted_trees:latest"), nullptr);
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/boosted_trees_v2:latest"), nullptr);
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/image_classification:latest"), nullptr);
  EXPECT_EQ(FindBuiltInAlgorithm("evil.io/cloud-ml-algos/boosted_trees"), nullptr);
  EXPECT_EQ(FindBuiltInAlgorithm("gcr.io.evil/cloud-ml-algos/boosted_trees"), nullptr);
  EXPECT_EQ(FindBuiltInAlgorithm("localhost/cloud-ml-algos/boosted_trees"), nullptr);
}

TEST(BuiltInAlgorithms, OutputDirIsTheJobDirOrTheTrialsSubdirectory) {
  EXPECT_EQ(BuiltInOutputDir("gs://b/out", ""), "gs://b/out");
  EXPECT_EQ(BuiltInOutputDir("gs://b/out/", ""), "gs://b/out");
  EXPECT_EQ(BuiltInOutputDir("gs://b/out//", "3"), "gs://b/out/3");
}

TEST(BuiltInAlgorithms, OutputTakesTheTrainersVersionsElseTheJobs) {
  const BuiltInAlgorithm& a = *FindBuiltInAlgorithm("gcr.io/cloud-ml-algos/boosted_trees");
  auto out = BuiltInAlgorithmOutputJson(
      a, R"({"python_version": "3.11", "runtime_version": "1.7.4", "other": 1})", "", "",
      "gs://b/out/model");
  EXPECT_EQ(out.dump(), R"({"framework":"XGBOOST","runtimeVersion":"1.7.4","pythonVersion":"3.11",)"
                        R"("modelPath":"gs://b/out/model"})");
  // Nothing recorded (or not JSON, or not strings): the job's own; no model, no modelPath.
  out = BuiltInAlgorithmOutputJson(a, "not json", "1.15", "3.7", "");
  EXPECT_EQ(out.dump(), R"({"framework":"XGBOOST","runtimeVersion":"1.15","pythonVersion":"3.7"})");
  out = BuiltInAlgorithmOutputJson(a, R"({"python_version": 3})", "", "", "");
  EXPECT_EQ(out.dump(), R"({"framework":"XGBOOST"})");
}

}  // namespace
}  // namespace trainyard::scheduler
