// Behaviour specific to the SQLite store: persistence, schema migrations, WAL, durability across
// a SIGKILL, and clean errors on damaged databases.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "log_chunk.h"
#include "migrations.h"
#include "store_test_util.h"
#include "trainyard/core/time.h"
#include "trainyard/model/job_json.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::store {
namespace {

using model::Job;
using model::JobState;
using testing::MakeJob;
using testing::TempDir;

// The schema version this build writes (migrations.cc).
constexpr int kLatestSchemaVersion = 4;

std::unique_ptr<JobStore> MustOpen(const std::string& path, const std::string& sync = "NORMAL") {
  auto store = OpenSqliteJobStore({.path = path, .synchronous = sync});
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// A raw connection to inspect or damage the database behind the store's back.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close(db_); }
  void Exec(const std::string& sql) {
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << sql << ": " << (error ? error : "");
    sqlite3_free(error);
  }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
    if (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      out = text != nullptr ? reinterpret_cast<const char*>(text) : "";  // NULL: ""
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST(SqliteJobStoreTest, DataSurvivesReopen) {
  TempDir dir;
  const std::string path = dir.path() + "/db.sqlite";
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    Job job = MakeJob("p", "kept");
    ASSERT_TRUE(store->CreateJob(job).ok());
    job.state = JobState::kRunning;
    ASSERT_TRUE(
        store->UpdateJob(job, StateChange{JobState::kQueued, JobState::kRunning, 7, "r"}).ok());
    std::vector<model::LogEntry> logs(3);
    for (auto& e : logs) {
      e.project = "p";
      e.job_id = "kept";
      e.message = "line";
    }
    ASSERT_TRUE(store->AppendLogs(logs).ok());
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob("p", "kept");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state, JobState::kRunning);
  EXPECT_EQ(store->GetStateHistory("p", "kept")->size(), 1u);
  EXPECT_EQ(store->ReadLogs({.project = "p", .job_id = "kept"})->size(), 3u);
  // Seqs and insert ids keep increasing after a reopen.
  auto seq = store->CreateJob(MakeJob("p", "next"));
  ASSERT_TRUE(seq.ok());
  EXPECT_GT(*seq, job->seq);
}

model::LogEntry LogLine(const std::string& job, const std::string& task, int64_t ts,
                        const std::string& message) {
  model::LogEntry e;
  e.project = "p";
  e.job_id = job;
  e.task_name = task;
  e.timestamp = ts;
  e.message = message;
  return e;
}

TEST(SqliteJobStoreTest, LogInsertIdsKeepIncreasingAcrossAppendsAndReopens) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  int64_t last = 0;
  std::vector<std::string> want;
  for (int round = 0; round < 3; ++round) {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    for (int b = 0; b < 20; ++b) {
      std::vector<model::LogEntry> batch;
      for (int i = 0; i < 1 + (b * 7) % 30; ++i) {
        std::string m = std::to_string(round) + "/" + std::to_string(b) + "/" + std::to_string(i);
        batch.push_back(LogLine(b % 2 ? "a" : "b", i % 5 == 0 ? "s" : "t", i, m));
        want.push_back(m);
      }
      ASSERT_TRUE(store->AppendLogs(batch).ok());
      for (const auto& e : batch) {
        ASSERT_GT(e.insert_id, last);
        last = e.insert_id;
      }
    }
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  auto all = store->ReadLogs({.project = "p", .limit = 100000});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> got;
  for (const auto& e : *all) got.push_back(e.message);
  EXPECT_EQ(got, want);
  EXPECT_EQ(all->back().insert_id, last);
}

TEST(SqliteJobStoreTest, InsertIdsAreNotReusedAfterTheNewestChunkIsDeleted) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  std::vector<model::LogEntry> batch = {LogLine("a", "t", 1, "x"), LogLine("a", "t", 2, "y")};
  ASSERT_TRUE(store->AppendLogs(batch).ok());
  RawDb(path).Exec("DELETE FROM log_chunks");
  std::vector<model::LogEntry> next = {LogLine("a", "t", 3, "z")};
  ASSERT_TRUE(store->AppendLogs(next).ok());
  EXPECT_GT(next[0].insert_id, batch[1].insert_id);
}

// The store's record of how far it read each replica's log file outlives a reopen (the daemon
// killed between the store's commit and the executor's log.offset write), and goes with the
// job's logs: a job id used again after a purge or a log deletion starts from nothing.
TEST(SqliteJobStoreTest, LogCursorsSurviveReopenAndGoWithTheJobsLogs) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto line = [](const std::string& job, int64_t offset, const std::string& m) {
    model::LogEntry e = LogLine(job, "master-replica-0", offset, m);
    e.source_offset = offset;
    return e;
  };
  auto messages = [](JobStore& store, const std::string& job) {
    std::vector<std::string> out;
    for (const auto& e : *store.ReadLogs({.project = "p", .job_id = job})) out.push_back(e.message);
    return out;
  };
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store->CreateJob(MakeJob("p", "purged")).ok());
    std::vector<model::LogEntry> batch = {line("kept", 10, "a"), line("purged", 10, "a"),
                                          line("gc", 10, "a")};
    ASSERT_TRUE(store->AppendLogs(batch).ok());
  }
  auto store = MustOpen(path);
  std::vector<model::LogEntry> again = {line("kept", 10, "a"), line("kept", 20, "b")};
  ASSERT_TRUE(store->AppendLogs(again).ok());
  EXPECT_EQ(messages(*store, "kept"), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(store->DeleteJob("p", "purged").ok());
  ASSERT_TRUE(store->DeleteJobLogs("p", "gc").ok());
  EXPECT_EQ(RawDb(path).Text("SELECT group_concat(job_id) FROM log_cursors"), "kept");
  std::vector<model::LogEntry> reused = {line("purged", 10, "new"), line("gc", 10, "new")};
  ASSERT_TRUE(store->AppendLogs(reused).ok());
  EXPECT_EQ(messages(*store, "purged"), (std::vector<std::string>{"new"}));
  EXPECT_EQ(messages(*store, "gc"), (std::vector<std::string>{"new"}));
}

