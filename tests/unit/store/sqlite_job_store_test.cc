// Behaviour specific to the SQLite store: persistence, schema migrations, WAL, durability across
// a SIGKILL, and clean errors on damaged databases.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store_test_util.h"
#include "trainyard/core/time.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::store {
namespace {

using model::Job;
using model::JobState;
using testing::MakeJob;
using testing::TempDir;

// The schema version this build writes (migrations.cc).
constexpr int kLatestSchemaVersion = 1;

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
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
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
  { RawDb(path).Exec("CREATE TABLE logs (x)"); }  // collides with migration 1
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
  raw.Exec("INSERT INTO logs (project, job_id, timestamp, severity) VALUES ('p', 'a', 1, 200)");
  int64_t start = MonotonicMicros();
  EXPECT_TRUE(store->GetJob("p", "a").ok());
  EXPECT_TRUE(store->ListJobs({.project = "p"}).ok());
  // Uncommitted rows are invisible.
  EXPECT_TRUE(store->ReadLogs({.project = "p"})->empty());
  EXPECT_LT(MonotonicMicros() - start, 2 * kMicrosPerSecond);  // busy_timeout is 5 s
  raw.Exec("COMMIT");
  EXPECT_EQ(store->ReadLogs({.project = "p"})->size(), 1u);
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
