#include "job_builder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainyard::cli {
namespace {

using json = nlohmann::json;

TrainingFlags Basic() {
  TrainingFlags f;
  f.job_id = "j1";
  f.module_name = "trainer.task";
  f.package_uris = std::vector<std::string>{"gs://b/pkg.tar.gz"};
  return f;
}

json Build(std::string_view config, const TrainingFlags& f) {
  auto r = BuildTrainingJobJson(config, f);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? json::parse(*r) : json();
}

TEST(JobBuilderTest, BuildsJobFromFlags) {
  TrainingFlags f = Basic();
  f.region = "europe-west4";
  f.job_dir = "gs://b/out";
  f.scale_tier = "BASIC_GPU";
  f.runtime_version = "2.11";
  f.python_version = "3.7";
  f.args = std::vector<std::string>{"--steps", "10"};
  f.labels = std::map<std::string, std::string>{{"team", "ml"}};
  f.enable_web_access = true;
  json j = Build("", f);
  EXPECT_EQ(j["jobId"], "j1");
  EXPECT_EQ(j["labels"]["team"], "ml");
  const json& ti = j["trainingInput"];
  EXPECT_EQ(ti["pythonModule"], "trainer.task");
  EXPECT_EQ(ti["packageUris"], json::array({"gs://b/pkg.tar.gz"}));
  EXPECT_EQ(ti["region"], "europe-west4");
  EXPECT_EQ(ti["jobDir"], "gs://b/out");
  EXPECT_EQ(ti["scaleTier"], "BASIC_GPU");
  EXPECT_EQ(ti["runtimeVersion"], "2.11");
  EXPECT_EQ(ti["pythonVersion"], "3.7");
  EXPECT_EQ(ti["args"], json::array({"--steps", "10"}));
  EXPECT_EQ(ti["enableWebAccess"], true);
}

TEST(JobBuilderTest, RegionFallsBackToConfigThenDefault) {
  TrainingFlags f = Basic();
  f.default_region = "asia-east1";
  EXPECT_EQ(Build("", f)["trainingInput"]["region"], "asia-east1");
  EXPECT_EQ(Build(R"({"trainingInput":{"region":"us-east1"}})", f)["trainingInput"]["region"],
            "us-east1");
  f.region = "us-west1";
  EXPECT_EQ(Build(R"({"trainingInput":{"region":"us-east1"}})", f)["trainingInput"]["region"],
            "us-west1");
}

TEST(JobBuilderTest, FlagsOverrideConfigFieldByField) {
  const char* config = R"({
    "jobId": "from_file", "labels": {"a": "1"},
    "trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-8",
      "workerType": "n1-standard-4", "workerCount": "4", "pythonModule": "file.task",
      "args": ["--file"],
      "masterConfig": {"imageUri": "gcr.io/p/i:1",
                       "acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_K80"}},
      "hyperparameters": {"goal": "MAXIMIZE", "maxTrials": 4}}})";
  TrainingFlags f = Basic();
  f.worker.count = 2;
  f.worker.machine_type = "n1-highcpu-16";
  f.master.accelerator = AcceleratorFlag{2, "NVIDIA_TESLA_T4"};
  json j = Build(config, f);
  EXPECT_EQ(j["jobId"], "j1");
  EXPECT_EQ(j["labels"]["a"], "1");  // no --labels: the file's stay
  const json& ti = j["trainingInput"];
  EXPECT_EQ(ti["pythonModule"], "trainer.task");
  EXPECT_EQ(ti["args"], json::array({"--file"}));  // no `--`: the file's stay
  EXPECT_EQ(ti["masterType"], "n1-standard-8");
  EXPECT_EQ(ti["workerType"], "n1-highcpu-16");
  EXPECT_EQ(ti["workerCount"], "2");
  EXPECT_EQ(ti["masterConfig"]["imageUri"], "gcr.io/p/i:1");
  EXPECT_EQ(ti["masterConfig"]["acceleratorConfig"]["count"], "2");
  EXPECT_EQ(ti["masterConfig"]["acceleratorConfig"]["type"], "NVIDIA_TESLA_T4");
  EXPECT_EQ(ti["hyperparameters"]["maxTrials"], 4);
}

TEST(JobBuilderTest, LabelsFlagReplacesFileLabels) {
  TrainingFlags f = Basic();
  f.labels = std::map<std::string, std::string>{{"b", "2"}};
  json j = Build(R"({"labels": {"a": "1"}})", f);
  EXPECT_EQ(j["labels"], json({{"b", "2"}}));
}

TEST(JobBuilderTest, EmptyUserArgsAfterDoubleDashClearFileArgs) {
  TrainingFlags f = Basic();
  f.args = std::vector<std::string>{};
  EXPECT_EQ(Build(R"({"trainingInput":{"args":["--x"]}})", f)["trainingInput"]["args"],
            json::array());
}

