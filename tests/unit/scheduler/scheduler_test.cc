#include "trainyard/scheduler/scheduler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "scheduler_fixture.h"
#include "trainyard/model/job_json.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::scheduler {
namespace {

using model::Job;
using model::JobState;
using namespace testing_support;  // NOLINT(google-build-using-namespace): the fixture

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

// Issue 16 item 6: a queued job says why it waits; an admitted one what it holds.
TEST_F(SchedulerTest, QueuedJobsSayWhyTheyWaitAndAdmittedOnesWhatTheyHold) {
  options_.admission_paused = true;
  options_.max_running_jobs = 1;
  StartScheduler();
  Job first = MakeJob("first");
  first.spec.scheduling.max_wait_time = 3600 * kMicrosPerSecond;
  auto submitted = sched_->Submit(first);
  ASSERT_TRUE(submitted.ok());
  EXPECT_EQ(submitted->wait_reason.rfind("Admission is paused", 0), 0u) << submitted->wait_reason;
  EXPECT_NE(submitted->wait_reason.find("(scheduling.maxWaitTime 3600s)"), std::string::npos)
      << submitted->wait_reason;
  EXPECT_NE(model::JobToJson(*submitted).find("\"waitReason\":\"Admission is paused"),
            std::string::npos);
  ASSERT_TRUE(sched_->Submit(MakeJob("second")).ok());

  sched_->SetAdmissionPaused(false);
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  auto second = sched_->GetJob("p", "second");
  EXPECT_EQ(second->wait_reason,
            "The running-jobs limit is reached: 1 jobs are admitted and max_running_jobs is 1.");
  std::vector<Job> listed = {*store_->GetJob("p", "second")};
  sched_->FillLiveFields(listed);
  EXPECT_EQ(listed[0].wait_reason, second->wait_reason);

  auto running = sched_->GetJob("p", "first");
  EXPECT_TRUE(running->wait_reason.empty());  // the local backend has no queue of its own
  ASSERT_TRUE(running->allocation.set);
  EXPECT_GT(running->allocation.cpu_millis, 0);
  EXPECT_GT(running->allocation.memory_bytes, 0);
  EXPECT_EQ(running->allocation.gpus, 0);
  EXPECT_NE(model::JobToJson(*running).find("\"allocation\":{\"vcpus\":"), std::string::npos);

  sched_->OnReplicaRunning(Master("first"));
  sched_->OnReplicaExit(Master("first"), CleanExit());
  auto done = sched_->GetJob("p", "first");
  EXPECT_FALSE(done->allocation.set);
  EXPECT_EQ(model::JobToJson(*done).find("allocation"), std::string::npos);
}

TEST_F(SchedulerTest, AQueuedJobShortOfCpusSaysSoAndTheOnesBehindItSayWhy) {
  // Room for one BASIC job (one `standard` machine: 4 vCPUs) at a time.
  options_.node.cpu_millis = 6 * 1000;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("a")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  ASSERT_TRUE(sched_->Submit(MakeJob("b")).ok());
  ASSERT_TRUE(sched_->Submit(MakeJob("c")).ok());
  sched_->RunUntilIdle();
  EXPECT_EQ(sched_->GetJob("p", "b")->wait_reason,
            "Not enough free CPUs: it needs 4 vCPUs, 2 of 6 are free.");
  EXPECT_EQ(sched_->GetJob("p", "c")->wait_reason,
            "Not enough free CPUs: it needs 4 vCPUs, 2 of 6 are free.");
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
  Advance(50 * 1000);
  EXPECT_TRUE(exec_.Killed().empty()) << "at the limit, not past it";
  Advance(1);
  ASSERT_EQ(exec_.Killed().size(), 1u);
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
  Advance(20 * 1000);
  EXPECT_EQ(StateOf("waiter"), JobState::kQueued);
  Advance(1);
  ASSERT_EQ(StateOf("waiter"), JobState::kCancelled);
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
  executor::RecoveredReplica found;
  found.spec.key = Master("running");
  found.spec.work_dir = "/fake/running";
  exec_.persisted[Master("running")] = found;
  exec_.reattach = {Master("running")};
  StartScheduler();
  ASSERT_EQ(exec_.recover_keys.size(), 1u);
  EXPECT_EQ(exec_.recover_keys[0], Master("running"));
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

TEST_F(SchedulerTest, LostLauncherFailsWithLostMessageWhenRestartsAreOff) {
  options_.replica_restarts = 0;
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

// A daemon killed after a job's closing service line was stored but before its terminal state
// finishes the job again after the restart: the closing line is stored once (issue 17, found by
// test_faults.py's scheduler.finish.before_write failpoint).
TEST_F(SchedulerTest, TheClosingLineIsStoredOnceWhenAJobIsFinishedAgain) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("fin")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaRunning(Master("fin"));
  sched_->OnReplicaExit(Master("fin"), CleanExit());
  ASSERT_EQ(StateOf("fin"), JobState::kSucceeded);
  sched_.reset();
  // As the killed daemon left it: the closing line stored, the job still RUNNING.
  Job stored = *store_->GetJob("p", "fin");
  stored.state = JobState::kRunning;
  ASSERT_TRUE(store_->UpdateJob(stored, std::nullopt).ok());
  executor::RecoveredReplica found;
  found.spec.key = Master("fin");
  found.spec.work_dir = "/fake/fin";
  exec_.persisted[Master("fin")] = found;
  exec_.reattach = {Master("fin")};
  StartScheduler();
  sched_->OnReplicaExit(Master("fin"), CleanExit());
  EXPECT_EQ(StateOf("fin"), JobState::kSucceeded);
  const std::vector<std::string> lines = ServiceLines("fin");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "Job completed successfully."), 1)
      << lines.size();
}

// A store that refuses terminal states while `refuse` is set, and every state change while
// `refuse_all` is (the database locked by another process, or unwritable), and passes
// everything else on.
class RefusingStore : public store::JobStore {
 public:
  explicit RefusingStore(std::unique_ptr<store::JobStore> inner) : inner_(std::move(inner)) {}
  bool refuse = false;
  bool refuse_all = false;

  Result<int64_t> CreateJob(const Job& job) override { return inner_->CreateJob(job); }
  Result<Job> GetJob(const std::string& p, const std::string& j) override {
    return inner_->GetJob(p, j);
  }
  Status UpdateJob(const Job& job, const std::optional<store::StateChange>& change) override {
    if (refuse && change && model::IsTerminal(change->to)) return Unavailable("database is locked");
    if (refuse_all && change) return Unavailable("database is locked");
    return inner_->UpdateJob(job, change);
  }
  Result<store::ListJobsResponse> ListJobs(const store::ListJobsRequest& r) override {
    return inner_->ListJobs(r);
  }
  Result<std::vector<Job>> ListActiveJobs() override { return inner_->ListActiveJobs(); }
  Result<std::vector<store::StateChange>> GetStateHistory(const std::string& p,
                                                          const std::string& j) override {
    return inner_->GetStateHistory(p, j);
  }
  Result<std::vector<std::pair<JobState, int64_t>>> CountJobsByState() override {
    return inner_->CountJobsByState();
  }
  Status AppendLogs(std::span<model::LogEntry> entries) override {
    return inner_->AppendLogs(entries);
  }
  Result<std::vector<model::LogEntry>> ReadLogs(const store::LogQuery& q) override {
    return inner_->ReadLogs(q);
  }
  Result<int64_t> LastLogInsertId() override { return inner_->LastLogInsertId(); }

