// Runs a short command (sbatch, squeue, scancel, sinfo) and collects its output.
#pragma once

#include <string>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"

namespace trainyard::executor {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up on PATH) with `env` as its whole environment (empty: this process's)
// and stdin from /dev/null. The command is killed (SIGKILL) once `timeout` passes; the result
// is then DEADLINE_EXCEEDED. An error only when it could not run or timed out; a non-zero exit
// is a result.
Result<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env, Duration timeout);
// The same, and the command gets `pass_fd` as its descriptor 3 (the open file description is
// shared: a lock held on it stays held while the command runs, also after this process died).
Result<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env, Duration timeout,
                                 int pass_fd);

// The first lines of a command's error output, for a message ("exit status N" when silent).
std::string CommandError(const CommandResult& r);

}  // namespace trainyard::executor
