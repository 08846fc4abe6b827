// Python files Trainyard gives every Python replica (the `hypertune` module, compat §7). They are
// embedded in the daemon and written under <data_dir>/python at start, a directory the
// scheduler appends to the replicas' PYTHONPATH.
#pragma once

#include <string>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::daemon {

struct PythonSupportFile {
  const char* path;  // relative, e.g. "hypertune/__init__.py"
  const char* text;
};
const std::vector<PythonSupportFile>& PythonSupportFiles();

// Writes the files under `dir` (only those that differ). Returns `dir`.
Result<std::string> InstallPythonSupport(const std::string& dir);

}  // namespace trainyard::daemon
