#include "logging_api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "log_filter.h"
#include "temp_dir.h"
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
        R"({"resourceNames":["projects/p"],"pageToken":"17"})",
        R"({"resourceNames":["projects/p"],"bogus":1})",
        R"({"resourceNames":["projects/p"],"filter":"timestamp>=\"soon\""})", "[1]", "not json"}) {
    auto r = ListLogEntries(*store_, body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << body;
  }
}

TEST_F(LoggingApiTest, APageTokenBelongsToItsOrder) {
  json req = {{"resourceNames", {"projects/p"}}, {"orderBy", "timestamp desc"}, {"pageSize", 2}};
  json page = List(req);
  ASSERT_TRUE(page.contains("nextPageToken"));
  req["orderBy"] = "timestamp asc";
  req["pageToken"] = page["nextPageToken"];
  auto r = ListLogEntries(*store_, req.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("orderBy"), std::string::npos) << r.status().message();
}

// --- A 3-replica job through gcloud's algorithms, on the SQLite store -----------------------

std::string Rfc3339(Timestamp t) { return FormatRfc3339Micros(t); }

// What gcloud's command_lib/logs/stream.py LogPosition does: timestamps and insert ids are
// compared as strings; the lower bound is `timestamp>="T"`, or after equal timestamps
// `((timestamp="T" AND insertId>"I") OR timestamp>"T")`.
struct GcloudPosition {
  std::string timestamp = "1970-01-01T01:00:00.000000000Z";
  std::string insert_id;
  bool need_insert_id = false;

  bool Update(const std::string& ts, const std::string& id) {
    if (ts < timestamp) return false;
    if (ts == timestamp) {
      if (id > insert_id) {
        insert_id = id;
        need_insert_id = true;
        return true;
      }
      return false;
    }
    need_insert_id = false;
    insert_id = id;
    timestamp = ts;
    return true;
  }
  std::string LowerBound() const {
    if (need_insert_id) {
      return "((timestamp=\"" + timestamp + "\" AND insertId>\"" + insert_id +
             "\") OR timestamp>\"" + timestamp + "\")";
    }
    return "timestamp>=\"" + timestamp + "\"";
  }
};

class GcloudOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteJobStore({.path = dir_.path() + "/db"});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  // Three replicas print `per_replica` lines each, numbered per replica, over a few seconds;
  // each replica's lines reach the store in batches of its own, up to `max_lag` after they
  // were printed, so the store holds them out of timestamp order. Returns the lines in the
  // order they were stored; `store_at(i)` is when the i-th batch was stored.
  void Produce(int per_replica, Timestamp max_lag) {
    std::mt19937 rng(42);
    const std::vector<std::string> tasks = {"master-replica-0", "worker-replica-0",
                                            "worker-replica-1"};
    struct Pending {
      Timestamp due;
      std::vector<model::LogEntry> lines;
    };
    std::vector<Pending> batches;
    for (size_t t = 0; t < tasks.size(); ++t) {
      Timestamp clock = t0_;
      Timestamp last_due = 0;
      Pending batch;
      for (int i = 0; i < per_replica; ++i) {
        // Often the same microsecond as another replica's line.
        clock += (rng() % 4 == 0) ? 0 : static_cast<Timestamp>(rng() % 1500);
        model::LogEntry e;
        e.project = "p";
        e.job_id = "dist";
        e.task_name = tasks[t];
        e.timestamp = clock;
        e.message = tasks[t] + " " + std::to_string(i);
        batch.lines.push_back(e);
        if (rng() % 40 == 0 || i == per_replica - 1) {
          // A replica's batches are stored in order.
          batch.due = std::max(
              last_due, clock + static_cast<Timestamp>(rng() % static_cast<uint32_t>(max_lag)));
          last_due = batch.due;
          batches.push_back(std::move(batch));
          batch = Pending();
        }
      }
    }
    std::stable_sort(batches.begin(), batches.end(),
                     [](const Pending& a, const Pending& b) { return a.due < b.due; });
    for (auto& b : batches) {
      due_.push_back(b.due);
      stored_.push_back(std::move(b.lines));
    }
    end_ = due_.back();
  }

  // Stores every batch due by `now`.
  void StoreUntil(Timestamp now) {
    while (next_batch_ < stored_.size() && due_[next_batch_] <= now) {
      ASSERT_TRUE(store_->AppendLogs(stored_[next_batch_]).ok());
      ++next_batch_;
    }
  }

  json List(const json& body) {
    auto r = ListLogEntries(*store_, body.dump());
    EXPECT_TRUE(r.ok()) << body.dump() << ": " << r.status().message();
    return r.ok() ? json::parse(*r) : json();
  }

  // gcloud ai-platform jobs stream-logs: polls of at most 1000 entries, ascending, with the
  // lower bound of the last entry printed and `timestamp<"now - 5s"` (LogFetcher.GetLogs).
  std::vector<std::string> StreamLogs(Timestamp poll_every, bool follow) {
    GcloudPosition pos;
    std::vector<std::string> printed;
    int empty = 0;
    for (Timestamp now = follow ? t0_ : end_ + 10 * kMicrosPerSecond;; now += poll_every) {
      if (follow) StoreUntil(now);
      json page = List({{"resourceNames", {"projects/p"}},
                        {"filter", R"((resource.type="ml_job" OR resource.type="cloudml_job") AND )"
                                   R"(resource.labels.job_id="dist" AND )" +
                                       pos.LowerBound() + " AND timestamp<\"" +
                                       Rfc3339(now - 5 * kMicrosPerSecond) + "\""},
                        {"orderBy", "timestamp asc"},
                        {"pageSize", 1000}});
      bool any = false;
      for (const auto& e : page.value("entries", json::array())) {
        if (!pos.Update(e["timestamp"], e["insertId"])) continue;
        printed.push_back(e["jsonPayload"]["message"]);
        any = true;
      }
      empty = any ? 0 : empty + 1;
      // gcloud stops after two empty polls once the job has ended.
      if (empty >= 2 && (!follow || now > end_ + 5 * kMicrosPerSecond)) break;
      if (printed.size() > 100000) break;
    }
    return printed;
  }

  std::vector<std::string> Expected(bool descending) {
    std::vector<model::LogEntry> all;
    for (const auto& b : stored_) all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end(), [](const model::LogEntry& a, const model::LogEntry& b) {
      return std::make_pair(a.timestamp, a.insert_id) < std::make_pair(b.timestamp, b.insert_id);
    });
    std::vector<std::string> out;
    for (const auto& e : all) out.push_back(e.message);
    if (descending) std::reverse(out.begin(), out.end());
    return out;
  }

  test_support::TempDir dir_{"ty-api"};
  std::unique_ptr<store::JobStore> store_;
  const Timestamp t0_ = 1767261600000000;  // 2026-01-01T10:00:00Z
  std::vector<Timestamp> due_;
  std::vector<std::vector<model::LogEntry>> stored_;
  size_t next_batch_ = 0;
  Timestamp end_ = 0;
};

TEST_F(GcloudOrderTest, StreamLogsOfAFinishedJobPrintsEveryLineOnceInOrder) {
  Produce(1500, 2 * kMicrosPerSecond);
  StoreUntil(end_);
  // The premise: the store's ingestion order differs from the timestamp order.
  std::vector<std::string> ingestion;
  for (const auto& b : stored_) {
    for (const auto& e : b) ingestion.push_back(e.message);
  }
  ASSERT_NE(ingestion, Expected(false));
  std::vector<std::string> printed = StreamLogs(kMicrosPerSecond, false);
  EXPECT_EQ(printed.size(), 4500u);
  EXPECT_EQ(printed, Expected(false));
}

