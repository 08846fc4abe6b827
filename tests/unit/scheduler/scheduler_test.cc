#include "trainyard/scheduler/scheduler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "trainyard/store/store_sqlite.h"

namespace trainyard::scheduler {
namespace {

using model::Job;
using model::JobState;

// Records what the scheduler asks for; tests play the replica's part by calling the listener.
class FakeExecutor : public executor::Executor {
 public:
  Status Launch(const executor::ReplicaSpec& spec) override {
    std::lock_guard<std::mutex> lock(mu);
    launched.push_back(spec);
    return launch_status;
  }
  void Kill(const executor::ReplicaKey& key, Duration grace) override {
    std::lock_guard<std::mutex> lock(mu);
    killed.push_back(key);
    last_grace = grace;
  }
  std::vector<executor::ReplicaKey> Recover(const std::vector<std::string>& dirs) override {
    recovered_dirs = dirs;
    return reattach;
  }
  int RunningCount() const override { return 0; }
  void Shutdown() override {}

  std::vector<executor::ReplicaSpec> Launched() {
    std::lock_guard<std::mutex> lock(mu);
    return launched;
  }
  std::vector<executor::ReplicaKey> Killed() {
    std::lock_guard<std::mutex> lock(mu);
    return killed;
  }

  std::mutex mu;
  std::vector<executor::ReplicaSpec> launched;
  std::vector<executor::ReplicaKey> killed;
  Duration last_grace = 0;
  Status launch_status;
  std::vector<std::string> recovered_dirs;
  std::vector<executor::ReplicaKey> reattach;
};

executor::ReplicaExit CleanExit() {
  executor::ReplicaExit e;
  e.phase = "run";
  return e;
}

bool WaitFor(const std::function<bool()>& pred, int timeout_ms = 5000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty_sched_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "buckets" / "bkt");
    std::filesystem::create_directories(dir_ / "jobs");
    std::ofstream(dir_ / "buckets" / "bkt" / "trainer.tar.gz") << "sdist";
    store_ = store::NewInMemoryJobStore();
    buckets_ = std::make_unique<storage::BucketStore>((dir_ / "buckets").string());
    options_.jobs_dir = (dir_ / "jobs").string();
    options_.env_cache_dir = (dir_ / "envs").string();
    options_.tick = 5 * 1000;
  }
  void TearDown() override {
    if (sched_) sched_->Stop();
    std::filesystem::remove_all(dir_);
  }

  void StartScheduler() {
    sched_ = std::make_unique<Scheduler>(options_, *store_, exec_, *buckets_);
    ASSERT_TRUE(sched_->Start().ok());
  }

  Job MakeJob(const std::string& id, int priority = 0) {
    Job job;
    job.project = "p";
    job.job_id = id;
    job.spec.package_uris = {"gs://bkt/trainer.tar.gz"};
    job.spec.python_module = "trainer.task";
    job.spec.args = {"--epochs", "2"};
    job.spec.region = "us-central1";
    job.spec.job_dir = "gs://bkt/out";
    job.spec.scheduling.priority = priority;
    job.training_input_json = R"({"pythonModule":"trainer.task","region":"us-central1"})";
    return job;
  }

  JobState StateOf(const std::string& id) { return sched_->GetJob("p", id)->state; }

  executor::ReplicaKey Master(const std::string& id) { return {"p", id, "", "master", 0}; }

  std::vector<std::string> ServiceLines(const std::string& id) {
    store::LogQuery q;
    q.project = "p";
    q.job_id = id;
    q.task_name = "service";
    std::vector<std::string> out;
    auto entries = store_->ReadLogs(q);
    for (const auto& e : *entries) out.push_back(e.message);
    return out;
  }

