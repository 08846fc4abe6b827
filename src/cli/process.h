// Child processes for the CLI: capturing a tool's output (setup.py sdist), handing the
// terminal over to the trainer (local train) and running a trainer with helper processes
// (local train --distributed).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::cli {

struct ProcessResult {
  int exit_code = 0;   // 128 + signal number when killed by a signal
  std::string output;  // stdout and stderr interleaved
};

// Runs argv[0] (a path, or a name looked up on PATH) with argv in `cwd` ("" = current), stdin
// from /dev/null, and collects its output: stdout and stderr combined, or with
// `merge_stderr` false stdout only (stderr then goes to /dev/null). Fails only when the process
// cannot be started at all; a non-zero exit is a successful result.
Result<ProcessResult> RunCaptured(const std::vector<std::string>& argv, const std::string& cwd,
                                  bool merge_stderr = true);

// Replaces this process with argv after chdir(cwd) and setting `env` on top of the current
// environment. Returns only on failure.
Status ExecReplace(const std::vector<std::string>& argv, const std::string& cwd,
                   const std::vector<std::pair<std::string, std::string>>& env);

// A change to a child's environment: set NAME to the value, or remove NAME when it is nullopt.
using EnvChange = std::pair<std::string, std::optional<std::string>>;

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up on PATH
  std::string cwd;                // "" = current
  std::vector<EnvChange> env;     // applied on top of this process's environment
};

// Runs `foreground` with helper processes, the way gcloud's `local train --distributed` does:
// first every `helpers` entry, each in a process group of its own with stdin from /dev/null,
// then `foreground` in this process's group with this process's stdin. All inherit stdout and
// stderr. When `foreground` exits, each helper's group gets SIGTERM, then SIGKILL after `grace`,
// and every helper is reaped, so no process is left behind.
//
// While this runs, SIGINT, SIGTERM and SIGHUP to this process send SIGTERM to `foreground` and
// to every helper group (SIGKILL on a repeated signal), no further process is started, and the
// same clean-up follows. The original signal dispositions are restored before returning.
//
// Returns the exit status of `foreground` (128 + signal number when a signal killed it), or
// 128 + the signal this process got when one stopped the run. Fails when a process cannot be
// started (fork failed, or argv[0] could not be executed); the processes already started are
// stopped as above first. Not reentrant: one call at a time per process.
Result<int> RunWithHelpers(const std::vector<ChildSpec>& helpers, const ChildSpec& foreground,
                           std::chrono::milliseconds grace);

}  // namespace trainyard::cli