TEST(JobBuilderTest, KeepsConfigPackagesWithoutPackageFlags) {
  TrainingFlags f = Basic();
  f.package_uris.reset();
  json j = Build(R"({"trainingInput":{"packageUris":["gs://c/p.tar.gz"]}})", f);
  EXPECT_EQ(j["trainingInput"]["packageUris"], json::array({"gs://c/p.tar.gz"}));
}

TEST(JobBuilderTest, AcceptsSnakeCaseTopLevelKeys) {
  json j = Build(R"({"training_input":{"runtime_version_ignored":"x","region":"r1"}})", Basic());
  EXPECT_EQ(j["trainingInput"]["region"], "r1");
  EXPECT_FALSE(j.contains("training_input"));
}

TEST(JobBuilderTest, RequiresPackagesOrImage) {
  TrainingFlags f = Basic();
  f.package_uris.reset();
  auto r = BuildTrainingJobJson("", f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "If `--package-path` is not specified, at least one Python package must be "
            "specified via `--packages`.");
  f.master.image_uri = "gcr.io/p/i";
  EXPECT_TRUE(BuildTrainingJobJson("", f).ok());
}

TEST(JobBuilderTest, CustomTierNeedsMasterType) {
  TrainingFlags f = Basic();
  f.scale_tier = "CUSTOM";
  auto r = BuildTrainingJobJson("", f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--master-machine-type is required if scale-tier is set to `CUSTOM`.");
  EXPECT_TRUE(BuildTrainingJobJson(R"({"trainingInput":{"masterType":"n1-standard-4"}})", f).ok());
  // gcloud's quirk: CUSTOM from the file alone is not checked here (the server validates).
  TrainingFlags g = Basic();
  EXPECT_TRUE(BuildTrainingJobJson(R"({"trainingInput":{"scaleTier":"CUSTOM"}})", g).ok());
}

TEST(JobBuilderTest, RuntimeVersionExcludesMasterImage) {
  TrainingFlags f = Basic();
  f.runtime_version = "2.11";
  f.master.image_uri = "gcr.io/p/i";
  auto r = BuildTrainingJobJson("", f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "Only one of --master-image-uri, --runtime-version can be set.");
}

TEST(JobBuilderTest, ReplicaTypeAndCountGoTogether) {
  TrainingFlags f = Basic();
  f.worker.count = 2;
  EXPECT_FALSE(BuildTrainingJobJson("", f).ok());
  f.worker.machine_type = "n1-standard-4";
  f.worker.count = 0;
  auto r = BuildTrainingJobJson("", f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "argument --worker-count: Value must be greater than or equal to 1; received: 0");
}

TEST(JobBuilderTest, RejectsConfigThatIsNotAnObject) {
  EXPECT_FALSE(BuildTrainingJobJson("[1]", Basic()).ok());
}

TEST(StagingTest, StagingBucketUsesJobIdPrefix) {
  auto loc = GetStagingLocation("j1", "gs://stage", "gs://other/dir");
  ASSERT_TRUE(loc.ok());
  ASSERT_TRUE(loc->has_value());
  EXPECT_EQ((*loc)->bucket, "stage");
  EXPECT_EQ(StagingObjectName(**loc, "abc", "trainer-0.0.tar.gz"), "j1/abc/trainer-0.0.tar.gz");
  EXPECT_TRUE(GetStagingLocation("j1", "gs://stage/", "").ok());
}

TEST(StagingTest, JobDirFallbackUsesPackagesFolder) {
  auto loc = GetStagingLocation("j1", "", "gs://b/runs/r1/");
  ASSERT_TRUE(loc.ok() && loc->has_value());
  EXPECT_EQ((*loc)->bucket, "b");
  EXPECT_EQ(StagingObjectName(**loc, "abc", "p.tar.gz"), "runs/r1/packages/abc/p.tar.gz");
  auto root = GetStagingLocation("j1", "", "gs://b");
  EXPECT_EQ(StagingObjectName(**root, "abc", "p.tar.gz"), "packages/abc/p.tar.gz");
}

TEST(StagingTest, NoStagingForLocalJobDir) {
  auto loc = GetStagingLocation("j1", "", "/tmp/out");
  ASSERT_TRUE(loc.ok());
  EXPECT_FALSE(loc->has_value());
}

TEST(StagingTest, DefaultStagingBucketComesFromTheProject) {
  StagingLocation loc = DefaultStagingLocation("my-proj", "job_1");
  EXPECT_EQ(loc.bucket, "my-proj-trainyard-staging");
  EXPECT_EQ(loc.prefix, "job_1");
  EXPECT_EQ(DefaultStagingLocation("google-ml", "j").bucket, "elgoog-ml-trainyard-staging");
  EXPECT_EQ(DefaultStagingLocation("example.com:p", "j").bucket, "example.com-p-trainyard-staging");
  EXPECT_LE(DefaultStagingLocation(std::string(60, 'a'), "j").bucket.size(), 63u);
  EXPECT_EQ(DefaultStagingLocation("", "j").bucket, "default-trainyard-staging");
}

TEST(StagingTest, RejectsStagingBucketWithObjectPath) {
  EXPECT_FALSE(GetStagingLocation("j1", "gs://b/dir", "").ok());
  EXPECT_FALSE(GetStagingLocation("j1", "b", "").ok());
}

TEST(StagingTest, RejectsDuplicateBasenames) {
  Status s = CheckDuplicateBasenames({"a/p.tar.gz", "b/p.tar.gz", "c/q.tar.gz"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "Cannot upload multiple packages with the same filename: [p.tar.gz]");
  EXPECT_TRUE(CheckDuplicateBasenames({"a/p.tar.gz", "a/q.tar.gz"}).ok());
}

TEST(StagingTest, ParsesGcsUris) {
  auto p = ParseGcsUri("gs://b/a/b.txt");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->bucket, "b");
  EXPECT_EQ(p->object, "a/b.txt");
  EXPECT_FALSE(ParseGcsUri("gs://").has_value());
  EXPECT_FALSE(ParseGcsUri("/local").has_value());
  EXPECT_EQ(Basename("dir/x.tar.gz"), "x.tar.gz");
}

}  // namespace
}  // namespace trainyard::cli
