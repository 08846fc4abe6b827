// Hyperparameter tuning jobs in the scheduler: trials as gangs, their arguments and environment,
// metric files, trainingOutput, the failure limit, and recovery after a daemon restart.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scheduler_fixture.h"
#include "tuning_state.h"

namespace trainyard::scheduler {
namespace {

using model::Job;
using model::JobState;
using nlohmann::json;
using namespace testing_support;  // NOLINT(google-build-using-namespace): the fixture

class TuningTest : public SchedulerTest {
 protected:
  Job MakeTuningJob(const std::string& id, const json& hp) {
    Job job = MakeJob(id);
    job.spec.has_hyperparameters = true;
    json ti = {
        {"pythonModule", "trainer.task"}, {"region", "us-central1"}, {"hyperparameters", hp}};
    job.training_input_json = ti.dump();
    return job;
  }
  static json GridSpec(int max_trials, int parallel) {
    return {
        {"goal", "MAXIMIZE"},
        {"algorithm", "GRID_SEARCH"},
        {"maxTrials", max_trials},
        {"maxParallelTrials", parallel},
        {"hyperparameterMetricTag", "accuracy"},
        {"params",
         {{{"parameterName", "depth"}, {"type", "INTEGER"}, {"minValue", 1}, {"maxValue", 3}}}}};
  }
  executor::ReplicaKey TrialMaster(const std::string& id, int trial) {
    return {"p", id, std::to_string(trial), "master", 0};
  }
  // Plays the executor reading the trainer's metric file: every record so far, as an event,
  // and kept for ReplicaMetrics (a restarted scheduler reads them there).
  void Report(const executor::ReplicaSpec& spec, const std::vector<std::pair<int, double>>& points,
              bool ended = false) {
    ASSERT_EQ(spec.metric_tag, "accuracy");
    std::vector<executor::MetricRecord> records;
    double ts = 1000;
    for (auto [step, value] : points) records.push_back({ts++, step, value});
    {
      std::lock_guard<std::mutex> lock(exec_.mu);
      exec_.metrics[spec.key] = records;
    }
    sched_->OnReplicaMetrics(spec.key, records, ended);
  }
  json Output(const std::string& id) {
    auto job = sched_->GetJob("p", id);
    return json::parse(job->training_output_json.empty() ? "{}" : job->training_output_json);
  }
  std::optional<executor::ReplicaSpec> LaunchedTrial(int trial) {
    for (const auto& s : exec_.Launched()) {
      if (s.key.trial_id == std::to_string(trial)) return s;
    }
    return std::nullopt;
  }
};

TEST(LatestRecordTest, TiesOnTimestampGoToTheHighestStep) {
  std::vector<MetricRecord> r = {{5, 10, 0.1}, {5, 12, 0.2}, {5, 11, 0.3}, {4, 99, 0.4}};
  EXPECT_EQ(LatestRecord(r)->step, 12);
  EXPECT_FALSE(LatestRecord({}).has_value());
}

TEST_F(TuningTest, RunsTrialsInParallelWithTheirArgumentsAndEnvironment) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("t1", GridSpec(3, 2))).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  ASSERT_TRUE(LaunchedTrial(1) && LaunchedTrial(2)) << exec_.Launched()[0].work_dir;
  auto first = *LaunchedTrial(1);
  auto second = *LaunchedTrial(2);
  // The grid in order; user args, then --job-dir, then the parameter (compat §6.4).
  std::vector<std::string> want = {"--epochs", "2", "--job-dir", "gs://bkt/out", "--depth=1"};
  EXPECT_EQ(first.args, want);
  EXPECT_EQ(second.args.back(), "--depth=2");
  EXPECT_EQ(first.env.at("CLOUD_ML_TRIAL_ID"), "1");
  EXPECT_EQ(first.env.at("CLOUD_ML_HP_METRIC_TAG"), "accuracy");
  EXPECT_EQ(first.metric_tag, "accuracy") << "the executor gives it a metric file of its own";
  const json tf = json::parse(first.env.at("TF_CONFIG"));
  EXPECT_EQ(tf["task"]["trial"], "1");
  // Only two at once.
  sched_->RunUntilIdle();
  EXPECT_EQ(exec_.Launched().size(), 2u);