TEST(SqliteJobStoreTest, AppendLogsStoresOneChunkPerRunOfAStream) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  // Runs: a/t x3, a/u x2, b/t x1, a/t x4 (trial 1 for the last two), a/t x1 (project q).
  std::vector<model::LogEntry> batch;
  for (int i = 0; i < 3; ++i) batch.push_back(LogLine("a", "t", i, "r1"));
  for (int i = 0; i < 2; ++i) batch.push_back(LogLine("a", "u", i, "r2"));
  batch.push_back(LogLine("b", "t", 0, "r3"));
  for (int i = 0; i < 4; ++i) {
    batch.push_back(LogLine("a", "t", i, i < 2 ? "r4" : "r5"));
    if (i >= 2) batch.back().trial_id = "1";
  }
  batch.push_back(LogLine("a", "t", 9, "r6"));
  batch.back().project = "q";
  ASSERT_TRUE(store->AppendLogs(batch).ok());
  EXPECT_EQ(RawDb(path).Text("SELECT count(*) FROM log_chunks"), "6");
  auto all = store->ReadLogs({.project = "p"});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), batch.size() - 1);
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].insert_id, batch[i].insert_id);
    EXPECT_EQ((*all)[i].message, batch[i].message);
    EXPECT_EQ((*all)[i].task_name, batch[i].task_name);
    EXPECT_EQ((*all)[i].trial_id, batch[i].trial_id);
  }
}

