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

TEST_P(ConsoleApiTest, StateHistoryListsTheCreationThenEveryChange) {
  AddJob("p", "h", model::JobState::kQueued);
  auto job = store_->GetJob("p", "h");
  ASSERT_TRUE(job.ok());
  model::Job j = *job;
  const std::pair<model::JobState, const char*> steps[] = {
      {model::JobState::kPreparing, ""},
      {model::JobState::kRunning, ""},
      {model::JobState::kFailed, "The replica master 0 exited with a non-zero status of 3."}};
  model::JobState from = model::JobState::kQueued;
  int64_t t = 2'000'000;
  for (const auto& [to, reason] : steps) {
    j.state = to;
    ASSERT_TRUE(store_->UpdateJob(j, store::StateChange{from, to, t, reason}).ok());
    from = to;
    t += 1'500'000;
  }
  json h = Get(StateHistory(*store_, "p", "h", {}));
  ASSERT_EQ(h["stateChanges"].size(), 4u) << h.dump();
  EXPECT_EQ(h["stateChanges"][0],
            json({{"state", "QUEUED"}, {"time", "1970-01-01T00:00:00.000001Z"}}));
  EXPECT_EQ(h["stateChanges"][1], json({{"state", "PREPARING"},
                                        {"fromState", "QUEUED"},
                                        {"time", "1970-01-01T00:00:02.000000Z"}}));
  EXPECT_EQ(h["stateChanges"][3]["state"], "FAILED");
  EXPECT_EQ(h["stateChanges"][3]["fromState"], "RUNNING");
  EXPECT_EQ(h["stateChanges"][3]["time"], "1970-01-01T00:00:05.000000Z");
  EXPECT_EQ(h["stateChanges"][3]["reason"], steps[2].second);
  EXPECT_FALSE(h["stateChanges"][1].contains("reason"));
  // Unknown jobs and parameters are refused.
  EXPECT_EQ(StateHistory(*store_, "p", "nope", {}).status().code(), StatusCode::kNotFound);
  QueryParams bad;
  bad.emplace("x", "1");
  auto refused = StateHistory(*store_, "p", "h", bad);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("\"x\""), std::string::npos);
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

std::vector<int64_t> Offsets(const json& answer) {
  std::vector<int64_t> out;
  for (const auto& m : answer["matches"])
    out.push_back(std::stoll(m["lineOffset"].get<std::string>()));
  return out;
}