 private:
  std::unique_ptr<store::JobStore> inner_;
};

// A job whose launch failed while the store refused its terminal state stayed PREPARING for
// good (only RUNNING and cancelled jobs were finished again). It is stored once the store
// takes writes again, with its closing line once (issue 17, the database-locked fault test).
TEST_F(SchedulerTest, ATerminalStateTheStoreRefusedIsStoredOnceItCan) {
  auto refusing = std::make_unique<RefusingStore>(std::move(store_));
  RefusingStore* db = refusing.get();
  store_ = std::move(refusing);
  exec_.fail_launch_at = 0;
  StartScheduler();
  db->refuse = true;
  ASSERT_TRUE(sched_->Submit(MakeJob("stuck")).ok());
  sched_->RunUntilIdle();
  EXPECT_EQ(StateOf("stuck"), JobState::kPreparing);
  Advance(kMicrosPerSecond);
  EXPECT_EQ(StateOf("stuck"), JobState::kPreparing) << "the store still refuses";
  db->refuse = false;
  Advance(kMicrosPerSecond);
  auto job = store_->GetJob("p", "stuck");
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_NE(job->error_message.find("no launcher today"), std::string::npos) << job->error_message;
  const std::vector<std::string> lines = ServiceLines("stuck");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), job->error_message), 1) << lines.size();
}

// The store refused RUNNING when the replica started, and the master then ended while it
// still refused: the job stayed PREPARING for good, its success retried every tick as a
// PREPARING -> SUCCEEDED transition the state machine refuses. RUNNING is stored first.
TEST_F(SchedulerTest, ASuccessAfterARefusedRunningIsStoredOnceTheStoreCan) {
  auto refusing = std::make_unique<RefusingStore>(std::move(store_));
  RefusingStore* db = refusing.get();
  store_ = std::move(refusing);
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("quick")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  db->refuse_all = true;
  sched_->OnReplicaRunning(Master("quick"));
  sched_->OnReplicaExit(Master("quick"), CleanExit());
  Advance(kMicrosPerSecond);
  EXPECT_EQ(store_->GetJob("p", "quick")->state, JobState::kPreparing) << "the store refuses";
  db->refuse_all = false;
  Advance(kMicrosPerSecond);
  EXPECT_EQ(StateOf("quick"), JobState::kSucceeded);
  auto history = store_->GetStateHistory("p", "quick");
  ASSERT_TRUE(history.ok());
  std::vector<JobState> states;
  for (const auto& c : *history) states.push_back(c.to);
  EXPECT_EQ(states, (std::vector<JobState>{JobState::kPreparing, JobState::kRunning,
                                           JobState::kSucceeded}));
  const std::vector<std::string> lines = ServiceLines("quick");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "Job completed successfully."), 1);
}

// A RUNNING the store refused while the job runs is stored once it can, not only when the job
// ends: until then the job said PREPARING, and maxRunningTime never started counting.
TEST_F(SchedulerTest, ARunningStateTheStoreRefusedIsStoredOnceItCan) {
  auto refusing = std::make_unique<RefusingStore>(std::move(store_));
  RefusingStore* db = refusing.get();
  store_ = std::move(refusing);
  StartScheduler();
  Job job = MakeJob("long");
  job.spec.scheduling.max_running_time = 10 * kMicrosPerSecond;
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  db->refuse_all = true;
  sched_->OnReplicaRunning(Master("long"));
  Advance(kMicrosPerSecond);
  EXPECT_EQ(StateOf("long"), JobState::kPreparing) << "the store refuses";
  db->refuse_all = false;
  Advance(kMicrosPerSecond);
  EXPECT_EQ(StateOf("long"), JobState::kRunning);
  EXPECT_EQ(store_->GetJob("p", "long")->state, JobState::kRunning);
  // maxRunningTime counts from then on.
  Advance(11 * kMicrosPerSecond);
  EXPECT_EQ(StateOf("long"), JobState::kCancelling);
}

TEST_F(SchedulerTest, RecoveryRequeuesAPreparingJobThatNeverLaunched) {
  Job job = MakeJob("prep");
  job.state = JobState::kPreparing;
  ASSERT_TRUE(store_->CreateJob(job).ok());
  options_.admission_paused = true;
  StartScheduler();
  // It asked the executor about the master, which had never been launched.
  ASSERT_EQ(exec_.recover_keys.size(), 1u);
  EXPECT_EQ(exec_.recover_keys[0], Master("prep"));
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
  executor::RecoveredReplica found;
  found.spec.key = Master("stopping");
  found.spec.work_dir = "/fake/stopping";
  exec_.persisted[Master("stopping")] = found;
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

// ---- Multi-replica jobs, gang admission, GPUs, restarts (issue 4) ------------------------------

Job CustomJob(const std::string& id, int workers, int ps, int evaluators, int priority = 0) {
  Job job;
  job.project = "p";
  job.job_id = id;
  job.spec.scale_tier = "CUSTOM";
  job.spec.master.machine_type = "n1-standard-4";
  job.spec.worker = {"n1-standard-4", workers, {}, "", {}, {}};
  job.spec.parameter_server = {"n1-standard-4", ps, {}, "", {}, {}};
  job.spec.evaluator = {"n1-standard-4", evaluators, {}, "", {}, {}};
  job.spec.package_uris = {"gs://bkt/trainer.tar.gz"};
  job.spec.python_module = "trainer.task";
  job.spec.region = "us-central1";
  job.spec.scheduling.priority = priority;
  job.training_input_json = R"({"scaleTier":"CUSTOM","masterType":"n1-standard-4"})";
  return job;
}

Job GpuJob(const std::string& id, int gpus, int priority = 0) {
  Job job = CustomJob(id, 0, 0, 0, priority);
  job.spec.master.accelerator = {"NVIDIA_TESLA_T4", gpus};
  return job;
}

executor::ReplicaKey Key(const std::string& id, const std::string& type, int index) {
  return {"p", id, "", type, index};
}

executor::ReplicaExit SignalExit(int sig, bool oom = false) {
  executor::ReplicaExit e;
  e.phase = "run";
  e.signal = sig;
  e.exit_code = 128 + sig;
  e.oom_killed = oom;
  return e;
}

nlohmann::json TfConfig(const executor::ReplicaSpec& spec) {
  return nlohmann::json::parse(spec.env.at("TF_CONFIG"));
}

TEST_F(SchedulerTest, CustomClusterGetsOneTfConfigAndTorchRanks) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("c1", 2, 1, 1)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 5; }));
  auto specs = exec_.Launched();
  std::set<std::string> ports;
  nlohmann::json cluster;
  for (const auto& spec : specs) {
    auto tf = TfConfig(spec);
    if (cluster.is_null()) cluster = tf["cluster"];
    EXPECT_EQ(tf["cluster"], cluster) << "the cluster is identical on every replica";
    EXPECT_EQ(tf["environment"], "cloud");
    EXPECT_EQ(tf["task"]["type"], spec.key.task_type);
    EXPECT_EQ(tf["task"]["index"], spec.key.index);
    EXPECT_EQ(spec.env.at("CUDA_VISIBLE_DEVICES"), "");
    const std::string& t = spec.key.task_type;
    if (t == "master" || t == "worker") {
      EXPECT_EQ(spec.env.at("WORLD_SIZE"), "3");
      EXPECT_EQ(spec.env.at("RANK"), t == "master" ? "0" : std::to_string(spec.key.index + 1));
      EXPECT_EQ(spec.env.at("LOCAL_RANK"), "0");
      EXPECT_EQ(spec.env.at("MASTER_ADDR"), "127.0.0.1");
    } else {
      EXPECT_EQ(spec.env.count("RANK"), 0u) << t << " is outside the torch world";
      EXPECT_EQ(spec.env.count("WORLD_SIZE"), 0u);
    }
  }
  EXPECT_FALSE(cluster.contains("evaluator"));
  ASSERT_EQ(cluster["master"].size(), 1u);
  ASSERT_EQ(cluster["worker"].size(), 2u);
  ASSERT_EQ(cluster["ps"].size(), 1u);
  for (const auto& [role, list] : cluster.items()) {
    for (const auto& hp : list) ports.insert(hp.get<std::string>());
  }
  EXPECT_EQ(ports.size(), 4u) << "every task has its own port";
  const std::string master_hp = cluster["master"][0];
  for (const auto& spec : specs) {
    if (spec.env.count("MASTER_PORT")) {
      EXPECT_EQ("127.0.0.1:" + spec.env.at("MASTER_PORT"), master_hp);
    }
  }
}

