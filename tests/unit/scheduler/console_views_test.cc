// The console's views of the scheduler (console_views.cc): the Queue page's snapshot (admitted
// jobs with their replicas and GPUs, queued jobs of one project in admission order, paging, who
// holds each GPU) and a tuning job's intermediate reports per trial.
#include <gtest/gtest.h>

#include "scheduler_fixture.h"

namespace trainyard::scheduler {
namespace {

using model::Job;
using model::JobState;
using namespace testing_support;  // NOLINT(google-build-using-namespace): the fixture

class ConsoleViewsTest : public SchedulerTest {
 protected:
  Job GpuJob(const std::string& project, const std::string& id, int priority = 0) {
    Job job = MakeJob(id, priority);
    job.project = project;
    job.spec.scale_tier = "CUSTOM";
    job.spec.master.machine_type = "n1-standard-4";
    job.spec.master.accelerator = {"NVIDIA_TESLA_T4", 1};
    job.training_input_json = R"({"scaleTier":"CUSTOM","masterType":"n1-standard-4"})";
    return job;
  }
  std::vector<std::string> Ids(const std::vector<Job>& jobs) {
    std::vector<std::string> out;
    for (const Job& j : jobs) out.push_back(j.job_id);
    return out;
  }
};

TEST_F(ConsoleViewsTest, QueueShowsWhatRunsWhereAndWhatWaitsWhy) {
  options_.node.gpus = {Gpu{0, "NVIDIA_TESLA_T4", ""}, Gpu{1, "NVIDIA_TESLA_T4", ""}};
  options_.max_running_jobs = 2;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(GpuJob("other", "theirs")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  ASSERT_TRUE(sched_->Submit(GpuJob("p", "mine")).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  sched_->OnReplicaRunning(Master("mine"));
  // Both GPUs and the running-jobs limit are taken: the rest waits, in priority order.
  ASSERT_TRUE(sched_->Submit(GpuJob("p", "low", 0)).ok());
  ASSERT_TRUE(sched_->Submit(GpuJob("other", "elsewhere", 5)).ok());
  ASSERT_TRUE(sched_->Submit(GpuJob("p", "high", 9)).ok());
  ASSERT_TRUE(sched_->Submit(GpuJob("p", "later", 0)).ok());
  sched_->RunUntilIdle();

  auto view = sched_->Queue("p", "", 2);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_FALSE(view->paused);
  EXPECT_EQ(view->max_running_jobs, 2);
  EXPECT_EQ(view->stats.queued, 4);
  EXPECT_EQ(view->stats.free_gpus, 0);
  // Only this project's admitted job, with its replica and GPU.
  ASSERT_EQ(view->admitted.size(), 1u);
  EXPECT_EQ(view->admitted[0].job.job_id, "mine");
  EXPECT_EQ(view->admitted[0].job.state, JobState::kRunning);
  ASSERT_EQ(view->admitted[0].replicas.size(), 1u);
  const QueueReplica& r = view->admitted[0].replicas[0];
  EXPECT_EQ(r.task_name, "master-replica-0");
  EXPECT_TRUE(r.running);
  EXPECT_EQ(r.demand.gpus, 1);
  ASSERT_EQ(r.gpus.size(), 1u);
  // Every GPU is listed; the other project's holder is not named.
  ASSERT_EQ(view->gpus.size(), 2u);
  for (const QueueGpu& g : view->gpus) {
    EXPECT_TRUE(g.held);
    if (g.gpu.index == r.gpus[0]) {
      EXPECT_EQ(g.job_id, "mine");
      EXPECT_EQ(g.task_name, "master-replica-0");
    } else {
      EXPECT_EQ(g.job_id, "");
    }
  }
  // This project's queued jobs in admission order (priority, then age), positions counted
  // over the whole queue, with the reason each waits.
  EXPECT_EQ(Ids(view->queued), (std::vector<std::string>{"high", "low"}));
  EXPECT_EQ(view->queued[0].job_position, 1);
  EXPECT_EQ(view->queued[1].job_position, 3);
  EXPECT_NE(view->queued[0].wait_reason.find("running-jobs limit"), std::string::npos)
      << view->queued[0].wait_reason;
  ASSERT_FALSE(view->next_page_token.empty());
  auto next = sched_->Queue("p", view->next_page_token, 2);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(Ids(next->queued), (std::vector<std::string>{"later"}));
  EXPECT_TRUE(next->next_page_token.empty());
  // A job admitted or cancelled after the token was given does not break the next page.
  ASSERT_TRUE(sched_->Cancel("p", "low").ok());
  next = sched_->Queue("p", view->next_page_token, 2);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(Ids(next->queued), (std::vector<std::string>{"later"}));
  // The other project sees its own.
  auto theirs = sched_->Queue("other", "", 10);
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(Ids(theirs->queued), (std::vector<std::string>{"elsewhere"}));
  ASSERT_EQ(theirs->admitted.size(), 1u);
  EXPECT_EQ(theirs->admitted[0].job.job_id, "theirs");
}

TEST_F(ConsoleViewsTest, QueueSaysWhenAdmissionIsPausedAndRefusesBadTokens) {
  options_.admission_paused = true;
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeJob("waits")).ok());
  sched_->RunUntilIdle();
  auto view = sched_->Queue("p", "", 50);
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(view->paused);
  EXPECT_TRUE(view->admitted.empty());
  ASSERT_EQ(Ids(view->queued), (std::vector<std::string>{"waits"}));
  EXPECT_NE(view->queued[0].wait_reason.find("Admission is paused"), std::string::npos);
  for (const char* bad : {"x", "1:2", "a:2:j", "1:b:j", "1:2:"}) {
    auto r = sched_->Queue("p", bad, 50);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().violations()[0].field, "pageToken");
  }
}

TEST_F(ConsoleViewsTest, TrialMeasurementsAreTheFirstReportingReplicasInTimeOrder) {
  Job job = MakeJob("t");
  job.spec.scale_tier = "CUSTOM";
  job.spec.master.machine_type = "n1-standard-4";
  job.spec.worker = {"n1-standard-4", 1, {}, "", {}, {}};
  StartScheduler();
  {
    std::lock_guard<std::mutex> lock(exec_.mu);
    // Trial 1: the master reported (out of time order in the file); trial 2: only the
    // worker did; trial 3: nothing.
    exec_.metrics[{"p", "t", "1", "master", 0}] = {{30, 3, 0.3}, {10, 1, 0.1}, {20, 2, 0.2}};
    exec_.metrics[{"p", "t", "1", "worker", 0}] = {{5, 9, 9.0}};
    exec_.metrics[{"p", "t", "2", "worker", 0}] = {{1, 7, 0.7}};
  }
  auto m = sched_->TrialMeasurements(job, "loss", {"1", "2", "3"});
  ASSERT_EQ(m.size(), 2u);
  ASSERT_EQ(m["1"].size(), 3u);
  EXPECT_EQ(m["1"][0].step, 1);
  EXPECT_EQ(m["1"][2].step, 3);
  EXPECT_DOUBLE_EQ(m["1"][2].value, 0.3);
  ASSERT_EQ(m["2"].size(), 1u);
  EXPECT_EQ(m["2"][0].step, 7);
  EXPECT_FALSE(m.count("3"));
}

}  // namespace
}  // namespace trainyard::scheduler
