#include "console_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "temp_dir.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::api {
namespace {

using nlohmann::json;

// Both stores: the SQLite one answers from its indexes, the in-memory one from the defaults.
class ConsoleApiTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto s = store::OpenSqliteJobStore({.path = dir_.path() + "/db.sqlite"});
      ASSERT_TRUE(s.ok()) << s.status().message();
      store_ = std::move(s).value();
    } else {
      store_ = store::NewInMemoryJobStore();
    }
  }

  void AddJob(const std::string& project, const std::string& id, model::JobState state) {
    model::Job job;
    job.project = project;
    job.job_id = id;
    job.state = state;
    job.create_time = 1;
    ASSERT_TRUE(store_->CreateJob(job).ok());
  }

  // Appends `n` lines "<task> <i>" of one task in batches of `batch`, interleaved with lines of
  // another job so that insert ids are not dense per job.
  void AddLines(const std::string& job, const std::string& task, int n, int batch,
                const std::string& trial = "") {
    for (int i = 0; i < n; i += batch) {
      std::vector<model::LogEntry> lines;
      for (int k = i; k < std::min(n, i + batch); ++k) {
        model::LogEntry e;
        e.project = "p";
        e.job_id = job;
        e.task_name = task;
        e.trial_id = trial;
        e.timestamp = 1000 + k;
        e.severity = k % 7 == 0 ? model::Severity::kError : model::Severity::kInfo;
        e.message = task + " " + std::to_string(k);
        lines.push_back(e);
      }
      model::LogEntry other;
      other.project = "p";
      other.job_id = "other";
      other.task_name = "master-replica-0";
      other.timestamp = 1;
      other.message = "noise";
      lines.push_back(other);
      ASSERT_TRUE(store_->AppendLogs(lines).ok());
    }
  }

  json Get(Result<std::string> r) {
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? json::parse(*r) : json();
  }

  test_support::TempDir dir_{"ty-console-api"};
  std::unique_ptr<store::JobStore> store_;
};

TEST_P(ConsoleApiTest, JobsSummaryCountsOneProjectByState) {
  AddJob("p", "a", model::JobState::kQueued);
  AddJob("p", "b", model::JobState::kQueued);
  AddJob("p", "c", model::JobState::kFailed);
  AddJob("q", "d", model::JobState::kRunning);
  json s = Get(JobsSummary(*store_, "p"));
  EXPECT_EQ(s["jobStateCounts"], json({{"QUEUED", "2"}, {"FAILED", "1"}}));
  EXPECT_EQ(s["totalJobs"], "3");
  EXPECT_EQ(Get(JobsSummary(*store_, "empty")),
            json({{"jobStateCounts", json::object()}, {"totalJobs", "0"}}));
}