TEST_F(SchedulerTest, RuntimeTwoPointOneAndLaterNameThePrimaryChief) {
  StartScheduler();
  Job job = CustomJob("chief", 1, 0, 0);
  job.spec.runtime_version = "2.11";
  job.spec.python_version = "3.7";
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  auto tf = TfConfig(exec_.Launched()[0]);
  EXPECT_TRUE(tf["cluster"].contains("chief"));
  EXPECT_FALSE(tf["cluster"].contains("master"));
  EXPECT_EQ(tf["task"]["type"], "chief");
}

TEST_F(SchedulerTest, MasterSuccessStopsTheParameterServersAndSucceeds) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("ps", 1, 2, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 4; }));
  for (const auto& spec : exec_.Launched()) sched_->OnReplicaRunning(spec.key);
  EXPECT_EQ(StateOf("ps"), JobState::kRunning);
  sched_->OnReplicaExit(Key("ps", "worker", 0), CleanExit());  // a worker finishing is harmless
  EXPECT_EQ(StateOf("ps"), JobState::kRunning);
  sched_->OnReplicaExit(Key("ps", "master", 0), CleanExit());
  EXPECT_EQ(StateOf("ps"), JobState::kRunning) << "running until the ps are gone";
  EXPECT_EQ(exec_.Killed().size(), 2u);
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(Key("ps", "ps", 0), stopped);
  sched_->OnReplicaExit(Key("ps", "ps", 1), stopped);
  EXPECT_EQ(StateOf("ps"), JobState::kSucceeded);
}

TEST_F(SchedulerTest, AFailingWorkerFailsTheJobAndStopsTheOthers) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("wf", 2, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  executor::ReplicaExit e;
  e.phase = "run";
  e.exit_code = 1;
  sched_->OnReplicaExit(Key("wf", "worker", 1), e);
  EXPECT_EQ(exec_.Killed().size(), 2u);
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(Key("wf", "master", 0), stopped);
  sched_->OnReplicaExit(Key("wf", "worker", 0), stopped);
  auto job = sched_->GetJob("p", "wf");
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error_message,
            "The replica worker 1 exited with a non-zero status of 1. Termination reason: Error.");
}

TEST_F(SchedulerTest, AReplicaKilledFromOutsideIsRestartedWithTheSameSpec) {
  options_.replica_restarts = 2;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("rs", 1, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  const auto first = exec_.Launched()[1];
  ASSERT_EQ(first.key.task_type, "worker");
  sched_->OnReplicaExit(first.key, SignalExit(SIGKILL));
  ASSERT_EQ(exec_.Launched().size(), 3u);
  const auto again = exec_.Launched()[2];
  EXPECT_EQ(again.key, first.key);
  EXPECT_EQ(again.env.at("TF_CONFIG"), first.env.at("TF_CONFIG"));
  EXPECT_EQ(again.work_dir, first.work_dir);
  EXPECT_NE(StateOf("rs"), JobState::kFailed);
  sched_->OnReplicaExit(first.key, SignalExit(SIGKILL));
  ASSERT_EQ(exec_.Launched().size(), 4u);
  // The third loss exceeds replica_restarts = 2: the job fails. An OOM kill is never retried
  // (outcome_test), so only this last one may be one: the job fails in AI Platform's OOM words.
  sched_->OnReplicaExit(first.key, SignalExit(SIGKILL, /*oom=*/true));
  EXPECT_EQ(exec_.Launched().size(), 4u);
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(Key("rs", "master", 0), stopped);
  auto job = sched_->GetJob("p", "rs");
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error_message,
            "The replica worker 0 ran out-of-memory and exited with a non-zero status of 137.");
  auto lines = ServiceLines("rs");
  EXPECT_NE(std::find_if(lines.begin(), lines.end(),
                         [](const std::string& l) {
                           return l.find("restarting it with the same identity (restart 1 of 2)") !=
                                  std::string::npos;
                         }),
            lines.end());
}

