// Restart in place under Slurm: the control.log protocol's decisions (a repeated decision is
// done once, a stale exit report is not the current attempt's end) and how srun's words on a
// step's end are read.
#include "trainyard/executor/slurm_control.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "trainyard/core/util.h"
#include "trainyard/executor/launcher_protocol.h"

namespace trainyard::executor {
namespace {

int Exited(int code) { return (code & 0xff) << 8; }  // a wait status of exit(code)

TEST(SlurmControlTest, LinesRoundTripAndMalformedOnesAreNotDecisions) {
  EXPECT_EQ(SlurmControlLine({"restart", "worker-replica-0", 2}), "restart worker-replica-0 2");
  EXPECT_EQ(SlurmControlLine({"release", "master-replica-0", -1}), "release master-replica-0");
  auto c = ParseSlurmControlLine("restart worker-replica-0 2");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->verb, "restart");
  EXPECT_EQ(c->task, "worker-replica-0");
  EXPECT_EQ(c->attempt, 2);
  auto old = ParseSlurmControlLine("release worker-replica-0");  // an older daemon's line
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->attempt, -1);
  for (const char* bad : {"", "restart", "explode worker-replica-0 1", "restart w x",
                          "restart w -1", "restart w 1 2", "restart w 1x"}) {
    EXPECT_FALSE(ParseSlurmControlLine(bad).has_value()) << bad;
  }
}

TEST(SlurmControlTest, ARestartIsDoneOnceHoweverOftenItIsAskedFor) {
  // The step runs attempt 0; the daemon asks for attempt 1.
  EXPECT_EQ(DecideSlurmControl({"restart", "w", 1}, 0), SlurmControlAction::kRestart);
  // The same decision again (a daemon restarted before it saw the driver act), once the
  // driver runs attempt 1 or has it asked for: nothing more.
  EXPECT_EQ(DecideSlurmControl({"restart", "w", 1}, 1), SlurmControlAction::kIgnore);
  // A decision about an older attempt is never acted on.
  EXPECT_EQ(DecideSlurmControl({"restart", "w", 1}, 2), SlurmControlAction::kIgnore);
  // The next restart of the same replica is a new attempt: done.
  EXPECT_EQ(DecideSlurmControl({"restart", "w", 2}, 1), SlurmControlAction::kRestart);
  // Lines or plans without attempts are obeyed as before.
  EXPECT_EQ(DecideSlurmControl({"restart", "w", -1}, 1), SlurmControlAction::kRestart);
  EXPECT_EQ(DecideSlurmControl({"restart", "w", 1}, -1), SlurmControlAction::kRestart);
}

TEST(SlurmControlTest, AReleaseOfAnOlderAttemptLeavesTheStepAlone) {
  EXPECT_EQ(DecideSlurmControl({"release", "w", 1}, 1), SlurmControlAction::kRelease);
  EXPECT_EQ(DecideSlurmControl({"release", "w", 0}, 1), SlurmControlAction::kIgnore);
  EXPECT_EQ(DecideSlurmControl({"release", "w", -1}, 1), SlurmControlAction::kRelease);
}

TEST(SlurmControlTest, AnExitOfAnOlderAttemptThanTheSpecsIsStale) {
  EXPECT_TRUE(SlurmExitIsStale(0, 1));    // restart to 1 recorded, the step of 0 not replaced
  EXPECT_FALSE(SlurmExitIsStale(1, 1));   // the current attempt's end
  EXPECT_FALSE(SlurmExitIsStale(-1, 1));  // a report naming no attempt: read as before
  EXPECT_FALSE(SlurmExitIsStale(2, 1));
}

// After a node failure the gang runs again in a new allocation while the old step may live
// on (its slurmd dead): its launcher and driver find the spec at a newer attempt and keep
// their reports out of exit.json.
TEST(SlurmControlTest, AStepOfASupersededAttemptDoesNotWriteTheWorkDirsExitReport) {
  const std::string dir = ::testing::TempDir() + "/superseded-" + std::to_string(::getpid());
  ASSERT_TRUE(MakeDirs(dir).ok());
  EXPECT_EQ(SpecAttemptIn(dir), -1);  // no spec
  ReplicaSpec spec;
  spec.key = {"p", "j", "", "worker", 1};
  spec.args = {"--x"};
  ASSERT_TRUE(WriteFileAtomic(dir + "/" + kSpecFile, SpecToJson(spec)).ok());
  EXPECT_EQ(SpecAttemptIn(dir), 0);  // attempt 0 is left out of spec.json
  spec.attempt = 2;
  ASSERT_TRUE(WriteFileAtomic(dir + "/" + kSpecFile, SpecToJson(spec)).ok());
  EXPECT_EQ(SpecAttemptIn(dir), 2);
  EXPECT_TRUE(AttemptSuperseded(1, SpecAttemptIn(dir)));   // the old allocation's step
  EXPECT_FALSE(AttemptSuperseded(2, SpecAttemptIn(dir)));  // the current attempt's
  EXPECT_FALSE(AttemptSuperseded(-1, 2));                  // a step that knows no attempt
  EXPECT_FALSE(AttemptSuperseded(1, -1));                  // no spec to compare with
  EXPECT_EQ(SupersededExitFile(1), "exit.attempt-1.json");
  ASSERT_TRUE(WriteFileAtomic(dir + "/" + kSpecFile, "not json").ok());
  EXPECT_EQ(SpecAttemptIn(dir), -1);
  std::filesystem::remove_all(dir);
}

