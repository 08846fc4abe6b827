// End-to-end tests of the `trainyard` command line against an in-memory fake daemon.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "fake_daemon.h"
#include "packaging.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {
namespace {

using json = nlohmann::json;
using trainyard::testing::FakeDaemon;

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

class CliCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC0", 1);
    tzset();
    unsetenv("TRAINYARD_REGION");
    unsetenv("TRAINYARD_TOKEN");
  }
  void TearDown() override {
    unsetenv("TZ");
    tzset();
  }

  // Runs `trainyard --endpoint <fake> --project p ARGS...`.
  CliResult Run(std::vector<std::string> args, bool with_project = true) {
    std::vector<std::string> argv = {"trainyard", "--endpoint", daemon_.endpoint()};
    if (with_project) {
      argv.push_back("--project");
      argv.push_back("p");
    }
    argv.insert(argv.end(), args.begin(), args.end());
    std::ostringstream out, err;
    CliResult r;
    r.rc = RunCli(argv, out, err, /*err_is_tty=*/false);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  json SubmittedBody(const std::string& id) {
    for (const auto& req : daemon_.Requests()) {
      if (req.method == "POST" && req.path == "/v1/projects/p/jobs") {
        json body = json::parse(req.body);
        if (body["jobId"] == id) return body;
      }
    }
    return json();
  }

  FakeDaemon daemon_;
};