// A backend with one allocation per run (Slurm): a lost replica's peers are stopped, and the
// whole run starts again once every replica is gone, each with its identity and a new attempt.
TEST_F(SchedulerTest, ABackendThatRestartsWholeRunsGetsEveryReplicaAgainTogether) {
  options_.replica_restarts = 1;
  exec_.whole_runs = true;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("wr", 2, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  const auto first = exec_.Launched();
  executor::ReplicaExit lost;
  lost.phase = "lost";
  lost.exit_code = -1;
  lost.message = "Slurm ended its allocation (job 7 NODE_FAIL)";
  sched_->OnReplicaExit(Key("wr", "worker", 1), lost);
  // Nothing starts until the others are gone; they are stopped with the grace.
  EXPECT_EQ(exec_.Launched().size(), 3u);
  const auto kills = exec_.Killed();
  std::set<executor::ReplicaKey> killed(kills.begin(), kills.end());
  EXPECT_EQ(killed,
            (std::set<executor::ReplicaKey>{Key("wr", "master", 0), Key("wr", "worker", 0)}));
  EXPECT_NE(StateOf("wr"), JobState::kFailed);
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(Key("wr", "master", 0), stopped);
  EXPECT_EQ(exec_.Launched().size(), 3u);
  EXPECT_NE(StateOf("wr"), JobState::kFailed);
  // The last one reports an error of its own (its peer vanished): the run restarts anyway.
  executor::ReplicaExit error = CleanExit();
  error.exit_code = 1;
  sched_->OnReplicaExit(Key("wr", "worker", 0), error);
  const auto launched = exec_.Launched();
  ASSERT_EQ(launched.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    const auto& again = launched[3 + i];
    EXPECT_EQ(again.key, first[i].key);
    EXPECT_EQ(again.attempt, 1);
    EXPECT_EQ(again.work_dir, first[i].work_dir);
  }
  EXPECT_EQ(StateOf("wr"), JobState::kPreparing);
  auto lines = ServiceLines("wr");
  EXPECT_NE(std::find_if(lines.begin(), lines.end(),
                         [](const std::string& l) {
                           return l.find(
                                      "The replica worker 1 was lost (Slurm ended its "
                                      "allocation (job 7 NODE_FAIL)); stopping the other "
                                      "replicas and restarting all 3 together in a new "
                                      "allocation, each with the same identity (restart 1 "
                                      "of 1).") != std::string::npos;
                         }),
            lines.end());
  // The restart limit is the run's: a second loss fails the job once the others are gone.
  sched_->OnReplicaExit(Key("wr", "master", 0), lost);
  EXPECT_EQ(exec_.Launched().size(), 6u);
  sched_->OnReplicaExit(Key("wr", "worker", 0), stopped);
  sched_->OnReplicaExit(Key("wr", "worker", 1), stopped);
  EXPECT_EQ(StateOf("wr"), JobState::kFailed);
}

// The same backend when the allocation is healthy (Slurm: the replica was killed inside a
// running job): only the lost replica is launched again, as locally, counted against
// replica_restarts; its peers are not stopped.
TEST_F(SchedulerTest, ABackendThatRestartsWholeRunsMayRestartOneReplicaInPlace) {
  options_.replica_restarts = 1;
  exec_.whole_runs = true;
  exec_.in_place = {Key("ip", "worker", 0)};
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("ip", 1, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  const auto first = exec_.Launched();
  sched_->OnReplicaExit(Key("ip", "worker", 0), SignalExit(SIGKILL));
  auto launched = exec_.Launched();
  ASSERT_EQ(launched.size(), 3u);
  EXPECT_EQ(launched[2].key, Key("ip", "worker", 0));
  EXPECT_EQ(launched[2].attempt, 1);
  EXPECT_EQ(launched[2].work_dir, first[1].work_dir);
  EXPECT_TRUE(exec_.Killed().empty());
  auto lines = ServiceLines("ip");
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "The replica worker 0 was killed by signal 9; restarting it with the same "
                      "identity (restart 1 of 1)."),
            lines.end());
  // The limit is the replica's, as locally: a second kill fails the job.
  sched_->OnReplicaExit(Key("ip", "worker", 0), SignalExit(SIGKILL));
  EXPECT_EQ(exec_.Launched().size(), 3u);
  EXPECT_EQ(exec_.Killed(), std::vector<executor::ReplicaKey>{Key("ip", "master", 0)});
}

TEST_F(SchedulerTest, ACancelWhileARunRestartsWholeCancelsTheJob) {
  options_.replica_restarts = 3;
  exec_.whole_runs = true;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("wc", 1, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  executor::ReplicaExit lost;
  lost.phase = "lost";
  lost.exit_code = -1;
  sched_->OnReplicaExit(Key("wc", "master", 0), lost);
  ASSERT_TRUE(sched_->Cancel("p", "wc").ok());
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(Key("wc", "worker", 0), stopped);
  EXPECT_EQ(exec_.Launched().size(), 2u);
  EXPECT_EQ(StateOf("wc"), JobState::kCancelled);
}

TEST_F(SchedulerTest, AReplicaThatExitsWithAnErrorIsNotRestarted) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("nr", 1, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  executor::ReplicaExit e;
  e.phase = "run";
  e.exit_code = 137;  // its own status, not a signal
  sched_->OnReplicaExit(Key("nr", "worker", 0), e);
  EXPECT_EQ(exec_.Launched().size(), 2u);
}

TEST_F(SchedulerTest, GpusGoToOneJobAtATimeInPriorityOrder) {
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}};
  options_.admission_paused = true;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(GpuJob("low", 1, 10)).ok());
  ASSERT_TRUE(sched_->Submit(GpuJob("high", 1, 500)).ok());
  ASSERT_TRUE(sched_->Submit(GpuJob("mid", 1, 100)).ok());
  ASSERT_TRUE(sched_->Submit(CustomJob("cpu", 0, 0, 0, 0)).ok());
  EXPECT_EQ(sched_->GetJob("p", "high")->job_position, 1);
  EXPECT_EQ(sched_->GetJob("p", "mid")->job_position, 2);
  EXPECT_EQ(sched_->GetJob("p", "low")->job_position, 3);
  sched_->SetAdmissionPaused(false);
  // The GPU job first; the CPU-only job behind the blocked GPU jobs may start too.
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  sched_->RunUntilIdle();
  auto specs = exec_.Launched();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].key.job_id, "high");
  EXPECT_EQ(specs[0].env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(specs[1].key.job_id, "cpu");
  EXPECT_EQ(specs[1].env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(sched_->GetJob("p", "mid")->job_position, 1);
  EXPECT_EQ(sched_->GetJob("p", "low")->job_position, 2);
  sched_->OnReplicaExit(Key("high", "master", 0), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  EXPECT_EQ(exec_.Launched()[2].key.job_id, "mid");
  EXPECT_EQ(exec_.Launched()[2].env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(sched_->GetJob("p", "low")->job_position, 1);
}

TEST_F(SchedulerTest, AJobShortOfCpuBlocksTheJobsBehindIt) {
  options_.node.cpu_millis = 8000;  // two n1-standard-4 replicas
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("a", 0, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  ASSERT_TRUE(sched_->Submit(CustomJob("big", 1, 0, 0)).ok());  // needs 8 vCPUs
  ASSERT_TRUE(sched_->Submit(CustomJob("small", 0, 0, 0)).ok());
  sched_->RunUntilIdle();
  EXPECT_EQ(exec_.Launched().size(), 1u) << "small must not overtake big";
  sched_->OnReplicaExit(Key("a", "master", 0), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  EXPECT_EQ(exec_.Launched()[1].key.job_id, "big");
}

TEST_F(SchedulerTest, AJobThatCanNeverFitIsRefusedNamingTheField) {
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}};
  options_.oversize_jobs = OversizePolicy::kRefuse;  // else too many CPUs run alone
  StartScheduler();
  Status st = sched_->CheckRunnable(GpuJob("two", 2));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(st.violations().size(), 1u);
  EXPECT_EQ(st.violations()[0].field, "trainingInput.masterConfig.acceleratorConfig.count");
  EXPECT_NE(st.message().find("asks for 2 GPUs but this Trainyard has 1"), std::string::npos)
      << st.message();
  EXPECT_TRUE(sched_->CheckRunnable(GpuJob("one", 1)).ok());
  Job huge = CustomJob("huge", 40, 0, 0);  // 164 vCPUs > 64
  st = sched_->CheckRunnable(huge);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.violations()[0].field, "trainingInput.workerCount");
  EXPECT_NE(st.message().find("cpu_overcommit"), std::string::npos) << st.message();
}

// oversize_jobs: run_alone (the default): too many CPUs is accepted (it runs alone), too many
// GPUs is still refused.
TEST_F(SchedulerTest, AnOversizeJobIsAcceptedUnderRunAlone) {
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}};
  StartScheduler();
  EXPECT_TRUE(sched_->CheckRunnable(CustomJob("huge", 40, 0, 0)).ok());
  Status st = sched_->CheckRunnable(GpuJob("two", 2));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.violations()[0].field, "trainingInput.masterConfig.acceleratorConfig.count");
}

