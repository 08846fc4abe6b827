// `executor: slurm` at daemon start: checks the Slurm client, the controller, the partition and
// the shared directory (a wrong setting stops the daemon with a message naming it), and reads
// what the cluster offers (one sinfo call) for refusing jobs it could never hold.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "config.h"
#include "trainyard/core/status.h"
#include "trainyard/executor/slurm.h"
#include "trainyard/executor/subprocess.h"
#include "trainyard/scheduler/admission.h"

namespace trainyard::daemon {

struct SlurmSetup {
  executor::SlurmOptions executor;
  scheduler::ClusterCapacity capacity;
  std::string summary;  // for the start-up log line
};

// The start check of one account Slurm will be given (`sbatch --test-only --account=A`, its
// result `r`; `setting` names where A comes from): INVALID_ARGUMENT naming the setting when
// Slurm refuses the account (or slurm.qos when it refuses the QOS for it); any other failure
// (the nodes not yet back after a controller restart, say) is not the account's: OK, and
// `warning` says the account could not be checked.
Status JudgeAccountCheck(const std::string& setting, const std::string& account,
                         const std::string& qos, const executor::CommandResult& r,
                         std::string* warning);

// `jobs_dir` is where replica work dirs go (under slurm.shared_dir).
Result<SlurmSetup> PrepareSlurm(const DaemonConfig& config, const std::string& jobs_dir);

// `trainyardd --slurm-check`: the start-up checks, then a 1-task job through the configured
// partition/account/qos that runs `trainyard-launcher --version` on a node and writes a file in
// slurm.shared_dir, which this host must then read (the shared filesystem really is shared).
// Prints one line per check; returns the exit status (0 when every check passed).
int RunSlurmCheck(const DaemonConfig& config, const std::string& jobs_dir, std::ostream& out);

// Rows of `sinfo -h -N -o "%N|%P|%c|%m|%G"` summed over the distinct nodes of `partition` (""
// = the default one, marked '*'). NOT_FOUND names the partitions there are.
struct SinfoTotals {
  std::string partition;
  int nodes = 0;
  int64_t cpus = 0;
  int64_t memory_mb = 0;
  int gpus = 0;
};
Result<SinfoTotals> SumSinfo(const std::string& text, const std::string& partition);

// Whether every GRES type slurm.gpu_types maps to (`gpu_types`, AI Platform name -> type) is
// one a node of `partitions` has, from the same sinfo rows (their %G, e.g. "gpu:fake:2(S:0)").
// INVALID_ARGUMENT naming the setting, the type and the GPU types the nodes have.
Status CheckGpuTypes(const std::string& text, const std::vector<std::string>& partitions,
                     const std::map<std::string, std::string>& gpu_types);

}  // namespace trainyard::daemon
