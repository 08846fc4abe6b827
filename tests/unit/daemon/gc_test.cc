// Retention: the policy (PlanGc, pure, on the scheduler's fake clock) and the collector over a
// real SQLite store and real files; the disk-safety and nvidia-smi helpers of ops.h.
#include "gc.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ops.h"
#include "temp_dir.h"
#include "trainyard/scheduler/clock.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::daemon {
namespace {

constexpr Duration kDay = 86400 * kMicrosPerSecond;
using Kind = GcItem::Kind;

GcItem Item(Kind kind, const std::string& path, int64_t bytes, Timestamp time,
            bool in_use = false) {
  GcItem i;
  i.kind = kind;
  i.path = path;
  i.bytes = bytes;
  i.time = time;
  i.in_use = in_use;
  return i;
}

std::vector<std::string> Paths(const std::vector<GcAction>& actions) {
  std::vector<std::string> out;
  for (const auto& a : actions) out.push_back(a.item.path);
  return out;
}

TEST(GcPolicyTest, AgesCountFromTheJobsEndAndInUseItemsStay) {
  scheduler::FakeClock clock;
  GcPolicy p;
  p.work_dirs_age = 7 * kDay;
  const Timestamp t0 = clock.Now();
  std::vector<GcItem> items = {Item(Kind::kWorkDir, "/j/old", 100, t0),
                               Item(Kind::kWorkDir, "/j/new", 100, t0 + 5 * kDay),
                               Item(Kind::kWorkDir, "/j/running", 100, 0, /*in_use=*/true)};
  EXPECT_TRUE(PlanGc(items, p, clock.Now()).empty());
  clock.Advance(7 * kDay + 1);
  auto plan = PlanGc(items, p, clock.Now());
  ASSERT_EQ(Paths(plan), (std::vector<std::string>{"/j/old"}));
  EXPECT_EQ(plan[0].reason, "finished more than 7d ago (retention.work_dirs_age)");
  clock.Advance(5 * kDay);
  EXPECT_EQ(Paths(PlanGc(items, p, clock.Now())), (std::vector<std::string>{"/j/old", "/j/new"}));
  p.work_dirs_age = 0;  // no age limit: nothing goes by age
  EXPECT_TRUE(PlanGc(items, p, clock.Now()).empty());
}

TEST(GcPolicyTest, SizeLimitsRemoveTheLeastRecentlyUsedEnvironmentsNeverOneInUse) {
  scheduler::FakeClock clock;
  GcPolicy p;
  p.envs_max_bytes = 250;
  const Timestamp t = clock.Now();
  std::vector<GcItem> items = {Item(Kind::kEnvironment, "/e/b", 100, t + 2),
                               Item(Kind::kEnvironment, "/e/oldest-in-use", 100, t, true),
                               Item(Kind::kEnvironment, "/e/a", 100, t + 1),
                               Item(Kind::kEnvironment, "/e/c", 100, t + 3)};
  // 400 bytes, 250 allowed: the two least recently used that are not in use.
  auto plan = PlanGc(items, p, clock.Now());
  EXPECT_EQ(Paths(plan), (std::vector<std::string>{"/e/a", "/e/b"}));
  EXPECT_EQ(plan[0].reason,
            "least recently used while the total is over 250 bytes (retention.envs_max_bytes)");
  // Everything in use: over the limit, and still nothing goes.
  for (auto& i : items) i.in_use = true;
  EXPECT_TRUE(PlanGc(items, p, clock.Now()).empty());
}

TEST(GcPolicyTest, RawLogsGoOnceStoredUnlessTheirWorkDirGoesWhole) {
  scheduler::FakeClock clock;
  GcPolicy p;
  p.work_dirs_age = kDay;
  p.job_logs_age = 0;  // logs kept forever
  const Timestamp t = clock.Now();
  std::vector<GcItem> items = {
      Item(Kind::kWorkDir, "/jobs/p/old", 10, t),
      Item(Kind::kRawLog, "/jobs/p/old/master-replica-0/log", 5, t),
      Item(Kind::kWorkDir, "/jobs/p/recent", 10, t + 2 * kDay),
      Item(Kind::kRawLog, "/jobs/p/recent/trial-1/master-replica-0/log", 5, t + 2 * kDay),
      Item(Kind::kJobLogs, "", 1000, t),
  };
  clock.Advance(2 * kDay);
  auto plan = PlanGc(items, p, clock.Now());
  EXPECT_EQ(Paths(plan), (std::vector<std::string>{"/jobs/p/old",
                                                   "/jobs/p/recent/trial-1/master-replica-0/log"}));
  EXPECT_EQ(plan[1].reason, "its lines are stored");
}

TEST(GcPolicyTest, JobLogsHaveAnAgeAndASizeOldestJobFirst) {
  scheduler::FakeClock clock;
  GcPolicy p;
  p.job_logs_age = 30 * kDay;
  p.job_logs_max_bytes = 1500;
  const Timestamp t = clock.Now();
  std::vector<GcItem> items = {Item(Kind::kJobLogs, "a", 1000, t),
                               Item(Kind::kJobLogs, "b", 1000, t + kDay),
                               Item(Kind::kJobLogs, "c", 400, t + 2 * kDay)};
  // Within the age; 2400 bytes over 1500: the oldest job's logs go (1400 left).
  EXPECT_EQ(Paths(PlanGc(items, p, clock.Now())), (std::vector<std::string>{"a"}));
  clock.Advance(33 * kDay);  // past the age: all of them
  EXPECT_EQ(Paths(PlanGc(items, p, clock.Now())), (std::vector<std::string>{"a", "b", "c"}));
}

// --- The collector over a real store and real files --------------------------------------

void WriteFile(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << data;
}

class GarbageCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    store::SqliteOptions so;
    so.path = dir_.path() + "/trainyard.db";
    auto s = store::OpenSqliteJobStore(so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    jobs_ = dir_.path() + "/jobs";
    envs_ = dir_.path() + "/envs";
    std::filesystem::create_directories(jobs_);
    std::filesystem::create_directories(envs_);
  }