TEST(SqliteJobStoreTest, LargeBatchesAreSplitIntoBoundedChunks) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  std::vector<model::LogEntry> many;
  for (int i = 0; i < 10000; ++i) many.push_back(LogLine("a", "t", i, std::to_string(i)));
  ASSERT_TRUE(store->AppendLogs(many).ok());
  EXPECT_EQ(RawDb(path).Text("SELECT count(*) FROM log_chunks"), "3");  // 4096 lines each
  std::vector<model::LogEntry> big;
  for (int i = 0; i < 40; ++i)
    big.push_back(LogLine("b", "t", i, std::string(100000, 'a' + i % 26)));
  ASSERT_TRUE(store->AppendLogs(big).ok());
  EXPECT_EQ(RawDb(path).Text("SELECT count(*) FROM log_chunks WHERE job_id = 'b'"), "4");
  EXPECT_EQ(RawDb(path).Text("SELECT max(length(data)) < 1200000 FROM log_chunks"), "1");
  auto got = store->ReadLogs({.project = "p", .job_id = "a", .limit = 10000});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), many.size());
  for (size_t i = 0; i < many.size(); ++i) {
    ASSERT_EQ((*got)[i].insert_id, many[i].insert_id);
    ASSERT_EQ((*got)[i].message, many[i].message);
  }
  got = store->ReadLogs({.project = "p", .job_id = "b", .after_insert_id = big[14].insert_id});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 25u);
  EXPECT_EQ((*got)[0].message, big[15].message);
}

TEST(SqliteJobStoreTest, ChunksSpanAtMostOneSecond) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  // One batch of a replica's lines over 10 s (a backlog delivered at once): 0.25 s apart.
  std::vector<model::LogEntry> batch;
  for (int i = 0; i < 40; ++i) batch.push_back(LogLine("a", "t", i * 250000, std::to_string(i)));
  ASSERT_TRUE(store->AppendLogs(batch).ok());
  RawDb raw(path);
  EXPECT_EQ(raw.Text("SELECT max(max_ts - min_ts) <= 1000000 FROM log_chunks"), "1");
  EXPECT_EQ(raw.Text("SELECT count(*) FROM log_chunks"), "8");  // 5 lines (1 s) each
  // The timestamp-ordered reads use the min_ts index.
  EXPECT_NE(raw.Text("EXPLAIN QUERY PLAN SELECT last_id FROM log_chunks INDEXED BY "
                     "log_chunks_job_ts WHERE project = 'p' AND job_id = 'a' AND min_ts >= 5 "
                     "ORDER BY min_ts")
                .size(),
            0u);
}

// A database written before migration 2 may hold chunks spanning more than a second; the
// migration records the longest, and timestamp-ordered reads starting inside such a chunk
// still find its lines.
TEST(SqliteJobStoreTest, LongChunksFromBeforeMigrationTwoStayReadableInTimeOrder) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  {
    RawDb raw(path);
    raw.Exec(sqlite::Migrations()[0].sql);
    raw.Exec("PRAGMA user_version = 1");
    std::string data;
    int64_t prev = 0;
    for (int i = 0; i < 10; ++i) {
      sqlite::AppendLogLine(&data, &prev, 1000000 + i * 60000000LL, 200, "old" + std::to_string(i));
    }
    std::string hex;
    for (unsigned char c : data) {
      static const char* digits = "0123456789ABCDEF";
      hex += digits[c >> 4];
      hex += digits[c & 15];
    }
    raw.Exec(
        "INSERT INTO log_chunks (last_id, first_id, project, job_id, task_name, min_ts, "
        "max_ts, data) VALUES (10, 1, 'p', 'a', 't', 1000000, 541000000, X'" +
        hex + "')");
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawDb(path).Text("SELECT max_span FROM log_chunk_span"), "540000000");
  std::vector<model::LogEntry> batch = {LogLine("a", "u", 400000000, "new")};
  ASSERT_TRUE(store->AppendLogs(batch).ok());
  EXPECT_EQ(batch[0].insert_id, 11);
  auto got = store->ReadLogs({.project = "p",
                              .job_id = "a",
                              .order = LogOrder::kTimestampAsc,
                              .position = LogPosition{300000000, 0},
                              .limit = 3});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].message, "old5");  // 301 s
  EXPECT_EQ((*got)[1].message, "old6");  // 361 s
  EXPECT_EQ((*got)[2].message, "new");   // 400 s
  got = store->ReadLogs({.project = "p",
                         .order = LogOrder::kTimestampDesc,
                         .position = LogPosition{400000000, 11},
                         .limit = 2});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].message, "old6");
  EXPECT_EQ((*got)[1].message, "old5");
}