TEST_F(SchedulerTest, ConsumedMLUnitsAccrueWhileRunning) {
  options_.ml_units_persist_interval = 1000;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("mu", 1, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  EXPECT_FALSE(sched_->GetJob("p", "mu")->consumed_ml_units_set);
  Advance(3600LL * kMicrosPerSecond);  // PREPARING costs nothing
  for (const auto& spec : exec_.Launched()) sched_->OnReplicaRunning(spec.key);
  EXPECT_TRUE(sched_->GetJob("p", "mu")->consumed_ml_units_set);
  EXPECT_EQ(sched_->GetJob("p", "mu")->consumed_ml_units, 0);
  // 2 x n1-standard-4 = 0.7756 units/h.
  Advance(1800LL * kMicrosPerSecond);
  const double half_hour = sched_->GetJob("p", "mu")->consumed_ml_units;
  EXPECT_NEAR(half_hour, 0.7756 / 2, 0.001);
  EXPECT_DOUBLE_EQ(store_->GetJob("p", "mu")->consumed_ml_units, half_hour)
      << "persisted while running";
  Advance(1800LL * kMicrosPerSecond);
  sched_->OnReplicaExit(Key("mu", "master", 0), CleanExit());
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  Advance(3600LL * kMicrosPerSecond);  // stopping the others: still running, still counted
  sched_->OnReplicaExit(Key("mu", "worker", 0), stopped);
  auto done = store_->GetJob("p", "mu");
  ASSERT_EQ(done->state, JobState::kSucceeded);
  EXPECT_DOUBLE_EQ(done->consumed_ml_units, 4 * half_hour);
  Advance(3600LL * kMicrosPerSecond);
  EXPECT_DOUBLE_EQ(sched_->GetJob("p", "mu")->consumed_ml_units, 4 * half_hour) << "ended";
}

TEST_F(SchedulerTest, AFailedLaunchFreesTheGpuOnlyOnceTheStartedReplicasAreGone) {
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}};
  exec_.fail_launch_at = 1;  // the worker of the first job
  StartScheduler();
  Job first = GpuJob("first", 1);
  first.spec.worker = {"n1-standard-4", 1, {}, "", {}, {}};
  ASSERT_TRUE(sched_->Submit(first).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Killed().size() == 1; }));
  EXPECT_EQ(exec_.Killed()[0], Key("first", "master", 0));
  ASSERT_TRUE(sched_->Submit(GpuJob("second", 1)).ok());
  sched_->RunUntilIdle();
  EXPECT_EQ(exec_.Launched().size(), 1u) << "the GPU is still held by the first job's master";
  EXPECT_EQ(StateOf("first"), JobState::kPreparing);
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(Key("first", "master", 0), stopped);
  auto job = sched_->GetJob("p", "first");
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error_message, "The replica worker 0 could not be started: no launcher today");
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  EXPECT_EQ(exec_.Launched()[1].key.job_id, "second");
}

TEST_F(SchedulerTest, TheMasterFinishingDecidesEvenIfAWorkerFailsRightAfter) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("md", 2, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  for (const auto& spec : exec_.Launched()) sched_->OnReplicaRunning(spec.key);
  // Rank 1 loses rank 0's store when the master exits and is reported first.
  executor::ReplicaExit lost_store;
  lost_store.phase = "run";
  lost_store.exit_code = 1;
  sched_->OnReplicaExit(Key("md", "worker", 0), lost_store);
  // The master had already exited 0 on its own: the stop request came too late for it.
  sched_->OnReplicaExit(Key("md", "master", 0), CleanExit());
  executor::ReplicaExit stopped = SignalExit(SIGTERM);
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(Key("md", "worker", 1), stopped);
  auto job = sched_->GetJob("p", "md");
  EXPECT_EQ(job->state, JobState::kSucceeded);
  EXPECT_TRUE(job->error_message.empty()) << job->error_message;
}

