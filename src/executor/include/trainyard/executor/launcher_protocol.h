// The files shared by the executor (daemon side) and trainyard-launcher (replica side), in the
// replica's work directory:
//
//   spec.json      ReplicaSpec, written by the executor before the launch
//   launcher.pid   the launcher's pid and start time "PID STARTTIME" (start time from
//                  /proc/PID/stat field 22, so a recycled pid is not mistaken for the launcher)
//   running        created when the environment is ready and the trainer has started
//   log            one record per line: "<micros>\t<SEVERITY>\t<SOURCE>\t<message>\n"; SOURCE is
//                  "R" (a line of the trainer) or "S" (a service line of the launcher); the
//                  message escapes "\\" as "\\\\", newline as "\\n", tab as "\\t", CR as "\\r"
//   log.offset     bytes of `log` already delivered to the store (written by the executor)
//   exit.json      {"exitCode","signal","phase","message","errorTail"}, written atomically by
//                  the launcher as its last act
//   venv -> ...    nothing; environments live in the shared cache (env_cache_dir/<sha256>)
#pragma once

#include <string>
#include <string_view>

#include "trainyard/core/status.h"
#include "trainyard/executor/executor.h"
#include "trainyard/model/job.h"

namespace trainyard::executor {

inline constexpr const char* kSpecFile = "spec.json";
inline constexpr const char* kPidFile = "launcher.pid";
inline constexpr const char* kRunningFile = "running";
inline constexpr const char* kLogFile = "log";
inline constexpr const char* kLogOffsetFile = "log.offset";
inline constexpr const char* kExitFile = "exit.json";
// Space the launcher sets aside at start (kExitReserveBytes) and frees right before it writes
// exit.json, so a replica that filled its filesystem still reports how it ended.
inline constexpr const char* kExitReserveFile = "exit.reserve";
inline constexpr size_t kExitReserveBytes = 64 * 1024;
// Whether an error text names a full filesystem (ENOSPC or EDQUOT as strerror or Python print
// them), e.g. "OSError: [Errno 28] No space left on device".
bool MentionsDiskFull(std::string_view text);
// Whether a replica that ended as `exit` is one the scheduler may restart (compat §12): killed
// by a signal nobody at Trainyard sent (not an OOM kill by its own limit), or lost with its
// launcher. On Slurm the gang's driver keeps such a replica's step slot until the daemon says
// whether it restarts there (docs/slurm.md "Restart in place").
bool MayBeRestarted(const ReplicaExit& exit);

std::string SpecToJson(const ReplicaSpec& spec);
Result<ReplicaSpec> SpecFromJson(std::string_view json);
std::string ExitToJson(const ReplicaExit& exit);
// The same naming the attempt (the spec's) it was written for ("attempt"; none when < 0): on
// Slurm, a report of an older attempt than the spec's is not the current attempt's end
// (slurm_control.h).
std::string ExitToJson(const ReplicaExit& exit, int attempt);
Result<ReplicaExit> ExitFromJson(std::string_view json);
// The attempt an exit report names; -1 when it names none or is not a report.
int ExitReportAttempt(std::string_view json);

// One log record line (without the trailing newline) and back.
std::string FormatLogRecord(Timestamp ts, model::Severity severity, bool service,
                            std::string_view message);
struct LogRecord {
  Timestamp ts = 0;
  model::Severity severity = model::Severity::kInfo;
  bool service = false;
  std::string message;
};
Result<LogRecord> ParseLogRecord(std::string_view line);
// The same into an existing record, reusing its message buffer (the executor's hot loop).
Status ParseLogRecordInto(std::string_view line, LogRecord* rec);

}  // namespace trainyard::executor