TEST_P(ConsoleApiTest, LogSearchFindsLinesByPositionBothWays) {
  AddJob("p", "j", model::JobState::kRunning);
  AddJob("p", "other", model::JobState::kRunning);
  AddLines("j", "master-replica-0", 300, 37);  // ordinals 0..299: "master-replica-0 K"
  AddLines("j", "worker-replica-0", 20, 6);    // ordinals 300..319
  auto search = [&](QueryParams params) {
    params.emplace("text", "REPLICA-0 15");  // ASCII case-insensitive by default
    return Get(SearchLogs(*store_, "p", "j", params));
  };
  // Forward from the first line, nearest first; the matched line comes along.
  json first = search({{"pageSize", "3"}});
  EXPECT_EQ(Offsets(first), (std::vector<int64_t>{15, 150, 151}));
  EXPECT_EQ(first["matches"][1]["entry"]["jsonPayload"]["message"], "master-replica-0 150");
  EXPECT_FALSE(first.contains("totalMatches"));
  EXPECT_EQ(Offsets(search({{"afterLineOffset", "151"}, {"pageSize", "100"}})),
            (std::vector<int64_t>{152, 153, 154, 155, 156, 157, 158, 159, 315}));
  EXPECT_EQ(Offsets(search({{"afterLineOffset", "15"}})), (std::vector<int64_t>{150}));
  EXPECT_TRUE(Offsets(search({{"afterLineOffset", "315"}})).empty());
  // Backward: before a position, nearest first, with or without counting.
  EXPECT_EQ(Offsets(search({{"beforeLineOffset", "300"}, {"pageSize", "2"}})),
            (std::vector<int64_t>{159, 158}));
  EXPECT_EQ(Offsets(search({{"beforeLineOffset", "151"}, {"pageSize", "5"}})),
            (std::vector<int64_t>{150, 15}));
  EXPECT_TRUE(Offsets(search({{"beforeLineOffset", "15"}})).empty());
  json counted = search({{"beforeLineOffset", "300"}, {"pageSize", "2"}, {"countMatches", "true"}});
  EXPECT_EQ(Offsets(counted), (std::vector<int64_t>{159, 158}));
  EXPECT_EQ(counted["totalMatches"], "12");  // 15, 150..159, worker 15
  EXPECT_EQ(counted["matchIndex"], "10");    // 159 is the 11th match
  EXPECT_EQ(search({{"countMatches", "true"}})["totalMatches"], "12");
  EXPECT_EQ(search({{"countMatches", "true"}})["matchIndex"], "0");
  EXPECT_EQ(search({{"countMatches", "true"}, {"afterLineOffset", "15"}})["matchIndex"], "1");
  EXPECT_EQ(search({{"countMatches", "true"}, {"beforeLineOffset", "151"}})["matchIndex"], "1");
  json none = search({{"countMatches", "true"}, {"afterLineOffset", "315"}});
  EXPECT_EQ(none["totalMatches"], "12");
  EXPECT_FALSE(none.contains("matchIndex"));
  // Case, one task's own positions, and a text starting with a digit.
  json exact = Get(SearchLogs(*store_, "p", "j", {{"text", "REPLICA"}, {"matchCase", "true"}}));
  EXPECT_TRUE(exact["matches"].empty());
  EXPECT_EQ(Offsets(Get(
                SearchLogs(*store_, "p", "j", {{"text", "15"}, {"taskName", "worker-replica-0"}}))),
            (std::vector<int64_t>{15}));
  EXPECT_EQ(Offsets(Get(SearchLogs(*store_, "p", "j", {{"text", "9 2"}}))), std::vector<int64_t>{});
  EXPECT_EQ(Offsets(Get(SearchLogs(*store_, "p", "j", {{"text", "a-0 29"}, {"pageSize", "20"}}))),
            (std::vector<int64_t>{29, 290, 291, 292, 293, 294, 295, 296, 297, 298, 299}));
  // A snapshot bounds the search.
  std::string snapshot = first["snapshotInsertId"];
  AddLines("j", "master-replica-0", 20, 20);  // ordinals 320..339, "master-replica-0 15" at 335
  EXPECT_EQ(Offsets(search({{"afterLineOffset", "315"}, {"snapshotInsertId", snapshot}})),
            std::vector<int64_t>{});
  EXPECT_EQ(Offsets(search({{"afterLineOffset", "315"}})), (std::vector<int64_t>{335}));
}

TEST_P(ConsoleApiTest, LogSearchRefusesBadParameters) {
  AddJob("p", "j", model::JobState::kRunning);
  AddLines("j", "master-replica-0", 3, 3);
  auto status = [&](const QueryParams& params) {
    return SearchLogs(*store_, "p", "j", params).status();
  };
  auto field = [&](const QueryParams& params) {
    Status st = status(params);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
    return st.violations().empty() ? std::string() : st.violations()[0].field;
  };
  EXPECT_EQ(field({}), "text");
  EXPECT_EQ(field({{"text", ""}}), "text");
  EXPECT_EQ(field({{"text", std::string(1001, 'x')}}), "text");
  EXPECT_EQ(field({{"text", "x"}, {"afterLineOffset", "1"}, {"beforeLineOffset", "2"}}),
            "beforeLineOffset");
  EXPECT_EQ(field({{"text", "x"}, {"afterLineOffset", "-2"}}), "afterLineOffset");
  EXPECT_EQ(field({{"text", "x"}, {"beforeLineOffset", "-1"}}), "beforeLineOffset");
  EXPECT_EQ(field({{"text", "x"}, {"pageSize", "1001"}}), "pageSize");
  EXPECT_EQ(field({{"text", "x"}, {"matchCase", "maybe"}}), "matchCase");
  EXPECT_EQ(field({{"text", "x"}, {"minSeverity", "ERROR"}}), "minSeverity");
  EXPECT_EQ(SearchLogs(*store_, "p", "nope", {{"text", "x"}}).status().code(),
            StatusCode::kNotFound);
}