// A tuning trial's metric file: each attempt writes its own, so an old attempt's trainer still
// running on a node whose slurmd died never writes where the current attempt is read.
TEST(SlurmControlTest, EachAttemptOfATrialHasAMetricFileOfItsOwn) {
  const std::string w = "/shared/jobs/p/j/trial-3/master-replica-0";
  EXPECT_EQ(SlurmMetricFile(w, 0), w + "/hypertune/attempt-0/output.metrics");
  EXPECT_EQ(SlurmMetricFile(w, 2), w + "/hypertune/attempt-2/output.metrics");
  EXPECT_NE(SlurmMetricFile(w, 1), SlurmMetricFile(w, 2));
  // The daemon reads the file of the spec's attempt, never an older attempt's.
  EXPECT_EQ(SlurmMetricFileToRead(w, 2, SlurmMetricFile(w, 2)), SlurmMetricFile(w, 2));
  EXPECT_EQ(SlurmMetricFileToRead(w, 2, SlurmMetricFile(w, 1)), SlurmMetricFile(w, 2));
  EXPECT_EQ(SlurmMetricFileToRead(w, 2, ""), SlurmMetricFile(w, 2));
  EXPECT_EQ(SlurmMetricFileToRead(w, 2, "/elsewhere/output.metrics"), SlurmMetricFile(w, 2));
  // A replica an older daemon planned: its trainer writes the file every attempt shared.
  EXPECT_EQ(SlurmMetricFileToRead(w, 1, w + "/hypertune/output.metrics"),
            w + "/hypertune/output.metrics");
}

// slurm.extra_sbatch_args is read as sbatch's getopt reads #SBATCH lines: a flag Trainyard
// sets is found in a bundle of short flags, after other flags, abbreviated, quoted.
TEST(SlurmControlTest, ExtraSbatchArgsAreReadAsSbatchReadsThem) {
  for (const char* ok :
       {"--constraint=a100", "--exclusive", "-C a100", "-Ca100", "-Cp", "-sH", "-s -C a100",
        "--constraint a100 --exclusive", "-x n1 -w n2", "--comment=\"a -p b\"", "--comment='-p'",
        "-C a100 # -p high", "--constraint=a100#-p", "-kQ", "--licenses=x\\ -p"}) {
    EXPECT_EQ(SbatchExtraArgsProblem(ok), "") << ok;
  }
  // A flag Trainyard sets, wherever it is: the message names it.
  for (auto [bad, flag] : std::vector<std::pair<const char*, const char*>>{
           {"-Qp high", "-p"},
           {"-Qphigh", "-p"},
           {"-sQp high", "-p"},
           {"-vA acct", "-A"},
           {"-HJ name", "-J"},
           {"-C a100 -p high", "-p"},
           {"--constraint=a100 --partition=high", "--partition"},
           {"--exclusive --part high", "--part"},
           {"--hold -phigh", "-p"},
           {"-s --qos=q", "--qos"},
           {"-Qt 5", "-t"},
           {"-On4", "-n"},
           {"--mem-per-cpu=1G", "--mem-per-cpu"},
           {"\"-p\" high", "-p"},
           {"--comment x -p y", "-p"},
       }) {
    const std::string why = SbatchExtraArgsProblem(bad);
    EXPECT_EQ(why, std::string(flag) + " is set by Trainyard and cannot be given here (in \"" +
                       bad + "\")")
        << bad;
  }
  // A flag's value never counts as a flag: -C takes the rest of its bundle, "p".
  EXPECT_EQ(SbatchExtraArgsProblem("-Cp high"), "\"high\" is not an sbatch flag (in \"-Cp high\")");
  EXPECT_EQ(SbatchExtraArgsProblem("-Qy"), "-y is not an sbatch flag (in \"-Qy\")");
  EXPECT_EQ(SbatchExtraArgsProblem("exclusive"),
            "\"exclusive\" is not an sbatch flag (in \"exclusive\")");
  EXPECT_EQ(SbatchExtraArgsProblem("-s hetjob"),
            "\"hetjob\" separates heterogeneous job components, which Trainyard sets (in "
            "\"-s hetjob\")");
  EXPECT_EQ(SbatchExtraArgsProblem("-QC"), "-C needs its value in the same entry (in \"-QC\")");
  EXPECT_NE(SbatchExtraArgsProblem("--comment=\"x"), "");
  EXPECT_NE(SbatchExtraArgsProblem("--constraint=a\n#SBATCH -p high"), "");
}