  sched_->OnReplicaRunning(TrialMaster("t1", 1));
  EXPECT_EQ(StateOf("t1"), JobState::kRunning);
  Report(first, {{10, 0.5}, {20, 0.75}});
  sched_->OnReplicaExit(TrialMaster("t1", 1), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  EXPECT_EQ(exec_.Launched()[2].args.back(), "--depth=3");
  json out = Output("t1");
  EXPECT_EQ(out["isHyperparameterTuningJob"], true);
  EXPECT_EQ(out["hyperparameterMetricTag"], "accuracy");
  EXPECT_EQ(out["completedTrialCount"], "1");
  ASSERT_EQ(out["trials"].size(), 3u);
  EXPECT_EQ(out["trials"][0]["trialId"], "1");
  EXPECT_EQ(out["trials"][0]["state"], "SUCCEEDED");
  EXPECT_EQ(out["trials"][0]["hyperparameters"]["depth"], "1");
  EXPECT_EQ(out["trials"][0]["finalMetric"]["trainingStep"], "20");
  EXPECT_DOUBLE_EQ(out["trials"][0]["finalMetric"]["objectiveValue"].get<double>(), 0.75);
  EXPECT_TRUE(out["trials"][0].contains("endTime"));
  EXPECT_EQ(out["trials"][1]["state"], "RUNNING");

  Report(second, {{5, 0.9}});
  sched_->OnReplicaExit(TrialMaster("t1", 2), CleanExit());
  sched_->OnReplicaExit(TrialMaster("t1", 3), CleanExit());  // reported nothing
  ASSERT_TRUE(WaitFor([&] { return StateOf("t1") == JobState::kSucceeded; }));
  out = Output("t1");
  EXPECT_EQ(out["completedTrialCount"], "3");
  EXPECT_FALSE(out["trials"][2].contains("finalMetric"));
  EXPECT_EQ(out["trials"][2]["state"], "SUCCEEDED");
  // Stored, not only live.
  auto stored = store_->GetJob("p", "t1");
  EXPECT_NE(stored->training_output_json.find("\"completedTrialCount\":\"3\""), std::string::npos);
}

TEST_F(TuningTest, GridSearchStopsWhenTheGridIsExhausted) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("g", GridSpec(10, 1))).ok());
  for (int trial = 1; trial <= 3; ++trial) {
    ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == static_cast<size_t>(trial); }));
    sched_->OnReplicaExit(TrialMaster("g", trial), CleanExit());
  }
  ASSERT_TRUE(WaitFor([&] { return StateOf("g") == JobState::kSucceeded; }));
  EXPECT_EQ(exec_.Launched().size(), 3u);
  EXPECT_EQ(Output("g")["trials"].size(), 3u);
}

TEST_F(TuningTest, FailedTrialsBeyondMaxFailedTrialsFailTheJob) {
  StartScheduler();
  json hp = GridSpec(3, 1);
  hp["algorithm"] = "RANDOM_SEARCH";
  hp["maxTrials"] = 5;
  hp["maxFailedTrials"] = 1;
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("f", hp)).ok());
  executor::ReplicaExit crash;
  crash.phase = "run";
  crash.exit_code = 3;
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaExit(TrialMaster("f", 1), crash);
  // One failure is allowed: the next trial starts.
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  EXPECT_EQ(StateOf("f"), JobState::kPreparing);
  sched_->OnReplicaExit(TrialMaster("f", 2), crash);
  ASSERT_TRUE(WaitFor([&] { return StateOf("f") == JobState::kFailed; }));
  auto job = sched_->GetJob("p", "f");
  EXPECT_NE(job->error_message.find("2 of 2 trials failed"), std::string::npos)
      << job->error_message;
  EXPECT_NE(job->error_message.find("maxFailedTrials 1"), std::string::npos);
  EXPECT_NE(job->error_message.find("exited with a non-zero status of 3"), std::string::npos);
  json out = Output("f");
  EXPECT_EQ(out["completedTrialCount"], "0");
  EXPECT_EQ(out["trials"][1]["state"], "FAILED");
  EXPECT_EQ(exec_.Launched().size(), 2u);
}