TEST_F(GcloudOrderTest, StreamLogsFollowingAJobPrintsEveryLineOnceInOrder) {
  // Lines reach the store up to 2 s after they were printed; gcloud reads only lines older
  // than 5 s, so none is stored behind its position.
  Produce(1500, 2 * kMicrosPerSecond);
  std::vector<std::string> printed = StreamLogs(kMicrosPerSecond / 2, true);
  EXPECT_EQ(printed.size(), 4500u);
  EXPECT_EQ(printed, Expected(false));
}

TEST_F(GcloudOrderTest, LoggingReadPagesEitherOrderExactlyOnce) {
  Produce(1500, 2 * kMicrosPerSecond);
  StoreUntil(end_ / 2 + t0_ / 2);
  for (bool descending : {false, true}) {
    json req = {{"resourceNames", {"projects/p"}},
                {"filter", R"(resource.labels.job_id="dist")"},
                {"orderBy", descending ? "timestamp desc" : "timestamp asc"},
                {"pageSize", 1000}};
    std::vector<std::string> got;
    const size_t stored_before = next_batch_;
    for (int pages = 0; pages < 100; ++pages) {
      json page = List(req);
      for (const auto& e : page.value("entries", json::array())) {
        got.push_back(e["jsonPayload"]["message"]);
      }
      // The job keeps logging between pages: a listing holds its first page's snapshot.
      if (pages == 0) StoreUntil(end_);
      if (!page.contains("nextPageToken")) break;
      req["pageToken"] = page["nextPageToken"];
    }
    std::vector<std::string> want;
    {
      std::vector<model::LogEntry> first;
      for (size_t b = 0; b < stored_before; ++b) {
        first.insert(first.end(), stored_[b].begin(), stored_[b].end());
      }
      std::sort(first.begin(), first.end(),
                [&](const model::LogEntry& a, const model::LogEntry& b) {
                  auto ka = std::make_pair(a.timestamp, a.insert_id);
                  auto kb = std::make_pair(b.timestamp, b.insert_id);
                  return descending ? kb < ka : ka < kb;
                });
      for (const auto& e : first) want.push_back(e.message);
    }
    EXPECT_EQ(got, want) << (descending ? "desc" : "asc");
  }
  // Once stored, everything is listed.
  json all = List({{"resourceNames", {"projects/p"}}, {"pageSize", 1000}});
  EXPECT_EQ(all["entries"].size(), 1000u);
}

// --- gcloud stream-logs and a job that ends right after its last lines ----------------------

// Three replicas log for 20 s, fall quiet for 10 s, print their last lines at 30 s and exit;
// the scheduler stores "Job completed successfully." and the terminal state 0.3 s later.
// Every line is stored before the job ends (up to 1.5 s after it was printed).
class GcloudJobEndTest : public ::testing::Test {
 protected:
  struct Line {
    Timestamp stored;
    model::LogEntry entry;
  };

  void SetUp() override {
    std::mt19937 rng(7);
    const std::vector<std::string> tasks = {"master-replica-0", "worker-replica-0",
                                            "worker-replica-1"};
    for (size_t t = 0; t < tasks.size(); ++t) {
      Timestamp last_stored = 0;
      auto add = [&](Timestamp printed, const std::string& message) {
        Line l;
        l.stored = std::max(last_stored, printed + static_cast<Timestamp>(rng() % 1500000));
        last_stored = l.stored;
        l.entry.project = "p";
        l.entry.job_id = "j";
        l.entry.task_name = tasks[t];
        l.entry.timestamp = printed;
        l.entry.message = message;
        lines_.push_back(l);
      };
      // Replicas share timestamps: equal timestamps are ordered by insertId.
      for (int i = 0; i < 100; ++i) add(t0_ + i * 200000, tasks[t] + " step " + std::to_string(i));
      add(t0_ + 30 * kMicrosPerSecond, tasks[t] + " epoch 2/2");
      for (auto& l : lines_) l.stored = std::min(l.stored, end_);  // delivered before the exit
    }
    Line done;
    done.stored = end_;
    done.entry.project = "p";
    done.entry.job_id = "j";
    done.entry.task_name = "service";
    done.entry.timestamp = end_;
    done.entry.message = "Job completed successfully.";
    lines_.push_back(done);
    std::stable_sort(lines_.begin(), lines_.end(),
                     [](const Line& a, const Line& b) { return a.stored < b.stored; });
  }

