// The outcome rules of AI Platform (compat §12): which exit decides a run, whether a lost
// replica is restarted, and the words of the error message. Pure functions over what is known
// about a run's replicas: no I/O, no clock, no locks. A run is a job's replicas, or one trial's.
#pragma once

#include <string>
#include <vector>

#include "trainyard/executor/executor.h"

namespace trainyard::scheduler::outcome {

// What the rules need to know of one replica of a run.
struct ReplicaState {
  executor::ReplicaKey key;
  bool launched = false;  // the executor accepted it (a restart counts as the same replica)
  bool exited = false;    // its current run has ended; `exit` says how
  executor::ReplicaExit exit;
};

// "master 0", as AI Platform's messages name a replica.
std::string ReplicaMessageName(const executor::ReplicaKey& key);
// The status AI Platform reports: the exit code, or 128 + the signal.
int ExitStatusOf(const executor::ReplicaExit& e);
// Only a trainer that ran and exited 0 succeeded (an install phase ended by a signal may
// report status 0).
bool ExitedCleanly(const executor::ReplicaExit& e);
// AI Platform's words for a replica that failed (compat §12).
std::string FailureMessage(const executor::ReplicaKey& key, const executor::ReplicaExit& e);

struct RunVerdict {
  bool all_gone = true;    // no launched replica is still running
  bool succeeded = false;  // the master exited 0 on its own and everything is gone
  // The run is decided (the master succeeded, or a replica failed): the replicas still
  // running are to be stopped.
  bool stop_others = false;
  std::string failures;  // AI Platform's words for the replicas that failed, space-separated
  // When the last of its replicas ended, once all are gone and every end is known; else 0.
  Timestamp ended_at = 0;
};

// The master decides: once it has exited 0 on its own, replicas that fail afterwards (DDP ranks
// losing rank 0's store, TF workers losing the chief) do not change the outcome. Otherwise any
// replica that failed on its own fails the run; replicas Trainyard stopped itself
// (killed_by_request) are never failures of their own.
RunVerdict EvaluateRun(const std::vector<const ReplicaState*>& run);

// Whether a replica that just exited is restarted (compat §12): one lost to a signal Trainyard
// did not send (the OOM killer, someone's kill -9) or whose launcher was lost is restarted with
// the same identity and port, up to `max_restarts` times. An exit status of its own (a trainer
// error) is never retried, and nothing is restarted once the run is ending.
//
// A loss that would happen again is not retried (kPermanent): an OOM kill by the replica's own
// memory cgroup (its machine type's memory limit), or a full disk (ENOSPC).
struct RestartDecision {
  enum Kind { kNo, kRestart, kExhausted, kPermanent } kind = kNo;
  // For kRestart, kExhausted and kPermanent: the service log line (warning for a restart,
  // error once the restarts are used up or when none is tried).
  std::string message;
};
struct RestartInput {
  const ReplicaState* replica = nullptr;  // the one that exited
  std::vector<const ReplicaState*> run;   // every replica of its run (including it)
  int restarts = 0;                       // restarts it had before this exit
  int max_restarts = 0;
  // The job or trial is ending anyway (cancel requested, a failure recorded, terminal, its
  // trial is being stopped), or the replica cannot be launched again.
  bool run_ending = false;
  // The backend restarts the whole run (Executor::RestartsWholeRuns): the message says so.
  bool whole_run = false;
};
RestartDecision DecideRestart(const RestartInput& in);

}  // namespace trainyard::scheduler::outcome
