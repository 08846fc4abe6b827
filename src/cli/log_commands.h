// Log commands: `jobs logs` (a listing with tail/since/severity/task/trial filters) and
// `jobs stream-logs` / `submit --stream-logs` (a follower that reconnects). See docs/cli.md.
#pragma once

#include <atomic>
#include <iosfwd>
#include <optional>
#include <string>

#include "cli_context.h"
#include "trainyard/client/client.h"
#include "trainyard/core/status.h"
#include "trainyard/core/time.h"

namespace trainyard::cli {

// --polling-interval: a positive number of seconds (default 1).
Result<double> ParsePollingInterval(const std::optional<std::string>& text);

// --since: an RFC 3339 time, or a duration before `now` like 30s, 10m, 2h, 1d or 1h30m.
Result<Timestamp> ParseSince(const std::string& text, Timestamp now);

struct StreamOptions {
  std::string job;
  std::string task_name;
  double interval_s = 1;
  bool allow_multiline = false;
  std::ostream* log_out = nullptr;
  // When set, CANCELLED as soon as it becomes true (submit --stream-logs on SIGINT).
  const std::atomic<bool>* interrupted = nullptr;
  // How long the daemon may be unreachable (a restart) before the follower gives up.
  double reconnect_for_s = 600;
  // Backoff between reconnection attempts: from the first, doubling up to the most.
  double backoff_first_s = 0.1;
  double backoff_max_s = 5;
};

// Prints a job's lines until the job has an endTime and every line stored before it has been
// printed: first the lines already stored, in (timestamp, insertId) order, then the lines stored
// after that snapshot, following the ingestion cursor (each answer in time order). Every line
// is printed exactly once. While the daemon cannot be reached (it restarts), retries with
// backoff and resumes where it stopped.
Status StreamJobLogs(const Invocation& inv, client::Client& c, const StreamOptions& o);

struct LogsArgs {
  std::string job;
  std::optional<std::string> tail;
  std::optional<std::string> since;
  std::optional<std::string> severity;
  std::optional<std::string> task_name;
  std::optional<std::string> trial;
  std::optional<std::string> format;
  bool allow_multiline_logs = false;
  // The whole (filtered) log as the daemon's text export (logs:download), streamed to stdout.
  bool download = false;
  // Only the lines containing this text (logs:search), each prefixed by its line number.
  std::optional<std::string> search;
  bool match_case = false;
};
int RunJobLogs(const Invocation& inv, const LogsArgs& args);

}  // namespace trainyard::cli