  // gcloud ai-platform jobs stream-logs started `phase` after t0: a poll every second (the
  // configuration's polling_interval) with `timestamp<"now - 5s"`, and every 10th poll, after
  // it, the end check (compat §11.2): stop when the job has an endTime and two or more polls
  // in a row came back empty. The check's jobs.get runs `check_delay` after the poll.
  // `terminal_in_store` false stores the lines but never the terminal state: the daemon as it
  // was before the freshness bound was lifted. Returns the messages printed.
  std::vector<std::string> StreamLogs(Timestamp phase, bool terminal_in_store,
                                      Timestamp check_delay = 0) {
    auto store = store::NewInMemoryJobStore();
    model::Job job;
    job.project = "p";
    job.job_id = "j";
    job.state = model::JobState::kRunning;
    job.create_time = t0_;
    EXPECT_TRUE(store->CreateJob(job).ok());
    size_t next = 0;
    bool ended = false;
    GcloudPosition pos;
    std::vector<std::string> printed;
    int empty = 0;
    for (int k = 0; k < 200; ++k) {
      const Timestamp now = t0_ + phase + k * kMicrosPerSecond;
      while (next < lines_.size() && lines_[next].stored <= now) {
        std::vector<model::LogEntry> one = {lines_[next++].entry};
        EXPECT_TRUE(store->AppendLogs(one).ok());
      }
      if (terminal_in_store && !ended && now >= end_) {
        job.state = model::JobState::kSucceeded;
        job.end_time = end_;
        EXPECT_TRUE(store->UpdateJob(job, std::nullopt).ok());
        ended = true;
      }
      auto r = ListLogEntries(*store,
                              json({{"resourceNames", {"projects/p"}},
                                    {"filter", R"((resource.type="ml_job" OR )"
                                               R"(resource.type="cloudml_job") AND )"
                                               R"(resource.labels.job_id="j" AND )" +
                                                   pos.LowerBound() + " AND timestamp<\"" +
                                                   Rfc3339(now - 5 * kMicrosPerSecond) + "\""},
                                    {"orderBy", "timestamp asc"},
                                    {"pageSize", 1000}})
                                  .dump(),
                              now);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      bool any = false;
      for (const auto& e : json::parse(*r).value("entries", json::array())) {
        if (!pos.Update(e["timestamp"], e["insertId"])) continue;
        printed.push_back(e.contains("textPayload") ? e["textPayload"]
                                                    : e["jsonPayload"]["message"]);
        any = true;
      }
      empty = any ? 0 : empty + 1;
      if (k % 10 == 0 && empty >= 2 && now + check_delay >= end_) break;
    }
    return printed;
  }

  std::vector<std::string> Expected() const {
    std::vector<const model::LogEntry*> all;
    for (const auto& l : lines_) all.push_back(&l.entry);
    // Insert ids follow the storing order, which lines_ is in.
    std::stable_sort(all.begin(), all.end(),
                     [](const auto* a, const auto* b) { return a->timestamp < b->timestamp; });
    std::vector<std::string> out;
    for (const auto* e : all) out.push_back(e->message);
    return out;
  }

  const Timestamp t0_ = 1767261600000000;  // 2026-01-01T10:00:00Z
  const Timestamp end_ = t0_ + 30300000;   // the job ends 0.3 s after its last lines
  std::vector<Line> lines_;
};

