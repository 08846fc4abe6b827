#include "logging_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "log_filter.h"
#include "trainyard/core/time.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::api {
namespace {

using nlohmann::json;

class LoggingApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::NewInMemoryJobStore();
    std::vector<model::LogEntry> entries;
    // 12 lines of j1 (master, one service line, four share one timestamp), 3 of j2.
    Timestamp t0 = ParseRfc3339("2026-01-01T10:00:00Z").value();
    for (int i = 0; i < 12; ++i) {
      model::LogEntry e;
      e.project = "p";
      e.job_id = "j1";
      e.task_name = i == 0 ? "service" : "master-replica-0";
      e.timestamp = t0 + (i < 4 ? 0 : i) * kMicrosPerSecond;
      e.severity = i % 5 == 4 ? model::Severity::kWarning : model::Severity::kInfo;
      e.message = "m" + std::to_string(i);
      entries.push_back(e);
      if (i < 3) {
        e.job_id = "j2";
        entries.push_back(e);
      }
    }
    ASSERT_TRUE(store_->AppendLogs(entries).ok());
  }

  json List(const json& body) {
    auto r = ListLogEntries(*store_, body.dump());
    EXPECT_TRUE(r.ok()) << body.dump() << ": " << r.status().message();
    return r.ok() ? json::parse(*r) : json();
  }

  std::vector<std::string> Messages(const json& page) {
    std::vector<std::string> out;
    for (const auto& e : page.value("entries", json::array())) {
      out.push_back(e.contains("jsonPayload") ? e["jsonPayload"]["message"].get<std::string>()
                                              : e["textPayload"].get<std::string>());
    }
    return out;
  }

  std::unique_ptr<store::JobStore> store_;
};

TEST_F(LoggingApiTest, ListsOneJobInOrderWithPaging) {
  json req = {{"resourceNames", {"projects/p"}},
              {"filter", R"((resource.type="ml_job" OR resource.type="cloudml_job") AND )"
                         R"(resource.labels.job_id="j1")"},
              {"orderBy", "timestamp asc"},
              {"pageSize", 5}};
  std::vector<std::string> all;
  for (int pages = 0; pages < 10; ++pages) {
    json page = List(req);
    for (auto& m : Messages(page)) all.push_back(m);
    if (!page.contains("nextPageToken")) break;
    req["pageToken"] = page["nextPageToken"];
  }
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all.front(), "m0");
  EXPECT_EQ(all.back(), "m11");
}

TEST_F(LoggingApiTest, ReplicasLinesStoredOutOfTimestampOrderComeBackInTimestampOrder) {
  // Two replicas' lines reach the store a few milliseconds apart from when they were printed.
  Timestamp t0 = ParseRfc3339("2026-01-02T10:00:00Z").value();
  std::vector<model::LogEntry> entries;
  for (auto [task, ms] : std::vector<std::pair<std::string, int>>{{"worker-replica-0", 10},
                                                                  {"worker-replica-0", 30},
                                                                  {"master-replica-0", 5},
                                                                  {"master-replica-0", 20},
                                                                  {"worker-replica-1", 15}}) {
    model::LogEntry e;
    e.project = "p";
    e.job_id = "multi";
    e.task_name = task;
    e.timestamp = t0 + ms * 1000;
    e.message = task + "@" + std::to_string(ms);
    entries.push_back(e);
  }
  ASSERT_TRUE(store_->AppendLogs(entries).ok());
  json req = {{"resourceNames", {"projects/p"}},
              {"filter", R"(resource.type="ml_job" AND resource.labels.job_id="multi")"},
              {"orderBy", "timestamp asc"}};
  EXPECT_EQ(
      Messages(List(req)),
      (std::vector<std::string>{"master-replica-0@5", "worker-replica-0@10", "worker-replica-1@15",
                                "master-replica-0@20", "worker-replica-0@30"}));
  req["orderBy"] = "timestamp desc";
  EXPECT_EQ(Messages(List(req)).front(), "worker-replica-0@30");
}