  std::filesystem::path dir_;
  SchedulerOptions options_;
  std::unique_ptr<store::JobStore> store_;
  std::unique_ptr<storage::BucketStore> buckets_;
  FakeExecutor exec_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(SchedulerTest, RunsAJobToSucceeded) {
  StartScheduler();
  auto job = sched_->Submit(MakeJob("j1"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->job_position, 1);
  EXPECT_GT(job->create_time, 0);
  EXPECT_FALSE(job->etag.empty());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  EXPECT_EQ(StateOf("j1"), JobState::kPreparing);
  const auto spec = exec_.Launched()[0];
  EXPECT_EQ(spec.python, "/usr/bin/python3");
  EXPECT_EQ(spec.python_module, "trainer.task");
  std::vector<std::string> want_args = {"--epochs", "2", "--job-dir", "gs://bkt/out"};
  EXPECT_EQ(spec.args, want_args);
  ASSERT_EQ(spec.packages.size(), 1u);
  EXPECT_EQ(spec.packages[0], (dir_ / "buckets" / "bkt" / "trainer.tar.gz").string());
  EXPECT_EQ(spec.env.at("CLOUD_ML_JOB_ID"), "j1");
  const std::string& tf = spec.env.at("TF_CONFIG");
  EXPECT_NE(tf.find(R"("cluster":{"master":["127.0.0.1:)"), std::string::npos) << tf;
  EXPECT_NE(tf.find(R"("environment":"cloud")"), std::string::npos) << tf;
  EXPECT_NE(tf.find(R"("type":"master")"), std::string::npos) << tf;
  EXPECT_NE(tf.find(R"("job":{"pythonModule":"trainer.task")"), std::string::npos) << tf;

  sched_->OnReplicaRunning(Master("j1"));
  EXPECT_EQ(StateOf("j1"), JobState::kRunning);
  sched_->OnReplicaExit(Master("j1"), CleanExit());
  auto done = sched_->GetJob("p", "j1");
  EXPECT_EQ(done->state, JobState::kSucceeded);
  EXPECT_GT(done->start_time, 0);
  EXPECT_GE(done->end_time, done->start_time);
  EXPECT_TRUE(done->error_message.empty());
  auto history = store_->GetStateHistory("p", "j1");
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ((*history)[2].to, JobState::kSucceeded);
  ASSERT_TRUE(WaitFor([&] { return ServiceLines("j1").size() >= 6; }));
  auto lines = ServiceLines("j1");
  EXPECT_EQ(lines.front(), "Validating job requirements...");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "Job completed successfully."), lines.end());
}

TEST_F(SchedulerTest, FailedReplicaFailsTheJobInAIPlatformWords) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("j1")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaRunning(Master("j1"));
  executor::ReplicaExit e;
  e.exit_code = 1;
  e.phase = "run";
  e.error_tail = "Traceback (most recent call last):\n  [...]\nValueError: boom";
  sched_->OnReplicaExit(Master("j1"), e);
  auto job = sched_->GetJob("p", "j1");
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error_message,
            "The replica master 0 exited with a non-zero status of 1. Termination reason: Error. "
            "Traceback (most recent call last):\n  [...]\nValueError: boom");
}

TEST_F(SchedulerTest, InstallFailureCarriesPipsMessage) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("j1")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  executor::ReplicaExit e;
  e.exit_code = 1;
  e.phase = "install";
  e.message = "ERROR: Could not find a version that satisfies the requirement nope";
  sched_->OnReplicaExit(Master("j1"), e);
  auto job = sched_->GetJob("p", "j1");
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_NE(job->error_message.find("Could not find a version that satisfies the requirement nope"),
            std::string::npos);
}

TEST_F(SchedulerTest, CancelQueuedJobGoesThroughCancellingToCancelled) {
  options_.admission_paused = true;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("j1")).ok());
  ASSERT_TRUE(sched_->Cancel("p", "j1").ok());
  auto job = sched_->GetJob("p", "j1");
  EXPECT_EQ(job->state, JobState::kCancelled);
  EXPECT_GT(job->end_time, 0);
  auto history = store_->GetStateHistory("p", "j1");
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].to, JobState::kCancelling);
  EXPECT_EQ((*history)[1].to, JobState::kCancelled);
  EXPECT_TRUE(exec_.Launched().empty());
  // Cancelling again is a successful no-op; an unknown job is NOT_FOUND.
  EXPECT_TRUE(sched_->Cancel("p", "j1").ok());
  EXPECT_EQ(sched_->Cancel("p", "nope").code(), StatusCode::kNotFound);
}

TEST_F(SchedulerTest, CancelRunningJobKillsWithGraceThenCancels) {
  options_.cancel_grace = 3 * kMicrosPerSecond;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("j1")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaRunning(Master("j1"));
  ASSERT_TRUE(sched_->Cancel("p", "j1").ok());
  EXPECT_EQ(StateOf("j1"), JobState::kCancelling);
  ASSERT_EQ(exec_.Killed().size(), 1u);
  EXPECT_EQ(exec_.last_grace, 3 * kMicrosPerSecond);
  executor::ReplicaExit e;
  e.signal = 15;
  e.killed_by_request = true;
  sched_->OnReplicaExit(Master("j1"), e);
  auto job = sched_->GetJob("p", "j1");
  EXPECT_EQ(job->state, JobState::kCancelled);
  EXPECT_EQ(job->error_message, "The job was cancelled at the user's request.");
}