TEST_F(GcloudJobEndTest, AJobEndingWithinTheWindowStreamsEveryLineExactlyOnce) {
  const std::vector<std::string> want = Expected();
  ASSERT_EQ(want.size(), 304u);
  ASSERT_EQ(want.back(), "Job completed successfully.");
  // gcloud started at every phase of its 10 s end check, 100 ms apart.
  int lost_before = 0;
  for (Timestamp phase = 0; phase < 10 * kMicrosPerSecond; phase += 100000) {
    EXPECT_EQ(StreamLogs(phase, true), want) << "phase " << phase;
    // The premise: with the bound kept, the check often stops gcloud before the last lines.
    std::vector<std::string> old = StreamLogs(phase, false);
    EXPECT_TRUE(std::equal(old.begin(), old.end(), want.begin())) << "phase " << phase;
    if (old.size() < want.size()) ++lost_before;
  }
  EXPECT_GT(lost_before, 25);  // 48 of the 100 phases
}

TEST_F(GcloudJobEndTest, BoundsOutsideTheWindowAndOtherFiltersKeepTheirBound) {
  auto store = store::NewInMemoryJobStore();
  model::Job job;
  job.project = "p";
  job.job_id = "j";
  job.state = model::JobState::kSucceeded;
  ASSERT_TRUE(store->CreateJob(job).ok());
  std::vector<model::LogEntry> entries;
  for (const auto& l : lines_) entries.push_back(l.entry);
  ASSERT_TRUE(store->AppendLogs(entries).ok());
  const Timestamp now = end_ + 2 * kMicrosPerSecond;
  auto count = [&](const std::string& filter) -> size_t {
    auto r = ListLogEntries(
        *store,
        json({{"resourceNames", {"projects/p"}}, {"filter", filter}, {"pageSize", 1000}}).dump(),
        now);
    EXPECT_TRUE(r.ok()) << filter << ": " << r.status().ToString();
    return r.ok() ? json::parse(*r).value("entries", json::array()).size() : 0;
  };
  const std::string fresh = "timestamp<\"" + Rfc3339(now - 5 * kMicrosPerSecond) + "\"";
  // Lifted: one terminal job, a fresh top-level bound.
  EXPECT_EQ(count(R"(resource.labels.job_id="j" AND )" + fresh), 304u);
  // Kept: a bound further back than the window is the caller's.
  EXPECT_EQ(count(R"(resource.labels.job_id="j" AND timestamp<")" +
                  Rfc3339(t0_ + 15 * kMicrosPerSecond) + "\""),
            225u);
  // Kept: no single job, or a bound inside an OR.
  EXPECT_EQ(count(fresh), 300u);
  EXPECT_EQ(count(R"(resource.labels.job_id="j" AND ()" + fresh + R"( OR severity>=ERROR))"), 300u);
  // Kept: the job is still running.
  job.state = model::JobState::kRunning;
  ASSERT_TRUE(store->UpdateJob(job, std::nullopt).ok());
  EXPECT_EQ(count(R"(resource.labels.job_id="j" AND )" + fresh), 300u);
}

TEST_F(GcloudJobEndTest, TheJobEndingBetweenAPollAndTheEndCheckStillLosesTheLastLines) {
  // What remains: the end check's jobs.get sees the job ended, the poll just before it did not
  // (it ended in the milliseconds between them), and two empty polls are behind: gcloud stops
  // without the lines of the last 5 s. gcloud started 299.5 ms after t0 polls at 30.2995 s,
  // the job ends at 30.3 s, the check runs 2 ms after the poll.
  std::vector<std::string> got = StreamLogs(299500, true, 2000);
  EXPECT_LT(got.size(), Expected().size());
  // 1 ms later the poll already sees the job ended.
  EXPECT_EQ(StreamLogs(300500, true, 2000), Expected());
}

// --- Trainyard's own logs API (GET /v1/projects/P/jobs/J/logs) ------------------------------

class JobLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteJobStore({.path = dir_.path() + "/db"});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    model::Job job;
    job.project = "p";
    job.job_id = "j";
    job.state = model::JobState::kRunning;
    job.create_time = t0_;
    ASSERT_TRUE(store_->CreateJob(job).ok());
    // Two replicas, stored replica by replica: the worker's earlier lines land last.
    Append("master-replica-0", {{3, "m3", model::Severity::kInfo},
                                {5, "m5", model::Severity::kWarning},
                                {8, "m8", model::Severity::kError}});
    Append("worker-replica-0",
           {{1, "w1", model::Severity::kInfo},
            {4, "w4", model::Severity::kError},
            {7, "w7", model::Severity::kDebug}},
           "2");
  }

  struct L {
    int second;
    std::string message;
    model::Severity severity;
  };
  void Append(const std::string& task, const std::vector<L>& lines, const std::string& trial = "") {
    std::vector<model::LogEntry> batch;
    for (const auto& l : lines) {
      model::LogEntry e;
      e.project = "p";
      e.job_id = "j";
      e.task_name = task;
      e.trial_id = trial;
      e.timestamp = t0_ + l.second * kMicrosPerSecond;
      e.severity = l.severity;
      e.message = l.message;
      batch.push_back(e);
    }
    ASSERT_TRUE(store_->AppendLogs(batch).ok());
  }

  Result<json> Get(const QueryParams& params, const std::string& job = "j") {
    auto r = ListJobLogs(*store_, "p", job, params);
    if (!r.ok()) return r.status();
    return json::parse(*r);
  }

  static std::vector<std::string> Messages(const json& page) {
    std::vector<std::string> out;
    for (const auto& e : page["entries"]) out.push_back(e["jsonPayload"]["message"]);
    return out;
  }

  // Every page of a listing.
  std::vector<std::string> ListAll(QueryParams params, std::string* snapshot = nullptr) {
    std::vector<std::string> out;
    for (int i = 0; i < 20; ++i) {
      auto page = Get(params);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (auto& m : Messages(*page)) out.push_back(m);
      if (snapshot != nullptr && i == 0) *snapshot = (*page)["snapshotInsertId"];
      if (!page->contains("nextPageToken")) break;
      params.erase("pageToken");
      params.emplace("pageToken", (*page)["nextPageToken"]);
    }
    return out;
  }

  test_support::TempDir dir_{"ty-api"};
  std::unique_ptr<store::JobStore> store_;
  const Timestamp t0_ = 1767261600000000;
};

TEST_F(JobLogsTest, ListsInTimeOrderAcrossPagesInEitherDirection) {
  const std::vector<std::string> asc = {"w1", "m3", "w4", "m5", "w7", "m8"};
  EXPECT_EQ(ListAll({}), asc);
  EXPECT_EQ(ListAll({{"pageSize", "1"}}), asc);
  EXPECT_EQ(ListAll({{"pageSize", "4"}, {"orderBy", "timestamp asc"}}), asc);
  std::vector<std::string> desc(asc.rbegin(), asc.rend());
  EXPECT_EQ(ListAll({{"pageSize", "4"}, {"orderBy", "timestamp desc"}}), desc);
  // --tail 2: the newest two, one page.
  auto tail = Get({{"pageSize", "2"}, {"orderBy", "timestamp desc"}});
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(Messages(*tail), (std::vector<std::string>{"m8", "w7"}));
  EXPECT_EQ((*tail)["entries"][0]["severity"], "ERROR");
  EXPECT_EQ((*tail)["entries"][1]["labels"]["trial_id"], "2");
}

