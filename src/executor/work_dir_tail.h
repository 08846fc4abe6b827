// Reading one replica's work directory as the launcher writes it (launcher_protocol.h): the log
// records from the last stored offset, the `running` marker, a trial's metric file and the
// exit report. Shared by every executor whose replicas run under trainyard-launcher (local
// processes, Slurm steps writing to a shared filesystem). Only the thread that owns a
// WorkDirTail calls it, and it is the only caller of the listener for that replica.
#pragma once

#include <cstdint>
#include <string>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/executor/executor.h"

namespace trainyard::executor {

struct WorkDirTail {
  ReplicaKey key;
  std::string work_dir;
  std::string metric_tag;  // "" = no metric file to watch
  // The metric file, when not <work_dir>/hypertune/output.metrics (Slurm: one per attempt).
  std::string metric_file;
  int attempt = 0;  // the launch whose log file this is (ReplicaSpec::attempt)

  int log_fd = -1;
  uint64_t offset = 0;  // of the log file: everything before it was stored
  bool running_reported = false;
  bool delivered_lines = false;  // the last TailLog delivered lines (the replica is printing)
  int64_t metrics_read_at = 0;   // monotonic; when the metric file was last looked at
  std::string metrics_seen;      // its text when last delivered

  // Reports OnReplicaRunning once the `running` file exists.
  void PollRunning(ExecutorListener* listener);
  // Delivers new complete records (at most one read's worth unless `to_end`) and records the
  // offset in log.offset. Returns false when the listener refused some: they stay for the
  // next call.
  bool TailLog(ExecutorListener* listener, bool to_end);
  // Delivers the metric file's records when they changed (every `interval`, and when `final`).
  void PollMetrics(ExecutorListener* listener, bool final, Duration interval);
  // The offset stored in log.offset (after a daemon restart).
  void LoadOffset();
  void CloseLog();
};

// The exit report the launcher wrote (exit.json); NOT_FOUND when there is none yet.
Result<ReplicaExit> ReadExitReport(const std::string& work_dir);

// Whether an exit counts as stopped by Kill(): a kill was requested, and the trainer did not
// end on its own just before the stop reached its launcher (the master finishing while a
// worker's failure is handled). `reported`: the launcher wrote exit.json.
inline bool KilledByRequest(bool kill_requested, bool reported, const ReplicaExit& exit) {
  return kill_requested && (!reported || exit.phase != "run" || exit.stop_requested);
}

// Whether the filesystem holding `dir` has less than 1 MiB left for unprivileged writes (a
// launcher that vanished there most likely died of it).
bool FilesystemFull(const std::string& dir);

// The tail of the launcher's own diagnostics (launcher.err), for a lost replica's message.
std::string LauncherErrorTail(const std::string& work_dir);

}  // namespace trainyard::executor
