// A backend with a queue of its own (Slurm, Executor::QueuesGangs): an admitted job's gang waits
// there, and the job says so. QUEUED with the backend's jobPosition and wait reason until the
// backend allocates it, then PREPARING and RUNNING (never back to QUEUED, compat §1);
// maxWaitTime counts that wait; a restarted daemon finds such a job's gang through Recover.
#include <csignal>

#include "scheduler_fixture.h"

namespace trainyard::scheduler {
namespace {

using model::Job;
using model::JobState;
using testing_support::CleanExit;
using testing_support::SchedulerTest;

class BackendQueueTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    exec_.queues = true;
    exec_.whole_runs = true;
  }
  std::vector<JobState> History(const std::string& id) {
    std::vector<JobState> out;
    auto history = store_->GetStateHistory("p", id);
    for (const auto& c : *history) out.push_back(c.to);
    return out;
  }
};

TEST_F(BackendQueueTest, AJobStaysQueuedWithTheBackendsPlaceUntilItIsAllocated) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("q1")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  // Handed to the backend, nothing stored: still QUEUED, no startTime.
  auto job = sched_->GetJob("p", "q1");
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_EQ(job->start_time, 0);
  EXPECT_EQ(job->job_position, 1);  // the backend cannot say yet
  EXPECT_EQ(store_->GetJob("p", "q1")->state, JobState::kQueued);
  exec_.waiting[Master("q1")] = {"Waiting in Slurm (job 12, partition low): Priority.", 3};
  job = sched_->GetJob("p", "q1");
  EXPECT_EQ(job->job_position, 3);
  EXPECT_EQ(job->wait_reason, "Waiting in Slurm (job 12, partition low): Priority.");
  std::vector<Job> listed = {*store_->GetJob("p", "q1")};
  sched_->FillLiveFields(listed);
  EXPECT_EQ(listed[0].job_position, 3);
  EXPECT_EQ(sched_->Stats().queued, 1);
  // Allocated: PREPARING (its startTime now), then RUNNING once the replica runs.
  exec_.waiting.clear();
  sched_->OnReplicaAllocated(Master("q1"));
  job = sched_->GetJob("p", "q1");
  EXPECT_EQ(job->state, JobState::kPreparing);
  EXPECT_GT(job->start_time, 0);
  EXPECT_TRUE(job->wait_reason.empty()) << job->wait_reason;
  sched_->OnReplicaAllocated(Master("q1"));  // once is enough
  sched_->OnReplicaRunning(Master("q1"));
  EXPECT_EQ(StateOf("q1"), JobState::kRunning);
  sched_->OnReplicaExit(Master("q1"), CleanExit());
  EXPECT_EQ(StateOf("q1"), JobState::kSucceeded);
  EXPECT_EQ(History("q1"), (std::vector<JobState>{JobState::kPreparing, JobState::kRunning,
                                                  JobState::kSucceeded}));
}

