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