TEST_F(TuningTest, CancelStopsEveryTrialAndEndsCancelled) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("c", GridSpec(3, 2))).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  ASSERT_TRUE(sched_->Cancel("p", "c").ok());
  EXPECT_EQ(exec_.Killed().size(), 2u);
  executor::ReplicaExit stopped = CleanExit();
  stopped.signal = SIGTERM;
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(TrialMaster("c", 1), stopped);
  EXPECT_EQ(StateOf("c"), JobState::kCancelling);
  sched_->OnReplicaExit(TrialMaster("c", 2), stopped);
  EXPECT_EQ(StateOf("c"), JobState::kCancelled);
  json out = Output("c");
  EXPECT_EQ(out["trials"][0]["state"], "CANCELLED");
  EXPECT_EQ(exec_.Launched().size(), 2u);
}

TEST_F(TuningTest, RecoveryReplaysTrialsAndGoesOnNumbering) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("r", GridSpec(3, 1))).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  auto first = *LaunchedTrial(1);
  Report(first, {{1, 0.4}});
  sched_->OnReplicaExit(TrialMaster("r", 1), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  auto second = *LaunchedTrial(2);
  sched_->OnReplicaRunning(TrialMaster("r", 2));
  sched_->Stop();

  exec_.reattach = {TrialMaster("r", 2)};
  sched_ = std::make_unique<Scheduler>(options_, *store_, exec_, *buckets_);
  ASSERT_TRUE(sched_->Start().ok());
  EXPECT_EQ(StateOf("r"), JobState::kRunning);
  // It asked about the replicas of the trial that was running, and only those.
  ASSERT_EQ(exec_.recover_keys.size(), 1u);
  EXPECT_EQ(exec_.recover_keys[0], second.key);
  sched_->OnReplicaExit(TrialMaster("r", 2), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  EXPECT_EQ(exec_.Launched()[2].key.trial_id, "3");
  EXPECT_EQ(exec_.Launched()[2].args.back(), "--depth=3");
  sched_->OnReplicaExit(TrialMaster("r", 3), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("r") == JobState::kSucceeded; }));
  json out = Output("r");
  ASSERT_EQ(out["trials"].size(), 3u);
  EXPECT_DOUBLE_EQ(out["trials"][0]["finalMetric"]["objectiveValue"].get<double>(), 0.4);
}

TEST_F(TuningTest, AResumedStudyContinuesTheNumberingWithoutRepeatingPoints) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("a", GridSpec(2, 1))).ok());
  for (int trial = 1; trial <= 2; ++trial) {
    ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == static_cast<size_t>(trial); }));
    sched_->OnReplicaExit(TrialMaster("a", trial), CleanExit());
  }
  ASSERT_TRUE(WaitFor([&] { return StateOf("a") == JobState::kSucceeded; }));
  json hp = GridSpec(5, 1);
  hp["resumePreviousJobId"] = "a";
  Job b = MakeTuningJob("b", hp);
  ASSERT_TRUE(sched_->CheckRunnable(b).ok());
  ASSERT_TRUE(sched_->Submit(b).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  EXPECT_EQ(exec_.Launched()[2].key.trial_id, "3");
  EXPECT_EQ(exec_.Launched()[2].args.back(), "--depth=3");
  sched_->OnReplicaExit(TrialMaster("b", 3), CleanExit());
  // The grid is exhausted after one new point.
  ASSERT_TRUE(WaitFor([&] { return StateOf("b") == JobState::kSucceeded; }));
  json out = Output("b");
  ASSERT_EQ(out["trials"].size(), 1u);
  EXPECT_EQ(out["trials"][0]["trialId"], "3");
}

TEST_F(TuningTest, ResumingAnUnknownOrDifferentStudyIsRefused) {
  StartScheduler();
  json hp = GridSpec(2, 1);
  hp["resumePreviousJobId"] = "nope";
  Status st = sched_->CheckRunnable(MakeTuningJob("x", hp));
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("trainingInput.hyperparameters.resumePreviousJobId"),
            std::string::npos)
      << st.message();
  ASSERT_TRUE(sched_->Submit(MakeJob("plain")).ok());
  hp["resumePreviousJobId"] = "plain";
  st = sched_->CheckRunnable(MakeTuningJob("x", hp));
  EXPECT_NE(st.message().find("not a hyperparameter tuning job"), std::string::npos)
      << st.message();
}

