// The SQLite store's private column encodings and migration list.
#include "job_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "flat_json.h"
#include "log_chunk.h"
#include "migrations.h"

namespace trainyard::store::sqlite {
namespace {

TEST(JobCodecTest, LabelsRoundTripIncludingEscapes) {
  std::map<std::string, std::string> labels = {{"plain", "value"},
                                               {"quote\"key", "back\\slash"},
                                               {"ctl", std::string("a\x01\n\tb", 6)},
                                               {"utf8", "ünïcødé ✓ 🚀"},
                                               {"", ""}};
  std::string text = EncodeLabels(labels);
  std::map<std::string, std::string> back;
  ASSERT_TRUE(DecodeLabels(text, &back).ok()) << text;
  EXPECT_EQ(back, labels);
  EXPECT_EQ(EncodeLabels({}), "{}");
  ASSERT_TRUE(DecodeLabels("{}", &back).ok());
  EXPECT_TRUE(back.empty());
}

TEST(JobCodecTest, LabelsAcceptStandardJsonEscapesAndWhitespace) {
  std::map<std::string, std::string> back;
  ASSERT_TRUE(DecodeLabels(R"( { "a" : "x\/y\u00e9\ud83d\ude80\b\f\r" , "b":"" } )", &back).ok());
  EXPECT_EQ(back["a"], "x/y\xc3\xa9\xf0\x9f\x9a\x80\b\f\r");
  EXPECT_EQ(back["b"], "");
}

TEST(JobCodecTest, MalformedLabelsAreErrorsNotCrashes) {
  for (std::string bad : std::vector<std::string>{
           "", "{", "[]", "{\"a\"}", "{\"a\":1}", "{\"a\":\"x\"", "{\"a\":\"x\"}x",
           "{\"a\":\"\\q\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\\ud800x\"}",
           std::string("{\"a\":\"\x01\"}"), "nul", "{\"a\":\"x\",}", "{,}"}) {
    std::map<std::string, std::string> back;
    Status s = DecodeLabels(bad, &back);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), StatusCode::kInternal) << bad;
  }
}

model::TrainingSpec FullSpec() {
  model::TrainingSpec spec;
  spec.scale_tier = "CUSTOM";
  spec.master.machine_type = "n1-highmem-8";
  spec.package_uris = {"gs://b/a.tar.gz", "gs://b/\"odd\".whl"};
  spec.python_module = "trainer.task";
  spec.args = {"--x=1", "", "spaces here"};
  spec.region = "europe-west1";
  spec.job_dir = "gs://b/out";
  spec.runtime_version = "2.11";
  spec.python_version = "3.7";
  spec.scheduling.max_running_time = 3600000000;
  spec.scheduling.max_wait_time = 0;  // set but zero is distinct from unset
  spec.scheduling.priority = 1000;
  spec.has_hyperparameters = true;
  spec.master.image_uri = "gcr.io/p/i@sha256:abc";
  spec.master.accelerator = {"NVIDIA_TESLA_T4", 2};
  spec.master.container_command = {"python", "-m", "x"};
  spec.master.container_args = {"--a", ""};
  spec.worker = {"n1-standard-4", 8, {"NVIDIA_TESLA_V100", 1}, "gcr.io/p/w", {}, {"--w"}};
  spec.parameter_server.machine_type = "n1-highmem-2";
  spec.parameter_server.count = 3;
  spec.evaluator.machine_type = "n1-standard-8";
  spec.evaluator.count = 1;
  spec.use_chief_in_tf_config = true;
  return spec;
}

TEST(JobCodecTest, SpecRoundTripsEveryField) {
  model::TrainingSpec spec = FullSpec();
  model::TrainingSpec back;
  back.region = "stale";  // decoding starts from defaults
  ASSERT_TRUE(DecodeSpec(EncodeSpec(spec), &back).ok());
  EXPECT_EQ(back.scale_tier, spec.scale_tier);
  EXPECT_EQ(back.master.machine_type, spec.master.machine_type);
  EXPECT_EQ(back.package_uris, spec.package_uris);
  EXPECT_EQ(back.python_module, spec.python_module);
  EXPECT_EQ(back.args, spec.args);
  EXPECT_EQ(back.region, spec.region);
  EXPECT_EQ(back.job_dir, spec.job_dir);
  EXPECT_EQ(back.runtime_version, spec.runtime_version);
  EXPECT_EQ(back.python_version, spec.python_version);
  EXPECT_EQ(back.scheduling.max_running_time, spec.scheduling.max_running_time);
  EXPECT_EQ(back.scheduling.max_wait_time, spec.scheduling.max_wait_time);
  EXPECT_EQ(back.scheduling.priority, spec.scheduling.priority);
  EXPECT_EQ(back.has_hyperparameters, spec.has_hyperparameters);
  EXPECT_EQ(back.master.image_uri, spec.master.image_uri);
  for (auto role : {&model::TrainingSpec::master, &model::TrainingSpec::worker,
                    &model::TrainingSpec::parameter_server, &model::TrainingSpec::evaluator}) {
    const model::ReplicaRoleSpec& want = spec.*role;
    const model::ReplicaRoleSpec& got = back.*role;
    EXPECT_EQ(got.machine_type, want.machine_type);
    EXPECT_EQ(got.count, want.count);
    EXPECT_EQ(got.accelerator.type, want.accelerator.type);
    EXPECT_EQ(got.accelerator.count, want.accelerator.count);
    EXPECT_EQ(got.image_uri, want.image_uri);
    EXPECT_EQ(got.container_command, want.container_command);
    EXPECT_EQ(got.container_args, want.container_args);
  }
  EXPECT_TRUE(back.use_chief_in_tf_config);
}

