#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainyard/model/job_json.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

// The hyperparameter-tuning config.yaml of Google's samples, with a jobId and labels added.
constexpr const char* kHpConfig = R"(
jobId: census_hp_1
labels:
  owner: alice
  version: 2
trainingInput:
  scaleTier: CUSTOM
  masterType: complex_model_m
  workerType: complex_model_m
  parameterServerType: large_model
  workerCount: 9
  region: us-central1
  parameterServerCount: 3
  runtimeVersion: 1.10
  pythonVersion: "3.5"
  scheduling:
    maxRunningTime: 7200s
  hyperparameters:
    goal: MAXIMIZE
    hyperparameterMetricTag: accuracy
    maxTrials: 4
    maxParallelTrials: 2
    enableTrialEarlyStopping: True
    params:
      - parameterName: first-layer-size
        type: INTEGER
        minValue: 50
        maxValue: 500
        scaleType: UNIT_LINEAR_SCALE
      - parameterName: learning-rate
        type: DOUBLE
        minValue: 0.0001
        maxValue: 0.5
        scaleType: UNIT_LOG_SCALE
      - parameterName: optimizer
        type: CATEGORICAL
        categoricalValues: [adam, sgd, 10]
      - parameterName: batch
        type: DISCRETE
        discreteValues: [16, 32.5, 64]
)";

TEST(ConfigFileTest, ConvertsGoogleStyleYaml) {
  auto r = ConfigFileToJobJson(kHpConfig);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  json j = json::parse(*r);
  EXPECT_EQ(j["jobId"], "census_hp_1");
  EXPECT_EQ(j["labels"]["version"], "2");  // map<string,string> values stay strings
  const json& ti = j["trainingInput"];
  EXPECT_EQ(ti["scaleTier"], "CUSTOM");
  EXPECT_EQ(ti["workerCount"], 9);
  EXPECT_EQ(ti["runtimeVersion"], "1.10");  // string field: the text as written
  EXPECT_EQ(ti["pythonVersion"], "3.5");
  EXPECT_EQ(ti["scheduling"]["maxRunningTime"], "7200s");
  const json& hp = ti["hyperparameters"];
  EXPECT_EQ(hp["maxTrials"], 4);
  EXPECT_EQ(hp["enableTrialEarlyStopping"], true);
  EXPECT_EQ(hp["params"][0]["minValue"], 50);
  EXPECT_DOUBLE_EQ(hp["params"][1]["minValue"].get<double>(), 0.0001);
  EXPECT_EQ(hp["params"][2]["categoricalValues"], json({"adam", "sgd", "10"}));
  EXPECT_EQ(hp["params"][3]["discreteValues"][1], 32.5);
}

TEST(ConfigFileTest, KeepsTheUsersKeySpellingAndOrder) {
  auto r = ConfigFileToJobJson(
      "training_input:\n  scale_tier: BASIC\n  region: us-east1\n"
      "job_id: x\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, R"({"training_input":{"scale_tier":"BASIC","region":"us-east1"},"job_id":"x"})");
}

TEST(ConfigFileTest, AcceptsJson) {
  auto r = ConfigFileToJobJson(R"({"trainingInput": {"region": "r", "workerCount": "3",
                                  "args": ["--a", 1]}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  json j = json::parse(*r);
  EXPECT_EQ(j["trainingInput"]["workerCount"], "3");  // quoted stays a string
  EXPECT_EQ(j["trainingInput"]["args"], json({"--a", "1"}));
}

TEST(ConfigFileTest, ConvertsUnknownKeysGenerically) {
  auto r = ConfigFileToJobJson(
      "trainingInput:\n  region: r\nextra:\n  n: 3\n  f: 1.5\n"
      "  b: false\n  s: hello\n  q: \"42\"\n  z: ~\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  json j = json::parse(*r);
  EXPECT_EQ(j["extra"]["n"], 3);
  EXPECT_EQ(j["extra"]["f"], 1.5);
  EXPECT_EQ(j["extra"]["b"], false);
  EXPECT_EQ(j["extra"]["s"], "hello");
  EXPECT_EQ(j["extra"]["q"], "42");
  EXPECT_TRUE(j["extra"]["z"].is_null());
}

TEST(ConfigFileTest, ResultIsAcceptedByCreate) {
  auto r = ConfigFileToJobJson(kHpConfig);
  ASSERT_TRUE(r.ok());
  // runtime 1.10 with Python 3.5 is a valid pair; no packages, so create must name packageUris.
  Capabilities caps{true, true, true, true};
  auto job = ParseJobForCreate(*r, "p", caps);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(job.status().violations().size(), 2u) << job.status().ToString();
  EXPECT_EQ(job.status().violations()[0].field, "trainingInput.packageUris");
  EXPECT_EQ(job.status().violations()[1].field, "trainingInput.pythonModule");
}

TEST(ConfigFileTest, ReportsBadYamlWithLine) {
  auto r = ConfigFileToJobJson("trainingInput:\n  region: r\n  args: [a, b\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("line"), std::string::npos) << r.status().message();
}

TEST(ConfigFileTest, RejectsNonMappingTopLevel) {
  for (const char* text : {"", "- a\n- b\n", "just text", "42"}) {
    auto r = ConfigFileToJobJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("mapping"), std::string::npos);
  }
}

TEST(ConfigFileTest, RejectsDuplicateKeys) {
  auto r = ConfigFileToJobJson("jobId: a\njobId: b\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace trainyard::model