TEST(SlurmControlTest, SbatchFailuresOfAnUnreachableControllerAreTransient) {
  for (const char* err : {
           "sbatch: error: Batch job submission failed: Unable to contact slurm controller "
           "(connect failure)",
           "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
           "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying",
           "sbatch: error: Batch job submission failed: Resource temporarily unavailable",
           "sbatch: error: slurm_persist_conn_open_without_init: failed to open persistent "
           "connection to host:x:6817: Connection refused",
           "sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received",
       }) {
    EXPECT_TRUE(SbatchFailureIsTransient(err)) << err;
  }
  for (const char* err : {
           "sbatch: error: Batch job submission failed: Requested node configuration is not "
           "available",
           "sbatch: error: Batch job submission failed: Invalid account or account/partition "
           "combination specified",
           "sbatch: error: invalid partition specified: nope",
           "sbatch: error: Batch job submission failed: Invalid generic resource (gres) "
           "specification",
           "",
       }) {
    EXPECT_FALSE(SbatchFailureIsTransient(err)) << err;
  }
}

TEST(SlurmControlTest, ExitReportsNameTheirAttempt) {
  ReplicaExit exit;
  exit.phase = "run";
  exit.signal = SIGKILL;
  exit.exit_code = 137;
  const std::string with = ExitToJson(exit, 3);
  EXPECT_EQ(ExitReportAttempt(with), 3);
  auto parsed = ExitFromJson(with);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->signal, SIGKILL);
  EXPECT_EQ(ExitReportAttempt(ExitToJson(exit)), -1);
  EXPECT_EQ(ExitReportAttempt(ExitToJson(exit, -1)), -1);
  EXPECT_EQ(ExitReportAttempt("not json"), -1);
  EXPECT_EQ(ExitReportAttempt(R"({"attempt": "2"})"), -1);
}

TEST(SlurmControlTest, ALauncherKilledInAStepSlurmDidNotEndIsReadFromSrun) {
  // Measured on Slurm 22.05: kill -9 of a step's task.
  SrunStepEnd killed = ClassifySrunStepEnd(
      {"srun: error: n1: task 0: Killed", "srun: Force Terminated StepId=1.0"}, Exited(137));
  EXPECT_EQ(killed.task_signal, SIGKILL);
  EXPECT_FALSE(killed.slurm_ended);
  EXPECT_FALSE(killed.out_of_memory);
  EXPECT_EQ(ClassifySrunStepEnd({"srun: error: n1: task 0: Terminated"}, Exited(143)).task_signal,
            SIGTERM);
  // A task that exited with a status of its own was not killed.
  EXPECT_EQ(ClassifySrunStepEnd({"srun: error: n1: task 0: Exited with exit code 3"}, Exited(3))
                .task_signal,
            0);
  // A node failure: srun exits 0 and Slurm ends the job NODE_FAIL (the gang restarts whole).
  SrunStepEnd node = ClassifySrunStepEnd({"srun: error: Node failure on n2"}, Exited(0));
  EXPECT_TRUE(node.slurm_ended);
  EXPECT_EQ(node.task_signal, 0);
  // Killed because Slurm ended the step (a time limit, a preemption, a cancel): not lost in a
  // healthy allocation, whatever the task's signal.
  SrunStepEnd cancelled = ClassifySrunStepEnd(
      {"slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME "
       "LIMIT ***",
       "srun: error: n1: task 0: Killed"},
      Exited(137));
  EXPECT_TRUE(cancelled.slurm_ended);
  EXPECT_EQ(cancelled.task_signal, 0);
  // Slurm's task/cgroup killed it for memory: an OOM kill, never a lost launcher.
  SrunStepEnd oom = ClassifySrunStepEnd({"srun: error: n1: task 0: Out Of Memory"}, Exited(137));
  EXPECT_TRUE(oom.out_of_memory);
  EXPECT_EQ(oom.task_signal, 0);
  // srun's own status without its words proves nothing.
  EXPECT_EQ(ClassifySrunStepEnd({}, Exited(137)).task_signal, 0);
}

}  // namespace
}  // namespace trainyard::executor