TEST_P(ConsoleApiTest, LogsSummaryCountsStreamsAtASnapshot) {
  AddJob("p", "j", model::JobState::kRunning);
  AddJob("p", "other", model::JobState::kRunning);
  AddLines("j", "master-replica-0", 250, 40);
  AddLines("j", "worker-replica-0", 30, 7);
  json s = Get(LogsSummary(*store_, "p", "j", {}));
  EXPECT_EQ(s["lineCount"], "280");
  ASSERT_EQ(s["streams"].size(), 2u);
  EXPECT_EQ(s["streams"][0], json({{"taskName", "master-replica-0"}, {"lineCount", "250"}}));
  EXPECT_EQ(s["streams"][1], json({{"taskName", "worker-replica-0"}, {"lineCount", "30"}}));
  json w = Get(LogsSummary(*store_, "p", "j", {{"taskName", "worker-replica-0"}}));
  EXPECT_EQ(w["lineCount"], "30");
  // Following from the snapshot reads exactly the lines stored after it.
  int64_t snapshot = std::stoll(s["snapshotInsertId"].get<std::string>());
  AddLines("j", "master-replica-0", 5, 5);
  json after = Get(LogsSummary(*store_, "p", "j", {}));
  EXPECT_EQ(after["lineCount"], "285");
  auto followed =
      Get(ListJobLogs(*store_, "p", "j", {{"afterInsertId", std::to_string(snapshot)}}))["entries"];
  EXPECT_EQ(followed.size(), 5u);

  EXPECT_EQ(LogsSummary(*store_, "p", "nope", {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LogsSummary(*store_, "p", "j", {{"bogus", "1"}}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(ConsoleApiTest, LogLinesReadsAnyPositionInIngestionOrder) {
  AddJob("p", "j", model::JobState::kRunning);
  AddJob("p", "other", model::JobState::kRunning);
  AddLines("j", "master-replica-0", 300, 37);
  AddLines("j", "worker-replica-0", 20, 20);
  auto messages = [](const json& page) {
    std::vector<std::string> out;
    for (const auto& e : page["entries"]) out.push_back(e["jsonPayload"]["message"]);
    return out;
  };
  // Every line once, in order, whatever the page boundaries.
  std::vector<std::string> all;
  for (int off = 0; off < 330; off += 33) {
    json page =
        Get(LogLines(*store_, "p", "j", {{"lineOffset", std::to_string(off)}, {"pageSize", "33"}}));
    for (auto& m : messages(page)) all.push_back(m);
  }
  ASSERT_EQ(all.size(), 320u);
  EXPECT_EQ(all[0], "master-replica-0 0");
  EXPECT_EQ(all[299], "master-replica-0 299");
  EXPECT_EQ(all[300], "worker-replica-0 0");
  // One request for any line: the 151st, the last, and past the end.
  EXPECT_EQ(messages(Get(LogLines(*store_, "p", "j", {{"lineOffset", "150"}, {"pageSize", "1"}}))),
            std::vector<std::string>{"master-replica-0 150"});
  EXPECT_EQ(messages(Get(LogLines(*store_, "p", "j", {{"lineOffset", "319"}}))),
            std::vector<std::string>{"worker-replica-0 19"});
  EXPECT_TRUE(messages(Get(LogLines(*store_, "p", "j", {{"lineOffset", "320"}}))).empty());
  // One task's lines by their own positions.
  EXPECT_EQ(messages(Get(LogLines(
                *store_, "p", "j",
                {{"lineOffset", "5"}, {"pageSize", "2"}, {"taskName", "worker-replica-0"}}))),
            (std::vector<std::string>{"worker-replica-0 5", "worker-replica-0 6"}));
  // A snapshot bounds the read: lines stored later are not there.
  json first = Get(LogLines(*store_, "p", "j", {{"lineOffset", "0"}, {"pageSize", "1"}}));
  std::string snapshot = first["snapshotInsertId"];
  AddLines("j", "master-replica-0", 3, 3);
  EXPECT_TRUE(messages(Get(LogLines(*store_, "p", "j",
                                    {{"lineOffset", "320"}, {"snapshotInsertId", snapshot}})))
                  .empty());
  EXPECT_EQ(messages(Get(LogLines(*store_, "p", "j", {{"lineOffset", "320"}}))).size(), 3u);
}

TEST_P(ConsoleApiTest, LogLinesRefusesBadParameters) {
  AddJob("p", "j", model::JobState::kRunning);
  AddLines("j", "master-replica-0", 3, 3);
  auto code = [&](const QueryParams& params) {
    return LogLines(*store_, "p", "j", params).status().code();
  };
  EXPECT_EQ(code({}), StatusCode::kInvalidArgument);  // lineOffset is required
  EXPECT_EQ(code({{"lineOffset", "-1"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{"lineOffset", "x"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{"lineOffset", "0"}, {"pageSize", "5001"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{"lineOffset", "0"}, {"minSeverity", "ERROR"}}), StatusCode::kInvalidArgument);
  auto bad = LogLines(*store_, "p", "j", {{"lineOffset", "0"}, {"minSeverity", "ERROR"}});
  EXPECT_NE(bad.status().message().find("minSeverity"), std::string::npos);
  EXPECT_EQ(LogLines(*store_, "p", "nope", {{"lineOffset", "0"}}).status().code(),
            StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Stores, ConsoleApiTest, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Sqlite" : "InMemory"; });

}  // namespace
}  // namespace trainyard::api