TEST_F(LoggingApiTest, WritesCloudLoggingEntries) {
  json page = List({{"resourceNames", {"projects/p"}},
                    {"filter", R"(resource.labels.job_id="j1")"},
                    {"pageSize", 2}});
  ASSERT_EQ(page["entries"].size(), 2u);
  const json& service = page["entries"][0];
  EXPECT_EQ(service["textPayload"], "m0");
  EXPECT_EQ(service["logName"], "projects/p/logs/ml.googleapis.com%2Fj1");
  EXPECT_EQ(service["resource"]["labels"]["task_name"], "service");
  const json& line = page["entries"][1];
  EXPECT_EQ(line["jsonPayload"]["message"], "m1");
  EXPECT_EQ(line["resource"]["type"], "ml_job");
  EXPECT_EQ(line["resource"]["labels"]["job_id"], "j1");
  EXPECT_EQ(line["resource"]["labels"]["project_id"], "p");
  EXPECT_EQ(line["logName"], "projects/p/logs/master-replica-0");
  EXPECT_EQ(line["severity"], "INFO");
  EXPECT_EQ(line["timestamp"], "2026-01-01T10:00:00.000000Z");
  EXPECT_EQ(line["insertId"].get<std::string>().size(), static_cast<size_t>(kInsertIdWidth));
  EXPECT_LT(service["insertId"].get<std::string>(), line["insertId"].get<std::string>());
}

TEST_F(LoggingApiTest, FollowsGcloudsCursorAcrossEqualTimestamps) {
  // The first two master lines share a timestamp with the service line: resume after the
  // first of them the way gcloud's LogPosition does.
  json first = List({{"resourceNames", {"projects/p"}},
                     {"filter", R"(resource.labels.job_id="j1" AND )"
                                R"(resource.labels.task_name="master-replica-0")"},
                     {"pageSize", 1}});
  ASSERT_EQ(first["entries"].size(), 1u);
  std::string ts = first["entries"][0]["timestamp"];
  std::string id = first["entries"][0]["insertId"];
  json next =
      List({{"resourceNames", {"projects/p"}},
            {"filter", R"(resource.labels.job_id="j1" AND )"
                       R"((resource.labels.task_name="master-replica-0" OR )"
                       R"(labels.task_name="master-replica-0") AND ((timestamp=")" +
                           ts + R"(" AND insertId>")" + id + R"(") OR timestamp>")" + ts + R"("))"},
            {"pageSize", 1000}});
  std::vector<std::string> want = {"m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11"};
  EXPECT_EQ(Messages(next), want);
}

TEST_F(LoggingApiTest, OrdersNewestFirstAndFiltersSeverity) {
  json req = {{"resourceNames", {"projects/p"}},
              {"filter", "resource.labels.job_id=j1 severity>=WARNING"},
              {"orderBy", "timestamp desc"},
              {"pageSize", 1}};
  std::vector<std::string> all;
  for (int pages = 0; pages < 10; ++pages) {
    json page = List(req);
    for (auto& m : Messages(page)) all.push_back(m);
    if (!page.contains("nextPageToken")) break;
    req["pageToken"] = page["nextPageToken"];
  }
  EXPECT_EQ(all, (std::vector<std::string>{"m9", "m4"}));
}

TEST_F(LoggingApiTest, AnswersEmptyObjectWhenNothingMatches) {
  auto r =
      ListLogEntries(*store_, R"({"resourceNames":["projects/p"],"filter":"severity>=ERROR"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "{}");
}

TEST_F(LoggingApiTest, RejectsBadRequestsNamingTheField) {
  for (const char* body :
       {R"({"filter":"a=b"})", R"({"resourceNames":["organizations/1"]})",
        R"({"resourceNames":["projects/p"],"pageSize":1001})",
        R"({"resourceNames":["projects/p"],"orderBy":"severity"})",
        R"({"resourceNames":["projects/p"],"pageToken":"abc"})",
        R"({"resourceNames":["projects/p"],"bogus":1})",
        R"({"resourceNames":["projects/p"],"filter":"timestamp>=\"soon\""})", "[1]", "not json"}) {
    auto r = ListLogEntries(*store_, body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << body;
  }
}

}  // namespace
}  // namespace trainyard::api