// What a store holds, as text: every job (API JSON, internal fields, state history) and every
// log line in insert-id and in timestamp order.
std::string Snapshot(JobStore& store) {
  std::string out;
  ListJobsRequest req{.project = "p", .page_size = 100};
  for (;;) {
    auto page = store.ListJobs(req);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) return out;
    for (const Job& j : page->jobs) {
      auto got = store.GetJob("p", j.job_id);
      EXPECT_TRUE(got.ok());
      out += model::JobToJson(*got) + " spec=" + got->training_input_json +
             " units=" + std::to_string(got->consumed_ml_units) + "\n";
      auto history = store.GetStateHistory("p", j.job_id);
      EXPECT_TRUE(history.ok());
      for (const StateChange& c : *history) {
        out += "  " + std::to_string(static_cast<int>(c.from)) + "->" +
               std::to_string(static_cast<int>(c.to)) + " @" + std::to_string(c.time) + " " +
               c.reason + "\n";
      }
    }
    if (page->next_page_token.empty()) break;
    req.page_token = page->next_page_token;
  }
  for (LogOrder order : {LogOrder::kInsertId, LogOrder::kTimestampAsc}) {
    auto logs = store.ReadLogs({.project = "p", .order = order, .limit = 100000});
    EXPECT_TRUE(logs.ok()) << logs.status().ToString();
    if (!logs.ok()) return out;
    for (const model::LogEntry& e : *logs) {
      out += std::to_string(e.insert_id) + " " + e.job_id + " " + e.task_name + " " + e.trial_id +
             " " + std::to_string(e.timestamp) + " " +
             std::to_string(static_cast<int>(e.severity)) + " " + e.message + "\n";
    }
  }
  return out;
}