TEST_F(JobLogsTest, FiltersApplyBeforePaging) {
  EXPECT_EQ(ListAll({{"pageSize", "1"}, {"minSeverity", "warning"}}),
            (std::vector<std::string>{"w4", "m5", "m8"}));
  EXPECT_EQ(ListAll({{"taskName", "worker-replica-0"}}),
            (std::vector<std::string>{"w1", "w4", "w7"}));
  EXPECT_EQ(ListAll({{"trialId", "2"}, {"pageSize", "2"}}),
            (std::vector<std::string>{"w1", "w4", "w7"}));
  EXPECT_EQ(ListAll({{"trialId", ""}}), (std::vector<std::string>{"m3", "m5", "m8"}));
  EXPECT_EQ(ListAll({{"startTime", Rfc3339(t0_ + 4 * kMicrosPerSecond)},
                     {"endTime", Rfc3339(t0_ + 8 * kMicrosPerSecond)}}),
            (std::vector<std::string>{"w4", "m5", "w7"}));
}

TEST_F(JobLogsTest, AListingThenAFollowerReadEveryLineOnce) {
  std::string snapshot;
  auto first = Get({{"pageSize", "4"}});
  ASSERT_TRUE(first.ok());
  snapshot = (*first)["snapshotInsertId"];
  // Lines stored while the listing pages, some older than lines already listed.
  Append("worker-replica-0", {{2, "w2", model::Severity::kInfo}}, "2");
  Append("master-replica-0", {{9, "m9", model::Severity::kInfo}});
  std::vector<std::string> got = Messages(*first);
  auto second = Get({{"pageSize", "4"}, {"pageToken", (*first)["nextPageToken"]}});
  ASSERT_TRUE(second.ok());
  for (auto& m : Messages(*second)) got.push_back(m);
  EXPECT_FALSE(second->contains("nextPageToken"));
  EXPECT_EQ(got, (std::vector<std::string>{"w1", "m3", "w4", "m5", "w7", "m8"}));
  // The follower picks up exactly what the listing did not hold.
  auto follow = Get({{"afterInsertId", snapshot}});
  ASSERT_TRUE(follow.ok());
  EXPECT_EQ(Messages(*follow), (std::vector<std::string>{"w2", "m9"}));
  auto again = Get({{"afterInsertId", (*follow)["nextAfterInsertId"]}});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)["entries"].empty());
  EXPECT_EQ((*again)["nextAfterInsertId"], (*follow)["nextAfterInsertId"]);
}

TEST_F(JobLogsTest, FollowersSkipFilteredLinesWithoutRescanning) {
  auto page = Get({{"afterInsertId", "0"}, {"minSeverity", "ERROR"}, {"pageSize", "10"}});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Messages(*page), (std::vector<std::string>{"m8", "w4"}));  // ingestion order
  auto last = store_->LastLogInsertId();
  ASSERT_TRUE(last.ok());
  // Every stored line was examined: the cursor is the newest id, not the last match's.
  EXPECT_EQ((*page)["nextAfterInsertId"], std::to_string(*last));
  // A full page stops at its last line.
  page = Get({{"afterInsertId", "0"}, {"pageSize", "2"}});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Messages(*page), (std::vector<std::string>{"m3", "m5"}));
  EXPECT_EQ((*page)["nextAfterInsertId"], (*page)["entries"][1]["insertId"]);
}

// A store that forwards to another and counts the lines ReadLogs hands out: the store work a
// page costs.
class CountingStore : public store::JobStore {
 public:
  explicit CountingStore(store::JobStore& inner) : inner_(inner) {}
  Result<int64_t> CreateJob(const model::Job& job) override { return inner_.CreateJob(job); }
  Result<model::Job> GetJob(const std::string& project, const std::string& job_id) override {
    return inner_.GetJob(project, job_id);
  }
  Status UpdateJob(const model::Job& job,
                   const std::optional<store::StateChange>& change) override {
    return inner_.UpdateJob(job, change);
  }
  Result<store::ListJobsResponse> ListJobs(const store::ListJobsRequest& request) override {
    return inner_.ListJobs(request);
  }
  Result<std::vector<model::Job>> ListActiveJobs() override { return inner_.ListActiveJobs(); }
  Result<std::vector<store::StateChange>> GetStateHistory(const std::string& project,
                                                          const std::string& job_id) override {
    return inner_.GetStateHistory(project, job_id);
  }
  Result<std::vector<std::pair<model::JobState, int64_t>>> CountJobsByState() override {
    return inner_.CountJobsByState();
  }
  Status AppendLogs(std::span<model::LogEntry> entries) override {
    return inner_.AppendLogs(entries);
  }
  Result<std::vector<model::LogEntry>> ReadLogs(const store::LogQuery& query) override {
    auto r = inner_.ReadLogs(query);
    if (r.ok()) lines_read += r->size();
    return r;
  }
  Result<int64_t> LastLogInsertId() override { return inner_.LastLogInsertId(); }