TEST_F(SchedulerTest, AMasterStoppedAfterAWorkerFailedDoesNotTurnTheJobIntoSuccess) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(CustomJob("wf2", 1, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  executor::ReplicaExit e;
  e.phase = "run";
  e.exit_code = 2;
  sched_->OnReplicaExit(Key("wf2", "worker", 0), e);
  executor::ReplicaExit graceful = CleanExit();  // handled SIGTERM and exited 0
  graceful.killed_by_request = true;
  sched_->OnReplicaExit(Key("wf2", "master", 0), graceful);
  EXPECT_EQ(StateOf("wf2"), JobState::kFailed);
}

TEST_F(SchedulerTest, RecoveryRestoresGpusAndRestartCountsFromTheExecutor) {
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}, Gpu{1, "NVIDIA_TESLA_T4", ""}};
  options_.replica_restarts = 2;
  Job running = GpuJob("rec", 1);
  running.state = JobState::kRunning;
  ASSERT_TRUE(store_->CreateJob(running).ok());
  executor::RecoveredReplica found;
  found.spec.key = Master("rec");
  found.spec.work_dir = "/fake/rec";
  found.spec.python_module = "trainer.task";
  found.spec.env["CUDA_VISIBLE_DEVICES"] = "1";
  found.spec.attempt = 2;  // restarted twice before the daemon restarted
  exec_.persisted[Master("rec")] = found;
  exec_.reattach = {Master("rec")};
  StartScheduler();
  // GPU 1 is still the recovered master's: a new one-GPU job gets GPU 0, a second must wait.
  ASSERT_TRUE(sched_->Submit(GpuJob("new", 1)).ok());
  ASSERT_TRUE(sched_->Submit(GpuJob("waits", 1)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->RunUntilIdle();
  ASSERT_EQ(exec_.Launched().size(), 1u);
  EXPECT_EQ(exec_.Launched()[0].env.at("CUDA_VISIBLE_DEVICES"), "0");
  // Two restarts were used before the daemon restarted: a third loss fails the job.
  sched_->OnReplicaExit(Master("rec"), SignalExit(SIGKILL));
  EXPECT_EQ(StateOf("rec"), JobState::kFailed);
  // Not relaunched (its freed GPU may already have gone to "waits").
  for (const auto& launched : exec_.Launched()) EXPECT_NE(launched.key.job_id, "rec");
}

// ---- Custom containers (issue 5) ----------------------------------------------------------------

Job ContainerJob(const std::string& id, int workers, int ps, int evaluators) {
  Job job = CustomJob(id, workers, ps, evaluators);
  job.spec.package_uris.clear();
  job.spec.python_module.clear();
  job.spec.master.image_uri = "gcr.io/p/trainer:1";
  job.training_input_json =
      R"({"scaleTier":"CUSTOM","masterType":"n1-standard-4","workerCount":"1",)"
      R"("masterConfig":{"imageUri":"gcr.io/p/trainer:1","containerArgs":["--a=b"]},)"
      R"("args":["--lr","0.1"]})";
  return job;
}

const executor::ReplicaSpec* SpecOf(const std::vector<executor::ReplicaSpec>& specs,
                                    const std::string& type, int index = 0) {
  for (const auto& s : specs) {
    if (s.key.task_type == type && s.key.index == index) return &s;
  }
  return nullptr;
}

TEST_F(SchedulerTest, CgroupNamesCarryTheDaemonsTag) {
  // Two daemons on one machine running the same job id must not share a cgroup: the launcher
  // empties an existing group before it uses it.
  options_.cgroup_root = "/sys/fs/cgroup";
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("cg_1")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  const auto spec = exec_.Launched().front();
  const std::string prefix = "trainyard/p.cg_1.master-replica-0.";
  EXPECT_EQ(spec.cgroup_name.substr(0, prefix.size()), prefix) << spec.cgroup_name;
  const std::string tag = spec.cgroup_name.substr(prefix.size());
  EXPECT_EQ(tag.size(), 8u) << spec.cgroup_name;
  EXPECT_EQ(tag.find_first_not_of("0123456789abcdef"), std::string::npos) << spec.cgroup_name;
}

TEST_F(SchedulerTest, ContainerReplicasGetImageEntrypointArgsNameAndMounts) {
  options_.container_engine = "/usr/bin/podman";
  options_.container_engine_env = {{"CONTAINERS_CONF", "/data/containers.conf"}};
  options_.cgroup_root = "/sys/fs/cgroup";  // the engine makes containers' cgroups, not us
  // No runtime serves the job: container replicas must not need one.
  options_.runtimes = {RuntimeOptions{"old", "/usr/bin/python3", {"1.15"}, {"3.7"}}};
  StartScheduler();
  Job job = ContainerJob("Ctr_1", 1, 1, 0);
  job.project = "Team:X";
  job.spec.args = {"--lr", "0.1"};
  job.spec.job_dir = "gs://bkt/out";
  job.spec.master.container_args = {"--a=b"};
  job.spec.parameter_server.image_uri = "gcr.io/p/ps:2";
  job.spec.parameter_server.container_command = {"/bin/ps-server", "--fast"};
  ASSERT_TRUE(sched_->CheckRunnable(job).ok()) << sched_->CheckRunnable(job).ToString();
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  const auto specs = exec_.Launched();
  const std::vector<std::string> trainer_args = {"--lr", "0.1", "--job-dir", "gs://bkt/out"};
  for (const auto& spec : specs) {
    const auto& c = spec.container;
    EXPECT_EQ(c.engine, "/usr/bin/podman");
    EXPECT_EQ(c.engine_env.at("CONTAINERS_CONF"), "/data/containers.conf");
    // Case kept (job ids are case-sensitive), odd characters replaced, a tag of this daemon.
    const std::string prefix = "trainyard-Team-X-Ctr_1-" + spec.key.TaskName() + "-";
    EXPECT_EQ(c.name.substr(0, prefix.size()), prefix) << c.name;
    EXPECT_EQ(c.name.size(), prefix.size() + 8) << c.name;
    const std::vector<std::string> mounts = {buckets_->root() + ":" + buckets_->root()};
    EXPECT_EQ(c.mounts, mounts);
    EXPECT_TRUE(c.devices.empty());
    EXPECT_TRUE(spec.python.empty());
    EXPECT_TRUE(spec.packages.empty());
    EXPECT_TRUE(spec.python_module.empty());
    EXPECT_TRUE(spec.cgroup_root.empty());
    EXPECT_TRUE(spec.cgroup_name.empty());
    EXPECT_EQ(spec.limits.cpu_millis, 4000);  // n1-standard-4
    EXPECT_GT(spec.limits.memory_bytes, 10LL << 30);
    EXPECT_EQ(spec.env.at("TRAINYARD_BUCKETS_DIR"), buckets_->root());
    EXPECT_EQ(spec.env.at("CLOUD_ML_JOB_ID"), "Ctr_1");
  }
  const auto* master = SpecOf(specs, "master");
  const auto* worker = SpecOf(specs, "worker");
  const auto* ps = SpecOf(specs, "ps");
  ASSERT_TRUE(master && worker && ps);
  // containerArgs only: the image's ENTRYPOINT with those args.
  EXPECT_EQ(master->container.image, "gcr.io/p/trainer:1");
  EXPECT_FALSE(master->container.entrypoint.has_value());
  EXPECT_EQ(master->container.args, std::vector<std::string>{"--a=b"});
  // Nothing of its own: the master's image, TrainingInput.args and --job-dir.
  EXPECT_EQ(worker->container.image, "gcr.io/p/trainer:1");
  EXPECT_FALSE(worker->container.entrypoint.has_value());
  EXPECT_EQ(worker->container.args, trainer_args);
  // Its own image and containerCommand (the master's containerArgs are not inherited).
  EXPECT_EQ(ps->container.image, "gcr.io/p/ps:2");
  ASSERT_TRUE(ps->container.entrypoint.has_value());
  EXPECT_EQ(*ps->container.entrypoint, (std::vector<std::string>{"/bin/ps-server", "--fast"}));
  EXPECT_EQ(ps->container.args, trainer_args);
}

TEST_F(SchedulerTest, ContainerLimitsCanBeTurnedOffAndPythonJobsKeepNoContainer) {
  options_.container_engine = "docker";
  options_.container_limits = false;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(ContainerJob("nolim", 0, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  EXPECT_EQ(exec_.Launched()[0].container.engine, "docker");
  EXPECT_EQ(exec_.Launched()[0].limits.memory_bytes, 0);
  EXPECT_EQ(exec_.Launched()[0].limits.cpu_millis, 0);
  sched_->OnReplicaExit(Key("nolim", "master", 0), CleanExit());
  ASSERT_TRUE(sched_->Submit(CustomJob("py", 0, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  const auto launched = exec_.Launched();
  const auto& py = launched[1];
  EXPECT_TRUE(py.container.image.empty());
  EXPECT_EQ(py.python, "/usr/bin/python3");
  EXPECT_EQ(py.env.count("CLUSTER_SPEC"), 0u);
  EXPECT_EQ(py.env.count("CLOUD_ML_JOB"), 0u);
}

TEST_F(SchedulerTest, ContainerTfConfigSaysMasterUnlessTheJobAsksForChief) {
  options_.container_engine = "podman";
  StartScheduler();
  Job job = ContainerJob("m", 1, 0, 1);
  job.spec.runtime_version = "2.11";  // ignored for containers (never set with imageUri)
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  auto tf = TfConfig(*SpecOf(exec_.Launched(), "master"));
  EXPECT_TRUE(tf["cluster"].contains("master"));
  EXPECT_FALSE(tf["cluster"].contains("chief"));
  EXPECT_FALSE(tf["cluster"].contains("evaluator"));
  EXPECT_EQ(tf["task"]["type"], "master");
  ASSERT_TRUE(tf["job"].is_string()) << tf.dump();
  EXPECT_EQ(nlohmann::json::parse(tf["job"].get<std::string>())["master_type"], "n1-standard-4");

  Job chief = ContainerJob("c", 1, 0, 1);
  chief.spec.use_chief_in_tf_config = true;
  ASSERT_TRUE(sched_->Submit(chief).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 6; }));
  const auto all = exec_.Launched();
  const std::vector<executor::ReplicaSpec> specs(all.begin() + 3, all.end());
  tf = TfConfig(*SpecOf(specs, "master"));
  EXPECT_TRUE(tf["cluster"].contains("chief"));
  EXPECT_FALSE(tf["cluster"].contains("master"));
  EXPECT_EQ(tf["task"]["type"], "chief");
  EXPECT_EQ(TfConfig(*SpecOf(specs, "worker"))["cluster"], tf["cluster"]);
}

TEST_F(SchedulerTest, ContainerClusterSpecKeysMasterAndListsEvaluators) {
  options_.container_engine = "podman";
  StartScheduler();
  Job job = ContainerJob("cs", 2, 1, 1);
  job.spec.use_chief_in_tf_config = true;  // TF_CONFIG only: CLUSTER_SPEC keeps "master"
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 5; }));
  const auto specs = exec_.Launched();
  nlohmann::json cluster;
  std::set<std::string> addresses;
  for (const auto& spec : specs) {
    auto cs = nlohmann::json::parse(spec.env.at("CLUSTER_SPEC"));
    if (cluster.is_null()) cluster = cs["cluster"];
    EXPECT_EQ(cs["cluster"], cluster) << "identical on every replica";
    EXPECT_EQ(cs["task"]["type"], spec.key.task_type);
    EXPECT_EQ(cs["task"]["index"], spec.key.index);
    EXPECT_EQ(cs["environment"], "cloud");
    EXPECT_EQ(cs["job"], TfConfig(spec)["job"]);
    // The same ports as TF_CONFIG's for the tasks both list.
    auto tf_cluster = TfConfig(spec)["cluster"];
    EXPECT_EQ(tf_cluster["chief"], cs["cluster"]["master"]);
    EXPECT_EQ(tf_cluster["worker"], cs["cluster"]["worker"]);
  }
  EXPECT_FALSE(cluster.contains("chief"));
  ASSERT_EQ(cluster["master"].size(), 1u);
  ASSERT_EQ(cluster["worker"].size(), 2u);
  ASSERT_EQ(cluster["ps"].size(), 1u);
  ASSERT_EQ(cluster["evaluator"].size(), 1u);
  for (const auto& [role, list] : cluster.items()) {
    for (const auto& hp : list) addresses.insert(hp.get<std::string>());
  }
  EXPECT_EQ(addresses.size(), 5u) << "every task has its own port";
}

TEST_F(SchedulerTest, CloudMlJobIsTheTrainingInputWithSnakeCaseKeys) {
  options_.container_engine = "podman";
  StartScheduler();
  Job job = ContainerJob("snake", 1, 0, 0);
  job.training_input_json =
      R"({"scaleTier":"CUSTOM","workerCount":"1","useChiefInTfConfig":true,)"
      R"("masterConfig":{"imageUri":"gcr.io/p/trainer:1","acceleratorConfig":)"
      R"({"count":"1","type":"NVIDIA_TESLA_T4"}},"args":["--hola=mundo"]})";
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  const auto launched = exec_.Launched();
  const auto& spec = launched[0];
  const std::string& text = spec.env.at("CLOUD_ML_JOB");
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line, for the engine's env file";
  auto cj = nlohmann::json::parse(text);
  EXPECT_EQ(cj["scale_tier"], "CUSTOM");
  EXPECT_EQ(cj["worker_count"], "1");
  EXPECT_EQ(cj["use_chief_in_tf_config"], true);
  EXPECT_EQ(cj["master_config"]["image_uri"], "gcr.io/p/trainer:1");
  EXPECT_EQ(cj["master_config"]["accelerator_config"]["type"], "NVIDIA_TESLA_T4");
  EXPECT_EQ(cj["args"], nlohmann::json::array({"--hola=mundo"}));
  EXPECT_FALSE(cj.contains("workerCount"));
  EXPECT_EQ(TfConfig(spec)["job"], text);
}

TEST_F(SchedulerTest, ContainerGpusArePassedAsDevicesAndRenumberedFromZero) {
  options_.container_engine = "podman";
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}, Gpu{1, "NVIDIA_TESLA_T4", ""}};
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(GpuJob("py", 1)).ok());  // takes GPU 0
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  ASSERT_EQ(exec_.Launched()[0].env.at("CUDA_VISIBLE_DEVICES"), "0");
  Job job = GpuJob("ctr", 1);
  job.spec.package_uris.clear();
  job.spec.master.image_uri = "gcr.io/p/gpu:1";
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  const auto launched = exec_.Launched();
  const auto& spec = launched[1];
  ASSERT_FALSE(spec.container.devices.empty());
  EXPECT_EQ(spec.container.devices[0], "/dev/nvidia1");
  for (size_t i = 1; i < spec.container.devices.size(); ++i) {
    const std::string& d = spec.container.devices[i];
    EXPECT_TRUE(d == "/dev/nvidiactl" || d == "/dev/nvidia-uvm") << d;
    EXPECT_EQ(::access(d.c_str(), F_OK), 0) << d << " is passed only where it exists";
  }
  EXPECT_EQ(spec.env.at("CUDA_VISIBLE_DEVICES"), "0") << "GPU 1 is device 0 in the container";
}