// Upgrades from every earlier schema (docs/backup.md, "Upgrades"): for each version v below
// this build's (0: an empty file), a database made by migrations 1..v holding the rows this
// build writes (the columns schema v has, every table of it), opened by the store. It must
// migrate to the latest version and read exactly what the reference database reads; insert
// ids go on from where they were. A migration appended later is checked from every version
// before it without a change here; one that reshapes data needs its own fixture as well.
TEST(SqliteJobStoreTest, EveryEarlierSchemaUpgradesAndReadsTheSame) {
  TempDir dir;
  const std::string ref = dir.path() + "/ref.db";
  int64_t last_id = 0;
  {
    auto store = MustOpen(ref);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 5; ++i) {
      Job job = MakeJob("p", "job" + std::to_string(i));
      job.create_time += i;
      job.labels["n"] = std::to_string(i);
      ASSERT_TRUE(store->CreateJob(job).ok());
      if (i % 2 == 0) {
        job.state = JobState::kRunning;
        job.start_time = job.create_time + 10;
        ASSERT_TRUE(store
                        ->UpdateJob(job, StateChange{JobState::kQueued, JobState::kRunning,
                                                     job.start_time, "admitted"})
                        .ok());
      }
      if (i == 2) {
        job.state = JobState::kFailed;
        job.end_time = job.start_time + 99;
        job.error_message = "The replica master 0 exited with a non-zero status of 1.";
        job.consumed_ml_units = 0.25;
        job.consumed_ml_units_set = true;
        ASSERT_TRUE(store
                        ->UpdateJob(job, StateChange{JobState::kRunning, JobState::kFailed,
                                                     job.end_time, job.error_message})
                        .ok());
      }
    }
    std::vector<model::LogEntry> batch;
    for (int i = 0; i < 300; ++i) {
      batch.push_back(LogLine(i % 3 ? "job0" : "job2", i % 4 ? "master-replica-0" : "service",
                              1000000 + (i * 7919 % 300) * 1000, "line " + std::to_string(i)));
    }
    ASSERT_TRUE(store->AppendLogs(batch).ok());
    last_id = batch.back().insert_id;
  }
  const std::string want = Snapshot(*MustOpen(ref));
  ASSERT_NE(want.find("line 299"), std::string::npos);

  const int latest = sqlite::LatestSchemaVersion();
  for (int v = 0; v < latest; ++v) {
    SCOPED_TRACE("from schema version " + std::to_string(v));
    const std::string path = dir.path() + "/v" + std::to_string(v) + ".db";
    {
      RawDb raw(path);
      for (const sqlite::Migration& m : sqlite::Migrations()) {
        if (m.version <= v) raw.Exec(m.sql);
      }
      raw.Exec("PRAGMA user_version = " + std::to_string(v));
      raw.Exec("ATTACH DATABASE '" + ref + "' AS src");
      // Every table of schema v gets the reference's rows, in the columns v has.
      std::vector<std::string> tables;
      for (std::string rest = raw.Text(
               "SELECT group_concat(name, ' ') FROM main.sqlite_master WHERE type = 'table' "
               "AND name NOT LIKE 'sqlite_%'");
           !rest.empty();) {
        const size_t sp = rest.find(' ');
        tables.push_back(rest.substr(0, sp));
        rest = sp == std::string::npos ? "" : rest.substr(sp + 1);
      }
      for (const std::string& t : tables) {
        const std::string cols = raw.Text(
            "SELECT group_concat(m.name, ', ') FROM pragma_table_info('" + t +
            "', 'main') AS m JOIN pragma_table_info('" + t + "', 'src') AS s ON m.name = s.name");
        ASSERT_FALSE(cols.empty()) << t;
        raw.Exec("DELETE FROM main." + t);
        raw.Exec("INSERT INTO main." + t + " (" + cols + ") SELECT " + cols + " FROM src." + t);
      }
      if (!tables.empty()) {
        raw.Exec("DELETE FROM main.sqlite_sequence");
        raw.Exec("INSERT INTO main.sqlite_sequence SELECT * FROM src.sqlite_sequence");
      }
      raw.Exec("DETACH DATABASE src");
    }
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RawDb(path).Text("PRAGMA user_version"), std::to_string(latest));
    if (v == 0) {
      EXPECT_EQ(Snapshot(*store), "") << "an empty file becomes an empty store";
      continue;
    }
    EXPECT_EQ(Snapshot(*store), want);
    std::vector<model::LogEntry> more = {LogLine("job1", "master-replica-0", 5, "after")};
    ASSERT_TRUE(store->AppendLogs(more).ok());
    EXPECT_EQ(more[0].insert_id, last_id + 1) << "insert ids are never reused";
    ASSERT_TRUE(store->CreateJob(MakeJob("p", "new")).ok());
  }
}

TEST(SqliteJobStoreTest, TheWalIsCheckpointedInTheBackground) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  // About 6 MB of log chunks: more than the 1000 WAL pages that trigger a checkpoint.
  std::vector<model::LogEntry> big;
  for (int i = 0; i < 60; ++i) big.push_back(LogLine("w", "t", i, std::string(100000, 'x')));
  ASSERT_TRUE(store->AppendLogs(big).ok());
  // The commits return at once; a thread of the store copies the pages into the database
  // (a wait, not a speed check: generous, for a machine whose disk other builds keep busy).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::error_code ec;
  while (std::filesystem::file_size(path, ec) < 6000000 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(std::filesystem::file_size(path, ec), 6000000u);
  auto got = store->ReadLogs({.project = "p", .job_id = "w"});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), big.size());
}