TEST_F(TuningTest, EarlyStoppingStopsAHopelessTrialGracefully) {
  StartScheduler();
  json hp = GridSpec(7, 1);
  hp["algorithm"] = "RANDOM_SEARCH";
  hp["enableTrialEarlyStopping"] = true;
  hp["params"][0]["maxValue"] = 100;
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("e", hp)).ok());
  // Five completed trials with good learning curves (the rule waits for them: inactive)...
  for (int trial = 1; trial <= 5; ++trial) {
    ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == static_cast<size_t>(trial); }));
    const json state = Output("e")["earlyStopping"];
    EXPECT_EQ(state["active"], false) << trial;
    EXPECT_EQ(state["referenceTrialCount"], std::to_string(trial - 1));
    EXPECT_EQ(state["minReferenceTrialCount"], "5");
    Report(*LaunchedTrial(trial), {{1, 0.5}, {2, 0.6}, {3, 0.7}, {4, 0.8}, {5, 0.9}, {6, 0.95}});
    sched_->OnReplicaExit(TrialMaster("e", trial), CleanExit());
  }
  // ...then one far below them: stopped after its second report.
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 6; }));
  Report(*LaunchedTrial(6), {{1, 0.1}, {2, 0.1}, {3, 0.1}, {4, 0.1}, {5, 0.1}});
  ASSERT_TRUE(WaitFor([&] {
    auto k = exec_.Killed();
    return std::any_of(k.begin(), k.end(), [](const auto& key) { return key.trial_id == "6"; });
  }));
  executor::ReplicaExit stopped = CleanExit();
  stopped.signal = SIGTERM;
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(TrialMaster("e", 6), stopped);
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 7; }));
  json out = Output("e");
  EXPECT_EQ(out["trials"][5]["state"], "SUCCEEDED");
  EXPECT_EQ(out["trials"][5]["isTrialStoppedEarly"], true);
  EXPECT_FALSE(out["trials"][0].contains("isTrialStoppedEarly"));
  // Why (Trainyard extensions): at its 2nd report, its best 0.1 against the five completed trials'
  // 45th percentile from the best at step 2, 0.6 (they all stood there).
  const json& why = out["trials"][5]["earlyStopping"];
  EXPECT_EQ(why["rule"], "MEDIAN");
  EXPECT_EQ(why["trainingStep"], "2");
  EXPECT_DOUBLE_EQ(why["bestObjectiveValue"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(why["medianObjectiveValue"].get<double>(), 0.6);
  EXPECT_EQ(why["referenceTrialCount"], "5");
  EXPECT_EQ(out["trials"][5]["message"],
            "Stopped early at step 2: its best accuracy so far, 0.1, was worse than the 45th "
            "percentile (counted from the best) of 5 completed trials at that step, 0.6.");
  EXPECT_FALSE(out["trials"][0].contains("earlyStopping"));
  EXPECT_FALSE(out["trials"][0].contains("message"));
  EXPECT_EQ(out["earlyStopping"]["active"], true);
  EXPECT_EQ(out["earlyStopping"]["referenceTrialCount"], "5");
  EXPECT_EQ(out["earlyStopping"]["stoppedTrialCount"], "1");
  sched_->OnReplicaExit(TrialMaster("e", 7), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("e") == JobState::kSucceeded; }));
}

TEST_F(TuningTest, EarlyStoppingStopsATrialThatCannotBecomeTheBest) {
  StartScheduler();
  json hp = GridSpec(7, 1);
  hp["algorithm"] = "RANDOM_SEARCH";
  hp["enableTrialEarlyStopping"] = true;
  hp["params"][0]["maxValue"] = 100;
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("p", hp)).ok());
  // Five references climbing 0.01 a step from 0.1 k: at step 2 (the mean of steps 1-2) they stand
  // at 0.1 k + 0.015 and they end at 0.1 k + 0.06, a perfectly predictable order.
  for (int trial = 1; trial <= 5; ++trial) {
    ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == static_cast<size_t>(trial); }));
    std::vector<std::pair<int, double>> curve;
    for (int step = 1; step <= 6; ++step) curve.emplace_back(step, 0.1 * trial + 0.01 * step);
    Report(*LaunchedTrial(trial), curve);
    sched_->OnReplicaExit(TrialMaster("p", trial), CleanExit());
  }
  // At step 2 (the mean of its two reports 0.415) above the median rule's reference (0.34), but
  // bound to end near 0.46 < 0.56.
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 6; }));
  Report(*LaunchedTrial(6), {{1, 0.41}, {2, 0.42}, {3, 0.43}, {4, 0.44}, {5, 0.45}});
  ASSERT_TRUE(WaitFor([&] {
    auto k = exec_.Killed();
    return std::any_of(k.begin(), k.end(), [](const auto& key) { return key.trial_id == "6"; });
  }));
  executor::ReplicaExit stopped = CleanExit();
  stopped.signal = SIGTERM;
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(TrialMaster("p", 6), stopped);
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 7; }));
  json out = Output("p");
  EXPECT_EQ(out["trials"][5]["isTrialStoppedEarly"], true);
  const json& why = out["trials"][5]["earlyStopping"];
  EXPECT_EQ(why["rule"], "PREDICTED_FINAL");
  EXPECT_EQ(why["trainingStep"], "2");
  EXPECT_NEAR(why["predictedObjectiveValue"].get<double>(), 0.46, 1e-9);
  EXPECT_NEAR(why["bestFinalObjectiveValue"].get<double>(), 0.56, 1e-9);
  EXPECT_EQ(why["referenceTrialCount"], "5");
  EXPECT_FALSE(why.contains("medianObjectiveValue"));
  EXPECT_EQ(out["trials"][5]["message"],
            "Stopped early at step 2: even an optimistic prediction of its final accuracy, 0.46, "
            "was worse than the best of 5 completed trials, 0.56.");
  sched_->OnReplicaExit(TrialMaster("p", 7), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("p") == JobState::kSucceeded; }));
}