// Fails when model::TrainingSpec gains or loses a field: add it to EncodeSpec/DecodeSpec (and to
// FullSpec above), then update the expected size.
TEST(JobCodecTest, SpecCodecCoversTrainingSpecLayout) {
#if defined(__x86_64__) && defined(__GLIBCXX__)
  EXPECT_EQ(sizeof(model::TrainingSpec), 936u)
      << "model::TrainingSpec changed: update src/store/job_codec.cc";
#else
  GTEST_SKIP() << "layout guard is calibrated for x86-64 libstdc++";
#endif
}

TEST(JobCodecTest, SpecIgnoresUnknownKeysAndKeepsDefaultsForAbsentOnes) {
  model::TrainingSpec back;
  ASSERT_TRUE(
      DecodeSpec(R"({"future":{"nested":[1,2.5e3,true,null,"x",{}]},"region":"r"})", &back).ok());
  EXPECT_EQ(back.region, "r");
  EXPECT_EQ(back.scale_tier, "BASIC");
  EXPECT_FALSE(back.scheduling.max_running_time.has_value());
}

TEST(JobCodecTest, MalformedSpecIsAnError) {
  model::TrainingSpec back;
  for (const char* bad :
       {"{\"priority\":\"high\"}", "{\"args\":\"notalist\"}", "{\"args\":[1]}",
        "{\"has_hyperparameters\":1}", "{\"max_wait_time\":1.5}", "{\"x\":[}", "{\"x\":@}"}) {
    EXPECT_EQ(DecodeSpec(bad, &back).code(), StatusCode::kInternal) << bad;
  }
}

TEST(JobCodecTest, SkipRejectsDeepNesting) {
  std::string deep = "{\"x\":" + std::string(1000, '[') + std::string(1000, ']') + "}";
  model::TrainingSpec back;
  EXPECT_EQ(DecodeSpec(deep, &back).code(), StatusCode::kInternal);
}

TEST(MigrationsTest, VersionsAreConsecutiveFromOne) {
  int expected = 1;
  for (const Migration& m : Migrations()) {
    EXPECT_EQ(m.version, expected++);
    EXPECT_NE(m.sql, nullptr);
  }
  EXPECT_EQ(LatestSchemaVersion(), expected - 1);
}

TEST(LogChunkTest, LinesRoundTripIncludingExtremeValues) {
  struct Line {
    int64_t timestamp;
    int64_t severity;
    std::string message;
  };
  const std::vector<Line> lines = {
      {1700000000123456, 200, "first"},    {1700000000123400, 800, ""},
      {0, 0, std::string("nul\0byte", 9)}, {INT64_MAX, -5, std::string(300, 'x')},
      {INT64_MIN, 100, "ünïcødé ✓"},       {-1, 400, "\n"}};
  std::string data;
  int64_t prev = 0;
  for (const Line& l : lines) AppendLogLine(&data, &prev, l.timestamp, l.severity, l.message);
  LogChunkReader reader(data);
  DecodedLogLine line;
  for (const Line& want : lines) {
    auto next = reader.Next(&line);
    ASSERT_TRUE(next.ok() && *next);
    EXPECT_EQ(line.timestamp, want.timestamp);
    EXPECT_EQ(line.severity, want.severity);
    EXPECT_EQ(line.message, want.message);
  }
  auto end = reader.Next(&line);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
}

TEST(LogChunkTest, TruncatedDataIsAnError) {
  std::string data;
  int64_t prev = 0;
  AppendLogLine(&data, &prev, 1700000000000000, 200, "hello world");
  for (size_t cut = 1; cut < data.size(); ++cut) {
    LogChunkReader reader(std::string_view(data).substr(0, cut));
    DecodedLogLine line;
    EXPECT_FALSE(reader.Next(&line).ok()) << cut;
  }
  // An over-long varint.
  const std::string overlong(11, '\xff');
  LogChunkReader reader(overlong);
  DecodedLogLine line;
  EXPECT_FALSE(reader.Next(&line).ok());
}

}  // namespace
}  // namespace trainyard::store::sqlite
