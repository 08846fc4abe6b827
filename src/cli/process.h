// Child processes for the CLI: capturing a tool's output (setup.py sdist) and handing the
// terminal over to the trainer (local train).
#pragma once

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
// from /dev/null, and collects its combined output. Fails only when the process cannot be
// started at all; a non-zero exit is a successful result.
Result<ProcessResult> RunCaptured(const std::vector<std::string>& argv, const std::string& cwd);

// Replaces this process with argv after chdir(cwd) and setting `env` on top of the current
// environment. Returns only on failure.
Status ExecReplace(const std::vector<std::string>& argv, const std::string& cwd,
                   const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace trainyard::cli