TEST_F(TuningTest, TheLastRecordsOfATrainerThatEndedNeverStopItsTrialEarly) {
  StartScheduler();
  json hp = GridSpec(6, 1);
  hp["algorithm"] = "RANDOM_SEARCH";
  hp["enableTrialEarlyStopping"] = true;
  hp["params"][0]["maxValue"] = 100;
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("le", hp)).ok());
  for (int trial = 1; trial <= 5; ++trial) {
    ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == static_cast<size_t>(trial); }));
    Report(*LaunchedTrial(trial), {{1, 0.5}, {2, 0.6}, {3, 0.7}, {4, 0.8}, {5, 0.9}, {6, 0.95}});
    sched_->OnReplicaExit(TrialMaster("le", trial), CleanExit());
  }
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 6; }));
  // The whole hopeless curve arrives only as the trainer's last records: it ran to its end.
  Report(*LaunchedTrial(6), {{1, 0.1}, {2, 0.1}, {3, 0.1}, {4, 0.1}, {5, 0.1}}, /*ended=*/true);
  sched_->RunUntilIdle();
  EXPECT_TRUE(exec_.Killed().empty());
  sched_->OnReplicaExit(TrialMaster("le", 6), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("le") == JobState::kSucceeded; }));
  json out = Output("le");
  EXPECT_EQ(out["trials"][5]["state"], "SUCCEEDED");
  EXPECT_FALSE(out["trials"][5].contains("isTrialStoppedEarly"));
  EXPECT_EQ(out["trials"][5]["finalMetric"]["trainingStep"], "5");
}

TEST_F(TuningTest, ALaunchFailureEndsOnlyItsTrialAndTheNextTrialRunsItsOwnCluster) {
  StartScheduler();
  Job job = MakeTuningJob("lf", GridSpec(3, 2));
  job.spec.scale_tier = "CUSTOM";
  job.spec.master.machine_type = "n1-standard-4";
  job.spec.worker.machine_type = "n1-standard-4";
  job.spec.worker.count = 2;
  exec_.fail_launch_at = 1;  // trial 1's first worker
  ASSERT_TRUE(sched_->Submit(job).ok());
  // Trial 1: the master started, worker 0 did not, worker 1 never will; trial 2 runs all three.
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 4; }));
  sched_->RunUntilIdle();
  auto launched = exec_.Launched();
  ASSERT_EQ(launched.size(), 4u);
  EXPECT_EQ(launched[0].key.trial_id, "1");
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(launched[i].key.trial_id, "2") << i;
  // Trial 1's master was told to stop; once it is gone the trial has failed.
  auto killed = exec_.Killed();
  ASSERT_EQ(killed.size(), 1u);
  EXPECT_EQ(killed[0], TrialMaster("lf", 1));
  executor::ReplicaExit stopped = CleanExit();
  stopped.signal = SIGTERM;
  stopped.killed_by_request = true;
  sched_->OnReplicaExit(TrialMaster("lf", 1), stopped);
  json out = Output("lf");
  EXPECT_EQ(out["trials"][0]["state"], "FAILED");
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 7; }));  // trial 3
  for (int trial = 2; trial <= 3; ++trial) {
    sched_->OnReplicaExit(TrialMaster("lf", trial), CleanExit());
    for (int w = 0; w < 2; ++w) {
      executor::ReplicaExit e = stopped;
      sched_->OnReplicaExit({"p", "lf", std::to_string(trial), "worker", w}, e);
    }
  }
  ASSERT_TRUE(WaitFor([&] { return StateOf("lf") == JobState::kSucceeded; }));
  // Everything the trials held is free again.
  EXPECT_EQ(sched_->Stats().free_cpu_millis, options_.node.cpu_millis);
  EXPECT_EQ(sched_->Stats().free_memory_bytes, options_.node.memory_bytes);
}