TEST_F(CliCommandsTest, DescribePrintsGcloudYamlAndAFollowUp) {
  daemon_.PutJob("p", {{"jobId", "j"},
                       {"state", "RUNNING"},
                       {"createTime", "2026-11-21T10:00:00Z"},
                       {"trainingInput", {{"region", "us-central1"}, {"runtimeVersion", "2.11"}}}});
  CliResult r = Run({"jobs", "describe", "j"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "createTime: '2026-11-21T10:00:00Z'\n"
            "jobId: j\n"
            "state: RUNNING\n"
            "trainingInput:\n"
            "  region: us-central1\n"
            "  runtimeVersion: '2.11'\n");
  EXPECT_EQ(r.err, "\nView job in the Trainyard console at:\n  " + daemon_.endpoint() +
                       "/mlengine/jobs/j?project=p\n"
                       "\nView logs with:\n  trainyard jobs stream-logs j --project p\n");
}

TEST_F(CliCommandsTest, DescribeJsonAndValueFormats) {
  daemon_.PutJob("p", {{"jobId", "j"}, {"state", "FAILED"}, {"labels", {{"a", "1"}, {"b", "2"}}}});
  CliResult json_out = Run({"ai-platform", "jobs", "describe", "j", "--format", "json"});
  EXPECT_EQ(json_out.rc, 0);
  EXPECT_EQ(json::parse(json_out.out)["state"], "FAILED");
  EXPECT_NE(json_out.err.find("trainyard ai-platform jobs stream-logs j"), std::string::npos);
  CliResult value = Run({"jobs", "describe", "j", "--format=value(state,labels)"});
  EXPECT_EQ(value.out, "FAILED\ta=1;b=2\n");
}

TEST_F(CliCommandsTest, ApiErrorsNameTheCommandPathAndStatus) {
  CliResult r = Run({"ai-platform", "jobs", "describe", "nope"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "ERROR: (trainyard.ai-platform.jobs.describe) NOT_FOUND: Field: name Error: The "
            "specified job does not exist.\n");
  CliResult plain = Run({"jobs", "cancel", "nope"});
  EXPECT_EQ(plain.rc, 1);
  EXPECT_EQ(plain.err.rfind("ERROR: (trainyard.jobs.cancel) NOT_FOUND: ", 0), 0u) << plain.err;
}

TEST_F(CliCommandsTest, UnreachableDaemonSaysHowToStartIt) {
  std::vector<std::string> argv = {"trainyard", "--endpoint", "http://127.0.0.1:1", "jobs", "list"};
  std::ostringstream out, err;
  EXPECT_EQ(RunCli(argv, out, err, false), 1);
  EXPECT_NE(err.str().find("ERROR: (trainyard.jobs.list) Could not reach trainyardd at "
                           "http://127.0.0.1:1"),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("trainyardd"), std::string::npos);
}

TEST_F(CliCommandsTest, ListPrintsATableAcrossPages) {
  daemon_.PutJob("p", {{"jobId", "census_training_1"},
                       {"state", "SUCCEEDED"},
                       {"createTime", "2026-11-21T10:00:00Z"}});
  daemon_.PutJob("p",
                 {{"jobId", "j2"}, {"state", "QUEUED"}, {"createTime", "2026-11-21T11:30:00Z"}});
  daemon_.PutJob("p",
                 {{"jobId", "j3"}, {"state", "RUNNING"}, {"createTime", "2026-11-21T12:00:00Z"}});
  CliResult r = Run({"jobs", "list", "--page-size", "2"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "JOB_ID             STATUS     CREATED\n"
            "census_training_1  SUCCEEDED  2026-11-21T10:00:00\n"
            "j2                 QUEUED     2026-11-21T11:30:00\n"
            "j3                 RUNNING    2026-11-21T12:00:00\n");
  int list_calls = 0;
  for (const auto& req : daemon_.Requests()) {
    if (req.path.rfind("/v1/projects/p/jobs?", 0) == 0) ++list_calls;
  }
  EXPECT_EQ(list_calls, 2);

  CliResult limited =
      Run({"jobs", "list", "--limit", "1", "--sort-by", "~createTime", "--format", "value(jobId)"});
  EXPECT_EQ(limited.out, "j3\n");
  // gcloud's filter language, evaluated on the client (as gcloud does; no server filter).
  CliResult filtered = Run({"jobs", "list", "--filter", "state:(queued OR running)", "--format",
                            "value(jobId)", "--sort-by", "jobId"});
  EXPECT_EQ(filtered.out, "j2\nj3\n");
  EXPECT_EQ(daemon_.Requests().back().path.find("filter="), std::string::npos);
  CliResult regex = Run({"jobs", "list", "--filter", "jobId~^j[0-9]$ AND -state:QUEUED", "--format",
                         "table[no-heading](jobId,createTime.date('%H:%M', tz=UTC))"});
  EXPECT_EQ(regex.out, "j3  12:00\n");
  CliResult csv = Run(
      {"jobs", "list", "--filter", "jobId:census*", "--format", "csv(jobId,state:label=status)"});
  EXPECT_EQ(csv.out, "job_id,status\ncensus_training_1,SUCCEEDED\n");
}

TEST_F(CliCommandsTest, ListSortedByADaemonKeyStopsOnceTheLimitAndItsTiesAreIn) {
  // Created in this order; b and c share a createTime.
  for (const auto& [id, created] : std::vector<std::pair<std::string, std::string>>{
           {"a", "10"}, {"b", "11"}, {"c", "11"}, {"d", "12"}, {"e", "13"}, {"f", "14"}}) {
    daemon_.PutJob("p", {{"jobId", id},
                         {"state", id < "c" ? "QUEUED" : "RUNNING"},
                         {"createTime", "2026-11-21T" + created + ":00:00Z"}});
  }
  size_t seen = 0;  // requests before the command
  auto list_requests = [&] {
    std::vector<std::string> paths;
    const auto requests = daemon_.Requests();
    for (size_t i = seen; i < requests.size(); ++i) {
      if (requests[i].path.rfind("/v1/projects/p/jobs?", 0) == 0) paths.push_back(requests[i].path);
    }
    seen = requests.size();
    return paths;
  };
  // gcloud sorts the whole listing (newest first) stably: ties stay newest first, so c before
  // b. The daemon's pages of 2 in createTime order: [a b] [c d] [e f]; the second page shows
  // b's tie is complete, the third is never asked for.
  CliResult r =
      Run({"jobs", "list", "--sort-by", "createTime", "--limit", "2", "--format", "value(jobId)"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "a\nc\n");
  std::vector<std::string> paths = list_requests();
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_NE(paths[0].find("orderBy=createTime"), std::string::npos) << paths[0];
  EXPECT_NE(paths[1].find("orderBy=createTime"), std::string::npos) << paths[1];

  // Descending, then a second key sorted here.
  r = Run(
      {"jobs", "list", "--sort-by", "~state,jobId", "--limit", "3", "--format", "value(jobId)"});
  EXPECT_EQ(r.out, "c\nd\ne\n");
  paths = list_requests();
  ASSERT_FALSE(paths.empty());
  EXPECT_NE(paths[0].find("orderBy=state desc"), std::string::npos) << paths[0];

  // A key the daemon cannot order by: every page, sorted here, no orderBy.
  r = Run(
      {"jobs", "list", "--sort-by", "~labels.x,jobId", "--limit", "1", "--format", "value(jobId)"});
  EXPECT_EQ(r.out, "a\n");
  paths = list_requests();
  EXPECT_EQ(paths.size(), 6u);
  for (const std::string& path : paths) EXPECT_EQ(path.find("orderBy"), std::string::npos);
}

TEST_F(CliCommandsTest, ListFilterErrorsAndWarningsAreGclouds) {
  daemon_.PutJob("p",
                 {{"jobId", "a"}, {"state", "QUEUED"}, {"createTime", "2026-11-21T10:00:00Z"}});
  CliResult bad = Run({"jobs", "list", "--filter", "state:QUEUED AND jobId:a OR jobId:b"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("Parenthesis grouping is required"), std::string::npos) << bad.err;
  CliResult missing = Run(
      {"jobs", "list", "--filter", "labels.owner:x OR state:QUEUED", "--format", "value(jobId)"});
  EXPECT_EQ(missing.rc, 0);
  EXPECT_EQ(missing.out, "a\n");
  EXPECT_NE(missing.err.find("The following filter keys were not present in any resource : "
                             "labels.owner"),
            std::string::npos)
      << missing.err;
  CliResult format = Run({"jobs", "list", "--format", "flattened"});
  EXPECT_EQ(format.rc, 1);
}

TEST_F(CliCommandsTest, SubmitKmsFlagsBecomeEncryptionConfig) {
  CliResult r = Run({"jobs", "submit", "training", "k1", "--packages", "gs://b/p.tar.gz",
                     "--module-name", "t.task", "--region", "us-central1", "--kms-key", "key1",
                     "--kms-keyring", "ring", "--kms-location", "us-central1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(SubmittedBody("k1")["trainingInput"]["encryptionConfig"]["kmsKeyName"],
            "projects/p/locations/us-central1/keyRings/ring/cryptoKeys/key1");
  const std::string full = "projects/kp/locations/global/keyRings/r/cryptoKeys/k";
  CliResult f = Run({"jobs", "submit", "training", "k2", "--packages", "gs://b/p.tar.gz",
                     "--module-name", "t.task", "--kms-key", full});
  ASSERT_EQ(f.rc, 0) << f.err;
  EXPECT_EQ(SubmittedBody("k2")["trainingInput"]["encryptionConfig"]["kmsKeyName"], full);
  CliResult partial = Run({"jobs", "submit", "training", "k3", "--packages", "gs://b/p.tar.gz",
                           "--module-name", "t.task", "--kms-key", "key1", "--kms-keyring", "r"});
  EXPECT_EQ(partial.rc, 1);
  EXPECT_NE(partial.err.find("argument --kms-key: Encryption key not fully specified."),
            std::string::npos)
      << partial.err;
}

TEST_F(CliCommandsTest, EmptyListSaysListedZeroItems) {
  CliResult r = Run({"jobs", "list"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "Listed 0 items.\n");
}

TEST_F(CliCommandsTest, SubmitWithRemotePackagesPrintsGcloudOutput) {
  CliResult r = Run({"jobs", "submit", "training", "j1", "--packages", "gs://b/p.tar.gz",
                     "--module-name", "trainer.task", "--region", "europe-west4", "--labels",
                     "team=ml", "--scale-tier", "basic_gpu", "--", "--steps", "5", "--", "x"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "jobId: j1\nstate: QUEUED\n");
  EXPECT_EQ(r.err,
            "Job [j1] submitted successfully.\n"
            "Your job is still active. You may view the status of your job with the command\n\n"
            "  $ trainyard jobs describe j1 --project p\n\n"
            "or continue streaming the logs with the command\n\n"
            "  $ trainyard jobs stream-logs j1 --project p\n");
  json body = SubmittedBody("j1");
  EXPECT_EQ(body["labels"]["team"], "ml");
  EXPECT_EQ(body["trainingInput"]["packageUris"], json::array({"gs://b/p.tar.gz"}));
  EXPECT_EQ(body["trainingInput"]["pythonModule"], "trainer.task");
  EXPECT_EQ(body["trainingInput"]["region"], "europe-west4");
  EXPECT_EQ(body["trainingInput"]["scaleTier"], "BASIC_GPU");
  EXPECT_EQ(body["trainingInput"]["args"], json::array({"--steps", "5", "--", "x"}));
}

TEST_F(CliCommandsTest, SubmitDefaultsRegionFromEnvironment) {
  setenv("TRAINYARD_REGION", "asia-east1", 1);
  CliResult r = Run({"ai-platform", "jobs", "submit", "training", "j1", "--packages",
                     "gs://b/p.tar.gz", "--module-name", "m"});
  unsetenv("TRAINYARD_REGION");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(SubmittedBody("j1")["trainingInput"]["region"], "asia-east1");
  EXPECT_NE(r.err.find("$ trainyard ai-platform jobs describe j1"), std::string::npos);
}

TEST_F(CliCommandsTest, SubmitUploadsLocalPackagesToTheStagingBucket) {
  TempDir tmp;
  ASSERT_TRUE(tmp.ok());
  std::string pkg = tmp.path() + "/pkg-1.0.tar.gz";
  ASSERT_TRUE(WriteFileAtomic(pkg, "package bytes").ok());
  ASSERT_EQ(Run({"buckets", "create", "gs://stage"}).rc, 0);
  CliResult r = Run({"jobs", "submit", "training", "j1", "--packages", pkg + ",gs://b/dep.tar.gz",
                     "--module-name", "m", "--staging-bucket", "gs://stage"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string object = "j1/" + Sha256Hex("package bytes") + "/pkg-1.0.tar.gz";
  EXPECT_EQ(daemon_.Objects().at("stage/" + object), "package bytes");
  EXPECT_EQ(SubmittedBody("j1")["trainingInput"]["packageUris"],
            json::array({"gs://b/dep.tar.gz", "gs://stage/" + object}));
}

TEST_F(CliCommandsTest, SubmitBuildsAndUploadsThePackagePath) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir tmp;
  ASSERT_TRUE(tmp.ok());
  std::filesystem::create_directories(tmp.path() + "/src/trainer");
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/src/trainer/__init__.py", "").ok());
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/src/trainer/task.py", "print(1)\n").ok());
  ASSERT_EQ(Run({"buckets", "create", "gs://b"}).rc, 0);
  CliResult r =
      Run({"jobs", "submit", "training", "j1", "--package-path", tmp.path() + "/src/trainer",
           "--module-name", "trainer.task", "--job-dir", "gs://b/out"});
  ASSERT_EQ(r.rc, 0) << r.err;
  json uris = SubmittedBody("j1")["trainingInput"]["packageUris"];
  ASSERT_EQ(uris.size(), 1u);
  std::string uri = uris[0];
  EXPECT_EQ(uri.rfind("gs://b/out/packages/", 0), 0u) << uri;
  EXPECT_EQ(uri.substr(uri.size() - 19), "/trainer-0.0.tar.gz") << uri;
}

// gcloud refuses local packages without --staging-bucket or a gs:// --job-dir (compat §9.1);
// Trainyard stages them in the project's default bucket, made on first use. A local --job-dir
// is no staging location (the daemon reads packages from buckets) and no error either.
TEST_F(CliCommandsTest, SubmitLocalPackagesWithoutStagingUseTheProjectsBucket) {
  TempDir tmp;
  std::string pkg = tmp.path() + "/p.tar.gz";
  ASSERT_TRUE(WriteFileAtomic(pkg, "x").ok());
  CliResult r = Run({"jobs", "submit", "training", "j1", "--packages", pkg, "--module-name", "m",
                     "--job-dir", tmp.path() + "/out"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string uri = SubmittedBody("j1")["trainingInput"]["packageUris"][0];
  const std::string object = "j1/" + Sha256Hex("x") + "/p.tar.gz";
  ASSERT_EQ(uri.rfind("gs://", 0), 0u) << uri;
  const std::string bucket = uri.substr(5, uri.find('/', 5) - 5);
  EXPECT_TRUE(bucket.ends_with("-trainyard-staging")) << uri;
  EXPECT_EQ(daemon_.Objects().at(bucket + "/" + object), "x");
  EXPECT_NE(r.err.find("Staging the packages in gs://" + bucket + "/j1"), std::string::npos)
      << r.err;
  // The second submit finds the bucket.
  ASSERT_EQ(Run({"jobs", "submit", "training", "j2", "--packages", pkg, "--module-name", "m"}).rc,
            0);
}

TEST_F(CliCommandsTest, SubmitRefusesAModuleOutsideThePackagePathBeforeUploading) {
  TempDir tmp;
  ASSERT_TRUE(tmp.ok());
  std::filesystem::create_directories(tmp.path() + "/src/trainer");
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/src/trainer/__init__.py", "").ok());
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/src/trainer/task.py", "print(1)\n").ok());
  ASSERT_EQ(Run({"buckets", "create", "gs://b"}).rc, 0);
  CliResult r =
      Run({"jobs", "submit", "training", "j1", "--package-path", tmp.path() + "/src/trainer",
           "--module-name", "trainer.tsak", "--staging-bucket", "gs://b"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("The module [trainer.tsak] does not exist in --package-path"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(daemon_.Objects().empty());
  EXPECT_TRUE(SubmittedBody("j1").is_null());
}

TEST_F(CliCommandsTest, SubmitWithoutPackagesUsesGcloudsMessage) {
  CliResult r = Run({"jobs", "submit", "training", "j1", "--module-name", "m"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("If `--package-path` is not specified, at least one Python package must "
                       "be specified via `--packages`."),
            std::string::npos);
  EXPECT_TRUE(SubmittedBody("j1").is_null());
}

TEST_F(CliCommandsTest, SubmitRejectsBadFlagValues) {
  CliResult tier =
      Run({"jobs", "submit", "training", "j1", "--packages", "gs://b/p", "--scale-tier", "huge"});
  EXPECT_EQ(tier.rc, 1);
  EXPECT_EQ(tier.err.rfind("ERROR: (trainyard.jobs.submit.training) argument --scale-tier: "
                           "Invalid choice: 'huge'.",
                           0),
            0u)
      << tier.err;
  CliResult acc = Run({"jobs", "submit", "training", "j1", "--packages", "gs://b/p",
                       "--master-accelerator", "count=0,type=nvidia-tesla-t4"});
  EXPECT_NE(acc.err.find("The count of the accelerator must be greater than 0."),
            std::string::npos);
  CliResult both = Run(
      {"jobs", "submit", "training", "j1", "--packages", "gs://b/p", "--stream-logs", "--async"});
  EXPECT_EQ(both.rc, 2);
}

TEST_F(CliCommandsTest, SubmitMergesTheConfigFile) {
  TempDir tmp;
  std::string config = tmp.path() + "/config.yaml";
  ASSERT_TRUE(WriteFileAtomic(config,
                              "trainingInput:\n"
                              "  scaleTier: CUSTOM\n"
                              "  masterType: n1-standard-8\n"
                              "  region: us-east1\n"
                              "  masterConfig:\n"
                              "    acceleratorConfig: {count: 1, type: NVIDIA_TESLA_K80}\n"
                              "labels:\n"
                              "  owner: me\n")
                  .ok());
  CliResult r =
      Run({"jobs", "submit", "training", "j1", "--config", config, "--packages", "gs://b/p.tar.gz",
           "--module-name", "m", "--master-accelerator", "count=2,type=nvidia-tesla-t4"});
  ASSERT_EQ(r.rc, 0) << r.err;
  json body = SubmittedBody("j1");
  EXPECT_EQ(body["labels"]["owner"], "me");
  EXPECT_EQ(body["trainingInput"]["region"], "us-east1");
  EXPECT_EQ(body["trainingInput"]["masterType"], "n1-standard-8");
  EXPECT_EQ(body["trainingInput"]["masterConfig"]["acceleratorConfig"]["type"], "NVIDIA_TESLA_T4");
  EXPECT_EQ(body["trainingInput"]["masterConfig"]["acceleratorConfig"]["count"], "2");
}

TEST_F(CliCommandsTest, SubmitStreamLogsWaitsAndExitsOneWhenTheJobFails) {
  daemon_.AddLog("j1", "INFO", "master-replica-0", "step 1");
  daemon_.AddLog("j1", "ERROR", "master-replica-0", "Traceback\nValueError");
  daemon_.EndJobAfterLogReads("p", "j1", 1, "FAILED");
  CliResult r = Run({"jobs", "submit", "training", "j1", "--packages", "gs://b/p.tar.gz",
                     "--module-name", "m", "--stream-logs", "--polling-interval", "0.01"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.out, "jobId: j1\nstate: FAILED\nendTime: '2026-11-21T11:00:00'\n");
  EXPECT_EQ(r.err,
            "Job [j1] submitted successfully.\n"
            "INFO\t2026-11-21 10:00:00 +0000\tmaster-replica-0\t\tstep 1\n"
            "ERROR\t2026-11-21 10:00:00 +0000\tmaster-replica-0\t\tTraceback\n"
            "ERROR\t2026-11-21 10:00:00 +0000\tmaster-replica-0\t\tValueError\n");
}

TEST_F(CliCommandsTest, StreamLogsDrainsAfterTheJobEnds) {
  daemon_.PutJob("p", {{"jobId", "j"}, {"state", "RUNNING"}});
  daemon_.AddLog("j", "INFO", "master-replica-0", "one", "1");
  daemon_.AddLog("j", "INFO", "worker-replica-0", "two");
  daemon_.EndJobAfterLogReads("p", "j", 2, "SUCCEEDED");
  CliResult r = Run({"jobs", "stream-logs", "j", "--polling-interval", "0.01"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "INFO\t2026-11-21 10:00:00 +0000\tmaster-replica-0\t1\tone\n"
            "INFO\t2026-11-21 10:00:00 +0000\tworker-replica-0\t\ttwo\n");
  CliResult task = Run({"jobs", "stream-logs", "j", "--task-name", "worker-replica-0"});
  EXPECT_EQ(task.out, "INFO\t2026-11-21 10:00:00 +0000\tworker-replica-0\t\ttwo\n");
}

TEST_F(CliCommandsTest, UpdateMergesLabelsAndSendsTheEtag) {
  daemon_.PutJob("p", {{"jobId", "j"}, {"labels", {{"a", "1"}, {"c", "3"}}}, {"etag", "ZXRhZzE="}});
  CliResult r = Run({"jobs", "update", "j", "--update-labels", "b=2", "--remove-labels", "a"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "Updated job [j].\n");
  auto reqs = daemon_.Requests();
  EXPECT_EQ(reqs.back().method, "PATCH");
  EXPECT_EQ(reqs.back().path, "/v1/projects/p/jobs/j?updateMask=labels,etag");
  json body = json::parse(reqs.back().body);
  EXPECT_EQ(body["labels"], json({{"b", "2"}, {"c", "3"}}));
  EXPECT_EQ(body["etag"], "ZXRhZzE=");

  CliResult same = Run({"jobs", "update", "j", "--update-labels", "b=2"});
  EXPECT_EQ(same.rc, 0);
  EXPECT_EQ(same.err, "No update to perform.\n");
  CliResult none = Run({"jobs", "update", "j"});
  EXPECT_EQ(none.rc, 1);
  CliResult cleared = Run({"jobs", "update", "j", "--clear-labels"});
  EXPECT_EQ(cleared.rc, 0);
  EXPECT_EQ(daemon_.GetJob("p", "j")["labels"], json::object());
}

TEST_F(CliCommandsTest, CancelIsSilent) {
  daemon_.PutJob("p", {{"jobId", "j"}, {"state", "RUNNING"}});
  CliResult r = Run({"jobs", "cancel", "j"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliCommandsTest, SummarizeShowsOverviewAndTrialsBestFirst) {
  daemon_.PutJob("p",
                 {{"jobId", "hp"},
                  {"state", "SUCCEEDED"},
                  {"createTime", "2026-11-21T10:00:00Z"},
                  {"trainingInput",
                   {{"region", "us-central1"},
                    {"pythonModule", "t.task"},
                    {"hyperparameters", {{"goal", "MINIMIZE"}}}}},
                  {"trainingOutput",
                   {{"completedTrialCount", "2"},
                    {"consumedMLUnits", 1.5},
                    {"trials",
                     {{{"trialId", "1"},
                       {"hyperparameters", {{"lr", "0.1"}}},
                       {"finalMetric", {{"objectiveValue", 0.9}, {"trainingStep", "10"}}}},
                      {{"trialId", "2"},
                       {"hyperparameters", {{"lr", "0.01"}}},
                       {"finalMetric", {{"objectiveValue", 0.2}, {"trainingStep", "10"}}}}}}}}});
  CliResult r = Run({"jobs", "describe", "hp", "--summarize"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Job Overview"), std::string::npos);
  EXPECT_NE(r.out.find("│ hp     │ 2026-11-21T10:00:00Z │"), std::string::npos) << r.out;
  size_t best = r.out.find("lr=0.01");
  size_t worse = r.out.find("lr=0.1 ");
  ASSERT_NE(best, std::string::npos) << r.out;
  ASSERT_NE(worse, std::string::npos) << r.out;
  EXPECT_LT(best, worse);
}

TEST_F(CliCommandsTest, SummarizeShowsTheJobsAndTrialsNotesBeforeTheTrials) {
  daemon_.PutJob("p", {{"jobId", "hp"},
                       {"state", "SUCCEEDED"},
                       {"errorMessage", "No trial reported the metric tag 'accuracy'."},
                       {"trainingInput", {{"region", "us-central1"}, {"pythonModule", "t.task"}}},
                       {"trainingOutput",
                        {{"completedTrialCount", "1"},
                         {"earlyStopping",
                          {{"active", false},
                           {"referenceTrialCount", "1"},
                           {"minReferenceTrialCount", "5"},
                           {"stoppedTrialCount", "0"}}},
                         {"trials",
                          {{{"trialId", "1"},
                            {"hyperparameters", {{"lr", "0.1"}}},
                            {"message", "tags reported: 'acc'."}}}}}}});
  CliResult r = Run({"jobs", "describe", "hp", "--summarize"});
  EXPECT_EQ(r.rc, 0) << r.err;
  const size_t notes = r.out.find("Training Output Notes");
  ASSERT_NE(notes, std::string::npos) << r.out;
  EXPECT_LT(notes, r.out.find("Training Output Trials"));
  EXPECT_NE(r.out.find("No trial reported the metric tag 'accuracy'."), std::string::npos);
  EXPECT_NE(r.out.find("waiting: the median rule needs 5 completed trials with intermediate "
                       "reports, has 1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("trial 1"), std::string::npos);
  EXPECT_NE(r.out.find("tags reported: 'acc'."), std::string::npos);
}

TEST_F(CliCommandsTest, CopiesFilesToAndFromBuckets) {
  TempDir tmp;
  std::string local = tmp.path() + "/data.csv";
  ASSERT_TRUE(WriteFileAtomic(local, "a,b\n").ok());
  ASSERT_EQ(Run({"storage", "buckets", "create", "gs://d"}).rc, 0);
  CliResult up = Run({"cp", local, "gs://d/in/"});
  ASSERT_EQ(up.rc, 0) << up.err;
  EXPECT_EQ(daemon_.Objects().at("d/in/data.csv"), "a,b\n");
  CliResult down = Run({"cp", "gs://d/in/data.csv", tmp.path() + "/copy.csv"});
  ASSERT_EQ(down.rc, 0) << down.err;
  EXPECT_EQ(*ReadFile(tmp.path() + "/copy.csv"), "a,b\n");
  CliResult list = Run({"buckets", "list"});
  EXPECT_EQ(list.out, "gs://d/\n");
}

TEST_F(CliCommandsTest, AdminPausesAndResumesAdmission) {
  CliResult pause = Run({"admin", "pause"});
  EXPECT_EQ(pause.rc, 0);
  EXPECT_EQ(pause.out, "paused: true\n");
  EXPECT_TRUE(daemon_.paused());
  EXPECT_EQ(Run({"admin", "status"}).out, "paused: true\n");
  EXPECT_EQ(Run({"admin", "resume"}).out, "paused: false\n");
}

TEST_F(CliCommandsTest, UsageErrorsExitTwoWithThePath) {
  CliResult r = Run({"jobs", "list", "--bogus"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err.rfind("ERROR: (trainyard.jobs.list) ", 0), 0u) << r.err;
  CliResult extra = Run({"jobs", "list", "--", "x"});
  EXPECT_EQ(extra.rc, 2);
  EXPECT_NE(extra.err.find("unrecognized arguments: -- x"), std::string::npos);
  CliResult group = Run({"ai-platform", "jobs"});
  EXPECT_EQ(group.rc, 2);
  EXPECT_EQ(
      group.err.rfind("ERROR: (trainyard.ai-platform.jobs) Command name argument expected.", 0), 0u)
      << group.err;
}

TEST_F(CliCommandsTest, HelpAndVersionExitZero) {
  CliResult help = Run({"jobs", "submit", "training", "--help"});
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("--package-path"), std::string::npos);
  CliResult version = Run({"--version"});
  EXPECT_EQ(version.rc, 0);
  EXPECT_EQ(version.out.rfind("trainyard ", 0), 0u);
}

}  // namespace
}  // namespace trainyard::cli
