// The scheduler tests' fixture: a fake executor the tests play the replicas' part through, an
// in-memory store, a fake clock, and a scheduler on a 2-CPU node in step mode: nothing happens
// unless the test calls an API method, delivers an executor event, or steps the scheduler
// (RunUntilIdle), and time passes only when the test advances the clock. No test sleeps.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "trainyard/scheduler/scheduler.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::scheduler::testing_support {

using model::Job;
using model::JobState;

// Records what the scheduler asks for; tests play the replica's part by calling the listener.
// Like a real executor it keeps what it launched (the spec with its attempt, a kill and its
// reason, the metrics) across scheduler restarts, and gives it back from Recover.
class FakeExecutor : public executor::Executor {
 public:
  Status Launch(const executor::ReplicaSpec& given) override {
    std::lock_guard<std::mutex> lock(mu);
    if (static_cast<int>(launched.size()) == fail_launch_at) {
      fail_launch_at = -1;  // once
      return Internal("no launcher today");
    }
    executor::ReplicaSpec spec = given;
    if (spec.work_dir.empty())
      spec.work_dir = "/fake/" + spec.key.job_id + "/" + spec.key.TaskName();
    launched.push_back(spec);
    persisted[spec.key] = {spec, false, false, ""};
    return launch_status;
  }
  void Kill(const executor::ReplicaKey& key, Duration grace, const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu);
    killed.push_back(key);
    kill_reasons.push_back(reason);
    last_grace = grace;
    if (auto it = persisted.find(key); it != persisted.end()) {
      it->second.kill_requested = true;
      it->second.stop_reason = reason;
    }
  }
  std::vector<executor::RecoveredReplica> Recover(
      const std::vector<executor::ReplicaKey>& keys) override {
    std::lock_guard<std::mutex> lock(mu);
    recover_keys = keys;
    std::vector<executor::RecoveredReplica> out;
    for (const auto& key : keys) {
      auto it = persisted.find(key);
      if (it == persisted.end()) continue;
      executor::RecoveredReplica r = it->second;
      r.running = reattach.count(key) != 0;
      out.push_back(r);
    }
    return out;
  }
  std::vector<executor::MetricRecord> ReplicaMetrics(const executor::ReplicaKey& key,
                                                     const std::string&) override {
    std::lock_guard<std::mutex> lock(mu);
    auto it = metrics.find(key);
    return it != metrics.end() ? it->second : std::vector<executor::MetricRecord>{};
  }
  std::vector<std::string> ReplicaMetricTags(const executor::ReplicaKey& key) override {
    std::lock_guard<std::mutex> lock(mu);
    auto it = metric_tags.find(key);
    return it != metric_tags.end() ? it->second : std::vector<std::string>{};
  }
  int RunningCount() const override { return 0; }
  bool QueuesGangs() const override { return queues; }
  std::string PendingReason(const executor::ReplicaKey& key) const override {
    std::lock_guard<std::mutex> lock(mu);
    auto it = waiting.find(key);
    return it != waiting.end() ? it->second.first : "";
  }
  int64_t QueuePosition(const executor::ReplicaKey& key) const override {
    std::lock_guard<std::mutex> lock(mu);
    auto it = waiting.find(key);
    return it != waiting.end() ? it->second.second : 0;
  }
  bool RestartsWholeRun(const executor::ReplicaKey& key,
                        const executor::ReplicaExit&) const override {
    return whole_runs && in_place.count(key) == 0;
  }
  void Shutdown() override {}

  std::vector<executor::ReplicaSpec> Launched() {
    std::lock_guard<std::mutex> lock(mu);
    return launched;
  }
  std::vector<executor::ReplicaKey> Killed() {
    std::lock_guard<std::mutex> lock(mu);
    return killed;
  }

  mutable std::mutex mu;
  std::vector<executor::ReplicaSpec> launched;
  std::vector<executor::ReplicaKey> killed;
  std::vector<std::string> kill_reasons;
  Duration last_grace = 0;
  Status launch_status;
  int fail_launch_at = -1;  // the launch (0-based, counting successful ones) that fails once
  // What a real executor keeps durably, by replica.
  std::map<executor::ReplicaKey, executor::RecoveredReplica> persisted;
  std::map<executor::ReplicaKey, std::vector<executor::MetricRecord>> metrics;
  std::map<executor::ReplicaKey, std::vector<std::string>> metric_tags;  // in the metric file
  std::vector<executor::ReplicaKey> recover_keys;
  std::set<executor::ReplicaKey> reattach;  // still running at Recover
  bool whole_runs = false;                  // a backend like Slurm's (RestartsWholeRun)
  bool queues = false;                      // a backend with its own queue (QueuesGangs)
  // Launched replicas waiting in that queue: the reason and the place it gives.
  std::map<executor::ReplicaKey, std::pair<std::string, int64_t>> waiting;
  std::set<executor::ReplicaKey> in_place;  // ... that restarts these in place all the same
};

inline executor::ReplicaExit CleanExit() {
  executor::ReplicaExit e;
  e.phase = "run";
  return e;
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
    options_.step_mode = true;
    options_.clock = &clock_;
    // A 2-CPU, 24 GiB node with the daemon's default overcommit and no GPUs.
    options_.node.cpus = 2;
    options_.node.cpu_overcommit = 32;
    options_.node.cpu_millis = 64 * 1000;
    options_.node.physical_memory_bytes = 24LL << 30;
    options_.node.memory_overcommit = 8;
    options_.node.memory_bytes = 192LL << 30;
  }
  void TearDown() override {
    if (sched_) sched_->Stop();
    std::filesystem::remove_all(dir_);
  }

  void StartScheduler() {
    sched_ = std::make_unique<Scheduler>(options_, *store_, exec_, *buckets_);
    ASSERT_TRUE(sched_->Start().ok());
  }

  // Lets the scheduler do everything it can without time passing, then checks `pred`.
  bool WaitFor(const std::function<bool()>& pred) {
    if (sched_) sched_->RunUntilIdle();
    return pred();
  }
  // Time passes (deadlines, consumedMLUnits), then the scheduler catches up.
  void Advance(Duration d) {
    clock_.Advance(d);
    if (sched_) sched_->RunUntilIdle();
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
  FakeClock clock_;
  SchedulerOptions options_;
  std::unique_ptr<store::JobStore> store_;
  std::unique_ptr<storage::BucketStore> buckets_;
  FakeExecutor exec_;
  std::unique_ptr<Scheduler> sched_;
};

}  // namespace trainyard::scheduler::testing_support
