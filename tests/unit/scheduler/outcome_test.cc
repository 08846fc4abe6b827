// The pure outcome rules (compat §12): which exit decides, restart or not, AI Platform's words.
// Whole-scheduler scenarios over the same rules are in scenarios/*.test.
#include "trainyard/scheduler/outcome.h"

#include <gtest/gtest.h>

#include <csignal>

namespace trainyard::scheduler::outcome {
namespace {

ReplicaState Launched(const std::string& type, int index) {
  ReplicaState r;
  r.key = {"p", "j", "", type, index};
  r.launched = true;
  return r;
}

void Exit(ReplicaState& r, int code, int sig = 0, bool by_request = false) {
  r.exited = true;
  r.exit.phase = "run";
  r.exit.exit_code = sig != 0 ? 128 + sig : code;
  r.exit.signal = sig;
  r.exit.killed_by_request = by_request;
}

TEST(OutcomeTest, TheMasterDecidesOnceItExitedCleanlyOnItsOwn) {
  ReplicaState m = Launched("master", 0), w = Launched("worker", 0);
  Exit(w, 1);  // lost rank 0's store right after the master finished
  Exit(m, 0);
  RunVerdict v = EvaluateRun({&m, &w});
  EXPECT_TRUE(v.all_gone);
  EXPECT_TRUE(v.succeeded);
  EXPECT_TRUE(v.failures.empty());
}

TEST(OutcomeTest, ExitsReadTogetherAreJudgedInTheOrderTheyHappened) {
  // Both ended while the daemon was down; it reads the master's first.
  ReplicaState m = Launched("master", 0), w = Launched("worker", 0);
  Exit(m, 0);
  m.exit.ended_at = 2000;
  RunVerdict v = EvaluateRun({&m, &w});
  EXPECT_FALSE(v.all_gone);
  EXPECT_EQ(v.ended_at, 0) << "not every replica has ended";
  Exit(w, 7);
  w.exit.ended_at = 1000;
  w.exit.killed_by_request = false;  // it ended before the stop the master's exit asked for
  v = EvaluateRun({&m, &w});
  EXPECT_TRUE(v.all_gone);
  EXPECT_FALSE(v.succeeded) << "the worker had failed the run before the master finished";
  EXPECT_EQ(v.failures,
            "The replica worker 0 exited with a non-zero status of 7. Termination reason: Error.");
  EXPECT_EQ(v.ended_at, 2000);
  // A worker that failed after the master's success does not undo it.
  w.exit.ended_at = 3000;
  v = EvaluateRun({&m, &w});
  EXPECT_TRUE(v.succeeded);
  EXPECT_EQ(v.ended_at, 3000);
  // Nor does a loss that would have been restarted (killed by a signal from outside).
  Exit(w, 0, SIGKILL);
  w.exit.ended_at = 1000;
  EXPECT_TRUE(EvaluateRun({&m, &w}).succeeded);
  // An end of unknown time (no report) leaves the job's end to the scheduler's clock.
  w.exit.ended_at = 0;
  EXPECT_EQ(EvaluateRun({&m, &w}).ended_at, 0);
}

TEST(OutcomeTest, AFailureWaitsForTheOthersAndAsksThemToStop) {
  ReplicaState m = Launched("master", 0), w = Launched("worker", 1);
  Exit(w, 2);
  RunVerdict v = EvaluateRun({&m, &w});
  EXPECT_FALSE(v.all_gone);
  EXPECT_TRUE(v.stop_others);
  EXPECT_EQ(v.failures,
            "The replica worker 1 exited with a non-zero status of 2. Termination reason: Error.");
  Exit(m, 0, 0, /*by_request=*/true);  // stopped by us: not a success, not a failure
  v = EvaluateRun({&m, &w});
  EXPECT_TRUE(v.all_gone);
  EXPECT_FALSE(v.succeeded);
}

TEST(OutcomeTest, MessagesFollowAIPlatform) {
  executor::ReplicaKey k{"p", "j", "", "master", 0};
  executor::ReplicaExit e;
  e.phase = "run";
  e.signal = SIGKILL;
  EXPECT_EQ(FailureMessage(k, e),
            "The replica master 0 exited with a non-zero status of 137. Termination reason: "
            "Killed.");
  e.oom_killed = true;
  EXPECT_EQ(FailureMessage(k, e),
            "The replica master 0 ran out-of-memory and exited with a non-zero status of 137.");
  e = {};
  e.phase = "install";
  e.exit_code = 1;
  e.message = "pip says no";
  EXPECT_EQ(FailureMessage(k, e),
            "The replica master 0 exited with a non-zero status of 1. Termination reason: Error. "
            "Failed to install the training packages: pip says no");
  e.phase = "launch";
  EXPECT_EQ(FailureMessage(k, e), "The replica master 0 could not be started: pip says no");
  e.phase = "install";
  e.exit_code = 0;
  EXPECT_FALSE(ExitedCleanly(e)) << "an install phase is never a success";
}

TEST(OutcomeTest, OnlyLossesFromOutsideAreRestartedUpToTheLimit) {
  ReplicaState m = Launched("master", 0), w = Launched("worker", 0);
  Exit(w, 0, SIGKILL);
  RestartInput in{&w, {&m, &w}, 0, 2, false};
  RestartDecision d = DecideRestart(in);
  EXPECT_EQ(d.kind, RestartDecision::kRestart);
  EXPECT_EQ(d.message,
            "The replica worker 0 was killed by signal 9; restarting it with the same identity "
            "(restart 1 of 2).");
  in.restarts = 2;
  d = DecideRestart(in);
  EXPECT_EQ(d.kind, RestartDecision::kExhausted);
  EXPECT_EQ(d.message,
            "The replica worker 0 was killed by signal 9 after 2 restarts; no more restarts are "
            "allowed.");
  in.restarts = 0;
  in.run_ending = true;
  EXPECT_EQ(DecideRestart(in).kind, RestartDecision::kNo);
  in.run_ending = false;
  Exit(w, 137);  // its own status
  EXPECT_EQ(DecideRestart(in).kind, RestartDecision::kNo);
  Exit(w, 0, SIGKILL);
  Exit(m, 0);  // the master finished: the run is ending
  EXPECT_EQ(DecideRestart(in).kind, RestartDecision::kNo);
}

TEST(OutcomeTest, AnOomKillOrAFullDiskIsNotRestartedIntoTheSameFailure) {
  ReplicaState m = Launched("master", 0), w = Launched("worker", 0);
  Exit(w, 0, SIGKILL);
  w.exit.oom_killed = true;
  RestartInput in{&w, {&m, &w}, 0, 5, false};
  RestartDecision d = DecideRestart(in);
  EXPECT_EQ(d.kind, RestartDecision::kPermanent);
  EXPECT_EQ(d.message,
            "The replica worker 0 ran out of memory (its machine type's limit) and was killed; it "
            "is not restarted, since it would fail the same way again.");
  EXPECT_EQ(FailureMessage(w.key, w.exit),
            "The replica worker 0 ran out-of-memory and exited with a non-zero status of 137.");
  // A launcher that vanished on a full disk.
  w.exit = {};
  w.exit.phase = "lost";
  w.exit.exit_code = -1;
  w.exit.disk_full = true;
  w.exit.message = "its launcher exited without reporting how the trainer ended";
  d = DecideRestart(in);
  EXPECT_EQ(d.kind, RestartDecision::kPermanent);
  EXPECT_EQ(FailureMessage(w.key, w.exit),
            "The replica worker 0 ran out of disk space and was lost: its launcher exited "
            "without reporting how the trainer ended");
  // The same loss without the disk full is restarted as before.
  w.exit.disk_full = false;
  EXPECT_EQ(DecideRestart(in).kind, RestartDecision::kRestart);
  // A trainer that exits on ENOSPC: its own status (never retried), in words that say why.
  w.exit = {};
  Exit(w, 1);
  w.exit.disk_full = true;
  w.exit.error_tail = "OSError: [Errno 28] No space left on device";
  EXPECT_EQ(DecideRestart(in).kind, RestartDecision::kNo);
  EXPECT_EQ(FailureMessage(w.key, w.exit),
            "The replica worker 0 ran out of disk space and exited with a non-zero status of 1. "
            "Termination reason: No space left on device. OSError: [Errno 28] No space left on "
            "device");
}

}  // namespace
}  // namespace trainyard::scheduler::outcome