TEST(SqliteJobStoreTest, CorruptLogChunkIsAnInternalError) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  std::vector<model::LogEntry> batch = {LogLine("a", "t", 1, "hello"), LogLine("a", "t", 2, "x")};
  ASSERT_TRUE(store->AppendLogs(batch).ok());
  RawDb(path).Exec("UPDATE log_chunks SET data = x'02900305414243'");  // length 5, 3 bytes
  auto got = store->ReadLogs({.project = "p"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  RawDb(path).Exec("UPDATE log_chunks SET data = x'02900300'");  // 1 line where 2 are due
  got = store->ReadLogs({.project = "p"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
}

TEST(SqliteJobStoreTest, CreatesMissingParentDirectories) {
  TempDir dir;
  const std::string path = dir.path() + "/a/b/c/trainyard.db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(SqliteJobStoreTest, UsesWalAndRecordsSchemaVersion) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  RawDb raw(path);
  EXPECT_EQ(raw.Text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.Text("PRAGMA user_version"), std::to_string(kLatestSchemaVersion));
  EXPECT_EQ(raw.Text("SELECT count(*) FROM sqlite_master WHERE name = 'jobs_project_state_seq'"),
            "1");
}

TEST(SqliteJobStoreTest, ReopeningDoesNotReapplyMigrations) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  ASSERT_NE(MustOpen(path), nullptr);
  ASSERT_NE(MustOpen(path), nullptr);  // a second CREATE TABLE would fail
  RawDb raw(path);
  EXPECT_EQ(raw.Text("PRAGMA user_version"), std::to_string(kLatestSchemaVersion));
}

TEST(SqliteJobStoreTest, RefusesDatabaseFromNewerVersion) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  ASSERT_NE(MustOpen(path), nullptr);
  { RawDb(path).Exec("PRAGMA user_version = 999"); }
  auto store = OpenSqliteJobStore({.path = path});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("schema version 999"), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find(path), std::string::npos);
  // The refused database is left untouched.
  EXPECT_EQ(RawDb(path).Text("PRAGMA user_version"), "999");
}

TEST(SqliteJobStoreTest, FailedMigrationLeavesDatabaseUnchanged) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  { RawDb(path).Exec("CREATE TABLE log_chunks (x)"); }  // collides with migration 1
  auto store = OpenSqliteJobStore({.path = path});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInternal);
  EXPECT_NE(store.status().message().find("Migration 1"), std::string::npos)
      << store.status().message();
  RawDb raw(path);
  EXPECT_EQ(raw.Text("PRAGMA user_version"), "0");
  EXPECT_EQ(raw.Text("SELECT count(*) FROM sqlite_master WHERE name = 'jobs'"), "0");
}

TEST(SqliteJobStoreTest, RejectsUnknownSynchronousMode) {
  TempDir dir;
  auto store = OpenSqliteJobStore({.path = dir.path() + "/db", .synchronous = "SOMETIMES"});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("SOMETIMES"), std::string::npos);
  EXPECT_NE(MustOpen(dir.path() + "/full", "full"), nullptr);  // case-insensitive
}

TEST(SqliteJobStoreTest, RejectsEmptyPath) {
  EXPECT_EQ(OpenSqliteJobStore({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SqliteJobStoreTest, FileThatIsNotADatabaseIsAnErrorNotACrash) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  {
    std::ofstream out(path);
    for (int i = 0; i < 1000; ++i) out << "this is not an SQLite database\n";
  }
  auto store = OpenSqliteJobStore({.path = path});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInternal);
  EXPECT_NE(store.status().message().find("not a database"), std::string::npos)
      << store.status().message();
}

TEST(SqliteJobStoreTest, UnwritableLocationIsAnError) {
  TempDir dir;
  const std::string file = dir.path() + "/file";
  { std::ofstream(file) << "x"; }
  auto store = OpenSqliteJobStore({.path = file + "/db"});  // parent is a regular file
  EXPECT_FALSE(store.ok());
}

TEST(SqliteJobStoreTest, CorruptRowIsAnInternalErrorNotACrash) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateJob(MakeJob("p", "bad")).ok());
  ASSERT_TRUE(store->CreateJob(MakeJob("p", "state")).ok());
  {
    RawDb raw(path);
    raw.Exec("UPDATE jobs SET labels_json = '{not json' WHERE job_id = 'bad'");
    raw.Exec("UPDATE jobs SET state = 42 WHERE job_id = 'state'");
  }
  auto got = store->GetJob("p", "bad");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  EXPECT_NE(got.status().message().find("labels_json"), std::string::npos);
  EXPECT_EQ(store->GetJob("p", "state").status().code(), StatusCode::kInternal);
  EXPECT_EQ(store->ListJobs({.project = "p"}).status().code(), StatusCode::kInternal);
}

