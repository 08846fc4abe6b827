// The Slurm executor: every gang (a job, or one trial of a tuning job) is one Slurm job whose
// batch script runs `trainyard-launcher slurm-driver`, which starts one `srun` step per replica
// (each under trainyard-launcher, as locally), brokers their host:port rendezvous over the
// steps' stdin/stdout and exits when they have. Replicas write the usual work-dir files
// (launcher_protocol.h) to a directory every node and the daemon share; the daemon tails them
// as it does locally and asks Slurm (one squeue per poll for all its jobs) what happened to
// each allocation. docs/slurm.md is the administrator's guide.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/executor/executor.h"

namespace trainyard::executor {

struct SlurmOptions {
  std::string launcher_path;  // trainyard-launcher, at the same path on every node
  std::string jobs_dir;       // replica work dirs: on the shared filesystem
  std::string partition;      // "" = the cluster's default
  std::string account;
  std::string qos;
  std::vector<std::string> extra_sbatch_args;  // the administrator's, one per #SBATCH line
  // AI Platform accelerator type -> GRES type (NVIDIA_TESLA_T4 -> t4). Unmapped types ask for
  // untyped GPUs.
  std::map<std::string, std::string> gpu_types;
  double cpu_scale = 1.0;                          // Slurm CPUs per machine-type vCPU
  double memory_scale = 1.0;                       // Slurm memory per byte of machine-type memory
  std::string port_range = "20000-32767";          // where launchers bind their trainer's port
  Duration poll_interval = 10 * kMicrosPerSecond;  // squeue
  Duration log_poll_interval = 500 * 1000;         // work-dir files
  Duration metrics_interval = 1000 * 1000;         // trials' metric files
  Duration time_limit_margin = 120 * kMicrosPerSecond;  // --time beyond maxRunningTime
  Duration cancel_grace = 10 * kMicrosPerSecond;
  // How long a replica's files get to show its exit after Slurm says its job ended.
  Duration file_grace = 5 * kMicrosPerSecond;
  // Replicas of different shapes: "auto" runs them as a heterogeneous job (one component per
  // shape) when the cluster can place it (het_components_max components at most: each needs a
  // node of its own, and only the backfill scheduler starts them), else as an envelope (one
  // plain job, every task the largest shape); "always" / "never" force one or the other.
  std::string heterogeneous = "auto";
  int het_components_max = 0;  // nodes in the partition (0 = unknown: never heterogeneous)
  bool backfill = false;       // SchedulerType is sched/backfill
  // Prefix of every Slurm job name this daemon submits ("ty-<8 hex>-"): what it owns.
  std::string name_prefix;
  // The partition jobs go to when `partition` is "" (the cluster's default, from sinfo).
  std::string default_partition;
  // Trainyard project -> Slurm account (--account); a project not listed gets `account`.
  std::map<std::string, std::string> project_accounts;
  // Partitions a job may ask for with its label `slurm-partition` (none: the label is refused).
  std::vector<std::string> label_partitions;
  // How Slurm's verdict on a job that left squeue is read: "db" (sacct, with slurmdbd),
  // "jobcomp" (sacct -c, jobcomp/filetxt on this host) or "" (not at all: its files decide).
  std::string sacct;
  // Slurm jobs with this daemon's name prefix that no recovered gang owns, found by the first
  // squeue after Recover: logged as orphans, and cancelled (scancel) when true.
  bool cancel_orphans = false;
  // How often the place of pending jobs in their partition's queue is asked for (squeue -t PD).
  Duration position_interval = 30 * kMicrosPerSecond;
};

// What the executor knows of one Slurm job (one squeue row).
struct SlurmJobState {
  std::string id;
  std::string state;   // PENDING, RUNNING, COMPLETED, CANCELLED, NODE_FAIL, ...
  std::string reason;  // squeue's reason ("None" when running)
  std::string nodes;   // the node list ("" while pending)
  std::string name;
};

// Pure parts, for tests.
// Rows of `squeue -h -o "%A|%T|%r|%N|%j"`; malformed lines are skipped.
std::vector<SlurmJobState> ParseSqueue(const std::string& text);
// Rows of `sacct -X -P -n -o JobID,JobName,State,NodeList` (also `sacct -c`) as squeue rows:
// "CANCELLED by 1000" becomes state CANCELLED with reason "by uid 1000"; "(null)" nodes "".
std::vector<SlurmJobState> ParseSacct(const std::string& text);
// One pending job of `squeue -h -t PD -o "%i|%Q|%P"`.
struct SlurmPendingJob {
  std::string id;  // a heterogeneous job's components ("12+0", "12+1") are one job "12"
  int64_t priority = 0;
  std::string partition;
};
std::vector<SlurmPendingJob> ParsePendingJobs(const std::string& text);
// The place of job `id` in `partition`'s queue: 1 + the pending jobs there ahead of it (a
// higher priority, or the same and a lower id, as Slurm orders them without multifactor
// priority). A job not listed (submitted after the list was taken) is placed after every
// listed job with a lower id.
int64_t SlurmQueuePosition(const std::vector<SlurmPendingJob>& pending,
                           const std::string& partition, const std::string& id);
// Whether a Slurm job state is final.
bool SlurmStateEnded(const std::string& state);
// "ty-<tag>-<job>[-t<trial>]-<suffix>": Slurm job names keep [A-Za-z0-9_.-] only.
std::string SlurmJobName(const std::string& prefix, const ReplicaKey& key,
                         const std::string& suffix);
// Why a job fails when sbatch refuses it: "Slurm refused the job: " and Slurm's words, plus,
// when they are about the account or the QOS, which setting chose it (account_setting:
// "slurm.account" or "slurm.project_accounts (project P)").
std::string SlurmRefusal(const std::string& sbatch_error, const std::string& account,
                         const std::string& account_setting, const std::string& qos);
// The batch script of a gang (see slurm_executor.cc for its shape).
struct SlurmGangPlan {
  std::string name;
  std::string gang_dir;   // plan.json, driver.out, gang.json
  std::string plan_path;  // <gang_dir>/plan.json
  // One entry for a plain job; one per shape for a heterogeneous job.
  struct Component {
    int tasks = 0;
    int cpus_per_task = 1;
    int64_t mem_per_cpu_mb = 1;
    std::string gpus_per_task;  // "" or "[type:]count"
  };
  std::vector<Component> components;
  std::string partition;  // "" = SlurmOptions::partition
  std::string account;    // "" = SlurmOptions::account
  int time_minutes = 0;
  int signal_seconds = 0;
};
std::string SlurmBatchScript(const SlurmOptions& options, const SlurmGangPlan& plan);

// What an envelope allocation (every task the largest shape) holds beyond what its replicas
// asked for, in total, in words for the job's log: "the allocation holds 6 CPUs, 1024 MiB and
// 2 GPUs more than the replicas asked for". `asked`: each replica's shape; `envelope`: a task's.
struct SlurmTaskShape {
  int cpus = 1;
  int64_t mem_mb = 0;
  int gpus = 0;
};
std::string SlurmEnvelopeWaste(const std::vector<SlurmTaskShape>& asked,
                               const SlurmTaskShape& envelope);

std::unique_ptr<Executor> NewSlurmExecutor(const SlurmOptions& options, ExecutorListener* listener);

}  // namespace trainyard::executor
