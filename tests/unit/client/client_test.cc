#include "trainyard/client/client.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fake_daemon.h"

namespace trainyard::client {
namespace {

using json = nlohmann::json;
using trainyard::testing::FakeDaemon;

class ClientTest : public ::testing::Test {
 protected:
  ClientOptions Options(const std::string& project = "p") {
    ClientOptions o;
    o.endpoint = daemon_.endpoint();
    o.project = project;
    return o;
  }
  FakeDaemon daemon_;
};

TEST_F(ClientTest, CreatesAndGetsAJob) {
  Client c(Options());
  auto created = c.CreateJob(R"({"jobId":"j1","trainingInput":{"region":"us-central1"}})");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(json::parse(*created)["state"], "QUEUED");
  auto got = c.GetJob("j1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(json::parse(*got)["jobId"], "j1");
  auto reqs = daemon_.Requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/v1/projects/p/jobs");
  EXPECT_EQ(reqs[1].path, "/v1/projects/p/jobs/j1");
}

TEST_F(ClientTest, MapsErrorBodyToStatus) {
  Client c(Options());
  auto got = c.GetJob("missing");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().ToString(),
            "NOT_FOUND: Field: name Error: The specified job does not exist.");
  EXPECT_FALSE(IsConnectionError(got.status()));
  ASSERT_TRUE(c.CreateJob(R"({"jobId":"dup"})").ok());
  auto again = c.CreateJob(R"({"jobId":"dup"})");
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
}

TEST_F(ClientTest, ListsPageByPage) {
  for (int i = 0; i < 5; ++i) {
    daemon_.PutJob("p", {{"jobId", "job" + std::to_string(i)}, {"state", "QUEUED"}});
  }
  Client c(Options());
  std::vector<std::string> ids;
  std::string token;
  int pages = 0;
  do {
    auto page = c.ListJobs("state:QUEUED", 2, token);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const auto& j : page->jobs) ids.push_back(json::parse(j)["jobId"]);
    token = page->next_page_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(ids, (std::vector<std::string>{"job0", "job1", "job2", "job3", "job4"}));
  auto reqs = daemon_.Requests();
  EXPECT_NE(reqs[0].path.find("filter=state:QUEUED"), std::string::npos) << reqs[0].path;
  EXPECT_NE(reqs[1].path.find("pageToken=2"), std::string::npos) << reqs[1].path;
}

TEST_F(ClientTest, EmptyListIsAnEmptyPage) {
  Client c(Options("empty"));
  auto page = c.ListJobs("", 0, "");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->jobs.empty());
  EXPECT_TRUE(page->next_page_token.empty());
}

TEST_F(ClientTest, CancelsAndPatchesLabelsWithEtag) {
  daemon_.PutJob("p", {{"jobId", "j"}, {"state", "RUNNING"}, {"etag", "ZXRhZzE="}});
  Client c(Options());
  ASSERT_TRUE(c.CancelJob("j").ok());
  auto patched = c.PatchJobLabels("j", R"({"team":"a"})", "ZXRhZzE=");
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ(json::parse(*patched)["labels"]["team"], "a");
  auto reqs = daemon_.Requests();
  EXPECT_EQ(reqs[0].path, "/v1/projects/p/jobs/j:cancel");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].path, "/v1/projects/p/jobs/j?updateMask=labels,etag");
  EXPECT_EQ(json::parse(reqs[1].body)["etag"], "ZXRhZzE=");
  auto stale = c.PatchJobLabels("j", R"({"team":"b"})", "ZXRhZzE=");
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted);
}

TEST_F(ClientTest, DecodesLogEntriesAndFollowsTheCursor) {
  daemon_.AddLog("j", "INFO", "master-replica-0", "hello");
  daemon_.AddLog("j", "ERROR", "worker-replica-0", "boom", "3");
  Client c(Options());
  auto page = c.ListJobLogs("j", {.after_insert_id = "0", .page_size = 1000});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->entries.size(), 2u);
  EXPECT_EQ(page->entries[0].severity, "INFO");
  EXPECT_EQ(page->entries[0].task_name, "master-replica-0");
  EXPECT_EQ(page->entries[0].trial_id, "");
  EXPECT_EQ(page->entries[0].message, "hello");
  EXPECT_EQ(nlohmann::json::parse(page->entries[0].json)["jsonPayload"]["message"], "hello");
  EXPECT_EQ(page->entries[1].trial_id, "3");
  EXPECT_EQ(page->next_after_insert_id, "2");
  auto next = c.ListJobLogs("j", {.after_insert_id = page->next_after_insert_id});
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->entries.empty());
  auto filtered = c.ListJobLogs("j", {.after_insert_id = "0", .task_name = "worker-replica-0"});
  ASSERT_TRUE(filtered.ok());
  ASSERT_EQ(filtered->entries.size(), 1u);
  EXPECT_EQ(filtered->entries[0].message, "boom");
  EXPECT_EQ(daemon_.Requests().back().path,
            "/v1/projects/p/jobs/j/logs?afterInsertId=0&taskName=worker-replica-0");
}