TEST_F(TuningTest, ATrialThatReportsNothingSucceedsWithoutFinalMetric) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("ff", GridSpec(1, 1))).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaRunning(TrialMaster("ff", 1));
  EXPECT_EQ(StateOf("ff"), JobState::kRunning);
  sched_->OnReplicaExit(TrialMaster("ff", 1), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("ff") == JobState::kSucceeded; }));
  EXPECT_FALSE(Output("ff")["trials"][0].contains("finalMetric"));
}

TEST_F(TuningTest, ATrialWithoutTheTagSaysWhichTagsItReported) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("tag", GridSpec(2, 1))).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  {
    std::lock_guard<std::mutex> lock(exec_.mu);
    exec_.metric_tags[TrialMaster("tag", 1)] = {"acc", "loss"};
  }
  sched_->OnReplicaExit(TrialMaster("tag", 1), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  const std::string why =
      "It reported no metric under the tag 'accuracy' (hyperparameterMetricTag); tags reported: "
      "'acc', 'loss'.";
  EXPECT_EQ(Output("tag")["trials"][0]["message"], why);
  EXPECT_EQ(Output("tag")["trials"][0]["state"], "SUCCEEDED");
  EXPECT_TRUE(sched_->GetJob("p", "tag")->error_message.empty()) << "the job is still running";
  // The second trial wrote no metric at all; the job succeeds (compat §7) and says why the
  // optimiser had nothing to go by, with every tag any trial reported.
  {
    std::lock_guard<std::mutex> lock(exec_.mu);
    exec_.metric_tags[TrialMaster("tag", 2)] = {"acc", "val_acc"};
  }
  sched_->OnReplicaExit(TrialMaster("tag", 2), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("tag") == JobState::kSucceeded; }));
  EXPECT_EQ(sched_->GetJob("p", "tag")->error_message,
            "No trial reported the metric tag 'accuracy' (hyperparameterMetricTag); tags "
            "reported: 'acc', 'loss', 'val_acc'.");
  EXPECT_FALSE(Output("tag")["trials"][1].contains("finalMetric"));
  EXPECT_FALSE(Output("tag").contains("earlyStopping")) << "only with enableTrialEarlyStopping";
}

TEST_F(TuningTest, NoMetricAtAllIsSaidSoAndOneTrialWithTheTagKeepsTheJobQuiet) {
  StartScheduler();
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("none", GridSpec(1, 1))).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 1; }));
  sched_->OnReplicaExit(TrialMaster("none", 1), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("none") == JobState::kSucceeded; }));
  EXPECT_EQ(sched_->GetJob("p", "none")->error_message,
            "No trial reported the metric tag 'accuracy' (hyperparameterMetricTag); no trial "
            "reported any metric.");
  EXPECT_EQ(Output("none")["trials"][0]["message"],
            "It reported no metric under the tag 'accuracy' (hyperparameterMetricTag) and no "
            "other metric either.");

  ASSERT_TRUE(sched_->Submit(MakeTuningJob("some", GridSpec(2, 1))).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  ASSERT_EQ(exec_.Launched()[1].key.job_id, "some");
  Report(exec_.Launched()[1], {{3, 0.5}});
  sched_->OnReplicaExit(TrialMaster("some", 1), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 3; }));
  sched_->OnReplicaExit(TrialMaster("some", 2), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("some") == JobState::kSucceeded; }));
  EXPECT_TRUE(sched_->GetJob("p", "some")->error_message.empty());
  EXPECT_FALSE(Output("some")["trials"][0].contains("message"));
  EXPECT_TRUE(Output("some")["trials"][1].contains("message"));
}

