// trainyard-launcher: runs one replica described by <work_dir>/spec.json and reports through
// the work-dir files of launcher_protocol.h (see also docs/on-disk-layout.md).
#pragma once

#include <string>

namespace trainyard::launcher {

// Runs the replica to completion. Returns the launcher's exit status: 0 once exit.json is
// written (whatever the trainer did), non-zero only when not even exit.json could be written.
// `slurm`: the replica runs as a Slurm step under `slurm-driver` (rendezvous over stdio).
int RunLauncher(const std::string& work_dir, bool slurm = false);

// trainyard-launcher slurm-driver --plan FILE: the batch script of a Slurm gang (slurm_driver.cc).
int RunSlurmDriver(const std::string& plan_path);

}  // namespace trainyard::launcher