TEST_F(ClientTest, ListsLogsWithEveryParameter) {
  daemon_.AddLog("j", "INFO", "master-replica-0", "a", "", "2026-11-21T10:00:01.000000Z");
  daemon_.AddLog("j", "WARNING", "master-replica-0", "b", "", "2026-11-21T10:00:02.000000Z");
  daemon_.AddLog("j", "ERROR", "master-replica-0", "c", "", "2026-11-21T10:00:03.000000Z");
  Client c(Options());
  auto page = c.ListJobLogs("j", {.descending = true,
                                  .task_name = "master-replica-0",
                                  .trial_id = "",
                                  .min_severity = "WARNING",
                                  .start_time = "2026-11-21T10:00:00Z",
                                  .page_size = 1});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  // As the fake records it: decoded, parameters sorted.
  EXPECT_EQ(daemon_.Requests().back().path,
            "/v1/projects/p/jobs/j/logs?minSeverity=WARNING&orderBy=timestamp desc&pageSize=1&"
            "startTime=2026-11-21T10:00:00Z&taskName=master-replica-0&trialId=");
  ASSERT_EQ(page->entries.size(), 1u);
  EXPECT_EQ(page->entries[0].message, "c");
  EXPECT_EQ(page->snapshot_insert_id, "3");
  ASSERT_FALSE(page->next_page_token.empty());
  auto second = c.ListJobLogs("j", {.descending = true,
                                    .page_token = page->next_page_token,
                                    .min_severity = "WARNING",
                                    .page_size = 1});
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->entries.size(), 1u);
  EXPECT_EQ(second->entries[0].message, "b");
}

TEST_F(ClientTest, UploadsAndDownloadsObjectsWithEncodedNames) {
  Client c(Options());
  auto missing = c.BucketExists("b");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(*missing);
  ASSERT_TRUE(c.CreateBucket("b").ok());
  EXPECT_TRUE(*c.BucketExists("b"));
  std::string data("bin\0ary", 7);
  auto up = c.UploadObject("b", "job/abc/trainer-0.0.tar.gz", data);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(daemon_.Objects().at("b/job/abc/trainer-0.0.tar.gz"), data);
  auto down = c.DownloadObject("b", "job/abc/trainer-0.0.tar.gz");
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  EXPECT_EQ(*down, data);
  auto buckets = c.ListBuckets();
  ASSERT_TRUE(buckets.ok());
  EXPECT_EQ(*buckets, std::vector<std::string>{"b"});
}

TEST_F(ClientTest, TogglesAdmission) {
  Client c(Options());
  EXPECT_FALSE(*c.GetAdmissionPaused());
  EXPECT_TRUE(*c.SetAdmissionPaused(true));
  EXPECT_TRUE(daemon_.paused());
  EXPECT_FALSE(*c.SetAdmissionPaused(false));
}

TEST_F(ClientTest, SendsBearerTokenOnlyWhenSet) {
  ClientOptions o = Options();
  Client plain(o);
  ASSERT_TRUE(plain.GetAdmissionPaused().ok());
  o.token = "s3cret";
  Client authed(o);
  ASSERT_TRUE(authed.GetAdmissionPaused().ok());
  auto reqs = daemon_.Requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].authorization, "");
  EXPECT_EQ(reqs[1].authorization, "Bearer s3cret");
}

TEST(ClientConnectionTest, UnreachableDaemonIsAConnectionError) {
  int port = 0;
  {
    FakeDaemon d;  // take a free port, then release it
    port = d.port();
  }
  ClientOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.connect_timeout_s = 2;
  Client c(o);
  auto r = c.GetJob("j");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsConnectionError(r.status()));
  EXPECT_NE(r.status().message().find(o.endpoint), std::string::npos);
  EXPECT_NE(r.status().message().find("trainyardd"), std::string::npos);
}

TEST(ClientHelpersTest, EncodesAndMapsCodes) {
  EXPECT_EQ(StatusCodeFromName("FAILED_PRECONDITION"), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StatusCodeFromName("bogus"), StatusCode::kUnknown);
  EXPECT_EQ(StatusCodeFromHttp(404), StatusCode::kNotFound);
  EXPECT_EQ(StatusCodeFromHttp(503), StatusCode::kUnavailable);
}

TEST(ClientHelpersTest, ReadsOptionsFromEnvironment) {
  setenv("TRAINYARD_ENDPOINT", "http://h:1", 1);
  setenv("TRAINYARD_PROJECT", "proj", 1);
  unsetenv("TRAINYARD_TOKEN");
  ClientOptions o = OptionsFromEnvironment();
  EXPECT_EQ(o.endpoint, "http://h:1");
  EXPECT_EQ(o.project, "proj");
  EXPECT_EQ(o.token, "");
  unsetenv("TRAINYARD_ENDPOINT");
  unsetenv("TRAINYARD_PROJECT");
  o = OptionsFromEnvironment();
  EXPECT_EQ(o.endpoint, kDefaultEndpoint);
  EXPECT_EQ(o.project, kDefaultProject);
}

}  // namespace
}  // namespace trainyard::client
