// Parts of the launcher protocol private to ty_executor and trainyard-launcher: two more work-dir
// files and the allocation-free record writer behind FormatLogRecord (the launcher's hot path).
#pragma once

#include <string>
#include <string_view>

#include "trainyard/core/time.h"
#include "trainyard/model/job.h"

namespace trainyard::executor {

// Written by the executor before it signals the launcher: the grace period in microseconds
// (decimal). Its presence also records that the kill was requested (survives daemon restarts).
inline constexpr const char* kKillFile = "kill";
// Written by the executor with the kill file: the reason given to Kill() (returned by Recover
// and in the exit's stop_reason). The launcher does not read it.
inline constexpr const char* kStopReasonFile = "stop-reason";
// A tuning trial's metric file (CLOUD_ML_HP_METRIC_FILE), in a directory of its own that is
// bind-mounted into containers at the same path.
inline constexpr const char* kMetricDir = "hypertune";
inline constexpr const char* kMetricFile = "hypertune/output.metrics";
// Written by daemons before the attempt count moved into spec.json: read by Recover when the
// spec has none, so replicas launched by an older daemon keep their restart count.
inline constexpr const char* kLegacyRestartsFile = "restarts";
// The launcher's own stdout and stderr (its diagnostics, not the trainer's output).
inline constexpr const char* kLauncherErrFile = "launcher.err";
// Grace the launcher uses when it is sent SIGTERM without a kill file.
inline constexpr Duration kDefaultKillGrace = 10 * kMicrosPerSecond;

// Appends one log record (see launcher_protocol.h) without the trailing newline.
void AppendLogRecord(std::string* out, Timestamp ts, model::Severity severity, bool service,
                     std::string_view message);
// The two halves of AppendLogRecord: "<micros>\t<SEVERITY>\t<SOURCE>\t", then the escaped
// message (the launcher reuses the first half for the lines of one read).
void AppendLogRecordPrefix(std::string* out, Timestamp ts, model::Severity severity, bool service);
void AppendEscapedLogMessage(std::string* out, std::string_view message);

// Replaces invalid UTF-8 sequences with U+FFFD (trainer output is arbitrary bytes; the store
// and the JSON encoders downstream need valid UTF-8).
std::string SanitizeUtf8(std::string_view text);

}  // namespace trainyard::executor