  void AddJob(const std::string& id, model::JobState state, Timestamp end) {
    model::Job job;
    job.project = "p";
    job.job_id = id;
    job.state = model::JobState::kQueued;
    job.create_time = end - kDay;
    ASSERT_TRUE(store_->CreateJob(job).ok());
    job.state = state;
    job.end_time = model::IsTerminal(state) ? end : 0;
    ASSERT_TRUE(store_->UpdateJob(job, std::nullopt).ok());
    std::vector<model::LogEntry> lines(1);
    lines[0].project = "p";
    lines[0].job_id = id;
    lines[0].task_name = "master-replica-0";
    lines[0].timestamp = end;
    lines[0].message = "line of " + id;
    ASSERT_TRUE(store_->AppendLogs(lines).ok());
    // A replica dir with its raw log, all of it stored, and a trial's metric file.
    const std::string replica = jobs_ + "/p/" + id + "/trial-1/master-replica-0";
    WriteFile(replica + "/log", std::string(5000, 'x'));
    WriteFile(replica + "/log.offset", "5000\n");
    WriteFile(replica + "/spec.json", "{}");
    WriteFile(replica + "/hypertune/output.metrics", "{\"accuracy\": 0.5}\n");
  }

  GarbageCollector Collector(const GcPolicy& p) {
    return GarbageCollector({.jobs_dir = jobs_, .env_cache_dir = envs_, .store = store_.get()}, p);
  }

  test_support::TempDir dir_{"ty-gc"};
  std::unique_ptr<store::JobStore> store_;
  std::string jobs_;
  std::string envs_;
};

bool Exists(const std::string& p) { return std::filesystem::exists(p); }

