// trainyard-launcher: runs one replica described by <work_dir>/spec.json and reports through
// the work-dir files of launcher_protocol.h (see also docs/on-disk-layout.md).
#pragma once

#include <string>

namespace trainyard::launcher {

// Runs the replica to completion. Returns the launcher's exit status: 0 once exit.json is
// written (whatever the trainer did), non-zero only when not even exit.json could be written.
int RunLauncher(const std::string& work_dir);

}  // namespace trainyard::launcher