TEST_F(SchedulerTest, AdmitsByPriorityThenAgeAndReportsPositions) {
  options_.admission_paused = true;
  options_.max_running_jobs = 1;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("low", 0)).ok());
  ASSERT_TRUE(sched_->Submit(MakeJob("high", 500)).ok());
  ASSERT_TRUE(sched_->Submit(MakeJob("low2", 0)).ok());
  EXPECT_EQ(sched_->GetJob("p", "high")->job_position, 1);
  EXPECT_EQ(sched_->GetJob("p", "low")->job_position, 2);
  EXPECT_EQ(sched_->GetJob("p", "low2")->job_position, 3);
  sched_->SetAdmissionPaused(false);
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  EXPECT_EQ(exec_.Launched()[0].key.job_id, "high");
  EXPECT_EQ(sched_->GetJob("p", "low")->job_position, 1);
  sched_->OnReplicaRunning(Master("high"));
  sched_->OnReplicaExit(Master("high"), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  EXPECT_EQ(exec_.Launched()[1].key.job_id, "low");
}

TEST_F(SchedulerTest, MaxRunningTimeCancelsWithAMessageNamingTheLimit) {
  StartScheduler();
  Job job = MakeJob("sleeper");
  job.spec.scheduling.max_running_time = 50 * 1000;  // 50 ms
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaRunning(Master("sleeper"));
  ASSERT_TRUE(WaitFor([&] { return !exec_.Killed().empty(); }));
  executor::ReplicaExit e;
  e.signal = 15;
  e.killed_by_request = true;
  sched_->OnReplicaExit(Master("sleeper"), e);
  auto done = sched_->GetJob("p", "sleeper");
  EXPECT_EQ(done->state, JobState::kCancelled);
  EXPECT_NE(done->error_message.find("scheduling.maxRunningTime (0.05s)"), std::string::npos)
      << done->error_message;
}

TEST_F(SchedulerTest, MaxWaitTimeCancelsAJobStillQueued) {
  options_.admission_paused = true;
  StartScheduler();
  Job job = MakeJob("waiter");
  job.spec.scheduling.max_wait_time = 20 * 1000;  // 20 ms
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(sched_->Submit(MakeJob("patient")).ok());
  ASSERT_TRUE(WaitFor([&] { return StateOf("waiter") == JobState::kCancelled; }));
  auto done = sched_->GetJob("p", "waiter");
  EXPECT_NE(done->error_message.find("scheduling.maxWaitTime (0.02s)"), std::string::npos)
      << done->error_message;
  EXPECT_EQ(sched_->GetJob("p", "patient")->job_position, 1);
  EXPECT_EQ(sched_->Stats().queued, 1);
  EXPECT_TRUE(exec_.Launched().empty());
}

TEST_F(SchedulerTest, LabelPatchChecksTheEtag) {
  options_.admission_paused = true;
  StartScheduler();
  auto job = sched_->Submit(MakeJob("j1"));
  auto bad = sched_->UpdateLabels("p", "j1", {{"a", "b"}}, "wrong", true);
  EXPECT_EQ(bad.status().code(), StatusCode::kAborted);
  auto good = sched_->UpdateLabels("p", "j1", {{"a", "b"}}, job->etag, true);
  ASSERT_TRUE(good.ok());
  EXPECT_NE(good->etag, job->etag);
  EXPECT_EQ(store_->GetJob("p", "j1")->labels.at("a"), "b");
  EXPECT_EQ(sched_->GetJob("p", "j1")->labels.at("a"), "b");
}

TEST_F(SchedulerTest, RejectsJobsItCannotRun) {
  StartScheduler();
  Job job = MakeJob("j1");
  job.spec.package_uris = {"gs://bkt/missing.tar.gz"};
  job.spec.job_dir = "gs://nobucket/out";
  Status st = sched_->CheckRunnable(job);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.violations().size(), 2u) << st.ToString();
  EXPECT_TRUE(sched_->CheckRunnable(MakeJob("j2")).ok());
}