TEST_F(SchedulerTest, ContainerReplicasCarryTheirPullPlan) {
  options_.container_engine = "podman";
  options_.registry.policy = registry::PullPolicy::kAlways;
  options_.registry.mirrors = {{"gcr.io", "localhost:5000"}};
  options_.registry.insecure = {"localhost:5000"};
  options_.registry.auth_file = "/etc/trainyard/auth.json";
  StartScheduler();
  Job job = ContainerJob("pull_1", 1, 1, 0);
  job.spec.parameter_server.image_uri = "localhost/ps:1";
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  const auto specs = exec_.Launched();
  const auto& master = SpecOf(specs, "master")->container.pull;
  EXPECT_EQ(master.policy, "always");
  EXPECT_EQ(master.reference, "localhost:5000/p/trainer:1");
  EXPECT_EQ(master.registry, "localhost:5000");
  EXPECT_EQ(master.mirror, "gcr.io=localhost:5000");
  EXPECT_FALSE(master.tls_verify);
  EXPECT_EQ(master.auth_file, "/etc/trainyard/auth.json");
  EXPECT_EQ(master.token.rfind("p/pull_1@", 0), 0u) << master.token;
  // One token for the whole job: its replicas share one pull.
  EXPECT_EQ(SpecOf(specs, "worker")->container.pull.token, master.token);
  // A local name: nothing to pull from.
  const auto& ps = SpecOf(specs, "ps")->container.pull;
  EXPECT_EQ(ps.reference, "");
  EXPECT_EQ(ps.policy, "always");
  sched_->OnReplicaExit(Key("pull_1", "master", 0), CleanExit());
  ASSERT_TRUE(sched_->Submit(ContainerJob("pull_2", 0, 0, 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 4; }));
  EXPECT_NE(exec_.Launched()[3].container.pull.token, master.token);
}

