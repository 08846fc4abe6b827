// stream-logs line format (compat §11.2): gcloud's
// value(severity, timestamp.date("%Y-%m-%d %H:%M:%S %z", tz=LOCAL), task_name, trial_id, message)
// i.e. tab-separated, newline-terminated, the trial column empty when absent.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainyard/client/client.h"

namespace trainyard::cli {

// Python's str.splitlines() on a UTF-8 message ("" -> {""}; a trailing break adds no line).
std::vector<std::string> SplitMessageLines(std::string_view message);

// The output lines (each ending in '\n') for one entry: one per message line unless
// allow_multiline, which keeps the message whole.
std::vector<std::string> FormatLogEntry(const client::LogEntry& entry, bool allow_multiline);

}  // namespace trainyard::cli