TEST_F(BackendQueueTest, AReplicaSeenRunningFirstStillGoesThroughPreparing) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("q2")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaRunning(Master("q2"));  // the backend's poll had not seen it start
  EXPECT_EQ(StateOf("q2"), JobState::kRunning);
  EXPECT_EQ(History("q2"), (std::vector<JobState>{JobState::kPreparing, JobState::kRunning}));
  // And a gang that ended before anything was seen of it (it started and finished between
  // two polls) succeeds through PREPARING and RUNNING too.
  ASSERT_TRUE(sched_->Submit(MakeJob("q3")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  sched_->OnReplicaExit(Master("q3"), CleanExit());
  EXPECT_EQ(StateOf("q3"), JobState::kSucceeded);
  EXPECT_EQ(History("q3"), (std::vector<JobState>{JobState::kPreparing, JobState::kRunning,
                                                  JobState::kSucceeded}));
}

TEST_F(BackendQueueTest, MaxWaitTimeCancelsAJobWaitingInTheBackend) {
  StartScheduler();
  Job j = MakeJob("slow");
  j.spec.scheduling.max_wait_time = 1800 * kMicrosPerSecond;
  ASSERT_TRUE(sched_->Submit(j).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  exec_.waiting[Master("slow")] = {"Waiting in Slurm (job 7): Resources.", 1};
  auto job = sched_->GetJob("p", "slow");
  EXPECT_NE(job->wait_reason.find("Waiting in Slurm (job 7): Resources. It is cancelled if it "
                                  "has not started by "),
            std::string::npos)
      << job->wait_reason;
  Advance(1799 * kMicrosPerSecond);
  EXPECT_TRUE(exec_.Killed().empty());
  Advance(2 * kMicrosPerSecond);
  ASSERT_EQ(exec_.Killed().size(), 1u);
  EXPECT_EQ(StateOf("slow"), JobState::kCancelling);
  executor::ReplicaExit killed;
  killed.phase = "launch";
  killed.exit_code = -1;
  killed.killed_by_request = true;
  sched_->OnReplicaExit(Master("slow"), killed);
  job = sched_->GetJob("p", "slow");
  EXPECT_EQ(job->state, JobState::kCancelled);
  EXPECT_EQ(job->error_message,
            "The job was cancelled because it waited longer than scheduling.maxWaitTime (1800s) "
            "to start running.");
}

TEST_F(BackendQueueTest, ARestartedDaemonFindsTheGangOfAQueuedJobInTheBackend) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("held")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_.reset();
  exec_.reattach = {Master("held")};
  StartScheduler();
  EXPECT_EQ(exec_.recover_keys, (std::vector<executor::ReplicaKey>{Master("held")}));
  // Re-attached, not launched again, still QUEUED; the allocation moves it on.
  ASSERT_TRUE(WaitFor([&] { return StateOf("held") == JobState::kQueued; }));
  EXPECT_EQ(exec_.Launched().size(), 1u);
  sched_->OnReplicaAllocated(Master("held"));
  sched_->OnReplicaRunning(Master("held"));
  EXPECT_EQ(StateOf("held"), JobState::kRunning);
  // A QUEUED job the backend never got is queued again and launched.
  sched_.reset();
  Job never = MakeJob("never");
  never.create_time = 1;
  never.etag = "e";
  ASSERT_TRUE(store_->CreateJob(never).ok());
  StartScheduler();
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  EXPECT_EQ(exec_.Launched()[1].key, Master("never"));
}

TEST_F(BackendQueueTest, AGangRestartedWholeShowsWhyItWaitsWithoutLeavingRunning) {
  options_.replica_restarts = 2;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("again")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaAllocated(Master("again"));
  sched_->OnReplicaRunning(Master("again"));
  ASSERT_EQ(StateOf("again"), JobState::kRunning);
  executor::ReplicaExit lost;
  lost.phase = "lost";
  lost.exit_code = -1;
  lost.message = "Slurm ended its allocation (job 3 PREEMPTED)";
  sched_->OnReplicaExit(Master("again"), lost);
  ASSERT_EQ(exec_.Launched().size(), 2u);
  exec_.waiting[Master("again")] = {"Waiting in Slurm (job 4): Resources.", 2};
  auto job = sched_->GetJob("p", "again");
  EXPECT_EQ(job->state, JobState::kRunning);
  EXPECT_EQ(job->wait_reason, "Waiting in Slurm (job 4): Resources.");
  sched_->OnReplicaAllocated(Master("again"));  // no state change from RUNNING
  sched_->OnReplicaRunning(Master("again"));
  EXPECT_EQ(History("again"), (std::vector<JobState>{JobState::kPreparing, JobState::kRunning}));
}

TEST_F(BackendQueueTest, ALocalBackendStillPreparesAtAdmission) {
  exec_.queues = false;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("loc")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  EXPECT_EQ(StateOf("loc"), JobState::kPreparing);
}

}  // namespace
}  // namespace trainyard::scheduler