  size_t lines_read = 0;

 private:
  store::JobStore& inner_;
};

TEST_F(JobLogsTest, AListingPageReadsOnlyTheLinesItReturns) {
  // 2,500 more lines (one a second from t0 + 10 s): a tail page of 100 must not decode 1,000.
  std::vector<L> many;
  for (int i = 0; i < 2500; ++i) many.push_back({10 + i, "x" + std::to_string(i), {}});
  Append("master-replica-0", many);
  CountingStore counting(*store_);
  auto page = ListJobLogs(counting, "p", "j", {{"pageSize", "100"}, {"orderBy", "timestamp desc"}});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  json tail = json::parse(*page);
  ASSERT_EQ(tail["entries"].size(), 100u);
  EXPECT_EQ(tail["entries"][0]["jsonPayload"]["message"], "x2499");
  EXPECT_EQ(tail["entries"][99]["jsonPayload"]["message"], "x2400");
  EXPECT_LE(counting.lines_read, 100u);
  // The next pages still continue exactly where the last one stopped, in both directions, and
  // a page larger than one store read is still filled.
  counting.lines_read = 0;
  page = ListJobLogs(counting, "p", "j",
                     {{"pageSize", "100"},
                      {"orderBy", "timestamp desc"},
                      {"pageToken", tail["nextPageToken"].get<std::string>()}});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  json second = json::parse(*page);
  ASSERT_EQ(second["entries"].size(), 100u);
  EXPECT_EQ(second["entries"][0]["jsonPayload"]["message"], "x2399");
  EXPECT_LE(counting.lines_read, 100u);
  std::vector<std::string> asc = ListAll({{"pageSize", "1500"}});
  ASSERT_EQ(asc.size(), 2506u);
  EXPECT_EQ(asc[5], "m8");
  EXPECT_EQ(asc[6], "x0");
  EXPECT_EQ(asc.back(), "x2499");
  counting.lines_read = 0;
  page = ListJobLogs(counting, "p", "j", {{"pageSize", "1500"}});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(json::parse(*page)["entries"].size(), 1500u);
  EXPECT_EQ(counting.lines_read, 1500u);
}

TEST_F(JobLogsTest, BadParametersAndUnknownJobs) {
  for (const QueryParams& bad :
       std::vector<QueryParams>{{{"pageSize", "-1"}},
                                {{"pageSize", "x"}},
                                {{"orderBy", "severity"}},
                                {{"minSeverity", "LOUD"}},
                                {{"startTime", "yesterday"}},
                                {{"pageToken", "nope"}},
                                {{"afterInsertId", "-1"}},
                                {{"afterInsertId", "3"}, {"orderBy", "timestamp desc"}},
                                {{"color", "red"}}}) {
    auto r = Get(bad);
    ASSERT_FALSE(r.ok()) << bad.begin()->first;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad.begin()->first;
    EXPECT_NE(
        r.status().message().find(bad.begin()->first == "color" ? "color" : bad.rbegin()->first),
        std::string::npos)
        << r.status().message();
  }
  auto missing = Get({}, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  missing = Get({{"afterInsertId", "0"}}, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace trainyard::api
