#include "trainyard/model/job_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

namespace trainyard::model {
namespace {

using nlohmann::json;

// CPU time this thread has used: what the code under test cost, however busy the machine is
// (a wall-clock threshold fails on a loaded machine that preempts the test).
std::chrono::nanoseconds ThreadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

Capabilities AllCaps() {
  Capabilities c;
  c.multi_replica = true;
  c.containers = true;
  c.tuning = true;
  c.gpus = true;
  return c;
}

json MinimalTrainingInput() {
  return {{"packageUris", {"gs://bucket/trainer-0.1.tar.gz"}},
          {"pythonModule", "trainer.task"},
          {"region", "us-central1"}};
}

json Body(const json& training_input) {
  return {{"jobId", "job_1"}, {"trainingInput", training_input}};
}

Result<Job> Parse(const json& body, const Capabilities& caps = AllCaps()) {
  return ParseJobForCreate(body.dump(), "proj", caps);
}

Result<Job> ParseTi(const json& training_input, const Capabilities& caps = AllCaps()) {
  return Parse(Body(training_input), caps);
}

// Parses a TrainingInput built from the minimal one with `patch` merged in (JSON merge patch).
Result<Job> ParseWith(const json& patch, const Capabilities& caps = AllCaps()) {
  json ti = MinimalTrainingInput();
  ti.merge_patch(patch);
  return ParseTi(ti, caps);
}

bool HasViolation(const Status& s, const std::string& field) {
  return std::any_of(s.violations().begin(), s.violations().end(),
                     [&](const FieldViolation& v) { return v.field == field; });
}

std::string ViolationText(const Status& s, const std::string& field) {
  for (const auto& v : s.violations()) {
    if (v.field == field) return v.description;
  }
  return "";
}

// Expects INVALID_ARGUMENT with a violation on `field`.
void ExpectInvalid(const Result<Job>& r, const std::string& field) {
  ASSERT_FALSE(r.ok()) << "expected a violation on " << field;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_TRUE(HasViolation(r.status(), field)) << r.status().ToString();
  EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
}

// What this Trainyard cannot run is 400 FAILED_PRECONDITION (a 5xx reads as a network failure
// in gcloud).
void ExpectUnimplemented(const Result<Job>& r, const std::string& field) {
  ASSERT_FALSE(r.ok()) << "expected FAILED_PRECONDITION on " << field;
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_TRUE(HasViolation(r.status(), field)) << r.status().ToString();
  EXPECT_EQ(HttpStatusForCode(r.status().code()), 400);
}

void ExpectOk(const Result<Job>& r) { ASSERT_TRUE(r.ok()) << r.status().ToString(); }

// ---- Parsing and canonical output -----------------------------------------------------------

TEST(ParseJobForCreateTest, AcceptsMinimalPackageJob) {
  auto r = ParseTi(MinimalTrainingInput());
  ExpectOk(r);
  EXPECT_EQ(r->project, "proj");
  EXPECT_EQ(r->job_id, "job_1");
  EXPECT_EQ(r->state, JobState::kQueued);
  EXPECT_EQ(r->create_time, 0);
  EXPECT_EQ(r->training_input_json,
            R"({"packageUris":["gs://bucket/trainer-0.1.tar.gz"],"pythonModule":"trainer.task",)"
            R"("region":"us-central1"})");
  EXPECT_EQ(r->spec.scale_tier, "BASIC");
  EXPECT_EQ(r->spec.python_module, "trainer.task");
  EXPECT_EQ(r->spec.region, "us-central1");
  ASSERT_EQ(r->spec.package_uris.size(), 1u);
  EXPECT_FALSE(r->spec.has_hyperparameters);
}

TEST(ParseJobForCreateTest, AcceptsSnakeCaseKeysAsTfxSendsThem) {
  json body = {{"job_id", "tfx_1"},
               {"training_input",
                {{"package_uris", {"gs://b/p.tar.gz"}},
                 {"python_module", "m"},
                 {"region", "us-east1"},
                 {"job_dir", "gs://b/out"},
                 {"runtime_version", "2.11"},
                 {"python_version", "3.7"},
                 {"scheduling", {{"max_running_time", "3600s"}}}}},
               {"labels", {{"pipeline", "p1"}}}};
  auto r = Parse(body);
  ExpectOk(r);
  EXPECT_EQ(r->job_id, "tfx_1");
  EXPECT_EQ(r->labels.at("pipeline"), "p1");
  EXPECT_EQ(r->training_input_json,
            R"({"packageUris":["gs://b/p.tar.gz"],"pythonModule":"m","region":"us-east1",)"
            R"("jobDir":"gs://b/out","runtimeVersion":"2.11","pythonVersion":"3.7",)"
            R"("scheduling":{"maxRunningTime":"3600s"}})");
  ASSERT_TRUE(r->spec.scheduling.max_running_time.has_value());
  EXPECT_EQ(*r->spec.scheduling.max_running_time, 3600 * kMicrosPerSecond);
  EXPECT_FALSE(r->spec.scheduling.max_wait_time.has_value());
}

TEST(ParseJobForCreateTest, AcceptsInt64AsNumberOrStringAndWritesString) {
  for (const json& count : {json(4), json("4"), json(4.0)}) {
    auto r = ParseWith({{"scaleTier", "CUSTOM"},
                        {"masterType", "complex_model_m"},
                        {"workerType", "complex_model_m"},
                        {"workerCount", count}});
    ExpectOk(r);
    EXPECT_NE(r->training_input_json.find(R"("workerCount":"4")"), std::string::npos)
        << r->training_input_json;
  }
}

TEST(ParseJobForCreateTest, RejectsNonNumericInt64WithGoogleMessage) {
  auto r = ParseWith({{"workerCount", "abc"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            R"(Invalid value at 'job.training_input.worker_count' (TYPE_INT64), "abc")");
  EXPECT_TRUE(HasViolation(r.status(), "job.training_input.worker_count"));
}

TEST(ParseJobForCreateTest, RejectsFractionalInteger) {
  auto r = ParseWith({{"workerCount", 1.5}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Invalid value at 'job.training_input.worker_count' (TYPE_INT64), 1.5");
}

TEST(ParseJobForCreateTest, RejectsInt32OutOfRange) {
  auto r = ParseWith({{"scheduling", {{"priority", 3000000000LL}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Invalid value at 'job.training_input.scheduling.priority' (TYPE_INT32), 3000000000");
}

TEST(ParseJobForCreateTest, OmitsBasicScaleTierAndOtherDefaults) {
  auto r = ParseWith({{"scaleTier", "BASIC"},
                      {"args", json::array()},
                      {"useChiefInTfConfig", false},
                      {"jobDir", ""},
                      {"scheduling", {{"priority", 0}}}});
  ExpectOk(r);
  EXPECT_EQ(r->training_input_json,
            R"({"packageUris":["gs://bucket/trainer-0.1.tar.gz"],"pythonModule":"trainer.task",)"
            R"("region":"us-central1","scheduling":{}})");
  EXPECT_EQ(r->spec.scale_tier, "BASIC");
}

TEST(ParseJobForCreateTest, KeepsNonDefaultScalarsInCanonicalForm) {
  auto r =
      ParseWith({{"scaleTier", "CUSTOM"},
                 {"masterType", "n1-standard-8"},
                 {"args", {"--epochs", "3"}},
                 {"useChiefInTfConfig", "True"},
                 {"scheduling",
                  {{"maxWaitTime", "3600.000s"}, {"priority", "7"}, {"maxRunningTime", "1.5s"}}}});
  ExpectOk(r);
  EXPECT_EQ(r->training_input_json,
            R"({"scaleTier":"CUSTOM","masterType":"n1-standard-8",)"
            R"("packageUris":["gs://bucket/trainer-0.1.tar.gz"],"pythonModule":"trainer.task",)"
            R"("args":["--epochs","3"],"region":"us-central1",)"
            R"("scheduling":{"maxRunningTime":"1.5s","maxWaitTime":"3600s","priority":7},)"
            R"("useChiefInTfConfig":true})");
  EXPECT_EQ(r->spec.scale_tier, "CUSTOM");
  EXPECT_EQ(r->spec.master.machine_type, "n1-standard-8");
  EXPECT_EQ(r->spec.scheduling.priority, 7);
  EXPECT_EQ(*r->spec.scheduling.max_wait_time, 3600 * kMicrosPerSecond);
  EXPECT_EQ(r->spec.args, (std::vector<std::string>{"--epochs", "3"}));
}

TEST(ParseJobForCreateTest, AcceptsStringEncodedBools) {
  for (const char* t : {"true", "True", "TRUE"}) {
    auto r = ParseWith({{"useChiefInTfConfig", t}});
    ExpectOk(r);
    EXPECT_NE(r->training_input_json.find(R"("useChiefInTfConfig":true)"), std::string::npos);
  }
  auto r = ParseWith({{"useChiefInTfConfig", "False"}});
  ExpectOk(r);
  EXPECT_EQ(r->training_input_json.find("useChiefInTfConfig"), std::string::npos);
  auto bad = ParseWith({{"useChiefInTfConfig", "yes"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            R"(Invalid value at 'job.training_input.use_chief_in_tf_config' (TYPE_BOOL), "yes")");
}

TEST(ParseJobForCreateTest, NormalisesEnumSpellingAndRejectsUnknownEnumValues) {
  auto r = ParseWith({{"scaleTier", "custom"}, {"masterType", "standard"}});
  ExpectOk(r);
  EXPECT_NE(r->training_input_json.find(R"("scaleTier":"CUSTOM")"), std::string::npos);
  auto bad = ParseWith({{"scaleTier", "HUGE"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Invalid value at 'job.training_input.scale_tier' "
            "(type.googleapis.com/google.cloud.ml.v1.TrainingInput.ScaleTier), \"HUGE\"");
}

TEST(ParseJobForCreateTest, RejectsUnknownFieldWithGoogleMessage) {
  json ti = MinimalTrainingInput();
  ti["job_spec"] = {{"x", 1}};
  auto r = ParseTi(ti);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "Invalid JSON payload received. Unknown name \"job_spec\" at 'job.training_input': "
            "Cannot find field.");
  ASSERT_EQ(r.status().violations().size(), 1u);
  EXPECT_EQ(r.status().violations()[0].field, "job.training_input");
  EXPECT_EQ(r.status().violations()[0].description, r.status().message());
}

TEST(ParseJobForCreateTest, RejectsUnknownTopLevelField) {
  json body = Body(MinimalTrainingInput());
  body["project"] = "p";
  auto r = Parse(body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Invalid JSON payload received. Unknown name \"project\" at 'job': Cannot find field.");
}

TEST(ParseJobForCreateTest, NamesTheNestedPathOfAnUnknownField) {
  auto r = ParseWith({{"masterConfig", {{"image", "x"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Invalid JSON payload received. Unknown name \"image\" at "
            "'job.training_input.master_config': Cannot find field.");
  auto r2 = ParseWith({{"masterConfig", {{"acceleratorConfig", {{"kind", "x"}}}}}});
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("'job.training_input.master_config.accelerator_config'"),
            std::string::npos);
  json hp = {{"params", {{{"parameterName", "lr"}, {"type", "DOUBLE"}, {"min", 0}}}}};
  auto r3 = ParseWith({{"hyperparameters", hp}});
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.status().message(),
            "Invalid JSON payload received. Unknown name \"min\" at "
            "'job.training_input.hyperparameters.params[0]': Cannot find field.");
}

TEST(ParseJobForCreateTest, ReportsEveryUnknownField) {
  auto r = ParseWith({{"foo", 1}, {"bar", 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().violations().size(), 2u);
  EXPECT_NE(r.status().message().find("\"foo\""), std::string::npos);
  EXPECT_NE(r.status().message().find("\"bar\""), std::string::npos);
}

TEST(ParseJobForCreateTest, RejectsBothSpellingsOfOneField) {
  json body = Body(MinimalTrainingInput());
  body["job_id"] = "other";
  auto r = Parse(body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("job_id"), std::string::npos);
}

TEST(ParseJobForCreateTest, RejectsDuplicateKeys) {
  std::string body =
      R"({"jobId":"a","jobId":"b","trainingInput":{"region":"us-central1","pythonModule":"m",)"
      R"("packageUris":["gs://b/p"]}})";
  auto r = ParseJobForCreate(body, "p", AllCaps());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("\"jobId\""), std::string::npos);
}

TEST(ParseJobForCreateTest, RejectsMalformedJson) {
  for (const char* body : {"", "{", "{\"jobId\":}", "[1,2]", "42", "{\"jobId\":\"a\"} x"}) {
    auto r = ParseJobForCreate(body, "p", AllCaps());
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << body;
  }
  auto r = ParseJobForCreate("{", "p", AllCaps());
  EXPECT_EQ(r.status().message().rfind("Invalid JSON payload received.", 0), 0u);
}

TEST(ParseJobForCreateTest, RejectsDeeplyNestedJsonWithoutCrashing) {
  std::string body = "{\"jobId\":\"a\",\"trainingOutput\":";
  for (int i = 0; i < 100000; ++i) body += "[";
  auto r = ParseJobForCreate(body, "p", AllCaps());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseJobForCreateTest, RejectsWrongShapes) {
  auto r = Parse({{"jobId", "a"}, {"trainingInput", "x"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Invalid value at 'job.training_input' "
            "(type.googleapis.com/google.cloud.ml.v1.TrainingInput), \"x\"");
  auto r2 = ParseWith({{"packageUris", "gs://b/p.tar.gz"}});
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(
      r2.status().message(),
      "Invalid value at 'job.training_input.package_uris' (TYPE_STRING), \"gs://b/p.tar.gz\"");
  auto r3 = ParseWith({{"runtimeVersion", 1.15}});
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.status().message(),
            "Invalid value at 'job.training_input.runtime_version' (TYPE_STRING), 1.15");
  auto r4 =
      Parse({{"jobId", "a"}, {"trainingInput", MinimalTrainingInput()}, {"labels", {{"k", 1}}}});
  ASSERT_FALSE(r4.ok());
  EXPECT_EQ(r4.status().message(), "Invalid value at 'job.labels[k]' (TYPE_STRING), 1");
}

TEST(ParseJobForCreateTest, RejectsMalformedDurationAsTypeError) {
  auto r = ParseWith({{"scheduling", {{"maxWaitTime", "2h"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Invalid value at 'job.training_input.scheduling.max_wait_time' "
            "(type.googleapis.com/google.protobuf.Duration), \"2h\"");
}

TEST(ParseJobForCreateTest, RejectsDurationsBeyondProtobufRange) {
  auto r = ParseWith({{"scheduling", {{"maxRunningTime", "99999999999999999999s"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(HasViolation(r.status(), "job.training_input.scheduling.max_running_time"));
  ExpectOk(ParseWith({{"scheduling", {{"maxRunningTime", "315576000000s"}}}}));
}

TEST(ParseJobForCreateTest, TreatsNullAsUnset) {
  json ti = MinimalTrainingInput();
  ti["args"] = nullptr;
  ti["masterConfig"] = nullptr;
  auto r2 = ParseTi(ti);
  ExpectOk(r2);
  EXPECT_EQ(r2->training_input_json.find("args"), std::string::npos);
  EXPECT_EQ(r2->training_input_json.find("masterConfig"), std::string::npos);
}

TEST(ParseJobForCreateTest, IgnoresOutputOnlyFields) {
  json body = Body(MinimalTrainingInput());
  body["state"] = "SUCCEEDED";
  body["createTime"] = "2017-12-13T01:21:04Z";
  body["etag"] = "fhCHZ7hsq10=";
  body["jobPosition"] = "3";
  body["errorMessage"] = "x";
  body["trainingOutput"] = {{"consumedMLUnits", 1.2}, {"anything", {1, 2}}};
  auto r = Parse(body);
  ExpectOk(r);
  EXPECT_EQ(r->state, JobState::kQueued);
  EXPECT_EQ(r->create_time, 0);
  EXPECT_TRUE(r->etag.empty());
  EXPECT_TRUE(r->error_message.empty());
  EXPECT_FALSE(r->consumed_ml_units_set);
}

TEST(ParseJobForCreateTest, ResubmittingAGetResponseYieldsTheSameTrainingInput) {
  auto first = ParseWith({{"scaleTier", "CUSTOM"},
                          {"masterType", "n1-highcpu-16"},
                          {"workerType", "n1-highcpu-16"},
                          {"workerCount", 2},
                          {"scheduling", {{"maxWaitTime", "7200s"}}}});
  ExpectOk(first);
  Job job = *first;
  job.create_time = 1700000000 * kMicrosPerSecond;
  job.etag = "fhCHZ7hsq10=";
  std::string got = JobToJson(job);
  auto again = ParseJobForCreate(got, "proj", AllCaps());
  ExpectOk(again);
  EXPECT_EQ(again->training_input_json, first->training_input_json);
}

// parse -> print -> parse gives the same job, and printing it again gives the same text.
void ExpectRoundTrip(const json& body) {
  auto first = ParseJobForCreate(body.dump(), "proj", AllCaps());
  ASSERT_TRUE(first.ok()) << first.status().ToString() << "\n" << body.dump();
  Job job = *first;
  job.create_time = 1700000000 * kMicrosPerSecond;
  job.etag = "fhCHZ7hsq10=";
  const std::string printed = JobToJson(job);
  auto again = ParseJobForCreate(printed, "proj", AllCaps());
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << printed;
  EXPECT_EQ(again->job_id, first->job_id);
  EXPECT_EQ(again->labels, first->labels);
  EXPECT_EQ(again->training_input_json, first->training_input_json);
  Job job2 = *again;
  job2.create_time = job.create_time;
  job2.etag = job.etag;
  EXPECT_EQ(JobToJson(job2), printed);
}

TEST(RoundTripTest, ZeroTuningBoundsSurviveTheCanonicalForm) {
  json hp = {
      {"goal", "MINIMIZE"},
      {"hyperparameterMetricTag", "loss"},
      {"maxTrials", 4},
      {"params",
       {{{"parameterName", "dropout"}, {"type", "DOUBLE"}, {"minValue", 0}, {"maxValue", 0.5}},
        {{"parameterName", "shift"}, {"type", "INTEGER"}, {"minValue", -3}, {"maxValue", 0}}}}};
  auto r = ParseWith({{"hyperparameters", hp}});
  ExpectOk(r);
  // The zero is left out of the canonical JSON (proto3) and reads back as zero.
  EXPECT_EQ(r->training_input_json.find("\"minValue\":0"), std::string::npos);
  json body = Body(MinimalTrainingInput());
  body["trainingInput"]["hyperparameters"] = hp;
  ExpectRoundTrip(body);
  auto again = ParseJobForCreate(JobToJson(*r), "proj", AllCaps());
  ExpectOk(again);
  json stored = json::parse(again->training_input_json)["hyperparameters"]["params"];
  EXPECT_FALSE(stored[0].contains("minValue"));
  EXPECT_EQ(stored[0]["maxValue"], 0.5);
  EXPECT_EQ(stored[1]["minValue"], -3);
  EXPECT_FALSE(stored[1].contains("maxValue"));
}

TEST(RoundTripTest, EveryFieldOfAPackageJobSurvives) {
  json accel = {{"count", "2"}, {"type", "NVIDIA_TESLA_T4"}};
  json ti = {
      {"scaleTier", "CUSTOM"},
      {"masterType", "n1-standard-8"},
      {"masterConfig",
       {{"acceleratorConfig", accel},
        {"diskConfig", {{"bootDiskType", "pd-ssd"}, {"bootDiskSizeGb", 200}}}}},
      {"workerType", "n1-standard-4"},
      {"workerConfig", {{"diskConfig", {{"bootDiskType", "pd-standard"}}}}},
      {"parameterServerType", "n1-standard-4"},
      {"evaluatorType", "n1-standard-4"},
      {"workerCount", "3"},
      {"parameterServerCount", 1},
      {"evaluatorCount", "1"},
      {"packageUris", {"gs://b/trainer-0.1.tar.gz", "gs://b/dep.whl"}},
      {"pythonModule", "trainer.task_2"},
      {"args", {"--epochs", "0", "", "--lr=0.0"}},
      {"hyperparameters",
       {{"goal", "MAXIMIZE"},
        {"params",
         {{{"parameterName", "lr"},
           {"type", "DOUBLE"},
           {"minValue", 0.0001},
           {"maxValue", 1},
           {"scaleType", "UNIT_LOG_SCALE"}},
          {{"parameterName", "depth"}, {"type", "INTEGER"}, {"minValue", 0}, {"maxValue", 10}},
          {{"parameterName", "opt"},
           {"type", "CATEGORICAL"},
           {"categoricalValues", {"adam", "sgd"}}},
          {{"parameterName", "batch"}, {"type", "DISCRETE"}, {"discreteValues", {0, 32.5, 64}}}}},
        {"maxTrials", 6},
        {"maxParallelTrials", 2},
        {"maxFailedTrials", 1},
        {"hyperparameterMetricTag", "accuracy"},
        {"enableTrialEarlyStopping", true},
        {"algorithm", "RANDOM_SEARCH"}}},
      {"region", "europe-west4"},
      {"jobDir", "gs://b/out"},
      {"runtimeVersion", "2.11"},
      {"pythonVersion", "3.7"},
      {"encryptionConfig", {{"kmsKeyName", "projects/p/locations/us/keyRings/r/cryptoKeys/k"}}},
      {"scheduling", {{"maxRunningTime", "7200s"}, {"maxWaitTime", "3600.5s"}, {"priority", 0}}},
      {"network", "projects/12345/global/networks/default"},
      {"serviceAccount", "sa@p.iam.gserviceaccount.com"},
      {"useChiefInTfConfig", true}};
  json body = {{"jobId", "every_field_1"},
               {"trainingInput", ti},
               {"labels", {{"owner", "me"}, {"empty", ""}}}};
  ExpectRoundTrip(body);
}

TEST(RoundTripTest, EveryFieldOfAContainerJobSurvives) {
  json replica = {{"imageUri", "gcr.io/p/trainer:1"},
                  {"containerCommand", {"python", "-m", "trainer"}},
                  {"containerArgs", {"--x", "0"}},
                  {"acceleratorConfig", {{"count", 1}, {"type", "NVIDIA_TESLA_V100"}}}};
  json ti = {{"scaleTier", "CUSTOM"},   {"masterType", "n1-standard-8"},
             {"masterConfig", replica}, {"workerType", "n1-standard-8"},
             {"workerConfig", replica}, {"workerCount", 1},
             {"region", "us-central1"}, {"scheduling", {{"maxWaitTime", "1800s"}}}};
  ExpectRoundTrip({{"jobId", "container_1"}, {"trainingInput", ti}});
}

TEST(RoundTripTest, SnakeCaseAndStringScalarsReadBackCanonically) {
  json ti = {{"scale_tier", "BASIC"},
             {"package_uris", {"gs://b/p.tar.gz"}},
             {"python_module", "m"},
             {"region", "us-east1"},
             {"use_chief_in_tf_config", "false"},
             {"scheduling", {{"max_running_time", "60s"}}}};
  ExpectRoundTrip({{"job_id", "snake_1"}, {"training_input", ti}});
}

TEST(ParseJobForCreateTest, FoldsLegacyMaxRunningTimeIntoScheduling) {
  auto r = ParseWith({{"maxRunningTime", "600s"}});
  ExpectOk(r);
  EXPECT_NE(r->training_input_json.find(R"("scheduling":{"maxRunningTime":"600s"})"),
            std::string::npos)
      << r->training_input_json;
  EXPECT_EQ(*r->spec.scheduling.max_running_time, 600 * kMicrosPerSecond);
  ExpectInvalid(
      ParseWith({{"maxRunningTime", "600s"}, {"scheduling", {{"maxRunningTime", "60s"}}}}),
      "trainingInput.maxRunningTime");
}

TEST(ParseJobForCreateTest, WritesHyperparameterSpecCanonically) {
  json hp = {
      {"goal", "MAXIMIZE"},
      {"hyperparameterMetricTag", "accuracy"},
      {"maxTrials", "4"},
      {"maxParallelTrials", 2},
      {"enableTrialEarlyStopping", true},
      {"params",
       {{{"parameterName", "learning-rate"},
         {"type", "DOUBLE"},
         {"minValue", 0.0001},
         {"maxValue", 1},
         {"scaleType", "UNIT_LOG_SCALE"}},
        {{"parameterName", "layers"},
         {"type", "INTEGER"},
         {"minValue", "0"},
         {"maxValue", 10},
         {"scaleType", "UNIT_LINEAR_SCALE"}},
        {{"parameterName", "opt"}, {"type", "CATEGORICAL"}, {"categoricalValues", {"adam", "sgd"}}},
        {{"parameterName", "batch"}, {"type", "DISCRETE"}, {"discreteValues", {0, 32.5, 64}}}}}};
  auto r = ParseWith({{"hyperparameters", hp}});
  ExpectOk(r);
  EXPECT_TRUE(r->spec.has_hyperparameters);
  json ti = json::parse(r->training_input_json);
  EXPECT_EQ(ti["hyperparameters"].dump(), json::parse(R"({"goal":"MAXIMIZE","params":[
              {"parameterName":"learning-rate","type":"DOUBLE","minValue":0.0001,"maxValue":1,
               "scaleType":"UNIT_LOG_SCALE"},
              {"parameterName":"layers","type":"INTEGER","maxValue":10,
               "scaleType":"UNIT_LINEAR_SCALE"},
              {"parameterName":"opt","type":"CATEGORICAL","categoricalValues":["adam","sgd"]},
              {"parameterName":"batch","type":"DISCRETE","discreteValues":[0,32.5,64]}],
              "maxTrials":4,"maxParallelTrials":2,"hyperparameterMetricTag":"accuracy",
              "enableTrialEarlyStopping":true})")
                                              .dump());
  // Integral doubles are written without a fraction, as proto3 JSON does.
  EXPECT_NE(r->training_input_json.find(R"("maxValue":1,)"), std::string::npos);
  EXPECT_NE(r->training_input_json.find(R"("discreteValues":[0,32.5,64])"), std::string::npos);
}

TEST(ParseJobForCreateTest, FillsContainerSpec) {
  auto r =
      ParseTi({{"region", "us-central1"},
               {"masterConfig",
                {{"imageUri", "gcr.io/p/img:1"},
                 {"containerCommand", {"python", "-m", "t"}},
                 {"diskConfig", {{"bootDiskType", "pd-standard"}, {"bootDiskSizeGb", 200}}}}}});
  ExpectOk(r);
  EXPECT_EQ(r->spec.master.image_uri, "gcr.io/p/img:1");
  EXPECT_NE(r->training_input_json.find(
                R"("diskConfig":{"bootDiskType":"pd-standard","bootDiskSizeGb":200})"),
            std::string::npos)
      << r->training_input_json;
}

// Counts are int64, which the wire may carry as a string or a number; the typed spec must see the
// value either way (a 0 here would silently shrink the cluster).
TEST(ParseJobForCreateTest, FillsReplicaRolesWhetherCountsAreStringsOrNumbers) {
  for (const json& count : {json("2"), json(2)}) {
    SCOPED_TRACE(count.dump());
    auto r = ParseWith(
        {{"scaleTier", "CUSTOM"},
         {"masterType", "n1-standard-8"},
         {"masterConfig", {{"acceleratorConfig", {{"count", count}, {"type", "NVIDIA_TESLA_T4"}}}}},
         {"workerType", "n1-highmem-16"},
         {"workerCount", count},
         {"workerConfig", {{"acceleratorConfig", {{"count", "4"}, {"type", "NVIDIA_TESLA_V100"}}}}},
         {"parameterServerType", "n1-standard-4"},
         {"parameterServerCount", count},
         {"evaluatorType", "n1-standard-16"},
         {"evaluatorCount", count},
         {"useChiefInTfConfig", true}});
    ExpectOk(r);
    const TrainingSpec& s = r->spec;
    EXPECT_EQ(s.scale_tier, "CUSTOM");
    EXPECT_EQ(s.master.machine_type, "n1-standard-8");
    EXPECT_EQ(s.master.count, 0);  // the master's count is implicit
    EXPECT_EQ(s.master.accelerator.type, "NVIDIA_TESLA_T4");
    EXPECT_EQ(s.master.accelerator.count, 2);
    EXPECT_EQ(s.worker.machine_type, "n1-highmem-16");
    EXPECT_EQ(s.worker.count, 2);
    EXPECT_EQ(s.worker.accelerator.type, "NVIDIA_TESLA_V100");
    EXPECT_EQ(s.worker.accelerator.count, 4);
    EXPECT_EQ(s.parameter_server.machine_type, "n1-standard-4");
    EXPECT_EQ(s.parameter_server.count, 2);
    EXPECT_EQ(s.parameter_server.accelerator.count, 0);
    EXPECT_TRUE(s.parameter_server.accelerator.type.empty());
    EXPECT_EQ(s.evaluator.machine_type, "n1-standard-16");
    EXPECT_EQ(s.evaluator.count, 2);
    EXPECT_TRUE(s.use_chief_in_tf_config);
  }
}

TEST(ParseJobForCreateTest, FillsReplicaRolesFromSnakeCaseKeys) {
  json body = {
      {"job_id", "tfx_2"},
      {"training_input",
       {{"scale_tier", "CUSTOM"},
        {"region", "us-east1"},
        {"master_type", "n1-standard-4"},
        {"master_config",
         {{"image_uri", "gcr.io/p/img:2"},
          {"container_command", {"python", "-m", "t"}},
          {"container_args", {"--x", "1"}},
          {"accelerator_config", {{"count", "1"}, {"type", "NVIDIA_TESLA_P4"}}}}},
        {"worker_type", "n1-standard-4"},
        {"worker_count", "3"},
        {"worker_config", {{"image_uri", "gcr.io/p/worker:2"}}},
        {"parameter_server_type", "n1-highcpu-16"},
        {"parameter_server_count", 1},
        {"evaluator_type", "n1-standard-8"},
        {"evaluator_count", "1"},
        {"evaluator_config", {{"accelerator_config", {{"count", 2}, {"type", "NVIDIA_TESLA_T4"}}}}},
        {"use_chief_in_tf_config", "true"}}}};
  auto r = Parse(body);
  ExpectOk(r);
  const TrainingSpec& s = r->spec;
  EXPECT_EQ(s.master.machine_type, "n1-standard-4");
  EXPECT_EQ(s.master.image_uri, "gcr.io/p/img:2");
  EXPECT_EQ(s.master.container_command, (std::vector<std::string>{"python", "-m", "t"}));
  EXPECT_EQ(s.master.container_args, (std::vector<std::string>{"--x", "1"}));
  EXPECT_EQ(s.master.accelerator.type, "NVIDIA_TESLA_P4");
  EXPECT_EQ(s.master.accelerator.count, 1);
  EXPECT_EQ(s.worker.count, 3);
  EXPECT_EQ(s.worker.image_uri, "gcr.io/p/worker:2");
  EXPECT_TRUE(s.worker.container_command.empty());
  EXPECT_EQ(s.parameter_server.machine_type, "n1-highcpu-16");
  EXPECT_EQ(s.parameter_server.count, 1);
  EXPECT_TRUE(s.parameter_server.image_uri.empty());  // inherits the master's when launched
  EXPECT_EQ(s.evaluator.count, 1);
  EXPECT_EQ(s.evaluator.accelerator.type, "NVIDIA_TESLA_T4");
  EXPECT_EQ(s.evaluator.accelerator.count, 2);
  EXPECT_TRUE(s.use_chief_in_tf_config);
}

TEST(ParseJobForCreateTest, LeavesReplicaRolesEmptyForABasicJob) {
  auto r = ParseTi(MinimalTrainingInput());
  ExpectOk(r);
  const TrainingSpec& s = r->spec;
  EXPECT_EQ(s.scale_tier, "BASIC");
  for (const ReplicaRoleSpec* role : {&s.master, &s.worker, &s.parameter_server, &s.evaluator}) {
    EXPECT_TRUE(role->machine_type.empty());
    EXPECT_EQ(role->count, 0);
    EXPECT_EQ(role->accelerator.count, 0);
  }
  EXPECT_FALSE(s.use_chief_in_tf_config);
}

// ---- Validation rules ---------------------------------------------------------------------------

TEST(ValidationTest, JobIdRules) {
  auto with_id = [](const json& id) {
    json body = Body(MinimalTrainingInput());
    body["jobId"] = id;
    return Parse(body);
  };
  ExpectOk(with_id("census_2024_01"));
  ExpectOk(with_id("A" + std::string(127, 'b')));
  ExpectInvalid(with_id(""), "jobId");
  ExpectInvalid(with_id("1job"), "jobId");
  ExpectInvalid(with_id("_job"), "jobId");
  ExpectInvalid(with_id("my-job"), "jobId");
  ExpectInvalid(with_id("A" + std::string(128, 'b')), "jobId");
  json body = Body(MinimalTrainingInput());
  body.erase("jobId");
  auto r = Parse(body);
  ExpectInvalid(r, "jobId");
  EXPECT_NE(ViolationText(r.status(), "jobId").find("required"), std::string::npos);
}

TEST(ValidationTest, ValidateJobIdDirectly) {
  EXPECT_TRUE(ValidateJobId("abc_1").ok());
  EXPECT_EQ(ValidateJobId("").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateJobId("a b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateJobId("9").code(), StatusCode::kInvalidArgument);
}

TEST(ValidationTest, LabelRules) {
  EXPECT_TRUE(ValidateLabels({{"owner", "alice"}, {"team-a_1", ""}, {"k", "v-1_2"}}).ok());
  EXPECT_TRUE(ValidateLabels({{"ключ", "значение"}, {"ラベル", "値"}, {"café", "ñandú"}}).ok());
  EXPECT_TRUE(ValidateLabels({{std::string(63, 'k'), std::string(63, 'v')}}).ok());
  EXPECT_FALSE(ValidateLabels({{"Owner", "alice"}}).ok());
  EXPECT_FALSE(ValidateLabels({{"1owner", "a"}}).ok());
  EXPECT_FALSE(ValidateLabels({{"", "a"}}).ok());
  EXPECT_FALSE(ValidateLabels({{"owner", "Alice"}}).ok());
  EXPECT_FALSE(ValidateLabels({{"owner", "a.b"}}).ok());
  EXPECT_FALSE(ValidateLabels({{"Ключ", "a"}}).ok());  // upper-case Cyrillic
  EXPECT_FALSE(ValidateLabels({{std::string(64, 'k'), "v"}}).ok());
  EXPECT_FALSE(ValidateLabels({{"k", std::string(64, 'v')}}).ok());
  EXPECT_FALSE(ValidateLabels({{"k", "\xff"}}).ok());
  std::map<std::string, std::string> many;
  for (int i = 0; i < 64; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_TRUE(ValidateLabels(many).ok());
  many["k64"] = "v";
  Status s = ValidateLabels(many);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("64"), std::string::npos);
}

TEST(ValidationTest, LabelsAreValidatedOnCreate) {
  json body = Body(MinimalTrainingInput());
  body["labels"] = {{"Owner", "alice"}};
  ExpectInvalid(Parse(body), "labels");
  body["labels"] = {{"owner", "alice"}};
  ExpectOk(Parse(body));
}

TEST(ValidationTest, TrainingInputAndRegionAreRequired) {
  ExpectInvalid(Parse({{"jobId", "a"}}), "trainingInput");
  json ti = MinimalTrainingInput();
  ti.erase("region");
  ExpectInvalid(ParseTi(ti), "trainingInput.region");
}

TEST(ValidationTest, RegionMustBeATrainingRegion) {
  ExpectOk(ParseWith({{"region", "asia-east1"}}));
  auto r = ParseWith({{"region", "mars-north1"}});
  ExpectInvalid(r, "trainingInput.region");
  EXPECT_NE(ViolationText(r.status(), "trainingInput.region").find("us-central1"),
            std::string::npos);
  ExpectInvalid(ParseWith({{"region", "US-CENTRAL1"}}), "trainingInput.region");
}

TEST(ValidationTest, PythonModuleMustBeAModuleName) {
  ExpectOk(ParseWith({{"pythonModule", "trainer"}}));
  ExpectOk(ParseWith({{"pythonModule", "_pkg.sub_2.task"}}));
  for (const char* bad : {"trainer/task.py", "trainer.", ".task", "a..b", "2fast.task",
                          "trainer task", "-m", "trainer.task;rm"}) {
    auto r = ParseWith({{"pythonModule", bad}});
    ExpectInvalid(r, "trainingInput.pythonModule");
    EXPECT_NE(ViolationText(r.status(), "trainingInput.pythonModule").find("module name"),
              std::string::npos)
        << bad;
  }
}

TEST(ValidationTest, JsonErrorsNameWhereTheyAre) {
  std::string deep = R"({"jobId":"a","trainingInput":{"args":)";
  for (int i = 0; i < 100; ++i) deep += "[";
  auto r = ParseJobForCreate(deep, "p", AllCaps());
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.status().violations().size(), 1u);
  EXPECT_EQ(r.status().violations()[0].field.rfind("trainingInput.args[0][0]", 0), 0u)
      << r.status().violations()[0].field;
  EXPECT_NE(r.status().message().find("Nesting deeper than 64 levels at 'trainingInput.args"),
            std::string::npos)
      << r.status().message();

  std::string bad_utf8 =
      "{\"jobId\":\"a\",\"trainingInput\":{\"region\":\"us-central1\","
      "\"pythonModule\":\"tr\xff\xfeiner\"}}";
  r = ParseJobForCreate(bad_utf8, "p", AllCaps());
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.status().violations().size(), 1u);
  EXPECT_EQ(r.status().violations()[0].field, "trainingInput.pythonModule");
  EXPECT_NE(r.status().message().find("UTF-8"), std::string::npos) << r.status().message();

  r = ParseJobForCreate(R"({"jobId":"a","trainingInput":{"args":["x", 1, ]}})", "p", AllCaps());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().violations()[0].field, "trainingInput.args[1]");

  r = ParseJobForCreate(R"({"jobId":"a","labels":{"k":"1","k":"2"}})", "p", AllCaps());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().violations()[0].field, "labels.k");
}

TEST(ValidationTest, SchedulingRules) {
  ExpectOk(ParseWith({{"scheduling", {{"maxWaitTime", "1800s"}}}}));
  ExpectInvalid(ParseWith({{"scheduling", {{"maxWaitTime", "60s"}}}}),
                "trainingInput.scheduling.maxWaitTime");
  ExpectInvalid(ParseWith({{"scheduling", {{"maxWaitTime", "1799.5s"}}}}),
                "trainingInput.scheduling.maxWaitTime");
  ExpectOk(ParseWith({{"scheduling", {{"priority", 1000}}}}));
  ExpectInvalid(ParseWith({{"scheduling", {{"priority", 1001}}}}),
                "trainingInput.scheduling.priority");
  ExpectInvalid(ParseWith({{"scheduling", {{"priority", -1}}}}),
                "trainingInput.scheduling.priority");
  ExpectInvalid(ParseWith({{"scheduling", {{"maxRunningTime", "0s"}}}}),
                "trainingInput.scheduling.maxRunningTime");
}

TEST(ValidationTest, PackageRules) {
  json uris = json::array();
  for (int i = 0; i < 100; ++i) uris.push_back("gs://b/p" + std::to_string(i) + ".tar.gz");
  ExpectOk(ParseWith({{"packageUris", uris}}));
  uris.push_back("gs://b/extra.tar.gz");
  ExpectInvalid(ParseWith({{"packageUris", uris}}), "trainingInput.packageUris");
  ExpectInvalid(ParseWith({{"packageUris", json::array()}}), "trainingInput.packageUris");
  ExpectInvalid(ParseWith({{"packageUris", {""}}}), "trainingInput.packageUris[0]");
  json ti = MinimalTrainingInput();
  ti.erase("pythonModule");
  ExpectInvalid(ParseTi(ti), "trainingInput.pythonModule");
  // A custom-container job needs neither.
  ExpectOk(ParseTi({{"region", "us-central1"}, {"masterConfig", {{"imageUri", "gcr.io/p/i"}}}}));
}

TEST(ValidationTest, RuntimeVersionAndImageAreExclusive) {
  ExpectOk(ParseWith({{"runtimeVersion", "2.11"}}));
  ExpectInvalid(
      ParseWith({{"runtimeVersion", "2.11"}, {"masterConfig", {{"imageUri", "gcr.io/p/i"}}}}),
      "trainingInput.runtimeVersion");
  ExpectInvalid(ParseWith({{"runtimeVersion", "latest"}}), "trainingInput.runtimeVersion");
}

TEST(ValidationTest, PythonVersionMustSuitRuntime) {
  struct Case {
    const char* runtime;
    const char* python;
    bool ok;
  };
  const Case cases[] = {
      {"1.15", "3.7", true}, {"1.15", "2.7", true},   {"1.14", "3.5", true},
      {"1.4", "3.5", true},  {"2.11", "3.7", true},   {"2.11", "3.11", true},
      {"2.1", "3.8", true},  {"1.14", "3.7", false},  {"1.15", "3.5", false},
      {"2.1", "2.7", false}, {"1.15", "3.11", false}, {"2.11", "3.6", false},
      {"2.11", "3", false},  {"", "3.7", true},       {"", "2.7", true},
      {"", "3.4", false},
  };
  for (const Case& c : cases) {
    json patch = {{"pythonVersion", c.python}};
    if (*c.runtime != '\0') patch["runtimeVersion"] = c.runtime;
    auto r = ParseWith(patch);
    if (c.ok) {
      EXPECT_TRUE(r.ok()) << c.runtime << "/" << c.python << ": " << r.status().ToString();
    } else {
      ASSERT_FALSE(r.ok()) << c.runtime << "/" << c.python;
      EXPECT_TRUE(HasViolation(r.status(), "trainingInput.pythonVersion")) << r.status().ToString();
    }
  }
}

TEST(ValidationTest, CountsAndAcceleratorsAreBounded) {
  ExpectInvalid(ParseWith({{"scaleTier", "CUSTOM"},
                           {"masterType", "standard"},
                           {"workerType", "standard"},
                           {"workerCount", "1000000000"}}),
                "trainingInput.workerCount");
  ExpectOk(ParseWith({{"scaleTier", "CUSTOM"},
                      {"masterType", "standard"},
                      {"workerType", "standard"},
                      {"workerCount", 1000}}));
  ExpectInvalid(
      ParseWith({{"scaleTier", "CUSTOM"},
                 {"masterType", "n1-standard-4"},
                 {"masterConfig",
                  {{"acceleratorConfig", {{"type", "NVIDIA_TESLA_T4"}, {"count", "17"}}}}}}),
      "trainingInput.masterConfig.acceleratorConfig.count");
  ExpectInvalid(
      ParseWith({{"scaleTier", "CUSTOM"},
                 {"masterType", "a2-highgpu-1g"},
                 {"masterConfig",
                  {{"acceleratorConfig", {{"type", "NVIDIA_TESLA_T4"}, {"count", "2"}}}}}}),
      "trainingInput.masterConfig.acceleratorConfig");
}

TEST(ValidationTest, ImageUrisMustBeImageReferences) {
  // What the engines would refuse too (src/registry/image_reference.h), with the reason.
  for (const char* bad :
       {"--privileged", "-v=/:/host", "img with space", "img;rm", "gcr.io/Proj/img:1",
        "localhost/trainer@sha256:abc", "gcr.io/p/img:", "localhost:99999/img"}) {
    ExpectInvalid(ParseWith({{"runtimeVersion", nullptr}, {"masterConfig", {{"imageUri", bad}}}}),
                  "trainingInput.masterConfig.imageUri");
  }
  auto upper =
      ParseWith({{"runtimeVersion", nullptr}, {"masterConfig", {{"imageUri", "gcr.io/P/i"}}}});
  ASSERT_FALSE(upper.ok());
  EXPECT_NE(upper.status().violations()[0].description.find("must be lower case"),
            std::string::npos)
      << upper.status().violations()[0].description;
  const std::string digest = "localhost/trainer@sha256:" + std::string(64, 'a');
  for (const std::string& good : {std::string("gcr.io/p/img:1"), digest, std::string("trainer"),
                                  std::string("us-central1-docker.pkg.dev/p/r/img:v1.2")}) {
    auto r = ParseWith({{"runtimeVersion", nullptr}, {"masterConfig", {{"imageUri", good}}}});
    EXPECT_FALSE(HasViolation(r.status(), "trainingInput.masterConfig.imageUri")) << good;
  }
}

TEST(ValidationTest, CountsOnlyWithCustomAndNeedTheirTypes) {
  ExpectInvalid(ParseWith({{"workerCount", 2}}), "trainingInput.workerCount");
  ExpectInvalid(ParseWith({{"workerType", "standard"}}), "trainingInput.workerType");
  ExpectInvalid(ParseWith({{"scaleTier", "CUSTOM"}}), "trainingInput.masterType");
  ExpectInvalid(
      ParseWith({{"scaleTier", "CUSTOM"}, {"masterType", "standard"}, {"workerCount", 2}}),
      "trainingInput.workerType");
  ExpectInvalid(
      ParseWith({{"scaleTier", "CUSTOM"}, {"masterType", "standard"}, {"parameterServerCount", 1}}),
      "trainingInput.parameterServerType");
  ExpectInvalid(
      ParseWith({{"scaleTier", "CUSTOM"}, {"masterType", "standard"}, {"evaluatorCount", 1}}),
      "trainingInput.evaluatorType");
  ExpectInvalid(
      ParseWith({{"scaleTier", "CUSTOM"}, {"masterType", "standard"}, {"workerCount", -1}}),
      "trainingInput.workerCount");
  ExpectOk(ParseWith({{"scaleTier", "CUSTOM"},
                      {"masterType", "standard"},
                      {"workerType", "standard"},
                      {"parameterServerType", "large_model"},
                      {"evaluatorType", "complex_model_s"},
                      {"workerCount", 9},
                      {"parameterServerCount", "3"},
                      {"evaluatorCount", 1}}));
}

TEST(ValidationTest, MachineTypeRules) {
  auto custom = [](const json& extra) {
    json patch = {{"scaleTier", "CUSTOM"}};
    patch.merge_patch(extra);
    return ParseWith(patch);
  };
  ExpectOk(custom({{"masterType", "complex_model_l_v100"}}));
  ExpectOk(custom({{"masterType", "n1-highmem-96"}}));
  ExpectOk(custom({{"masterType", "a2-highgpu-1g"}}));
  ExpectOk(custom({{"masterType", "a2-megagpu-16g"}}));
  ExpectInvalid(custom({{"masterType", "n1-standard-3"}}), "trainingInput.masterType");
  ExpectInvalid(custom({{"masterType", "huge"}}), "trainingInput.masterType");
  ExpectInvalid(custom({{"masterType", "standard"}, {"workerType", "n1-standard-8"}}),
                "trainingInput.workerType");
  ExpectInvalid(custom({{"masterType", "n1-standard-8"}, {"parameterServerType", "large_model"}}),
                "trainingInput.parameterServerType");
}

TEST(ValidationTest, AcceleratorRules) {
  auto with_acc = [](const std::string& type, const json& acc) {
    return ParseWith({{"scaleTier", "CUSTOM"},
                      {"masterType", type},
                      {"masterConfig", {{"acceleratorConfig", acc}}}});
  };
  ExpectOk(with_acc("n1-standard-8", {{"count", "1"}, {"type", "NVIDIA_TESLA_T4"}}));
  auto r = with_acc("n1-standard-8", {{"count", 2}, {"type", "NVIDIA_TESLA_V100"}});
  ExpectOk(r);
  EXPECT_NE(r->training_input_json.find(
                R"("masterConfig":{"acceleratorConfig":{"count":"2","type":"NVIDIA_TESLA_V100"}})"),
            std::string::npos)
      << r->training_input_json;
  ExpectInvalid(with_acc("standard_gpu", {{"count", 1}, {"type", "NVIDIA_TESLA_K80"}}),
                "trainingInput.masterConfig.acceleratorConfig");
  ExpectInvalid(with_acc("n1-standard-8", {{"count", 0}, {"type", "NVIDIA_TESLA_T4"}}),
                "trainingInput.masterConfig.acceleratorConfig.count");
  ExpectInvalid(with_acc("n1-standard-8", {{"count", 1}}),
                "trainingInput.masterConfig.acceleratorConfig.type");
  ExpectInvalid(ParseWith({{"masterConfig",
                            {{"acceleratorConfig", {{"count", 1}, {"type", "NVIDIA_TESLA_T4"}}}}}}),
                "trainingInput.masterConfig.acceleratorConfig");
  auto gcloud_msg = with_acc("n1-standard-8", {{"count", -1}, {"type", "NVIDIA_TESLA_T4"}});
  EXPECT_NE(
      gcloud_msg.status().message().find("The count of the accelerator must be greater than 0"),
      std::string::npos);
}

TEST(ValidationTest, TpusAreRefusedAsInvalidEvenWithAllCapabilities) {
  ExpectInvalid(ParseWith({{"scaleTier", "BASIC_TPU"}}), "trainingInput.scaleTier");
  ExpectInvalid(ParseWith({{"scaleTier", "CUSTOM"},
                           {"masterType", "standard"},
                           {"workerType", "cloud_tpu"},
                           {"workerCount", 1}}),
                "trainingInput.workerType");
  ExpectInvalid(
      ParseWith({{"scaleTier", "CUSTOM"},
                 {"masterType", "n1-standard-8"},
                 {"masterConfig", {{"acceleratorConfig", {{"count", 8}, {"type", "TPU_V3"}}}}}}),
      "trainingInput.masterConfig.acceleratorConfig.type");
  auto r = ParseWith({{"workerConfig", {{"tpuTfVersion", "1.15"}}}});
  ExpectInvalid(r, "trainingInput.workerConfig.tpuTfVersion");
  EXPECT_NE(r.status().message().find("TPU"), std::string::npos);
}

TEST(ValidationTest, ContainerCommandRules) {
  json ti = {{"region", "us-central1"},
             {"masterConfig", {{"imageUri", "gcr.io/p/i"}, {"containerArgs", {"--x"}}}}};
  ExpectOk(ParseTi(ti));
  ti["args"] = {"--y"};
  ExpectInvalid(ParseTi(ti), "trainingInput.args");
  ExpectInvalid(ParseWith({{"masterConfig", {{"containerCommand", {"python"}}}}}),
                "trainingInput.masterConfig.containerCommand");
  // Workers inherit the master's image, so their command is fine.
  ExpectOk(ParseTi({{"region", "us-central1"},
                    {"scaleTier", "CUSTOM"},
                    {"masterType", "standard"},
                    {"workerType", "standard"},
                    {"workerCount", 1},
                    {"masterConfig", {{"imageUri", "gcr.io/p/i"}}},
                    {"workerConfig", {{"containerCommand", {"worker"}}}}}));
}

TEST(ValidationTest, EnvironmentFieldFormats) {
  ExpectOk(ParseWith(
      {{"network", "projects/12345/global/networks/default"},
       {"serviceAccount", "sa@p.iam.gserviceaccount.com"},
       {"encryptionConfig", {{"kmsKeyName", "projects/p/locations/us/keyRings/r/cryptoKeys/k"}}}}));
  ExpectInvalid(ParseWith({{"network", "projects/my-proj/global/networks/default"}}),
                "trainingInput.network");
  ExpectInvalid(ParseWith({{"serviceAccount", "nobody"}}), "trainingInput.serviceAccount");
  ExpectInvalid(ParseWith({{"encryptionConfig", {{"kmsKeyName", "projects/p/keys/k"}}}}),
                "trainingInput.encryptionConfig.kmsKeyName");
  ExpectInvalid(ParseWith({{"encryptionConfig", json::object()}}),
                "trainingInput.encryptionConfig.kmsKeyName");
  ExpectInvalid(ParseWith({{"masterConfig", {{"diskConfig", {{"bootDiskType", "ssd"}}}}}}),
                "trainingInput.masterConfig.diskConfig.bootDiskType");
}

Result<Job> ParseHp(const json& hp) { return ParseWith({{"hyperparameters", hp}}); }

TEST(ValidationTest, HyperparameterRules) {
  const std::string p0 = "trainingInput.hyperparameters.params[0]";
  const std::string p1 = "trainingInput.hyperparameters.params[1]";
  json good_double = {
      {"parameterName", "lr"}, {"type", "DOUBLE"}, {"minValue", 0.01}, {"maxValue", 0.1}};
  ExpectOk(ParseHp({{"params", {good_double}}}));
  ExpectInvalid(ParseHp({{"maxTrials", 4}}), "trainingInput.hyperparameters.params");
  ExpectInvalid(ParseHp({{"params", {good_double, good_double}}}), p1 + ".parameterName");
  ExpectInvalid(ParseHp({{"params", {{{"type", "DOUBLE"}, {"minValue", 0}, {"maxValue", 1}}}}}),
                p0 + ".parameterName");
  ExpectInvalid(ParseHp({{"params", {{{"parameterName", "x"}, {"minValue", 0}, {"maxValue", 1}}}}}),
                p0 + ".type");
  // An absent bound is 0 (proto3); both absent is an error.
  ExpectOk(ParseHp({{"params", {{{"parameterName", "x"}, {"type", "DOUBLE"}, {"maxValue", 1}}}}}));
  ExpectInvalid(ParseHp({{"params", {{{"parameterName", "x"}, {"type", "DOUBLE"}}}}}),
                p0 + ".minValue");
  ExpectInvalid(
      ParseHp(
          {{"params",
            {{{"parameterName", "x"}, {"type", "INTEGER"}, {"minValue", 0.5}, {"maxValue", 4}}}}}),
      p0 + ".minValue");
  ExpectInvalid(
      ParseHp({{"params",
                {{{"parameterName", "x"}, {"type", "DOUBLE"}, {"minValue", 2}, {"maxValue", 1}}}}}),
      p0 + ".maxValue");
  ExpectInvalid(ParseHp({{"params", {{{"parameterName", "x"}, {"type", "CATEGORICAL"}}}}}),
                p0 + ".categoricalValues");
  ExpectInvalid(ParseHp({{"params",
                          {{{"parameterName", "x"},
                            {"type", "CATEGORICAL"},
                            {"categoricalValues", {"a"}},
                            {"minValue", 1}}}}}),
                p0 + ".minValue");
  ExpectInvalid(ParseHp({{"params",
                          {{{"parameterName", "x"},
                            {"type", "CATEGORICAL"},
                            {"categoricalValues", {"a", "a"}}}}}}),
                p0 + ".categoricalValues");
  ExpectOk(
      ParseHp({{"params",
                {{{"parameterName", "x"}, {"type", "DISCRETE"}, {"discreteValues", {1, 2, 4}}}}}}));
  ExpectInvalid(
      ParseHp({{"params",
                {{{"parameterName", "x"}, {"type", "DISCRETE"}, {"discreteValues", {1, 4, 2}}}}}}),
      p0 + ".discreteValues");
  ExpectInvalid(
      ParseHp({{"params",
                {{{"parameterName", "x"}, {"type", "DISCRETE"}, {"discreteValues", {1, 1}}}}}}),
      p0 + ".discreteValues");
  json many = json::array();
  for (int i = 0; i < 1001; ++i) many.push_back(i);
  ExpectInvalid(
      ParseHp(
          {{"params", {{{"parameterName", "x"}, {"type", "DISCRETE"}, {"discreteValues", many}}}}}),
      p0 + ".discreteValues");
  ExpectInvalid(ParseHp({{"params",
                          {{{"parameterName", "x"},
                            {"type", "DOUBLE"},
                            {"minValue", 0},
                            {"maxValue", 1},
                            {"scaleType", "UNIT_LOG_SCALE"}}}}}),
                p0 + ".minValue");
  ExpectInvalid(ParseHp({{"params",
                          {{{"parameterName", "x"},
                            {"type", "DISCRETE"},
                            {"discreteValues", {0, 1}},
                            {"scaleType", "UNIT_REVERSE_LOG_SCALE"}}}}}),
                p0 + ".discreteValues");
  ExpectInvalid(ParseHp({{"algorithm", "GRID_SEARCH"}, {"params", {good_double}}}), p0 + ".type");
  ExpectOk(ParseHp(
      {{"algorithm", "GRID_SEARCH"},
       {"params",
        {{{"parameterName", "x"}, {"type", "INTEGER"}, {"minValue", 1}, {"maxValue", 4}}}}}));
  ExpectInvalid(ParseHp({{"maxTrials", -1}, {"params", {good_double}}}),
                "trainingInput.hyperparameters.maxTrials");
  ExpectInvalid(ParseHp({{"maxParallelTrials", -1}, {"params", {good_double}}}),
                "trainingInput.hyperparameters.maxParallelTrials");
  ExpectInvalid(ParseHp({{"resumePreviousJobId", "bad id"}, {"params", {good_double}}}),
                "trainingInput.hyperparameters.resumePreviousJobId");
  ExpectInvalid(ParseHp({{"params",
                          {{{"parameterName", "x"},
                            {"type", "DOUBLE"},
                            {"minValue", 0},
                            {"maxValue", 1},
                            {"categoricalValues", {"a"}}}}}}),
                p0 + ".categoricalValues");
}

TEST(ValidationTest, CollectsEveryViolation) {
  json body = {
      {"jobId", "9bad"},
      {"labels", {{"Bad", "x"}}},
      {"trainingInput",
       {{"scheduling", {{"maxWaitTime", "10s"}, {"priority", 5000}}}, {"workerCount", 3}}}};
  auto r = Parse(body, Capabilities{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  for (const char* field :
       {"jobId", "labels", "trainingInput.region", "trainingInput.scheduling.maxWaitTime",
        "trainingInput.scheduling.priority", "trainingInput.workerCount",
        "trainingInput.packageUris", "trainingInput.pythonModule"}) {
    EXPECT_TRUE(HasViolation(r.status(), field)) << field << "\n" << r.status().message();
    EXPECT_NE(r.status().message().find(std::string("Field: ") + field + " Error: "),
              std::string::npos)
        << field;
  }
}

// ---- Capabilities -------------------------------------------------------------------------------

TEST(CapabilitiesTest, SingleReplicaJobsRunWithoutCapabilities) {
  ExpectOk(ParseTi(MinimalTrainingInput(), Capabilities{}));
  ExpectOk(ParseWith({{"scaleTier", "CUSTOM"}, {"masterType", "n1-highmem-8"}}, Capabilities{}));
  ExpectOk(ParseWith({{"scaleTier", "CUSTOM"},
                      {"masterType", "standard"},
                      {"workerType", "standard"},
                      {"workerCount", 0}},
                     Capabilities{}));
}

TEST(CapabilitiesTest, RefusesMultiReplicaJobs) {
  auto r = ParseWith({{"scaleTier", "CUSTOM"},
                      {"masterType", "standard"},
                      {"workerType", "standard"},
                      {"workerCount", 2}},
                     Capabilities{});
  ExpectUnimplemented(r, "trainingInput.workerCount");
  EXPECT_NE(r.status().message().find("Trainyard does not run multi-replica jobs yet"),
            std::string::npos);
  EXPECT_NE(r.status().message().find("trainingInput.workerCount"), std::string::npos);
  ExpectUnimplemented(ParseWith({{"scaleTier", "STANDARD_1"}}, Capabilities{}),
                      "trainingInput.scaleTier");
  ExpectUnimplemented(ParseWith({{"scaleTier", "PREMIUM_1"}}, Capabilities{}),
                      "trainingInput.scaleTier");
  ExpectUnimplemented(ParseWith({{"scaleTier", "CUSTOM"},
                                 {"masterType", "standard"},
                                 {"parameterServerType", "standard"},
                                 {"parameterServerCount", 1}},
                                Capabilities{}),
                      "trainingInput.parameterServerCount");
  Capabilities caps;
  caps.multi_replica = true;
  ExpectOk(ParseWith({{"scaleTier", "STANDARD_1"}}, caps));
}

TEST(CapabilitiesTest, RefusesContainers) {
  auto r = ParseTi({{"region", "us-central1"}, {"masterConfig", {{"imageUri", "gcr.io/p/i"}}}},
                   Capabilities{});
  ExpectUnimplemented(r, "trainingInput.masterConfig.imageUri");
  ExpectUnimplemented(
      ParseTi({{"region", "us-central1"},
               {"masterConfig", {{"imageUri", "gcr.io/p/i"}, {"containerArgs", {"a"}}}}},
              Capabilities{}),
      "trainingInput.masterConfig.containerArgs");
}

TEST(CapabilitiesTest, RefusesTuning) {
  json hp = {{"params",
              {{{"parameterName", "lr"}, {"type", "DOUBLE"}, {"minValue", 0.1}, {"maxValue", 1}}}}};
  auto r = ParseWith({{"hyperparameters", hp}}, Capabilities{});
  ExpectUnimplemented(r, "trainingInput.hyperparameters");
}

TEST(CapabilitiesTest, RefusesGpus) {
  ExpectUnimplemented(ParseWith({{"scaleTier", "BASIC_GPU"}}, Capabilities{}),
                      "trainingInput.scaleTier");
  ExpectUnimplemented(
      ParseWith({{"scaleTier", "CUSTOM"}, {"masterType", "standard_gpu"}}, Capabilities{}),
      "trainingInput.masterType");
  ExpectUnimplemented(
      ParseWith({{"scaleTier", "CUSTOM"}, {"masterType", "a2-highgpu-1g"}}, Capabilities{}),
      "trainingInput.masterType");
  ExpectUnimplemented(
      ParseWith(
          {{"scaleTier", "CUSTOM"},
           {"masterType", "n1-standard-8"},
           {"masterConfig", {{"acceleratorConfig", {{"count", 1}, {"type", "NVIDIA_TESLA_T4"}}}}}},
          Capabilities{}),
      "trainingInput.masterConfig.acceleratorConfig");
  Capabilities caps;
  caps.gpus = true;
  ExpectOk(ParseWith({{"scaleTier", "BASIC_GPU"}}, caps));
}

TEST(CapabilitiesTest, ValidationErrorsTakePriority) {
  json hp = {{"params",
              {{{"parameterName", "lr"}, {"type", "DOUBLE"}, {"minValue", 0.1}, {"maxValue", 1}}}}};
  json ti = MinimalTrainingInput();
  ti.erase("region");
  ti["hyperparameters"] = hp;
  auto r = ParseTi(ti, Capabilities{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(HasViolation(r.status(), "trainingInput.hyperparameters"));
}

TEST(CapabilitiesTest, RefusesWebAccessAndBatchPrediction) {
  ExpectUnimplemented(ParseWith({{"enableWebAccess", true}}), "trainingInput.enableWebAccess");
  ExpectUnimplemented(Parse({{"jobId", "p"}, {"predictionInput", {{"dataFormat", "JSON"}}}}),
                      "predictionInput");
  ExpectInvalid(Parse({{"jobId", "p"},
                       {"trainingInput", MinimalTrainingInput()},
                       {"predictionInput", {{"dataFormat", "JSON"}}}}),
                "predictionInput");
}

// ---- JobToJson ----------------------------------------------------------------------------------

Job SampleJob() {
  Job job;
  job.project = "proj";
  job.job_id = "census_1";
  job.state = JobState::kSucceeded;
  job.training_input_json = R"({"pythonModule":"trainer.task","region":"us-central1"})";
  job.create_time = 1513128064 * kMicrosPerSecond + 123456;  // 2017-12-13T01:21:04Z
  job.start_time = 1513128068 * kMicrosPerSecond;
  job.end_time = 1513128846 * kMicrosPerSecond;
  job.etag = "fhCHZ7hsq10=";
  job.labels = {{"owner", "alice"}, {"team", "ml"}};
  return job;
}

TEST(JobToJsonTest, WritesTheResourceShape) {
  Job job = SampleJob();
  EXPECT_EQ(JobToJson(job),
            R"({"jobId":"census_1",)"
            R"("trainingInput":{"pythonModule":"trainer.task","region":"us-central1"},)"
            R"("createTime":"2017-12-13T01:21:04Z","startTime":"2017-12-13T01:21:08Z",)"
            R"("endTime":"2017-12-13T01:34:06Z","state":"SUCCEEDED",)"
            R"("labels":{"owner":"alice","team":"ml"},"etag":"fhCHZ7hsq10="})");
}

TEST(JobToJsonTest, OmitsUnsetFields) {
  Job job;
  job.job_id = "j";
  job.state = JobState::kStateUnspecified;
  EXPECT_EQ(JobToJson(job), R"({"jobId":"j"})");
  job.state = JobState::kQueued;
  job.job_position = 0;
  EXPECT_EQ(JobToJson(job), R"({"jobId":"j","state":"QUEUED"})");
}

TEST(JobToJsonTest, JobPositionOnlyWhileQueued) {
  Job job;
  job.job_id = "j";
  job.state = JobState::kQueued;
  job.job_position = 3;
  EXPECT_EQ(JobToJson(job), R"({"jobId":"j","state":"QUEUED","jobPosition":"3"})");
  job.state = JobState::kRunning;
  EXPECT_EQ(JobToJson(job), R"({"jobId":"j","state":"RUNNING"})");
}

TEST(JobToJsonTest, MergesTrainingOutputWithConsumedMlUnits) {
  Job job;
  job.job_id = "j";
  job.state = JobState::kRunning;
  job.consumed_ml_units = 0.04;
  job.consumed_ml_units_set = true;
  EXPECT_EQ(JobToJson(job),
            R"({"jobId":"j","state":"RUNNING","trainingOutput":{"consumedMLUnits":0.04}})");
  job.training_output_json = R"({"completedTrialCount":"2","isHyperparameterTuningJob":true})";
  EXPECT_EQ(JobToJson(job),
            R"({"jobId":"j","state":"RUNNING","trainingOutput":{"completedTrialCount":"2",)"
            R"("isHyperparameterTuningJob":true,"consumedMLUnits":0.04}})");
  job.consumed_ml_units_set = false;
  EXPECT_EQ(JobToJson(job),
            R"({"jobId":"j","state":"RUNNING","trainingOutput":{"completedTrialCount":"2",)"
            R"("isHyperparameterTuningJob":true}})");
  job.training_output_json = "{}";
  job.consumed_ml_units_set = true;
  job.consumed_ml_units = 1.5;
  EXPECT_EQ(JobToJson(job),
            R"({"jobId":"j","state":"RUNNING","trainingOutput":{"consumedMLUnits":1.5}})");
  job.training_output_json = R"({"consumedMLUnits":9,"trials":[]})";
  json out = json::parse(JobToJson(job));
  EXPECT_EQ(out["trainingOutput"]["consumedMLUnits"], 1.5);
  EXPECT_TRUE(out["trainingOutput"]["trials"].is_array());
}

TEST(JobToJsonTest, EscapesStrings) {
  Job job;
  job.job_id = "j";
  job.state = JobState::kFailed;
  job.error_message =
      "The replica master 0 exited with a non-zero status of 1.\n\"quoted\"\t\\ \x01";
  json out = json::parse(JobToJson(job));
  EXPECT_EQ(out["errorMessage"], job.error_message);
}

TEST(JobToJsonTest, TimesMatchFormatRfc3339) {
  for (Timestamp ts : {Timestamp{1}, Timestamp{951782400} * kMicrosPerSecond,  // 2000-02-29
                       Timestamp{4102444799} * kMicrosPerSecond + 999999,      // 2099-12-31
                       Timestamp{1709164800} * kMicrosPerSecond,               // 2024-02-29
                       Timestamp{-86400} * kMicrosPerSecond + 5}) {
    Job job;
    job.job_id = "j";
    job.create_time = ts;
    json out = json::parse(JobToJson(job));
    EXPECT_EQ(out["createTime"], FormatRfc3339(ts)) << ts;
  }
}

TEST(JobToJsonTest, OutputParsesAsTheSameJob) {
  Job job = SampleJob();
  job.error_message = "boom";
  job.consumed_ml_units = 2.25;
  job.consumed_ml_units_set = true;
  json out = json::parse(JobToJson(job));
  EXPECT_EQ(out["jobId"], "census_1");
  EXPECT_EQ(out["trainingInput"]["region"], "us-central1");
  EXPECT_EQ(out["errorMessage"], "boom");
  EXPECT_EQ(out["trainingOutput"]["consumedMLUnits"], 2.25);
  EXPECT_EQ(out["labels"]["team"], "ml");
}

TEST(JobToJsonTest, IsFastEnoughForPagesOfAHundredJobs) {
  auto parsed = ParseWith({{"scaleTier", "CUSTOM"},
                           {"masterType", "n1-standard-8"},
                           {"args", {"--epochs", "10", "--batch-size", "128"}},
                           {"jobDir", "gs://bucket/out"},
                           {"runtimeVersion", "2.11"},
                           {"pythonVersion", "3.7"}});
  ExpectOk(parsed);
  std::vector<Job> jobs(100, SampleJob());
  for (Job& j : jobs) {
    j.training_input_json = parsed->training_input_json;
    j.consumed_ml_units_set = true;
    j.consumed_ml_units = 1.25;
  }
  int64_t best = INT64_MAX;
  size_t total = 0;
  for (int rep = 0; rep < 20; ++rep) {
    auto t0 = ThreadCpuTime();
    for (const Job& j : jobs) total += JobToJson(j).size();
    auto t1 = ThreadCpuTime();
    best = std::min<int64_t>(
        best, std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
  }
  EXPECT_GT(total, 0u);
  EXPECT_LT(best, 1000) << "100 jobs took " << best << " us of CPU time";
}

}  // namespace
}  // namespace trainyard::model
