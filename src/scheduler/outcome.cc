#include "trainyard/scheduler/outcome.h"

#include <algorithm>
#include <csignal>

namespace trainyard::scheduler::outcome {

std::string ReplicaMessageName(const executor::ReplicaKey& key) {
  return key.task_type + " " + std::to_string(key.index);
}

int ExitStatusOf(const executor::ReplicaExit& e) {
  return e.signal != 0 ? 128 + e.signal : e.exit_code;
}

bool ExitedCleanly(const executor::ReplicaExit& e) {
  return e.phase == "run" && e.exit_code == 0 && e.signal == 0;
}

std::string FailureMessage(const executor::ReplicaKey& key, const executor::ReplicaExit& e) {
  std::string who = "The replica " + ReplicaMessageName(key);
  if (e.phase == "launch") {
    return who + " could not be started: " + e.message;
  }
  if (e.disk_full && e.phase == "lost") {
    return who + " ran out of disk space and was lost: " + e.message;
  }
  if (e.phase == "lost") {
    return who + " was lost: " + e.message;
  }
  if (e.disk_full) {
    // Trainyard's words (compat §12 has none for a full disk): the status, the cause, then
    // what the trainer and the launcher said.
    std::string msg = who + " ran out of disk space and exited with a non-zero status of " +
                      std::to_string(ExitStatusOf(e)) +
                      ". Termination reason: No space left on device.";
    if (!e.error_tail.empty()) msg += " " + e.error_tail;
    if (!e.message.empty() && e.error_tail.find(e.message) == std::string::npos) {
      msg += " " + e.message;
    }
    return msg;
  }
  if (e.oom_killed) {
    return who + " ran out-of-memory and exited with a non-zero status of " +
           std::to_string(ExitStatusOf(e)) + ".";
  }
  std::string msg = who + " exited with a non-zero status of " + std::to_string(ExitStatusOf(e)) +
                    ". Termination reason: " + (e.signal == SIGKILL ? "Killed" : "Error") + ".";
  if (e.phase == "install") {
    msg += " Failed to install the training packages: " + e.message;
  } else if (!e.error_tail.empty()) {
    msg += " " + e.error_tail;
  }
  return msg;
}

namespace {

// A replica that failed on its own in a way that fails its run at once (not a loss that is
// restarted: DecideRestart), before `t`. Both times must be known.
bool FailedFirst(const ReplicaState& r, Timestamp t) {
  const executor::ReplicaExit& e = r.exit;
  if (!r.exited || e.killed_by_request || ExitedCleanly(e) || e.ended_at == 0 || t == 0) {
    return false;
  }
  const bool restartable =
      ((e.phase == "run" && e.signal != 0) || e.phase == "lost") && !e.oom_killed && !e.disk_full;
  return !restartable && e.ended_at <= t;
}

}  // namespace

RunVerdict EvaluateRun(const std::vector<const ReplicaState*>& run) {
  RunVerdict out;
  const ReplicaState* master = nullptr;
  for (const ReplicaState* r : run) {
    if (r->launched && !r->exited) out.all_gone = false;
    if (r->key.task_type == "master") master = r;
  }
  // The master's success decides, unless another replica had already failed the run: exits
  // read together (a daemon restarted after both) are judged in the order they happened.
  for (const ReplicaState* r : run) {
    if (!r->launched || !r->exited) continue;
    if (r->exit.ended_at == 0) {
      out.ended_at = 0;
      break;
    }
    out.ended_at = std::max(out.ended_at, r->exit.ended_at);
  }
  if (!out.all_gone) out.ended_at = 0;
  bool failed_first = false;
  if (master != nullptr && master->exited) {
    for (const ReplicaState* r : run) {
      if (r != master && FailedFirst(*r, master->exit.ended_at)) failed_first = true;
    }
  }
  if (master != nullptr && master->exited && ExitedCleanly(master->exit) &&
      !master->exit.killed_by_request && !failed_first) {
    out.stop_others = true;
    out.succeeded = out.all_gone;
    return out;
  }
  for (const ReplicaState* r : run) {
    if (r->exited && !r->exit.killed_by_request && !ExitedCleanly(r->exit)) {
      if (!out.failures.empty()) out.failures += " ";
      out.failures += FailureMessage(r->key, r->exit);
    }
  }
  out.stop_others = !out.failures.empty();
  return out;
}

RestartDecision DecideRestart(const RestartInput& in) {
  RestartDecision d;
  const ReplicaState& r = *in.replica;
  const executor::ReplicaExit& e = r.exit;
  const bool lost = (e.phase == "run" && e.signal != 0) || e.phase == "lost";
  if (!lost || e.killed_by_request || in.run_ending) return d;
  const std::string who = "The replica " + ReplicaMessageName(r.key);
  // Deterministic failures are not retried: a replica its own memory cgroup killed outgrew its
  // machine type's memory, and one that filled its disk would fill it again. The run fails
  // with the words of FailureMessage.
  if (e.oom_killed || e.disk_full) {
    d.kind = RestartDecision::kPermanent;
    d.message = who +
                (e.oom_killed ? " ran out of memory (its machine type's limit) and was killed"
                              : " ran out of disk space") +
                "; it is not restarted, since it would fail the same way again.";
    return d;
  }
  for (const ReplicaState* other : in.run) {
    if (other == in.replica || !other->exited || other->exit.killed_by_request) continue;
    // Another replica's own failure, or the master's success, is ending the run.
    if (!ExitedCleanly(other->exit) || other->key.task_type == "master") return d;
  }
  const std::string how = e.phase == "lost" ? " was lost (" + e.message + ")"
                                            : " was killed by signal " + std::to_string(e.signal);
  if (in.restarts >= in.max_restarts) {
    d.kind = RestartDecision::kExhausted;
    d.message = who + how + " after " + std::to_string(in.restarts) +
                " restarts; no more restarts are allowed.";
    return d;
  }
  d.kind = RestartDecision::kRestart;
  const std::string count = "(restart " + std::to_string(in.restarts + 1) + " of " +
                            std::to_string(in.max_restarts) + ").";
  if (in.whole_run && in.run.size() > 1) {
    d.message = who + how + "; stopping the other replicas and restarting all " +
                std::to_string(in.run.size()) +
                " together in a new allocation, each with the same identity " + count;
  } else {
    d.message = who + how + "; restarting it with the same identity " + count;
  }
  return d;
}

}  // namespace trainyard::scheduler::outcome