TEST_F(GarbageCollectorTest, RemovesWhatThePolicySaysAndKeepsRecordsMetricsAndLiveJobs) {
  scheduler::FakeClock clock;
  const Timestamp now = clock.Now();
  AddJob("old", model::JobState::kSucceeded, now - 10 * kDay);
  AddJob("recent", model::JobState::kFailed, now - kDay);
  AddJob("running", model::JobState::kRunning, now);
  GcPolicy p;
  p.work_dirs_age = 7 * kDay;
  p.job_logs_age = 7 * kDay;
  GarbageCollector gc = Collector(p);

  GcReport dry = gc.Run(/*dry_run=*/true, now);
  EXPECT_TRUE(dry.dry_run);
  EXPECT_TRUE(dry.errors.empty());
  EXPECT_EQ(dry.actions.size(), 3u);  // old's logs and work dir, recent's raw log
  EXPECT_TRUE(Exists(jobs_ + "/p/old/trial-1/master-replica-0/log")) << "a dry run removes nothing";

  GcReport done = gc.Run(/*dry_run=*/false, now);
  ASSERT_TRUE(done.errors.empty()) << done.errors[0];
  EXPECT_EQ(done.actions.size(), 3u);
  EXPECT_GT(done.bytes, 5000);
  // old: its work dir is gone but for the trial's metric file; its record stays, its lines not.
  EXPECT_FALSE(Exists(jobs_ + "/p/old/trial-1/master-replica-0/log"));
  EXPECT_FALSE(Exists(jobs_ + "/p/old/trial-1/master-replica-0/spec.json"));
  EXPECT_TRUE(Exists(jobs_ + "/p/old/trial-1/master-replica-0/hypertune/output.metrics"));
  EXPECT_TRUE(store_->GetJob("p", "old").ok());
  store::LogQuery q;
  q.project = "p";
  q.job_id = "old";
  EXPECT_TRUE(store_->ReadLogs(q)->empty());
  q.job_id = "recent";
  EXPECT_EQ(store_->ReadLogs(q)->size(), 1u);
  // recent: only its raw log went (its lines are stored).
  EXPECT_FALSE(Exists(jobs_ + "/p/recent/trial-1/master-replica-0/log"));
  EXPECT_TRUE(Exists(jobs_ + "/p/recent/trial-1/master-replica-0/spec.json"));
  // running: untouched, raw log included.
  EXPECT_TRUE(Exists(jobs_ + "/p/running/trial-1/master-replica-0/log"));
  // A second run has nothing left to do.
  EXPECT_TRUE(gc.Run(false, now).actions.empty());
}

TEST_F(GarbageCollectorTest, ARawLogNotFullyStoredStays) {
  const Timestamp now = scheduler::FakeClock().Now();
  AddJob("partial", model::JobState::kSucceeded, now);
  WriteFile(jobs_ + "/p/partial/trial-1/master-replica-0/log.offset", "4000\n");
  GarbageCollector gc = Collector(GcPolicy{});
  EXPECT_TRUE(gc.Run(false, now).actions.empty());
  EXPECT_TRUE(Exists(jobs_ + "/p/partial/trial-1/master-replica-0/log"));
}

TEST_F(GarbageCollectorTest, AnEnvironmentInUseIsNeverRemovedTheOthersByLastUse) {
  const std::string a(64, 'a'), b(64, 'b');
  WriteFile(envs_ + "/" + a + "/.complete", "x");
  WriteFile(envs_ + "/" + a + "/bin/python", std::string(10000, 'p'));
  WriteFile(envs_ + "/" + b + "/.complete", "x");
  WriteFile(envs_ + "/" + b + "/bin/python", std::string(10000, 'p'));
  // b is in use: a launcher holds its lock shared (launcher.cc PrepareEnvironment).
  const int fd = ::open((envs_ + "/" + b + ".lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_SH), 0);
  GcPolicy p;
  p.envs_age = kDay;
  GarbageCollector gc = Collector(p);
  // Both were last used "now" by the file clock; the policy's clock is a month later.
  const Timestamp later = NowMicros() + 30 * kDay;
  GcReport r = gc.Run(false, later);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].item.path, envs_ + "/" + a);
  EXPECT_FALSE(Exists(envs_ + "/" + a));
  EXPECT_TRUE(Exists(envs_ + "/" + b + "/bin/python"));
  ::close(fd);  // released: now it may go
  EXPECT_EQ(gc.Run(false, later).actions.size(), 1u);
  EXPECT_FALSE(Exists(envs_ + "/" + b));
}