TEST_F(SchedulerTest, AnImageThatItsMirrorMapsToNothingIsRefused) {
  options_.container_engine = "podman";
  options_.registry.mirrors = {{"gcr.io/p/trainer", "localhost:5000"}};
  StartScheduler();
  Status st = sched_->CheckRunnable(ContainerJob("nomap", 0, 0, 0));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(st.violations().size(), 1u) << st.ToString();
  EXPECT_EQ(st.violations()[0].field, "trainingInput.masterConfig.imageUri");
  EXPECT_NE(st.violations()[0].description.find("without a repository path"), std::string::npos)
      << st.ToString();
}

TEST_F(SchedulerTest, ContainerJobsAreRefusedWithoutAnEngine) {
  StartScheduler();  // container_engine unset: neither podman nor docker here
  Status st = sched_->CheckRunnable(ContainerJob("no", 0, 0, 0));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(st.violations().size(), 1u) << st.ToString();
  EXPECT_EQ(st.violations()[0].field, "trainingInput.masterConfig.imageUri");
  EXPECT_NE(st.message().find("podman or docker"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("container_engine"), std::string::npos) << st.message();
  EXPECT_TRUE(sched_->CheckRunnable(CustomJob("py", 0, 0, 0)).ok());
}

TEST_F(SchedulerTest, RecoveryTakesAContainersGpusFromItsDevices) {
  options_.container_engine = "podman";
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}, Gpu{1, "NVIDIA_TESLA_T4", ""}};
  Job running = GpuJob("rec", 1);
  running.spec.master.image_uri = "gcr.io/p/gpu:1";
  running.state = JobState::kRunning;
  ASSERT_TRUE(store_->CreateJob(running).ok());
  executor::RecoveredReplica found;
  executor::ReplicaSpec& spec = found.spec;
  spec.key = Master("rec");
  spec.work_dir = "/fake/rec";
  spec.env["CUDA_VISIBLE_DEVICES"] = "0";  // inside the container
  spec.container.engine = "podman";
  spec.container.image = "gcr.io/p/gpu:1";
  spec.container.devices = {"/dev/nvidia1", "/dev/nvidiactl"};
  exec_.persisted[Master("rec")] = found;
  exec_.reattach = {Master("rec")};
  StartScheduler();
  // Host GPU 1 is still the container's: the new job gets GPU 0.
  ASSERT_TRUE(sched_->Submit(GpuJob("new", 1)).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  EXPECT_EQ(exec_.Launched()[0].env.at("CUDA_VISIBLE_DEVICES"), "0");
  ASSERT_TRUE(sched_->Submit(GpuJob("waits", 1)).ok());
  EXPECT_EQ(sched_->RunAdmissionPass(), 0);
  EXPECT_EQ(exec_.Launched().size(), 1u);
  EXPECT_EQ(StateOf("waits"), JobState::kQueued);
}

// ---- Built-in algorithms (issue 18) -------------------------------------------------------------

TEST_F(SchedulerTest, BuiltInAlgorithmJobsRunTrainyardsTrainerNotTheImage) {
  // No container engine, and no runtime that names the job's (empty) runtime version: the
  // first runtime runs the algorithm's module on every replica.
  options_.runtimes = {RuntimeOptions{"tf", "/opt/py/bin/python3", {"2.11"}, {"3.7"}}};
  StartScheduler();
  Job job = ContainerJob("algo_1", 2, 0, 0);
  job.spec.master.image_uri = "gcr.io/cloud-ml-algos/xgboost_dist:latest";
  job.spec.args = {"--training_data_path", "gs://bkt/d.csv", "--objective", "reg:linear"};
  job.spec.job_dir = "gs://bkt/out/";
  ASSERT_TRUE(sched_->CheckRunnable(job).ok()) << sched_->CheckRunnable(job).ToString();
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  const std::vector<std::string> want_args = {
      "--training_data_path", "gs://bkt/d.csv", "--objective",
      "reg:linear",           "--job-dir",      "gs://bkt/out/"};
  for (const auto& spec : exec_.Launched()) {
    EXPECT_TRUE(spec.container.image.empty()) << spec.key.TaskName();
    EXPECT_EQ(spec.python, "/opt/py/bin/python3");
    EXPECT_EQ(spec.python_module, "trainyard_algorithms.xgboost_dist");
    EXPECT_TRUE(spec.packages.empty());
    EXPECT_EQ(spec.args, want_args);
    EXPECT_NE(spec.env.at("TF_CONFIG").find(R"("cluster":{"master":["127.0.0.1:)"),
              std::string::npos);
  }
  // isBuiltInAlgorithmJob from the start; the model's path once the master succeeded.
  auto running = sched_->GetJob("p", "algo_1");
  EXPECT_NE(running->training_output_json.find(R"("isBuiltInAlgorithmJob":true)"),
            std::string::npos)
      << running->training_output_json;
  EXPECT_EQ(running->training_output_json.find("modelPath"), std::string::npos);
  for (const auto& spec : exec_.Launched()) sched_->OnReplicaRunning(spec.key);
  sched_->OnReplicaExit(Key("algo_1", "worker", 0), CleanExit());
  sched_->OnReplicaExit(Key("algo_1", "worker", 1), CleanExit());
  sched_->OnReplicaExit(Key("algo_1", "master", 0), CleanExit());
  ASSERT_EQ(StateOf("algo_1"), JobState::kSucceeded);
  const std::string out = sched_->GetJob("p", "algo_1")->training_output_json;
  EXPECT_NE(out.find(R"("builtInAlgorithmOutput":{"framework":"XGBOOST",)"), std::string::npos)
      << out;
  EXPECT_NE(out.find(R"("modelPath":"gs://bkt/out/model")"), std::string::npos) << out;
}

TEST_F(SchedulerTest, BuiltInAlgorithmJobsNeedAJobDir) {
  StartScheduler();
  Job job = ContainerJob("algo_2", 0, 0, 0);
  job.spec.master.image_uri = "gcr.io/cloud-ml-algos/boosted_trees";
  job.spec.job_dir.clear();
  Status st = sched_->CheckRunnable(job);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(st.violations().size(), 1u) << st.ToString();
  EXPECT_EQ(st.violations()[0].field, "trainingInput.jobDir");
  // A custom container of the same name elsewhere is no built-in algorithm: it needs an engine.
  job.spec.master.image_uri = "gcr.io/my-project/boosted_trees";
  st = sched_->CheckRunnable(job);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.violations()[0].field, "trainingInput.masterConfig.imageUri") << st.ToString();
}

}  // namespace trainyard::scheduler