TEST_F(TuningTest, ReplicasOtherThanTheMasterCountWhenTheMasterReportsNothing) {
  StartScheduler();
  Job job = MakeTuningJob("ev", GridSpec(1, 1));
  job.spec.scale_tier = "CUSTOM";
  job.spec.master.machine_type = "n1-standard-4";
  job.spec.evaluator.machine_type = "n1-standard-4";
  job.spec.evaluator.count = 1;
  ASSERT_TRUE(sched_->Submit(job).ok());
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 2; }));
  for (const auto& spec : exec_.Launched()) {
    if (spec.key.task_type == "evaluator") Report(spec, {{7, 0.25}});
  }
  sched_->OnReplicaExit(TrialMaster("ev", 1), CleanExit());
  executor::ReplicaExit stopped = CleanExit();
  stopped.killed_by_request = true;
  sched_->OnReplicaExit({"p", "ev", "1", "evaluator", 0}, stopped);
  ASSERT_TRUE(WaitFor([&] { return StateOf("ev") == JobState::kSucceeded; }));
  EXPECT_EQ(Output("ev")["trials"][0]["finalMetric"]["trainingStep"], "7");
}

TEST_F(TuningTest, AnEarlyStopSurvivesADaemonRestart) {
  StartScheduler();
  json hp = GridSpec(7, 1);
  hp["algorithm"] = "RANDOM_SEARCH";
  hp["enableTrialEarlyStopping"] = true;
  hp["params"][0]["maxValue"] = 100;
  ASSERT_TRUE(sched_->Submit(MakeTuningJob("es", hp)).ok());
  for (int trial = 1; trial <= 5; ++trial) {
    ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == static_cast<size_t>(trial); }));
    Report(*LaunchedTrial(trial), {{1, 0.5}, {2, 0.6}, {3, 0.7}, {4, 0.8}, {5, 0.9}, {6, 0.95}});
    sched_->OnReplicaExit(TrialMaster("es", trial), CleanExit());
  }
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 6; }));
  auto sixth = *LaunchedTrial(6);
  sched_->OnReplicaRunning(TrialMaster("es", 6));
  Report(sixth, {{1, 0.1}, {2, 0.1}, {3, 0.1}, {4, 0.1}, {5, 0.1}});
  ASSERT_TRUE(WaitFor([&] { return exec_.Killed().size() == 1; }));
  EXPECT_EQ(exec_.kill_reasons[0], kStopEarlyReason) << "the executor keeps why it was stopped";
  sched_->Stop();

  // The new daemon re-attaches trial 6, asks it to stop again, and its SIGTERM exit (the new
  // executor did not send that signal) is a stop, neither a failure nor a reason to restart.
  exec_.reattach = {TrialMaster("es", 6)};
  sched_ = std::make_unique<Scheduler>(options_, *store_, exec_, *buckets_);
  ASSERT_TRUE(sched_->Start().ok());
  ASSERT_EQ(exec_.Killed().size(), 2u);
  EXPECT_EQ(exec_.Killed()[1], TrialMaster("es", 6));
  executor::ReplicaExit term;
  term.phase = "run";
  term.signal = SIGTERM;
  sched_->OnReplicaExit(TrialMaster("es", 6), term);
  ASSERT_TRUE(WaitFor([&] { return exec_.Launched().size() == 7; }));
  EXPECT_EQ(exec_.Launched()[6].key.trial_id, "7");
  json out = Output("es");
  EXPECT_EQ(out["trials"][5]["state"], "SUCCEEDED");
  EXPECT_EQ(out["trials"][5]["isTrialStoppedEarly"], true);
  EXPECT_EQ(out["trials"][5]["earlyStopping"]["trainingStep"], "2");
  sched_->OnReplicaExit(TrialMaster("es", 7), CleanExit());
  ASSERT_TRUE(WaitFor([&] { return StateOf("es") == JobState::kSucceeded; }));

  // After one more restart the ended trial's reason is read back from the stored output.
  sched_->Stop();
  sched_ = std::make_unique<Scheduler>(options_, *store_, exec_, *buckets_);
  ASSERT_TRUE(sched_->Start().ok());
  out = Output("es");
  EXPECT_EQ(out["trials"][5]["earlyStopping"]["medianObjectiveValue"], 0.6);
  EXPECT_EQ(out["trials"][5]["message"].get<std::string>().rfind("Stopped early at step 2", 0), 0u);
}

}  // namespace
}  // namespace trainyard::scheduler
