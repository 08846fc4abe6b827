// Restart in place under Slurm (docs/slurm.md "Restart in place"): the protocol between the
// daemon (slurm_executor.cc), a gang's driver (trainyard-launcher slurm-driver) and the
// replicas' exit reports, as pure functions.
//
// The daemon's decision on a replica's ended step is one line appended to the gang's
// control.log, naming the replica's attempt:
//
//   restart <task> <attempt>   start attempt <attempt> of <task> in a new step, in place
//   release <task> <attempt>   attempt <attempt> of <task> is not restarted: let its slot go
//
// Every exit report (exit.json) names the attempt it was written for. A daemon that died
// between recording a restart (the replica's spec.json holds the new attempt) and its driver
// acting on it finds, on its next start, the ended step's report of an older attempt: the
// decision stands (it was counted), the request is written again, and a driver that already
// acted on it ignores the repeat. So a restart is done once and counted once whenever the
// daemon dies, and the old step's report is never read as the new attempt's end.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainyard::executor {

struct SlurmControl {
  std::string verb;  // "restart" or "release"
  std::string task;  // the replica's task name, e.g. "worker-replica-0"
  int attempt = -1;  // -1: the line names none (written by an older daemon)
};

// The control.log line (no newline) of a decision.
std::string SlurmControlLine(const SlurmControl& c);
// A control.log line; nullopt for one that is not a decision (unknown verb, no task, an
// attempt that is not a number).
std::optional<SlurmControl> ParseSlurmControlLine(std::string_view line);

// What a driver does with a decision on a step whose replica runs attempt `current`, or has a
// restart to attempt `current` asked for already (-1: unknown).
enum class SlurmControlAction {
  kRestart,  // start the new attempt's step (once the ended one is done)
  kRelease,  // let the ended step's slot go
  kIgnore,   // a repeat of a restart already done or asked for, or about an older attempt
};
SlurmControlAction DecideSlurmControl(const SlurmControl& c, int current);

// Whether an exit report written for `exit_attempt` (-1: it names none) is older than the
// attempt the replica's spec is at: the report of a step whose restart in place was decided
// and not yet carried out, which is not the end of the replica's current attempt.
bool SlurmExitIsStale(int exit_attempt, int spec_attempt);

// The attempt a replica's spec.json in `work_dir` is at now (-1: none or unreadable).
int SpecAttemptIn(const std::string& work_dir);
// Whether a step of attempt `own` writes its reports into a work dir whose spec is at
// `spec_attempt` (SpecAttemptIn) no more: a newer attempt owns it. So it goes after a node
// failure: the whole gang runs again in a new allocation while the old step lives on with its
// dead slurmd (nothing kills it until the node comes back). Its launcher and its driver then
// write their reports to SupersededExitFile(own), never exit.json, and the daemon ignores an
// exit.json of an older attempt anyway (whichever writes first).
bool AttemptSuperseded(int own, int spec_attempt);
std::string SupersededExitFile(int attempt);  // "exit.attempt-<N>.json"

// A tuning trial's metric file (CLOUD_ML_HP_METRIC_FILE) on Slurm: one per attempt,
// <work_dir>/hypertune/attempt-<N>/output.metrics. After a node failure the old attempt's
// trainer may live on with its dead slurmd (nothing stops it until the node comes back); with
// a file of its own, the metrics it still reports never reach the file the current attempt's
// are read from.
std::string SlurmMetricFile(const std::string& work_dir, int attempt);
// The metric file the daemon reads for a replica whose spec is at `attempt` and gave its
// trainer `spec_value` (the spec's CLOUD_ML_HP_METRIC_FILE, "" none): that attempt's own
// (SlurmMetricFile), or the one shared by every attempt when an older daemon planned the
// replica so (<work_dir>/hypertune/output.metrics): its trainer writes there.
std::string SlurmMetricFileToRead(const std::string& work_dir, int attempt,
                                  const std::string& spec_value);

// Whether sbatch failed because Slurm's controller could not be reached or could not take jobs
// for now (`err`, its stderr: "Unable to contact slurm controller (connect failure)", "Socket
// timed out on send/recv operation", "Slurm temporarily unable to accept job", ...): the job is
// submitted again once the controller answers. Anything else is Slurm refusing the job.
bool SbatchFailureIsTransient(std::string_view err);

// Why one entry of slurm.extra_sbatch_args (one #SBATCH line of every component) may not be
// given ("" = it may), read as sbatch 22.05 reads #SBATCH lines: words split at blanks as its
// get_argument does (quotes, backslashes, an unquoted '#' ending the line), then getopt_long
// over them. So short flags bundle ("-Qp high" is -Q, then -p with the value "high"; a flag
// taking a value ends its bundle: "-Cp" is a constraint "p"), long flags take "=value" or the
// next word and may be abbreviated ("--part=high" is --partition). Refused: any flag Trainyard
// sets itself (job name, output, signal, requeue, time, partition, account, QOS, resources,
// ...; the message names it), wherever it is in the line; a short flag sbatch does not have; a
// word that is neither a flag nor a flag's value (sbatch refuses the whole script over it);
// and a line break. Conservative: every word that starts with '-' is checked as a flag, also
// one that a flag before it might take as its value.
std::string SbatchExtraArgsProblem(std::string_view line);

// How srun said a replica's step ended, from the lines it wrote on its stderr and its own exit
// status (a wait status).
struct SrunStepEnd {
  bool out_of_memory = false;  // "task 0: Out Of Memory": Slurm's task/cgroup killed it
  // Slurm ended the step or its job: a node failure, a time limit, a preemption, a cancel
  // ("Node failure on n2", "*** STEP 12.0 ON n1 CANCELLED AT ... ***", "Job step aborted").
  bool slurm_ended = false;
  // The step's task (the replica's launcher) was killed by a signal on a node Slurm still
  // runs, and Slurm did not end the step: "srun: error: n1: task 0: Killed" with srun's exit
  // status 128 + the signal. Its replica was lost inside a healthy allocation.
  int task_signal = 0;
};
SrunStepEnd ClassifySrunStepEnd(const std::vector<std::string>& stderr_lines, int wait_status);

}  // namespace trainyard::executor