TEST_F(GarbageCollectorTest, PurgeDeletesRecordsOfJobsFinishedBeforeTheTime) {
  const Timestamp now = scheduler::FakeClock().Now();
  AddJob("ancient", model::JobState::kCancelled, now - 100 * kDay);
  AddJob("young", model::JobState::kSucceeded, now - kDay);
  AddJob("live", model::JobState::kRunning, now);
  GarbageCollector gc = Collector(GcPolicy{});
  GcReport dry = gc.Purge(now - 30 * kDay, true);
  ASSERT_EQ(dry.actions.size(), 1u);
  EXPECT_TRUE(store_->GetJob("p", "ancient").ok());
  GcReport r = gc.Purge(now - 30 * kDay, false);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].item.job_id, "ancient");
  EXPECT_EQ(store_->GetJob("p", "ancient").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(Exists(jobs_ + "/p/ancient"));
  EXPECT_TRUE(store_->GetJob("p", "young").ok());
  EXPECT_TRUE(store_->GetJob("p", "live").ok());
  EXPECT_TRUE(Exists(jobs_ + "/p/young"));
}

// --- ops.h helpers ------------------------------------------------------------------------

TEST(OpsTest, DiskThresholdsInBytesOrAShareAndTheReasonTheyGive) {
  auto t = ParseDiskThreshold("1GiB");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->For(1LL << 40), 1LL << 30);
  auto pct = ParseDiskThreshold("5%");
  ASSERT_TRUE(pct.ok());
  EXPECT_EQ(pct->For(1000000), 50000);
  EXPECT_FALSE(ParseDiskThreshold("lots").ok());
  EXPECT_FALSE(ParseDiskThreshold("150%").ok());

  DiskSpace d{.free_bytes = 10 << 20, .total_bytes = 100 << 20};
  const std::string reason = DiskHoldReason("data dir", "/var/lib/trainyard", d, *t);
  EXPECT_EQ(reason.rfind("Admission is paused: the data dir /var/lib/trainyard has 10.0 MiB free, "
                         "less than disk_min_free (1.0 GiB).",
                         0),
            0u)
      << reason;
  d.free_bytes = 2LL << 30;
  EXPECT_EQ(DiskHoldReason("data dir", "/x", d, *t), "");
  EXPECT_EQ(DiskHoldReason("data dir", "/x", DiskSpace{}, *t), "") << "unknown is not low";
  DiskThreshold off;
  EXPECT_EQ(DiskHoldReason("data dir", "/x", DiskSpace{.free_bytes = 0, .total_bytes = 1}, off),
            "");
}

TEST(OpsTest, NvidiaSmiOutputIsReadLineByLine) {
  auto gpus = ParseNvidiaSmi("0, 35, 1024, 16384\n1, [N/A], 0, 16384\n2, 100, 16000, 16384\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_DOUBLE_EQ(gpus[0].utilization_ratio, 0.35);
  EXPECT_EQ(gpus[0].memory_used_bytes, 1024LL << 20);
  EXPECT_EQ(gpus[1].index, 2);
  EXPECT_EQ(gpus[1].memory_total_bytes, 16384LL << 20);
}

}  // namespace
}  // namespace trainyard::daemon