TEST(SqliteJobStoreTest, DamagedPagesYieldErrorsNotCrashes) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE(store->CreateJob(MakeJob("p", "job" + std::to_string(i))).ok());
    }
  }  // closing checkpoints the WAL into the main file
  auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 8192u);
  {
    // Keep the 100-byte header and page 1 (schema); overwrite everything after it.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    std::string junk(size - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto store = OpenSqliteJobStore({.path = path});
  if (!store.ok()) {
    EXPECT_NE(store.status().code(), StatusCode::kOk);
    return;
  }
  int failures = 0;
  failures += !(*store)->GetJob("p", "job7").ok();
  failures += !(*store)->ListJobs({.project = "p", .page_size = 100}).ok();
  failures += !(*store)->CreateJob(MakeJob("p", "new")).ok();
  failures += !(*store)->CountJobsByState().ok();
  EXPECT_GT(failures, 0);
}

TEST(SqliteJobStoreTest, ReadsProceedWhileAnotherConnectionHoldsTheWriteLock) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateJob(MakeJob("p", "a")).ok());
  RawDb raw(path);
  raw.Exec("BEGIN IMMEDIATE");
  // One line (log_chunk.h): timestamp delta 1, severity 200 (zigzag varint 0x90 0x03), empty.
  raw.Exec(
      "INSERT INTO log_chunks (last_id, first_id, project, job_id, min_ts, max_ts, data) "
      "VALUES (1, 1, 'p', 'a', 1, 1, x'02900300')");
  int64_t start = MonotonicMicros();
  EXPECT_TRUE(store->GetJob("p", "a").ok());
  EXPECT_TRUE(store->ListJobs({.project = "p"}).ok());
  // Uncommitted rows are invisible.
  EXPECT_TRUE(store->ReadLogs({.project = "p"})->empty());
  EXPECT_LT(MonotonicMicros() - start, 2 * kMicrosPerSecond);  // busy_timeout is 5 s
  raw.Exec("COMMIT");
  auto lines = store->ReadLogs({.project = "p"});
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].timestamp, 1);
  EXPECT_EQ((*lines)[0].severity, model::Severity::kInfo);
}

// The durability promise: every create the store acknowledged survives a SIGKILL of the process
// (synchronous=NORMAL in WAL mode: the commit is in the OS before CreateJob returns).
TEST(SqliteJobStoreTest, AcknowledgedCreatesSurviveSigkill) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto store = OpenSqliteJobStore({.path = path});
    if (!store.ok()) _exit(2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int32_t i = 0;; ++i) {
          int32_t id = t * 1000000 + i;
          if (!(*store)->CreateJob(MakeJob("p", "job" + std::to_string(id))).ok()) _exit(3);
          // One small write per acknowledgement: atomic on a pipe.
          if (write(fds[1], &id, sizeof id) != sizeof id) _exit(4);
        }
      });
    }
    for (auto& th : threads) th.join();
    _exit(0);
  }
  close(fds[1]);
  std::set<int32_t> acked;
  auto read_one = [&]() {
    int32_t id = 0;
    ssize_t n = read(fds[0], &id, sizeof id);
    if (n == sizeof id) acked.insert(id);
    return n == sizeof id;
  };
  while (acked.size() < 400 && read_one()) {
  }
  kill(pid, SIGKILL);
  while (read_one()) {
  }
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited early with status " << WEXITSTATUS(wstatus);
  ASSERT_GE(acked.size(), 400u);

  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  int missing = 0;
  for (int32_t id : acked) {
    auto job = store->GetJob("p", "job" + std::to_string(id));
    if (!job.ok()) ++missing;
  }
  EXPECT_EQ(missing, 0) << "of " << acked.size() << " acknowledged creates";
  // The store is usable after the crash.
  EXPECT_TRUE(store->CreateJob(MakeJob("p", "after-crash")).ok());
}

}  // namespace
}  // namespace trainyard::store