TEST_F(SchedulerTest, RecoveryRequeuesQueuedAndFailsVanishedReplicas) {
  Job queued = MakeJob("queued");
  queued.state = JobState::kQueued;
  ASSERT_TRUE(store_->CreateJob(queued).ok());
  Job running = MakeJob("running");
  running.state = JobState::kRunning;
  ASSERT_TRUE(store_->CreateJob(running).ok());
  options_.admission_paused = true;
  StartScheduler();
  EXPECT_EQ(StateOf("queued"), JobState::kQueued);
  auto lost = sched_->GetJob("p", "running");
  EXPECT_EQ(lost->state, JobState::kFailed);
  EXPECT_NE(lost->error_message.find("The replica master 0 was lost"), std::string::npos)
      << lost->error_message;
}

TEST_F(SchedulerTest, RecoveryKeepsReattachedReplicas) {
  Job running = MakeJob("running");
  running.state = JobState::kRunning;
  ASSERT_TRUE(store_->CreateJob(running).ok());
  std::filesystem::create_directories(dir_ / "jobs" / "p" / "running" / "master-replica-0");
  std::ofstream(dir_ / "jobs" / "p" / "running" / "master-replica-0" / "spec.json") << "{}";
  exec_.reattach = {Master("running")};
  StartScheduler();
  ASSERT_EQ(exec_.recovered_dirs.size(), 1u);
  EXPECT_EQ(StateOf("running"), JobState::kRunning);
  sched_->OnReplicaExit(Master("running"), CleanExit());
  EXPECT_EQ(StateOf("running"), JobState::kSucceeded);
}

TEST_F(SchedulerTest, AnInstallPhaseEndingWithStatusZeroIsNotSuccess) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("j1")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  executor::ReplicaExit e;
  e.phase = "install";
  e.exit_code = 0;
  e.message = "interrupted";
  sched_->OnReplicaExit(Master("j1"), e);
  EXPECT_EQ(StateOf("j1"), JobState::kFailed);
}

TEST_F(SchedulerTest, LostLauncherFailsWithLostMessage) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("j1")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaRunning(Master("j1"));
  executor::ReplicaExit e;
  e.phase = "lost";
  e.exit_code = -1;
  e.message = "its launcher exited without reporting how the trainer ended";
  sched_->OnReplicaExit(Master("j1"), e);
  auto job = sched_->GetJob("p", "j1");
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error_message,
            "The replica master 0 was lost: its launcher exited without reporting how the "
            "trainer ended");
}

TEST_F(SchedulerTest, RecoveryRequeuesAPreparingJobThatNeverLaunched) {
  Job job = MakeJob("prep");
  job.state = JobState::kPreparing;
  ASSERT_TRUE(store_->CreateJob(job).ok());
  options_.admission_paused = true;
  StartScheduler();
  EXPECT_TRUE(exec_.recovered_dirs.empty());
  auto got = sched_->GetJob("p", "prep");
  EXPECT_EQ(got->state, JobState::kQueued);
  EXPECT_EQ(got->job_position, 1);
  sched_->SetAdmissionPaused(false);
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
}

TEST_F(SchedulerTest, RecoveryResendsTheKillOfACancellingJob) {
  Job job = MakeJob("stopping");
  job.state = JobState::kCancelling;
  job.error_message = "The job was cancelled at the user's request.";
  ASSERT_TRUE(store_->CreateJob(job).ok());
  std::filesystem::create_directories(dir_ / "jobs" / "p" / "stopping" / "master-replica-0");
  std::ofstream(dir_ / "jobs" / "p" / "stopping" / "master-replica-0" / "spec.json") << "{}";
  exec_.reattach = {Master("stopping")};
  StartScheduler();
  ASSERT_EQ(exec_.Killed().size(), 1u);
  EXPECT_EQ(StateOf("stopping"), JobState::kCancelling);
  executor::ReplicaExit e;
  e.phase = "run";
  e.signal = 15;
  e.killed_by_request = true;
  sched_->OnReplicaExit(Master("stopping"), e);
  auto done = sched_->GetJob("p", "stopping");
  EXPECT_EQ(done->state, JobState::kCancelled);
  EXPECT_EQ(done->error_message, "The job was cancelled at the user's request.");
}

}  // namespace
}  // namespace trainyard::scheduler