std::string DownloadAll(Result<LogDownload> started) {
  EXPECT_TRUE(started.ok()) << started.status().message();
  if (!started.ok()) return "";
  std::string out;
  for (int i = 0; i < 1000; ++i) {
    auto piece = started->Next();
    EXPECT_TRUE(piece.ok()) << piece.status().message();
    if (!piece.ok() || piece->empty()) break;
    out += *piece;
  }
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

TEST_P(ConsoleApiTest, LogDownloadStreamsEveryLineAsText) {
  AddJob("p", "j", model::JobState::kRunning);
  AddJob("p", "other", model::JobState::kRunning);
  AddLines("j", "master-replica-0", 12000, 1000);  // more than two batches of the download
  AddLines("j", "worker-replica-0", 10, 10, "3");
  auto all = SplitLines(DownloadAll(LogDownload::Start(*store_, "p", "j", {})));
  ASSERT_EQ(all.size(), 12010u);
  EXPECT_EQ(all[0], "1970-01-01T00:00:00.001000Z\tERROR\tmaster-replica-0\tmaster-replica-0 0");
  EXPECT_EQ(all[1], "1970-01-01T00:00:00.001001Z\tINFO\tmaster-replica-0\tmaster-replica-0 1");
  EXPECT_EQ(all[11999].substr(all[11999].rfind('\t') + 1), "master-replica-0 11999");
  EXPECT_EQ(all[12000],
            "1970-01-01T00:00:00.001000Z\tERROR\tworker-replica-0/trial-3\t"
            "worker-replica-0 0");
  auto started =
      LogDownload::Start(*store_, "p", "j", {{"taskName", "worker-replica-0"}, {"trialId", "3"}});
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(started->file_name(), "j-worker-replica-0-trial-3.log");
  // Only the messages, of one task, at least ERROR.
  auto errors = SplitLines(DownloadAll(LogDownload::Start(
      *store_, "p", "j",
      {{"format", "message"}, {"taskName", "master-replica-0"}, {"minSeverity", "error"}})));
  ASSERT_EQ(errors.size(), 1715u);  // k % 7 == 0 for k < 12000
  EXPECT_EQ(errors[1], "master-replica-0 7");
  // A snapshot bounds it; a job without lines downloads nothing.
  AddJob("p", "quiet", model::JobState::kQueued);
  EXPECT_EQ(DownloadAll(LogDownload::Start(*store_, "p", "quiet", {})), "");
  EXPECT_EQ(
      SplitLines(DownloadAll(LogDownload::Start(*store_, "p", "j", {{"snapshotInsertId", "1"}})))
          .size(),
      1u);

  auto code = [&](const QueryParams& params) {
    return LogDownload::Start(*store_, "p", "j", params).status().code();
  };
  EXPECT_EQ(code({{"format", "xml"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{"minSeverity", "LOUD"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{"lineOffset", "0"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{"startTime", "yesterday"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(LogDownload::Start(*store_, "p", "nope", {}).status().code(), StatusCode::kNotFound);
  // A time range (the console's time filter): startTime inclusive, endTime exclusive.
  auto range =
      SplitLines(DownloadAll(LogDownload::Start(*store_, "p", "j",
                                                {{"format", "message"},
                                                 {"taskName", "master-replica-0"},
                                                 {"startTime", "1970-01-01T00:00:00.001010Z"},
                                                 {"endTime", "1970-01-01T00:00:00.001020Z"}})));
  ASSERT_EQ(range.size(), 10u);
  EXPECT_EQ(range.front(), "master-replica-0 10");
  EXPECT_EQ(range.back(), "master-replica-0 19");
}

INSTANTIATE_TEST_SUITE_P(Stores, ConsoleApiTest, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Sqlite" : "InMemory"; });

}  // namespace
}  // namespace trainyard::api
